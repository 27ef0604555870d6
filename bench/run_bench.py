#!/usr/bin/python3
"""Kiln's benchmark: kiln vs. ONNX Runtime on nine models, in one command.

  /usr/bin/python3 bench/run_bench.py [--build build] [--out BUILD/bench]
      [--models a,b,...] [--rounds R] [--iterations K] [--warmup W]
      [--threads 1,2] [--quick] [--reexport] [--ort-dir tests/ort]
      [--no-vulkan] [--vulkan-iterations K] [--vulkan-budget S]

Steps (docs/performance.md explains them):
 1. measures the float32 FMA peak of this machine (bench/fma_peak.c, built
    with `cc -O2 -march=native`) at every thread count, again after every
    round; the best measurement counts;
 2. exports the models with PyTorch (seeded, weights=None, eval, opset 13,
    input `input`), caching the .onnx files in OUT/models/;
 3. counts each model's FLOPs from the ONNX graph (2 x MACs of Conv,
    ConvTranspose, Gemm and MatMul, shapes from onnx.shape_inference);
 4. compiles each model with kilnc (timed);
 5. for every thread count, runs R rounds; in each round every model is timed
    by `kiln bench` and by ONNX Runtime (bench/ort_bench.js) one after the
    other on the same ONNX file, the order swapping every round;
 6. profiles ResNet-18 at 1 thread with `kiln bench --profile` (when this
    kiln has it) and reports the five heaviest dispatches;
 7. unless --no-vulkan, when a Vulkan device is available: compiles the
    models with `kilnc --target=vulkan` and runs `kiln bench --startup` on
    the device, cheapest model first, while a time budget lasts (software
    Vulkan such as lavapipe is slow): median latency, load -> first
    inference and pipeline creation, cold and with a warm pipeline cache;
 8. writes OUT/results.md, OUT/results.json and OUT/chart.png and prints the
    Markdown.

Exit status 0 on success; 1 with "run_bench: error: ..." when a tool fails or
a model cannot be exported; 2 on a usage error. Run it with Debian's
/usr/bin/python3 (python3-torch, -torchvision, -onnx, -numpy). Do not build
while it runs: the machine's noise is the enemy.
"""

from __future__ import annotations

import argparse
import datetime
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
from bench_chart import render_chart  # noqa: E402
from bench_config import MODELS, PROFILE_MODEL, PROFILE_TOP, TRANSFORMER  # noqa: E402
from bench_flops import count_flops  # noqa: E402
from bench_report import fmt_ms, render_markdown  # noqa: E402

sys.dont_write_bytecode = True

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH_DIR = os.path.join(REPO, 'bench')

OPSET = 13
INPUT_NAME = 'input'
SEED = 0
EXPORT_VERSION = 1  # bump when the export below changes (invalidates cached .onnx files)



class BenchError(Exception):
    pass


def log(msg: str = '') -> None:
    """Progress goes to stderr; stdout gets only the final Markdown."""
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------
# Running tools: every failure is fatal and says what failed.

