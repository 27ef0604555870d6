#!/usr/bin/python3
"""Kiln end-to-end tests: PyTorch model -> ONNX -> kilnc -> kiln run, checked against ONNX Runtime.

Run with Debian's /usr/bin/python3 (it has python3-torch, -torchvision, -onnx, -numpy).

  kiln_e2e.py model --name NAME --kilnc PATH --kiln PATH --ort-dir tests/ort --workdir DIR
                    [--rtol R] [--atol A] [--node PATH] [--device cpu|vulkan]
      Export NAME (see models.py), compile it with kilnc, run it with `kiln run`,
      run it with ONNX Runtime (tests/ort/ort_run.js), compare every output.
      --device vulkan compiles with --target=vulkan and runs with --device vulkan
      --validation (any message of the Vulkan validation layer fails the test);
      tolerances are then at least rtol 1e-3, atol 1e-4.
  kiln_e2e.py onnx --model M.onnx --input NAME=FILE.npy ... --kilnc PATH --kiln PATH --ort-dir tests/ort
                   --workdir DIR [--rtol R] [--atol A] [--node PATH]
      Compile and run an existing ONNX model (e.g. the demo) and compare with ONNX Runtime.
  kiln_e2e.py reference --name NAME|all --ort-dir tests/ort --workdir DIR [--node PATH]
      Harness self-check without Kiln: ONNX Runtime vs. PyTorch itself, the
      .npy round trip of ort_run.js, and the operator coverage of the models.
  kiln_e2e.py unsupported --kilnc PATH --workdir DIR
      kilnc must reject a model with an unsupported operator: exit 1 and a
      message naming the operator type and the node; `kilnc --list-operators`
      must list every operator the e2e models use, and not that one.
  kiln_e2e.py int8 --name NAME --variant V[,V...] --kilnc PATH --kiln PATH --venv DIR
                   --requirements tests/e2e/requirements-int8.txt --workdir DIR
                   [--min-within F] [--max-steps S] [--top1-inputs N]
      Quantized models: exports NAME, quantizes it with ONNX Runtime's quantizer
      (quantize_models.py; V: qdq_pc, qdq_pt, qop_pc, dyn) in a venv DIR with the
      pinned packages of --requirements (made on first use), compiles it with
      kilnc, runs it with `kiln run` and compares it with ONNX Runtime's Python
      package in quantization steps (see compare_steps()): at least F (0.999) of
      the elements within 1 step and none beyond S (4) steps, judged over the
      outputs of N (100) seeded inputs (a single-output model; the fixed input's
      comparison is reported beside it) or on the fixed input (N = 0, or several
      outputs). Reports, without checking, the top-1 agreement of kiln's int8
      model with ONNX Runtime's float32 model on those N inputs.
  kiln_e2e.py list
      The models and the ONNX operators each one must export.

Exit status: 0 when everything passed, 1 on a mismatch or any tool failure,
2 on a usage or set-up error.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from typing import Dict, List, Optional, Sequence

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

import models  # noqa: E402

SETUP_HINT = "run 'tools/setup.sh --with-tests' (or 'npm ci --ignore-scripts' in tests/ort)"


class SetupError(Exception):
    pass


def log(msg: str = '') -> None:
    print(msg, flush=True)


def sanitize(name: str) -> str:
    return name.replace('/', '_')


# ---------------------------------------------------------------------------
# Running tools.

def run_tool(label: str, cmd: Sequence[str], timeout: float, cwd: Optional[str] = None):
    """Runs a command, prints its command line, stdout and stderr; returns CompletedProcess
    (returncode None on timeout)."""
    log('$ ' + ' '.join(cmd))
    start = time.monotonic()
    try:
        proc = subprocess.run(list(cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=timeout, cwd=cwd)
    except subprocess.TimeoutExpired as e:
        log('%s: TIMEOUT after %.0f s' % (label, timeout))
        _show('stdout', e.stdout)
        _show('stderr', e.stderr)
        return subprocess.CompletedProcess(cmd, None, e.stdout or b'', e.stderr or b'')
    except OSError as e:
        log('%s: cannot run %s: %s' % (label, cmd[0], e))
        return subprocess.CompletedProcess(cmd, None, b'', str(e).encode())
    elapsed = time.monotonic() - start
    _show('stdout', proc.stdout)
    _show('stderr', proc.stderr)
    status = ('killed by signal %d' % -proc.returncode) if proc.returncode < 0 else 'exit %d' % proc.returncode
    log('%s: %s (%.2f s)' % (label, status, elapsed))
    return proc


def _show(what: str, data) -> None:
    if not data:
        return
    text = data.decode('utf-8', 'replace') if isinstance(data, bytes) else data
    lines = text.rstrip('\n').split('\n')
    if len(lines) > 60:
        lines = lines[:20] + ['... (%d lines omitted)' % (len(lines) - 40)] + lines[-20:]
    for line in lines:
        log('  [%s] %s' % (what, line))


def find_node(explicit: Optional[str]) -> str:
    node = explicit or shutil.which('node')
    if not node or not os.path.exists(node):
        raise SetupError('Node.js (node) not found; it runs the ONNX Runtime reference: ' + SETUP_HINT)
    return node


def check_ort_dir(ort_dir: str) -> str:
    script = os.path.join(ort_dir, 'ort_run.js')
    if not os.path.isfile(script):
        raise SetupError('%s not found (bad --ort-dir?)' % script)
    pkg = os.path.join(ort_dir, 'node_modules', 'onnxruntime-node', 'package.json')
    if not os.path.isfile(pkg):
        raise SetupError('ONNX Runtime reference is not installed (%s missing): %s'
                         % (os.path.join(ort_dir, 'node_modules', 'onnxruntime-node'), SETUP_HINT))
    return script


def check_exe(path: Optional[str], what: str) -> str:
    if not path:
        raise SetupError('--%s is required' % what)
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise SetupError('%s not found or not executable: %s (build it: ninja -C build)' % (what, path))
    return os.path.abspath(path)


def run_ort(node: str, ort_script: str, onnx_path: str, out_dir: str, inputs: Dict[str, str]) -> bool:
    os.makedirs(out_dir, exist_ok=True)
    cmd = [node, ort_script, onnx_path, out_dir] + ['%s=%s' % kv for kv in inputs.items()]
    proc = run_tool('onnxruntime', cmd, timeout=600)
    return proc.returncode == 0


# ---------------------------------------------------------------------------
# Comparison.

def check_shape_dtype(label: str, got: np.ndarray, ref: np.ndarray) -> Optional[bool]:
    """The checks before comparing values, shared by compare() and compare_steps(): False (and a
    FAIL line) on a shape or dtype mismatch, True (and a PASS line) for matching empty outputs,
    None when the values are to be compared."""
    if got.shape != ref.shape:
        log('%s: FAIL shape %s, expected %s' % (label, list(got.shape), list(ref.shape)))
        return False
    if got.dtype != ref.dtype:
        log('%s: FAIL dtype %s, expected %s' % (label, got.dtype, ref.dtype))
        return False
    if got.size == 0:
        log('%s: PASS (empty)' % label)
        return True
    return None


def compare(label: str, got: np.ndarray, ref: np.ndarray, rtol: float, atol: float) -> bool:
    """Compares one output; prints errors and PASS/FAIL; returns True on a match."""
    settled = check_shape_dtype(label, got, ref)
    if settled is not None:
        return settled
    if not np.issubdtype(ref.dtype, np.floating):
        diff = got != ref
        ok = not diff.any()
        if ok:
            log('%s: %s %s exact match  PASS' % (label, ref.dtype, list(ref.shape)))
        else:
            idx = np.unravel_index(int(np.argmax(diff)), ref.shape)
            log('%s: %d of %d elements differ; first at %s: got %s, expected %s  FAIL'
                % (label, int(diff.sum()), ref.size, tuple(int(i) for i in idx), got[idx], ref[idx]))
        return ok
    g = got.astype(np.float64)
    r = ref.astype(np.float64)
    ref_max = float(np.nanmax(np.abs(r))) if not np.isnan(r).all() else 0.0
    if ref_max < 100 * atol:
        log('%s: FAIL: the reference output is too small (max |ref| = %.3g) for atol=%g to make the '
            'comparison meaningful; change the model or its input' % (label, ref_max, atol))
        return False
    nan_mismatch = np.isnan(g) != np.isnan(r)
    both_nan = np.isnan(g) & np.isnan(r)
    abs_err = np.where(both_nan, 0.0, np.abs(g - r))
    abs_err = np.where(nan_mismatch, np.inf, abs_err)
    rel_err = abs_err / np.maximum(np.abs(r), np.finfo(np.float32).tiny)
    excess = abs_err - (atol + rtol * np.abs(r))
    worst = np.unravel_index(int(np.nanargmax(np.where(np.isnan(excess), -np.inf, excess))), ref.shape)
    ok = bool(np.allclose(got, ref, rtol=rtol, atol=atol, equal_nan=True))
    bad = int(np.count_nonzero(~np.isclose(got, ref, rtol=rtol, atol=atol, equal_nan=True)))
    log('%s: %s %s max_abs_err=%.3g max_rel_err=%.3g worst at %s: got %.8g, expected %.8g '
        '(|ref| max %.3g; %d/%d outside rtol=%g atol=%g)  %s'
        % (label, ref.dtype, list(ref.shape), float(abs_err.max()), float(rel_err.max()),
           tuple(int(i) for i in worst), float(g[worst]), float(r[worst]), float(np.abs(r).max()),
           bad, ref.size, rtol, atol, 'PASS' if ok else 'FAIL'))
    return ok


def compare_dirs(got_dir: str, ref_dir: str, names: Sequence[str], rtol: float, atol: float,
                 got_label: str) -> bool:
    ok = True
    for name in names:
        fname = sanitize(name) + '.npy'
        ref_path = os.path.join(ref_dir, fname)
        got_path = os.path.join(got_dir, fname)
        if not os.path.isfile(ref_path):
            log("output '%s': FAIL: reference %s missing" % (name, ref_path))
            ok = False
            continue
        if not os.path.isfile(got_path):
            log("output '%s': FAIL: %s did not write %s" % (name, got_label, got_path))
            ok = False
            continue
        try:
            got = np.load(got_path, allow_pickle=False)
        except Exception as e:  # noqa: BLE001
            log("output '%s': FAIL: cannot read %s: %s" % (name, got_path, e))
            ok = False
            continue
        ref = np.load(ref_path, allow_pickle=False)
        ok &= compare("output '%s'" % name, got, ref, rtol, atol)
    return ok


# ---------------------------------------------------------------------------
# Commands.

def prepare(name: str, workdir: str):
    """Exports model `name` into workdir and checks its operators. Returns (spec, paths, module, ok)."""
    spec = models.MODELS[name]
    os.makedirs(workdir, exist_ok=True)
    onnx_path = os.path.join(workdir, name + '.onnx')
    input_path = os.path.join(workdir, 'input.npy')
    log('== %s: %s, input %s' % (name, spec.description or 'model', list(spec.input_shape)))
    t0 = time.monotonic()
    model, module = models.export_model(spec, onnx_path)
    ops = models.op_types(model)
    counts: Dict[str, int] = {}
    for op in ops:
        counts[op] = counts.get(op, 0) + 1
    log('exported %s (%.1f s, %d bytes): %d nodes: %s'
        % (onnx_path, time.monotonic() - t0, os.path.getsize(onnx_path), len(ops),
           ', '.join('%s x%d' % kv for kv in sorted(counts.items()))))
    problems = models.check_ops(spec, model)
    for p in problems:
        log('op coverage: FAIL: ' + p)
    x = models.make_input(spec)
    np.save(input_path, x)
    return spec, onnx_path, input_path, module, not problems


# Extra arguments of kilnc and `kiln run` per device.
DEVICE_ARGS = {
    'cpu': ([], []),
    # The same CPU code path for an AVX2 machine (8-lane blocks, 16 vector
    # registers), run on this x86-64 host; skipped where the host lacks AVX2.
    'cpu-avx2': (['--target=llvm -mtriple=x86_64-linux-gnu -mcpu=haswell'], []),
    'vulkan': (['--target=vulkan'], ['--device', 'vulkan', '--validation']),
    # A Vulkan device without shaderFloat64: float64 kernels run on the host
    # CPU in the same bundle (heterogeneous bundles, docs/vulkan.md).
    'vulkan-hetero': (['--target=vulkan', '--vulkan-features=int64'], ['--device', 'vulkan', '--validation']),
    # GPU schedules with workgroup shared memory (kilnc --vulkan-shared-memory=on; off by default).
    'vulkan-shared': (['--target=vulkan', '--vulkan-shared-memory=on'], ['--device', 'vulkan', '--validation']),
    'vulkan-hetero-shared': (['--target=vulkan', '--vulkan-features=int64', '--vulkan-shared-memory=on'],
                             ['--device', 'vulkan', '--validation']),
}
VULKAN_MIN_RTOL, VULKAN_MIN_ATOL = 1e-3, 1e-4


def device_tolerances(device: str, rtol: float, atol: float):
    if device.startswith('vulkan'):
        return max(rtol, VULKAN_MIN_RTOL), max(atol, VULKAN_MIN_ATOL)
    return rtol, atol


def compile_run_compare(kilnc: str, kiln: str, node: str, ort_script: str, onnx_path: str,
                        inputs: Dict[str, str], output_names: Sequence[str], workdir: str,
                        rtol: float, atol: float, check_bundle=None, device: str = 'cpu',
                        kilnc_extra: Sequence[str] = ()) -> bool:
    """kilnc -> kiln run -> ONNX Runtime -> compare. Returns True when every output matches.
    check_bundle(inspect_json, kilnc_report): extra assertions on the bundle (kilnc runs with --report)."""
    stem = os.path.splitext(os.path.basename(onnx_path))[0]
    bundle = os.path.join(workdir, stem + '.kiln')
    kilnc_args, run_args = DEVICE_ARGS[device]
    proc = run_tool('kilnc', [kilnc, onnx_path, '-o', bundle] + kilnc_args + list(kilnc_extra) +
                    (['--report'] if check_bundle else []), timeout=900)
    if proc.returncode != 0:
        log('FAIL: kilnc failed')
        return False
    if not os.path.isfile(bundle):
        log('FAIL: kilnc exited 0 but wrote no %s' % bundle)
        return False
    log('bundle: %s (%d bytes)' % (bundle, os.path.getsize(bundle)))
    bundle_ok = True
    if check_bundle is not None:
        import json
        report = proc.stderr.decode('utf-8', 'replace')
        insp = run_tool('kiln inspect', [kiln, 'inspect', '--json', bundle], timeout=120)
        try:
            if insp.returncode != 0:
                raise AssertionError('kiln inspect failed')
            check_bundle(json.loads(insp.stdout.decode('utf-8')), report)
            log('bundle checks: ok')
        except AssertionError as e:
            log('FAIL: bundle check: %s' % e)
            bundle_ok = False

    return run_compare(kiln, node, ort_script, onnx_path, bundle, inputs, output_names, workdir, rtol, atol,
                       run_args) and bundle_ok


def run_compare(kiln: str, node: str, ort_script: str, onnx_path: str, bundle: str, inputs: Dict[str, str],
                output_names: Sequence[str], workdir: str, rtol: float, atol: float, run_args: Sequence[str] = ()) -> bool:
    """kiln run `bundle` on `inputs` -> ONNX Runtime on the model -> compare, in `workdir`."""
    kiln_out = os.path.join(workdir, 'kiln_out')
    os.makedirs(kiln_out, exist_ok=True)
    cmd = [kiln, 'run', bundle]
    for name, path in inputs.items():
        cmd += ['--input', '%s=%s' % (name, path)]
    proc = run_tool('kiln run', cmd + list(run_args) + ['--output-dir', kiln_out], timeout=600)
    if proc.returncode != 0:
        log('FAIL: kiln run failed')
        return False

    ort_out = os.path.join(workdir, 'ort_out')
    if not run_ort(node, ort_script, onnx_path, ort_out, inputs):
        log('FAIL: the ONNX Runtime reference failed')
        return False

    ok = True
    extra = sorted(set(os.listdir(kiln_out)) - {sanitize(n) + '.npy' for n in output_names})
    if extra:
        log('FAIL: kiln run wrote unexpected files: %s' % extra)
        ok = False
    ok &= compare_dirs(kiln_out, ort_out, output_names, rtol, atol, 'kiln run')
    return ok


def fresh_dir(path: str) -> str:
    path = os.path.abspath(path)
    if os.path.isdir(path):
        shutil.rmtree(path)
    os.makedirs(path)
    return path


def script_args(description: str, extra=None):
    """The arguments of the e2e scripts that make their own models (contrib_ops.py,
    classic_models.py, if_models.py): --kilnc --kiln --ort-dir --workdir [--node], and
    `extra(parser)` adds a script's own."""
    ap = argparse.ArgumentParser(description=description)
    for name in ('--kilnc', '--kiln', '--ort-dir', '--workdir'):
        ap.add_argument(name, required=True)
    ap.add_argument('--node', default=None)
    if extra:
        extra(ap)
    return ap.parse_args()


