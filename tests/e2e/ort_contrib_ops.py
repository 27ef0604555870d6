#!/usr/bin/python3
"""ONNX Runtime's float and weight-quantized contrib operators (domain com.microsoft, as its
optimizer and quantizer write them: Gelu forms, layer norms, fused matmul/conv, the attention
family, rotary embeddings, MatMulNBits, dynamic quantization), which kilnc rewrites into standard
ONNX operators at import (compiler/import/contrib_ops.h), against ONNX Runtime itself on seeded
models and inputs.

  ort_contrib_ops.py --kilnc PATH --kiln PATH --ort-dir tests/ort --workdir DIR [--node node]
                     [--only CASE[,CASE...]] [--jobs N]

Each case is one model (several nodes of one operator, each with other attributes or inputs,
each node's result a model output), compiled by kilnc, run by `kiln run` and by ONNX Runtime
(tests/ort/ort_run.js); every output is compared at the case's tolerance (rtol 1e-4, atol 1e-5
unless the operator is approximate or quantized; those are stated with the case). Where ONNX
Runtime's CPU provider has no kernel for a form (BiasAdd, NhwcConv, MultiHeadAttention's packed
QKV/KV, Attention's 4-D mask), ONNX Runtime runs a reference model of the same outputs written
with the forms it runs. Last, forms kilnc refuses must fail with a message naming the node and
what is unsupported (exit status 1, no crash). Exit status 0 when everything passed.
"""

import concurrent.futures
import contextlib
import io
import os
import sys
import time
import zlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import kiln_e2e  # noqa: E402

MS = 'com.microsoft'
F32 = TensorProto.FLOAT


class Case:
    """One model: inputs (with their seeded values), initializers, nodes, outputs."""

    def __init__(self, name, opset=17, rtol=1e-4, atol=1e-5):
        self.name, self.opset, self.rtol, self.atol = name, opset, rtol, atol
        self.inputs, self.feeds, self.inits, self.nodes, self.outputs = [], {}, [], [], []
        self.reference = None  # a Case ONNX Runtime runs instead (same inputs and outputs)
        self.reference_feeds = None  # its own input values, where they differ
        self.max_abs_err = None  # instead of rtol/atol: every element within this of the reference

    def input(self, name, value):
        value = np.asarray(value)
        self.inputs.append(helper.make_tensor_value_info(name, onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[value.dtype],
                                                         list(value.shape)))
        self.feeds[name] = value
        return name

    def const(self, name, value):
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(self, op, ins, outs, domain=MS, **attrs):
        self.nodes.append(helper.make_node(op, ins, outs, name='%s_%d' % (op, len(self.nodes)), domain=domain,
                                           **attrs))
        return outs

    def output(self, name, dtype=F32):
        self.outputs.append(helper.make_tensor_value_info(name, dtype, None))
        return name

    def model(self):
        g = helper.make_graph(self.nodes, self.name, self.inputs, self.outputs, self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid('', self.opset), helper.make_opsetid(MS, 1)],
                              producer_name='ort_contrib_ops.py')
        m.ir_version = 8
        return m


