"""Hand-built ONNX models of the end-to-end tests (the ones torch.onnx cannot
export as wanted), and the checks on their compiled bundles. MODELS in
models.py names them; see tests/e2e/kiln_e2e.py."""

from __future__ import annotations

import numpy as np

OPSET = 13


CONST_WEIGHTS_PREFIX = 'wgen_'  # name prefix of every node that builds a weight


def _checked_model(graph):
    """A hand-built graph as a checked ONNX model (opset OPSET, IR version 8)."""
    import onnx
    from onnx import helper
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', OPSET)], producer_name='kiln-e2e')
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def build_const_weights_onnx():
    """input [1,3,12,10] -> Conv(w1,b1) -> BatchNormalization -> Relu -> Conv(w2, stride 2) -> Mul(per channel)
    -> Add(per channel) -> GlobalAveragePool -> Flatten -> Gemm(w3, transB) -> output [1,10].

    Every weight, bias and BN parameter is built at run time from ConstantOfShape: times a
    Range ramp (0, 1, 2, ...), through Sin/Cos (which the import-time shape folder does not evaluate), Expand,
    Tile and Transpose. kilnc must fold all of it into constants."""
    from onnx import TensorProto, helper, numpy_helper

    nodes = []
    inits = []
    counter = [0]

    def name(what):
        counter[0] += 1
        return '%s%s_%d' % (CONST_WEIGHTS_PREFIX, what, counter[0])

    def node(op, ins, attrs=None, what=None):
        out = name((what or op).lower())
        nodes.append(helper.make_node(op, ins, [out], name=out, **(attrs or {})))
        return out

    def i64(vals):
        n = name('i64')
        inits.append(numpy_helper.from_array(np.asarray(vals, dtype=np.int64), n))
        return n

    def f32(vals):
        n = name('f32')
        inits.append(numpy_helper.from_array(np.asarray(vals, dtype=np.float32), n))
        return n

    def const_of_shape(shape, value):
        return node('ConstantOfShape', [i64(shape)],
                    {'value': numpy_helper.from_array(np.array([value], dtype=np.float32))})

    def ramp_weight(shape, freq, scale, phase=0.0, trig='Sin'):
        """scale * trig(freq * ramp + phase) with ramp = 0, 1, 2, ... over `shape`, all at run time."""
        n = int(np.prod(shape))
        ramp = node('Range', [f32(0.0), f32(float(n)), f32(1.0)])
        x = node('Mul', [ramp, const_of_shape([n], freq)])
        x = node('Add', [x, const_of_shape([1], phase)])
        x = node(trig, [x])
        x = node('Mul', [x, const_of_shape([1], scale)])
        return node('Reshape', [x, i64(shape)])

    w1 = ramp_weight([6, 3, 3, 3], 0.37, 0.4)
    b1 = node('Expand', [const_of_shape([1], 0.05), i64([6])])
    bn_scale = node('Add', [ramp_weight([6], 0.9, 0.5, trig='Cos'), const_of_shape([6], 1.0)])
    bn_bias = ramp_weight([6], 1.3, 0.2)
    bn_mean = node('Tile', [const_of_shape([2], 0.1), i64([3])])
    bn_var = node('Add', [node('Mul', [ramp_weight([6], 0.5, 0.5, trig='Cos'), ramp_weight([6], 0.5, 0.5, trig='Cos')]),
                          const_of_shape([6], 0.5)])
    w2 = ramp_weight([8, 6, 3, 3], 0.11, 0.3, phase=0.5)
    k2 = node('Reshape', [ramp_weight([8], 0.7, 0.5, phase=1.0, trig='Cos'), i64([8, 1, 1])])
    c2 = node('Expand', [ramp_weight([8, 1, 1], 0.3, 0.1), i64([1, 8, 1, 1])])
    w3t = ramp_weight([8, 10], 0.23, 0.6, phase=0.2)
    w3 = node('Transpose', [w3t], {'perm': [1, 0]})
    b3 = node('Expand', [const_of_shape([1], -0.1), i64([10])])

    # The model proper (these nodes keep plain names).
    nodes += [
        helper.make_node('Conv', ['input', w1, b1], ['c1'], name='conv1', pads=[1, 1, 1, 1]),
        helper.make_node('BatchNormalization', ['c1', bn_scale, bn_bias, bn_mean, bn_var], ['bn1'], name='bn1',
                         epsilon=1e-5),
        helper.make_node('Relu', ['bn1'], ['r1'], name='relu1'),
        helper.make_node('Conv', ['r1', w2], ['c2'], name='conv2', strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node('Mul', ['c2', k2], ['m2'], name='scale2'),
        helper.make_node('Add', ['m2', c2], ['a2'], name='shift2'),
        helper.make_node('GlobalAveragePool', ['a2'], ['gap'], name='gap'),
        helper.make_node('Flatten', ['gap'], ['flat'], name='flatten'),
        helper.make_node('Gemm', ['flat', w3, b3], ['output'], name='fc', transB=1),
    ]
    graph = helper.make_graph(nodes, 'const_weights',
                              [helper.make_tensor_value_info('input', TensorProto.FLOAT, [1, 3, 12, 10])],
                              [helper.make_tensor_value_info('output', TensorProto.FLOAT, [1, 10])],
                              initializer=inits)
    return _checked_model(graph)


def _check_const_weights_bundle(info, report):
    """No dispatch computes a weight; the weights are constants in the bundle; kilnc's constant folder did it."""
    bad = [d['kernel'] for d in info['dispatches']
           if any(s.startswith(CONST_WEIGHTS_PREFIX) for s in d.get('source_nodes', []))]
    if bad:
        raise AssertionError('dispatches compute weights at run time: %s' % bad)
    sources = {s for d in info['dispatches'] for s in d.get('source_nodes', [])}
    if any('constantofshape' in s.lower() for s in sources):
        raise AssertionError('a dispatch comes from a ConstantOfShape node: %s' % sorted(sources))
    weight_bytes = 4 * (6 * 3 * 3 * 3 + 8 * 6 * 3 * 3 + 8 * 10)
    if info['constant_bytes'] < weight_bytes:
        raise AssertionError('constant_bytes %d < %d bytes of weights' % (info['constant_bytes'], weight_bytes))
    if len(info['dispatches']) > 4:
        raise AssertionError('expected at most 4 dispatches (conv1+bn+relu, conv2+mul+add, pool, fc), got %d: %s'
                             % (len(info['dispatches']), [d['kernel'] for d in info['dispatches']]))
    import re
    m = re.search(r'pass constant-fold: (\d+) -> (\d+) nodes', report)
    if not m or int(m.group(2)) >= int(m.group(1)):
        raise AssertionError('the constant-fold pass did not fold anything: %r' % (m.group(0) if m else report))


def build_matmul_tiles_onnx():
    """input [2,40,100] -> MatMul(w1 [100,80]) -> Relu -> y; output = MatMul(y, Transpose(y)) [2,40,40];
    output_1 = Cast(float) of MatMul(Cast(double) of y, w2 [80,48] double) [2,40,48];
    output_2 = Softmax(Reshape(output, [2, 1600]) * 0.01) * 1600: two rows whose max and sum are long
    reductions that the invocations of a workgroup share; output_3 = the float64 mean of each batch of
    output_1's double values, a shared reduction that runs on the host in vulkan-hetero (its host body).

    Matrix products big enough for the GPU schedule's shared-memory tiles (32 x 32 blocks, slices of 16
    along k), with sizes that do not divide them (40 rows, k = 100); the float64 one runs on the host
    when the device lacks shaderFloat64 (vulkan-hetero), from the kernel's host body."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(11)
    inits = [
        numpy_helper.from_array((rng.standard_normal((100, 80)) * 0.1).astype(np.float32), 'tiles_w1'),
        numpy_helper.from_array((rng.standard_normal((80, 48)) * 0.1).astype(np.float64), 'tiles_w2'),
        numpy_helper.from_array(np.array([2, 1600], dtype=np.int64), 'tiles_rows'),
        numpy_helper.from_array(np.array(0.01, dtype=np.float32), 'tiles_scale'),
        numpy_helper.from_array(np.array(1600.0, dtype=np.float32), 'tiles_count'),
    ]
    nodes = [
        helper.make_node('MatMul', ['input', 'tiles_w1'], ['xw'], name='linear'),
        helper.make_node('Relu', ['xw'], ['y'], name='relu'),
        helper.make_node('Transpose', ['y'], ['yt'], name='transpose', perm=[0, 2, 1]),
        helper.make_node('MatMul', ['y', 'yt'], ['output'], name='gram'),
        helper.make_node('Cast', ['y'], ['y_d'], name='to_double', to=TensorProto.DOUBLE),
        helper.make_node('MatMul', ['y_d', 'tiles_w2'], ['z_d'], name='linear_double'),
        helper.make_node('Cast', ['z_d'], ['output_1'], name='to_float', to=TensorProto.FLOAT),
        helper.make_node('Reshape', ['output', 'tiles_rows'], ['rows'], name='rows'),
        helper.make_node('Mul', ['rows', 'tiles_scale'], ['scaled'], name='scale'),
        helper.make_node('Softmax', ['scaled'], ['sm'], name='softmax', axis=-1),
        helper.make_node('Mul', ['sm', 'tiles_count'], ['output_2'], name='times_count'),
        helper.make_node('ReduceMean', ['z_d'], ['sum_d'], name='mean_double', axes=[1, 2], keepdims=0),
        helper.make_node('Cast', ['sum_d'], ['output_3'], name='sum_to_float', to=TensorProto.FLOAT),
    ]
    graph = helper.make_graph(nodes, 'matmul_tiles',
                              [helper.make_tensor_value_info('input', TensorProto.FLOAT, [2, 40, 100])],
                              [helper.make_tensor_value_info('output', TensorProto.FLOAT, [2, 40, 40]),
                               helper.make_tensor_value_info('output_1', TensorProto.FLOAT, [2, 40, 48]),
                               helper.make_tensor_value_info('output_2', TensorProto.FLOAT, [2, 1600]),
                               helper.make_tensor_value_info('output_3', TensorProto.FLOAT, [2])],
                              initializer=inits)
    return _checked_model(graph)


def _check_matmul_tiles_bundle(info, report):
    """On Vulkan, the three matrix products tile through shared memory and the softmax's max and sum
    are shared reductions (kilnc --report's codegen line counts the kernels using shared memory)."""
    import re
    m = re.search(r'SPIR-V modules \((\d+) with shared memory\)', report)
    if not m or int(m.group(1)) < 6:
        raise AssertionError('expected 6 kernels with shared memory in the report:\n%s' % report)


def build_hetero_float64_onnx():
    """input [2,4,8] -> Softmax -> Cast(double) -> Mul(c) -> Mul(self) -> Add(c2) -> Cast(float) -> MatMul(w [8,5])
    -> Relu -> output [2,4,5], plus output_1 = ReduceMean(double path) cast back to float [2,4,1].

    float64 kernels that a Vulkan device without shaderFloat64 cannot run, between float32 kernels:
    compiled with --vulkan-features=int64 they run on the host (heterogeneous bundle, docs/vulkan.md)."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(6)
    inits = [
        numpy_helper.from_array(rng.uniform(0.5, 2.0, 8).astype(np.float64), 'hetero_c'),
        numpy_helper.from_array(rng.standard_normal(8).astype(np.float64), 'hetero_c2'),
        numpy_helper.from_array(rng.standard_normal((8, 5)).astype(np.float32), 'hetero_w'),
    ]
    nodes = [
        helper.make_node('Softmax', ['input'], ['sm'], name='softmax', axis=-1),
        helper.make_node('Cast', ['sm'], ['sm_d'], name='to_double', to=TensorProto.DOUBLE),
        helper.make_node('Mul', ['sm_d', 'hetero_c'], ['m_d'], name='mul_double'),
        helper.make_node('Mul', ['m_d', 'm_d'], ['e_d'], name='square_double'),
        helper.make_node('Add', ['e_d', 'hetero_c2'], ['a_d'], name='add_double'),
        helper.make_node('ReduceMean', ['a_d'], ['s_d'], name='mean_double', axes=[-1], keepdims=1),
        helper.make_node('Cast', ['a_d'], ['a_f'], name='to_float', to=TensorProto.FLOAT),
        helper.make_node('Cast', ['s_d'], ['output_1'], name='sum_to_float', to=TensorProto.FLOAT),
        helper.make_node('MatMul', ['a_f', 'hetero_w'], ['mm'], name='matmul'),
        helper.make_node('Relu', ['mm'], ['output'], name='relu'),
    ]
    graph = helper.make_graph(nodes, 'hetero_float64',
                              [helper.make_tensor_value_info('input', TensorProto.FLOAT, [2, 4, 8])],
                              [helper.make_tensor_value_info('output', TensorProto.FLOAT, [2, 4, 5]),
                               helper.make_tensor_value_info('output_1', TensorProto.FLOAT, [2, 4, 1])],
                              initializer=inits)
    return _checked_model(graph)


def _check_hetero_bundle(info, report):
    """Some dispatches on the host, some on Vulkan; host dispatches list their copies; two libraries."""
    devices = [d['device'] for d in info['dispatches']]
    if 'host' not in devices or 'vulkan' not in devices:
        raise AssertionError('expected dispatches on the host and on vulkan, got %s' % devices)
    formats = sorted(lib['format'] for lib in info['libraries'])
    if formats != ['elf', 'spirv']:
        raise AssertionError('expected a SpirV and an ElfSharedObject library, got %s' % formats)
    if info['min_runtime_minor'] != 3:
        raise AssertionError('min_runtime_minor %d, expected 3' % info['min_runtime_minor'])
    host = [d for d in info['dispatches'] if d['device'] == 'host']
    if not any(d['host_downloads'] for d in host) or not all(d['host_uploads'] for d in host):
        raise AssertionError('host dispatches without copies: %s' % host)
    if any(d['host_downloads'] or d['host_uploads'] for d in info['dispatches'] if d['device'] == 'vulkan'):
        raise AssertionError('a Vulkan dispatch lists host copies')
    if 'runs on the CPU: needs shaderFloat64' not in report:
        raise AssertionError('kilnc --report does not say which kernels run on the CPU')


def build_output_views_onnx():
    """input [1,5,6,1] -> Reshape -> output_1 [1,1,5,6] (a view of the input) -> MaxPool -> output;
    Sigmoid(output_1) -> output_2 -> Reshape -> output_3 [1,5,6] (a view of another output) -> Relu ->
    Add(output) -> output_4.

    Model outputs that are views (Reshape) of an input or of another output get storage of their own
    and a copy; the nodes that read them must run after that copy (mlsd's head read zeros)."""
    from onnx import TensorProto, helper, numpy_helper

    inits = [
        numpy_helper.from_array(np.array([1, 1, 5, 6], np.int64), 'views_nchw'),
        numpy_helper.from_array(np.array([1, 5, 6], np.int64), 'views_chw'),
    ]
    nodes = [
        helper.make_node('Reshape', ['input', 'views_nchw'], ['output_1'], name='input_view'),
        helper.make_node('MaxPool', ['output_1'], ['output'], name='pool', kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node('Sigmoid', ['output_1'], ['output_2'], name='sigmoid'),
        helper.make_node('Reshape', ['output_2', 'views_chw'], ['output_3'], name='output_view'),
        helper.make_node('Relu', ['output_3'], ['r'], name='relu'),
        helper.make_node('Add', ['r', 'output'], ['output_4'], name='add'),
    ]
    shape4 = [1, 1, 5, 6]
    graph = helper.make_graph(nodes, 'output_views',
                              [helper.make_tensor_value_info('input', TensorProto.FLOAT, [1, 5, 6, 1])],
                              [helper.make_tensor_value_info('output', TensorProto.FLOAT, shape4),
                               helper.make_tensor_value_info('output_1', TensorProto.FLOAT, shape4),
                               helper.make_tensor_value_info('output_2', TensorProto.FLOAT, shape4),
                               helper.make_tensor_value_info('output_3', TensorProto.FLOAT, [1, 5, 6]),
                               helper.make_tensor_value_info('output_4', TensorProto.FLOAT, shape4)],
                              initializer=inits)
    return _checked_model(graph)