def case_script_args(description: str, cases, extra=None):
    """script_args plus --only CASE,... for the scripts made of named cases (ort_contrib_ops.py,
    exporter_classes.py): the tools checked, the node, the ORT runner (args.node_exe,
    args.ort_script), a fresh workdir; returns (args, the case names to run)."""
    def more(ap):
        ap.add_argument('--only', default='', help='comma-separated case names (default: all)')
        if extra:
            extra(ap)
    args = script_args(description, more)
    args.kilnc = check_exe(args.kilnc, 'kilnc')
    args.kiln = check_exe(args.kiln, 'kiln')
    args.node_exe = find_node(args.node)
    args.ort_script = check_ort_dir(args.ort_dir)
    args.workdir = fresh_dir(args.workdir)
    names = [n for n in args.only.split(',') if n] or list(cases)
    unknown = [n for n in names if n not in cases]
    if unknown:
        raise SetupError('unknown case(s) %s; known: %s' % (', '.join(unknown), ', '.join(cases)))
    return args, names


def run_script(main) -> None:
    """Exits with MAIN()'s status; a SetupError (a missing package or tool) fails with its message."""
    try:
        sys.exit(main())
    except SetupError as e:
        log('FAIL: %s' % e)
        sys.exit(1)


def check_against_ort(args, model: str, workdir: str, feeds: List[str], rtol: float, atol: float) -> bool:
    """`kiln_e2e.py onnx` on one model (feeds: NAME=FILE.npy) with a script's arguments."""
    argv = ['onnx', '--model', model, '--kilnc', args.kilnc, '--kiln', args.kiln, '--ort-dir', args.ort_dir,
            '--workdir', workdir, '--rtol', repr(rtol), '--atol', repr(atol)]
    for f in feeds:
        argv += ['--input', f]
    if args.node:
        argv += ['--node', args.node]
    return main(argv) == 0


