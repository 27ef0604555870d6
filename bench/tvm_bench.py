#!/usr/bin/env python3
"""Times an ONNX model with Apache TVM (Relax ONNX frontend, LLVM CPU target), untuned or with a
MetaSchedule database made by bench/tvm_tune.py: the counterpart of `kiln bench` for
bench/run_bench.py --tvm. Run it with the python of the TVM venv (bench/requirements-tvm.txt).

  tvm_bench.py MODEL.onnx [--threads N] [--iterations K] [--warmup W] [--tuned-dir DIR]

The model is imported with its input shapes fixed (the bench's models have static shapes) and
prepared as TVM's static-shape tuning pipeline does (DecomposeOpsForInference,
CanonicalizeBindings, the zero pipeline: legalize, fold constants, fuse), then built by
tvm.compile for {"kind": "llvm", "mcpu": <LLVM's name for this CPU>, "num-cores": N} and run by
the Relax VM on N threads (TVM_NUM_THREADS=N). Untuned (no --tuned-dir) every operator is
TVM's plain legalized loop nest: TVM has no hand-written CPU schedules in Relax (DLight's rules
are for GPUs), so untuned numbers are no fair comparison. With --tuned-dir, the best schedules of
DIR's MetaSchedule database (MetaScheduleApplyDatabase) replace the loop nests they cover.
Every float input is filled once with the seeded values `kiln bench` uses (bench/bench_feeds.py).
W untimed runs, then K timed runs of the VM's main function, each timed on its own. The last
line is
  median_ms=X min_ms=Y mean_ms=Z iterations=K
Exit status 0, or 1 with "tvm_bench: error: ..." on stderr.
"""

import argparse
import os
import sys


def hide_torch() -> None:
    """TVM imports torch when it can (for DLPack exchange only) and then tries to JIT-compile an
    extension, seconds at every start of every MetaSchedule worker process; and Debian's torch
    registers its own, older ONNX protobuf descriptors, which break the venv's onnx imported after
    it. The venv sees Debian's torch, which TVM does not need here. So bench/tvm_hidden (a `torch`
    that raises ImportError) goes first on the path, of this process and of its children
    (PYTHONPATH). Call it before importing tvm."""
    hidden = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'tvm_hidden')
    path = os.environ.get('PYTHONPATH')
    os.environ['PYTHONPATH'] = hidden + (os.pathsep + path if path else '')
    sys.path.insert(0, hidden)
    os.environ['TVM_FFI_DISABLE_TORCH_C_DLPACK'] = '1'


def host_target(threads: int) -> dict:
    """The LLVM CPU target for this machine, as a dict (TVM 0.27's way to write targets)."""
    from tvm.target import codegen
    return {'kind': 'llvm', 'mcpu': codegen.llvm_get_system_cpu(), 'num-cores': threads}


def model_inputs(model):
    """[(name, shape, numpy dtype)] of the ONNX model's inputs (initializers listed as inputs
    left out); every dimension must be fixed."""
    from onnx import helper
    init = {t.name for t in model.graph.initializer}
    out = []
    for inp in model.graph.input:
        if inp.name in init:
            continue
        tt = inp.type.tensor_type
        shape = [d.dim_value if d.HasField('dim_value') else None for d in tt.shape.dim]
        if any(d is None or d < 1 for d in shape):
            raise ValueError('input %s has no fixed shape (%s)' % (inp.name, shape))
        out.append((inp.name, shape, helper.tensor_dtype_to_np_dtype(tt.elem_type)))
    return out


def import_model(path: str, target):
    """The model as a prepared Relax IRModule (see the docstring) and its inputs."""
    import onnx
    import tvm
    from tvm import relax
    from tvm.relax.frontend.onnx import from_onnx
    model = onnx.load(path)
    inputs = model_inputs(model)
    mod = from_onnx(model, shape_dict={n: s for n, s, _ in inputs},
                    dtype_dict={n: str(d) for n, _, d in inputs})
    with tvm.target.Target(target):
        mod = tvm.transform.Sequential([relax.transform.DecomposeOpsForInference(),
                                        relax.transform.CanonicalizeBindings(),
                                        relax.get_pipeline('zero')])(mod)
    return mod, inputs


def build(path: str, threads: int, tuned_dir=None):
    """The compiled model (a Relax VM on the CPU) and its inputs; with TUNED_DIR, the MetaSchedule
    database there is applied first."""
    import tvm
    from tvm import relax
    target = tvm.target.Target(host_target(threads))
    mod, inputs = import_model(path, target)
    if tuned_dir is not None:
        for f in ('database_workload.json', 'database_tuning_record.json'):
            if not os.path.isfile(os.path.join(tuned_dir, f)):
                raise FileNotFoundError('%s has no %s: tune with bench/tvm_tune.py first' % (tuned_dir, f))
        with target:
            mod = relax.transform.MetaScheduleApplyDatabase(tuned_dir)(mod)
    executable = tvm.compile(mod, target)
    return relax.VirtualMachine(executable, tvm.cpu()), inputs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('model')
    ap.add_argument('--threads', type=int, default=1)
    ap.add_argument('--iterations', type=int, default=10)
    ap.add_argument('--warmup', type=int, default=2)
    ap.add_argument('--tuned-dir', default=None,
                    help='a MetaSchedule work folder of bench/tvm_tune.py (default: untuned)')
    args = ap.parse_args()
    if args.threads < 1 or args.iterations < 1 or args.warmup < 0:
        ap.error('--threads and --iterations need at least 1, --warmup at least 0')
    os.environ['TVM_NUM_THREADS'] = str(args.threads)  # read when TVM's thread pool starts
    hide_torch()
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from bench_feeds import input_values, time_runs
    import tvm
    vm, inputs = build(args.model, args.threads, args.tuned_dir)
    feeds = [tvm.runtime.tensor(input_values(shape, dtype)) for _, shape, dtype in inputs]
    main_fn = vm['main']
    time_runs(lambda: main_fn(*feeds), args.warmup, args.iterations)
    return 0


if __name__ == '__main__':
    try:
        sys.exit(main())
    except Exception as e:  # noqa: BLE001 - any failure is reported as the tool's error
        print('tvm_bench: error: %s: %s' % (type(e).__name__, e), file=sys.stderr)
        sys.exit(1)