def rand(rng, *shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


# ---------------------------------------------------------------------------
# Elementwise and normalization operators

def case_gelu(rng):
    c = Case('gelu')
    x = c.input('x', rand(rng, 2, 3, 16, scale=2.0))
    bias = c.const('bias', rand(rng, 16))
    c.node('FastGelu', [x], [c.output('fast_gelu')])
    c.node('FastGelu', [x, bias], [c.output('fast_gelu_bias')])
    c.node('Gelu', [x], [c.output('gelu')])
    c.node('BiasGelu', [x, bias], [c.output('bias_gelu')])
    c.node('QuickGelu', [x], [c.output('quick_gelu')])
    c.node('QuickGelu', [x], [c.output('quick_gelu_alpha')], alpha=0.75)
    return c


def case_bias_add(rng):
    c = Case('bias_add')
    x, s = c.input('x', rand(rng, 2, 9, 8)), c.input('skip', rand(rng, 2, 9, 8))
    b = c.const('bias', rand(rng, 8))
    c.node('BiasAdd', [x, b, s], [c.output('y')])
    ref = Case('bias_add_reference')  # ONNX Runtime's CPU provider has no BiasAdd kernel
    ref.inputs, ref.inits, ref.outputs = c.inputs, c.inits, c.outputs
    ref.node('Add', ['x', 'bias'], ['xb'], domain='')
    ref.node('Add', ['xb', 'skip'], ['y'], domain='')
    c.reference = ref
    return c


def case_layer_norms(rng, opset):
    c = Case('layer_norms_opset%d' % opset, opset=opset)
    H = 32
    x = c.input('x', rand(rng, 2, 5, H, scale=3.0) + 1.0)
    skip = c.input('skip', rand(rng, 2, 5, H))
    skip2 = c.input('skip_2d', rand(rng, 5, H))
    gamma, beta, bias = c.const('gamma', rand(rng, H)), c.const('beta', rand(rng, H)), c.const('bias', rand(rng, H))
    c.node('SkipLayerNormalization', [x, skip, gamma, beta, bias], [c.output('sln'), '', '', c.output('sln_sum')],
           epsilon=1e-5)
    c.node('SkipLayerNormalization', [x, skip2, gamma], [c.output('sln_plain')])
    c.node('SkipSimplifiedLayerNormalization', [x, skip, gamma, bias],
           [c.output('ssln'), '', '', c.output('ssln_sum')], epsilon=1e-6)
    c.node('SkipSimplifiedLayerNormalization', [x, skip2, gamma], [c.output('ssln_plain')])
    c.node('SimplifiedLayerNormalization', [x, gamma], [c.output('rms')], domain='', epsilon=1e-6)
    scale2 = c.const('scale_2d', rand(rng, 5, H))
    c.node('SimplifiedLayerNormalization', [x, scale2], [c.output('rms_axis')], domain='', axis=-2)
    return c


def case_embed_layer_norm(rng):
    c = Case('embed_layer_norm')
    B, S, H, V = 2, 7, 16, 30
    ids = c.input('ids', rng.integers(0, V, (B, S)).astype(np.int32))
    seg = c.input('segment', rng.integers(0, 2, (B, S)).astype(np.int32))
    mask = np.ones((B, S), np.int32)
    mask[0, 5:] = 0
    mask[1, 2] = 0
    mask = c.input('mask', mask)
    pos_ids = c.input('position_ids', rng.permutation(S).reshape(1, S).astype(np.int32))
    we, pe, se = c.const('word', rand(rng, V, H)), c.const('pos', rand(rng, 10, H)), c.const('seg', rand(rng, 2, H))
    gamma, beta = c.const('gamma', rand(rng, H)), c.const('beta', rand(rng, H))
    c.node('EmbedLayerNormalization', [ids, seg, we, pe, se, gamma, beta, mask],
           [c.output('y'), c.output('mask_index', TensorProto.INT32), c.output('emb_sum')], epsilon=1e-5)
    c.node('EmbedLayerNormalization', [ids, seg, we, pe, se, gamma, beta, '', pos_ids],
           [c.output('y_pos'), c.output('mask_index_none', TensorProto.INT32)])
    return c


# ---------------------------------------------------------------------------
# Matrix products and convolutions

def case_fused_matmul(rng):
    c = Case('fused_matmul')
    M, K, N = 4, 6, 5
    a, b = rand(rng, 2, 3, M, K), rand(rng, 2, 3, K, N)
    i = 0
    for ta, tb, ba, bb, alpha in [(0, 0, 0, 0, 1.0), (1, 0, 0, 0, 0.5), (0, 1, 0, 0, 2.0), (1, 1, 0, 0, 1.0),
                                  (0, 0, 1, 0, 1.0), (1, 0, 1, 1, 0.25), (0, 1, 0, 1, 1.0)]:
        def layout(x, trans, batch):  # the stored operand whose transBatch/trans view is x
            if trans:
                x = np.swapaxes(x, -1, -2)
            if batch:
                x = np.transpose(x, [x.ndim - 2] + list(range(x.ndim - 2)) + [x.ndim - 1])
            return np.ascontiguousarray(x)
        an = c.input('a%d' % i, layout(a, ta, ba))
        bn = c.input('b%d' % i, layout(b, tb, bb))
        c.node('FusedMatMul', [an, bn], [c.output('y%d' % i)], alpha=alpha, transA=ta, transB=tb,
               transBatchA=ba, transBatchB=bb)
        i += 1
    a2, b2 = c.input('a2d', rand(rng, 3, K)), c.const('b2d', rand(rng, N, K))
    c.node('FusedMatMul', [a2, b2], [c.output('y2d')], transB=1, alpha=0.5)
    return c


def case_fused_conv(rng):
    c = Case('fused_conv')
    x = c.input('x', rand(rng, 1, 4, 9, 9))
    acts = [('Relu', []), ('Tanh', []), ('Sigmoid', []), ('LeakyRelu', [0.2]), ('Clip', [-0.5, 0.7]),
            ('HardSigmoid', [0.3, 0.4]), ('', [])]
    for i, (act, params) in enumerate(acts):
        w, b = c.const('w%d' % i, rand(rng, 6, 4 // (2 if i == 3 else 1), 3, 3)), c.const('b%d' % i, rand(rng, 6))
        attrs = {'kernel_shape': [3, 3], 'pads': [1, 1, 1, 1] if i % 2 else [0, 0, 0, 0]}
        if i == 3:
            attrs['group'] = 2
        if i == 5:
            attrs['strides'] = [2, 2]
        if act:
            attrs['activation'] = act
        if params:
            attrs['activation_params'] = params
        ins = [x, w, b]
        if i in (0, 4):  # Z, added before the activation
            out_hw = 9 if i % 2 else 7
            ins.append(c.input('z%d' % i, rand(rng, 1, 6, out_hw, out_hw)))
        c.node('FusedConv', ins, [c.output('y%d_%s' % (i, act or 'none'))], **attrs)
    return c


def case_nhwc_conv(rng):
    c = Case('nhwc_conv')
    x = c.input('x', rand(rng, 1, 8, 8, 4))
    w, b = c.const('w', rand(rng, 6, 3, 3, 4)), c.const('b', rand(rng, 6))  # [M, kH, kW, C]
    w2 = c.const('w2', rand(rng, 4, 1, 1, 2))
    c.node('NhwcConv', [x, w, b], [c.output('y')], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2])
    c.node('NhwcConv', [x, w2], [c.output('y_group')], group=2)
    ref = Case('nhwc_conv_reference')  # ONNX Runtime's CPU provider has no NhwcConv kernel
    ref.inputs, ref.inits, ref.outputs = c.inputs, c.inits, c.outputs
    ref.node('Transpose', ['x'], ['xt'], domain='', perm=[0, 3, 1, 2])
    for wn, y, attrs in [('w', 'y', dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2])),
                         ('w2', 'y_group', dict(group=2))]:
        ref.node('Transpose', [wn], [wn + 't'], domain='', perm=[0, 3, 1, 2])
        ref.node('Conv', ['xt', wn + 't'] + (['b'] if wn == 'w' else []), [y + 'c'], domain='', **attrs)
        ref.node('Transpose', [y + 'c'], [y], domain='', perm=[0, 2, 3, 1])
    c.reference = ref
    return c


# ---------------------------------------------------------------------------
# Attention

