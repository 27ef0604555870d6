#!/usr/bin/python3
"""Classic model-zoo classifiers in opsets 7, 8 and 9, as the converters of that time wrote
them, against ONNX Runtime on seeded inputs (rtol 1e-3, atol 1e-4; issue 15, "old opsets"):

  opset 7  Conv -> BatchNormalization (spatial=1) -> Relu -> MaxPool -> Conv -> Relu ->
           Dropout (ratio, with its mask output) -> GlobalAveragePool ->
           Reshape to [N, -1] by a shape computed at run time (Shape -> Gather ->
           Unsqueeze -> Concat) -> Gemm (transB) -> Softmax
  opset 8  Upsample (scales attribute, nearest) -> Conv -> Max and Sum (variadic) ->
           MaxPool (storage_order) -> Flatten -> Gemm -> Dropout (mask) -> Softmax
  opset 9  Conv whose bias is built at run time (ConstantOfShape + Add), BatchNormalization,
           Upsample (scales input), MaxPool, Dropout (mask), Shape -> Slice (attributes) ->
           Concat -> Reshape,
           MatMul + Add, Sigmoid

  classic_models.py --kilnc PATH --kiln PATH --ort-dir tests/ort --workdir DIR [--node node]

The models are made here, from seeded weights; nothing is downloaded.
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True

import kiln_e2e  # noqa: E402

INPUT = 'data'
SHAPE = [1, 3, 32, 32]


class Graph:
    """Nodes and seeded initializers of one model."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits = [], []

    def weight(self, name: str, shape, scale: float = 0.2, positive: bool = False) -> str:
        w = self.rng.standard_normal(shape).astype(np.float32) * scale
        if positive:
            w = np.abs(w) + 0.5
        self.inits.append(numpy_helper.from_array(w, name))
        return name

    def const(self, name: str, value) -> str:
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(self, op: str, inputs, outputs, **attrs):
        self.nodes.append(helper.make_node(op, inputs, outputs, name=outputs[0] + '_node', **attrs))
        return outputs[0]

    def batchnorm(self, x: str, c: int, name: str, **attrs) -> str:
        return self.node('BatchNormalization', [x, self.weight(name + '_s', [c], positive=True),
                                                self.weight(name + '_b', [c]), self.weight(name + '_m', [c]),
                                                self.weight(name + '_v', [c], positive=True)], [name],
                         epsilon=1e-5, **attrs)

    def model(self, opset: int, output: str, out_shape) -> onnx.ModelProto:
        g = helper.make_graph(self.nodes, 'classic_opset%d' % opset,
                              [helper.make_tensor_value_info(INPUT, TensorProto.FLOAT, SHAPE)],
                              [helper.make_tensor_value_info(output, TensorProto.FLOAT, out_shape)], self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid('', opset)], producer_name='classic_models.py')
        m.ir_version = 3 if opset < 8 else 4  # the IR versions of their time
        if m.ir_version < 4:  # IR 3 lists every initializer as a graph input too
            m.graph.input.extend(helper.make_tensor_value_info(t.name, t.data_type, t.dims) for t in self.inits)
        onnx.checker.check_model(m)
        return m


def flatten_by_shape(g: Graph, x: str, name: str) -> str:
    """Reshape x to [N, -1] with the shape computed at run time, as exporters wrote Flatten."""
    shape = g.node('Shape', [x], [name + '_shape'])
    n = g.node('Gather', [shape, g.const(name + '_zero', np.array(0, np.int64))], [name + '_n'], axis=0)
    n1 = g.node('Unsqueeze', [n], [name + '_n1'], axes=[0])
    target = g.node('Concat', [n1, g.const(name + '_rest', np.array([-1], np.int64))], [name + '_target'], axis=0)
    return g.node('Reshape', [x, target], [name])


def opset7() -> onnx.ModelProto:
    g = Graph(7)
    x = g.node('Conv', [INPUT, g.weight('w1', [8, 3, 3, 3]), g.weight('b1', [8])], ['c1'], pads=[1, 1, 1, 1])
    x = g.node('Relu', [g.batchnorm(x, 8, 'bn1', spatial=1, momentum=0.9)], ['r1'])
    x = g.node('MaxPool', [x], ['p1'], kernel_shape=[2, 2], strides=[2, 2])
    x = g.node('Relu', [g.node('Conv', [x, g.weight('w2', [16, 8, 3, 3]), g.weight('b2', [16])], ['c2'],
                               pads=[1, 1, 1, 1])], ['r2'])
    x = g.node('Dropout', [x], ['d1', 'd1_mask'], ratio=0.5)
    x = flatten_by_shape(g, g.node('GlobalAveragePool', [x], ['gap']), 'flat')
    x = g.node('Gemm', [x, g.weight('fc', [10, 16]), g.weight('fcb', [10])], ['fc_out'], transB=1)
    return g.model(7, g.node('Softmax', [x], ['prob']), [1, 10])


