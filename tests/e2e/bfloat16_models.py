#!/usr/bin/python3
"""bfloat16 end to end (decision 47; the .npy round trip of every type is tests/tools/dtypes_test.py):

1. rounding: Cast float32 -> bfloat16 over 100000 seeded values with ties, NaNs,
   infinities, overflow and denormals must give numpy's round-to-nearest-even bits exactly;
2. compute: MatMul, Add, Relu, Softmax, Mul, ReduceMean and Transpose on bfloat16
   tensors (weights included) against PyTorch float32 operators whose every result is
   rounded to bfloat16 once (ONNX's meaning of a bfloat16 output), within 2 bfloat16 steps.

With --vulkan, both also run on `kiln run --device vulkan --validation`.

  bfloat16_models.py --kilnc PATH --kiln PATH --ort-dir tests/ort --workdir DIR [--node node] [--vulkan]
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

sys.dont_write_bytecode = True

import kiln_e2e  # noqa: E402

def bf16_round(x: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bits, round to nearest even; NaN -> quiet NaN of its sign."""
    b = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    r = ((b + 0x7fff + ((b >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(x), ((b >> 16) | 0x40).astype(np.uint16), r)


def bf16_float(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


def bf16_tensor(name: str, values: np.ndarray) -> TensorProto:
    t = TensorProto()
    t.name, t.data_type = name, TensorProto.BFLOAT16
    t.dims.extend(values.shape)
    t.raw_data = bf16_round(values).tobytes()
    return t


class Runner:
    def __init__(self, args, work):
        self.args, self.work = args, work

    def run(self, tag: str, graph, feeds: dict, device: str):
        """Compiles and runs `graph`; the outputs as arrays by name, or None."""
        d = kiln_e2e.fresh_dir(os.path.join(self.work, '%s_%s' % (tag, device)))
        path = os.path.join(d, 'model.onnx')
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid('', 17)]), path)
        bundle = os.path.join(d, 'model.kiln')
        target = ['--target=vulkan'] if device == 'vulkan' else []
        if kiln_e2e.run_tool('kilnc', [self.args.kilnc, path, '-o', bundle] + target, timeout=300).returncode != 0:
            return None
        cmd = [self.args.kiln, 'run', bundle, '--output-dir', os.path.join(d, 'out')]
        if device == 'vulkan':
            cmd += ['--device', 'vulkan', '--validation']
        for name, arr in feeds.items():
            f = os.path.join(d, name + '.npy')
            np.save(f, arr)
            cmd += ['--input', '%s=%s' % (name, f)]
        if kiln_e2e.run_tool('kiln run', cmd, timeout=300).returncode != 0:
            return None
        return {o.name: np.load(os.path.join(d, 'out', o.name + '.npy')) for o in graph.output}


def rounding(r: Runner, rng, device: str) -> bool:
    n = 100000
    with np.errstate(over='ignore'):  # some overflow to infinity, on purpose
        x = (rng.standard_normal(n) * np.exp2(rng.integers(-140, 128, n).astype(np.float64))).astype(np.float32)
    # Exact ties (the lower 16 bits 0x8000) on both parities, and one above and below each.
    t = rng.integers(0, 1 << 31, 3000, dtype=np.uint64).astype(np.uint32) & np.uint32(0xffff0000)
    x[:3000] = (t | np.uint32(0x8000)).view(np.float32)
    x[3000:6000] = (t | np.uint32(0x8001)).view(np.float32)
    x[6000:9000] = (t | np.uint32(0x7fff)).view(np.float32)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 3.4028235e38, -3.4028235e38, 1e-45,
                        np.float32(np.uint32(0x7f800001).view(np.float32))], np.float32)
    x[-len(special):] = special
    g = helper.make_graph([helper.make_node('Cast', ['x'], ['y'], to=TensorProto.BFLOAT16)], 'round',
                          [helper.make_tensor_value_info('x', TensorProto.FLOAT, [n])],
                          [helper.make_tensor_value_info('y', TensorProto.BFLOAT16, [n])])
    got = r.run('rounding', g, {'x': x}, device)
    if got is None:
        return False
    bits, want = got['y'].view(np.uint16), bf16_round(x)
    nan = np.isnan(x)
    same = np.where(nan, np.isnan(bf16_float(bits)) & ((bits & 0x8000) == (want & 0x8000)), bits == want)
    if device == 'vulkan':  # a GPU may flush float32 denormals to zero before rounding (Vulkan allows it)
        same |= (np.abs(x) < np.float32(1.1754944e-38)) & ((bits & 0x7fff) == 0)
    bad = np.flatnonzero(~same)
    for i in bad[:8]:
        kiln_e2e.log('  %r (0x%08x): got 0x%04x, expected 0x%04x' % (x[i], x.view(np.uint32)[i], bits[i], want[i]))
    kiln_e2e.log('bfloat16 rounding (%s): %d of %d differ: %s' % (device, len(bad), n, 'FAIL' if len(bad) else 'PASS'))
    return len(bad) == 0


