#!/usr/bin/python3
"""ONNX's Gradient operator (issue 19; compiler/import/gradient.h) against PyTorch's autograd.

One seeded model, s = Sigmoid(Tanh(MatMul(Relu((a + b) * a), W)) / c) with b [4] and c [1, 5]
broadcast, differentiated with respect to a, b, W and c, plus an input z that s does not depend
on (zeros) and, as a second Gradient node, dy/da of y = a - Neg(a) * Exp(a). It is built at
opset 12 (ReduceSum's axes an attribute) and 13 (an input); kiln's outputs must match torch's
gradients of the sums (rtol 1e-4, atol 1e-5). Then a node kilnc cannot differentiate is a user
error naming it.

  gradient_models.py --kilnc PATH --kiln PATH --ort-dir tests/ort --workdir DIR [--node node]
"""

import os
import subprocess
import sys

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

sys.dont_write_bytecode = True

import kiln_e2e  # noqa: E402

SHAPES = {'a': [3, 4], 'b': [4], 'W': [4, 5], 'c': [1, 5], 'z': [2]}


def build(opset: int, nodes=None) -> onnx.ModelProto:
    value = lambda name, shape: helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)
    nodes = nodes or [
        helper.make_node('Add', ['a', 'b'], ['ab']),
        helper.make_node('Mul', ['ab', 'a'], ['m']),
        helper.make_node('Relu', ['m'], ['r']),
        helper.make_node('MatMul', ['r', 'W'], ['p']),
        helper.make_node('Tanh', ['p'], ['t']),
        helper.make_node('Div', ['t', 'c'], ['q']),
        helper.make_node('Sigmoid', ['q'], ['s']),
        helper.make_node('Gradient', ['a', 'b', 'W', 'c', 'z'], ['da', 'db', 'dW', 'dc', 'dz'], name='grad_s',
                         domain='ai.onnx.preview.training', xs=['a', 'b', 'W', 'c', 'z'], y='s'),
        helper.make_node('Neg', ['a'], ['na']),
        helper.make_node('Exp', ['a'], ['ea']),
        helper.make_node('Mul', ['na', 'ea'], ['ne']),
        helper.make_node('Sub', ['a', 'ne'], ['y']),
        helper.make_node('Gradient', ['a'], ['dy_da'], name='grad_y', domain='ai.onnx.preview.training',
                         xs=['a'], y='y'),
    ]
    outputs = ['s', 'da', 'db', 'dW', 'dc', 'dz', 'y', 'dy_da']
    shapes = {'s': [3, 5], 'da': SHAPES['a'], 'db': SHAPES['b'], 'dW': SHAPES['W'], 'dc': SHAPES['c'],
              'dz': SHAPES['z'], 'y': SHAPES['a'], 'dy_da': SHAPES['a']}
    graph = helper.make_graph(nodes, 'gradients', [value(n, s) for n, s in SHAPES.items()],
                              [value(n, shapes[n]) for n in outputs if any(n in x.output for x in nodes)])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid('', opset),
                                                 helper.make_opsetid('ai.onnx.preview.training', 1)])
    onnx.checker.check_model(m)
    return m


def torch_reference(feeds):
    t = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in feeds.items()}
    s = torch.sigmoid(torch.tanh(torch.relu((t['a'] + t['b']) * t['a']) @ t['W']) / t['c'])
    s.sum().backward()
    grads = {'s': s, 'da': t['a'].grad, 'db': t['b'].grad, 'dW': t['W'].grad, 'dc': t['c'].grad,
             'dz': torch.zeros(SHAPES['z'], dtype=torch.float64)}
    a = torch.tensor(feeds['a'], dtype=torch.float64, requires_grad=True)
    y = a - (-a) * torch.exp(a)
    y.sum().backward()
    grads.update({'y': y, 'dy_da': a.grad})
    return {k: v.detach().numpy().astype(np.float32) for k, v in grads.items()}


