#!/usr/bin/python3
"""Models as today's exporters write them (issue 34's failure classes), each compiled by kilnc with
no flags beyond what the case names, run by `kiln run` and compared with ONNX Runtime.

  exporter_classes.py --kilnc PATH --kiln PATH --ort-dir tests/ort --workdir DIR [--node node]
                      [--only CASE[,CASE...]]

The classes, one or more cases each:
  versions       opset 20 / IR 10 (Reduce* axes as an input, Split num_outputs, Gelu, Pad axes)
  unsorted       nodes written out of topological order (sorted by kilnc)
  declared       a declared output shape of the wrong rank, and declared dims of -1 and
                 'unk__0' on intermediate values (replaced by kilnc's own, with a warning)
  run-time sizes Pad's pads, Range's limit and a free input dimension decided by the run's inputs
                 with no flag at all: one bundle, two runs of different sizes
  contrib        ONNX Runtime's fused operators: tests/e2e/ort_contrib_ops.py
Outputs match at rtol 1e-5, atol 1e-6 (float32 arithmetic of the same order as ONNX Runtime's), but
Gelu's case (rtol 1e-4, atol 1e-5: tanh's approximations differ) and the run-time sizes' (atol 1e-5:
a sum of 300 products). Exit status 0 when every case passed.
"""

import os
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import kiln_e2e  # noqa: E402

F32, I64 = TensorProto.FLOAT, TensorProto.INT64


def model(nodes, inputs, outputs, inits=(), opset=20, ir=10, value_info=()):
    g = helper.make_graph(nodes, 'g', inputs, outputs, list(inits), value_info=list(value_info))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid('', opset)], producer_name='exporter_classes.py')
    m.ir_version = ir
    return m


def vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


def case_versions():
    """Opset 20, IR 10: ReduceMean's axes input (18), Split's num_outputs (18), Pad's axes (18),
    Gelu (20, tanh form)."""
    nodes = [
        helper.make_node('ReduceMean', ['x', 'axes'], ['m'], keepdims=1),
        helper.make_node('Sub', ['x', 'm'], ['c']),
        helper.make_node('Split', ['c'], ['s0', 's1'], axis=2, num_outputs=2),
        helper.make_node('Gelu', ['s0'], ['g'], approximate='tanh'),
        helper.make_node('Pad', ['g', 'pads', '', 'pad_axes'], ['p']),
        helper.make_node('Mul', ['s1', 's1'], ['q']),
    ]
    inits = [numpy_helper.from_array(np.array([2], np.int64), 'axes'),
             numpy_helper.from_array(np.array([1, 2], np.int64), 'pads'),
             numpy_helper.from_array(np.array([2], np.int64), 'pad_axes')]
    m = model(nodes, [vi('x', F32, [2, 3, 8])], [vi('p', F32, None), vi('q', F32, None)], inits)
    x = np.random.default_rng(1).standard_normal((2, 3, 8)).astype(np.float32)
    return m, [{'x': x}], 1e-4, 1e-5, None


def case_unsorted():
    """The nodes of y = Relu(x + b) * 2 - x in reverse order."""
    nodes = [
        helper.make_node('Sub', ['t', 'x'], ['y']),
        helper.make_node('Mul', ['r', 'two'], ['t']),
        helper.make_node('Relu', ['a'], ['r']),
        helper.make_node('Add', ['x', 'b'], ['a']),
    ]
    inits = [numpy_helper.from_array(np.linspace(-1, 1, 6).astype(np.float32), 'b'),
             numpy_helper.from_array(np.array(2, np.float32), 'two')]
    m = model(nodes, [vi('x', F32, [4, 6])], [vi('y', F32, [4, 6])], inits, opset=17, ir=8)
    x = np.random.default_rng(2).standard_normal((4, 6)).astype(np.float32)
    return m, [{'x': x}], 1e-5, 1e-6, None