def check_dynamic_against_ort(args, model: str, workdir: str, kilnc_args: Sequence[str],
                              feed_sets: Sequence[Dict[str, str]], rtol: float, atol: float,
                              check_kilnc=None) -> bool:
    """One bundle for many input shapes (dimension ranges in `kilnc_args`, e.g. --input-shape
    x=1,3,32..1280,32..1280): compiled once, then each feed set (input name -> .npy) run by kiln
    and ONNX Runtime and compared, in workdir/<set index>. check_kilnc(stderr text) may assert on
    what kilnc printed (its warnings)."""
    import onnx

    kilnc = check_exe(args.kilnc, 'kilnc')
    kiln = check_exe(args.kiln, 'kiln')
    node = find_node(args.node)
    ort_script = check_ort_dir(args.ort_dir)
    workdir = fresh_dir(workdir)
    bundle = os.path.join(workdir, os.path.splitext(os.path.basename(model))[0] + '.kiln')
    proc = run_tool('kilnc', [kilnc, model, '-o', bundle] + list(kilnc_args), timeout=900)
    if proc.returncode != 0 or not os.path.isfile(bundle):
        log('FAIL: kilnc failed')
        return False
    if check_kilnc is not None:
        try:
            check_kilnc(proc.stderr.decode('utf-8', 'replace'))
        except AssertionError as e:
            log('FAIL: %s' % e)
            return False
    log('bundle: %s (%d bytes), for every shape below' % (bundle, os.path.getsize(bundle)))
    names = [o.name for o in onnx.load(model, load_external_data=False).graph.output]
    ok = True
    for k, feeds in enumerate(feed_sets):
        one = run_compare(kiln, node, ort_script, model, bundle, feeds, names, fresh_dir(os.path.join(workdir, str(k))),
                          rtol, atol)
        log('shapes %s: %s' % (', '.join('%s %s' % (n, 'x'.join(str(d) for d in shape_of_npy(p)))
                                        for n, p in feeds.items()), 'PASS' if one else 'FAIL'))
        ok &= one
    return ok


