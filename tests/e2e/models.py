"""Models of Kiln's end-to-end tests.

Each entry of MODELS describes one PyTorch model: how to build it, the shape
of its single input (named ``input``), the ONNX operators its export must
contain (so a test cannot silently stop covering an operator when PyTorch
changes what it exports), and the comparison tolerances against ONNX Runtime.

Run with Debian's /usr/bin/python3 (python3-torch, python3-torchvision,
python3-onnx, python3-numpy). Everything is seeded; see export_model().

Add a model: write a small nn.Module (or a torchvision constructor), add a
ModelSpec to MODELS, and add a test for it in tests/e2e/meson.build. See
docs/testing.md.
"""

from __future__ import annotations

import dataclasses
import io
from typing import Callable, Dict, FrozenSet, List, Optional, Sequence, Tuple

import numpy as np

from models_onnx import (OPSET, _check_const_weights_bundle, _check_hetero_bundle,
                         _check_matmul_tiles_bundle, build_const_weights_onnx, build_hetero_float64_onnx,
                         build_matmul_tiles_onnx, build_output_views_onnx)

# ONNX operators kilnc must compile (the set the tests cover). `Constant` and
# `Identity` are included: torch.onnx emits Constant nodes for scalars and
# shapes, and Identity nodes when it de-duplicates equal initializers (e.g.
# all-zero conv biases of an untrained torchvision model).
SUPPORTED_OPS: FrozenSet[str] = frozenset({
    'Conv', 'Relu', 'Clip', 'Sigmoid', 'MaxPool', 'AveragePool',
    'GlobalAveragePool', 'Gemm', 'MatMul', 'Add', 'Sub', 'Mul', 'Div',
    'BatchNormalization', 'Flatten', 'Reshape', 'Concat', 'Softmax',
    'Transpose', 'Constant', 'Identity',
    # Sequence and transformer models (issue 3's operator library).
    'LSTM', 'GRU', 'RNN', 'Squeeze', 'Unsqueeze', 'Gather', 'Shape', 'Expand', 'LogSoftmax', 'Tanh',
    'ReduceMean', 'Pow', 'Sqrt', 'Erf', 'Split', 'Slice',
    # Weights built at run time (const_weights; folded by the constant folder).
    'ConstantOfShape', 'Sin', 'Cos', 'Tile', 'Range',
    # float64 kernels next to float32 ones (hetero_float64).
    'Cast',
})

INPUT_NAME = 'input'


@dataclasses.dataclass
class ModelSpec:
    build: Callable[[], 'object']            # returns an nn.Module (seeded by the caller)
    input_shape: Tuple[int, ...]
    expected_ops: FrozenSet[str]              # must all appear in the exported graph
    num_outputs: int = 1
    rtol: float = 1e-4
    atol: float = 1e-5
    description: str = ''
    # Extra assertions on the exported graph: fn(onnx.ModelProto) -> None (raise on failure)
    check_graph: Optional[Callable[['object'], None]] = None
    # Names of the outputs; default: output, output_1, output_2, ...
    output_names: Optional[List[str]] = None
    # A hand-built ONNX model instead of a torch export: fn() -> onnx.ModelProto
    # (then `build` is unused and there is no PyTorch reference).
    build_onnx: Optional[Callable[[], 'object']] = None
    # Extra assertions on the compiled bundle: fn(inspect_json: dict, report: str) -> None,
    # with `kiln inspect --json` parsed and kilnc's --report text.
    check_bundle: Optional[Callable[[dict, str], None]] = None
    # The device (kiln_e2e.py --device) whose bundles check_bundle checks.
    check_device: str = 'cpu'

    def names_of_outputs(self) -> List[str]:
        if self.output_names is not None:
            assert len(self.output_names) == self.num_outputs
            return list(self.output_names)
        return ['output'] + ['output_%d' % i for i in range(1, self.num_outputs)]


# ---------------------------------------------------------------------------
# Hand-written operator-coverage modules. Shapes are deliberately non-square
# and odd so that H/W mix-ups and edge windows show up.

def _torch():
    import torch  # imported lazily: `--help` and the list command stay fast
    return torch


def _seeded_batchnorm(bn):
    """Gives a BatchNorm layer non-trivial affine parameters and running stats."""
    torch = _torch()
    with torch.no_grad():
        c = bn.num_features
        bn.weight.copy_(torch.rand(c) * 1.5 + 0.25)
        bn.bias.copy_(torch.randn(c) * 0.5)
        bn.running_mean.copy_(torch.randn(c) * 0.5)
        bn.running_var.copy_(torch.rand(c) * 2.0 + 0.1)
    return bn


