"""The tuned comparison of bench/run_bench.py: Kiln compiled with a tuning log (--kiln-tuning-log,
made by `kilnc tune`) and Apache TVM (--tvm) untuned and tuned by MetaSchedule with the trial
budget Kiln's tuner gets, timed in the same alternating rounds as the other engines.

TVM runs in a venv of its own (bench/requirements-tvm.txt, made like the OpenVINO one) through
bench/tvm_tune.py and bench/tvm_bench.py. The budget: `kilnc tune --trials T` measures at most T
points per workload, so TVM gets max_trials_global = T x the model's Kiln workloads (`kilnc tune
--list-workloads`), at most --tvm-time-budget minutes, per model and thread count. Tunings are
cached in OUT/tvm/ with a stamp of what they were made from (like the exports)."""

import json
import os
import re
import shutil
import time
from typing import Dict, List, Optional

from bench_common import BENCH_DIR, BenchError, log, parse_timing, run_tool
from bench_config import MODELS

ENGINES = ('kiln_tuned', 'tvm', 'tvm_tuned')
TVM_ENGINES = ('tvm', 'tvm_tuned')
REQUIREMENTS = os.path.join(BENCH_DIR, 'requirements-tvm.txt')
# Imported as tvm_bench.py imports them: with Debian's torch hidden, which would otherwise register
# its own, older onnx protobuf descriptors before the venv's onnx can.
VENV_CHECK = ('import sys; sys.path.insert(0, %r); import tvm_bench; tvm_bench.hide_torch(); '
              'import tvm, tvm.relax.frontend.onnx, tvm.s_tir.meta_schedule, onnx, xgboost, psutil, cloudpickle'
              % BENCH_DIR)
WORKLOADS_RE = re.compile(r': (\d+) workloads?\b')


def add_args(p) -> None:
    p.add_argument('--kiln-tuning-log', default=None,
                   help='also time kiln compiled with `kilnc --tuning-log FILE` (a `kilnc tune` log; '
                        'docs/tuning.md), beside the default bundle')
    p.add_argument('--tvm', action='store_true',
                   help='also time Apache TVM, untuned and tuned by MetaSchedule (bench/tvm_bench.py, '
                        'bench/tvm_tune.py in a venv from bench/requirements-tvm.txt); slow: tuning takes up to '
                        '--tvm-time-budget minutes per model and thread count (cached in OUT/tvm; --reexport '
                        'tunes again)')
    p.add_argument('--tvm-venv', default=None,
                   help='the venv with TVM, made when missing (default BUILD/bench-tvm-venv)')
    p.add_argument('--tvm-trials', type=int, default=48,
                   help='Kiln\'s trials per workload (`kilnc tune --trials`, default 48): TVM tunes with this '
                        'times the model\'s Kiln workloads as its global trial budget')
    p.add_argument('--tvm-time-budget', type=float, default=20.0,
                   help='minutes a TVM tuning may take per model and thread count (default 20)')


def check_args(p, args) -> None:
    if args.tvm_trials < 1 or args.tvm_time_budget <= 0:
        p.error('--tvm-trials must be at least 1 and --tvm-time-budget positive')
    if args.kiln_tuning_log is not None:
        args.kiln_tuning_log = os.path.abspath(args.kiln_tuning_log)
        if not os.path.isfile(args.kiln_tuning_log):
            p.error('--kiln-tuning-log: no such file: %s' % args.kiln_tuning_log)
    args.tvm_venv = os.path.abspath(args.tvm_venv or os.path.join(args.build, 'bench-tvm-venv'))


def engines(args, name: str, t: int) -> List[str]:
    """The tuned-comparison engines that time NAME at T threads."""
    out = ['kiln_tuned'] if args.kiln_tuning_log else []
    if args.tvm_python and name not in args.tvm_failed:
        out += ['tvm'] + (['tvm_tuned'] if t in args.tvm_tuned.get(name, {}) else [])
    return out


def kiln_workloads(kilnc: str, onnx_path: str, name: str) -> int:
    out = run_tool([kilnc, 'tune', onnx_path, '--list-workloads'], 'kilnc tune --list-workloads %s' % name)
    m = WORKLOADS_RE.search(out)
    if not m:
        raise BenchError('kilnc tune --list-workloads %s printed no workload count:\n%s' % (name, out[-2000:]))
    return int(m.group(1))