def shape_of_npy(path: str):
    import numpy as np
    return np.load(path, mmap_mode='r').shape


def host_has_avx2() -> bool:
    try:
        with open('/proc/cpuinfo') as f:
            return any(line.startswith('flags') and ' avx2' in line for line in f)
    except OSError:
        return False


def cmd_model(args) -> int:
    if args.device == 'cpu-avx2' and not host_has_avx2():
        log('SKIP: this host cannot run AVX2 code')
        return 77
    if args.name not in models.MODELS:
        raise SetupError('unknown model %r (known: %s)' % (args.name, ', '.join(models.MODELS)))
    kilnc = check_exe(args.kilnc, 'kilnc')
    kiln = check_exe(args.kiln, 'kiln')
    node = find_node(args.node)
    ort_script = check_ort_dir(args.ort_dir)
    workdir = fresh_dir(args.workdir)
    spec, onnx_path, input_path, _module, ok = prepare(args.name, workdir)
    rtol, atol = device_tolerances(args.device, spec.rtol, spec.atol)
    rtol = args.rtol if args.rtol is not None else rtol
    atol = args.atol if args.atol is not None else atol
    # The bundle checks are budgets for one device (CPU by default: dispatch counts, arena sizes).
    check = spec.check_bundle if args.device == spec.check_device else None
    ok &= compile_run_compare(kilnc, kiln, node, ort_script, onnx_path, {models.INPUT_NAME: input_path},
                              spec.names_of_outputs(), workdir, rtol, atol, check_bundle=check, device=args.device)
    log('%s: %s' % (args.name, 'PASS' if ok else 'FAIL'))
    return 0 if ok else 1


def cmd_onnx(args) -> int:
    import onnx

    kilnc = check_exe(args.kilnc, 'kilnc')
    kiln = check_exe(args.kiln, 'kiln')
    node = find_node(args.node)
    ort_script = check_ort_dir(args.ort_dir)
    if not os.path.isfile(args.model):
        raise SetupError('model not found: %s' % args.model)
    inputs = {}
    for spec in args.input:
        name, sep, path = spec.partition('=')
        if not sep or not name:
            raise SetupError('bad --input %r (expected NAME=FILE.npy)' % spec)
        if not os.path.isfile(path):
            raise SetupError('input file not found: %s' % path)
        inputs[name] = os.path.abspath(path)
    workdir = fresh_dir(args.workdir)
    model = onnx.load(args.model)
    names = [o.name for o in model.graph.output]
    log('== %s: inputs %s, outputs %s' % (args.model, list(inputs), names))
    rtol, atol = device_tolerances(args.device, 1e-4, 1e-5)
    # An input the model declares with dynamic dimensions gets the shape of its .npy (--input-shape).
    import numpy as np
    shapes = []
    for vi in model.graph.input:
        dims = vi.type.tensor_type.shape.dim
        if vi.name in inputs and any(not d.HasField('dim_value') for d in dims):
            shape = np.load(inputs[vi.name], mmap_mode='r').shape
            shapes += ['--input-shape', '%s=%s' % (vi.name, ','.join(str(d) for d in shape))]
    ok = compile_run_compare(kilnc, kiln, node, ort_script, os.path.abspath(args.model), inputs, names, workdir,
                             args.rtol if args.rtol is not None else rtol,
                             args.atol if args.atol is not None else atol, device=args.device, kilnc_extra=shapes)
    log('%s: %s' % (args.model, 'PASS' if ok else 'FAIL'))
    return 0 if ok else 1


NPY_ROUNDTRIP_JS = """
const m = require(process.argv[1]);
for (const [src, dst] of JSON.parse(process.argv[2])) {
  const t = m.readNpy(src);
  m.writeNpy(dst, t.type, t.dims, t.data);
}
"""


def npy_roundtrip_check(node: str, ort_script: str, workdir: str) -> bool:
    """ort_run.js's .npy reader and writer must round-trip every dtype and shape exactly."""
    rng = np.random.default_rng(7)
    arrays = {
        'f32': rng.standard_normal((2, 3, 4)).astype(np.float32),
        'f64': rng.standard_normal((5,)).astype(np.float64),
        'i64': rng.integers(-2 ** 62, 2 ** 62, size=(3, 2), dtype=np.int64),
        'i32': rng.integers(-2 ** 31, 2 ** 31 - 1, size=(1, 7), dtype=np.int32),
        'i8': rng.integers(-128, 127, size=(4, 1, 2), dtype=np.int8),
        'u8': rng.integers(0, 255, size=(9,), dtype=np.uint8),
        'bool': rng.integers(0, 2, size=(2, 2)).astype(np.bool_),
        'scalar': np.array(3.5, dtype=np.float32),
        'empty': np.zeros((0, 3), dtype=np.float32),
        'big_header': np.zeros((1,) * 30, dtype=np.float32),
    }
    os.makedirs(workdir, exist_ok=True)
    pairs = []
    for name, arr in arrays.items():
        src = os.path.join(workdir, name + '.in.npy')
        np.save(src, arr)
        pairs.append((src, os.path.join(workdir, name + '.out.npy')))
    import json
    proc = run_tool('npy round trip', [node, '-e', NPY_ROUNDTRIP_JS, os.path.abspath(ort_script),
                                       json.dumps(pairs)], timeout=60)
    if proc.returncode != 0:
        log('npy round trip: FAIL')
        return False
    ok = True
    for (name, arr), (_src, dst) in zip(arrays.items(), pairs):
        back = np.load(dst, allow_pickle=False)
        if back.dtype != arr.dtype or back.shape != arr.shape or not np.array_equal(back, arr):
            log('npy round trip %s: FAIL: %s %s -> %s %s' % (name, arr.dtype, arr.shape, back.dtype, back.shape))
            ok = False
    log('npy round trip of %d arrays: %s' % (len(arrays), 'PASS' if ok else 'FAIL'))
    return ok