def build_ops_conv():
    torch = _torch()
    nn = torch.nn
    F = torch.nn.functional

    class OpsConv(nn.Module):
        """Conv with pads, strides, dilations, groups (incl. depthwise); Relu, Clip, Sigmoid."""

        def __init__(self):
            super().__init__()
            self.c1 = nn.Conv2d(3, 8, 5, stride=1, padding=2)                      # 5x5, pad 2
            self.c2 = nn.Conv2d(8, 8, 3, stride=2, padding=(2, 1), dilation=2)    # strided, dilated, per-axis pads
            self.dw = nn.Conv2d(8, 8, 3, padding=1, groups=8)                     # depthwise
            self.gc = nn.Conv2d(8, 12, (1, 3), stride=(1, 2), groups=4, bias=False)  # grouped, rect kernel, no bias
            self.pw = nn.Conv2d(12, 6, 1)                                         # pointwise
            self.valid = nn.Conv2d(3, 4, (3, 2), stride=(2, 3))                   # no padding, rect stride

        def forward(self, x):
            y = F.relu(self.c1(x))
            y = F.relu6(self.c2(y))                   # Clip(0, 6)
            y = F.hardtanh(self.dw(y), -0.75, 0.5)    # Clip(-0.75, 0.5)
            y = torch.sigmoid(self.gc(y))
            y = self.pw(y)
            z = torch.clamp(self.valid(x), min=-0.2)  # Clip with only a lower bound
            return y, z

    return OpsConv()


def build_ops_winograd():
    torch = _torch()
    nn = torch.nn
    F = torch.nn.functional

    class OpsWinograd(nn.Module):
        """3x3 stride-1 convs big enough for Winograd (64 and 72 channels, batch 2): on the 16x20
        map F(4x4, 3x3), one with a fused residual Add and Relu, one with an odd number of channel
        blocks (72 = 9 x 8, or padded to 5 x 16); on a 14x18 crop (4 does not divide it)
        F(2x2, 3x3); and a stride-2 one that stays direct; blocked average pools between them."""

        def __init__(self):
            super().__init__()
            self.stem = nn.Conv2d(3, 64, 3, padding=1)
            self.a = nn.Conv2d(64, 64, 3, padding=1)
            self.b = nn.Conv2d(64, 72, 3, padding=1, bias=False)
            self.s2 = nn.Conv2d(72, 64, 3, stride=2, padding=1)
            self.c = nn.Conv2d(64, 64, 3, padding=1)

        def forward(self, x):
            y = F.relu(self.stem(x))
            y = F.relu(self.a(y) + y)
            c = self.c(y[:, :, 1:15, 1:19])
            # Average pools on the blocked layout (the count of cells inside
            # the map in closed form): padded, and strided with ceil mode.
            y = F.avg_pool2d(y, 3, stride=1, padding=1, count_include_pad=False)
            y = self.b(y)
            z = F.avg_pool2d(y, 3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)
            return self.s2(y), z, c

    return OpsWinograd()


def _check_winograd_bundle(info, report):
    """kilnc's winograd pass converted the three big stride-1 convs (on a target with wide vectors)."""
    if 'pass winograd' not in report:
        raise AssertionError('no winograd pass line in the report:\n%s' % report)
    if '1 convolution to Winograd F(2x2, 3x3), 2 convolutions to Winograd F(4x4, 3x3)' not in report:
        raise AssertionError('expected 1 + 2 convolutions to Winograd in the report:\n%s' % report)


def build_ops_pool():
    torch = _torch()
    nn = torch.nn
    F = torch.nn.functional

    class OpsPool(nn.Module):
        """MaxPool / AveragePool variants, GlobalAveragePool, Flatten."""

        def forward(self, x):
            a = F.max_pool2d(x, 3, stride=2, padding=1)                        # padded
            b = F.max_pool2d(x, 2, stride=2, ceil_mode=True)                   # ceil_mode, odd sizes
            c = F.max_pool2d(x, 3, stride=1, padding=1, dilation=2)            # dilation
            d = F.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=False)
            e = F.avg_pool2d(x, 2, stride=2, ceil_mode=True, count_include_pad=False)
            f = F.avg_pool2d(x, (3, 2), stride=(1, 2), padding=(1, 1), count_include_pad=True)
            g = F.avg_pool2d(x, 2, stride=2)                                   # plain
            h = torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)                  # GlobalAveragePool + Flatten
            return a, b, c, d, e, f, g, h

    return OpsPool()