def opset8() -> onnx.ModelProto:
    g = Graph(8)
    x = g.node('Upsample', [INPUT], ['up'], scales=[1.0, 1.0, 2.0, 2.0], mode='nearest')
    a = g.node('Conv', [x, g.weight('w1', [8, 3, 3, 3]), g.weight('b1', [8])], ['c1'], pads=[1, 1, 1, 1],
               strides=[2, 2])
    b = g.node('Conv', [x, g.weight('w2', [8, 3, 3, 3]), g.weight('b2', [8])], ['c2'], pads=[1, 1, 1, 1],
               strides=[2, 2])
    x = g.node('Sum', [g.node('Max', [a, b, g.weight('floor', [1, 8, 1, 1])], ['mx']), a, b], ['sum'])
    x = g.node('MaxPool', [x], ['p1'], kernel_shape=[4, 4], strides=[4, 4], storage_order=0)
    x = g.node('Flatten', [x], ['flat'], axis=1)
    x = g.node('Gemm', [x, g.weight('fc', [8 * 8 * 8, 10], scale=0.05), g.weight('fcb', [10])], ['fc_out'])
    x = g.node('Dropout', [x], ['d1', 'd1_mask'], ratio=0.3)
    return g.model(8, g.node('Softmax', [x], ['prob']), [1, 10])


def opset9() -> onnx.ModelProto:
    g = Graph(9)
    # The bias of the first convolution is built at run time: 0.1 everywhere, plus a learned part.
    ones = g.node('ConstantOfShape', [g.const('bias_shape', np.array([8, 1, 1], np.int64))], ['bias_fill'],
                  value=numpy_helper.from_array(np.array([0.1], np.float32)))
    bias = g.node('Add', [ones, g.weight('bias_learned', [8, 1, 1])], ['bias'])
    x = g.node('Conv', [INPUT, g.weight('w1', [8, 3, 3, 3])], ['c1'], pads=[1, 1, 1, 1], strides=[2, 2])
    x = g.node('Relu', [g.batchnorm(g.node('Add', [x, bias], ['c1b']), 8, 'bn1')], ['r1'])
    x = g.node('Upsample', [x, g.const('scales', np.array([1, 1, 2, 2], np.float32))], ['up'], mode='nearest')
    x = g.node('MaxPool', [x], ['down'], kernel_shape=[4, 4], strides=[4, 4])
    x = g.node('Dropout', [x], ['d1', 'd1_mask'], ratio=0.2)
    shape = g.node('Shape', [x], ['shape'])
    batch = g.node('Slice', [shape], ['batch'], starts=[0], ends=[1], axes=[0])  # opset 9: attributes
    target = g.node('Concat', [batch, g.const('rest', np.array([-1], np.int64))], ['target'], axis=0)
    x = g.node('Reshape', [x, target], ['flat'])
    x = g.node('Add', [g.node('MatMul', [x, g.weight('fc', [8 * 8 * 8, 10], scale=0.05)], ['mm']),
                       g.weight('fcb', [10])], ['fc_out'])
    return g.model(9, g.node('Sigmoid', [x], ['prob']), [1, 10])


MODELS = {'opset7': opset7, 'opset8': opset8, 'opset9': opset9}


def main() -> int:
    args = kiln_e2e.script_args(__doc__.split('\n')[0],
                                lambda ap: ap.add_argument('--models', default=','.join(MODELS)))
    work = kiln_e2e.fresh_dir(args.workdir)
    ok = True
    for name in args.models.split(','):
        path = os.path.join(work, 'classic_%s.onnx' % name)
        onnx.save(MODELS[name](), path)
        for seed in range(2):
            f = os.path.join(work, '%s_input_%d.npy' % (name, seed))
            np.save(f, np.random.default_rng(seed).standard_normal(SHAPE).astype(np.float32))
            one = kiln_e2e.check_against_ort(args, path, os.path.join(work, '%s_run_%d' % (name, seed)),
                                             ['%s=%s' % (INPUT, f)], 1e-3, 1e-4)
            kiln_e2e.log('classic %s, input %d: %s' % (name, seed, 'PASS' if one else 'FAIL'))
            ok &= one
    kiln_e2e.log('classic_models: %s' % ('PASS' if ok else 'FAIL'))
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