def main() -> int:
    args = kiln_e2e.script_args(__doc__.split('\n')[0])
    work = kiln_e2e.fresh_dir(args.workdir)
    rng = np.random.default_rng(19)
    feeds = {n: rng.standard_normal(s).astype(np.float32) for n, s in SHAPES.items()}
    feeds['c'] = (np.abs(feeds['c']) + 0.5).astype(np.float32)  # away from 0
    want = torch_reference(feeds)
    inputs = []
    for n, a in feeds.items():
        path = os.path.join(work, n + '.npy')
        np.save(path, a)
        inputs += ['--input', '%s=%s' % (n, path)]
    ok = True
    for opset in (12, 13):
        model, bundle = os.path.join(work, 'grad%d.onnx' % opset), os.path.join(work, 'grad%d.kiln' % opset)
        out = os.path.join(work, 'out%d' % opset)
        onnx.save(build(opset), model)
        proc = subprocess.run([args.kilnc, model, '-o', bundle], capture_output=True, text=True)
        if proc.returncode == 0:
            proc = subprocess.run([args.kiln, 'run', bundle, '--output-dir', out] + inputs, capture_output=True, text=True)
        if proc.returncode != 0:
            kiln_e2e.log('opset %d: FAIL: %s' % (opset, proc.stderr.strip()))
            ok = False
            continue
        dz = np.load(os.path.join(out, 'dz.npy'))
        zeros = dz.shape == tuple(SHAPES['z']) and not dz.any()
        kiln_e2e.log('opset %d dz (s does not depend on z): %s' % (opset, 'PASS' if zeros else 'FAIL: %r' % dz))
        ok &= zeros
        for name, ref in want.items():
            if name == 'dz':
                continue
            ok &= kiln_e2e.compare('opset %d %s' % (opset, name), np.load(os.path.join(out, name + '.npy')), ref,
                                   1e-4, 1e-5)
    # y computed after the Gradient node (its inputs are only the xs): dy/da = 2a.
    late = build(13, [helper.make_node('Gradient', ['a'], ['dy_da'], name='early', domain='ai.onnx.preview.training',
                                       xs=['a'], y='y'),
                      helper.make_node('Mul', ['a', 'a'], ['y'])])
    model, bundle, out = (os.path.join(work, n) for n in ('late.onnx', 'late.kiln', 'late_out'))
    onnx.save(late, model)
    proc = subprocess.run([args.kilnc, model, '-o', bundle], capture_output=True, text=True)
    if proc.returncode == 0:
        proc = subprocess.run([args.kiln, 'run', bundle, '--output-dir', out] + inputs, capture_output=True, text=True)
    if proc.returncode != 0:
        kiln_e2e.log('y after the Gradient node: FAIL: %s' % proc.stderr.strip())
        ok = False
    else:
        ok &= kiln_e2e.compare('y after the Gradient node: dy_da', np.load(os.path.join(out, 'dy_da.npy')),
                               2 * feeds['a'], 1e-6, 1e-6)
    # A node with several outputs on the path is refused, not given zeros.
    value = lambda name, shape: helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)
    split = helper.make_model(helper.make_graph(
        [helper.make_node('Split', ['a'], ['s0', 's1'], axis=1, name='halves'),
         helper.make_node('Mul', ['s1', 's1'], ['y']),
         helper.make_node('Gradient', ['a'], ['dy_da'], name='g2', domain='ai.onnx.preview.training', xs=['a'], y='y')],
        'split', [value('a', SHAPES['a'])], [value('y', [3, 2]), value('dy_da', SHAPES['a'])]),
        opset_imports=[helper.make_opsetid('', 13), helper.make_opsetid('ai.onnx.preview.training', 1)])
    path = os.path.join(work, 'split.onnx')
    onnx.save(split, path)
    proc = subprocess.run([args.kilnc, path, '-o', os.path.join(work, 'split.kiln')], capture_output=True, text=True)
    refused = proc.returncode == 1 and "Split node 'halves'" in proc.stderr
    kiln_e2e.log('a node with two outputs on the path: %s (%s)' % ('PASS' if refused else 'FAIL', proc.stderr.strip()))
    ok &= refused
    bad = build(13, [helper.make_node('Sin', ['a'], ['y'], name='sine'),
                     helper.make_node('Gradient', ['a'], ['dy_da'], name='g', domain='ai.onnx.preview.training',
                                      xs=['a'], y='y')])
    path = os.path.join(work, 'bad.onnx')
    onnx.save(bad, path)
    proc = subprocess.run([args.kilnc, path, '-o', os.path.join(work, 'bad.kiln')], capture_output=True, text=True)
    refused = proc.returncode == 1 and "Gradient node 'g'" in proc.stderr and "Sin node 'sine'" in proc.stderr
    kiln_e2e.log('a node kilnc cannot differentiate: %s (%s)' % ('PASS' if refused else 'FAIL', proc.stderr.strip()))
    ok &= refused
    kiln_e2e.log('gradient_models: %s' % ('PASS' if ok else 'FAIL'))
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