def build_ops_elementwise():
    torch = _torch()
    nn = torch.nn
    F = torch.nn.functional

    class OpsElementwise(nn.Module):
        """Add/Sub/Mul/Div with broadcasting (scalars, lower ranks, both sides), BatchNormalization."""

        def __init__(self):
            super().__init__()
            self.bn = _seeded_batchnorm(nn.BatchNorm2d(6))
            self.bn2 = _seeded_batchnorm(nn.BatchNorm2d(6))
            self.per_channel = nn.Parameter(torch.randn(6, 1, 1))     # rank 3 vs rank 4
            self.per_column = nn.Parameter(torch.randn(11))           # rank 1, last axis
            self.full = nn.Parameter(torch.randn(1, 6, 9, 11))        # same shape
            self.divisor = nn.Parameter(torch.rand(1, 6, 1, 1) + 0.5)

        def forward(self, x):
            y = self.bn(x)                                  # BatchNormalization on a graph input
            y = y + 1.5                                     # Add scalar constant
            y = y - self.per_channel                        # Sub, rank-3 operand broadcast
            y = y * self.per_column                         # Mul, rank-1 operand broadcast
            y = y / 3.0                                     # Div by scalar constant
            y = 2.0 - y                                     # Sub with the constant first
            y = y / self.divisor                            # Div, per-channel broadcast
            z = y * x + self.full                           # same-shape Mul and Add
            rows = F.max_pool2d(z, (1, 11))                 # [1, 6, 9, 1]
            cols = F.max_pool2d(z, (9, 1))                  # [1, 6, 1, 11]
            outer = rows + cols                             # both operands broadcast
            q = (z - rows) / (torch.sigmoid(cols) + 0.25)   # tensor/tensor Div with broadcasting
            r = self.bn2(F.relu(q)) * 0.5                   # BatchNormalization not fused into a Conv
            return outer, r

    return OpsElementwise()


def build_ops_matmul_softmax():
    torch = _torch()
    nn = torch.nn

    class OpsMatMulSoftmax(nn.Module):
        """MatMul (batched 3-D x 3-D, 3-D x 2-D, 2-D x 2-D), Gemm, Softmax over several axes, Transpose."""

        def __init__(self):
            super().__init__()
            self.q = nn.Linear(16, 12)                      # 3-D input: MatMul + Add
            self.k = nn.Linear(16, 12, bias=False)          # 3-D input: MatMul
            self.v = nn.Linear(16, 10)
            self.w2d = nn.Parameter(torch.randn(80, 7) * 0.1)
            self.head = nn.Linear(8 * 10, 5)                # 2-D input: Gemm

        def forward(self, x):                               # x: [2, 8, 16]
            q = self.q(x)
            k = self.k(x)
            v = self.v(x)
            att = torch.matmul(q, k.transpose(1, 2)) / 4.0  # [2, 8, 8], batched MatMul
            att = torch.softmax(att, dim=-1)                # Softmax, last axis
            o = torch.matmul(att, v)                        # [2, 8, 10]
            s1 = torch.softmax(o, dim=1)                    # Softmax, middle axis
            s0 = torch.softmax(o, dim=0)                    # Softmax, first axis
            flat = torch.flatten(o, 1)                      # [2, 80]
            logits = self.head(flat)                        # Gemm
            m2 = torch.matmul(flat, self.w2d)               # 2-D MatMul [2, 80] x [80, 7]
            return logits, s1, s0, m2

    return OpsMatMulSoftmax()


def build_ops_shape():
    torch = _torch()
    nn = torch.nn

    class OpsShape(nn.Module):
        """Reshape, Transpose (permute), Concat on several axes, Flatten, Softmax on a 4-D axis."""

        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4 * 6 * 8 * 2, 9)

        def forward(self, x):                               # x: [1, 4, 6, 8]
            a = x.reshape(1, 4, 48)                         # Reshape
            b = a.permute(0, 2, 1)                          # Transpose 3-D
            c = b.reshape(1, 6, 8, 4).permute(0, 3, 1, 2)  # Reshape + Transpose 4-D -> [1, 4, 6, 8]
            d = torch.cat([x, c], dim=1)                    # Concat channels -> [1, 8, 6, 8]
            e = torch.cat([x, c * 2.0, x - c], dim=-1)      # Concat last axis, 3 operands -> [1, 4, 6, 24]
            f = torch.softmax(d, dim=2)                     # Softmax along H of a 4-D tensor
            g = x.permute(3, 1, 0, 2)                       # Transpose moving the batch axis
            h = torch.flatten(d, 1)                         # Flatten -> [1, 384]
            logits = self.fc(h)                             # Gemm
            return logits, e, f, g.reshape(8, -1)

    return OpsShape()


def build_seq_rnn():
    """A small speech-style recognizer: 2-layer bidirectional LSTM, GRU, linear, log-softmax."""
    torch = _torch()
    nn = torch.nn

    class SeqRNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(16, 24, num_layers=2, bidirectional=True)
            self.gru = nn.GRU(48, 20)
            self.rnn = nn.RNN(20, 12, nonlinearity='relu')
            self.fc = nn.Linear(12, 10)

        def forward(self, x):                      # x: [T, B, 16]
            y, _ = self.lstm(x)
            y, h = self.gru(y)
            y, _ = self.rnn(torch.tanh(y))
            return torch.log_softmax(self.fc(y), dim=-1), h

    return SeqRNN()


