#!/usr/bin/python3
"""Float32 division on Vulkan is correctly rounded (codegen_glsl.cpp's kiln_fdiv): x / y over
200000 seeded pairs spanning magnitudes from 1e-38 to 1e38, subnormal operands with normal
quotients, a quotient next to a rounding midpoint, zeros, infinities and NaNs,
must equal numpy's (IEEE) quotients bit for bit, NaNs matching. Vulkan allows a GPU's OpFDiv
2.5 ulp (NVIDIA uses it) and does not require fma to be fused (lavapipe's is not), so the
correction must hold on both kinds of device; this runs on whichever `kiln run --device
vulkan` finds (lavapipe in CI).

  vulkan_division.py --kilnc PATH --kiln PATH --ort-dir tests/ort --workdir DIR [--node node]
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

sys.dont_write_bytecode = True

import kiln_e2e  # noqa: E402

N = 200000


def main() -> int:
    args = kiln_e2e.script_args(__doc__.split('\n\n')[0])
    work = kiln_e2e.fresh_dir(args.workdir)
    g = helper.make_graph([helper.make_node('Div', ['x', 'y'], ['q'])], 'division',
                          [helper.make_tensor_value_info('x', TensorProto.FLOAT, [N]),
                           helper.make_tensor_value_info('y', TensorProto.FLOAT, [N])],
                          [helper.make_tensor_value_info('q', TensorProto.FLOAT, [N])])
    path = os.path.join(work, 'division.onnx')
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid('', 13)]), path)
    rng = np.random.default_rng(2026)

    def values(n):
        mant = rng.uniform(1.0, 2.0, n)
        exp = rng.integers(-126, 127, n)
        v = (mant * np.exp2(exp.astype(np.float64))).astype(np.float32)
        v[rng.random(n) < 0.5] *= -1
        return v
    x, y = values(N), values(N)
    # Quotients near ties and ordinary magnitudes (most of a model's divisions).
    x[:N // 2] = rng.uniform(-100, 100, N // 2).astype(np.float32)
    y[:N // 2] = rng.uniform(0.001, 10, N // 2).astype(np.float32)
    # Subnormal operands whose quotients are normal, either way round.
    sub = (rng.integers(1, 1 << 23, 10000).astype(np.uint32)).view(np.float32)
    x[N // 2:N // 2 + 10000] = sub * np.where(rng.random(10000) < 0.5, -1, 1).astype(np.float32)
    y[N // 2:N // 2 + 10000] = rng.uniform(1e-30, 1e-12, 10000).astype(np.float32)
    x[N // 2 + 10000:N // 2 + 20000] = rng.uniform(1e-30, 1e-12, 10000).astype(np.float32)
    y[N // 2 + 10000:N // 2 + 20000] = (rng.integers(1, 1 << 23, 10000).astype(np.uint32)).view(np.float32)
    # A quotient within 2^-47 of a rounding midpoint (c = q + r / b alone misrounds it when q is 1 ulp off).
    x[N // 2 + 20000], y[N // 2 + 20000] = np.array([0x3fd759fa, 0x3f86839f], np.uint32).view(np.float32)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, 3.4e38, 1.0, 7.0], np.float32)
    k = len(special)
    x[-k * k:] = np.repeat(special, k)
    y[-k * k:] = np.tile(special, k)
    feeds = {}
    for name, arr in (('x', x), ('y', y)):
        feeds[name] = os.path.join(work, name + '.npy')
        np.save(feeds[name], arr)
    bundle = os.path.join(work, 'division.kiln')
    if kiln_e2e.run_tool('kilnc', [args.kilnc, path, '-o', bundle, '--target=vulkan'], timeout=120).returncode != 0:
        return 1
    out = kiln_e2e.fresh_dir(os.path.join(work, 'out'))
    cmd = [args.kiln, 'run', bundle, '--device', 'vulkan', '--validation', '--output-dir', out,
           '--input', 'x=' + feeds['x'], '--input', 'y=' + feeds['y']]
    if kiln_e2e.run_tool('kiln run', cmd, timeout=120).returncode != 0:
        return 1
    got = np.load(os.path.join(out, 'q.npy'))
    with np.errstate(all='ignore'):
        want = x / y
    same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
    # Results that are denormal may be flushed to zero by a GPU (Vulkan allows it).
    flushed = (np.abs(want) < np.float32(1.1754944e-38)) & (got == 0)
    bad = ~(same | flushed)
    kiln_e2e.log('division: %d of %d quotients differ from IEEE' % (int(bad.sum()), N))
    for i in np.flatnonzero(bad)[:10]:
        kiln_e2e.log('  %r / %r = %r, expected %r' % (x[i], y[i], got[i], want[i]))
    kiln_e2e.log('vulkan_division: %s' % ('FAIL' if bad.any() else 'PASS'))
    return 1 if bad.any() else 0


if __name__ == '__main__':
    kiln_e2e.run_script(main)
