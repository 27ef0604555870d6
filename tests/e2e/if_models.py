#!/usr/bin/python3
"""If nodes (issue 15). A condition known at compile time: kilnc replaces the If by the branch it
takes; one known only at run time: both branches are inlined and their kernels predicated on it
(compiler/import/inline_if.h). Against ONNX Runtime on seeded inputs (rtol 1e-4, atol 1e-5):

  shape_if     the condition is computed from the input's shape (Shape -> Gather -> Greater),
               as torch.jit-scripted code writes `if x.shape[1] > 3`; the else branch (taken)
               reads the outer graph's values, has initializers of its own, an absent
               optional input (Clip's min) and a value named like one the outer graph
               defines after it
  nested_if    a constant condition whose taken branch holds another If, itself on a
               constant computed inside the branch, reading a value of the outer branch
  runtime_if   the condition is a model input; the else branch holds a TopK whose k is an input
               too: run with k = 99 (past the row) while the then branch is taken, it must not
               run at all (its k would fail the run); then the else branch at k = 2 and k = 8
  data_if      the condition computed from the data (sum > 0), and in the then branch another
               run-time If (max > 1) reading the outer graph's weights; each of the three paths

  if_models.py --kilnc PATH --kiln PATH --ort-dir tests/ort --workdir DIR [--node node]
"""

import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True

import kiln_e2e  # noqa: E402

SHAPE = [1, 3, 8, 8]


def tensor(name, value):
    return numpy_helper.from_array(np.asarray(value), name)


def out(name, shape=None):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def model(nodes, inits, inputs, outputs, opset=13):
    g = helper.make_graph(nodes, 'if_model', inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid('', opset)], producer_name='if_models.py')
    onnx.checker.check_model(m)
    return m


def shape_if() -> onnx.ModelProto:
    rng = np.random.default_rng(15)
    # then: would be taken if x had more than 3 channels.
    then_g = helper.make_graph([helper.make_node('Sigmoid', ['x'], ['t_out'])], 'then', [], [out('t_out')])
    # else: reads the outer x and outer_bias, has an initializer of its own, and a local value
    # 'y' named like a value the outer graph defines after the If.
    else_g = helper.make_graph(
        [helper.make_node('Mul', ['x', 'w_local'], ['y']),
         helper.make_node('Clip', ['y', '', 'clip_hi'], ['y_clipped']),  # an absent optional input
         helper.make_node('Add', ['y_clipped', 'outer_bias'], ['e_out'])], 'else',
        [], [out('e_out')], [tensor('w_local', rng.standard_normal([1, 3, 1, 1]).astype(np.float32)),
                             tensor('clip_hi', np.array(1.5, np.float32))])
    nodes = [
        helper.make_node('Relu', ['data'], ['x']),
        helper.make_node('Shape', ['x'], ['s']),
        helper.make_node('Gather', ['s', 'one'], ['c'], axis=0),
        helper.make_node('Greater', ['c', 'three'], ['cond']),
        helper.make_node('If', ['cond'], ['chosen'], then_branch=then_g, else_branch=else_g, name='channels_if'),
        helper.make_node('Mul', ['chosen', 'w'], ['y']),
    ]
    inits = [tensor('one', np.array(1, np.int64)), tensor('three', np.array(3, np.int64)),
             tensor('w', np.array(0.5, np.float32)),
             tensor('outer_bias', rng.standard_normal([1, 3, 1, 1]).astype(np.float32))]
    return model(nodes, inits, [helper.make_tensor_value_info('data', TensorProto.FLOAT, SHAPE)], [out('y', SHAPE)])


def nested_if() -> onnx.ModelProto:
    inner_then = helper.make_graph([helper.make_node('Sigmoid', ['z'], ['it_out'])], 'inner_then', [],
                                   [out('it_out')])
    inner_else = helper.make_graph([helper.make_node('Neg', ['z'], ['ie_out'])], 'inner_else', [],
                                   [out('ie_out')])
    outer_then = helper.make_graph(
        [helper.make_node('Tanh', ['data'], ['z']),
         helper.make_node('Constant', [], ['inner_cond'], value=tensor('v', np.array(True))),
         helper.make_node('If', ['inner_cond'], ['ot_out'], then_branch=inner_then, else_branch=inner_else)],
        'outer_then', [], [out('ot_out')])
    outer_else = helper.make_graph([helper.make_node('Identity', ['data'], ['oe_out'])], 'outer_else', [],
                                   [out('oe_out')])
    nodes = [helper.make_node('If', ['top_cond'], ['r'], then_branch=outer_then, else_branch=outer_else),
             helper.make_node('Add', ['r', 'data'], ['y'])]
    return model(nodes, [tensor('top_cond', np.array(True))],
                 [helper.make_tensor_value_info('data', TensorProto.FLOAT, SHAPE)], [out('y', SHAPE)])