def _transformer_layer(d, heads, ff):
    """One pre-norm transformer encoder layer, batch-first, GELU feed-forward.

    Attention is written out (not nn.MultiheadAttention) so that torch's fused
    inference fast path, which has no ONNX export, is never taken.
    """
    torch = _torch()
    nn = torch.nn

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.heads, self.dh = heads, d // heads
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.ff1, self.ff2 = nn.Linear(d, ff), nn.Linear(ff, d)

        def forward(self, x):                      # x: [B, S, d]
            b, s, _ = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
            q, k, v = (t.reshape(b, s, self.heads, self.dh).transpose(1, 2) for t in (q, k, v))
            att = torch.softmax(q @ k.transpose(-2, -1) / self.dh ** 0.5, dim=-1)
            x = x + self.proj((att @ v).transpose(1, 2).reshape(b, s, d))
            return x + self.ff2(torch.nn.functional.gelu(self.ff1(self.ln2(x))))

    return Layer()


def build_transformer_encoder(d=256, heads=4, layers=4, ff=None, classes=None):
    """A pre-norm transformer encoder: `layers` layers of width d; with `classes`, a linear
    head and a softmax. Issue 4's memory budget and the benchmark use 4 layers, d=256,
    4 heads, sequence 128."""
    torch = _torch()
    nn = torch.nn
    ff = ff or 4 * d

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.Sequential(*[_transformer_layer(d, heads, ff) for _ in range(layers)])
            self.head = nn.Linear(d, classes) if classes else None

        def forward(self, x):
            y = self.layers(x)
            return torch.softmax(self.head(y), dim=-1) if self.head is not None else y

    return Encoder()


def build_decoder_step(d=256, heads=4, layers=4, ff=None, cache=256):
    """One step of a pre-norm transformer decoder: the input [1, 1, d] is the new token; each
    layer's query attends to a fixed key/value cache of `cache` positions (seeded constants,
    exported as initializers) and to the token's own key and value. The bench's decoder row."""
    torch = _torch()
    nn = torch.nn
    ff = ff or 4 * d
    dh = d // heads

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.ff1, self.ff2 = nn.Linear(d, ff), nn.Linear(ff, d)
            self.register_buffer('k_cache', torch.randn(1, heads, cache, dh))
            self.register_buffer('v_cache', torch.randn(1, heads, cache, dh))

        def forward(self, x):                      # x: [1, 1, d]
            q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
            q, k, v = (t.reshape(1, 1, heads, dh).transpose(1, 2) for t in (q, k, v))
            k = torch.cat([self.k_cache, k], dim=2)  # [1, heads, cache + 1, dh]
            v = torch.cat([self.v_cache, v], dim=2)
            att = torch.softmax(q @ k.transpose(-2, -1) / dh ** 0.5, dim=-1)
            x = x + self.proj((att @ v).transpose(1, 2).reshape(1, 1, d))
            return x + self.ff2(torch.nn.functional.gelu(self.ff1(self.ln2(x))))

    return nn.Sequential(*[Layer() for _ in range(layers)])


def build_transformer():
    """The e2e transformer: 2 layers, d=32, 4 heads, feed-forward 64, an 8-class head."""
    return build_transformer_encoder(d=32, heads=4, layers=2, ff=64, classes=8)


# ---------------------------------------------------------------------------
# const_weights: every weight is computed at run time from ConstantOfShape
# (issue 4's constant-folding acceptance model), built as ONNX by hand since
# torch.onnx would fold it on export.

def build_unsupported():
    """A tiny model with an operator kilnc does not support (kiln_test::Swish, an operator of a
    domain kilnc does not know, from a custom symbolic), between supported ones. (Standard
    operators with tensor operands that kilnc lacks are running out: torch's bernoulli, then
    multinomial, served here before they were implemented.)"""
    torch = _torch()
    nn = torch.nn

    class Swish(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):  # noqa: ARG004 - torch's signature
            return x * torch.sigmoid(x)

        @staticmethod
        def symbolic(g, x):
            return g.op('kiln_test::Swish', x)

    class Unsupported(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3, padding=1)

        def forward(self, x):
            y = torch.relu(self.conv(x))
            return Swish.apply(torch.sigmoid(y)) + 1.0

    return Unsupported()