def case_attention(rng):
    c = Case('attention')
    B, S, Din, N, H = 2, 5, 12, 2, 8
    x = c.input('x', rand(rng, B, S, Din))
    mask_1d = c.input('mask_lengths', np.array([3, 5], np.int32))
    mask_2b = c.input('mask_end_start', np.array([4, 5, 1, 0], np.int32))
    raw = np.ones((B, S), np.int32)
    raw[0, 3:] = 0
    raw[1, 1] = 0
    mask_2d = c.input('mask_2d', raw)
    m3 = (rng.random((B, S, S)) > 0.3).astype(np.int32)
    m3[:, :, 0] = 1
    mask_3d = c.input('mask_3d', m3)
    P = 3
    past = c.input('past', rand(rng, 2, B, N, P, H))
    mask_past = c.input('mask_2d_past', np.concatenate([np.ones((B, P), np.int32), raw], 1))
    abias = c.input('attention_bias', rand(rng, B, 1, S, S))
    i = [0]

    def attn(ins, outs, sizes=None, **attrs):
        hq, hk, hv = sizes or (N * H, N * H, N * H)
        w = c.const('w%d' % i[0], rand(rng, Din, hq + hk + hv, scale=0.5))
        b = c.const('b%d' % i[0], rand(rng, hq + hk + hv))
        if sizes:
            attrs['qkv_hidden_sizes'] = list(sizes)
        c.node('Attention', [x, w, b] + ins, [c.output(o) for o in outs], num_heads=N, **attrs)
        i[0] += 1
    attn([], ['plain'])
    attn([], ['unequal_sizes'], sizes=(N * H, N * H, N * 4))
    attn([mask_1d], ['key_lengths'])
    attn([mask_2b], ['end_start'])
    attn([mask_2d], ['raw_mask'], mask_filter_value=-500.0)
    attn([mask_3d], ['mask_3d_causal'], unidirectional=1)
    attn(['', past], ['past_causal', 'present'], unidirectional=1)
    attn([mask_past, past], ['past_raw_mask', 'present_2'])
    attn(['', '', abias], ['with_attention_bias'], scale=0.3)
    return c


def case_attention_4d_mask(rng):
    # ONNX Runtime's CPU kernel has no 4-D (Megatron) mask [B, 1, M, M]: the
    # reference is the same node with the 3-D mask of rows P..P+S and columns
    # 0..T of it.
    B, S, Din, N, H, P, M = 2, 4, 8, 2, 4, 2, 8
    m4 = (rng.random((B, 1, M, M)) > 0.3).astype(np.int32)
    m4[..., 0] = 1
    x, past = rand(rng, B, S, Din), rand(rng, 2, B, N, P, H)
    w, b = rand(rng, Din, 3 * N * H), rand(rng, 3 * N * H)
    cases = []
    for name, mask in (('attention_4d_mask', m4), ('attention_4d_mask_reference', m4[:, 0, P:P + S, :P + S])):
        c = Case(name)
        c.input('x', x)
        c.input('past', past)
        c.input('mask', np.ascontiguousarray(mask))
        c.const('w', w)
        c.const('b', b)
        c.node('Attention', ['x', 'w', 'b', 'mask', 'past'], [c.output('y'), c.output('present')], num_heads=N,
               unidirectional=1)
        cases.append(c)
    # the reference reads its own mask: same input name, the 3-D value
    cases[0].reference = cases[1]
    cases[0].reference_feeds = cases[1].feeds
    return cases[0]


def case_mha(rng):
    c = Case('multi_head_attention')
    B, S, L, N, H, P = 2, 4, 6, 2, 8, 3
    q = c.input('q', rand(rng, B, S, N * H))
    k, v = c.input('k', rand(rng, B, L, N * H)), c.input('v', rand(rng, B, L, N * H))
    ks, vs = c.input('k_self', rand(rng, B, S, N * H)), c.input('v_self', rand(rng, B, S, N * H))
    k4, v4 = c.input('k_bnsh', rand(rng, B, N, L, H)), c.input('v_bnsh', rand(rng, B, N, L, H))
    pk, pv = c.input('past_key', rand(rng, B, N, P, H)), c.input('past_value', rand(rng, B, N, P, H))
    bias = c.const('bias', rand(rng, 3 * N * H))
    lengths = c.input('key_lengths', np.array([4, 6], np.int32))
    raw = np.ones((B, L), np.int32)
    raw[0, 4:] = 0
    raw[1, 0] = 0
    raw = c.input('key_mask_2d', raw)
    m3 = (rng.random((B, S, L)) > 0.3).astype(np.int32)
    m3[:, :, 1] = 1
    m3 = c.input('key_mask_3d', m3)
    ab = c.input('attention_bias', rand(rng, 1, N, S, L))
    def mha(ins, outs, **a):
        c.node('MultiHeadAttention', ins, [c.output(o) for o in outs], num_heads=N, **a)
    mha([q, k, v], ['cross'])
    mha([q, k, v, bias], ['cross_bias'])
    mha([q, k4, v4, bias], ['bnsh_kv', 'bnsh_present_key', 'bnsh_present_value'])
    mha([q, k, v, '', lengths], ['key_lengths_out'])
    mha([q, k, v, bias, raw], ['key_mask_2d_out'], mask_filter_value=-1000.0)
    mha([q, k, v, '', m3], ['key_mask_3d_out'])
    mha([q, k, v, '', '', ab], ['attention_bias_out'], scale=0.25)
    mha([q, ks, vs, bias, '', '', pk, pv], ['self_past_causal', 'present_key', 'present_value'], unidirectional=1)
    mha([q, k, v], ['cross_causal'], unidirectional=1)  # ONNX Runtime leaves the last row unmasked
    return c