def case_declared():
    """y declared [2, 5] where it is [2, 3, 5]; intermediate values declared with -1 and
    tf2onnx's 'unk__0' dimensions. kilnc warns naming 'y' and compiles the real shape."""
    nodes = [
        helper.make_node('Transpose', ['x'], ['t'], perm=[0, 2, 1]),
        helper.make_node('Softmax', ['t'], ['s'], axis=-1),
        helper.make_node('Transpose', ['s'], ['y'], perm=[0, 2, 1]),
    ]
    value_info = [vi('t', F32, ['unk__0', 5, 'unk__1']), vi('s', F32, [-1, -1, 3])]
    m = model(nodes, [vi('x', F32, [2, 3, 5])], [vi('y', F32, [2, 5])], opset=13, ir=7, value_info=value_info)
    x = np.random.default_rng(3).standard_normal((2, 3, 5)).astype(np.float32)

    def check(stderr):
        assert 'kilnc: warning:' in stderr and "'y'" in stderr, 'no warning naming y: %r' % stderr[-400:]
    return m, [{'x': x}], 1e-5, 1e-6, check


def case_run_time_sizes():
    """Pad's pads and Range's limit from int64 inputs, and x's free first dimension: no flag,
    one bundle, two runs whose sizes differ."""
    nodes = [
        helper.make_node('Pad', ['x', 'pads'], ['p'], mode='constant'),
        helper.make_node('Range', ['zero', 'n', 'one'], ['r']),
        helper.make_node('Cast', ['r'], ['rf'], to=F32),
        helper.make_node('ReduceSum', ['p'], ['ps'], keepdims=0),
        helper.make_node('Mul', ['rf', 'ps'], ['y']),
    ]
    inits = [numpy_helper.from_array(np.array(0, np.int64), 'zero'),
             numpy_helper.from_array(np.array(1, np.int64), 'one')]
    m = model(nodes, [vi('x', F32, ['rows', 4]), vi('pads', I64, [4]), vi('n', I64, [])],
              [vi('p', F32, None), vi('y', F32, None)], inits, opset=17, ir=8)
    rng = np.random.default_rng(4)
    feeds = [{'x': rng.standard_normal((3, 4)).astype(np.float32), 'pads': np.array([1, 0, 2, 3], np.int64),
              'n': np.array(5, np.int64)},
             {'x': rng.standard_normal((40, 4)).astype(np.float32), 'pads': np.array([0, 7, 1, 0], np.int64),
              'n': np.array(300, np.int64)}]
    return m, feeds, 1e-5, 1e-5, None


CASES = {
    'versions': case_versions,
    'unsorted': case_unsorted,
    'declared': case_declared,
    'run_time_sizes': case_run_time_sizes,
}


def run_case(args, name) -> bool:
    m, feed_sets, rtol, atol, check = CASES[name]()
    workdir = kiln_e2e.fresh_dir(os.path.join(args.workdir, name))
    path = os.path.join(workdir, name + '.onnx')
    onnx.save(m, path)
    files = []
    for k, feeds in enumerate(feed_sets):
        files.append({})
        for n, v in feeds.items():
            files[-1][n] = os.path.join(workdir, '%s_%d.npy' % (kiln_e2e.sanitize(n), k))
            np.save(files[-1][n], v)
    ok = kiln_e2e.check_dynamic_against_ort(args, path, os.path.join(workdir, 'run'), [], files, rtol, atol, check)
    kiln_e2e.log('%s: %s' % (name, 'PASS' if ok else 'FAIL'))
    return ok


def main() -> int:
    args, names = kiln_e2e.case_script_args(__doc__.split('\n')[0], CASES)
    t0 = time.monotonic()
    failed = [n for n in names if not run_case(args, n)]
    kiln_e2e.log('exporter_classes: %d of %d cases passed (%.1f s)%s'
                 % (len(names) - len(failed), len(names), time.monotonic() - t0,
                    ': FAIL ' + ', '.join(failed) if failed else ''))
    return 0 if not failed else 1


if __name__ == '__main__':
    kiln_e2e.run_script(main)