def tune_tvm(args, name: str, onnx_path: str, trials: int, threads: int, file_sha256, stamp_matches,
             write_stamp) -> Dict[str, object]:
    """bench/tvm_tune.py's summary for NAME at THREADS (its kiln_tvm_tune.json), tuning unless a
    tuning of the same model, budget and scripts is cached; raises BenchError when it fails."""
    work = os.path.join(args.out, 'tvm', '%s.t%d' % (name, threads))
    summary = os.path.join(work, 'kiln_tvm_tune.json')
    key = {'onnx_sha256': file_sha256(onnx_path), 'trials': trials, 'threads': threads,
           'time_budget_min': args.tvm_time_budget, 'requirements_sha256': file_sha256(REQUIREMENTS),
           'tvm_tune_sha256': file_sha256(os.path.join(BENCH_DIR, 'tvm_tune.py')),
           'tvm_bench_sha256': file_sha256(os.path.join(BENCH_DIR, 'tvm_bench.py'))}
    if args.reexport or not stamp_matches(summary, key):
        shutil.rmtree(work, ignore_errors=True)  # a new database and logs
        log('tvm tune %-18s %d trials, %d thread(s), at most %.0f min ...' % (name, trials, threads,
                                                                               args.tvm_time_budget))
        out = run_tool([args.tvm_python, os.path.join(BENCH_DIR, 'tvm_tune.py'), onnx_path, '--trials', str(trials),
                        '--threads', str(threads), '--time-budget', str(args.tvm_time_budget), '--work-dir', work],
                       'tvm_tune.py %s (%d threads)' % (name, threads), timeout=args.tvm_time_budget * 60 + 900)
        with open(os.path.join(work, 'tune.log'), 'w') as f:
            f.write(out)
        write_stamp(summary, key)
    else:
        log('tvm tune %-18s cached (%s)' % (name, os.path.relpath(work)))
    with open(summary) as f:
        result = json.load(f)
    result['work_dir'] = work
    return result


def prepare(names, info, args, kilnc: str, venv_python, file_sha256, stamp_matches, write_stamp):
    """Before the rounds: compiles the Kiln bundles with the tuning log; makes the TVM venv and tunes
    every model with TVM at every thread count. Sets args.tvm_python (None: no TVM), args.tvm_failed
    (name -> why TVM could not time it; filled by the rounds) and args.tvm_tuned (name -> threads ->
    tvm_tune.py's summary; a failed tuning is left out, and TVM untuned still timed). Returns the
    section's settings for results.json, or None when neither option was given."""
    args.tvm_python, args.tvm_failed, args.tvm_tuned = None, {}, {}
    if not args.kiln_tuning_log and not args.tvm:
        return None
    section: Dict[str, object] = {'kiln_tuning_log': args.kiln_tuning_log, 'tvm': args.tvm,
                                  'tvm_trials_per_workload': args.tvm_trials,
                                  'tvm_time_budget_min': args.tvm_time_budget, 'kiln_workloads': {}}
    for name in names:
        if args.kiln_tuning_log:
            path = os.path.splitext(info[name]['onnx'])[0] + '.tuned.kiln'
            start = time.monotonic()
            run_tool([kilnc, info[name]['onnx'], '-o', path, '--tuning-log', args.kiln_tuning_log],
                     'kilnc --tuning-log %s' % name, timeout=1800)
            info[name]['kiln_tuned'] = path
            log('compile %-20s tuned %5.1f s (--tuning-log %s)' % (name, time.monotonic() - start,
                                                                 args.kiln_tuning_log))
    if not args.tvm:
        return section
    try:
        args.tvm_python = venv_python(args.tvm_venv, REQUIREMENTS, VENV_CHECK, 'Apache TVM')
    except BenchError as e:
        log('warning: TVM left out: %s' % e)
        section['tvm_reason'] = str(e)
        return section
    section['tvm_venv'] = args.tvm_venv
    for name in names:
        workloads = kiln_workloads(kilnc, info[name]['onnx'], name)
        section['kiln_workloads'][name] = workloads
        for t in args.threads_list:
            try:
                s = tune_tvm(args, name, info[name]['onnx'], args.tvm_trials * workloads, t, file_sha256,
                             stamp_matches, write_stamp)
            except BenchError as e:  # TVM untuned is still timed
                section.setdefault('tvm_tune_failed', {})[name] = str(e)
                log('tvm tune %-18s FAILED: %s' % (name, e))
                break
            args.tvm_tuned.setdefault(name, {})[t] = s
            log('tvm tune %-18s %d thread(s): %d of %d tasks tuned, %d of %d trials measured, %.0f s%s' % (
                name, t, s['tasks_tuned'], s['tasks'], s['measured'], s['trials_budget'], s['wall_s'],
                ' (stopped by the time budget)' if s['stopped_by_budget'] else ''))
    section['tvm_tuning'] = {n: {str(t): s for t, s in by_t.items()} for n, by_t in args.tvm_tuned.items()}
    return section


def time_engine(engine: str, name: str, info, t: int, args) -> Dict[str, float]:
    cmd = [args.tvm_python, os.path.join(BENCH_DIR, 'tvm_bench.py'), info[name]['onnx'], '--threads', str(t),
           '--iterations', str(args.iterations), '--warmup', str(args.warmup)]
    if engine == 'tvm_tuned':
        cmd += ['--tuned-dir', args.tvm_tuned[name][t]['work_dir']]
    what = 'tvm_bench.py %s%s (%d threads)' % (name, ' tuned' if engine == 'tvm_tuned' else '', t)
    return parse_timing(run_tool(cmd, what, timeout=1800), what)