def runtime_if() -> onnx.ModelProto:
    then_g = helper.make_graph([helper.make_node('Relu', ['data'], ['t'])], 'then', [], [out('t')])
    else_g = helper.make_graph([helper.make_node('TopK', ['data', 'k'], ['top', 'idx'], axis=-1),
                                helper.make_node('ReduceSum', ['top', 'last'], ['s'], keepdims=1),
                                helper.make_node('Sub', ['data', 's'], ['e'])], 'else', [], [out('e')])
    nodes = [helper.make_node('If', ['flag'], ['y'], then_branch=then_g, else_branch=else_g, name='runtime_if')]
    return model(nodes, [tensor('last', np.array([-1], np.int64))],
                 [helper.make_tensor_value_info('data', TensorProto.FLOAT, SHAPE),
                  helper.make_tensor_value_info('flag', TensorProto.BOOL, []),
                  helper.make_tensor_value_info('k', TensorProto.INT64, [1])], [out('y', SHAPE)])


def data_if() -> onnx.ModelProto:
    def vi(name):
        return out(name, SHAPE)
    inner_then = helper.make_graph([helper.make_node('Mul', ['r', 'w'], ['it'])], 'inner_then', [], [vi('it')])
    inner_else = helper.make_graph([helper.make_node('Sub', ['r', 'w'], ['ie'])], 'inner_else', [], [vi('ie')])
    then_g = helper.make_graph([helper.make_node('Relu', ['data'], ['r']),
                                helper.make_node('ReduceMax', ['data'], ['mx'], keepdims=0),
                                helper.make_node('Greater', ['mx', 'one'], ['c2']),
                                helper.make_node('If', ['c2'], ['t'], then_branch=inner_then, else_branch=inner_else)],
                               'then', [], [vi('t')])
    else_g = helper.make_graph([helper.make_node('Neg', ['data'], ['nx']), helper.make_node('Add', ['nx', 'w'], ['e'])],
                               'else', [], [vi('e')])
    nodes = [helper.make_node('ReduceSum', ['data'], ['s'], keepdims=0), helper.make_node('Greater', ['s', 'zero'], ['c']),
             helper.make_node('If', ['c'], ['y'], then_branch=then_g, else_branch=else_g, name='data_if'),
             helper.make_node('Add', ['y', 'one'], ['z'])]
    inits = [tensor('zero', np.float32(0)), tensor('one', np.float32(1)),
             tensor('w', np.random.default_rng(0).standard_normal(SHAPE).astype(np.float32))]
    return model(nodes, inits, [helper.make_tensor_value_info('data', TensorProto.FLOAT, SHAPE)], [out('z', SHAPE)])


def main() -> int:
    args = kiln_e2e.script_args(__doc__.split('\n')[0])
    work = kiln_e2e.fresh_dir(args.workdir)
    ok = True
    for name, make in (('shape_if', shape_if), ('nested_if', nested_if)):
        path = os.path.join(work, name + '.onnx')
        onnx.save(make(), path)
        f = os.path.join(work, name + '_input.npy')
        np.save(f, np.random.default_rng(1).standard_normal(SHAPE).astype(np.float32))
        one = kiln_e2e.check_against_ort(args, path, os.path.join(work, name), ['data=' + f], 1e-4, 1e-5)
        kiln_e2e.log('%s: %s' % (name, 'PASS' if one else 'FAIL'))
        ok &= one
    rng = np.random.default_rng(2)

    def save(name, a):
        f = os.path.join(work, name + '.npy')
        np.save(f, a)
        return f
    data = [rng.standard_normal(SHAPE).astype(np.float32) for _ in range(3)]
    runtime_feeds = [{'data': save('rt_data%d' % i, data[i]), 'flag': save('rt_flag%d' % i, np.array(f)),
                      'k': save('rt_k%d' % i, np.array([k], np.int64))}
                     for i, (f, k) in enumerate(((True, 99), (False, 2), (False, 8)))]
    data_feeds = [{'data': save('d_data%d' % i, a.astype(np.float32))}
                  for i, a in enumerate((np.abs(data[0]) * 3, np.abs(data[1]) * 0.1, -np.abs(data[2])))]
    for name, make, feeds in (('runtime_if', runtime_if, runtime_feeds), ('data_if', data_if, data_feeds)):
        path = os.path.join(work, name + '.onnx')
        onnx.save(make(), path)
        one = kiln_e2e.check_dynamic_against_ort(args, path, os.path.join(work, name), [], feeds, 1e-4, 1e-5)
        kiln_e2e.log('%s (one bundle, every path): %s' % (name, 'PASS' if one else 'FAIL'))
        ok &= one
    kiln_e2e.log('if_models: %s' % ('PASS' if ok else 'FAIL'))
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
