#!/usr/bin/env python3
"""Tunes an ONNX model with Apache TVM's MetaSchedule for bench/tvm_bench.py --tuned-dir, the
counterpart of `kilnc tune` for bench/run_bench.py --tvm. Run it with the python of the TVM venv
(bench/requirements-tvm.txt).

  tvm_tune.py MODEL.onnx --trials N --work-dir DIR [--threads T] [--time-budget MIN]
      [--trials-per-iter B] [--seed S]

The model is imported and prepared as tvm_bench.py does (same target: LLVM for this CPU with
num-cores T), then MetaSchedule tunes every extracted task (each fused TIR function; the steps
of its tune_relax) with max_trials_global = N: N candidates measured in all, found by TVM's
evolutionary search with its XGBoost cost model, measured by the local builder and runner at T
threads. Three settings differ from TVM's defaults, because N is small (the trials Kiln's tuner
gets, not TVM's usual thousands):
 - batches of N / tasks candidates (at least 1, at most TVM's default 64; --trials-per-iter):
   with 64 a small N would leave most tasks with none, and a task without a schedule keeps its
   plain loop nest;
 - the round-robin task scheduler, the tasks heaviest first (FLOPs x uses): the default
   gradient scheduler first gives every task one batch in turn and only then takes in their
   results, so with about one batch per task its cost model would never be trained before
   choosing, and nothing would reach the database before the end. Round-robin measures the
   same batches but takes in each as it finishes; a time budget then leaves the cheapest tasks
   untuned.
 - the builder's build function is TVM's default less its `import tvm.s_tir.tensor_intrin`
   (every target's tensor intrinsics, 11 s here, in every builder process, which MetaSchedule
   restarts for each batch); float32 schedules on x86 use none of them.
The records go to DIR's JSON database
(database_workload.json, database_tuning_record.json) as they are measured. With --time-budget,
every task is stopped once MIN minutes have passed (checked as each batch's results come in), so
fewer than N candidates may be measured.

The last line is
  tasks=A tasks_tuned=U trials_budget=N trials_per_iter=B measured=M wall_s=S stopped_by_budget=0|1
(M: the records in the database, U: the tasks with at least one); the same as JSON in
DIR/kiln_tvm_tune.json. Exit status 0, or 1 with "tvm_tune: error: ..." on stderr.
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tvm_bench  # noqa: E402


def count_records(work_dir: str):
    """(records, tasks with at least one record) of WORK_DIR's database: each line of
    database_tuning_record.json is [workload index, record]."""
    path = os.path.join(work_dir, 'database_tuning_record.json')
    if not os.path.isfile(path):
        return 0, 0
    with open(path) as f:
        lines = [json.loads(line) for line in f if line.strip()]
    return len(lines), len({x[0] for x in lines})


def build_f32(mod, target, _params):
    """MetaSchedule's default build function (s_tir.meta_schedule.builder.default_build) less its
    `import tvm.s_tir.tensor_intrin`. Runs in the builder's worker processes (pickled by value
    from __main__)."""
    from tvm.driver import build as tvm_build
    from tvm.s_tir.transform import RemoveWeightLayoutRewriteBlock
    return tvm_build(RemoveWeightLayoutRewriteBlock(skip_tensor_rewrite=True)(mod), target=target)


def deadline_callback(deadline: float, stopped: list):
    """A MetaSchedule measure callback that, once time.monotonic() passes DEADLINE, ends every
    task still running (and records that in STOPPED)."""
    from tvm.ir.utils import derived_object
    from tvm.s_tir.meta_schedule.measure_callback import PyMeasureCallback

    @derived_object
    class StopAtDeadline(PyMeasureCallback):
        def apply(self, task_scheduler, task_id, measure_candidates, builder_results, runner_results):
            if time.monotonic() < deadline:
                return
            for i, task in enumerate(task_scheduler.tasks_):
                if not task.is_terminated:
                    task_scheduler.terminate_task(i)
                    stopped.append(i)

    return StopAtDeadline()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('model')
    ap.add_argument('--trials', type=int, required=True, help='max_trials_global: candidates measured in all')
    ap.add_argument('--work-dir', required=True, help='MetaSchedule work folder (its database and logs)')
    ap.add_argument('--threads', type=int, default=1, help='threads of the measured runs (default 1)')
    ap.add_argument('--time-budget', type=float, default=None,
                    help='minutes after which every task is stopped (default: no limit)')
    ap.add_argument('--trials-per-iter', type=int, default=None,
                    help='candidates per batch (default: trials / tasks, at least 1, at most 64)')
    ap.add_argument('--seed', type=int, default=0)
    args = ap.parse_args()
    if args.trials < 1 or args.threads < 1 or (args.time_budget is not None and args.time_budget <= 0) \
            or (args.trials_per_iter is not None and args.trials_per_iter < 1):
        ap.error('--trials, --threads and --trials-per-iter need at least 1, --time-budget more than 0')
    os.environ['TVM_NUM_THREADS'] = str(args.threads)  # the runner's worker inherits it
    tvm_bench.hide_torch()
    import tvm
    from tvm.s_tir import meta_schedule as ms
    from tvm.s_tir.analysis import estimate_tir_flops
    started = time.monotonic()
    target = tvm.target.Target(tvm_bench.host_target(args.threads))
    mod, _ = tvm_bench.import_model(args.model, target)
    tasks = ms.relax_integration.extract_tasks(mod, target)
    tasks = [t for t in tasks if not t.mod.attrs.get('tirx.is_scheduled', False)]
    # Heaviest first (FLOPs x how often the model runs it): what the time budget leaves untuned
    # is then the cheap tasks.
    tasks.sort(key=lambda t: -estimate_tir_flops(t.dispatched[0]) * t.weight)
    per_iter = args.trials_per_iter or max(1, min(64, args.trials // max(1, len(tasks))))
    print('tvm_tune: %d tasks, %d trials, %d per batch; target %s' % (len(tasks), args.trials, per_iter, target),
          flush=True)
    os.makedirs(args.work_dir, exist_ok=True)
    stopped: list = []
    callbacks = ms.MeasureCallback.create('default')
    if args.time_budget is not None:
        callbacks = list(callbacks) + [deadline_callback(started + args.time_budget * 60, stopped)]
    # tune_relax's steps, with the tasks in the order above.
    contexts, weights = ms.relax_integration.extracted_tasks_to_tune_contexts(tasks, args.work_dir, seed=args.seed)
    ms.tune_tasks(tasks=contexts, task_weights=weights, work_dir=args.work_dir, max_trials_global=args.trials,
                  num_trials_per_iter=per_iter, measure_callbacks=callbacks,
                  builder=ms.builder.LocalBuilder(f_build=build_f32), task_scheduler='round-robin')
    wall = time.monotonic() - started
    measured, tasks_tuned = count_records(args.work_dir)
    summary = {'tasks': len(tasks), 'tasks_tuned': tasks_tuned, 'trials_budget': args.trials,
               'trials_per_iter': per_iter, 'measured': measured, 'wall_s': round(wall, 1),
               'stopped_by_budget': int(bool(stopped)), 'time_budget_min': args.time_budget,
               'threads': args.threads, 'target': str(target), 'tvm': tvm.__version__}
    with open(os.path.join(args.work_dir, 'kiln_tvm_tune.json'), 'w') as f:
        json.dump(summary, f, indent=1)
    print(' '.join('%s=%s' % (k, summary[k]) for k in ('tasks', 'tasks_tuned', 'trials_budget', 'trials_per_iter',
                                                         'measured', 'wall_s', 'stopped_by_budget')))
    return 0


if __name__ == '__main__':
    try:
        sys.exit(main())
    except Exception as e:  # noqa: BLE001 - any failure is reported as the tool's error
        print('tvm_tune: error: %s: %s' % (type(e).__name__, e), file=sys.stderr)
        sys.exit(1)