def cmd_reference(args) -> int:
    node = find_node(args.node)
    ort_script = check_ort_dir(args.ort_dir)
    names = list(models.MODELS) if args.name == 'all' else args.name.split(',')
    for n in names:
        if n not in models.MODELS:
            raise SetupError('unknown model %r (known: %s)' % (n, ', '.join(models.MODELS)))
    uncovered = models.all_ops_covered()
    ok = npy_roundtrip_check(node, ort_script, os.path.abspath(os.path.join(args.workdir, 'npy')))
    if uncovered:
        log('op coverage: FAIL: no model covers %s' % uncovered)
        ok = False
    for name in names:
        workdir = os.path.abspath(os.path.join(args.workdir, name))
        if os.path.isdir(workdir):
            shutil.rmtree(workdir)
        spec, onnx_path, input_path, module, model_ok = prepare(name, workdir)
        if module is None:  # a hand-built ONNX model: no PyTorch reference to compare with
            log('%s: hand-built ONNX, no PyTorch reference (ops: %s)' % (name, 'PASS' if model_ok else 'FAIL'))
            ok &= model_ok
            continue
        x = np.load(input_path)
        torch_out = os.path.join(workdir, 'torch_out')
        os.makedirs(torch_out)
        for oname, arr in zip(spec.names_of_outputs(), models.torch_reference(module, x)):
            np.save(os.path.join(torch_out, sanitize(oname) + '.npy'), arr)
        ort_out = os.path.join(workdir, 'ort_out')
        if not run_ort(node, ort_script, onnx_path, ort_out, {models.INPUT_NAME: input_path}):
            log('FAIL: the ONNX Runtime reference failed')
            ok = False
            continue
        rtol = args.rtol if args.rtol is not None else spec.rtol
        atol = args.atol if args.atol is not None else spec.atol
        model_ok &= compare_dirs(ort_out, torch_out, spec.names_of_outputs(), rtol, atol, 'onnxruntime')
        log('%s (onnxruntime vs torch): %s' % (name, 'PASS' if model_ok else 'FAIL'))
        ok &= model_ok
    return 0 if ok else 1


def cmd_unsupported(args) -> int:
    import onnx

    kilnc = check_exe(args.kilnc, 'kilnc')
    workdir = os.path.abspath(args.workdir)
    if os.path.isdir(workdir):
        shutil.rmtree(workdir)
    os.makedirs(workdir)
    spec = models.UNSUPPORTED_MODEL
    onnx_path = os.path.join(workdir, 'unsupported.onnx')
    model, _ = models.export_model(spec, onnx_path)
    problems = models.check_ops(spec, model, allow_unsupported=True)
    if problems:
        for p in problems:
            log('FAIL: ' + p)
        return 1
    # Rename the node so that its name does not contain the operator type: the
    # message must name both.
    nodes = [n for n in model.graph.node if n.op_type == models.UNSUPPORTED_OP]
    node_name = 'my_activation_7'
    nodes[0].name = node_name
    onnx.save(model, onnx_path)
    log('exported %s: %s; expecting kilnc to reject %s node %r'
        % (onnx_path, ', '.join(models.op_types(model)), models.UNSUPPORTED_OP, node_name))
    bundle = os.path.join(workdir, 'unsupported.kiln')
    proc = run_tool('kilnc', [kilnc, onnx_path, '-o', bundle], timeout=300)
    err = proc.stderr.decode('utf-8', 'replace')
    ok = True
    if proc.returncode != 1:
        log('FAIL: kilnc exit status %s, expected 1' % proc.returncode)
        ok = False
    if models.UNSUPPORTED_OP not in err:
        log('FAIL: kilnc\'s stderr does not name the operator type %r' % models.UNSUPPORTED_OP)
        ok = False
    if node_name not in err:
        log('FAIL: kilnc\'s stderr does not name the node %r' % node_name)
        ok = False
    if os.path.exists(bundle) and os.path.getsize(bundle) > 0:
        log('FAIL: kilnc left an output file %s behind' % bundle)
        ok = False
    # kilnc --list-operators (the operator table) names every operator the
    # e2e models compile with, and not the unsupported one.
    listing = run_tool('kilnc', [kilnc, '--list-operators'], timeout=60)
    listed = {line.split()[0] for line in listing.stdout.decode().splitlines() if line.strip()}
    if listing.returncode != 0:
        log('FAIL: kilnc --list-operators exit status %s' % listing.returncode)
        ok = False
    compiled = set()
    for spec_ in models.MODELS.values():
        compiled |= set(spec_.expected_ops)
    missing = sorted(compiled - listed)
    if missing:
        log('FAIL: kilnc --list-operators does not list %s' % ', '.join(missing))
        ok = False
    if models.UNSUPPORTED_OP in listed:
        log('FAIL: kilnc --list-operators lists the unsupported %s' % models.UNSUPPORTED_OP)
        ok = False
    log('unsupported: %s' % ('PASS' if ok else 'FAIL'))
    return 0 if ok else 1


def cmd_list(_args) -> int:
    for name, spec in models.MODELS.items():
        log('%-20s input %-18s ops %s' % (name, list(spec.input_shape), ', '.join(sorted(spec.expected_ops))))
    uncovered = models.all_ops_covered()
    log('supported operators not covered by any model: %s' % (uncovered or 'none'))
    return 0


# ---------------------------------------------------------------------------
# int8: models quantized by ONNX Runtime's quantizer (quantize_models.py).

INT8_VARIANTS = ('qdq_pc', 'qdq_pt', 'qop_pc', 'dyn')
INT8_SETUP_HINT = ('the int8 tests make it themselves with `python3 -m venv --system-site-packages` and '
                   '`pip install --no-deps -r tests/e2e/requirements-int8.txt` (they need PyPI and apt\'s '
                   'python3-venv; run tools/setup.sh --with-tests)')
INT8_SLACK = 1e-6          # absolute slack on top of the step bounds (float rounding of the step itself)
INT8_MIN_RANGE_STEPS = 8   # a reference spanning fewer steps proves nothing
INT8_TOP1_SEED = 99        # the inputs of the top-1 report (quantize_models.random_input)
QUANTIZE_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'quantize_models.py')


INT8_VENV_CHECK = ('import numpy, onnx, onnx.reference, onnxruntime, onnxruntime.quantization; '
                   'from onnxruntime.quantization.shape_inference import quant_pre_process')


def ensure_int8_venv(venv: str, requirements: str) -> str:
    """Makes the venv of the int8 tests unless its stamp says it has these requirements; returns
    its python."""
    return ensure_venv(venv, requirements, INT8_VENV_CHECK, "ONNX Runtime's quantizer")