def case_mha_packed(rng):
    # ONNX Runtime's CPU kernel has no packed QKV / KV: the reference unpacks
    # them with Gather and Reshape and runs the unpacked node.
    B, S, L, N, H = 2, 3, 5, 2, 8
    c, ref = Case('multi_head_attention_packed'), Case('multi_head_attention_packed_reference')
    q, kv, qkv = rand(rng, B, S, N * H), rand(rng, B, L, N, 2, H), rand(rng, B, S, N, 3, H)
    for case in (c, ref):
        case.input('q', q)
        case.input('kv', kv)
        case.input('qkv', qkv)
    c.node('MultiHeadAttention', ['q', 'kv'], [c.output('packed_kv')], num_heads=N)
    c.node('MultiHeadAttention', ['qkv'], [c.output('packed_qkv')], num_heads=N, scale=0.5)
    ref.const('shape', np.array([0, 0, -1], np.int64))
    for src, parts in (('kv', ['k', 'v']), ('qkv', ['qs', 'ks', 'vs'])):
        for i, part in enumerate(parts):
            ref.const(part + '_index', np.array(i, np.int64))
            ref.node('Gather', [src, part + '_index'], [part + '4'], domain='', axis=3)
            ref.node('Reshape', [part + '4', 'shape'], [part], domain='')
    ref.node('MultiHeadAttention', ['q', 'k', 'v'], ['packed_kv'], num_heads=N)
    ref.node('MultiHeadAttention', ['qs', 'ks', 'vs'], ['packed_qkv'], num_heads=N, scale=0.5)
    ref.outputs = c.outputs
    c.reference = ref
    return c


def case_qattention(rng):
    # atol 1e-4: the attention's float softmax over int8 products dequantized in a different order.
    c = Case('qattention', rtol=1e-4, atol=1e-4)
    B, S, Din, N, H = 2, 4, 16, 2, 8
    xq = c.input('x', rng.integers(0, 256, (B, S, Din)).astype(np.uint8))
    lengths = c.input('key_lengths', np.array([2, 4], np.int32))
    P = 2
    past = c.input('past', rand(rng, 2, B, N, P, H))
    xs, xz = c.const('x_scale', np.float32(0.02)), c.const('x_zero_point', np.uint8(128))
    for i, (wt, per_column) in enumerate([(np.int8, False), (np.uint8, True), (np.int8, True)]):
        # int8 weights in [-64, 63], as ONNX Runtime's quantizer writes them (reduce_range): its
        # u8s8 kernels without VNNI add pairs of products in int16 and would saturate
        w = rng.integers(-64, 64, (Din, 3 * N * H)) if wt == np.int8 else rng.integers(0, 256, (Din, 3 * N * H))
        w = c.const('w%d' % i, w.astype(wt))
        shape = (3 * N * H,) if per_column else ()
        ws = c.const('w_scale%d' % i, (rng.random(shape) * 0.01 + 0.005).astype(np.float32))
        wz = c.const('w_zero_point%d' % i, np.full(shape, 0 if wt == np.int8 else 120, wt))
        bias = c.const('bias%d' % i, rand(rng, 3 * N * H))
        ins = [xq, w, bias, xs, ws, [lengths, '', ''][i], xz, wz] + ([past] if i == 2 else [])
        outs = ['y%d' % i] + (['present'] if i == 2 else [])
        c.node('QAttention', ins, [c.output(o) for o in outs], num_heads=N, unidirectional=1 if i == 2 else 0)
    return c


def gqa_inputs(c, rng, tag, B, S, P, N, NKV, H, seqlens, packed=False):
    q = rand(rng, B, S, N * H)
    k, v = rand(rng, B, S, NKV * H), rand(rng, B, S, NKV * H)
    ins = [c.input('query_' + tag, np.concatenate([q, k, v], -1) if packed else q)]
    ins += ['', ''] if packed else [c.input('key_' + tag, k), c.input('value_' + tag, v)]
    if P:
        ins += [c.input('past_key_' + tag, rand(rng, B, NKV, P, H)),
                c.input('past_value_' + tag, rand(rng, B, NKV, P, H))]
    else:
        ins += ['', '']
    ins += [c.input('seqlens_k_' + tag, np.array(seqlens, np.int32)),
            c.input('total_len_' + tag, np.array(max(seqlens) + 1, np.int32))]
    return ins


