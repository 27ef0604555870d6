#!/usr/bin/python3
"""Kiln ONNX conformance runner: ONNX's backend test cases through kilnc and `kiln run`.

Run with Debian's /usr/bin/python3 (python3-onnx, python3-numpy). See docs/conformance.md.

  run_conformance.py --kilnc PATH --kiln PATH --data DIR --workdir DIR --report FILE.md
                     [--expected tests/conformance/expected_pass.txt]
                     [--suites node,pytorch-converted,pytorch-operator,simple]
                     [--jobs 2] [--timeout 60] [--filter REGEX] [--update-expected]
                     [--target cpu|vulkan|vulkan-shared|vulkan+shared]
                     [--save-bundles DIR | --load-bundles DIR]

For every case folder DATA/<suite>/<case>/ (model.onnx, test_data_set_N/input_K.pb,
output_K.pb) it converts the inputs to .npy, compiles the model with kilnc, runs the
bundle with `kiln run` and compares every output with the reference:

  floating point   numpy.allclose(rtol=1e-3, atol=1e-5), NaN == NaN, infinities must match
  integer, bool    exactly
  string           exactly, string by string (as numpy unicode, '<U' .npy both ways)
  all              dtype and shape exactly (a scalar is not a 1-element tensor; strings:
                   any '<U' width)

Each case gets one status:

  pass         every output of every data set matches
  unsupported  kilnc exit 1 (the first line of its message is the reason), or the
               case's inputs/outputs cannot be expressed as .npy tensors or folders
               (map, complex, ... types)
  fail         an output mismatches (max abs/rel error given), has the wrong dtype or
               shape, or is missing; or `kiln run` exits 1
  bug          kilnc exit 3 (internal compiler error) or any other unexpected kilnc exit
               status, any process killed by a signal, any timeout, or `kiln run`
               exiting with a status other than 0 and 1

The data folder is --data, unless the environment variable KILN_CONFORMANCE_DIR is set,
which overrides it. A missing data folder is an error (exit 2), never a skip.

Exit status: 0 when every case of the expected-pass list (restricted to the selected
suites and --filter) still passes and none of them is a `bug`; 1 on a regression;
2 on a usage or set-up error. Cases that newly pass are reported but do not fail the run;
--update-expected rewrites the expected file with the current passing set.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from typing import Dict, List, Optional, Sequence, Tuple

sys.dont_write_bytecode = True

ALL_SUITES = ['node', 'pytorch-converted', 'pytorch-operator', 'simple']
STATUSES = ['pass', 'unsupported', 'fail', 'bug']
# The value range the runner gives integer inputs that decide sizes (kilnc --input-value).
VALUE_RANGE = '0..16'
RTOL = 1e-3
ATOL = 1e-5
# float16 and bfloat16 outputs: within this many steps of their format
# (--format-steps; 2 for the onnx 1.23 suite, whose references round every
# intermediate result to the format: docs/conformance.md).
FORMAT_STEPS = 1
DEFAULT_TIMEOUT = 60.0  # seconds, for each kilnc and each kiln run
WORKDIR_MARKER = '.kiln-conformance-workdir'
ENV_DATA = 'KILN_CONFORMANCE_DIR'

EXPECTED_HEADER = """\
# ONNX conformance cases that kilnc + `kiln run` currently pass{on} (suite/case, sorted).
# tests/conformance/run_conformance.py fails when one of these no longer passes.
# Generated; do not edit by hand. Regenerate after adding operators with:
#   /usr/bin/python3 tests/conformance/run_conformance.py --kilnc build/compiler/kilnc \\
#       --kiln build/tools/kiln/kiln --data ../shared/onnx-conformance \\
#       --workdir build/conformance/work --report build/conformance/report.md \\
#       --expected tests/conformance/{file} --update-expected{target}
# (see docs/conformance.md)
"""

# .npy dtypes that `kiln run` reads and writes.
KILN_NPY_DTYPES = {'float32', 'float16', 'float64', 'int8', 'int16', 'int32', 'int64', 'uint16', 'uint32', 'uint64',
                   'uint8', 'bool'}

# ONNX's narrow types (onnx >= 1.20 data; absent from onnx 1.12's TensorProto):
# kiln run reads and writes them as .npy '|V1', one byte an element, what
# numpy writes for ml_dtypes' arrays (onnx's numpy_helper gives those).
KILN_NARROW_TYPES = ('FLOAT8E4M3FN', 'FLOAT8E4M3FNUZ', 'FLOAT8E5M2', 'FLOAT8E5M2FNUZ', 'UINT4', 'INT4', 'FLOAT4E2M1',
                     'FLOAT8E8M0', 'UINT2', 'INT2')
# Their ml_dtypes dtype names (how a reference array is recognized without importing ml_dtypes).
ML_DTYPES_NARROW = {'float8_e4m3fn', 'float8_e4m3fnuz', 'float8_e5m2', 'float8_e5m2fnuz', 'uint4', 'int4',
                    'float4_e2m1fn', 'float8_e8m0fnu', 'uint2', 'int2'}


def _is_narrow(onnx_mod, elem_type: int) -> bool:
    """Whether ONNX element type `elem_type` is one of KILN_NARROW_TYPES."""
    return bool(elem_type) and any(getattr(onnx_mod.TensorProto, n, None) == elem_type for n in KILN_NARROW_TYPES)


def _is_narrow_array(arr) -> bool:
    """Whether `arr` is an ml_dtypes array of a narrow type (one byte an element)."""
    return arr.dtype.itemsize == 1 and arr.dtype.name in ML_DTYPES_NARROW


def narrow_bytes(arr):
    """An ml_dtypes narrow array as raw bytes ('|V1'), kiln run's .npy for these types."""
    import numpy as np
    return np.ascontiguousarray(arr).view(np.uint8).view('V1')


# Cases whose reference data contradict their own model (checked by hand against
# onnx's test generators); reported as unsupported with the reason, never run.
BAD_REFERENCES = {
    'node/test_adam_multiple': "the suite's reference was computed with epsilon=0.01, which the model's "
                               "Adam node does not carry (it takes the default 1e-6): onnx's adam.py",
}


class Unsupported(Exception):
    """The case cannot be expressed with .npy tensors."""


class ToolError(Exception):
    """kilnc or kiln could not be started at all."""


# ---------------------------------------------------------------------------
# Running tools.