def ensure_venv(venv: str, requirements: str, check: str, what: str) -> str:
    """Makes a venv (seeing Debian's packages) with REQUIREMENTS (pip --no-deps) unless its stamp
    says it has them, and checks that CHECK (python code importing WHAT) runs in it; returns its
    python. A lock file serializes the tests that meson runs in parallel."""
    import fcntl
    import hashlib

    if not os.path.isfile(requirements):
        raise SetupError('requirements file not found: %s' % requirements)
    venv = os.path.abspath(venv)
    python = os.path.join(venv, 'bin', 'python')
    with open(requirements, 'rb') as f:
        wanted = hashlib.sha256(f.read() + os.path.realpath(sys.executable).encode()).hexdigest()
    stamp = os.path.join(venv, 'kiln-requirements.sha256')
    os.makedirs(os.path.dirname(venv), exist_ok=True)
    with open(venv + '.lock', 'w') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.isfile(stamp) and os.path.isfile(python):
            with open(stamp) as f:
                if f.read().strip() == wanted:
                    log('venv %s: up to date' % venv)
                    return python
        log('making the venv %s (%s)' % (venv, requirements))
        shutil.rmtree(venv, ignore_errors=True)
        proc = run_tool('venv', [sys.executable, '-m', 'venv', '--system-site-packages', venv], timeout=300)
        if proc.returncode != 0:
            raise SetupError('cannot make a venv with %s (apt: python3-venv): %s' % (sys.executable, INT8_SETUP_HINT))
        proc = run_tool('pip', [python, '-m', 'pip', '--disable-pip-version-check', '--no-input', 'install',
                                '--no-deps', '-r', requirements], timeout=900)
        if proc.returncode != 0:
            raise SetupError('cannot install %s into %s (no network to PyPI?): %s'
                             % (requirements, venv, INT8_SETUP_HINT))
        proc = run_tool('venv check', [python, '-c', check], timeout=300)
        if proc.returncode != 0:
            raise SetupError('the venv %s cannot import %s (%s): %s' % (venv, what, check, INT8_SETUP_HINT))
        with open(stamp, 'w') as f:
            f.write(wanted + '\n')
    return python


def step_array(info: dict, ref: np.ndarray):
    """The size of one quantization step for each element of an output (broadcastable to it), and
    a description. info: quantize_models.output_steps()'s entry for the output."""
    if info['kind'] == 'quantized' or not np.issubdtype(ref.dtype, np.floating):
        return np.float64(1.0), 'integer output: 1 step = 1'
    if info['kind'] == 'dq':
        scale = np.asarray(info['scale'], dtype=np.float64)
        if scale.size == 1:
            return np.float64(scale[0]), 'step %.6g: %s' % (scale[0], info['how'])
        shape = [1] * ref.ndim
        shape[info['axis'] % ref.ndim] = scale.size
        return scale.reshape(shape), 'per-axis steps: %s' % info['how']
    r = ref.astype(np.float64)
    step = (float(np.nanmax(r)) - float(np.nanmin(r))) / 255.0
    return np.float64(step), 'step %.6g = reference range / 255 (fallback: %s)' % (step, info['how'])


def step_errors(got: np.ndarray, ref: np.ndarray, step) -> np.ndarray:
    """|got - ref| in steps (NaN against a number: infinite)."""
    g = got.astype(np.float64)
    r = ref.astype(np.float64)
    err = np.abs(g - r)
    err = np.where(np.isnan(g) & np.isnan(r), 0.0, err)
    err = np.where(np.isnan(g) != np.isnan(r), np.inf, err)
    return err / step


def compare_steps(label: str, got: np.ndarray, ref: np.ndarray, info: dict, min_within: float,
                  max_steps: float, baseline: Optional[np.ndarray] = None, baseline_bounds: bool = False) -> bool:
    """Compares one output of a quantized model in units of its quantization step.

    An element is within 1 step when |kiln - ort| <= step + 1e-6. The output
    passes when at least `min_within` of its elements are, and none is more
    than `max_steps` steps (+ 1e-6) off. `baseline`, ONNX Runtime's output for
    the graph as written (no fused integer kernels), is reported alongside: it
    shows how far two exact implementations of one model drift apart. With
    `baseline_bounds`, an output also passes when kiln is at least as close to
    ONNX Runtime's int8 result as that baseline is (as large a share within 1
    step, no larger maximum): an ill-conditioned model (an untrained
    MobileNetV2 amplifies a one-step difference layer after layer) cannot be
    matched closer than ONNX Runtime matches itself (decision 32).
    """
    settled = check_shape_dtype(label, got, ref)
    if settled is not None:
        return settled
    step, how = step_array(info, ref)
    if not np.all(np.asarray(step) > 0):
        log('%s: FAIL: no usable quantization step (%s)' % (label, how))
        return False
    r = ref.astype(np.float64)
    span = float(np.nanmax((np.nanmax(r) - np.nanmin(r)) / step)) if not np.isnan(r).all() else 0.0
    err = step_errors(got, ref, step)
    slack = INT8_SLACK / step
    within = float(np.mean(err <= 1.0 + slack))
    beyond = int(np.count_nonzero(err > max_steps + slack))
    worst = np.unravel_index(int(np.argmax(err)), ref.shape)
    hist = np.bincount(np.minimum(np.round(np.where(np.isfinite(err), err, 1e9)), 9).astype(np.int64).ravel(),
                       minlength=1)
    ok = within >= min_within and beyond == 0
    log('%s: %s %s, %s' % (label, ref.dtype, list(ref.shape), how))
    log('%s: %d/%d = %.2f%% within 1 step (need %.2f%%), max error %.3g steps at %s: got %.8g, expected %.8g; '
        '%d beyond %g steps; |error| in steps rounded: %s'
        % (label, int(np.count_nonzero(err <= 1.0 + slack)), ref.size, 100 * within, 100 * min_within,
           float(err.max()), tuple(int(i) for i in worst), float(got[worst]), float(ref[worst]), beyond, max_steps,
           ', '.join('%s%d: %d' % ('>=' if i == 9 else '', i, c) for i, c in enumerate(hist) if c)))
    if baseline is not None and baseline.shape == ref.shape:
        berr = step_errors(baseline, ref, step)
        bwithin, bmax = float(np.mean(berr <= 1.0 + slack)), float(berr.max())
        log('%s: for scale, ONNX Runtime without graph optimizations (the QDQ graph in float) vs with them: '
            '%.2f%% within 1 step, max %.3g steps' % (label, 100 * bwithin, bmax))
        if baseline_bounds and not ok and within >= bwithin and float(err.max()) <= bmax + slack:
            log('%s: below %.2f%%, but as close to ONNX Runtime int8 as ONNX Runtime itself is: accepted'
                % (label, 100 * min_within))
            ok = True
    if span < INT8_MIN_RANGE_STEPS:
        log('%s: FAIL: the reference spans only %.1f steps; the comparison would prove nothing' % (label, span))
        return False
    log('%s: %s' % (label, 'PASS' if ok else 'FAIL'))
    return ok


