#!/usr/bin/env python3
"""Runs a pack made by tools/gpu_check/prepare.py on a machine with a GPU driver:
the Vulkan conformance cases (both targets, validation layer on), the bench models
against ONNX Runtime's reference, their timings and start-up, and PyTorch on CUDA
as a peer where the machine has it.

  python3 tools/gpu_check/on_device.py --pack DIR/pack --out OUTDIR [--jobs N]
      [--iterations N] [--skip-conformance] [--skip-torch] [--filter REGEX]

Writes OUTDIR/results.md (and results.json, conf_<target>.md, conf_<target>.log).
Needs python3 with numpy and onnx (the conformance runner reads the .pb data).
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, 'bench'))

TIMING_RE = re.compile(r'median_ms=([0-9.]+) min_ms=([0-9.]+)')
STARTUP_RE = re.compile(r'^(startup|startup_warm): .*?load_to_first_run_ms=([0-9.]+).*?pipeline_create_ms=([0-9.]+)',
                        re.M)
RTOL, ATOL = 1e-3, 1e-4


def sh(cmd, env=None, timeout=600):
    t0 = time.monotonic()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, timeout=timeout)
    return p.returncode, p.stdout.decode('utf-8', 'replace'), time.monotonic() - t0


def vulkan_env(pack):
    env = dict(os.environ)
    env['LD_LIBRARY_PATH'] = os.path.join(pack, 'bin') + ':' + env.get('LD_LIBRARY_PATH', '')
    env['VK_LAYER_PATH'] = os.path.join(pack, 'layers')
    for icd in ('/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json', '/usr/share/vulkan/icd.d/nvidia_icd.json',
                '/etc/vulkan/icd.d/nvidia_icd.json'):
        if os.path.isfile(icd):
            env['VK_DRIVER_FILES'] = env['VK_ICD_FILENAMES'] = icd
            break
    return env


def conformance(pack, out, jobs, env, results, case_filter=None):
    for target in ('vulkan', 'vulkan-shared'):
        cmd = [sys.executable, os.path.join(REPO, 'tests', 'conformance', 'run_conformance.py'),
               '--kiln', os.path.join(pack, 'bin', 'kiln'), '--data', os.path.join(pack, 'conformance', 'data'),
               '--workdir', os.path.join('/tmp', 'gpu_conf_' + target), '--jobs', str(jobs),
               '--report', os.path.join(out, 'conf_%s.md' % target), '--target', target,
               '--load-bundles', os.path.join(pack, 'conformance', 'bundles_' + target)]
        if case_filter:
            cmd += ['--filter', case_filter]
        if target == 'vulkan':
            cmd += ['--expected', os.path.join(REPO, 'tests', 'conformance', 'expected_pass_vulkan.txt')]
        rc, log, secs = sh(cmd, env=env, timeout=900)
        with open(os.path.join(out, 'conf_%s.log' % target), 'w') as f:
            f.write(log)
        summary = [l for l in log.splitlines()
                   if '**total**' in l or re.match(r'^\s*(OK|REGRESSION|BUG|\d+ new|\d+ bug)', l)]
        results['conformance'][target] = {'rc': rc, 'seconds': round(secs, 1), 'summary': summary}
        print('conformance %s: rc=%d in %.0f s\n  %s' % (target, rc, secs, '\n  '.join(summary)), flush=True)


def models(pack, out, iterations, env, results):
    import numpy as np
    mdir = os.path.join(pack, 'models')
    names = sorted({f.split('.')[0] for f in os.listdir(mdir) if f.endswith('.kiln')})
    kiln = os.path.join(pack, 'bin', 'kiln')
    for name in names:
        inp = os.path.join(mdir, name + '.input.npy')
        ref = np.load(os.path.join(mdir, name + '.ref.npy'))
        for variant in ('plain', 'shared'):
            bundle = os.path.join(mdir, '%s.%s.kiln' % (name, variant))
            row = results['models'].setdefault(name, {}).setdefault(variant, {})
            odir = os.path.join('/tmp', 'gpu_out_%s_%s' % (name, variant))
            os.makedirs(odir, exist_ok=True)
            rc, log, _ = sh([kiln, 'run', bundle, '--device', 'vulkan', '--validation', '--input', 'input=' + inp,
                             '--output-dir', odir], env=env)
            if rc != 0:
                row['run'] = 'failed: ' + log.strip()[-400:]
            else:
                got = np.load(os.path.join(odir, os.listdir(odir)[0]))
                err = np.abs(got.astype(np.float64) - ref)
                row['max_abs_err'] = float(err.max())
                row['max_rel_err'] = float((err / np.maximum(np.abs(ref), 1e-6)).max())
                row['match'] = bool(got.shape == ref.shape and np.allclose(got, ref, rtol=RTOL, atol=ATOL))
            rc, log, _ = sh([kiln, 'bench', bundle, '--device', 'vulkan', '--startup', '--warmup', '5',
                             '--iterations', str(iterations), '--input', 'input=' + inp], env=env)
            m = TIMING_RE.search(log)
            if rc != 0 or not m:
                row['bench'] = 'failed: ' + log.strip()[-400:]
            else:
                row['median_ms'], row['min_ms'] = float(m.group(1)), float(m.group(2))
                dev = re.search(r'^device=(.*)$', log, re.M)
                results['device'] = dev.group(1) if dev else '?'
                for kind, total, pipes in STARTUP_RE.findall(log):
                    row[kind + '_ms'] = float(total)
                    row[kind + '_pipelines_ms'] = float(pipes)
            print('%-16s %-6s %s' % (name, variant, json.dumps(row)), flush=True)
        if name in ('transformer', 'squeezenet1_1'):
            rc, log, _ = sh([kiln, 'bench', os.path.join(mdir, name + '.shared.kiln'), '--device', 'vulkan',
                             '--profile', '--iterations', '20', '--input', 'input=' + inp], env=env)
            with open(os.path.join(out, 'profile_%s_shared.txt' % name), 'w') as f:
                f.write(log)


def torch_peer(pack, iterations, results):
    """PyTorch eager on CUDA, float32 (TF32 off), cuDNN autotuning on: the same modules bench/ exports."""
    try:
        import torch
    except ImportError:
        results['torch'] = 'no torch'
        return
    if not torch.cuda.is_available():
        results['torch'] = 'no CUDA'
        return
    import run_bench
    from bench_config import FILE_MODELS, MODELS
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    results['torch'] = {'version': torch.__version__, 'gpu': torch.cuda.get_device_name(0), 'models': {}}
    for name in sorted(results['models']):
        if name in FILE_MODELS:
            continue
        torch.manual_seed(0)
        module = run_bench.build_model(torch, name).eval().cuda()
        x = torch.rand(MODELS[name][1], device='cuda')
        times = []
        with torch.no_grad():
            for _ in range(10):
                module(x)
            torch.cuda.synchronize()
            for _ in range(iterations):
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                module(x)
                b.record()
                torch.cuda.synchronize()
                times.append(a.elapsed_time(b))
        results['torch']['models'][name] = {'median_ms': statistics.median(times), 'min_ms': min(times)}
        print('torch %-16s %s' % (name, results['torch']['models'][name]), flush=True)


def write_md(out, results):
    lines = ['# Kiln on a real GPU (tools/gpu_check)', '', '- Vulkan device: %s' % results.get('device', '?')]
    t = results.get('torch')
    if isinstance(t, dict):
        lines.append('- peer: PyTorch %s eager on CUDA (%s), float32, TF32 off, cuDNN benchmark on' % (t['version'], t['gpu']))
    lines += ['', '## Conformance', '']
    for target, r in results['conformance'].items():
        lines.append('- %s (rc %d, %.0f s): %s' % (target, r['rc'], r['seconds'], '; '.join(s.strip() for s in r['summary'])))
    lines += ['', '## Models (ms; kiln: `kiln bench --device vulkan`, median / min)', '',
              '| model | plain | shared | PyTorch CUDA | shared/PyTorch | cold start plain / shared | warm start | matches ORT (max abs err) |',
              '|---|---:|---:|---:|---:|---:|---:|---|']
    for name, v in sorted(results['models'].items()):
        p, s = v.get('plain', {}), v.get('shared', {})
        tm = t['models'].get(name) if isinstance(t, dict) else None

        def ms(r):
            return '%.3f / %.3f' % (r['median_ms'], r['min_ms']) if 'median_ms' in r else r.get('bench', '-')[:60]
        ratio = '%.2f' % (s['median_ms'] / tm['median_ms']) if tm and 'median_ms' in s else '-'
        lines.append('| %s | %s | %s | %s | %s | %s / %s | %s / %s | %s |' % (
            name, ms(p), ms(s), ms(tm) if tm else '-', ratio,
            '%.0f' % p['startup_ms'] if 'startup_ms' in p else '-', '%.0f' % s['startup_ms'] if 'startup_ms' in s else '-',
            '%.0f' % p['startup_warm_ms'] if 'startup_warm_ms' in p else '-',
            '%.0f' % s['startup_warm_ms'] if 'startup_warm_ms' in s else '-',
            ', '.join('%s %s (%.2g)' % (k, 'yes' if r.get('match') else 'NO', r.get('max_abs_err', float('nan')))
                      if 'match' in r else '%s %s' % (k, r.get('run', '-')[:80]) for k, r in (('plain', p), ('shared', s)))))
    with open(os.path.join(out, 'results.md'), 'w') as f:
        f.write('\n'.join(lines) + '\n')
    with open(os.path.join(out, 'results.json'), 'w') as f:
        json.dump(results, f, indent=1)
    print('\n'.join(lines))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--pack', required=True)
    ap.add_argument('--out', required=True)
    ap.add_argument('--jobs', type=int, default=os.cpu_count() or 2)
    ap.add_argument('--iterations', type=int, default=50)
    ap.add_argument('--skip-conformance', action='store_true')
    ap.add_argument('--skip-torch', action='store_true')
    ap.add_argument('--filter', help='only the conformance cases matching this regex (run_conformance.py --filter)')
    args = ap.parse_args()
    pack, out = os.path.abspath(args.pack), os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    env = vulkan_env(pack)
    results = {'conformance': {}, 'models': {}}
    print(sh([os.path.join(pack, 'bin', 'kiln'), '--version'], env=env)[1], flush=True)
    try:
        if os.path.isdir(os.path.join(pack, 'models')):
            models(pack, out, args.iterations, env, results)
        if not args.skip_torch:
            torch_peer(pack, args.iterations, results)
        if not args.skip_conformance and os.path.isdir(os.path.join(pack, 'conformance')):
            conformance(pack, out, args.jobs, env, results, args.filter)
    finally:
        write_md(out, results)


if __name__ == '__main__':
    main()