def summarize(names, runs, threads_list, section, args, median_and_min) -> Optional[List[Dict[str, object]]]:
    """Per model and thread count: median and min of kiln (default), kiln tuned, TVM untuned and
    TVM tuned where timed, and the ratios to TVM tuned (below 1: kiln is faster)."""
    if section is None:
        return None
    rows = []
    for t in threads_list:
        for name in names:
            row: Dict[str, object] = {'model': name, 'threads': t}
            for e in ('kiln',) + ENGINES:
                if runs[name][t].get(e):
                    row[e + '_median_ms'], row[e + '_min_ms'] = median_and_min(runs[name][t][e])
            for e in ('kiln', 'kiln_tuned'):
                if e + '_median_ms' in row and 'tvm_tuned_median_ms' in row:
                    row[e + '_over_tvm_tuned_median'] = row[e + '_median_ms'] / row['tvm_tuned_median_ms']
                    row[e + '_over_tvm_tuned_min'] = row[e + '_min_ms'] / row['tvm_tuned_min_ms']
            rows.append(row)
    section['summary'] = rows
    section['rounds'] = {n: {str(t): {e: runs[n][t][e] for e in ENGINES} for t in threads_list} for n in names}
    section['tvm_failed'] = dict(args.tvm_failed)
    return rows


def render(section, args, fmt_ms) -> List[str]:
    """The Markdown section "Tuned: kiln and Apache TVM"; [] when not run."""
    if section is None:
        return []
    L = ['## Tuned: kiln and Apache TVM', '']
    what = []
    if section['kiln_tuning_log']:
        what.append('kiln tuned: the same models compiled with `kilnc --tuning-log %s`' % section['kiln_tuning_log'])
    if section['tvm']:
        if args.tvm_python:
            what.append('TVM: Apache TVM (bench/requirements-tvm.txt; Relax ONNX frontend, LLVM target for this CPU, '
                        'the Relax VM on N threads; bench/tvm_bench.py), untuned (every operator TVM\'s plain '
                        'loop nest: TVM has no hand-written CPU schedules) and tuned by MetaSchedule '
                        '(bench/tvm_tune.py) with %d trials per Kiln workload (`kilnc tune --trials %d`) times the '
                        'model\'s Kiln workloads as its global budget, at most %.0f minutes per model and thread '
                        'count' % (section['tvm_trials_per_workload'], section['tvm_trials_per_workload'],
                                   section['tvm_time_budget_min']))
        else:
            what.append('TVM: not run (%s)' % section.get('tvm_reason', 'no venv'))
    L.append('; '.join(what) + '. Same alternating rounds as above; times in ms (median of the rounds\' medians '
             '/ best single run); ratios below 1: kiln is faster.')
    L.append('')
    if section.get('tvm_tuning'):
        L.append('| Model | threads | Kiln workloads | TVM tasks | tuned | trial budget | measured | tuning wall s | '
                 'stopped by the time budget |')
        L.append('|---|---:|---:|---:|---:|---:|---:|---:|---|')
        for n, by_t in section['tvm_tuning'].items():
            for t, s in by_t.items():
                L.append('| %s | %s | %d | %d | %d | %d | %d | %.0f | %s |' % (
                    MODELS[n][0], t, section['kiln_workloads'][n], s['tasks'], s['tasks_tuned'], s['trials_budget'],
                    s['measured'], s['wall_s'], 'yes' if s['stopped_by_budget'] else 'no'))
        L.append('')
    failed = [('timing', args.tvm_failed), ('tuning', section.get('tvm_tune_failed', {}))]
    for what, by_name in failed:
        for n, why in sorted(by_name.items()):
            L.append('- TVM %s failed on %s: %s' % (what, MODELS[n][0], why.splitlines()[0].replace('|', '/')))
    if any(by_name for _, by_name in failed):
        L.append('')

    def cell(r, e):
        if e + '_median_ms' not in r:
            return '-'
        return '%s / %s' % (fmt_ms(r[e + '_median_ms']), fmt_ms(r[e + '_min_ms']))

    def ratio(r, e):
        k = e + '_over_tvm_tuned_median'
        return '%.2f / %.2f' % (r[k], r[e + '_over_tvm_tuned_min']) if k in r else '-'

    for t in sorted({r['threads'] for r in section['summary']}):
        L.append('### %d thread%s' % (t, '' if t == 1 else 's'))
        L.append('')
        L.append('| Model | kiln | kiln tuned | kiln / kiln tuned | TVM untuned | TVM tuned | kiln / TVM tuned '
                 '| kiln tuned / TVM tuned |')
        L.append('|---|---:|---:|---:|---:|---:|---:|---:|')
        for r in section['summary']:
            if r['threads'] == t:
                gain = ('%.2fx' % (r['kiln_median_ms'] / r['kiln_tuned_median_ms'])
                        if 'kiln_tuned_median_ms' in r else '-')
                L.append('| %s | %s | %s | %s | %s | %s | %s | %s |' % (
                    MODELS[r['model']][0], cell(r, 'kiln'), cell(r, 'kiln_tuned'), gain, cell(r, 'tvm'),
                    cell(r, 'tvm_tuned'), ratio(r, 'kiln'), ratio(r, 'kiln_tuned')))
        L.append('')
    return L