def run_proc(cmd: Sequence[str], timeout: float) -> Tuple[Optional[int], str, str, float]:
    """Runs cmd in its own process group. Returns (returncode or None on timeout,
    stdout, stderr, seconds). On timeout the whole group is killed."""
    start = time.monotonic()
    try:
        proc = subprocess.Popen(list(cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    except OSError as e:
        raise ToolError('cannot run %s: %s' % (cmd[0], e))
    try:
        out, err = proc.communicate(timeout=timeout)
        rc: Optional[int] = proc.returncode
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        out, err = proc.communicate()
        rc = None
    return (rc, out.decode('utf-8', 'replace'), err.decode('utf-8', 'replace'),
            time.monotonic() - start)


def run_kilnc(cmd: Sequence[str], bundle: str, timeout: float, store: Optional[Tuple[str, str]],
              step: int) -> Tuple[Optional[int], str]:
    """Runs kilnc (cmd writes `bundle`); returns (returncode or None on timeout, stderr).

    store = ('save', DIR): also keeps the result and the bundle in DIR (kilnc_STEP.json,
    model_STEP.kiln); ('load', DIR): replays them instead of running kilnc, so that
    bundles compiled on one machine run on another that has only `kiln` (a board, a
    GPU machine; see --save-bundles)."""
    if store is None:
        rc, _out, err, _secs = run_proc(cmd, timeout)
        return rc, err
    mode, folder = store
    meta = os.path.join(folder, 'kilnc_%d.json' % step)
    saved = os.path.join(folder, 'model_%d.kiln' % step)
    if mode == 'load':
        if not os.path.isfile(meta):
            raise ToolError('no saved kilnc result %s (compile with --save-bundles)' % meta)
        with open(meta) as f:
            record = json.load(f)
        if os.path.isfile(bundle):
            os.remove(bundle)  # never a stale bundle from an earlier step
        if os.path.isfile(saved):
            shutil.copyfile(saved, bundle)
        elif record['rc'] == 0:
            raise ToolError('saved kilnc result %s has no bundle %s' % (meta, saved))
        return record['rc'], record['stderr']
    rc, _out, err, _secs = run_proc(cmd, timeout)
    os.makedirs(folder, exist_ok=True)
    with open(meta, 'w') as f:
        json.dump({'rc': rc, 'stderr': err}, f)
    if rc == 0 and os.path.isfile(bundle):
        shutil.copyfile(bundle, saved)
    return rc, err


def first_line(text: str, prefix: str = '') -> str:
    """The first line starting with `prefix` (without it; warnings before it
    are skipped), else the first non-empty line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in lines:
        if prefix and line.startswith(prefix):
            return line[len(prefix):].strip()
    return lines[0] if lines else ''


def _msg(err: str) -> str:
    line = first_line(err)
    return ': ' + line if line else ' (no message)'


def signal_name(rc: int) -> str:
    try:
        return signal.Signals(-rc).name
    except ValueError:
        return 'signal %d' % -rc


def md_escape(text: str) -> str:
    text = text.replace('|', '\\|').replace('\n', ' ')
    return text if len(text) <= 300 else text[:297] + '...'


# ---------------------------------------------------------------------------
# One case (runs in a worker process).

def _value_kind(value_info) -> Tuple[str, int]:
    """('tensor', elem_type) or (other kind, 0)."""
    t = value_info.type
    kind = t.WhichOneof('value')
    if kind == 'tensor_type':
        return 'tensor', t.tensor_type.elem_type
    return kind or 'unknown', 0


def _check_dtype(onnx_mod, elem_type: int, what: str) -> None:
    import numpy as np
    name = onnx_mod.TensorProto.DataType.Name(elem_type) if elem_type else 'UNDEFINED'
    np_type = None
    if elem_type:
        if hasattr(onnx_mod, 'mapping'):  # onnx < 1.13 (Debian 12's 1.12)
            np_type = onnx_mod.mapping.TENSOR_TYPE_TO_NP_TYPE.get(elem_type)
        else:  # onnx >= 1.13 (a GPU machine's; see tools/gpu_check)
            try:
                np_type = onnx_mod.helper.tensor_dtype_to_np_dtype(elem_type)
            except (KeyError, ValueError):
                np_type = None
    if elem_type == onnx_mod.TensorProto.BFLOAT16:
        return  # .npy '|V2' (bf16_bits)
    if elem_type == onnx_mod.TensorProto.STRING:
        return  # .npy '<U' (_as_npy)
    if _is_narrow(onnx_mod, elem_type):
        return  # .npy '|V1' (narrow_bytes)
    if np_type is None or str(np.dtype(np_type)) not in KILN_NPY_DTYPES:
        raise Unsupported('%s has element type %s, which kiln run cannot read or write as .npy'
                          % (what, name))


def bf16_bits(arr):
    """bfloat16 data as uint16 bits, from what onnx's numpy_helper gives:
    the bits (uint16: onnx 1.12 stores bfloat16 test data as UINT16), 2-byte
    raw elements (ml_dtypes' bfloat16, .npy '|V2': kiln run's convention),
    or float32 values (rounded to nearest even)."""
    import numpy as np
    if arr.dtype == np.uint16:
        return arr
    if arr.dtype.itemsize == 2 and arr.dtype.kind in 'Vf' and str(arr.dtype) != 'float16':
        return arr.view(np.uint16)
    b = np.ascontiguousarray(arr, dtype=np.float32).view(np.uint32).astype(np.uint64)
    r = ((b + 0x7fff + ((b >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(arr), ((b >> 16) | 0x40).astype(np.uint16), r)


def bf16_values(bits):
    """float32 values of bfloat16 bits."""
    import numpy as np
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def _as_npy(arr, what: str = 'a tensor'):
    """An ONNX string tensor (numpy_helper gives an object array of bytes) as
    numpy unicode ('<U'), what kiln run reads and writes; other arrays as they are."""
    import numpy as np
    if arr.dtype != object:
        return arr
    try:
        items = [s.decode('utf-8') if isinstance(s, bytes) else str(s) for s in arr.ravel().tolist()]
    except UnicodeDecodeError as e:
        raise Unsupported('%s holds a string that is not UTF-8: %s' % (what, e))
    return np.array(items, dtype=str).reshape(arr.shape)


def _npy_dtype_ok(arr) -> bool:
    """Whether kiln run reads and writes `arr`'s dtype as .npy (bfloat16 and the narrow types aside)."""
    return str(arr.dtype) in KILN_NPY_DTYPES or arr.dtype.kind == 'U'


def _load_tensor(onnx_mod, numpy_helper, path: str, what: str):
    tensor = onnx_mod.TensorProto()
    with open(path, 'rb') as f:
        tensor.ParseFromString(f.read())
    try:
        arr = numpy_helper.to_array(tensor)
    except Exception as e:  # noqa: BLE001 - any conversion problem makes the case unsupported
        raise Unsupported('%s: cannot convert %s: %s' % (what, os.path.basename(path), e))
    return _as_npy(arr, what)


def _load_sequence(onnx_mod, numpy_helper, path: str, what: str):
    """The tensors of a serialized SequenceProto, as numpy arrays."""
    seq = onnx_mod.SequenceProto()
    with open(path, 'rb') as f:
        seq.ParseFromString(f.read())
    if seq.elem_type != onnx_mod.SequenceProto.TENSOR:
        raise Unsupported('%s: a sequence of non-tensors' % what)
    try:
        arrays = [numpy_helper.to_array(t) for t in seq.tensor_values]
    except Exception as e:  # noqa: BLE001
        raise Unsupported('%s: cannot convert %s: %s' % (what, os.path.basename(path), e))
    return [_as_npy(a, what) for a in arrays]


def _element_tensor_type(t):
    """The tensor type a tensor, sequence, optional tensor or optional sequence type holds; None otherwise."""
    for _ in range(3):
        kind = t.WhichOneof('value')
        if kind == 'tensor_type':
            return t.tensor_type
        if kind not in ('sequence_type', 'optional_type'):
            return None
        t = t.sequence_type.elem_type if kind == 'sequence_type' else t.optional_type.elem_type
    return None


def _holds_sequence(t) -> bool:
    """A sequence type, or an optional of one."""
    kind = t.WhichOneof('value')
    if kind == 'optional_type':
        t = t.optional_type.elem_type
        kind = t.WhichOneof('value')
    return kind == 'sequence_type'


def _load_optional(onnx_mod, numpy_helper, path: str, what: str):
    """A serialized OptionalProto's value: None (empty), a numpy array or a list of them."""
    opt = onnx_mod.OptionalProto()
    with open(path, 'rb') as f:
        opt.ParseFromString(f.read())
    try:
        if opt.HasField('tensor_value'):
            return _as_npy(numpy_helper.to_array(opt.tensor_value), what)
        if opt.HasField('sequence_value'):
            if opt.sequence_value.elem_type != onnx_mod.SequenceProto.TENSOR:
                raise Unsupported('%s: an optional sequence of non-tensors' % what)
            return [_as_npy(numpy_helper.to_array(t), what) for t in opt.sequence_value.tensor_values]
    except Unsupported:
        raise
    except Exception as e:  # noqa: BLE001
        raise Unsupported('%s: cannot convert %s: %s' % (what, os.path.basename(path), e))
    if opt.elem_type not in (onnx_mod.OptionalProto.UNDEFINED, onnx_mod.OptionalProto.TENSOR,
                             onnx_mod.OptionalProto.SEQUENCE):
        raise Unsupported('%s: an optional of neither a tensor nor a sequence' % what)
    return None


def _sequence_args(inputs, sequence_shapes) -> List[str]:
    """kilnc's --sequence-length for each sequence input (a sequence's length
    is a compile-time fact, like a static dimension: docs/sequences.md), and
    --input-shape for the elements the model leaves unshaped, from the data;
    every data set must agree."""
    args = []
    for vi in inputs:
        if vi.name not in sequence_shapes:
            continue
        per_set = [s for s in sequence_shapes[vi.name] if s is not None]  # (None: an absent optional)
        if not per_set:
            raise Unsupported("optional sequence input '%s' is absent in every data set: its length is unknown"
                              % vi.name)
        if any(s != per_set[0] for s in per_set):
            raise Unsupported("sequence input '%s': the data sets give different lengths or shapes" % vi.name)
        args += ['--sequence-length', '%s=%d' % (vi.name, len(per_set[0]))]
        declared = _element_tensor_type(vi.type)
        static = declared.HasField('shape') and all(d.HasField('dim_value') for d in declared.shape.dim)
        if not static:
            for k, shape in enumerate(per_set[0]):
                args += ['--input-shape', '%s[%d]=%s' % (vi.name, k, ','.join(str(d) for d in shape))]
    return args


def _data_shape_args(inputs, sequences, optionals, converted) -> List[str]:
    """--input-shape NAME=<the data's shape> for each tensor input whose declared
    shape has a named or missing dimension, when every data set gives it one shape."""
    import numpy as np
    args = []
    for i, vi in enumerate(inputs):
        t = vi.type.tensor_type
        if vi.name in sequences or vi.name in optionals or \
                (t.HasField('shape') and all(d.HasField('dim_value') for d in t.shape.dim)):
            continue
        shapes = {np.load(feeds[i].split('=', 1)[1], allow_pickle=False, mmap_mode='r').shape
                  for _, feeds, _ in converted}
        if len(shapes) != 1:
            return []
        args += ['--input-shape', '%s=%s' % (vi.name, ','.join(str(d) for d in shapes.pop()))]
    return args


def _compare_sequence(name: str, ref, folder: str) -> Optional[str]:
    """None when folder holds exactly len(ref) files 0.npy .. matching ref."""
    import numpy as np
    if not os.path.isdir(folder):
        return "output '%s' missing (%s/ not written)" % (name, os.path.basename(folder))
    files = sorted(f for f in os.listdir(folder) if f.endswith('.npy'))
    if len(files) != len(ref):
        return "output '%s': a sequence of %d tensors, expected %d" % (name, len(files), len(ref))
    for k, r in enumerate(ref):
        try:
            got = np.load(os.path.join(folder, '%d.npy' % k), allow_pickle=False)
        except Exception as e:  # noqa: BLE001
            return "output '%s'[%d]: unreadable .npy: %s" % (name, k, e)
        problem = compare('%s[%d]' % (name, k), got, r)
        if problem:
            return problem
    return None


def compare(name: str, got, ref) -> Optional[str]:
    """None when got matches ref, else the reason."""
    import numpy as np
    if ref.dtype.kind == 'U':  # strings: equal, element by element ('<U' widths may differ)
        if got.dtype.kind != 'U':
            return "output '%s': dtype %s, expected strings" % (name, got.dtype)
        if got.shape != ref.shape:
            return "output '%s': shape %s, expected %s" % (name, list(got.shape), list(ref.shape))
        differ = got != ref
        if not differ.any():
            return None
        at = tuple(int(i) for i in np.argwhere(differ)[0]) if ref.ndim else ()
        return "output '%s': %d of %d strings differ (at %s: got %r, expected %r)" % (
            name, int(differ.sum()), ref.size, list(at), str(got[at]), str(ref[at]))
    if _is_narrow_array(ref):
        # kiln's '|V1' bytes read as the reference's ml_dtypes type, then
        # both compared by value: integers exactly, floats as any float
        # (NaN equal to NaN).
        if got.dtype.itemsize != 1 or got.dtype.kind not in 'Vui':
            return "output '%s': dtype %s, expected %s as .npy '|V1'" % (name, got.dtype, ref.dtype)
        if got.shape != ref.shape:
            return "output '%s': shape %s, expected %s" % (name, list(got.shape), list(ref.shape))
        wide = np.int32 if ref.dtype.name in ('uint4', 'int4', 'uint2', 'int2') else np.float32
        got = np.ascontiguousarray(got).view(np.uint8).view(ref.dtype).astype(wide)
        ref = ref.astype(wide)
    if got.dtype != ref.dtype:
        return "output '%s': dtype %s, expected %s" % (name, got.dtype, ref.dtype)
    if got.shape != ref.shape:
        return "output '%s': shape %s, expected %s" % (name, list(got.shape), list(ref.shape))
    if got.size == 0:
        return None
    if ref.dtype == np.dtype('V2'):
        # bfloat16: within one bfloat16 step (2^-7 relative). The suite's
        # data (onnx 1.12) truncates float32 to bfloat16; ONNX Runtime and
        # newer ONNX references round to nearest even, as kilnc does.
        # FORMAT_STEPS steps (2^-7 relative each).
        g, r = bf16_values(got.view(np.uint16)), bf16_values(ref.view(np.uint16))
        ok = np.isclose(g, r, rtol=FORMAT_STEPS * 2.0 ** -7, atol=0, equal_nan=True)
        if ok.all():
            return None
        return "output '%s' (bfloat16): %d of %d elements differ by more than %d bfloat16 step(s)" % (
            name, int((~ok).sum()), ref.size, FORMAT_STEPS)
    if np.issubdtype(ref.dtype, np.floating):
        g = got.astype(np.float64)
        r = ref.astype(np.float64)
        # float16: FORMAT_STEPS steps of 2^-10 relative (one is about RTOL).
        rtol = max(RTOL, FORMAT_STEPS * 2.0 ** -10) if ref.dtype == np.float16 else RTOL
        ok = np.isclose(g, r, rtol=rtol, atol=ATOL, equal_nan=True)
        if ok.all():
            return None
        bad = int((~ok).sum())
        both_finite = np.isfinite(g) & np.isfinite(r)
        diff = np.where(both_finite, np.abs(g - r), 0.0)
        nonzero = both_finite & (r != 0)
        rel = np.where(nonzero, diff / np.where(nonzero, np.abs(r), 1.0), 0.0)
        nonfinite = int((~ok & ~both_finite).sum())
        worst = np.unravel_index(int(np.argmax(np.where(ok, -1.0, diff))), ref.shape) \
            if ref.ndim else ()
        msg = ("output '%s': %d of %d elements differ; max abs err %.3g, max rel err %.3g"
               % (name, bad, ref.size, float(diff.max()), float(rel.max())))
        if nonfinite:
            msg += ', %d NaN/inf mismatches' % nonfinite
        if ref.ndim and not nonfinite:
            msg += ' (at %s: got %.6g, expected %.6g)' % (list(int(i) for i in worst),
                                                         float(g[worst]), float(r[worst]))
        return msg
    if np.array_equal(got, ref):
        return None
    bad = int((got != ref).sum())
    msg = "output '%s': %d of %d elements differ" % (name, bad, ref.size)
    if ref.dtype != np.bool_:
        diff = np.abs(got.astype(np.float64) - ref.astype(np.float64))
        msg += '; max abs err %.6g' % float(diff.max())
    return msg


# In the reason of a pass that needed kilnc flags of its own (--input-shape,
# --sequence-length, --input-value, --freeze-input from the case's data).
CASE_FLAGS_NOTE = 'with flags of its own'


# Extra arguments of kilnc and `kiln run` per --target.
TARGET_ARGS = {
    'cpu': ([], []),
    'vulkan': (['--target=vulkan'], ['--device', 'vulkan', '--validation']),
    # GPU schedules with workgroup shared memory (tiles, shared reductions).
    'vulkan-shared': (['--target=vulkan', '--vulkan-shared-memory=on'], ['--device', 'vulkan', '--validation']),
    # Both: every case on plain Vulkan, and again with shared memory where
    # kilnc's report says that changes the bundle.
    'vulkan+shared': (['--target=vulkan', '--report'], ['--device', 'vulkan', '--validation']),
}


# Cases whose reference outputs come from numpy's random generator: they are
# checked by structure and distribution instead of by value (decision 46).
RANDOM_CASES = re.compile(r'^test_(bernoulli|training_dropout)')


def check_random(case: str, feeds: Sequence[str], refs, out_dir: str) -> Optional[str]:
    """None when the outputs are a plausible draw: Bernoulli's are 0 or 1 (0 where the
    probability is 0, 1 where it is 1) and their sum is within 5 standard deviations of
    the probabilities' sum; training Dropout's are x / (1 - ratio) or 0, agree with the
    mask, keep and drop at least one element each, and drop within 5 standard deviations
    of ratio * N. With ratio 0 or training off every output (the mask too) must equal the
    reference. (ONNX's cases are small: 10 Bernoulli draws test little beyond the
    structure; tests/e2e/random_ops.py tests the distributions at 2^18 draws.)"""
    import numpy as np
    ins = [np.load(f.split('=', 1)[1]) for f in feeds]
    got = {}
    for name, ref in refs:
        path = os.path.join(out_dir, name.replace('/', '_') + '.npy')
        if not os.path.isfile(path):
            return "output '%s' missing" % name
        got[name] = np.load(path, allow_pickle=False)
        if got[name].dtype != ref.dtype or got[name].shape != ref.shape:
            return "output '%s': %s%s, expected %s%s" % (name, got[name].dtype, list(got[name].shape),
                                                          ref.dtype, list(ref.shape))
    ys = [got[name] for name, _ in refs]

    def spread(n_hit, mean, var):
        if abs(n_hit - mean) > 5 * np.sqrt(var) + 1:
            return '%d hits where %.1f +- %.1f were expected' % (n_hit, mean, np.sqrt(var))
        return None
    if case.startswith('test_bernoulli'):
        p, y = ins[0].astype(np.float64), ys[0]
        if not np.isin(y, [0, 1]).all():
            return 'Bernoulli gave values other than 0 and 1'
        if (y[p <= 0] != 0).any() or (y[p >= 1] != 1).any():
            return 'Bernoulli ignored a probability of 0 or 1'
        return spread(int(y.sum()), p.sum(), (p * (1 - p)).sum())
    x, y = ins[0].astype(np.float64), ys[0].astype(np.float64)
    ratio = float(ins[1]) if len(ins) > 1 else 0.5
    training = bool(ins[2]) if len(ins) > 2 else False
    if not training or ratio == 0:
        for (name, ref), y_ in zip(refs, ys):
            problem = compare(name, y_, ref)
            if problem:
                return problem
        return None
    kept = x / (1 - ratio)
    mask = ys[1] if len(ys) > 1 else (y != 0)
    if len(ys) > 1 and ys[1].dtype != np.bool_:
        return 'the mask is not boolean'
    if not np.allclose(y, np.where(mask, kept, 0), rtol=1e-5, atol=1e-6, equal_nan=True):
        return 'Dropout output is neither x / (1 - ratio) nor 0, or disagrees with its mask'
    n = mask.size
    if 0 < ratio < 1 and n >= 20 and (mask.all() or not mask.any()):
        return 'Dropout kept all or none of %d elements at ratio %g' % (n, ratio)
    return spread(int((~mask).sum()), ratio * n, ratio * (1 - ratio) * n)


def run_case(args: Tuple[str, str, str, str, str, str, float, str, Optional[Tuple[str, str]], bool]
             ) -> Tuple[str, str, str, str, float]:
    """Returns (suite, case, status, reason, seconds)."""
    suite, case, case_dir, work, kilnc, kiln, timeout, target, store, case_flags = args
    start = time.monotonic()
    try:
        status, reason = _run_case(case_dir, work, kilnc, kiln, timeout, target, store, case_flags)
    except Unsupported as e:
        status, reason = 'unsupported', str(e)
    except ToolError as e:
        status, reason = 'fail', str(e)
    except Exception as e:  # noqa: BLE001 - a harness error must not hide the other cases
        status, reason = 'fail', 'harness error: %s: %s' % (type(e).__name__, e)
    return suite, case, status, reason, time.monotonic() - start


def _check_outputs(bundle: str, run_args: Sequence[str], converted, work: str, kiln: str, timeout: float,
                   case_dir: str, out_suffix: str = '_out') -> Tuple[Optional[str], str]:
    """Runs `bundle` on every data set of `converted` and compares its outputs:
    (status, reason) of the first failure, or (None, note) when all match."""
    import numpy as np
    note = ''
    for ds_name, feeds, refs in converted:
        out_dir = os.path.join(work, ds_name + out_suffix)
        os.makedirs(out_dir, exist_ok=True)
        cmd = [kiln, 'run', bundle] + run_args
        for feed in feeds:
            cmd += ['--input', feed]
        cmd += ['--output-dir', out_dir]
        rc, _out, err, secs = run_proc(cmd, timeout)
        if rc is None:
            return 'bug', 'kiln run timed out after %g s' % timeout
        if rc < 0:
            return 'bug', 'kiln run killed by %s%s' % (signal_name(rc), _msg(err))
        if rc == 1:
            return 'fail', 'kiln run: %s' % (first_line(err, 'kiln: error:') or 'exit 1')
        if rc != 0:
            return 'bug', 'kiln run exit %d%s' % (rc, _msg(err))
        prefix = '' if len(converted) == 1 else ds_name + ': '
        if RANDOM_CASES.search(os.path.basename(case_dir)):
            problem = check_random(os.path.basename(case_dir), feeds, refs, out_dir)
            if problem:
                return 'fail', prefix + problem
            note = 'random operator: checked by distribution, not by value'
            continue
        for name, ref in refs:
            if isinstance(ref, tuple):  # an optional: absent, or its value as below
                ref = ref[1]
                stem = os.path.join(out_dir, name.replace('/', '_'))
                if ref is None:
                    if os.path.exists(stem) or os.path.exists(stem + '.npy'):
                        return 'fail', "%soutput '%s': written, but it holds no value" % (prefix, name)
                    continue
            if isinstance(ref, list):  # a sequence: out_dir/NAME/0.npy ..
                problem = _compare_sequence(name, ref, os.path.join(out_dir, name.replace('/', '_')))
                if problem:
                    return 'fail', prefix + problem
                continue
            path = os.path.join(out_dir, name.replace('/', '_') + '.npy')
            if not os.path.isfile(path):
                return 'fail', "%soutput '%s' missing (%s not written)" % (
                    prefix, name, os.path.basename(path))
            try:
                got = np.load(path, allow_pickle=False)
            except Exception as e:  # noqa: BLE001
                return 'fail', "%soutput '%s': unreadable .npy: %s" % (prefix, name, e)
            problem = compare(name, got, ref)
            if problem:
                return 'fail', prefix + problem
    return None, note


def _run_case(case_dir: str, work: str, kilnc: str, kiln: str,
              timeout: float, target: str = 'cpu',
              store: Optional[Tuple[str, str]] = None, case_flags: bool = True) -> Tuple[str, str]:
    import numpy as np
    import onnx
    from onnx import numpy_helper

    suite_case = '%s/%s' % (os.path.basename(os.path.dirname(case_dir)), os.path.basename(case_dir))
    used_value_flags = False  # --input-value or --freeze-input from the case's data
    if suite_case in BAD_REFERENCES:
        raise Unsupported(BAD_REFERENCES[suite_case])
    os.makedirs(work, exist_ok=True)
    model_path = os.path.join(case_dir, 'model.onnx')
    model = onnx.load(model_path, load_external_data=False)
    graph = model.graph
    init_names = {t.name for t in graph.initializer} | \
        {t.values.name for t in graph.sparse_initializer}
    inputs = [vi for vi in graph.input if vi.name not in init_names]
    outputs = list(graph.output)

    for what, vis in (('input', inputs), ('output', outputs)):
        for vi in vis:
            kind, elem = _value_kind(vi)
            tensor_type = _element_tensor_type(vi.type)
            if kind in ('sequence_type', 'optional_type') and tensor_type is not None:
                elem = tensor_type.elem_type  # docs/sequences.md
            elif kind != 'tensor':
                kind = kind.replace('_type', '')
                raise Unsupported("%s '%s' is %s %s, not a tensor" % (
                    what, vi.name, 'an' if kind[:1] in 'aeiou' else 'a', kind))
            _check_dtype(onnx, elem, "%s '%s'" % (what, vi.name))
    sequences = {vi.name for vi in inputs + outputs if _holds_sequence(vi.type)}
    optionals = {vi.name for vi in inputs + outputs if _value_kind(vi)[0] == 'optional_type'}
    sequence_shapes = {}  # sequence input -> per data set, its elements' shapes

    data_sets = sorted(d for d in glob.glob(os.path.join(case_dir, 'test_data_set_*'))
                       if os.path.isdir(d))
    if not data_sets:
        return 'fail', 'no test_data_set_* folder'

    # Convert every data set first: a case whose data cannot be converted is
    # unsupported before kilnc is even asked.
    converted = []
    for ds in data_sets:
        ds_name = os.path.basename(ds)
        feeds = []
        for i, vi in enumerate(inputs):
            pb = os.path.join(ds, 'input_%d.pb' % i)
            if not os.path.isfile(pb):
                return 'fail', '%s: missing %s' % (ds_name, os.path.basename(pb))
            value = None
            if vi.name in optionals:  # kiln run --input NAME=FILE.npy|DIR|none
                value = _load_optional(onnx, numpy_helper, pb, "input '%s'" % vi.name)
                if value is None:
                    feeds.append('%s=none' % vi.name)
                    if vi.name in sequences:
                        sequence_shapes.setdefault(vi.name, []).append(None)
                    continue
                if not isinstance(value, list):
                    npy = os.path.join(work, '%s_input_%d.npy' % (ds_name, i))
                    np.save(npy, np.array(value, order='C', copy=True))
                    feeds.append('%s=%s' % (vi.name, npy))
                    continue
            if vi.name in sequences:  # a folder of 0.npy .. N-1.npy (kiln run --input NAME=DIR)
                folder = os.path.join(work, '%s_input_%d' % (ds_name, i))
                os.makedirs(folder, exist_ok=True)
                elems = value if value is not None else \
                    _load_sequence(onnx, numpy_helper, pb, "input '%s'" % vi.name)
                for k, arr in enumerate(elems):
                    np.save(os.path.join(folder, '%d.npy' % k), np.array(arr, order='C', copy=True))
                sequence_shapes.setdefault(vi.name, []).append([a.shape for a in elems])
                feeds.append('%s=%s' % (vi.name, folder))
                continue
            arr = _load_tensor(onnx, numpy_helper, pb, "input '%s'" % vi.name)
            if _value_kind(vi)[1] == onnx.TensorProto.BFLOAT16:
                arr = bf16_bits(arr).view('V2')  # kiln run's bfloat16 .npy
            elif _is_narrow_array(arr):
                arr = narrow_bytes(arr)  # kiln run's '|V1'
            elif not _npy_dtype_ok(arr):
                raise Unsupported("input '%s' has dtype %s, which kiln run cannot read"
                                  % (vi.name, arr.dtype))
            npy = os.path.join(work, '%s_input_%d.npy' % (ds_name, i))
            np.save(npy, np.array(arr, order='C', copy=True))  # keeps 0-d arrays 0-d
            feeds.append('%s=%s' % (vi.name, npy))
        refs = []
        for i, vi in enumerate(outputs):
            pb = os.path.join(ds, 'output_%d.pb' % i)
            if not os.path.isfile(pb):
                return 'fail', '%s: missing %s' % (ds_name, os.path.basename(pb))
            if vi.name in optionals:  # None: absent (nothing written)
                refs.append((vi.name, ('optional', _load_optional(onnx, numpy_helper, pb, "output '%s'" % vi.name))))
                continue
            if vi.name in sequences:
                refs.append((vi.name, _load_sequence(onnx, numpy_helper, pb, "output '%s'" % vi.name)))
                continue
            ref = _load_tensor(onnx, numpy_helper, pb, "output '%s'" % vi.name)
            if _value_kind(vi)[1] == onnx.TensorProto.BFLOAT16:
                ref = bf16_bits(ref).view('V2')
            elif _is_narrow_array(ref):
                pass  # compared by value (compare)
            elif not _npy_dtype_ok(ref):
                raise Unsupported("output '%s' has dtype %s, which kiln run cannot write"
                                  % (vi.name, ref.dtype))
            refs.append((vi.name, ref))
        converted.append((ds_name, feeds, refs))

    # A few cases' data contradict their model's declared input shape
    # (CastLike's bfloat16 cases declare 'like' [3, 4] and give [1]): where
    # only the input's type matters (it is read only as CastLike's `target_type`),
    # compile a copy declaring the data's shape.
    note = ''
    type_only = {vi.name for vi in inputs if vi.name not in sequences}
    for n in graph.node:
        for k, name in enumerate(n.input):
            if not (n.op_type == 'CastLike' and k == 1):
                type_only.discard(name)
    if len(converted) == 1:
        patched = []
        for i, vi in enumerate(inputs):
            if vi.name not in type_only:
                continue
            dims = vi.type.tensor_type.shape.dim
            data_shape = np.load(converted[0][1][i].split('=', 1)[1], allow_pickle=False).shape
            declared = [d.dim_value if d.HasField('dim_value') else None for d in dims]
            if all(d is not None for d in declared) and tuple(declared) != data_shape:
                del dims[:]
                for d in data_shape:
                    dims.add().dim_value = d
                patched.append('%s %s -> %s' % (vi.name, declared, list(data_shape)))
        if patched:
            model_path = os.path.join(work, 'model_declared_as_data.onnx')
            onnx.save(model, model_path)
            note = "model's declared input shape replaced by its data's: " + '; '.join(patched)

    bundle = os.path.join(work, 'model.kiln')
    kilnc_args, run_args = TARGET_ARGS[target]
    if case_flags:
        kilnc_args = kilnc_args + _sequence_args(inputs, sequence_shapes)
    rc, err = run_kilnc([kilnc, model_path, '-o', bundle] + kilnc_args, bundle, timeout, store, 0)
    # Named (dynamic) dimensions: compiled at the data's sizes (--input-shape),
    # as for any model kilnc compiles for the shapes it will run; the values
    # are still the run's. All data sets must agree.
    # (A dimension nothing bounds is sized per run: the first compile may
    # still fail where an operator needs static shapes.)
    if case_flags and rc == 1:
        shaped = _data_shape_args(inputs, sequences, optionals, converted)
        if shaped:
            kilnc_args = kilnc_args + shaped
            rc, err = run_kilnc([kilnc, model_path, '-o', bundle] + kilnc_args, bundle, timeout, store, 0)
            note = 'named dimensions compiled at the data\'s sizes'
    # Inputs that decide a size (a window's length, Pad's pads): first give
    # the small integer inputs' values a range with --input-value (still
    # read at run time, the bundle serves every value in VALUE_RANGE); when
    # kilnc cannot use that, freeze them with --freeze-input (a kilnc feature
    # for exactly this; such passes do not count as "every input at run time").
    shape_deciding = r'compile-time constant|must be a constant|static shape|dynamic dimension|--input-value'
    integer_inputs = [(i, vi.name) for i, vi in enumerate(inputs)
                      if _value_kind(vi)[1] in (onnx.TensorProto.INT64, onnx.TensorProto.INT32)]
    if case_flags and rc == 1 and re.search(shape_deciding, err):
        # (Only inputs whose data lies in the range: a sample rate of 8192 is
        # a value, not a size.)
        lo, hi = (int(v) for v in VALUE_RANGE.split('..'))

        def in_range(a):
            return a.size <= 16 and bool(np.all((a >= lo) & (a <= hi)))
        ranged = [(i, name) for i, name in integer_inputs
                  if all(in_range(np.load(feeds[i].split('=', 1)[1], allow_pickle=False))
                         for _, feeds, _ in converted)]
        if ranged:
            cmd = [kilnc, model_path, '-o', bundle] + kilnc_args
            for _, name in ranged:
                cmd += ['--input-value', '%s=%s' % (name, VALUE_RANGE)]
            rc2, err2 = run_kilnc(cmd, bundle, timeout, store, 2)
            if rc2 == 0:
                rc, err = rc2, err2
                used_value_flags = True
                note = 'integer inputs read at run time within --input-value %s: %s' % (
                    VALUE_RANGE, ', '.join(sorted(name for _, name in ranged)))
    if case_flags and rc == 1 and len(converted) == 1 and re.search(shape_deciding, err):
        frozen = integer_inputs
        if frozen:
            cmd = [kilnc, model_path, '-o', bundle] + kilnc_args
            for i, name in frozen:
                cmd += ['--freeze-input', '%s=%s' % (name, os.path.join(data_sets[0], 'input_%d.pb' % i))]
            rc, err = run_kilnc(cmd, bundle, timeout, store, 1)
            used_value_flags = True
            names = {name for _, name in frozen}
            ds_name, feeds, refs = converted[0]
            converted = [(ds_name, [f for f in feeds if f.split('=', 1)[0] not in names], refs)]
            note = 'integer inputs frozen (--freeze-input): ' + ', '.join(sorted(names))
    if rc is None:
        return 'bug', 'kilnc timed out after %g s' % timeout
    if rc < 0:
        return 'bug', 'kilnc killed by %s%s' % (signal_name(rc), _msg(err))
    if rc == 1:
        return 'unsupported', first_line(err, 'kilnc: error:') or 'kilnc exit 1 (no message)'
    if rc == 3:
        return 'bug', 'kilnc internal error (exit 3): %s' % first_line(err, 'kilnc: error:')
    if rc != 0:
        return 'bug', 'kilnc exit %d%s' % (rc, _msg(err))

    status, checked = _check_outputs(bundle, run_args, converted, work, kiln, timeout, case_dir)
    if status:
        return status, checked
    note = checked or note
    if target == 'vulkan+shared':
        # The same case with workgroup shared memory, where that changes the
        # bundle: kilnc's report counts the nodes whose kernels depend on it
        # (0: the bundle would be byte-identical, decision 66).
        m = re.search(r'(\d+) nodes that --vulkan-shared-memory changes', err)
        if m is None or int(m.group(1)) > 0:
            shared_bundle = os.path.join(work, 'model_shared.kiln')
            rc, err2 = run_kilnc([kilnc, model_path, '-o', shared_bundle, '--vulkan-shared-memory=on'] +
                                 kilnc_args, shared_bundle, timeout, store, 5)
            if rc != 0:
                return ('bug' if rc is None or rc < 0 or rc > 1 else 'fail',
                        'with --vulkan-shared-memory=on: kilnc exit %s%s' % (rc, _msg(err2)))
            status, checked = _check_outputs(shared_bundle, run_args, converted, work, kiln, timeout, case_dir,
                                             '_shared_out')
            if status:
                return status, 'with --vulkan-shared-memory=on: ' + checked
            note = (note + '; ' if note else '') + 'also with --vulkan-shared-memory=on'
    extra = [a for a in kilnc_args if a not in TARGET_ARGS[target][0]]
    if extra or used_value_flags:
        note = (note + '; ' if note else '') + CASE_FLAGS_NOTE
    return 'pass', note


# ---------------------------------------------------------------------------
# Expected list, report.

def read_expected(path: str) -> List[str]:
    with open(path) as f:
        return [line.strip() for line in f
                if line.strip() and not line.lstrip().startswith('#')]


def write_expected(path: str, names: Sequence[str], target: str = 'cpu') -> None:
    tmp = path + '.tmp'
    with open(tmp, 'w') as f:
        vulkan = target.startswith('vulkan')
        f.write(EXPECTED_HEADER.format(on=' on Vulkan (lavapipe)' if vulkan else '',
                                       file=os.path.basename(path),
                                       target=(' --target ' + target) if vulkan else ''))
        for name in sorted(set(names)):
            f.write(name + '\n')
    os.replace(tmp, path)


_OP_RE = re.compile(r"operator '([^']+)' \(opset (\d+)\) is not supported")


def reason_key(reason: str) -> str:
    """Groups unsupported reasons: the operator for unsupported operators, else the
    message without node names."""
    m = _OP_RE.search(reason)
    if m:
        return 'operator %s' % m.group(1)
    m = re.match(r"^(\S+) node '[^']*': (.*)$", reason)
    op, rest = (m.group(1) + ': ', m.group(2)) if m else ('', reason)
    return op + re.sub(r"'[^']*'", "'…'", rest)


def summarize(results, suites: Sequence[str]) -> List[str]:
    lines = ['| suite | cases | pass | unsupported | fail | bug | pass % |',
             '|-------|------:|-----:|------------:|-----:|----:|-------:|']
    totals = collections.Counter()
    for suite in suites:
        c = collections.Counter(r[2] for r in results if r[0] == suite)
        n = sum(c.values())
        totals.update(c)
        lines.append('| %s | %d | %d | %d | %d | %d | %.1f |' % (
            suite, n, c['pass'], c['unsupported'], c['fail'], c['bug'],
            100.0 * c['pass'] / n if n else 0.0))
    n = sum(totals.values())
    lines.append('| **total** | %d | %d | %d | %d | %d | %.1f |' % (
        n, totals['pass'], totals['unsupported'], totals['fail'], totals['bug'],
        100.0 * totals['pass'] / n if n else 0.0))
    flagged = collections.Counter(r[0] for r in results if r[2] == 'pass' and CASE_FLAGS_NOTE in r[3])
    lines.append('')
    lines.append('Passes with no flags of their own (every input given at run time, nothing from the data): ' +
                 ', '.join('%s %d' % (suite, sum(1 for r in results if r[0] == suite and r[2] == 'pass') -
                                      flagged[suite]) for suite in suites))
    return lines


def top_reasons(results, limit: int) -> List[Tuple[str, int]]:
    c = collections.Counter(reason_key(r[3]) for r in results if r[2] == 'unsupported')
    return c.most_common(limit)


def write_report(path: str, results, suites: Sequence[str], header: Dict[str, str],
                 regressions, new_passes) -> None:
    out = ['# Kiln ONNX conformance report', '']
    for k, v in header.items():
        out.append('- %s: %s' % (k, v))
    out += ['', '## Summary', ''] + summarize(results, suites) + ['']
    if regressions:
        out += ['## Regressions (expected to pass)', '']
        out += ['- `%s`: %s — %s' % (n, s, md_escape(r)) for n, s, r in regressions]
        out.append('')
    if new_passes:
        out += ['## New passes (not in the expected list; run with --update-expected)', '']
        out += ['- `%s`' % n for n in new_passes]
        out.append('')
    out += ['## Most frequent unsupported reasons', '',
            '| reason | cases |', '|--------|------:|']
    out += ['| %s | %d |' % (md_escape(k), n) for k, n in top_reasons(results, 50)]
    out.append('')
    for suite in suites:
        rows = sorted(r for r in results if r[0] == suite)
        if not rows:
            continue
        out += ['## %s' % suite, '', '| case | status | reason |', '|------|--------|--------|']
        out += ['| %s/%s | %s | %s |' % (s, c, st, md_escape(reason))
                for s, c, st, reason, _t in rows]
        out.append('')
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, 'w') as f:
        f.write('\n'.join(out))


# ---------------------------------------------------------------------------

def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--kilnc', help='the compiler (not needed with --load-bundles)')
    ap.add_argument('--kiln', required=True)
    ap.add_argument('--data', help='conformance data folder (overridden by $%s)' % ENV_DATA)
    ap.add_argument('--workdir', required=True,
                    help='scratch folder, emptied at the start of every run')
    ap.add_argument('--report', required=True, help='Markdown report to write')
    ap.add_argument('--expected', help='expected-pass list (suite/case per line)')
    ap.add_argument('--suites', default=','.join(ALL_SUITES))
    ap.add_argument('--jobs', type=int, default=2)
    ap.add_argument('--timeout', type=float, default=DEFAULT_TIMEOUT,
                    help='seconds for each kilnc and kiln run process (default %(default)g)')
    ap.add_argument('--filter', help='only cases whose "suite/case" matches this regex (re.search)')
    ap.add_argument('--target', choices=sorted(TARGET_ARGS), default='cpu',
                    help='vulkan: kilnc --target=vulkan, kiln run --device vulkan --validation '
                         '(any validation message fails the case); vulkan-shared: with '
                         '--vulkan-shared-memory=on; vulkan+shared: vulkan, and again with shared memory '
                         'where kilnc --report says that changes the bundle; default %(default)s')
    ap.add_argument('--save-bundles', metavar='DIR',
                    help='also keep every kilnc result and bundle in DIR/<suite>/<case>/')
    ap.add_argument('--load-bundles', metavar='DIR',
                    help='run the bundles that --save-bundles kept in DIR instead of running kilnc '
                         '(compile on one machine, run on another with only `kiln`)')
    ap.add_argument('--no-case-flags', action='store_true',
                    help='compile every case with no flags of its own (no --input-shape, --sequence-length, '
                         '--input-value or --freeze-input from its data): kilnc gets only the model, and '
                         'every input is given at run time as the case gives it')
    ap.add_argument('--format-steps', type=int, default=1,
                    help='float16/bfloat16 outputs may be this many steps of their format apart (default 1; '
                         '2 for the onnx 1.23 suite)')
    ap.add_argument('--update-expected', action='store_true',
                    help='rewrite --expected with the passing cases (cases outside the '
                         'selected suites/--filter keep their entries)')
    args = ap.parse_args(argv)
    global FORMAT_STEPS
    FORMAT_STEPS = max(1, args.format_steps)

    data = os.environ.get(ENV_DATA) or args.data
    source = ('$%s' % ENV_DATA) if os.environ.get(ENV_DATA) else '--data'
    if not data:
        print('run_conformance: error: no data folder: pass --data or set $%s' % ENV_DATA,
              file=sys.stderr)
        return 2
    data = os.path.abspath(data)
    if not os.path.isdir(data):
        print('run_conformance: error: ONNX conformance data not found at %s (from %s).\n'
              '  It is expected next to the repository, in ../shared/onnx-conformance;\n'
              '  set %s=/path/to/onnx-conformance to use another copy.'
              % (data, source, ENV_DATA), file=sys.stderr)
        return 2
    suites = [s.strip() for s in args.suites.split(',') if s.strip()]
    for s in suites:
        if not os.path.isdir(os.path.join(data, s)):
            print('run_conformance: error: suite folder %s missing' % os.path.join(data, s),
                  file=sys.stderr)
            return 2
    if args.save_bundles and args.load_bundles:
        print('run_conformance: error: --save-bundles and --load-bundles exclude each other',
              file=sys.stderr)
        return 2
    if not args.kilnc and not args.load_bundles:
        print('run_conformance: error: --kilnc is needed (unless --load-bundles)', file=sys.stderr)
        return 2
    if args.load_bundles and not os.path.isdir(args.load_bundles):
        print('run_conformance: error: --load-bundles folder %s not found' % args.load_bundles,
              file=sys.stderr)
        return 2
    for tool in ([args.kilnc] if args.kilnc else []) + [args.kiln]:
        if not (os.path.isfile(tool) and os.access(tool, os.X_OK)):
            print('run_conformance: error: %s is not an executable (build first)' % tool,
                  file=sys.stderr)
            return 2
    if args.jobs < 1:
        print('run_conformance: error: --jobs must be >= 1', file=sys.stderr)
        return 2
    rx = re.compile(args.filter) if args.filter else None

    expected: List[str] = []
    if args.expected and not args.update_expected:
        if not os.path.isfile(args.expected):
            print('run_conformance: error: expected-pass list %s not found (create it with '
                  '--update-expected)' % args.expected, file=sys.stderr)
            return 2
        expected = read_expected(args.expected)
    elif args.expected and os.path.isfile(args.expected):
        expected = read_expected(args.expected)
    if args.update_expected and not args.expected:
        print('run_conformance: error: --update-expected needs --expected', file=sys.stderr)
        return 2

    # Cases.
    cases = []
    for s in suites:
        for c in sorted(os.listdir(os.path.join(data, s))):
            d = os.path.join(data, s, c)
            if not os.path.isfile(os.path.join(d, 'model.onnx')):
                continue
            if rx and not rx.search('%s/%s' % (s, c)):
                continue
            cases.append((s, c, d))
    if not cases:
        print('run_conformance: error: no cases selected', file=sys.stderr)
        return 2

    # Fresh work folder (nothing is cached across runs).
    workdir = os.path.abspath(args.workdir)
    if os.path.isdir(workdir) and os.listdir(workdir) and \
            not os.path.isfile(os.path.join(workdir, WORKDIR_MARKER)):
        print('run_conformance: error: %s is not empty and not a conformance work folder; '
              'refusing to clear it' % workdir, file=sys.stderr)
        return 2
    if os.path.isdir(workdir):
        shutil.rmtree(workdir)
    os.makedirs(workdir)
    open(os.path.join(workdir, WORKDIR_MARKER), 'w').close()

    print('kiln conformance: %d cases from %s (%s), %d jobs' % (len(cases), data,
                                                              ','.join(suites), args.jobs),
          flush=True)
    t0 = time.monotonic()
    def store(s: str, c: str) -> Optional[Tuple[str, str]]:
        if args.save_bundles:
            return ('save', os.path.join(os.path.abspath(args.save_bundles), s, c))
        if args.load_bundles:
            return ('load', os.path.join(os.path.abspath(args.load_bundles), s, c))
        return None
    kilnc_path = os.path.abspath(args.kilnc) if args.kilnc else '(--load-bundles)'
    tasks = [(s, c, d, os.path.join(workdir, s, c), kilnc_path,
              os.path.abspath(args.kiln), args.timeout, args.target, store(s, c), not args.no_case_flags)
             for s, c, d in cases]
    results = []
    progress = collections.Counter()
    with concurrent.futures.ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(run_case, t) for t in tasks]
        for fut in concurrent.futures.as_completed(futures):
            r = fut.result()
            results.append(r)
            progress[r[2]] += 1
            if len(results) % 100 == 0 or len(results) == len(tasks):
                print('[%4d/%d] %5.1f s  pass %d, unsupported %d, fail %d, bug %d' % (
                    len(results), len(tasks), time.monotonic() - t0, progress['pass'],
                    progress['unsupported'], progress['fail'], progress['bug']), flush=True)
    elapsed = time.monotonic() - t0
    results.sort()

    by_name = {'%s/%s' % (r[0], r[1]): r for r in results}
    selected = set(by_name)
    passing = sorted(n for n, r in by_name.items() if r[2] == 'pass')

    # Expected cases within the selection (suite selected, --filter matches).
    def in_scope(name: str) -> bool:
        suite = name.split('/', 1)[0]
        return suite in suites and (rx is None or bool(rx.search(name)))

    regressions = []  # (name, status, reason)
    if not args.update_expected:
        for name in expected:
            if not in_scope(name):
                continue
            r = by_name.get(name)
            if r is None:
                regressions.append((name, 'missing', 'case not found in the conformance data'))
            elif r[2] != 'pass':
                regressions.append((name, r[2], r[3] or '(no reason)'))
    expected_set = set(expected)
    new_passes = [n for n in passing if n not in expected_set] if args.expected else []

    header = collections.OrderedDict([
        ('data', data), ('kilnc', kilnc_path),
        ('kiln', os.path.abspath(args.kiln)), ('suites', ', '.join(suites)),
        ('filter', args.filter or '(none)'), ('cases', str(len(results))),
        ('jobs', str(args.jobs)), ('wall time', '%.1f s' % elapsed),
        ('tolerance', 'floating rtol=%g atol=%g; integers and booleans exact' % (RTOL, ATOL)),
    ])
    write_report(args.report, results, suites, header, regressions,
                 [] if args.update_expected else new_passes)

    print('')
    print('\n'.join(summarize(results, suites)))
    print('')
    print('wall time %.1f s; report: %s' % (elapsed, os.path.abspath(args.report)))
    bugs = [r for r in results if r[2] == 'bug']
    if bugs:
        print('%d bug(s) (kilnc internal error, signal or timeout):' % len(bugs))
        for s, c, st, reason, _t in bugs:
            print('  BUG %s/%s: %s' % (s, c, reason))

    if args.update_expected:
        keep = [n for n in expected if not in_scope(n)]
        write_expected(args.expected, keep + passing, args.target)
        print('wrote %s: %d passing cases (%d new, %d dropped)' % (
            args.expected, len(set(keep + passing)),
            len([n for n in passing if n not in expected_set]),
            len([n for n in expected if in_scope(n) and n not in set(passing)])))
        return 0

    if new_passes:
        print('%d new passes: run with --update-expected' % len(new_passes))
        for n in new_passes:
            print('  NEW PASS %s' % n)
    if regressions:
        print('')
        print('=' * 78)
        print('REGRESSION: %d case(s) in %s no longer pass:' % (len(regressions), args.expected))
        for name, st, reason in regressions:
            print('  REGRESSION %s [%s]: %s' % (name, st, reason))
        print('=' * 78)
        return 1
    if args.expected:
        print('OK: all %d expected cases in scope pass' %
              len([n for n in expected if in_scope(n)]))
    return 0


if __name__ == '__main__':
    sys.exit(main())