def calibrate_batchnorm(module, input_shape, batches: int = 2, batch_size: int = 4):
    """Sets the running statistics of every BatchNorm layer from seeded random data.

    An untrained torchvision model has running_mean=0 / running_var=1 everywhere,
    which lets activations shrink layer after layer (MobileNetV2's logits end up
    around 1e-9, far below any useful atol). Estimating the statistics like a
    real training run would keeps every layer's output near unit scale.
    """
    torch = _torch()
    bns = [m for m in module.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return module
    for bn in bns:
        bn.reset_running_stats()
        bn.momentum = None  # cumulative average over the calibration batches
    module.train()
    gen = torch.Generator().manual_seed(4321)
    with torch.no_grad():
        for _ in range(batches):
            module(torch.randn((batch_size,) + tuple(input_shape[1:]), generator=gen))
    return module.eval()


def _torchvision(name, input_shape=(1, 3, 224, 224)):
    def build():
        import torchvision
        return calibrate_batchnorm(getattr(torchvision.models, name)(weights=None), input_shape)
    return build


def _check_avgpool_attrs(model):
    pools = [n for n in model.graph.node if n.op_type == 'AveragePool']
    cip = []
    ceil = []
    for n in pools:
        attrs = {a.name: a for a in n.attribute}
        cip.append(attrs['count_include_pad'].i if 'count_include_pad' in attrs else 0)
        ceil.append(attrs['ceil_mode'].i if 'ceil_mode' in attrs else 0)
    if 1 not in cip or 0 not in cip:
        raise AssertionError('AveragePool must be covered with and without count_include_pad (got %s)' % cip)
    if 1 not in ceil:
        raise AssertionError('AveragePool must be covered with ceil_mode=1 (got %s)' % ceil)


def _check_maxpool_attrs(model):
    pools = [n for n in model.graph.node if n.op_type == 'MaxPool']
    seen = set()
    for n in pools:
        attrs = {a.name: a for a in n.attribute}
        if 'ceil_mode' in attrs and attrs['ceil_mode'].i == 1:
            seen.add('ceil_mode')
        if 'dilations' in attrs and any(d != 1 for d in attrs['dilations'].ints):
            seen.add('dilations')
        if 'pads' in attrs and any(p != 0 for p in attrs['pads'].ints):
            seen.add('pads')
    missing = {'ceil_mode', 'dilations', 'pads'} - seen
    if missing:
        raise AssertionError('MaxPool variants not covered: %s' % sorted(missing))


def _check_pool_graph(model):
    _check_avgpool_attrs(model)
    _check_maxpool_attrs(model)


def _check_conv_graph(model):
    seen = set()
    for n in model.graph.node:
        if n.op_type != 'Conv':
            continue
        attrs = {a.name: a for a in n.attribute}
        if attrs.get('group') is not None and attrs['group'].i > 1:
            seen.add('groups')
        if 'dilations' in attrs and any(d != 1 for d in attrs['dilations'].ints):
            seen.add('dilations')
        if 'strides' in attrs and any(s != 1 for s in attrs['strides'].ints):
            seen.add('strides')
        if 'pads' in attrs and any(p != 0 for p in attrs['pads'].ints):
            seen.add('pads')
        if len(n.input) == 2:
            seen.add('no bias')
    missing = {'groups', 'dilations', 'strides', 'pads', 'no bias'} - seen
    if missing:
        raise AssertionError('Conv variants not covered: %s' % sorted(missing))


def _check_softmax_axes(min_axes):
    def check(model):
        axes = set()
        for n in model.graph.node:
            if n.op_type == 'Softmax':
                attrs = {a.name: a for a in n.attribute}
                axes.add(attrs['axis'].i if 'axis' in attrs else -1)
        if len(axes) < min_axes:
            raise AssertionError('Softmax must be covered on >= %d axes (got %s)' % (min_axes, sorted(axes)))
    return check


def _check_matmul_ranks(model):
    # Both a batched (3-D) MatMul and a 2-D MatMul must be present.
    import onnx
    inferred = onnx.shape_inference.infer_shapes(model)
    ranks = {}
    for vi in list(inferred.graph.value_info) + list(inferred.graph.output) + list(inferred.graph.input):
        ranks[vi.name] = len(vi.type.tensor_type.shape.dim)
    for init in inferred.graph.initializer:
        ranks[init.name] = len(init.dims)
    seen = set()
    for n in inferred.graph.node:
        if n.op_type == 'MatMul':
            seen.add((ranks.get(n.input[0]), ranks.get(n.input[1])))
    if (3, 3) not in seen or (2, 2) not in seen:
        raise AssertionError('MatMul must be covered as 3-D x 3-D and 2-D x 2-D (got %s)' % sorted(seen, key=str))


MODELS: Dict[str, ModelSpec] = {
    # Required acceptance models.
    'squeezenet1_1': ModelSpec(_torchvision('squeezenet1_1'), (1, 3, 224, 224),
                               frozenset({'Conv', 'Relu', 'MaxPool', 'Concat', 'GlobalAveragePool', 'Flatten'}),
                               description='torchvision SqueezeNet 1.1, untrained (weights=None)'),
    'mobilenet_v2': ModelSpec(_torchvision('mobilenet_v2'), (1, 3, 224, 224),
                              frozenset({'Conv', 'Clip', 'Add', 'GlobalAveragePool', 'Flatten', 'Gemm'}),
                              description='torchvision MobileNetV2, untrained (weights=None)'),
    'resnet18': ModelSpec(_torchvision('resnet18'), (1, 3, 224, 224),
                          frozenset({'Conv', 'Relu', 'MaxPool', 'Add', 'GlobalAveragePool', 'Flatten', 'Gemm'}),
                          description='torchvision ResNet-18, untrained (weights=None)'),
    # The layout pass (NCHWc): channel padding (58 -> 64), channel Concat,
    # shuffles through NCHW; squeeze-and-excitation scales and 5x5 depthwise.
    'shufflenet_v2_x1_0': ModelSpec(_torchvision('shufflenet_v2_x1_0'), (1, 3, 224, 224),
                                    frozenset({'Conv', 'Relu', 'MaxPool', 'Concat', 'Transpose', 'Reshape', 'Slice'}),
                                    description='torchvision ShuffleNetV2 1.0, untrained (weights=None)'),
    'efficientnet_b0': ModelSpec(_torchvision('efficientnet_b0'), (1, 3, 224, 224),
                                 frozenset({'Conv', 'Sigmoid', 'Mul', 'Add', 'GlobalAveragePool', 'Gemm'}),
                                 description='torchvision EfficientNet-B0, untrained (weights=None)'),
    # Operator coverage.
    'ops_conv': ModelSpec(build_ops_conv, (1, 3, 19, 23),
                          frozenset({'Conv', 'Relu', 'Clip', 'Sigmoid'}), num_outputs=2,
                          check_graph=_check_conv_graph,
                          description='Conv (pads, strides, dilations, groups, depthwise), Relu, Clip, Sigmoid'),
    'ops_winograd': ModelSpec(build_ops_winograd, (2, 3, 16, 20), frozenset({'Conv', 'Relu', 'Add', 'AveragePool'}),
                              num_outputs=3,
                              check_bundle=_check_winograd_bundle,
                              description='3x3 convs by Winograd F(4x4, 3x3) and F(2x2, 3x3), with a fused residual epilogue'),
    'ops_pool': ModelSpec(build_ops_pool, (1, 4, 17, 21),
                          frozenset({'MaxPool', 'AveragePool', 'GlobalAveragePool', 'Flatten'}), num_outputs=8,
                          check_graph=_check_pool_graph,
                          description='MaxPool/AveragePool variants, GlobalAveragePool, Flatten',
                          # one name with a '/' checks the output file-name sanitizing of kiln and ort_run.js
                          output_names=['output', 'pool/ceil', 'output_2', 'output_3', 'output_4',
                                        'output_5', 'output_6', 'output_7']),
    'ops_elementwise': ModelSpec(build_ops_elementwise, (1, 6, 9, 11),
                                 frozenset({'Add', 'Sub', 'Mul', 'Div', 'BatchNormalization', 'Relu',
                                            'Sigmoid', 'MaxPool'}), num_outputs=2,
                                 description='broadcasting Add/Sub/Mul/Div, BatchNormalization'),
    'ops_matmul_softmax': ModelSpec(build_ops_matmul_softmax, (2, 8, 16),
                                    frozenset({'MatMul', 'Gemm', 'Softmax', 'Transpose', 'Add', 'Div',
                                               'Flatten'}), num_outputs=4,
                                    check_graph=lambda m: (_check_matmul_ranks(m), _check_softmax_axes(3)(m)),
                                    description='MatMul 3-D/2-D, Gemm, Softmax on 3 axes, Transpose'),
    'ops_shape': ModelSpec(build_ops_shape, (1, 4, 6, 8),
                           frozenset({'Reshape', 'Transpose', 'Concat', 'Flatten', 'Softmax', 'Gemm',
                                      'Mul', 'Sub'}), num_outputs=4,
                           description='Reshape, Transpose, Concat, Flatten, Softmax'),
}

# The model of the `unsupported` test and the operator it must be rejected for.
MODELS['seq_rnn'] = ModelSpec(build_seq_rnn, (12, 2, 16), frozenset({'LSTM', 'GRU', 'RNN', 'LogSoftmax', 'MatMul', 'Squeeze', 'Unsqueeze',
                                                                    'Gather', 'Shape', 'Expand', 'Tanh'}),
                              num_outputs=2, description='bidirectional 2-layer LSTM, GRU, RNN, LogSoftmax')
def _check_fused(layer_norms, attentions):
    """kilnc's fuse-layer-norm pass turned the LAYER_NORMS layer norms torch wrote out into
    LayerNormalization, and fuse-attention each of the ATTENTIONS attentions into kiln.Attention."""
    def check(info, report):
        for what in ('%d layer norms fused' % layer_norms, '%d attentions fused' % attentions):
            if what not in report:
                raise AssertionError('expected %s in the report:\n%s' % (what, report))

    return check


MODELS['transformer'] = ModelSpec(build_transformer, (2, 10, 32), frozenset({'MatMul', 'Softmax', 'Erf', 'ReduceMean', 'Pow', 'Sqrt',
                                                                               'Split'}),
                                  check_bundle=_check_fused(4, 2),
                                  description='2-layer transformer encoder (d=32, 4 heads, GELU)')
MODELS['decoder_step'] = ModelSpec(lambda: build_decoder_step(d=64, heads=4, layers=2, ff=128, cache=48), (1, 1, 64),
                                   frozenset({'MatMul', 'Softmax', 'Concat', 'Erf', 'ReduceMean'}),
                                   check_bundle=_check_fused(4, 2),
                                   description='one step of a 2-layer decoder (d=64, 4 heads): a query of length 1 against a '
                                               'constant key/value cache of 48 positions')

# The bench's transformer shapes (bench/bench_config.py TRANSFORMERS; issue 16: every one matches
# ONNX Runtime at rtol 1e-4 / atol 1e-5), each through the fused attention kernel.
for _name, _cfg, _check in (('bench_transformer_s32', dict(d=256, heads=4, ff=1024, layers=4, seq=32), (8, 4)),
                            ('bench_transformer_s512', dict(d=256, heads=4, ff=1024, layers=4, seq=512), (8, 4)),
                            ('bench_minilm_encoder', dict(d=384, heads=12, ff=1536, layers=6, seq=128), (12, 6))):
    MODELS[_name] = ModelSpec((lambda c: lambda: build_transformer_encoder(d=c['d'], heads=c['heads'], layers=c['layers'],
                                                                         ff=c['ff']))(_cfg),
                              (1, _cfg['seq'], _cfg['d']), frozenset({'MatMul', 'Softmax', 'Erf'}),
                              check_bundle=_check_fused(*_check),
                              description='the bench encoder: %(layers)d layers, d=%(d)d, %(heads)d heads, S=%(seq)d' % _cfg)
MODELS['bench_decoder_step'] = ModelSpec(lambda: build_decoder_step(d=256, heads=4, layers=4, ff=1024, cache=256), (1, 1, 256),
                                         frozenset({'MatMul', 'Softmax', 'Concat', 'Erf'}), check_bundle=_check_fused(8, 4),
                                         description='the bench decoder step: 4 layers, d=256, a 256-position cache')

# Attention with key and query blocks that do not divide the sequence (100 = 3 x 32 + 4), two
# heads of width 32: the tuning test's random points of its blocks (docs/tuning.md).
MODELS['attention_blocks'] = ModelSpec(lambda: build_transformer_encoder(d=64, heads=2, layers=1, ff=128), (1, 100, 64),
                                       frozenset({'MatMul', 'Softmax', 'Erf'}), check_bundle=_check_fused(2, 1),
                                       description='one encoder layer, d=64, 2 heads, S=100 (ragged attention blocks)')

MODELS['const_weights'] = ModelSpec(lambda: None, (1, 3, 12, 10),
                                    frozenset({'ConstantOfShape', 'Sin', 'Cos', 'Expand', 'Tile', 'Range',
                                               'Conv', 'BatchNormalization', 'Gemm'}),
                                    build_onnx=build_const_weights_onnx, check_bundle=_check_const_weights_bundle,
                                    description='every weight built at run time from ConstantOfShape (folded)')

MODELS['matmul_tiles'] = ModelSpec(lambda: None, (2, 40, 100),
                                   frozenset({'MatMul', 'Relu', 'Transpose', 'Cast', 'Reshape', 'Mul', 'Softmax',
                                              'ReduceMean'}),
                                   num_outputs=4, build_onnx=build_matmul_tiles_onnx,
                                   check_bundle=_check_matmul_tiles_bundle, check_device='vulkan-shared',
                                   description='matrix products in shared-memory GPU tiles, one in float64')
MODELS['hetero_float64'] = ModelSpec(lambda: None, (2, 4, 8),
                                     frozenset({'Softmax', 'Cast', 'Mul', 'Add', 'ReduceMean', 'MatMul', 'Relu'}),
                                     num_outputs=2, build_onnx=build_hetero_float64_onnx,
                                     check_bundle=_check_hetero_bundle, check_device='vulkan-hetero',
                                     description='float64 kernels between float32 ones (Vulkan + host CPU)')
MODELS['output_views'] = ModelSpec(lambda: None, (1, 5, 6, 1),
                                   frozenset({'Reshape', 'MaxPool', 'Sigmoid', 'Relu', 'Add'}),
                                   num_outputs=5, build_onnx=build_output_views_onnx,
                                   description='model outputs that are Reshape views, read by later nodes')

UNSUPPORTED_MODEL = ModelSpec(build_unsupported, (1, 3, 8, 8),
                              frozenset({'Conv', 'Relu', 'Sigmoid', 'Swish', 'Add'}))
UNSUPPORTED_OP = 'Swish'


# ---------------------------------------------------------------------------
# Export.

def fuse_pad_into_average_pool(model) -> int:
    """Folds `Pad(constant 0) -> AveragePool` into one AveragePool with count_include_pad=1.

    torch.onnx exports avg_pool2d(count_include_pad=True, padding=p) as an explicit
    zero Pad followed by an unpadded AveragePool; this restores the single operator
    (the form other exporters produce). Returns the number of fused pairs.
    """
    import onnx
    from onnx import helper, numpy_helper

    graph = model.graph
    consts = {}
    for n in graph.node:
        if n.op_type == 'Constant':
            for a in n.attribute:
                if a.name == 'value':
                    consts[n.output[0]] = numpy_helper.to_array(a.t)
    for init in graph.initializer:
        consts[init.name] = numpy_helper.to_array(init)
    consumers: Dict[str, List] = {}
    for n in graph.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n)
    graph_outputs = {o.name for o in graph.output}

    fused = 0
    remove = []
    for pad in list(graph.node):
        if pad.op_type != 'Pad' or len(pad.input) < 2 or pad.input[1] not in consts:
            continue
        attrs = {a.name: helper.get_attribute_value(a) for a in pad.attribute}
        mode = attrs.get('mode', b'constant')
        if mode not in (b'constant', 'constant'):
            continue
        if len(pad.input) >= 3 and pad.input[2]:
            if pad.input[2] not in consts or float(np.asarray(consts[pad.input[2]]).reshape(-1)[0]) != 0.0:
                continue
        pads = [int(p) for p in np.asarray(consts[pad.input[1]]).reshape(-1)]
        rank = len(pads) // 2
        if rank != 4 or pads[0] or pads[1] or pads[4] or pads[5] or any(p < 0 for p in pads):
            continue
        users = consumers.get(pad.output[0], [])
        if len(users) != 1 or users[0].op_type != 'AveragePool' or pad.output[0] in graph_outputs:
            continue
        pool = users[0]
        pattrs = {a.name: a for a in pool.attribute}
        if 'pads' in pattrs and any(pattrs['pads'].ints):
            continue
        if 'ceil_mode' in pattrs and pattrs['ceil_mode'].i:
            continue  # torch and ONNX disagree on ceil-mode windows over padding
        new_attrs = [a for a in pool.attribute if a.name not in ('pads', 'count_include_pad')]
        del pool.attribute[:]
        pool.attribute.extend(new_attrs)
        pool.attribute.extend([helper.make_attribute('pads', [pads[2], pads[3], pads[6], pads[7]]),
                               helper.make_attribute('count_include_pad', 1)])
        pool.input[0] = pad.input[0]
        remove.append(pad)
        fused += 1
    for n in remove:
        graph.node.remove(n)
    # Drop Constant nodes nobody uses any more.
    used = {i for n in graph.node for i in n.input} | graph_outputs
    for n in [n for n in graph.node if n.op_type == 'Constant' and n.output[0] not in used]:
        graph.node.remove(n)
    onnx.checker.check_model(model)
    return fused