def case_gqa(rng):
    c = Case('group_query_attention')
    B, N, NKV, H = 2, 4, 2, 16
    cos_sin = rng.random((32, H // 2)).astype(np.float32) * 3
    cos, sin = c.const('cos', np.cos(cos_sin)), c.const('sin', np.sin(cos_sin))
    def gqa(ins, tag, **a):
        outs = [c.output('y_' + tag), c.output('present_key_' + tag), c.output('present_value_' + tag)]
        c.node('GroupQueryAttention', ins, outs, num_heads=N, kv_num_heads=NKV, **a)
    # the first prompt (S == total_sequence_length), then decoding with each batch's own past length
    gqa(gqa_inputs(c, rng, 'prompt', B, 6, 0, N, NKV, H, [5, 5]), 'prompt')
    gqa(gqa_inputs(c, rng, 'prompt_rotary', B, 6, 0, N, NKV, H, [5, 5]) + [cos, sin], 'prompt_rotary', do_rotary=1,
        local_window_size=2)
    gqa(gqa_inputs(c, rng, 'decode', B, 1, 5, N, NKV, H, [5, 3]), 'decode', softcap=2.0, scale=0.3,
        local_window_size=3)
    gqa(gqa_inputs(c, rng, 'decode_rotary', B, 1, 5, N, NKV, H, [5, 2]) + [cos, sin], 'decode_rotary', do_rotary=1,
        rotary_interleaved=1)
    gqa(gqa_inputs(c, rng, 'packed', B, 1, 4, N, NKV, H, [4, 4], packed=True) + [cos, sin], 'packed', do_rotary=1,
        smooth_softmax=1)
    return c


def case_gqa_extra(rng):
    # attention_bias, head_sink, position_ids and a partial rotation (H 32, the caches 8 wide)
    c = Case('group_query_attention_extra')
    B, N, NKV, H = 2, 4, 1, 32
    ang = rng.random((16, 8)).astype(np.float32) * 3
    cos, sin = c.const('cos', np.cos(ang)), c.const('sin', np.sin(ang))
    def gqa(ins, tag, **a):
        outs = [c.output('y_' + tag), c.output('present_key_' + tag), c.output('present_value_' + tag)]
        c.node('GroupQueryAttention', ins, outs, num_heads=N, kv_num_heads=NKV, **a)
    gqa(gqa_inputs(c, rng, 'partial', B, 1, 3, N, NKV, H, [3, 2]) + [cos, sin], 'partial', do_rotary=1)
    ins = gqa_inputs(c, rng, 'bias', B, 4, 0, N, NKV, H, [3, 3])
    gqa(ins + ['', '', '', c.input('attention_bias', rand(rng, B, 1, 4, 4))], 'bias')
    ins = gqa_inputs(c, rng, 'sink', B, 4, 0, N, NKV, H, [3, 3])
    gqa(ins + ['', '', '', '', c.const('head_sink', rand(rng, N))], 'sink')
    ins = gqa_inputs(c, rng, 'pos', B, 1, 3, N, NKV, H, [3, 3])
    gqa(ins + [cos, sin, c.input('position_ids', np.array([[7], [2]], np.int64))], 'pos', do_rotary=1)
    return c


def case_rotary(rng):
    c = Case('rotary_embedding')
    B, S, N, H, MAXP = 2, 5, 2, 16, 20
    ang = rng.random((MAXP, H // 2)).astype(np.float32) * 3
    cos, sin = c.const('cos', np.cos(ang)), c.const('sin', np.sin(ang))
    ang4 = rng.random((MAXP, 4)).astype(np.float32) * 3
    cos4, sin4 = c.const('cos_partial', np.cos(ang4)), c.const('sin_partial', np.sin(ang4))
    x3 = c.input('x3', rand(rng, B, S, N * H))
    x4 = c.input('x4', rand(rng, B, N, S, H))
    pos = c.input('position_ids', rng.integers(0, MAXP, (B, S)).astype(np.int64))
    start = c.input('position_start', np.array([3], np.int64))
    rot = lambda ins, out, **a: c.node('RotaryEmbedding', ins, [c.output(out)], **a)  # noqa: E731
    rot([x3, pos, cos, sin], 'bsd_heads', num_heads=N)
    rot([x3, pos, cos, sin], 'bsd_interleaved', num_heads=N, interleaved=1)
    rot([x3, start, cos, sin], 'bsd_start')
    rot([x4, pos, cos, sin], 'bnsh')
    rot([x4, start, cos, sin], 'bnsh_interleaved', interleaved=1)
    rot([x3, pos, cos4, sin4], 'bsd_partial', num_heads=N, rotary_embedding_dim=8)
    rot([x4, pos, cos4, sin4], 'bnsh_partial_interleaved', num_heads=N, rotary_embedding_dim=8, interleaved=1)
    return c


def case_opset12(rng):
    # The forms of older opsets: Unsqueeze/Squeeze/ReduceMean/Split with attributes, no
    # LayerNormalization (decomposed).
    c = Case('opset12', opset=12)
    B, S, Din, N, H, P = 2, 4, 12, 2, 8, 3
    x = c.input('x', rand(rng, B, S, Din))
    lengths = c.input('lengths', np.array([4, 6], np.int32))
    past = c.input('past', rand(rng, 2, B, N, P, H))
    c.node('Attention', [x, c.const('w', rand(rng, Din, 3 * N * H, scale=0.5)), c.const('b', rand(rng, 3 * N * H)),
                         lengths, past], [c.output('attention'), c.output('present')], num_heads=N, unidirectional=1,
           qkv_hidden_sizes=[N * H] * 3)  # (with a past, V's width is Q's)
    q = c.input('q', rand(rng, B, S, N * H))
    k, v = c.input('k', rand(rng, B, 5, N * H)), c.input('v', rand(rng, B, 5, N * H))
    kpm, mha_bias = c.input('kpm', np.array([3, 5], np.int32)), c.const('mha_bias', rand(rng, 3 * N * H))
    c.node('MultiHeadAttention', [q, k, v, mha_bias, kpm], [c.output('mha')], num_heads=N)
    ins = gqa_inputs(c, rng, 'decode', B, 1, 4, 4, 2, 16, [4, 2])
    ang = rng.random((8, 8)).astype(np.float32)
    c.node('GroupQueryAttention', ins + [c.const('cos', np.cos(ang)), c.const('sin', np.sin(ang))],
           [c.output('gqa'), c.output('gqa_key'), c.output('gqa_value')], num_heads=4, kv_num_heads=2, do_rotary=1,
           rotary_interleaved=1, local_window_size=2)
    skip, gamma = c.input('skip', rand(rng, B, S, Din)), c.const('gamma', rand(rng, Din))
    c.node('SkipLayerNormalization', [x, skip, gamma, c.const('beta', rand(rng, Din))], [c.output('sln')])
    c.node('SimplifiedLayerNormalization', [x, gamma], [c.output('rms')], domain='')
    c.node('EmbedLayerNormalization', [c.input('ids', rng.integers(0, 9, (B, S)).astype(np.int32)), '',
                                       c.const('we', rand(rng, 9, Din)), c.const('pe', rand(rng, 6, Din)), '', gamma,
                                       c.const('beta_e', rand(rng, Din))],
           [c.output('embed'), c.output('embed_mask_index', TensorProto.INT32)])
    return c


# ---------------------------------------------------------------------------
# Weight-quantized and dynamically quantized operators

def pack_bits(values, bits):
    """uint8 values < 2^bits along the last axis -> bytes, the first value in the low bits."""
    per = 8 // bits
    pad = (-values.shape[-1]) % per
    v = np.concatenate([values, np.zeros(values.shape[:-1] + (pad,), values.dtype)], -1).astype(np.uint16)
    v = v.reshape(values.shape[:-1] + (-1, per))
    out = np.zeros(v.shape[:-1], np.uint16)
    for j in range(per):
        out |= v[..., j] << (bits * j)
    return out.astype(np.uint8)


def case_matmul_nbits(rng):
    # kilnc dequantizes the weight (constant folding makes it float32) and
    # runs a float MatMul; ONNX Runtime (accuracy_level 0) dequantizes too.
    # atol 1e-4: sums of 64 products of dequantized weights, in another order than ORT's.
    c = Case('matmul_nbits', rtol=1e-4, atol=1e-4)
    a3 = c.input('a', rand(rng, 2, 3, 64))
    a40 = c.input('a_k40', rand(rng, 3, 40))
    for i, (bits, K, block, zp_form, bias) in enumerate([
            (4, 64, 16, 'packed', True), (4, 64, 32, 'none', False), (4, 40, 16, 'float', False),
            (4, 40, 16, 'packed', True), (8, 64, 16, 'packed', False), (8, 40, 16, 'none', True),
            (2, 64, 16, 'packed', False), (2, 64, 32, 'none', False)]):
        N = 6
        blocks = (K + block - 1) // block
        q = rng.integers(0, 2 ** bits, (N, blocks, block)).astype(np.uint8)
        ins = [a3 if K == 64 else a40, c.const('b%d' % i, pack_bits(q, bits)),
               c.const('scales%d' % i, (rng.random((N, blocks)) * 0.2 + 0.01).astype(np.float32))]
        if zp_form == 'packed':
            ins.append(c.const('zp%d' % i, pack_bits(rng.integers(0, 2 ** bits, (N, blocks)).astype(np.uint8), bits)))
        elif zp_form == 'float':
            ins.append(c.const('zp%d' % i, (rng.random((N, blocks)) * 2 ** bits).astype(np.float32)))
        if bias:
            ins += [''] * (5 - len(ins)) + [c.const('bias%d' % i, rand(rng, N))]
        c.node('MatMulNBits', ins, [c.output('y%d_%dbit_%s' % (i, bits, zp_form))], K=K, N=N, bits=bits,
               block_size=block)
    return c


def quantized(rng, shape, dtype):
    """Integer weights: int8 in [-64, 63] (ONNX Runtime's u8s8 kernels without VNNI add pairs of
    products in int16, which saturates on the full range; its quantizer's reduce_range), uint8 in
    [0, 255]."""
    if dtype == np.int8:
        return rng.integers(-64, 64, shape).astype(np.int8)
    return rng.integers(0, 256, shape).astype(np.uint8)


def case_integer_matmul(rng):
    # atol 1e-4: float outputs scaled from integer sums of 24 products (ORT scales in another order).
    c = Case('integer_matmul', rtol=1e-4, atol=1e-4)
    K, N = 24, 10
    a_u8 = c.input('a_u8', rng.integers(0, 256, (2, 3, K)).astype(np.uint8))
    a_f = c.input('a_float', rand(rng, 2, 3, K))
    for i, (bt, per_column, bias) in enumerate([(np.int8, True, True), (np.uint8, False, False),
                                                 (np.uint8, True, True), (np.int8, False, False)]):
        shape = (N,) if per_column else ()
        b = c.const('b%d' % i, quantized(rng, (K, N), bt))
        bs = c.const('b_scale%d' % i, (rng.random(shape) * 0.02 + 0.005).astype(np.float32))
        bz = c.const('b_zero_point%d' % i, (rng.integers(-5, 6, shape) if bt == np.int8 else
                                             rng.integers(100, 150, shape)).astype(bt))
        bias_in = [c.const('bias%d' % i, rand(rng, N))] if bias else []
        a_scale, a_zp = c.const('a_scale%d' % i, np.float32(0.03)), c.const('a_zero_point%d' % i, np.uint8(120 + i))
        c.node('MatMulIntegerToFloat', [a_u8, b, a_scale, bs, a_zp, bz] + bias_in, [c.output('mmitf%d' % i)])
        c.node('DynamicQuantizeMatMul', [a_f, b, bs, bz] + bias_in, [c.output('dqmm%d' % i)])
    return c


def lstm_case(rng, name, float_reference):
    """DynamicQuantizeLSTM, forward with per-tensor and bidirectional with per-channel scales.
    ONNX Runtime quantizes X and H to uint8 at run time; kilnc runs a float LSTM on the
    dequantized weights: against ONNX Runtime's own output every element must be within 0.02
    (quantization's error; the outputs lie within (-1.5, 1.5)); against a float LSTM of the
    dequantized weights, rtol 1e-4 / atol 1e-5."""
    c = Case(name)
    if not float_reference:
        c.max_abs_err = 0.02
    T, B, I, H = 5, 2, 6, 4
    x = c.input('x', rand(rng, T, B, I))
    ref = Case(name + '_reference')
    ref.inputs, ref.feeds = c.inputs, c.feeds
    for i, (direction, per_channel) in enumerate([('forward', False), ('bidirectional', True)]):
        D = 2 if direction == 'bidirectional' else 1
        shape = (D, 4 * H) if per_channel else (D,)
        w, r = quantized(rng, (D, I, 4 * H), np.int8), quantized(rng, (D, H, 4 * H), np.int8)
        ws = (rng.random(shape) * 0.01 + 0.005).astype(np.float32)
        rs = (rng.random(shape) * 0.01 + 0.005).astype(np.float32)
        wz, rz = np.zeros(shape, np.int8), np.zeros(shape, np.int8)
        bias, h0 = rand(rng, D, 8 * H, scale=0.3), rand(rng, D, B, H, scale=0.5)
        names = ['w%d' % i, 'r%d' % i, 'ws%d' % i, 'wz%d' % i, 'rs%d' % i, 'rz%d' % i, 'bias%d' % i, 'h0%d' % i]
        for n, v in zip(names, [w, r, ws, wz, rs, rz, bias, h0]):
            c.const(n, v)
        outs = ['y%d' % i, 'y_h%d' % i, 'y_c%d' % i]
        c.node('DynamicQuantizeLSTM', [x, names[0], names[1], names[6], '', names[7], '', '', names[2], names[3],
                                       names[4], names[5]], [c.output(o) for o in outs], hidden_size=H,
               direction=direction)
        expand = (lambda s: s[:, None, :]) if per_channel else (lambda s: s[:, None, None])
        wf = ((w.astype(np.float32) - expand(wz)) * expand(ws)).transpose(0, 2, 1)
        rf = ((r.astype(np.float32) - expand(rz)) * expand(rs)).transpose(0, 2, 1)
        ref.const('wf%d' % i, np.ascontiguousarray(wf))
        ref.const('rf%d' % i, np.ascontiguousarray(rf))
        ref.const(names[6], bias)
        ref.const(names[7], h0)
        ref.node('LSTM', ['x', 'wf%d' % i, 'rf%d' % i, names[6], '', names[7]], outs, domain='', hidden_size=H,
                 direction=direction)
    ref.outputs = c.outputs
    if float_reference:
        c.reference = ref
    return c


# ---------------------------------------------------------------------------
# Forms kilnc refuses: exit status 1, a message naming the node and the form

def refusals(rng):
    """(case, the words kilnc's message must hold)"""
    out = []

    def one(name, op, ins, outs, words, **attrs):
        c = Case(name)
        names = []
        for n, v in ins:
            if v is None:
                names.append('')
            elif isinstance(v, tuple):  # an initializer
                names.append(c.const(n, v[0]))
            else:
                names.append(c.input(n, v))
        c.node(op, names, [c.output(o) for o in outs], **attrs)
        out.append((c, [c.nodes[0].name] + words))
    one('gqa_qk_output', 'GroupQueryAttention',
        [('q', rand(rng, 1, 2, 32)), ('k', rand(rng, 1, 2, 16)), ('v', rand(rng, 1, 2, 16)), ('pk', None), ('pv', None),
         ('seqlens', np.array([1], np.int32)), ('total', np.array(2, np.int32))],
        ['y', 'pk_out', 'pv_out'], ['qk_output', 'not supported'], num_heads=2, kv_num_heads=1, qk_output=1)
    one('nbits_3', 'MatMulNBits', [('a', rand(rng, 2, 32)), ('b', (np.zeros((4, 2, 6), np.uint8),)),
                                  ('s', (np.ones((4, 2), np.float32),))],
        ['y'], ['bits=3', 'not supported'], K=32, N=4, bits=3, block_size=16)
    one('nbits_g_idx', 'MatMulNBits', [('a', rand(rng, 2, 32)), ('b', (np.zeros((4, 2, 8), np.uint8),)),
                                      ('s', (np.ones((4, 2), np.float32),)), ('zp', None),
                                      ('g', (np.zeros(32, np.int32),))],
        ['y'], ['g_idx', 'not supported'], K=32, N=4, bits=4, block_size=16)
    one('attention_rotary', 'Attention',
        [('x', rand(rng, 1, 3, 8)), ('w', (rand(rng, 8, 24),)), ('b', (rand(rng, 24),))], ['y'],
        ['do_rotary=1', 'not supported'], num_heads=2, do_rotary=1)
    one('mha_beam', 'MultiHeadAttention',
        [('q', rand(rng, 1, 1, 8)), ('k', rand(rng, 1, 2, 8)), ('v', rand(rng, 1, 2, 8))]
        + [('x%d' % i, None) for i in range(6)] + [('cache', np.zeros((1, 1, 4), np.int32))],
        ['y'], ['cache_indirection', 'not supported'], num_heads=2)
    one('conv_elu', 'FusedConv', [('x', rand(rng, 1, 2, 5, 5)), ('w', (rand(rng, 3, 2, 3, 3),))], ['y'],
        ["activation 'Elu'", 'not supported'], activation='Elu')
    one('skip_ln_mean', 'SkipLayerNormalization',
        [('x', rand(rng, 1, 2, 8)), ('s', rand(rng, 1, 2, 8)), ('g', (rand(rng, 8),))], ['y', 'mean'],
        ['mean', 'not supported'])
    one('unknown_contrib', 'BiasSoftmax', [('x', rand(rng, 2, 4)), ('b', rand(rng, 2, 4))], ['y'],
        ["domain 'com.microsoft'", 'SkipLayerNormalization'])
    return out


def check_refusals(args, name):
    ok = True
    work = kiln_e2e.fresh_dir(os.path.join(args.workdir, name))
    for case, words in refusals(np.random.default_rng(5)):
        model = os.path.join(work, case.name + '.onnx')
        save_model(case, model)
        proc = kiln_e2e.run_tool('kilnc', [args.kilnc, model, '-o', os.path.join(work, case.name + '.kiln')], 120)
        err = proc.stderr.decode('utf-8', 'replace')
        missing = [w for w in words if w not in err]
        good = proc.returncode == 1 and 'kilnc: error:' in err and not missing
        kiln_e2e.log('%s: %s: exit %s%s  %s' % (name, case.name, proc.returncode,
                                               ', message lacks %s' % missing if missing else '',
                                               'PASS' if good else 'FAIL'))
        ok &= good
    return ok


CASES = {  # the slowest first: they run at once (--jobs)
    'group_query_attention': case_gqa,
    'group_query_attention_extra': case_gqa_extra,
    'opset12': case_opset12,
    'matmul_nbits': case_matmul_nbits,
    'qattention': case_qattention,
    'attention': case_attention,
    'integer_matmul': case_integer_matmul,
    'rotary_embedding': case_rotary,
    'multi_head_attention': case_mha,
    'gelu': case_gelu,
    'bias_add': case_bias_add,
    'layer_norms_opset17': lambda rng: case_layer_norms(rng, 17),
    'layer_norms_opset13': lambda rng: case_layer_norms(rng, 13),
    'layer_norms_opset18': lambda rng: case_layer_norms(rng, 18),
    'embed_layer_norm': case_embed_layer_norm,
    'fused_matmul': case_fused_matmul,
    'fused_conv': case_fused_conv,
    'nhwc_conv': case_nhwc_conv,
    'attention_4d_mask': case_attention_4d_mask,
    'multi_head_attention_packed': case_mha_packed,
    'dynamic_quantize_lstm': lambda rng: lstm_case(rng, 'dynamic_quantize_lstm', False),
    'dynamic_quantize_lstm_float': lambda rng: lstm_case(rng, 'dynamic_quantize_lstm_float', True),
    'refused': None,  # check_refusals
}


# ---------------------------------------------------------------------------
# Running

def save_model(case, path):
    onnx.save(case.model(), path)


def run_case(args, name, seed):
    """Builds, compiles, runs and compares one case (in a worker process); returns (ok, its log)."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        try:
            ok = check_case(args, name, seed)
        except Exception as e:  # noqa: BLE001 (a broken case fails, the others still run)
            kiln_e2e.log('%s: FAIL: %s: %s' % (name, type(e).__name__, e))
            ok = False
    return ok, buf.getvalue()


def within(label, got, ref, bound):
    """Every element of got within `bound` of ref (same shape and dtype)."""
    settled = kiln_e2e.check_shape_dtype(label, got, ref)
    if settled is not None:
        return settled
    err = float(np.max(np.abs(got.astype(np.float64) - ref)))
    ok = err <= bound
    kiln_e2e.log('%s: %s %s max_abs_err=%.3g (|ref| max %.3g; bound %g)  %s'
                 % (label, ref.dtype, list(ref.shape), err, float(np.max(np.abs(ref))), bound,
                    'PASS' if ok else 'FAIL'))
    return ok


def check_case(args, name, seed):
    t0 = time.monotonic()
    if CASES[name] is None:
        ok = check_refusals(args, name)
        kiln_e2e.log('%s: %s (%.1f s)' % (name, 'PASS' if ok else 'FAIL', time.monotonic() - t0))
        return ok
    work = kiln_e2e.fresh_dir(os.path.join(args.workdir, name))
    case = CASES[name](np.random.default_rng(seed))
    model = os.path.join(work, name + '.onnx')
    save_model(case, model)
    ref_model = model
    if case.reference is not None:
        ref_model = os.path.join(work, name + '_reference.onnx')
        save_model(case.reference, ref_model)
    feeds, ref_feeds = {}, {}
    for k, v in case.feeds.items():
        feeds[k] = ref_feeds[k] = os.path.join(work, 'in_' + kiln_e2e.sanitize(k) + '.npy')
        np.save(feeds[k], v)
    for k, v in (case.reference_feeds or {}).items():
        ref_feeds[k] = os.path.join(work, 'reference_in_' + kiln_e2e.sanitize(k) + '.npy')
        np.save(ref_feeds[k], v)
    names = [o.name for o in case.outputs]
    kiln_e2e.log('== %s: %d nodes (%s), opset %d, outputs %s%s'
                 % (name, len(case.nodes), ', '.join(sorted({n.op_type for n in case.nodes})), case.opset, names,
                    ', reference model %s' % os.path.basename(ref_model) if case.reference else ''))
    bundle = os.path.join(work, name + '.kiln')
    proc = kiln_e2e.run_tool('kilnc', [args.kilnc, model, '-o', bundle], timeout=600)
    if proc.returncode != 0 or not os.path.isfile(bundle):
        kiln_e2e.log('%s: FAIL: kilnc failed' % name)
        return False
    kiln_out, ort_out = os.path.join(work, 'kiln_out'), os.path.join(work, 'ort_out')
    cmd = [args.kiln, 'run', bundle, '--output-dir', kiln_out]
    for k, p in feeds.items():
        cmd += ['--input', '%s=%s' % (k, p)]
    if kiln_e2e.run_tool('kiln run', cmd, timeout=300).returncode != 0:
        kiln_e2e.log('%s: FAIL: kiln run failed' % name)
        return False
    if not kiln_e2e.run_ort(args.node_exe, args.ort_script, ref_model, ort_out, ref_feeds):
        kiln_e2e.log('%s: FAIL: the ONNX Runtime reference failed' % name)
        return False
    ok = True
    for o in names:
        rtol, atol = case.rtol, case.atol
        f = kiln_e2e.sanitize(o) + '.npy'
        got, ref = os.path.join(kiln_out, f), os.path.join(ort_out, f)
        if not (os.path.isfile(got) and os.path.isfile(ref)):
            kiln_e2e.log("%s: output '%s': FAIL: %s missing" % (name, o, got if not os.path.isfile(got) else ref))
            ok = False
            continue
        label = "%s: output '%s'" % (name, o)
        if case.max_abs_err is None:
            ok &= kiln_e2e.compare(label, np.load(got), np.load(ref), rtol, atol)
        else:
            ok &= within(label, np.load(got), np.load(ref), case.max_abs_err)
    kiln_e2e.log('%s: %s (%.1f s)' % (name, 'PASS' if ok else 'FAIL', time.monotonic() - t0))
    return ok


def main() -> int:
    def extra(ap):
        ap.add_argument('--jobs', type=int, default=2, help='cases run at once (default 2)')
    args, names = kiln_e2e.case_script_args(__doc__.split('\n')[0], CASES, extra)
    t0 = time.monotonic()
    results = {}
    with concurrent.futures.ProcessPoolExecutor(max(1, args.jobs)) as pool:
        futures = {pool.submit(run_case, args, n, zlib.crc32(n.encode())): n for n in names}  # a seed per case
        for f in concurrent.futures.as_completed(futures):
            ok, text = f.result()
            results[futures[f]] = ok
            sys.stdout.write(text)
            sys.stdout.flush()
    failed = [n for n in names if not results[n]]
    kiln_e2e.log('ort_contrib_ops: %d of %d cases passed (%.1f s)%s'
                 % (len(names) - len(failed), len(names), time.monotonic() - t0,
                    ': FAIL ' + ', '.join(failed) if failed else ''))
    return 0 if not failed else 1


if __name__ == '__main__':
    kiln_e2e.run_script(main)
