#!/usr/bin/python3
"""Hostile models: a table of malformed, absurd or malicious ONNX files, each
compiled by kilnc, which must answer with a user error (exit 1, a last line
"kilnc: error: ...", after warnings only, naming the node where one is at fault), never an
internal error, crash or hang, and never read a file outside the model's
folder.

  hostile_models.py --kilnc PATH --workdir DIR [--timeout 60] [--only NAME,...]

Every case is built from a seeded script (onnx.helper); the mutation classes
(flipped or truncated bytes of a valid model) may still be valid, so for them
only "no crash, no hang, no internal error" is required. Exit status 0 when
every case behaved, 1 otherwise, 2 on a set-up error.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import time
from typing import Callable, List, Optional, Tuple

sys.dont_write_bytecode = True

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402

F = TensorProto.FLOAT
OPSET = 13
SECRET = b'KILN-HOSTILE-SECRET-0123456789'  # planted outside the model folders


def vi(name, shape, dtype=F):
    return helper.make_tensor_value_info(name, dtype, shape)


def tensor(name, shape, values=None, dtype=F):
    n = int(np.prod(shape)) if shape else 1
    return helper.make_tensor(name, dtype, shape, values if values is not None else [0.5] * n)


def model(nodes, inputs, outputs, inits=(), opset=OPSET, ir=None):
    g = helper.make_graph(nodes, 'g', inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid('', opset)])
    if ir is not None:
        m.ir_version = ir
    return m


def conv(attrs, x_shape=(1, 1, 8, 8), w_shape=(1, 1, 3, 3), out_shape=(1, 1, 6, 6), op='Conv'):
    return model([helper.make_node(op, ['x', 'w'], ['y'], name='bad_' + op.lower(), **attrs)],
                 [vi('x', list(x_shape))], [vi('y', list(out_shape))], [tensor('w', list(w_shape))])


def unary(op, name, x_shape, y_shape, **attrs):
    return model([helper.make_node(op, ['x'], ['y'], name=name, **attrs)], [vi('x', list(x_shape))], [vi('y', list(y_shape))])


def valid_model():
    w = tensor('w', [4, 1, 3, 3], [((i * 7) % 11) / 10.0 for i in range(36)])
    b = tensor('b', [4], [0.1, -0.2, 0.3, 0.0])
    return model([helper.make_node('Conv', ['x', 'w', 'b'], ['c'], name='conv0', pads=[1, 1, 1, 1]),
                  helper.make_node('Relu', ['c'], ['r'], name='relu0'),
                  helper.make_node('GlobalAveragePool', ['r'], ['y'], name='gap0')],
                 [vi('x', [1, 1, 8, 8])], [vi('y', [1, 4, 1, 1])], [w, b])


def external(location, offset=None, length=None, n=4):
    t = tensor('w', [n], [1.0] * n)
    t.ClearField('float_data')
    t.data_location = TensorProto.EXTERNAL
    for k, v in (('location', location), ('offset', offset), ('length', length)):
        if v is not None:
            e = t.external_data.add()
            e.key, e.value = k, str(v)
    return model([helper.make_node('Add', ['x', 'w'], ['y'], name='add_external')], [vi('x', [4])], [vi('y', [4])], [t])


def short_tensor():
    t = tensor('w', [4])  # 4 elements declared, 3 stored
    t.ClearField('float_data')
    t.raw_data = np.ones(3, np.float32).tobytes()
    return t


def chain(n, op='Relu'):
    nodes, prev = [], 'x'
    for i in range(n):
        out = 'y' if i == n - 1 else 'v%d' % i
        nodes.append(helper.make_node(op, [prev], [out], name='n%d' % i))
        prev = out
    return model(nodes, [vi('x', [1, 16])], [vi('y', [1, 16])])


def nested_if(depth):
    def branch(d):
        if d == 0:
            return helper.make_graph([helper.make_node('Identity', ['x'], ['o%d' % d], name='leaf')], 'leaf', [],
                                     [vi('o%d' % d, [1])])
        inner = helper.make_node('If', ['cond'], ['o%d' % d], name='if%d' % d, then_branch=branch(d - 1),
                                 else_branch=branch(0))  # one deep side: size linear in depth
        return helper.make_graph([inner], 'b%d' % d, [], [vi('o%d' % d, [1])])
    top = helper.make_node('If', ['cond'], ['y'], name='if_top', then_branch=branch(depth), else_branch=branch(0))
    return model([top], [vi('cond', [], TensorProto.BOOL), vi('x', [1])], [vi('y', [1])])


# Each case: name -> (builder returning bytes, or a callable(dir) writing extra files; expectation; needles)
# expectation: 'error' (exit 1 + "kilnc: error:" + every needle), 'ok' (exit 0), 'survive' (exit 0 or 1).
Case = Tuple[Callable[[str], bytes], str, List[str]]


def b(m):
    return lambda _d: m.SerializeToString()


def short_strings(name):
    """A string tensor of shape [3] holding two strings."""
    t = onnx.TensorProto()
    t.name, t.data_type = name, TensorProto.STRING
    t.dims.extend([3])
    t.string_data.extend([b'a', b'b'])
    return t


def raw(data):
    return lambda _d: data


def with_file(name, data, m):
    def build(d):
        with open(os.path.join(d, name), 'wb') as f:
            f.write(data)
        return m.SerializeToString()
    return build


def with_symlink(name, target, m):
    def build(d):
        os.symlink(target, os.path.join(d, name))
        return m.SerializeToString()
    return build


def cases(workdir: str) -> dict:
    rng = random.Random(1234)
    valid = valid_model().SerializeToString()
    secret = os.path.join(workdir, 'secret.bin')  # outside every case folder
    c = {
        # Not ONNX at all.
        'empty_file': (raw(b''), 'error', []),
        'random_bytes_16': (raw(bytes(rng.randrange(256) for _ in range(16))), 'survive', []),
        'random_bytes_4k': (raw(bytes(rng.randrange(256) for _ in range(4096))), 'survive', []),
        'text_file': (raw(b'this is not an ONNX model\n' * 10), 'error', []),
        'tensor_proto_not_model': (raw(tensor('t', [2]).SerializeToString()), 'error', []),
        'no_graph': (b(helper.make_model(helper.make_graph([], 'g', [], []))), 'error', ['no outputs']),
        # Versions and domains.
        'opset_999': (b(model([helper.make_node('Relu', ['x'], ['y'], name='relu0')], [vi('x', [4])], [vi('y', [4])],
                              opset=999)), 'error', ['opset 999']),
        'no_default_opset': (b(helper.make_model(helper.make_graph([helper.make_node('Relu', ['x'], ['y'])], 'g',
                                                                   [vi('x', [4])], [vi('y', [4])]),
                                                 opset_imports=[helper.make_opsetid('com.example', 1)])), 'error', []),
        'unknown_domain': (b(model([helper.make_node('Foo', ['x'], ['y'], name='foo0', domain='com.example')],
                                   [vi('x', [4])], [vi('y', [4])])), 'error', ['com.example']),
        'unknown_op': (b(model([helper.make_node('NoSuchOp', ['x'], ['y'], name='nosuch0')], [vi('x', [4])],
                               [vi('y', [4])])), 'error', ['NoSuchOp']),
        'ir_version_0': (b(model([helper.make_node('Relu', ['x'], ['y'], name='relu0')], [vi('x', [4])], [vi('y', [4])],
                                 ir=0)), 'error', []),
        # Dimensions and shapes.
        # A negative size declares a dimension unknown (Paddle writes -1): sized per run.
        'negative_dim': (b(unary('Relu', 'relu0', [-3, 4], [-3, 4])), 'ok', []),
        'zero_dim': (b(unary('Relu', 'relu0', [0, 4], [0, 4])), 'survive', []),
        'huge_dim_2p40': (b(unary('Relu', 'relu_huge', [1 << 20, 1 << 20], [1 << 20, 1 << 20])), 'error', ['--max-arena']),
        'huge_dim_2p60': (b(unary('Relu', 'relu_huger', [1 << 30, 1 << 30], [1 << 30, 1 << 30])), 'error', ['--max-arena']),
        'overflowing_reshape': (b(model([helper.make_node('Reshape', ['x', 's'], ['y'], name='reshape_overflow')],
                                        [vi('x', [1, 1, 8, 8])], [vi('y', [1 << 40] * 3)],
                                        [helper.make_tensor('s', TensorProto.INT64, [3], [1 << 40] * 3)])),
                                'error', ['reshape_overflow']),
        'reshape_bad_count': (b(model([helper.make_node('Reshape', ['x', 's'], ['y'], name='reshape_bad')],
                                      [vi('x', [2, 3])], [vi('y', [7])],
                                      [helper.make_tensor('s', TensorProto.INT64, [1], [7])])), 'error', ['reshape_bad']),
        # A dimension nothing bounds is sized per run (no flag needed).
        'dynamic_dim': (b(unary('Relu', 'relu0', ['n', 4], ['n', 4])), 'ok', []),
        # Zero or negative strides, kernels, groups.
        'conv_strides_0': (b(conv({'strides': [0, 0]})), 'error', ['bad_conv', 'strides']),
        'conv_strides_neg': (b(conv({'strides': [-1, 1]})), 'error', ['bad_conv', 'strides']),
        'conv_dilations_0': (b(conv({'dilations': [0, 1]})), 'error', ['bad_conv', 'dilations']),
        'conv_group_0': (b(conv({'group': 0})), 'error', ['bad_conv', 'group']),
        'conv_group_mismatch': (b(conv({'group': 3}, x_shape=(1, 4, 8, 8), w_shape=(3, 1, 3, 3),
                                       out_shape=(1, 3, 6, 6))), 'error', ['bad_conv']),
        'conv_kernel_0': (b(conv({'kernel_shape': [0, 0]})), 'error', ['bad_conv', 'kernel_shape']),
        'conv_pads_negative': (b(conv({'pads': [-2, -2, -2, -2]})), 'error', ['bad_conv']),
        'conv_weight_rank': (b(conv({}, w_shape=(1, 1, 3))), 'error', ['bad_conv']),
        'convtranspose_strides_0': (b(conv({'strides': [0, 0]}, out_shape=(1, 1, 10, 10), op='ConvTranspose')),
                                    'error', ['bad_convtranspose', 'strides']),
        'maxpool_kernel_0': (b(unary('MaxPool', 'pool0', [1, 1, 8, 8], [1, 1, 8, 8], kernel_shape=[0, 0])),
                             'error', ['pool0', 'kernel_shape']),
        'averagepool_strides_0': (b(unary('AveragePool', 'avg0', [1, 1, 8, 8], [1, 1, 7, 7], kernel_shape=[2, 2],
                                          strides=[0, 0])), 'error', ['avg0', 'strides']),
        'lppool_kernel_0': (b(unary('LpPool', 'lp0', [1, 1, 8, 8], [1, 1, 8, 8], kernel_shape=[0, 1])),
                            'error', ['lp0', 'kernel_shape']),
        'depthtospace_blocksize_0': (b(unary('DepthToSpace', 'd2s0', [1, 4, 2, 2], [1, 1, 4, 4], blocksize=0)),
                                     'error', ['d2s0', 'blocksize']),
        'spacetodepth_blocksize_0': (b(unary('SpaceToDepth', 's2d0', [1, 1, 4, 4], [1, 4, 2, 2], blocksize=0)),
                                     'error', ['s2d0', 'blocksize']),
        'strides_as_floats': (b(conv({'strides': [1.0, 1.0]})), 'error', []),
        # Graph structure.
        'cycle_self': (b(model([helper.make_node('Add', ['x', 'y'], ['y'], name='self_loop')], [vi('x', [4])],
                               [vi('y', [4])])), 'error', []),
        'cycle_two_nodes': (b(model([helper.make_node('Relu', ['b'], ['a'], name='na'),
                                     helper.make_node('Relu', ['a'], ['b'], name='nb'),
                                     helper.make_node('Add', ['x', 'a'], ['y'], name='nc')],
                                    [vi('x', [4])], [vi('y', [4])])), 'error', []),
        'missing_input': (b(model([helper.make_node('Add', ['x', 'nowhere'], ['y'], name='add_missing')],
                                  [vi('x', [4])], [vi('y', [4])])), 'error', ['nowhere']),
        'output_not_produced': (b(model([helper.make_node('Relu', ['x'], ['r'], name='relu0')], [vi('x', [4])],
                                        [vi('y', [4])])), 'error', ["'y'"]),
        'duplicate_outputs': (b(model([helper.make_node('Relu', ['x'], ['y'], name='r1'),
                                       helper.make_node('Relu', ['x'], ['y'], name='r2')],
                                      [vi('x', [4])], [vi('y', [4])])), 'error', []),
        'input_without_type': (b(model([helper.make_node('Relu', ['x'], ['y'], name='relu0')],
                                       [helper.make_empty_tensor_value_info('x')], [vi('y', [4])])), 'error', []),
        'matmul_mismatch': (b(model([helper.make_node('MatMul', ['x', 'w'], ['y'], name='mm0')], [vi('x', [2, 3])],
                                    [vi('y', [2, 5])], [tensor('w', [4, 5])])), 'error', ['mm0']),
        'concat_axis_out_of_range': (b(model([helper.make_node('Concat', ['x', 'x'], ['y'], name='cat0', axis=5)],
                                             [vi('x', [2, 3])], [vi('y', [4, 3])])), 'error', ['cat0']),
        'softmax_axis_out_of_range': (b(unary('Softmax', 'sm0', [2, 3], [2, 3], axis=7)), 'error', ['sm0']),
        'transpose_bad_perm': (b(unary('Transpose', 'tr0', [2, 3], [3, 2], perm=[0, 0])), 'error', ['tr0']),
        'topk_k_too_large': (b(model([helper.make_node('TopK', ['x', 'k'], ['v', 'i'], name='topk0')],
                                     [vi('x', [1, 4])], [vi('v', [1, 9]), vi('i', [1, 9], TensorProto.INT64)],
                                     [helper.make_tensor('k', TensorProto.INT64, [1], [9])])), 'error', ['topk0']),
        'initializer_wrong_size': (b(model([helper.make_node('Add', ['x', 'w'], ['y'], name='add0')], [vi('x', [4])],
                                           [vi('y', [4])], [short_tensor()])), 'error', ["'w'"]),
        # String tensors (docs/bundle.md#string-tensors): a constant copied out compiles; one
        # whose shape claims more strings than it holds is refused, naming it.
        'string_tensor': (b(model([helper.make_node('Identity', ['s'], ['y'], name='id0')], [], [vi('y', [2], TensorProto.STRING)],
                                  [helper.make_tensor('s', TensorProto.STRING, [2], [b'a', b'b'])])), 'ok', []),
        'string_count_mismatch': (b(model([helper.make_node('Identity', ['s'], ['y'], name='id1')], [],
                                          [vi('y', [3], TensorProto.STRING)], [short_strings('s')])),
                                  'error', ["'s'"]),
        'constant_without_value': (b(model([helper.make_node('Constant', [], ['c'], name='const0'),
                                            helper.make_node('Add', ['x', 'c'], ['y'], name='add0')],
                                           [vi('x', [4])], [vi('y', [4])])), 'error', []),
        'dropout_training': (b(model([helper.make_node('Dropout', ['x', 'ratio', 'train'], ['y'], name='drop0')],
                                     [vi('x', [4])], [vi('y', [4])],
                                     [tensor('ratio', [], [0.5]), helper.make_tensor('train', TensorProto.BOOL, [], [True])])),
                             'ok', []),  # training mode compiles (ops_random.cpp, decision 46)
        'dropout_ratio_not_scalar': (b(model([helper.make_node('Dropout', ['x', 'ratio', 'train'], ['y'], name='drop1')],
                                             [vi('x', [4])], [vi('y', [4])],
                                             [tensor('ratio', [2], [0.5, 0.25]),
                                              helper.make_tensor('train', TensorProto.BOOL, [], [True])])),
                                     'error', ['drop1']),
        'slice_runtime_starts': (b(model([helper.make_node('Slice', ['x', 'st', 'en'], ['y'], name='slice0')],
                                         [vi('x', [8]), vi('st', [1], TensorProto.INT64)], [vi('y', [4])],
                                         [helper.make_tensor('en', TensorProto.INT64, [1], [8])])), 'ok', []),
        # Run-time pads decide a size with no bound the compiler can see: read at run time, the
        # output sized per run (the declared [10] a condition the run checks).
        'pad_runtime_pads': (b(model([helper.make_node('Pad', ['x', 'pads'], ['y'], name='pad0')],
                                     [vi('x', [8]), vi('pads', [2], TensorProto.INT64)], [vi('y', [10])])),
                             'ok', []),
        # Sequences known at compile time (import/static_sequences.cpp): bad positions and sizes.
        'sequence_at_out_of_range': (b(model([helper.make_node('SequenceConstruct', ['x', 'x'], ['s'], name='seq0'),
                                              helper.make_node('SequenceAt', ['s', 'p'], ['y'], name='seqat0')],
                                             [vi('x', [4])], [vi('y', [4])],
                                             [helper.make_tensor('p', TensorProto.INT64, [], [5])])),
                                     'error', ['seqat0', 'out of range']),
        # (ONNX's shape inference refuses these first, naming the node; kilnc's own checks in
        # import/static_sequences.cpp stand behind it.)
        'split_to_sequence_bad_sizes': (b(model([helper.make_node('SplitToSequence', ['x', 'sp'], ['s'], name='sts0'),
                                                 helper.make_node('SequenceAt', ['s', 'p'], ['y'], name='seqat1')],
                                                [vi('x', [4]), vi('sp', [2], TensorProto.INT64)], [vi('y', [3])],
                                                [helper.make_tensor('sp', TensorProto.INT64, [2], [3, 3]),
                                                 helper.make_tensor('p', TensorProto.INT64, [], [0])])),
                                        'error', ['sts0']),
        'split_to_sequence_huge_split': (b(model([helper.make_node('SplitToSequence', ['x', 'sp'], ['s'], name='sts1'),
                                                  helper.make_node('SequenceAt', ['s', 'p'], ['y'], name='seqat2')],
                                                 [vi('x', [4]), vi('sp', [2], TensorProto.INT64)], [vi('y', [3])],
                                                 [helper.make_tensor('sp', TensorProto.INT64, [2], [(1 << 62), (1 << 62)]),
                                                  helper.make_tensor('p', TensorProto.INT64, [], [0])])),
                                         'error', ['sts1']),
        'sequence_at_value_int': (b(model([helper.make_node('SequenceConstruct', ['x', 'x'], ['s'], name='seq1'),
                                           helper.make_node('Constant', [], ['p'], name='c0', value_int=1),
                                           helper.make_node('SequenceAt', ['s', 'p'], ['y'], name='seqat3')],
                                          [vi('x', [4])], [vi('y', [4])])), 'ok', []),
        'concat_from_empty_sequence': (b(model([helper.make_node('SequenceEmpty', [], ['s'], name='se0'),
                                                helper.make_node('ConcatFromSequence', ['s'], ['y'], name='cfs0', axis=0)],
                                               [vi('x', [4])], [vi('y', [4])])),
                                       'error', ['cfs0', 'empty']),
        'einsum_bad_equation': (b(model([helper.make_node('Einsum', ['x'], ['y'], name='es0', equation='ij->k')],
                                        [vi('x', [2, 2])], [vi('y', [2])])), 'error', ['es0']),
        'loop_subgraph': (b(nested_if(1)), 'ok', []),  # a run-time If, nested once: both branches predicated
        'nested_subgraphs_64': (b(nested_if(64)), 'error', []),
        # External data.
        'external_dotdot': (b(external('../secret.bin')), 'error', ['relative path inside the model']),
        'external_absolute': (b(external(secret)), 'error', ['relative path inside the model']),
        'external_symlink_out': (with_symlink('w.bin', secret, external('w.bin')), 'error', ['outside the model']),
        'external_symlink_etc_passwd': (with_symlink('w.bin', '/etc/passwd', external('w.bin', 0, 16)), 'error',
                                        ['outside the model']),
        'external_proc': (with_symlink('w.bin', '/proc/self/environ', external('w.bin', 0, 16)), 'error',
                          ['outside the model']),
        'external_huge_offset': (with_file('w.bin', b'\0' * 16, external('w.bin', 1 << 62, 16)), 'error', ['outside']),
        'external_overflow': (with_file('w.bin', b'\0' * 16, external('w.bin', (1 << 63) - 1, 10)), 'error', ['outside']),
        'external_offset_not_a_number': (with_file('w.bin', b'\0' * 16, external('w.bin', '12abc', 16)), 'error',
                                         ['offset']),
        'external_offset_negative': (with_file('w.bin', b'\0' * 16, external('w.bin', -5, 16)), 'error', ['offset']),
        'external_missing_file': (b(external('nope.bin')), 'error', ['does not exist']),
        'external_directory': (lambda d: (os.mkdir(os.path.join(d, 'adir')), external('adir').SerializeToString())[1],
                               'error', ['not a regular file']),
        'external_short_file': (with_file('w.bin', b'\0' * 8, external('w.bin', 0, 16)), 'error', ['outside']),
        'external_ok': (with_file('w.bin', np.arange(4, dtype=np.float32).tobytes(), external('w.bin')), 'ok', []),
        # Size and depth.
        'deep_chain_5000': (b(chain(5000)), 'ok', []),
        'long_node_name': (b(model([helper.make_node('Relu', ['x'], ['y'], name='n' * 100000)], [vi('x', [4])],
                                   [vi('y', [4])])), 'ok', []),
        # Mutations of a valid model.
        'truncated_half': (raw(valid[:len(valid) // 2]), 'survive', []),
        'truncated_one_byte': (raw(valid[:-1]), 'survive', []),
    }
    for i in range(8):
        data = bytearray(valid)
        for _ in range(1 + i):
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        c['flipped_bytes_%d' % i] = (raw(bytes(data)), 'survive', [])
    return c


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--kilnc', required=True)
    p.add_argument('--workdir', required=True)
    p.add_argument('--timeout', type=float, default=60)
    p.add_argument('--only', default='')
    args = p.parse_args(argv)
    if not os.path.isfile(args.kilnc):
        print('hostile_models: kilnc not found: %s' % args.kilnc, file=sys.stderr)
        return 2
    workdir = os.path.abspath(args.workdir)
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    with open(os.path.join(workdir, 'secret.bin'), 'wb') as f:
        f.write(SECRET * 8)
    table = cases(workdir)
    only = set(filter(None, args.only.split(',')))
    failed = []
    t_all = time.monotonic()
    for name, (build, expect, needles) in sorted(table.items()):
        if only and name not in only:
            continue
        d = os.path.join(workdir, name)
        os.makedirs(d)
        path = os.path.join(d, 'model.onnx')
        with open(path, 'wb') as f:
            f.write(build(d))
        out = os.path.join(d, 'model.kiln')
        t0 = time.monotonic()
        try:
            proc = subprocess.run([args.kilnc, path, '-o', out], capture_output=True, timeout=args.timeout)
            code, err = proc.returncode, proc.stderr.decode('utf-8', 'replace')
        except subprocess.TimeoutExpired:
            code, err = 'timeout', ''
        took = time.monotonic() - t0
        problems = []
        if code == 'timeout':
            problems.append('hung (more than %g s)' % args.timeout)
        elif code < 0:
            problems.append('killed by signal %d' % -code)
        elif code == 3 or 'internal compiler error' in err:
            problems.append('internal compiler error')
        elif expect == 'error':
            # Warnings ("kilnc: warning: ...": ONNX's checker or shape
            # inference complaining) may come first; the error is the last
            # line, and the needles must be in it, not in a warning.
            lines = [line for line in err.strip().split('\n') if line.strip()]
            error = lines[-1] if lines else ''
            if code != 1 or not error.startswith('kilnc: error:') or \
                    any(not line.startswith('kilnc: warning:') for line in lines[:-1]):
                problems.append('exit %s, expected 1 with "kilnc: error:" last, after warnings only' % code)
            for needle in needles:
                if needle not in error:
                    problems.append('message lacks %r' % needle)
        elif expect == 'ok' and code != 0:
            problems.append('exit %s, expected 0' % code)
        elif expect == 'survive' and code not in (0, 1):
            problems.append('exit %s' % code)
        if os.path.exists(out) and SECRET in open(out, 'rb').read():
            problems.append('the bundle holds bytes from outside the model folder')
        first = err.strip().split('\n')[-1][:160] if err else ''
        print('%-32s %-7s exit %-7s %5.1fs  %s%s' % (name, expect, code, took, 'FAIL: ' + '; '.join(problems) + ' | '
                                                     if problems else '', first), flush=True)
        if problems:
            failed.append(name)
    n = len(table) if not only else len(only)
    print('hostile models: %d cases, %d failed (%.0f s)%s' % (n, len(failed), time.monotonic() - t_all,
                                                           ': ' + ', '.join(failed) if failed else ''))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
