#!/usr/bin/python3
"""If nodes whose condition is known at compile time (issue 15): kilnc replaces each by the branch
it takes (compiler/import/inline_if.h). Against ONNX Runtime on seeded inputs (rtol 1e-4,
atol 1e-5), and an If whose condition is a model input must be refused by name:

  shape_if     the condition is computed from the input's shape (Shape -> Gather -> Greater),
               as torch.jit-scripted code writes `if x.shape[1] > 3`; the else branch (taken)
               reads the outer graph's values, has initializers of its own, an absent
               optional input (Clip's min) and a value named like one the outer graph
               defines after it
  nested_if    a constant condition whose taken branch holds another If, itself on a
               constant computed inside the branch, reading a value of the outer branch
  runtime_if   the condition is a model input: kilnc refuses it, naming the node

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
    else_g = helper.make_graph([helper.make_node('Neg', ['data'], ['e'])], 'else', [], [out('e')])
    nodes = [helper.make_node('If', ['flag'], ['y'], then_branch=then_g, else_branch=else_g, name='runtime_if')]
    return model(nodes, [], [helper.make_tensor_value_info('data', TensorProto.FLOAT, SHAPE),
                             helper.make_tensor_value_info('flag', TensorProto.BOOL, [])], [out('y', SHAPE)])


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
    path = os.path.join(work, 'runtime_if.onnx')
    onnx.save(runtime_if(), path)
    proc = subprocess.run([args.kilnc, path, '-o', os.path.join(work, 'runtime_if.kiln')],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    err = proc.stderr.decode('utf-8', 'replace')
    one = proc.returncode == 1 and "'runtime_if'" in err and 'If' in err
    kiln_e2e.log('runtime_if: kilnc exit %d: %s -> %s' % (proc.returncode, err.strip(), 'PASS' if one else 'FAIL'))
    ok &= one
    kiln_e2e.log('if_models: %s' % ('PASS' if ok else 'FAIL'))
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