def export_model(spec: ModelSpec, path: str, seed: int = 0):
    """Builds the model (seeded), exports it to ONNX at `path`, returns (onnx.ModelProto, torch module)."""
    torch = _torch()
    import onnx

    if spec.build_onnx is not None:
        model = spec.build_onnx()
        onnx.save(model, path)
        return model, None
    torch.manual_seed(seed)
    np.random.seed(seed)
    module = spec.build().eval()
    dummy = torch.zeros(spec.input_shape, dtype=torch.float32)
    buf = io.BytesIO()
    with torch.no_grad():
        torch.onnx.export(module, dummy, buf, opset_version=OPSET,
                          input_names=[INPUT_NAME], output_names=spec.names_of_outputs(),
                          do_constant_folding=True)
    model = onnx.load_from_string(buf.getvalue())
    fuse_pad_into_average_pool(model)
    onnx.save(model, path)
    return model, module


def op_types(model) -> List[str]:
    return [n.op_type for n in model.graph.node]


def check_ops(spec: ModelSpec, model, allow_unsupported: bool = False) -> List[str]:
    """Asserts the exported graph contains spec.expected_ops (and, unless allowed,
    only supported operators). Returns a list of problems (empty when fine)."""
    present = set(op_types(model))
    problems = []
    missing = sorted(spec.expected_ops - present)
    if missing:
        problems.append('exported graph lacks expected operator(s) %s (has %s)' % (missing, sorted(present)))
    if not allow_unsupported:
        extra = sorted(present - SUPPORTED_OPS)
        if extra:
            problems.append('exported graph has operator(s) outside the supported set: %s' % extra)
    if spec.check_graph is not None:
        try:
            spec.check_graph(model)
        except AssertionError as e:
            problems.append(str(e))
    return problems


def make_input(spec: ModelSpec, seed: int = 1234) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.standard_normal(spec.input_shape).astype(np.float32)


def torch_reference(module, x: np.ndarray) -> List[np.ndarray]:
    torch = _torch()
    with torch.no_grad():
        out = module(torch.from_numpy(x))
    if not isinstance(out, (tuple, list)):
        out = (out,)
    return [o.detach().numpy() for o in out]


def all_ops_covered() -> Sequence[str]:
    """Supported operators that no model's expected_ops mentions (should be empty)."""
    covered = set()
    for spec in MODELS.values():
        covered |= spec.expected_ops
    return sorted(SUPPORTED_OPS - covered - {'Constant', 'Identity'})
