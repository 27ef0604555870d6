#!/usr/bin/python3
"""Dimensions known only at run time (issue 15, docs/dynamic-shapes.md): seeded models, each
compiled ONCE with its dimensions as ranges and checked at several shapes against ONNX Runtime
(rtol 1e-4, atol 1e-5), then the errors a user meets:

  mlp          MatMul, Add, Relu, Softmax, ReduceMean over rows n = 1..64 (a named dimension
               bounded with --dim n=1..64)
  cnn          Conv (padded, stride 2), MaxPool (ceil_mode), Resize (x2 nearest), Concat over
               channels, AveragePool, GlobalAveragePool, Gemm, on H, W = 16..96 (odd sizes too)
  shape_ops    shapes computed at run time: Shape -> Gather -> Concat -> Reshape (heads split
               and merged), Range from a Shape (positions), Expand, Slice to a computed end,
               Split, Transpose, on a sequence L = 2..40
  data_shapes  sizes only the kernels know (data symbols): NonZero of x > 0 transposed; the
               positive elements picked by Gather at NonZero's indices and summed; the rows
               Compress keeps (row max > 0.5), scaled and summed; TopK along the rows with k
               an input (0..6); a Slice with starts, ends and steps inputs (negative, past
               the end, backwards); on rows n = 1..32, with shapes where nothing is
               selected and where everything is; a k past the row is refused
  selection    NonMaxSuppression (corner boxes, two classes, max 3 per class, IoU 0.5, score
               0.2) over nb = 1..48 boxes; Unique of a vector (sorted, with indices, inverse
               indices and counts) and of rows (axis 0, first occurrences), m = 1..40
  input_values sizes decided by integer inputs' values read at run time (kilnc --input-value):
               Pad with pads in 0..5 (constant and reflect, within ONNX Runtime's reflect limit), a HannWindow and a Range of
               length `size` in 1..32, its window scaled by Range's float positions, and an
               STFT (Hann window of 16) with frame_step in 1..16, and one with a frame_length in 1..24;
  mel_weights  MelWeightMatrix with its sizes in ranges and its rate and edges read at run time
  shape_outputs  shapes computed from run-time dimensions that are model outputs through
               forwarding operators (Identity of a float Cast of Shape, Reshape of a
               product): computed, not aliased to storage they do not have
  run_time_axes  ReduceSum with keepdims=1 and keepdims=0 over two axes read at run
               time (negative ones too): which dimensions are 1, and the output's, are data
               symbols; repeated axes are refused
  run_time_pad_col2im  Pad with its pads and axes (negative ones too) and Col2Im with its
               image_shape and block_shape read at run time, without flags: the outputs are
               sized per run
  ragged_rnn   sequence_lens read at run time: bidirectional LSTM with peepholes, reverse GRU
               and RNN over T = 6, batch 3, each batch its own length (1..6)
  run_time_rnn the sequence length t = 1..16 and batch b = 1..4 known only at run time (the
               scans' trip count read then): bidirectional LSTM with peepholes and initial
               states, a reverse GRU, an RNN with sequence_lens [b] (ONNX Runtime has no layout 1)
  long_means   ReduceMean over H, W = 16..160 of rows whose running sum grows to ~1.2e6 and cancels
               (+120 then -120, in steps of 1/32): accumulated in 16 lanes like a static row (one float32
               accumulator over a row sized per run was off by 4-6x the tolerance)
  errors       kiln run refuses, naming the input, the dimension and the range: a shape
               outside the range; two inputs that share a dimension given different sizes;
               a model condition on the dimensions (x [n] + y [5] needs n = 5); kilnc refuses
               bad ranges, `?` on an unnamed dimension, an unknown --dim, and Vulkan targets

  dynamic_models.py --kilnc PATH --kiln PATH --ort-dir tests/ort --workdir DIR [--node node]
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

RTOL, ATOL = 1e-4, 1e-5
F = TensorProto.FLOAT


def tensor(name, value):
    return numpy_helper.from_array(np.asarray(value), name)


def model(nodes, inits, inputs, outputs, opset=13):
    g = helper.make_graph(nodes, 'dynamic_model', inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid('', opset)], producer_name='dynamic_models.py')
    # The checker of the onnx this script runs with (Debian's 1.12) knows opsets up to 17;
    # newer models are checked by kilnc and ONNX Runtime.
    if opset <= onnx.defs.onnx_opset_version():
        onnx.checker.check_model(m)
    return m


def mlp(rng) -> onnx.ModelProto:
    nodes = [helper.make_node('MatMul', ['x', 'w1'], ['h']), helper.make_node('Add', ['h', 'b1'], ['hb']),
             helper.make_node('Relu', ['hb'], ['r']), helper.make_node('MatMul', ['r', 'w2'], ['z']),
             helper.make_node('Softmax', ['z'], ['y'], axis=-1),
             helper.make_node('ReduceMean', ['z'], ['m'], axes=[0], keepdims=0)]
    inits = [tensor('w1', rng.standard_normal((24, 48)).astype(np.float32) * 0.3),
             tensor('b1', rng.standard_normal(48).astype(np.float32)),
             tensor('w2', rng.standard_normal((48, 10)).astype(np.float32) * 0.3)]
    return model(nodes, inits, [helper.make_tensor_value_info('x', F, ['n', 24])],
                 [helper.make_tensor_value_info('y', F, ['n', 10]), helper.make_tensor_value_info('m', F, [10])])


def cnn(rng) -> onnx.ModelProto:
    def w(name, *shape):
        return tensor(name, (rng.standard_normal(shape) * 0.2).astype(np.float32))

    nodes = [
        helper.make_node('Conv', ['x', 'c1w', 'c1b'], ['c1'], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node('Relu', ['c1'], ['r1']),
        helper.make_node('MaxPool', ['r1'], ['p1'], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
        helper.make_node('Resize', ['p1', '', 'scales'], ['up'], mode='nearest',
                         coordinate_transformation_mode='asymmetric', nearest_mode='floor'),
        helper.make_node('Conv', ['r1', 'c2w'], ['c2'], pads=[0, 0, 0, 0]),
        helper.make_node('Shape', ['up'], ['up_shape']),
        helper.make_node('Slice', ['up_shape', 'two', 'four'], ['up_hw']),
        helper.make_node('Slice', ['c2', 'zeros', 'up_hw', 'axes23'], ['c2s']),
        helper.make_node('Concat', ['up', 'c2s'], ['cat'], axis=1),
        helper.make_node('AveragePool', ['cat'], ['ap'], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node('Conv', ['ap', 'c3w', 'c3b'], ['c3'], pads=[2, 2, 2, 2], dilations=[2, 2]),
        helper.make_node('GlobalAveragePool', ['c3'], ['g']),
        helper.make_node('Flatten', ['g'], ['gf']),
        helper.make_node('Gemm', ['gf', 'fw', 'fb'], ['logits'], transB=1),
    ]
    inits = [w('c1w', 16, 3, 3, 3), w('c1b', 16), w('c2w', 8, 16, 1, 1), w('c3w', 32, 24, 3, 3), w('c3b', 32),
             w('fw', 5, 32), w('fb', 5), tensor('scales', np.array([1, 1, 2, 2], np.float32)),
             tensor('zeros', np.array([0, 0], np.int64)), tensor('axes23', np.array([2, 3], np.int64)),
             tensor('two', np.array([2], np.int64)), tensor('four', np.array([4], np.int64))]
    return model(nodes, inits, [helper.make_tensor_value_info('x', F, [1, 3, 'H', 'W'])],
                 [helper.make_tensor_value_info('logits', F, [1, 5]), helper.make_tensor_value_info('c3', F, [1, 32, 'h3', 'w3'])])


def shape_ops(rng) -> onnx.ModelProto:
    d, heads = 16, 4
    i64 = lambda name, v: tensor(name, np.array(v, np.int64))  # noqa: E731
    nodes = [
        helper.make_node('Shape', ['x'], ['xs']),
        helper.make_node('Gather', ['xs', 'one'], ['L'], axis=0),                 # L (a scalar)
        helper.make_node('Unsqueeze', ['L', 'zero_ax'], ['L1']),                  # [L]
        helper.make_node('Concat', ['batch', 'L1', 'heads', 'hd'], ['split_shape'], axis=0),
        helper.make_node('MatMul', ['x', 'wq'], ['q']),
        helper.make_node('Reshape', ['q', 'split_shape'], ['qh']),                # [1, L, 4, 4]
        helper.make_node('Transpose', ['qh'], ['qt'], perm=[0, 2, 1, 3]),          # [1, 4, L, 4]
        helper.make_node('Transpose', ['qt'], ['qk'], perm=[0, 1, 3, 2]),
        helper.make_node('MatMul', ['qt', 'qk'], ['scores']),                     # [1, 4, L, L]
        helper.make_node('Softmax', ['scores'], ['att'], axis=-1),
        helper.make_node('MatMul', ['att', 'qt'], ['ctx']),
        helper.make_node('Transpose', ['ctx'], ['ct'], perm=[0, 2, 1, 3]),
        helper.make_node('Concat', ['batch', 'L1', 'dd'], ['merge_shape'], axis=0),
        helper.make_node('Reshape', ['ct', 'merge_shape'], ['merged']),           # [1, L, 16]
        helper.make_node('Range', ['start', 'L', 'step'], ['pos']),               # [L]
        helper.make_node('Gather', ['pe', 'pos'], ['pe_l'], axis=0),              # [L, 16]
        helper.make_node('Add', ['merged', 'pe_l'], ['y']),
        helper.make_node('Sub', ['L', 'one'], ['Lm1']),
        helper.make_node('Unsqueeze', ['Lm1', 'zero_ax'], ['Lm1v']),
        helper.make_node('Slice', ['y', 'zero1', 'Lm1v', 'one_ax'], ['head']),   # [1, L - 1, 16]
        helper.make_node('Split', ['head', 'split'], ['left', 'right'], axis=2),
        helper.make_node('Concat', ['batch', 'L1', 'dd'], ['exp_shape'], axis=0),
        helper.make_node('Expand', ['bias', 'exp_shape'], ['bias_l']),            # [1, L, 16]
        helper.make_node('Mul', ['y', 'bias_l'], ['yb']),
    ]
    inits = [i64('one', 1), i64('zero_ax', [0]), i64('one_ax', [1]), i64('batch', [1]), i64('heads', [heads]),
             i64('hd', [d // heads]), i64('dd', [d]), i64('start', 0), i64('step', 1), i64('zero1', [0]),
             i64('split', [6, 10]),
             tensor('wq', (rng.standard_normal((d, d)) * 0.3).astype(np.float32)),
             tensor('pe', rng.standard_normal((64, d)).astype(np.float32)),
             tensor('bias', rng.standard_normal((1, 1, d)).astype(np.float32))]
    return model(nodes, inits, [helper.make_tensor_value_info('x', F, [1, 'L', d])],
                 [helper.make_tensor_value_info('yb', F, [1, 'L', d]), helper.make_tensor_value_info('left', F, [1, 'Lm', 6]),
                  helper.make_tensor_value_info('right', F, [1, 'Lm', 10])])


def data_shapes(rng) -> onnx.ModelProto:
    I64 = TensorProto.INT64
    nodes = [
        helper.make_node('Greater', ['x', 'zero'], ['pos']),
        helper.make_node('NonZero', ['pos'], ['nz']),
        helper.make_node('Transpose', ['nz'], ['coords'], perm=[1, 0]),
        helper.make_node('Reshape', ['x', 'flat'], ['xf']),
        helper.make_node('Greater', ['xf', 'zero'], ['posf']),
        helper.make_node('NonZero', ['posf'], ['nzf']),
        helper.make_node('Squeeze', ['nzf', 'axis0'], ['idx']),
        helper.make_node('Gather', ['xf', 'idx'], ['vals'], axis=0),
        helper.make_node('ReduceSum', ['vals'], ['vsum'], keepdims=0),
        helper.make_node('Add', ['vsum', 'two'], ['total']),  # non-zero when nothing is selected
        helper.make_node('ReduceMax', ['x'], ['rowmax'], axes=[1], keepdims=0),
        helper.make_node('Greater', ['rowmax', 'half'], ['keep']),
        helper.make_node('Compress', ['x', 'keep'], ['rows'], axis=0),
        helper.make_node('Mul', ['rows', 'two'], ['rows2']),
        helper.make_node('ReduceSum', ['rows2', 'axis0'], ['csum'], keepdims=0),
        helper.make_node('Add', ['csum', 'two'], ['colsum']),
        helper.make_node('TopK', ['x', 'k'], ['topv', 'topi'], axis=1),
        helper.make_node('Slice', ['x', 'st', 'en', 'axes01', 'sp'], ['sl']),
        helper.make_node('Mul', ['sl', 'two'], ['sl2']),
        # x[x > 0] as torch exports it, and the shape of a data-sized value as an output.
        helper.make_node('GatherND', ['x', 'coords'], ['picked']),
        helper.make_node('Shape', ['nz'], ['nzshape']),
        # A constant mask: its count is known at compile time, so a MatMul can follow.
        helper.make_node('Compress', ['x', 'cmask'], ['xc'], axis=1),
        helper.make_node('MatMul', ['xc', 'wc'], ['cm']),
    ]
    inits = [tensor('zero', np.float32(0)), tensor('half', np.float32(0.5)), tensor('two', np.float32(2)),
             tensor('flat', np.array([-1], np.int64)), tensor('axis0', np.array([0], np.int64)),
             tensor('axes01', np.array([0, 1], np.int64)), tensor('cmask', np.array([1, 0, 1, 1, 0, 1], bool)),
             tensor('wc', rng.standard_normal((4, 2)).astype(np.float32))]
    return model(nodes, inits, [helper.make_tensor_value_info('x', F, ['n', 6]),
                                helper.make_tensor_value_info('k', I64, [1]),
                                helper.make_tensor_value_info('st', I64, [2]),
                                helper.make_tensor_value_info('en', I64, [2]),
                                helper.make_tensor_value_info('sp', I64, [2])],
                 [helper.make_tensor_value_info('coords', I64, ['c', 2]), helper.make_tensor_value_info('vals', F, ['m']),
                  helper.make_tensor_value_info('total', F, []), helper.make_tensor_value_info('rows2', F, ['r', 6]),
                  helper.make_tensor_value_info('colsum', F, [6]),
                  helper.make_tensor_value_info('topv', F, ['n', 'kk']),
                  helper.make_tensor_value_info('topi', I64, ['n', 'kk']),
                  helper.make_tensor_value_info('sl2', F, ['sa', 'sb']),
                  helper.make_tensor_value_info('picked', F, ['p']), helper.make_tensor_value_info('nzshape', I64, [2]),
                  helper.make_tensor_value_info('cm', F, ['n', 2])])


def selection(rng) -> onnx.ModelProto:
    I64 = TensorProto.INT64
    nodes = [
        helper.make_node('NonMaxSuppression', ['boxes', 'scores', 'maxo', 'iou', 'sthr'], ['sel']),
        helper.make_node('Unique', ['v'], ['uy', 'ui', 'uinv', 'ucnt'], sorted=1),
        helper.make_node('Unique', ['rows'], ['ry', 'ri', 'rinv', 'rcnt'], axis=0, sorted=0),
        # Reshape to (first dimension, -1) of a data-sized value.
        helper.make_node('Shape', ['ry'], ['ryshape']),
        helper.make_node('Slice', ['ryshape', 'zero1', 'one1'], ['ryfirst']),
        helper.make_node('Concat', ['ryfirst', 'minus1'], ['rytarget'], axis=0),
        helper.make_node('Reshape', ['ry', 'rytarget'], ['ryflat']),
    ]
    inits = [tensor('maxo', np.array([3], np.int64)), tensor('iou', np.array([0.5], np.float32)),
             tensor('sthr', np.array([0.2], np.float32)), tensor('zero1', np.array([0], np.int64)),
             tensor('one1', np.array([1], np.int64)), tensor('minus1', np.array([-1], np.int64))]
    return model(nodes, inits, [helper.make_tensor_value_info('boxes', F, [1, 'nb', 4]),
                                helper.make_tensor_value_info('scores', F, [1, 2, 'nb']),
                                helper.make_tensor_value_info('v', F, ['m']),
                                helper.make_tensor_value_info('rows', F, ['m', 3])],
                 [helper.make_tensor_value_info('sel', I64, ['s', 3]), helper.make_tensor_value_info('uy', F, ['u']),
                  helper.make_tensor_value_info('ui', I64, ['u']), helper.make_tensor_value_info('uinv', I64, ['m']),
                  helper.make_tensor_value_info('ucnt', I64, ['u']), helper.make_tensor_value_info('ry', F, ['w', 3]),
                  helper.make_tensor_value_info('ri', I64, ['w']), helper.make_tensor_value_info('rinv', I64, ['m']),
                  helper.make_tensor_value_info('rcnt', I64, ['w']), helper.make_tensor_value_info('ryflat', F, ['w', 3])])


def selection_feeds(rng, nb, m):
    corners = rng.uniform(0, 10, (1, nb, 2, 2)).astype(np.float32)
    boxes = np.concatenate([corners[:, :, 0], corners[:, :, 0] + rng.uniform(1, 4, (1, nb, 2))], axis=2)
    return {'boxes': boxes.astype(np.float32), 'scores': rng.uniform(0, 1, (1, 2, nb)).astype(np.float32),
            'v': rng.integers(-3, 4, m).astype(np.float32) + 0.5,
            'rows': rng.integers(0, 2, (m, 3)).astype(np.float32) + 0.25}


def pair(rng) -> onnx.ModelProto:
    """Two inputs sharing a dimension, and a condition on it: z = a * b + c, c [5]."""
    nodes = [helper.make_node('Mul', ['a', 'b'], ['ab']), helper.make_node('Add', ['ab', 'c'], ['z'])]
    return model(nodes, [tensor('c', rng.standard_normal(5).astype(np.float32))],
                 [helper.make_tensor_value_info('a', F, ['n']), helper.make_tensor_value_info('b', F, ['n'])],
                 [helper.make_tensor_value_info('z', F, [5])])


def input_values(rng) -> onnx.ModelProto:
    nodes = [helper.make_node('Pad', ['x', 'pads', 'half'], ['padded'], mode='constant'),
             helper.make_node('Pad', ['x', 'pads'], ['reflected'], mode='reflect'),
             helper.make_node('HannWindow', ['size'], ['window'], periodic=1),
             helper.make_node('Cast', ['size'], ['size_f'], to=F),
             helper.make_node('Range', ['zero', 'size_f', 'one'], ['positions']),
             helper.make_node('Mul', ['window', 'positions'], ['weighted']),
             helper.make_node('STFT', ['signal', 'step', 'hann16'], ['spectrum']),
             helper.make_node('STFT', ['signal', 'step', '', 'flen'], ['spectrum2'])]
    i64 = TensorProto.INT64
    hann = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(16) / 16)).astype(np.float32)
    return model(nodes, [tensor('half', np.float32(0.5)), tensor('zero', np.float32(0)), tensor('one', np.float32(1)),
                         tensor('hann16', hann)],
                 [helper.make_tensor_value_info('x', F, [4, 6]), helper.make_tensor_value_info('pads', i64, [4]),
                  helper.make_tensor_value_info('size', i64, []), helper.make_tensor_value_info('signal', F, [1, 64, 1]),
                  helper.make_tensor_value_info('step', i64, []), helper.make_tensor_value_info('flen', i64, [])],
                 [helper.make_tensor_value_info('padded', F, ['ph', 'pw']), helper.make_tensor_value_info('reflected', F, ['ph', 'pw']),
                  helper.make_tensor_value_info('weighted', F, ['size']),
                  helper.make_tensor_value_info('spectrum', F, [1, 'frames', 9, 2]),
                  helper.make_tensor_value_info('spectrum2', F, [1, 'frames2', 'bins2', 2])], opset=17)


def mel_weights(rng) -> onnx.ModelProto:
    """MelWeightMatrix with every input read at run time (the two sizes given ranges)."""
    i32 = TensorProto.INT32
    nodes = [helper.make_node('MelWeightMatrix', ['bins', 'length', 'rate', 'low', 'high'], ['weights'])]
    return model(nodes, [], [helper.make_tensor_value_info('bins', i32, []), helper.make_tensor_value_info('length', i32, []),
                             helper.make_tensor_value_info('rate', i32, []), helper.make_tensor_value_info('low', F, []),
                             helper.make_tensor_value_info('high', F, [])],
                 [helper.make_tensor_value_info('weights', F, ['spectrum_bins', 'mel_bins'])], opset=17)


def shape_outputs(rng) -> onnx.ModelProto:
    nodes = [helper.make_node('Shape', ['x'], ['s']), helper.make_node('Cast', ['s'], ['sf'], to=F),
             helper.make_node('Identity', ['sf'], ['y']), helper.make_node('Mul', ['s', 'two'], ['s2']),
             helper.make_node('Reshape', ['s2', 'one_one'], ['y2']), helper.make_node('Exp', ['x'], ['z'])]
    return model(nodes, [tensor('two', np.array([2], np.int64)), tensor('one_one', np.array([1, 1], np.int64))],
                 [helper.make_tensor_value_info('x', F, ['n'])],
                 [helper.make_tensor_value_info('y', F, [1]), helper.make_tensor_value_info('y2', TensorProto.INT64, [1, 1]),
                  helper.make_tensor_value_info('z', F, ['n'])])


def run_time_axes(rng) -> onnx.ModelProto:
    nodes = [helper.make_node('ReduceSum', ['x', 'axes'], ['s'], keepdims=1),
             helper.make_node('ReduceSum', ['x', 'axes'], ['m'], keepdims=0)]
    return model(nodes, [], [helper.make_tensor_value_info('x', F, [3, 4, 5]),
                             helper.make_tensor_value_info('axes', TensorProto.INT64, [2])],
                 [helper.make_tensor_value_info('s', F, ['a', 'b', 'c']), helper.make_tensor_value_info('m', F, ['d'])])


def run_time_pad_col2im(rng) -> onnx.ModelProto:
    nodes = [helper.make_node('Pad', ['x', 'pads', 'v', 'axes'], ['padded'], mode='constant'),
             helper.make_node('Col2Im', ['cols', 'image', 'block'], ['images'], strides=[1, 2], pads=[0, 1, 1, 0])]
    i64 = TensorProto.INT64
    return model(nodes, [], [helper.make_tensor_value_info('x', F, [3, 4, 5]), helper.make_tensor_value_info('pads', i64, [4]),
                             helper.make_tensor_value_info('v', F, []), helper.make_tensor_value_info('axes', i64, [2]),
                             helper.make_tensor_value_info('cols', F, [1, 'k', 'l']),
                             helper.make_tensor_value_info('image', i64, [2]), helper.make_tensor_value_info('block', i64, [2])],
                 [helper.make_tensor_value_info('padded', F, ['a', 'b', 'c']),
                  helper.make_tensor_value_info('images', F, [1, 'd', 'e', 'f'])], opset=18)


def ragged_rnn(rng) -> onnx.ModelProto:
    T, B, I, H = 6, 3, 5, 4

    def w(name, *shape):
        return tensor(name, (rng.standard_normal(shape) * 0.4).astype(np.float32))
    nodes = [helper.make_node('LSTM', ['x', 'lw', 'lr', 'lb', 'lens', '', '', 'lp'], ['ly', 'lh', 'lc'],
                              hidden_size=H, direction='bidirectional'),
             helper.make_node('GRU', ['x', 'gw', 'gr', 'gb', 'lens'], ['gy', 'gh'], hidden_size=H, direction='reverse'),
             helper.make_node('RNN', ['x', 'rw', 'rr', '', 'lens'], ['ry', 'rh'], hidden_size=H)]
    inits = [w('lw', 2, 4 * H, I), w('lr', 2, 4 * H, H), w('lb', 2, 8 * H), w('lp', 2, 3 * H),
             w('gw', 1, 3 * H, I), w('gr', 1, 3 * H, H), w('gb', 1, 6 * H), w('rw', 1, H, I), w('rr', 1, H, H)]
    outs = [helper.make_tensor_value_info(n, F, s) for n, s in
            (('ly', [T, 2, B, H]), ('lh', [2, B, H]), ('lc', [2, B, H]), ('gy', [T, 1, B, H]), ('gh', [1, B, H]),
             ('ry', [T, 1, B, H]), ('rh', [1, B, H]))]
    return model(nodes, inits, [helper.make_tensor_value_info('x', F, [T, B, I]),
                                helper.make_tensor_value_info('lens', TensorProto.INT32, [B])], outs)


def run_time_rnn(rng) -> onnx.ModelProto:
    I, H = 5, 4

    def w(name, *shape):
        return tensor(name, (rng.standard_normal(shape) * 0.4).astype(np.float32))
    nodes = [helper.make_node('LSTM', ['x', 'lw', 'lr', 'lb', '', 'h0', 'c0', 'lp'], ['ly', 'lh', 'lc'],
                              hidden_size=H, direction='bidirectional'),
             helper.make_node('GRU', ['x', 'gw', 'gr', 'gb'], ['gy', 'gh'], hidden_size=H, direction='reverse'),
             helper.make_node('RNN', ['x', 'rw', 'rr', '', 'lens'], ['ry', 'rh'], hidden_size=H)]
    inits = [w('lw', 2, 4 * H, I), w('lr', 2, 4 * H, H), w('lb', 2, 8 * H), w('lp', 2, 3 * H),
             w('gw', 1, 3 * H, I), w('gr', 1, 3 * H, H), w('gb', 1, 6 * H), w('rw', 1, H, I), w('rr', 1, H, H)]
    outs = [helper.make_tensor_value_info(n, F, s) for n, s in
            (('ly', ['t', 2, 'b', H]), ('lh', [2, 'b', H]), ('lc', [2, 'b', H]), ('gy', ['t', 1, 'b', H]),
             ('gh', [1, 'b', H]), ('ry', ['t', 1, 'b', H]), ('rh', [1, 'b', H]))]
    return model(nodes, inits, [helper.make_tensor_value_info('x', F, ['t', 'b', I]),
                                helper.make_tensor_value_info('h0', F, [2, 'b', H]),
                                helper.make_tensor_value_info('c0', F, [2, 'b', H]),
                                helper.make_tensor_value_info('lens', TensorProto.INT32, ['b'])], outs)


def long_means(rng) -> onnx.ModelProto:
    nodes = [helper.make_node('ReduceMean', ['x'], ['m'], axes=[2, 3], keepdims=1)]
    return model(nodes, [], [helper.make_tensor_value_info('x', F, [1, 8, 'H', 'W'])],
                 [helper.make_tensor_value_info('m', F, [1, 8, 1, 1])])


def long_means_feed(rng, h, w):
    # Steps of 1/32: partial sums of 16 lanes (below 2^17) stay exact, one accumulator over the
    # row (up to 1.2e6) rounds (its own seeded generator: the other cases' feeds stay as they were).
    x = np.floor(rng.uniform(0, 32, (1, 8, h, w))).astype(np.float32) / np.float32(32)
    x[:, :, :h // 2] += np.float32(120)
    x[:, :, h // 2:] -= np.float32(120)
    return {'x': x}


def save(work, name, array):
    path = os.path.join(work, name + '.npy')
    np.save(path, array)
    return path


def run(cmd):
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
    return proc.returncode, (proc.stdout + proc.stderr).decode('utf-8', 'replace')


def expect_error(what, cmd, *words) -> bool:
    rc, text = run(cmd)
    ok = rc != 0 and 'internal compiler error' not in text and all(w in text for w in words)
    kiln_e2e.log('%s: %s (exit %d)%s' % (what, 'PASS' if ok else 'FAIL', rc,
                                         '' if ok else ': expected %r in: %s' % (words, text.strip()[-400:])))
    return ok


def five2d(work):
    return save(work, 'x5', np.ones((5, 6), np.float32))


def errors(args, work, rng) -> bool:
    ok = True
    kilnc, kiln = args.kilnc, args.kiln
    m = os.path.join(work, 'pair.onnx')
    onnx.save(pair(rng), m)
    bundle = os.path.join(work, 'pair.kiln')
    rc, text = run([kilnc, m, '-o', bundle, '--dim', 'n=1..10'])
    if rc != 0:
        kiln_e2e.log('FAIL: kilnc on pair.onnx: %s' % text)
        return False
    five = save(work, 'pair5', np.ones(5, np.float32))
    rc, text = run([kiln, 'run', bundle, '--input', 'a=' + five, '--input', 'b=' + five])
    kiln_e2e.log('pair at n=5: %s' % ('PASS' if rc == 0 else 'FAIL: ' + text))
    ok &= rc == 0
    big = save(work, 'pair12', np.ones(12, np.float32))
    ok &= expect_error('a shape outside the range', [kiln, 'run', bundle, '--input', 'a=' + big, '--input', 'b=' + big],
                       '--input a', '1..10')
    three = save(work, 'pair3', np.ones(3, np.float32))
    ok &= expect_error('a condition of the model', [kiln, 'run', bundle, '--input', 'a=' + three, '--input', 'b=' + three],
                       'do not fit the model', 'broadcast')
    ok &= expect_error('inputs disagreeing on a shared dimension',
                       [kiln, 'run', bundle, '--input', 'a=' + five, '--input', 'b=' + three], "'b'", 'share')
    ok &= expect_error('a range LO > HI', [kilnc, m, '-o', bundle, '--dim', 'n=10..1'], '--dim', 'LO..HI')
    ok &= expect_error('an unknown --dim', [kilnc, m, '-o', bundle, '--dim', 'q=1..4'], "'q'")
    ok &= expect_error('? on an unnamed dimension',
                       [kilnc, os.path.join(work, 'mlp.onnx'), '-o', bundle, '--input-shape', 'x=1,?'], "'?'", 'has none')
    # A named dimension without bounds compiles with no flag (sized per run, Storage.Dynamic):
    # at n = 5 (its condition: n broadcasts with c's 5 only when equal), against ONNX Runtime.
    rng_free = np.random.default_rng(5)
    sets = [{k: save(work, 'free_%s%d' % (k, n), rng_free.standard_normal(n).astype(np.float32)) for k in 'ab'}
            for n in (5,)]
    one = kiln_e2e.check_dynamic_against_ort(args, m, os.path.join(work, 'pair_free'), [], sets, 1e-6, 1e-6)
    kiln_e2e.log('a named dimension without bounds, n = 5: %s' % ('PASS' if one else 'FAIL'))
    ok &= one
    data = os.path.join(work, 'data_shapes', 'data_shapes.kiln')  # compiled by the data_shapes case
    two = save(work, 'two', np.array([0, 0], np.int64))
    ok &= expect_error('a run-time TopK k past the row', [kiln, 'run', data, '--input', 'x=' + five2d(work),
                       '--input', 'k=' + save(work, 'k7', np.array([7], np.int64)), '--input', 'st=' + two,
                       '--input', 'en=' + two, '--input', 'sp=' + save(work, 'ones', np.array([1, 1], np.int64))],
                       "came out as 7", '0..6')
    declared = os.path.join(work, 'declared.onnx')  # NonZero whose output ONNX declares [2, 1]
    onnx.save(model([helper.make_node('NonZero', ['x'], ['nz'], name='nz0')],
                    [], [helper.make_tensor_value_info('x', F, [64, 64])],
                    [helper.make_tensor_value_info('nz', TensorProto.INT64, [2, 1])]), declared)
    dbundle = os.path.join(work, 'declared.kiln')
    rc, text = run([kilnc, declared, '-o', dbundle])
    one = np.zeros((64, 64), np.float32)
    one[5, 7] = 1
    rc2, text2 = run([kiln, 'run', dbundle, '--input', 'x=' + save(work, 'one_nz', one), '--output-dir',
                      os.path.join(work, 'declared_out')])
    good = rc == 0 and rc2 == 0 and np.array_equal(np.load(os.path.join(work, 'declared_out', 'nz.npy')), [[5], [7]])
    kiln_e2e.log('a declared static size that holds: %s' % ('PASS' if good else 'FAIL: ' + text + text2))
    ok &= good
    ok &= expect_error('a declared static size the run does not give (every element non-zero)',
                       [kiln, 'run', dbundle, '--input', 'x=' + save(work, 'all_nz', np.ones((64, 64), np.float32))],
                       'the sizes this run computed do not fit the model', "NonZero node 'nz0'")
    values = os.path.join(work, 'input_values.onnx')  # written by the input_values case
    vbundle = os.path.join(work, 'input_values', 'values.kiln')
    rc, text = run([kilnc, values, '-o', vbundle, '--input-value', 'pads=0..5', '--input-value', 'size=1..32',
                    '--input-value', 'step=1..16', '--input-value', 'flen=1..24'])
    x46 = save(work, 'x46', np.ones((4, 6), np.float32))
    vfeeds = ['--input', 'x=' + x46, '--input', 'pads=' + save(work, 'pads1', np.array([1, 1, 1, 1], np.int64)),
              '--input', 'signal=' + save(work, 'sig64', np.ones((1, 64, 1), np.float32)),
              '--input', 'step=' + save(work, 'step4', np.array(4, np.int64)),
              '--input', 'flen=' + save(work, 'flen8', np.array(8, np.int64))]
    ok &= expect_error('an --input-value outside its range', [kiln, 'run', vbundle] + vfeeds +
                       ['--input', 'size=' + save(work, 'size40', np.array(40, np.int64))], "came out as 40", '1..32')
    ok &= expect_error('--input-value on a float input', [kilnc, values, '-o', vbundle, '--input-value', 'x=0..4'],
                       '--input-value x', 'integer inputs')
    ok &= expect_error('--input-value on no input', [kilnc, values, '-o', vbundle, '--input-value', 'q=0..4'],
                       "'q'", 'not a model input')
    ok &= expect_error('a negative --input-value range', [kilnc, values, '-o', vbundle, '--input-value', 'size=-1..4'],
                       '--input-value', '0 <= LO')
    # Without any range the sizes they decide are sized per run (issue 34: no flag needed): the
    # same outputs as the ranged bundle's.
    free_bundle = os.path.join(work, 'input_values', 'values_free.kiln')
    size8 = ['--input', 'size=' + save(work, 'size8', np.array(8, np.int64))]
    rc1, text1 = run([kilnc, values, '-o', free_bundle])
    same = rc1 == 0
    outs = {}
    for tag, b in (('ranged', vbundle), ('free', free_bundle)):
        d = os.path.join(work, 'input_values_' + tag)
        rc2, text2 = run([kiln, 'run', b] + vfeeds + size8 + ['--output-dir', d]) if same else (1, '')
        same &= rc2 == 0
        text1 += text2
        outs[tag] = d
    if same:
        for name in sorted(os.listdir(outs['ranged'])):
            a = np.load(os.path.join(outs['ranged'], name))
            b = np.load(os.path.join(outs['free'], name))
            same &= a.shape == b.shape and np.allclose(a, b, rtol=RTOL, atol=ATOL)
    kiln_e2e.log('sizes from values without a range, sized per run: %s' % ('PASS' if same else 'FAIL: ' + text1[-400:]))
    ok &= same
    axes_bundle = os.path.join(work, 'run_time_axes', 'run_time_axes.kiln')  # compiled by the run_time_axes case
    ok &= expect_error('repeated run-time reduction axes',
                       [kiln, 'run', axes_bundle, '--input', 'x=' + save(work, 'x345', np.ones((3, 4, 5), np.float32)),
                        '--input', 'axes=' + save(work, 'axes11', np.array([1, -2], np.int64))], 'came out as 0', '1..1')
    echo = os.path.join(work, 'echo.onnx')  # an --input-value input that is also a model output keeps its name
    onnx.save(model([helper.make_node('Pad', ['x', 'p'], ['y'])], [],
                    [helper.make_tensor_value_info('x', F, [3]), helper.make_tensor_value_info('p', TensorProto.INT64, [2])],
                    [helper.make_tensor_value_info('y', F, ['py']), helper.make_tensor_value_info('p', TensorProto.INT64, [2])]),
              echo)
    ebundle, eout = os.path.join(work, 'echo.kiln'), os.path.join(work, 'echo_out')
    rc, text = run([kilnc, echo, '-o', ebundle, '--input-value', 'p=0..4'])
    rc2, text2 = run([kiln, 'run', ebundle, '--input', 'x=' + save(work, 'x3', np.ones(3, np.float32)),
                      '--input', 'p=' + save(work, 'p12', np.array([1, 2], np.int64)), '--output-dir', eout])
    good = rc == 0 and rc2 == 0 and os.path.isfile(os.path.join(eout, 'p.npy')) and \
        np.load(os.path.join(eout, 'y.npy')).shape == (6,)
    kiln_e2e.log('an --input-value input that is an output keeps its name: %s' % ('PASS' if good else 'FAIL: ' + text + text2))
    ok &= good
    ok &= expect_error('ranges on Vulkan', [kilnc, m, '-o', bundle, '--dim', 'n=1..10', '--target=vulkan'],
                       'vulkan', 'run time')
    return ok


def main() -> int:
    args = kiln_e2e.script_args(__doc__.split('\n')[0])
    work = kiln_e2e.fresh_dir(args.workdir)
    rng = np.random.default_rng(15)
    ok = True
    cases = [
        ('mlp', mlp(rng), ['--dim', 'n=1..64'], [{'x': (n, 24)} for n in (1, 7, 64)]),
        ('cnn', cnn(rng), ['--input-shape', 'x=1,3,16..96,16..96'],
         [{'x': (1, 3, h, w)} for h, w in ((16, 16), (33, 47), (96, 64), (21, 95))]),
        ('shape_ops', shape_ops(rng), ['--input-shape', 'x=1,2..40,16'], [{'x': (1, L, 16)} for L in (2, 9, 40)]),
    ]
    # data_shapes: random rows, then nothing selected (all negative) and everything (all positive).
    data_feeds = [rng.standard_normal((n, 6)).astype(np.float32) for n in (1, 7, 32)]
    data_feeds += [-np.abs(rng.standard_normal((5, 6))).astype(np.float32) - 0.1,
                   np.abs(rng.standard_normal((32, 6))).astype(np.float32) + 0.6]
    slices = [((0, 1), (1, 5), (1, 2)), ((-3, -1), (100, -7), (1, -1)), ((2, 0), (-1, 6), (3, 2)),
              ((0, 9), (5, 10), (1, 1)), ((31, 5), (-100, 0), (-2, -2))]
    i64 = lambda v: np.array(v, np.int64)  # noqa: E731
    cases.append(('data_shapes', data_shapes(rng), ['--dim', 'n=1..32'],
                  [{'x': a, 'k': i64([k]), 'st': i64(st), 'en': i64(en), 'sp': i64(sp)}
                   for a, k, (st, en, sp) in zip(data_feeds, (3, 6, 1, 0, 2), slices)]))
    cases.append(('selection', selection(rng), ['--dim', 'nb=1..48', '--dim', 'm=1..40'],
                  [selection_feeds(rng, nb, m) for nb, m in ((1, 1), (9, 12), (48, 40), (30, 5))]))
    cases.append(('input_values', input_values(rng), ['--input-value', 'pads=0..5', '--input-value', 'size=1..32',
                                                      '--input-value', 'step=1..16', '--input-value', 'flen=1..24'],
                  [{'x': (4, 6), 'pads': i64(p), 'size': i64(s), 'signal': (1, 64, 1), 'step': i64(st),
                    'flen': i64(fl)}
                   # (odd frame lengths: ONNX Runtime's float32 twiddles leave ~1e-5 in the
                   # imaginary part of an even length's Nyquist bin, which kiln's float64 ones do not)
                   for p, s, st, fl in (([0, 0, 0, 0], 2, 1, 1), ([1, 2, 3, 4], 10, 16, 23), ([3, 5, 3, 5], 32, 5, 7),
                                        ([0, 3, 2, 0], 7, 8, 15))]))
    cases.append(('mel_weights', mel_weights(rng), ['--input-value', 'bins=1..64', '--input-value', 'length=1..512'],
                  [{'bins': np.array(b, np.int32), 'length': np.array(n, np.int32), 'rate': np.array(r, np.int32),
                    'low': np.array(lo, np.float32), 'high': np.array(hi, np.float32)}
                   for b, n, r, lo, hi in ((8, 16, 8192, 0, 4096), (40, 512, 16000, 20, 8000), (4, 64, 8000, 300, 3400))]))
    cases.append(('shape_outputs', shape_outputs(rng), ['--dim', 'n=1..8'], [{'x': (n,)} for n in (1, 4, 8)]))
    cases.append(('run_time_axes', run_time_axes(rng), [],
                  [{'x': (3, 4, 5), 'axes': i64(a)} for a in ((0, 2), (-1, 1), (2, 0), (1, -3))]))
    # Pad's pads and axes, Col2Im's image_shape and block_shape: model inputs read at run time (no flags);
    # the columns' shape follows the blocks (strides 1, 2; pads 0, 1 before, 1, 0 after; 2 channels).
    cases.append(('run_time_pad_col2im', run_time_pad_col2im(rng), ['--dim', 'k=1..64', '--dim', 'l=1..64'],
                  [{'x': (3, 4, 5), 'pads': i64(p), 'v': np.array(0.5, np.float32), 'axes': i64(a),
                    'cols': (1, 2 * b[0] * b[1], 12), 'image': i64(im), 'block': i64(b)}
                   for p, a, im, b in (([1, 2, 0, 3], [0, -1], [4, 5], [2, 2]), ([2, 0, 0, 1], [2, 1], [3, 6], [1, 3]),
                                       ([0, 0, 0, 0], [-3, -2], [5, 4], [3, 1]))]))
    cases.append(('ragged_rnn', ragged_rnn(rng), [],
                  [{'x': (6, 3, 5), 'lens': np.array(v, np.int32)} for v in ((6, 6, 6), (6, 3, 1), (2, 5, 4))]))
    cases.append(('run_time_rnn', run_time_rnn(rng), ['--dim', 't=1..16', '--dim', 'b=1..4'],
                  [{'x': (t, b, 5), 'h0': (2, b, 4), 'c0': (2, b, 4), 'lens': np.array(v, np.int32)}
                   for t, b, v in ((1, 1, (1,)), (7, 3, (7, 2, 5)), (16, 4, (16, 1, 9, 16)))]))
    cases.append(('long_means', long_means(rng), ['--input-shape', 'x=1,8,16..160,16..160'],
                  [long_means_feed(np.random.default_rng(34), h, w) for h, w in ((120, 160), (96, 131), (16, 17))]))
    for name, m, ranges, shapes in cases:
        path = os.path.join(work, name + '.onnx')
        onnx.save(m, path)
        feed_sets = []
        for k, shapes_of in enumerate(shapes):
            feed_sets.append({i: save(work, '%s_%s_%d' % (name, i, k),
                                      s if isinstance(s, np.ndarray) else rng.standard_normal(s).astype(np.float32))
                              for i, s in shapes_of.items()})
        one = kiln_e2e.check_dynamic_against_ort(args, path, os.path.join(work, name), ranges, feed_sets, RTOL, ATOL)
        kiln_e2e.log('%s (one bundle, %s): %s' % (name, ' '.join(ranges), 'PASS' if one else 'FAIL'))
        ok &= one
    ok &= errors(args, work, rng)
    kiln_e2e.log('dynamic_models: %s' % ('PASS' if ok else 'FAIL'))
    return 0 if ok else 1


if __name__ == '__main__':
    kiln_e2e.run_script(main)