def run_venv(label: str, python: str, args: Sequence[str], timeout: float = 900) -> bool:
    proc = run_tool(label, [python, QUANTIZE_SCRIPT] + list(args), timeout=timeout)
    return proc.returncode == 0


def kiln_top1(kiln: str, bundle: str, input_name: str, shape: Sequence[int], count: int, workdir: str):
    """Runs `kiln run` on `count` seeded inputs (quantize_models.random_input) and returns the first
    output of each, stacked, or None on a failure."""
    import quantize_models

    in_path = os.path.join(workdir, 'top1_input.npy')
    out_dir = os.path.join(workdir, 'top1_kiln_out')
    os.makedirs(out_dir, exist_ok=True)
    outs = []
    start = time.monotonic()
    for i in range(count):
        np.save(in_path, quantize_models.random_input(shape, INT8_TOP1_SEED, i))
        for f in os.listdir(out_dir):
            os.remove(os.path.join(out_dir, f))
        cmd = [kiln, 'run', bundle, '--input', '%s=%s' % (input_name, in_path), '--output-dir', out_dir]
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
        if proc.returncode != 0:
            log('$ ' + ' '.join(cmd))
            _show('stderr', proc.stderr)
            log('top-1: kiln run failed on input %d (exit %d)' % (i, proc.returncode))
            return None
        files = sorted(os.listdir(out_dir))
        first = [f for f in files if f == 'output.npy'] or files
        outs.append(np.load(os.path.join(out_dir, first[0]), allow_pickle=False))
    log('top-1: %d runs of kiln run in %.1f s' % (count, time.monotonic() - start))
    return np.stack(outs)


def top1_report(name: str, kiln_out, ort_int8, ort_float) -> None:
    """Prints how often the top-1 class (argmax over the last axis) of the int8 model agrees with the
    float model's. Reported only: an untrained model's classes are not a correctness criterion."""
    def agree(a, b):
        same = int(np.count_nonzero(np.argmax(a, axis=-1) == np.argmax(b, axis=-1)))
        total = int(np.prod(a.shape[:-1]))
        return '%d/%d (%.1f%%)' % (same, total, 100.0 * same / total)

    if kiln_out is not None and kiln_out.shape == ort_float.shape:
        log('%s: top-1 agreement (reported, not checked): kiln int8 vs ORT float32 %s' % (name, agree(kiln_out, ort_float)))
        log('%s: top-1 agreement: kiln int8 vs ORT int8 %s' % (name, agree(kiln_out, ort_int8)))
    log('%s: top-1 agreement: ORT int8 vs ORT float32 %s' % (name, agree(ort_int8, ort_float)))
    classes = np.unique(np.argmax(ort_float, axis=-1))
    log('%s: the float32 model\'s top-1 takes %d distinct classes over these inputs (of %d)'
        % (name, classes.size, ort_float.shape[-1]))