def compute(r: Runner, rng, device: str) -> bool:
    import torch
    M, K, N = 8, 96, 40
    x = rng.standard_normal((M, K)).astype(np.float32)
    w = (rng.standard_normal((K, N)) * 0.2).astype(np.float32)
    b = rng.standard_normal(N).astype(np.float32)
    s = rng.standard_normal((N, M)).astype(np.float32)
    BF = TensorProto.BFLOAT16
    nodes = [
        helper.make_node('MatMul', ['x', 'w'], ['mm']),
        helper.make_node('Add', ['mm', 'b'], ['biased']),
        helper.make_node('Relu', ['biased'], ['act']),
        helper.make_node('Softmax', ['act'], ['prob'], axis=-1),
        helper.make_node('Transpose', ['prob'], ['probT'], perm=[1, 0]),
        helper.make_node('Mul', ['probT', 's'], ['scaled']),
        helper.make_node('ReduceMean', ['scaled'], ['mean'], axes=[1], keepdims=0),
    ]
    g = helper.make_graph(nodes, 'bf16', [helper.make_tensor_value_info('x', BF, [M, K])],
                          [helper.make_tensor_value_info('act', BF, [M, N]),
                           helper.make_tensor_value_info('scaled', BF, [N, M]),
                           helper.make_tensor_value_info('mean', BF, [N])],
                          [bf16_tensor('w', w), bf16_tensor('b', b), bf16_tensor('s', s)])
    got = r.run('compute', g, {'x': bf16_round(x).view('V2')}, device)
    if got is None:
        return False

    # The reference is the semantics itself: float32 operators over bfloat16
    # values, each result rounded to bfloat16 once (what ONNX's per-operator
    # bfloat16 outputs mean). PyTorch's own bfloat16 CPU kernels are not used:
    # on hosts without AVX-512 BF16 some accumulate in bfloat16 (a MatMul then
    # drifts several steps), so they are no host-independent reference.
    def t(a):
        return torch.from_numpy(bf16_float(bf16_round(a)))

    def rnd(v):
        return v.to(torch.bfloat16).float()
    act = rnd(torch.relu(rnd(rnd(t(x) @ t(w)) + t(b))))
    scaled = rnd(rnd(torch.softmax(act, dim=-1)).t() * t(s))
    want = {'act': act, 'scaled': scaled, 'mean': rnd(scaled.mean(dim=1))}
    ok = True
    for name, ref in want.items():
        r32 = ref.float().numpy()
        g32 = bf16_float(got[name].view(np.uint16))
        close = np.isclose(g32, r32, rtol=2.0 ** -6, atol=1e-6)  # 2 bfloat16 steps
        kiln_e2e.log('bfloat16 %s (%s): %d of %d beyond 2 bfloat16 steps of PyTorch (max abs err %.3g)'
                     % (name, device, int((~close).sum()), close.size, float(np.abs(g32 - r32).max())))
        ok &= bool(close.all())
    return ok


def main() -> int:
    args = kiln_e2e.script_args(__doc__.split('\n\n')[0],
                                lambda ap: ap.add_argument('--vulkan', action='store_true'))
    r = Runner(args, kiln_e2e.fresh_dir(args.workdir))
    rng = np.random.default_rng(2027)
    ok = True
    for device in ['cpu'] + (['vulkan'] if args.vulkan else []):
        ok &= rounding(r, rng, device)
        ok &= compute(r, rng, device)
    kiln_e2e.log('bfloat16_models: %s' % ('PASS' if ok else 'FAIL'))
    return 0 if ok else 1


if __name__ == '__main__':
    kiln_e2e.run_script(main)