def run_tool(cmd: Sequence[str], what: str, timeout: float = 900, cwd: Optional[str] = None) -> str:
    try:
        proc = subprocess.run(list(cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout, cwd=cwd)
    except subprocess.TimeoutExpired:
        raise BenchError('%s: timed out after %.0f s: %s' % (what, timeout, ' '.join(cmd)))
    except OSError as e:
        raise BenchError('%s: cannot run %s: %s' % (what, cmd[0], e))
    out = proc.stdout.decode('utf-8', 'replace')
    if proc.returncode != 0:
        err = proc.stderr.decode('utf-8', 'replace').strip()
        status = ('killed by signal %d' % -proc.returncode) if proc.returncode < 0 else 'exit status %d' % proc.returncode
        tail = '\n'.join((out.strip() + '\n' + err).strip().splitlines()[-15:])
        raise BenchError('%s failed (%s): %s\n%s' % (what, status, ' '.join(cmd), tail))
    return out


TIMING_RE = re.compile(r'median_ms=([0-9.eE+-]+)\s+min_ms=([0-9.eE+-]+)\s+mean_ms=([0-9.eE+-]+)')
STARTUP_RE = re.compile(r'^(startup|startup_warm|startup_stages): (.*)$', re.M)


def parse_timing(out: str, what: str) -> Dict[str, float]:
    matches = TIMING_RE.findall(out)
    if not matches:
        raise BenchError('%s: no "median_ms=.. min_ms=.." line in its output:\n%s' % (what, out[-2000:]))
    med, mn, mean = (float(x) for x in matches[-1])
    return {'median_ms': med, 'min_ms': mn, 'mean_ms': mean}


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
# FMA peak.

class PeakMeter:
    """The measured FMA peak per thread count. bench/fma_peak.c is built once and run at the
    start, after every round and at the end; the peak is the best of all those measurements
    (each the best of 15 short runs), since a busy spell of the machine can only lower it."""

    def __init__(self, out_dir: str, threads: Sequence[int]):
        self.exe = os.path.join(out_dir, 'fma_peak')
        self.threads = list(threads)
        self.samples: Dict[int, List[Dict[str, object]]] = {t: [] for t in self.threads}
        run_tool(['cc', '-O2', '-march=native', '-pthread', os.path.join(BENCH_DIR, 'fma_peak.c'), '-o', self.exe,
                  '-lm'], 'compiling bench/fma_peak.c')

    def measure(self, threads: Optional[Sequence[int]] = None) -> None:
        threads = list(threads or self.threads)
        out = run_tool([self.exe, '--threads', ','.join(str(t) for t in threads)], 'fma_peak', timeout=300)
        seen = set()
        for line in out.splitlines():
            if not line.startswith('fma_peak '):
                continue
            fields = dict(kv.split('=', 1) for kv in line.split()[1:])
            t = int(fields['threads'])
            self.samples.setdefault(t, []).append({
                'gflops': float(fields['gflops']), 'median_gflops': float(fields['median_gflops']),
                'gflops_256': float(fields['gflops_256']), 'isa': fields['isa']})
            seen.add(t)
        for t in threads:
            if t not in seen:
                raise BenchError('fma_peak printed no result for %d thread(s):\n%s' % (t, out))

    def peak(self, t: int) -> Dict[str, object]:
        if not self.samples.get(t):
            self.measure([t])
        s = self.samples[t]
        best = max(s, key=lambda x: x['gflops'])
        return dict(best, measurements=len(s), median_of_measurements=statistics.median(x['gflops'] for x in s),
                    all_gflops=[x['gflops'] for x in s])

    def peaks(self) -> Dict[int, Dict[str, object]]:
        return {t: self.peak(t) for t in self.threads}


# ---------------------------------------------------------------------------
# Export (seeded) with an on-disk cache.

def e2e_models():
    """tests/e2e/models.py: the test models' builders and BatchNorm calibration."""
    sys.path.insert(0, os.path.join(REPO, 'tests', 'e2e'))
    import models  # noqa: E402
    return models


def build_transformer(torch):
    """The 4-layer transformer encoder (d=256, 4 heads, ff 1024), from tests/e2e/models.py."""
    t = TRANSFORMER
    return e2e_models().build_transformer_encoder(d=t['d'], heads=t['heads'], layers=t['layers'], ff=t['ff'])


def build_model(torch, name: str):
    if name == 'transformer':
        return build_transformer(torch)
    import torchvision
    ctor = getattr(torchvision.models, name)
    kwargs = {'weights': None}
    if name == 'googlenet':
        kwargs.update(aux_logits=False, init_weights=True)
    # Seeded BatchNorm statistics, so outputs are O(1) (as the e2e tests do).
    return e2e_models().calibrate_batchnorm(ctor(**kwargs), MODELS[name][1])


def export_key(name: str, torch_version: str) -> Dict[str, object]:
    return {'name': name, 'shape': list(MODELS[name][1]), 'opset': OPSET, 'seed': SEED, 'torch': torch_version,
            'export_version': EXPORT_VERSION, 'transformer': TRANSFORMER if name == 'transformer' else None}


def export_models(names: Sequence[str], model_dir: str, force: bool) -> Dict[str, Dict[str, object]]:
    """Exports each model to MODEL_DIR/<name>.onnx unless a cached export with the same key exists."""
    import onnx
    import torch
    torch.set_num_threads(max(1, len(os.sched_getaffinity(0))))
    info = {}
    for name in names:
        path = os.path.join(model_dir, name + '.onnx')
        stamp = path + '.json'
        key = export_key(name, torch.__version__)
        cached = False
        if not force and os.path.exists(path) and os.path.exists(stamp):
            try:
                with open(stamp) as f:
                    cached = json.load(f) == key
            except (OSError, ValueError):
                cached = False
        if cached:
            log('export %-20s cached (%s)' % (name, os.path.relpath(path)))
        else:
            start = time.monotonic()
            torch.manual_seed(SEED)
            try:
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
            with open(stamp, 'w') as f:
                json.dump(key, f)
            log('export %-20s %.1f s -> %s' % (name, time.monotonic() - start, os.path.relpath(path)))
        info[name] = {'onnx': path}
    return info


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


def run_rounds(names, info, args, threads_list, kiln, node, meter):
    """runs[name][threads][engine] = list of per-round timings. In every round, each model is
    timed by both engines back to back; the first engine alternates from round to round,
    so a slow spell of the machine hits both alike."""
    runs = {n: {t: {'kiln': [], 'ort': []} for t in threads_list} for n in names}
    for t in threads_list:
        for r in range(args.rounds):
            order = ('kiln', 'ort') if r % 2 == 0 else ('ort', 'kiln')
            for name in names:
                line = []
                for engine in order:
                    if engine == 'kiln':
                        res = time_kiln(kiln, info[name]['kiln'], t, args.iterations, args.warmup, name)
                    else:
                        res = time_ort(node, args.ort_dir, info[name]['onnx'], t, args.iterations, args.warmup, name)
                    runs[name][t][engine].append(res)
                    line.append('%s %.2f/%.2f' % (engine, res['median_ms'], res['min_ms']))
                log('threads %d round %d/%d %-20s %s  (median/min ms)' % (t, r + 1, args.rounds, name, '  '.join(line)))
            meter.measure()
    return runs


def summarize(names, info, runs, threads_list, peaks):
    rows = []
    for t in threads_list:
        for name in names:
            k, o = runs[name][t]['kiln'], runs[name][t]['ort']
            km = statistics.median(x['median_ms'] for x in k)
            kmin = min(x['min_ms'] for x in k)
            om = statistics.median(x['median_ms'] for x in o)
            omin = min(x['min_ms'] for x in o)
            flops = info[name]['flops']['total']
            peak = peaks[t]['gflops']
            kg = flops / (km * 1e6)
            og = flops / (om * 1e6)
            rows.append({'model': name, 'threads': t, 'kiln_median_ms': km, 'kiln_min_ms': kmin,
                         'ort_median_ms': om, 'ort_min_ms': omin, 'ratio_median': km / om, 'ratio_min': kmin / omin,
                         'gflop': flops / 1e9, 'kiln_gflops': kg, 'ort_gflops': og,
                         'kiln_pct_peak': 100 * kg / peak, 'ort_pct_peak': 100 * og / peak})
    geo = {}
    for t in threads_list:
        sel = [r for r in rows if r['threads'] == t]
        geo[t] = {'ratio_median': math.exp(sum(math.log(r['ratio_median']) for r in sel) / len(sel)),
                  'ratio_min': math.exp(sum(math.log(r['ratio_min']) for r in sel) / len(sel))}
    return rows, geo


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
    p.add_argument('--reexport', action='store_true', help='export the models again even when cached')
    p.add_argument('--ort-dir', default=os.path.join(REPO, 'tests', 'ort'),
                   help='folder with node_modules/onnxruntime-node (default tests/ort)')
    p.add_argument('--node', default='node', help='the Node.js executable')
    p.add_argument('--no-vulkan', action='store_true', help='skip the Vulkan measurements')
    p.add_argument('--vulkan-shared-memory', choices=['auto', 'on', 'off'], default='auto',
                   help='kilnc --vulkan-shared-memory for the Vulkan bundles (default auto: off on CPU '
                        'implementations such as lavapipe, on elsewhere)')
    p.add_argument('--vulkan-iterations', type=int, default=None,
                   help='timed Vulkan runs per model, after 1 warm-up (default 2; --quick: 1)')
    p.add_argument('--vulkan-budget', type=float, default=180.0,
                   help='seconds the Vulkan measurements may take; models that would overrun it are skipped '
                        '(default 180)')
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
        raise BenchError('no C compiler (cc) for bench/fma_peak.c')
    return kilnc, kiln, node


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
        meter.measure()
        for t, pk in sorted(meter.peaks().items()):
            log('FMA peak, %d thread(s): %.1f GFLOP/s (%s)' % (t, pk['gflops'], pk['isa']))
        names = args.model_list
        info = export_models(names, os.path.join(args.out, 'models'), args.reexport)
        for n in names:
            info[n]['flops'] = count_flops(info[n]['onnx'])
            if info[n]['flops']['unknown_nodes']:
                log('warning: %s: no static shapes for %d node(s), their FLOPs are not counted: %s' % (
                    n, len(info[n]['flops']['unknown_nodes']), ', '.join(info[n]['flops']['unknown_nodes'][:5])))
            log('flops   %-20s %.3f GFLOP' % (n, info[n]['flops']['total'] / 1e9))
        compile_models(names, info, kilnc)
        runs = run_rounds(names, info, args, args.threads_list, kiln, node, meter)
        peaks = meter.peaks()
        for t, pk in sorted(peaks.items()):
            log('FMA peak, %d thread(s): %.1f GFLOP/s, the best of %d measurements (their median %.1f)' % (
                t, pk['gflops'], pk['measurements'], pk['median_of_measurements']))
        rows, geo = summarize(names, info, runs, args.threads_list, peaks)
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
        machine['loadavg_end'] = list(os.getloadavg())
        elapsed = time.monotonic() - started
        md = render_markdown(machine, peaks, names, info, rows, geo, profile, args, args.threads_list, elapsed,
                             vulkan)
        chart = os.path.join(args.out, 'chart.png')
        render_chart(chart, names, rows, geo, args.threads_list, peaks)
        with open(os.path.join(args.out, 'results.md'), 'w') as f:
            f.write(md)
        results = {
            'machine': machine,
            'settings': {'rounds': args.rounds, 'iterations': args.iterations, 'warmup': args.warmup,
                         'threads': args.threads_list, 'models': names},
            'fma_peak': {str(t): p for t, p in peaks.items()},
            'models': {n: {'display_name': MODELS[n][0], 'input_shape': list(MODELS[n][1]),
                           'onnx': os.path.relpath(info[n]['onnx'], args.out),
                           'kiln': os.path.relpath(info[n]['kiln'], args.out),
                           'compile_s': info[n]['compile_s'], 'bundle_bytes': info[n]['bundle_bytes'],
                           'flops': info[n]['flops']['total'], 'flops_by_op': info[n]['flops']['by_op'],
                           'rounds': {str(t): runs[n][t] for t in args.threads_list}} for n in names},
            'summary': rows,
            'geomean': {str(t): g for t, g in geo.items()},
            'profile': profile,
            'vulkan': vulkan,
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