def cmd_int8(args) -> int:
    import json

    if args.name not in models.MODELS:
        raise SetupError('unknown model %r (known: %s)' % (args.name, ', '.join(models.MODELS)))
    variants = [v for v in args.variant.split(',') if v]
    for v in variants:
        if v not in INT8_VARIANTS:
            raise SetupError('unknown variant %r (known: %s)' % (v, ', '.join(INT8_VARIANTS)))
    kilnc = check_exe(args.kilnc, 'kilnc')
    kiln = check_exe(args.kiln, 'kiln')
    python = ensure_int8_venv(args.venv, os.path.abspath(args.requirements))
    workdir = fresh_dir(args.workdir)
    spec, onnx_path, input_path, _module, ok = prepare(args.name, workdir)
    names = spec.names_of_outputs()
    results = {}
    float_top1 = None
    if args.top1_inputs > 0:
        float_top1 = os.path.join(workdir, 'top1_float_out')
        if not run_venv('onnxruntime float32, top-1 inputs', python,
                        ['reference', '--model', onnx_path, '--out-dir', float_top1,
                         '--random', str(args.top1_inputs), '--seed', str(INT8_TOP1_SEED)]):
            log('FAIL: the ONNX Runtime float32 reference failed')
            return 1
    for variant in variants:
        t0 = time.monotonic()
        log('== %s %s' % (args.name, variant))
        vdir = os.path.join(workdir, variant)
        os.makedirs(vdir)
        qpath = os.path.join(vdir, '%s_%s.onnx' % (args.name, variant))
        if not run_venv('quantize', python, ['quantize', '--model', onnx_path, '--variant', variant, '--out', qpath]):
            log('%s %s: FAIL: quantization failed' % (args.name, variant))
            results[variant] = 'FAIL (quantization)'
            continue
        with open(os.path.splitext(qpath)[0] + '.json') as f:
            info = json.load(f)
        steps = {o['name']: o for o in info['outputs']}
        bundle = os.path.join(vdir, '%s_%s.kiln' % (args.name, variant))
        proc = run_tool('kilnc', [kilnc, qpath, '-o', bundle], timeout=900)
        if proc.returncode != 0 or not os.path.isfile(bundle):
            err = [line for line in proc.stderr.decode('utf-8', 'replace').splitlines() if 'error' in line]
            log('%s %s: FAIL: kilnc failed: %s' % (args.name, variant, err[0] if err else 'exit %s' % proc.returncode))
            results[variant] = 'FAIL (kilnc: %s)' % (err[0] if err else 'exit %s' % proc.returncode)
            continue
        log('bundle: %s (%d bytes)' % (bundle, os.path.getsize(bundle)))
        kiln_out = os.path.join(vdir, 'kiln_out')
        proc = run_tool('kiln run', [kiln, 'run', bundle, '--input', '%s=%s' % (models.INPUT_NAME, input_path),
                                     '--output-dir', kiln_out], timeout=600)
        if proc.returncode != 0:
            log('%s %s: FAIL: kiln run failed' % (args.name, variant))
            results[variant] = 'FAIL (kiln run)'
            continue
        ort_out = os.path.join(vdir, 'ort_out')
        base_out = os.path.join(vdir, 'ort_noopt_out')
        feed = ['--input', '%s=%s' % (models.INPUT_NAME, input_path)]
        if not (run_venv('onnxruntime int8', python, ['reference', '--model', qpath, '--out-dir', ort_out] + feed)
                and run_venv('onnxruntime int8, no graph optimizations', python,
                             ['reference', '--model', qpath, '--out-dir', base_out, '--no-optimization'] + feed)):
            log('%s %s: FAIL: the ONNX Runtime reference failed' % (args.name, variant))
            results[variant] = 'FAIL (onnxruntime)'
            continue
        # The criterion is a rate (>= 99.9% of the elements within 1 step):
        # with --top1-inputs it is judged over those inputs' outputs too (a
        # 160-element output cannot show a rate of 0.1%); this input's
        # comparison is then reported beside it.
        vok = True
        single_ok = True
        for oname in names:
            fname = sanitize(oname) + '.npy'
            if not os.path.isfile(os.path.join(kiln_out, fname)):
                log("output '%s': FAIL: kiln run did not write %s" % (oname, fname))
                vok = False
                continue
            got = np.load(os.path.join(kiln_out, fname), allow_pickle=False)
            ref = np.load(os.path.join(ort_out, fname), allow_pickle=False)
            base = np.load(os.path.join(base_out, fname), allow_pickle=False)
            single_ok &= compare_steps("%s output '%s'" % (variant, oname), got, ref, steps[oname],
                                       args.min_within, args.max_steps, baseline=base)
        if float_top1 is None or len(names) > 1:
            vok = single_ok
        if float_top1 is not None:
            int8_top1 = os.path.join(vdir, 'top1_ort_int8_out')
            if not run_venv('onnxruntime int8, top-1 inputs', python,
                            ['reference', '--model', qpath, '--out-dir', int8_top1,
                             '--random', str(args.top1_inputs), '--seed', str(INT8_TOP1_SEED)]):
                log('%s %s: FAIL: the ONNX Runtime int8 reference failed' % (args.name, variant))
                vok = False
            else:
                fname = sanitize(names[0]) + '.npy'
                kout = kiln_top1(kiln, bundle, models.INPUT_NAME, spec.input_shape, args.top1_inputs, vdir)
                if kout is None:
                    vok = False
                else:
                    ort_int8 = np.load(os.path.join(int8_top1, fname))
                    if len(names) == 1:
                        noopt = os.path.join(vdir, 'top1_ort_noopt_out')
                        if not run_venv('onnxruntime int8 without graph optimizations, top-1 inputs', python,
                                        ['reference', '--model', qpath, '--out-dir', noopt, '--no-optimization',
                                         '--random', str(args.top1_inputs), '--seed', str(INT8_TOP1_SEED)]):
                            vok = False
                        else:
                            vok &= compare_steps("%s output '%s' over %d seeded inputs" % (variant, names[0], len(kout)),
                                                 kout, ort_int8.reshape(kout.shape), steps[names[0]],
                                                 args.min_within, args.max_steps,
                                                 baseline=np.load(os.path.join(noopt, fname)).reshape(kout.shape),
                                                 baseline_bounds=True)
                    top1_report('%s %s' % (args.name, variant), kout, ort_int8, np.load(os.path.join(float_top1, fname)))
        results[variant] = 'PASS' if vok else 'FAIL'
        log('%s %s: %s (%.1f s)' % (args.name, variant, results[variant], time.monotonic() - t0))
    for variant in variants:
        log('int8 %s %s: %s' % (args.name, variant, results[variant]))
        ok &= results[variant] == 'PASS'
    log('%s int8: %s' % (args.name, 'PASS' if ok else 'FAIL'))
    return 0 if ok else 1


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = parser.add_subparsers(dest='command', required=True)

    p = sub.add_parser('model', help='compile + run one model and compare with ONNX Runtime')
    p.add_argument('--name', required=True, help='model name (see `list`)')
    p.add_argument('--kilnc', required=True)
    p.add_argument('--kiln', required=True)
    p.add_argument('--ort-dir', required=True, help='tests/ort (holds ort_run.js and node_modules)')
    p.add_argument('--workdir', required=True)
    p.add_argument('--node', help='Node.js binary (default: node on PATH)')
    p.add_argument('--rtol', type=float, help='relative tolerance (default: the model\'s, 1e-4)')
    p.add_argument('--atol', type=float, help='absolute tolerance (default: the model\'s, 1e-5)')
    p.add_argument('--device', choices=sorted(DEVICE_ARGS), default='cpu', help='where kiln runs it (default cpu)')
    p.set_defaults(func=cmd_model)

    p = sub.add_parser('onnx', help='compile + run an existing ONNX model and compare with ONNX Runtime')
    p.add_argument('--model', required=True, help='the .onnx file')
    p.add_argument('--input', action='append', default=[], metavar='NAME=FILE.npy')
    p.add_argument('--kilnc', required=True)
    p.add_argument('--kiln', required=True)
    p.add_argument('--ort-dir', required=True)
    p.add_argument('--workdir', required=True)
    p.add_argument('--node')
    p.add_argument('--rtol', type=float, help='relative tolerance (default 1e-4)')
    p.add_argument('--atol', type=float, help='absolute tolerance (default 1e-5)')
    p.add_argument('--device', choices=sorted(DEVICE_ARGS), default='cpu', help='where kiln runs it (default cpu)')
    p.set_defaults(func=cmd_onnx)

    p = sub.add_parser('reference', help='harness self-check: ONNX Runtime vs. PyTorch')
    p.add_argument('--name', default='all', help='model name, comma-separated names or "all"')
    p.add_argument('--ort-dir', required=True)
    p.add_argument('--workdir', required=True)
    p.add_argument('--node')
    p.add_argument('--rtol', type=float)
    p.add_argument('--atol', type=float)
    p.set_defaults(func=cmd_reference)

    p = sub.add_parser('unsupported', help='kilnc must reject an unsupported operator')
    p.add_argument('--kilnc', required=True)
    p.add_argument('--workdir', required=True)
    p.set_defaults(func=cmd_unsupported)

    p = sub.add_parser('int8', help='quantize a model with ONNX Runtime, compile + run it, compare in steps')
    p.add_argument('--name', required=True, help='model name (see `list`)')
    p.add_argument('--variant', required=True, help='comma-separated: %s' % ', '.join(INT8_VARIANTS))
    p.add_argument('--kilnc', required=True)
    p.add_argument('--kiln', required=True)
    p.add_argument('--venv', required=True, help='the venv with ONNX Runtime\'s quantizer (made when missing)')
    p.add_argument('--requirements', required=True, help='tests/e2e/requirements-int8.txt')
    p.add_argument('--workdir', required=True)
    p.add_argument('--min-within', type=float, default=0.999,
                   help='the fraction of elements that must be within 1 step (default 0.999)')
    p.add_argument('--max-steps', type=float, default=4.0, help='no element may be further off (default 4)')
    p.add_argument('--top1-inputs', type=int, default=100,
                   help='seeded inputs of the top-1 report (default 100; 0: none)')
    p.set_defaults(func=cmd_int8)

    p = sub.add_parser('list', help='list the models')
    p.set_defaults(func=cmd_list)

    args = parser.parse_args(argv)
    try:
        import torch
        torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    except ImportError:
        if args.command != 'list':
            log('error: PyTorch is not importable by %s (apt: python3-torch): %s' % (sys.executable, SETUP_HINT))
            return 2
    try:
        return args.func(args)
    except SetupError as e:
        log('error: %s' % e)
        return 2


if __name__ == '__main__':
    sys.exit(main())
