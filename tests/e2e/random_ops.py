#!/usr/bin/python3
"""Random operators (ops_random.cpp) checked by distribution, since no reference can give
their values: RandomUniformLike, RandomUniform, RandomNormalLike, RandomNormal, Bernoulli and
Dropout in training mode with its ratio and training_mode given at run time.

  uniform    262144 draws in [-2, 3): the mean and variance within 5 standard errors, each of
             64 equal bins within 5 sigma of its expected count, lag-1 and row-to-row
             correlations below 0.01, every value in range
  normal     262144 draws of N(1.5, 2^2): mean, standard deviation, and the share within one
             and two sigma; RandomNormal of a static shape likewise
  bernoulli  65536 draws at 16 probability levels (0 and 1 included, which must be exact)
  multinomial 20000 samples from each of 3 rows of logits (uniform, powers of two with a -inf
             class, peaked): every class's share within 5 sigma, never a class of probability 0
  dropout    ratio 0.3 and 0.8 at run time: every kept value is x / (1 - ratio), the mask agrees,
             the dropped share within 5 sigma; training_mode false gives y = x and a true mask
  seeds      two seeds give different draws; the same bundle gives the same draws with 1 and 2
             threads and across runs (a counter-based generator); on Vulkan (when present)
             the uniform draws equal the CPU's to 1e-6

  random_ops.py --kilnc PATH --kiln PATH --ort-dir tests/ort --workdir DIR [--node node] [--vulkan]
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

sys.dont_write_bytecode = True

import kiln_e2e  # noqa: E402

F = TensorProto.FLOAT
SHAPE = [512, 512]


def model() -> onnx.ModelProto:
    nodes = [
        helper.make_node('RandomUniformLike', ['x'], ['uniform'], low=-2.0, high=3.0, seed=7.0),
        helper.make_node('RandomUniformLike', ['x'], ['uniform_seed8'], low=-2.0, high=3.0, seed=8.0),
        helper.make_node('RandomNormalLike', ['x'], ['normal'], mean=1.5, scale=2.0, seed=3.0),
        helper.make_node('RandomNormal', [], ['normal_static'], shape=[256, 256], seed=11.0),
        helper.make_node('RandomUniform', [], ['uniform_static'], shape=[4, 8], dtype=TensorProto.DOUBLE),
        helper.make_node('Bernoulli', ['p'], ['bern'], seed=5.0),
        helper.make_node('Dropout', ['x', 'ratio', 'training'], ['dropped', 'mask'], seed=1),
        helper.make_node('Multinomial', ['logits'], ['classes'], sample_size=20000, dtype=TensorProto.INT64, seed=2.0),
    ]
    g = helper.make_graph(
        nodes, 'random_ops',
        [helper.make_tensor_value_info('x', F, SHAPE), helper.make_tensor_value_info('p', F, [16, 4096]),
         helper.make_tensor_value_info('logits', F, [3, 5]), helper.make_tensor_value_info('ratio', F, []), helper.make_tensor_value_info('training', TensorProto.BOOL, [])],
        [helper.make_tensor_value_info('uniform', F, SHAPE), helper.make_tensor_value_info('uniform_seed8', F, SHAPE),
         helper.make_tensor_value_info('normal', F, SHAPE),
         helper.make_tensor_value_info('normal_static', F, [256, 256]),
         helper.make_tensor_value_info('uniform_static', TensorProto.DOUBLE, [4, 8]),
         helper.make_tensor_value_info('bern', F, [16, 4096]),
         helper.make_tensor_value_info('dropped', F, SHAPE), helper.make_tensor_value_info('mask', TensorProto.BOOL, SHAPE),
         helper.make_tensor_value_info('classes', TensorProto.INT64, [3, 20000])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid('', 15)])
    onnx.checker.check_model(m)
    return m


def within(label: str, value: float, expected: float, stderr: float) -> bool:
    ok = abs(value - expected) <= 5 * stderr
    kiln_e2e.log('  %-34s %.5f (expected %.5f +- %.5f): %s' % (label, value, expected, 5 * stderr, 'ok' if ok else 'FAIL'))
    return ok


def check_uniform(u: np.ndarray, lo: float, hi: float) -> bool:
    n = u.size
    ok = bool(((u >= lo) & (u < hi)).all())
    kiln_e2e.log('  uniform values in [%g, %g): %s' % (lo, hi, 'ok' if ok else 'FAIL'))
    w = hi - lo
    ok &= within('uniform mean', u.mean(), (lo + hi) / 2, w / np.sqrt(12 * n))
    ok &= within('uniform variance', u.var(), w * w / 12, w * w * np.sqrt(1 / 180.0 / n))
    counts = np.histogram(u, bins=64, range=(lo, hi))[0]
    expect = n / 64
    worst = np.abs(counts - expect).max() / np.sqrt(expect * (1 - 1 / 64))
    kiln_e2e.log('  uniform 64 bins, worst deviation %.2f sigma: %s' % (worst, 'ok' if worst < 5 else 'FAIL'))
    ok &= worst < 5
    flat = (u.ravel() - u.mean()) / u.std()
    for lag, name in ((1, 'lag-1'), (SHAPE[1], 'row-to-row')):
        c = float(np.mean(flat[:-lag] * flat[lag:]))
        kiln_e2e.log('  uniform %s correlation %.4f: %s' % (name, c, 'ok' if abs(c) < 0.01 else 'FAIL'))
        ok &= abs(c) < 0.01
    return ok


def check_normal(z: np.ndarray, mean: float, sd: float, label: str) -> bool:
    n = z.size
    ok = within(label + ' mean', z.mean(), mean, sd / np.sqrt(n))
    ok &= within(label + ' standard deviation', z.std(), sd, sd / np.sqrt(2 * n))
    for k, share in ((1, 0.682689492), (2, 0.954499736)):
        s = float(np.mean(np.abs(z - mean) < k * sd))
        ok &= within('%s share within %d sigma' % (label, k), s, share, np.sqrt(share * (1 - share) / n))
    return ok


def run(args, bundle, feeds, out, extra=()):
    cmd = [args.kiln, 'run', bundle, '--output-dir', out] + list(extra)
    for name, path in feeds.items():
        cmd += ['--input', '%s=%s' % (name, path)]
    proc = kiln_e2e.run_tool('kiln run', cmd, timeout=120)
    if proc.returncode != 0:
        return None
    return {f[:-4]: np.load(os.path.join(out, f)) for f in os.listdir(out)}


def main() -> int:
    args = kiln_e2e.script_args(__doc__.split('\n\n')[0], lambda ap: ap.add_argument(
        '--vulkan', action='store_true', help='also compare the Vulkan draws with the CPU ones'))
    work = kiln_e2e.fresh_dir(args.workdir)
    path = os.path.join(work, 'random_ops.onnx')
    onnx.save(model(), path)
    bundle = os.path.join(work, 'random_ops.kiln')
    if kiln_e2e.run_tool('kilnc', [args.kilnc, path, '-o', bundle], timeout=300).returncode != 0:
        return 1
    rng = np.random.default_rng(19)
    x = rng.uniform(0.5, 2.0, SHAPE).astype(np.float32)
    levels = np.linspace(0.0, 1.0, 16).astype(np.float32)
    p = np.repeat(levels[:, None], 4096, axis=1)
    feeds = {}
    logits = np.array([[0, 0, 0, 0, 0], [np.log(0.5), np.log(0.25), np.log(0.125), np.log(0.125), -np.inf],
                       [10, 9, 8, -5, 3]], np.float32)
    for name, arr in (('x', x), ('p', p), ('logits', logits)):
        feeds[name] = os.path.join(work, name + '.npy')
        np.save(feeds[name], arr)
    ok = True
    results = {}
    for ratio in (0.3, 0.8, 0.0):
        for training in (True, False):
            feeds['ratio'] = os.path.join(work, 'ratio.npy')
            feeds['training'] = os.path.join(work, 'training.npy')
            np.save(feeds['ratio'], np.array(ratio, np.float32))
            np.save(feeds['training'], np.array(training))
            r = run(args, bundle, feeds, kiln_e2e.fresh_dir(os.path.join(work, 'out_%g_%d' % (ratio, training))))
            if r is None:
                return 1
            results[(ratio, training)] = r
            y, mask = r['dropped'], r['mask']
            if not training or ratio == 0:
                same = bool(mask.all() and np.array_equal(y, x))
                kiln_e2e.log('dropout ratio %g training %s: y = x, mask all true: %s' % (ratio, training, 'ok' if same else 'FAIL'))
                ok &= same
                continue
            agree = np.allclose(y, np.where(mask, x / np.float32(1 - ratio), 0), rtol=1e-6, atol=0)
            kiln_e2e.log('dropout ratio %g: kept values x / (1 - ratio), mask agrees: %s' % (ratio, 'ok' if agree else 'FAIL'))
            ok &= agree
            ok &= within('dropout ratio %g dropped share' % ratio, float((~mask).mean()), ratio,
                         np.sqrt(ratio * (1 - ratio) / mask.size))
    r = results[(0.3, True)]
    kiln_e2e.log('uniform:')
    ok &= check_uniform(r['uniform'].astype(np.float64), -2.0, 3.0)
    differ = float(np.mean(r['uniform'] == r['uniform_seed8']))
    kiln_e2e.log('  seeds 7 and 8 agree on %.4f of the draws: %s' % (differ, 'ok' if differ < 0.001 else 'FAIL'))
    ok &= differ < 0.001
    kiln_e2e.log('normal:')
    ok &= check_normal(r['normal'].astype(np.float64), 1.5, 2.0, 'normal')
    ok &= check_normal(r['normal_static'].astype(np.float64), 0.0, 1.0, 'normal (static)')
    # Neighbours independent beyond linear correlation (RandomNormal's two uniform streams
    # were once the same stream one element apart: corr(z_i, z_{i+1}^2) was 0.2).
    z = (r['normal'].astype(np.float64).ravel() - 1.5) / 2.0
    dep = float(np.corrcoef(z[:-1], z[1:] ** 2)[0, 1])
    kiln_e2e.log('  normal corr(z_i, z_(i+1)^2) %.4f: %s' % (dep, 'ok' if abs(dep) < 0.01 else 'FAIL'))
    ok &= abs(dep) < 0.01
    us = r['uniform_static']
    dbl = us.dtype == np.float64 and bool(((us >= 0) & (us < 1)).all())
    kiln_e2e.log('RandomUniform float64 [4, 8] in [0, 1): %s' % ('ok' if dbl else 'FAIL'))
    ok &= dbl
    kiln_e2e.log('bernoulli:')
    b = r['bern']
    exact = bool((b[0] == 0).all() and (b[-1] == 1).all() and np.isin(b, [0, 1]).all())
    kiln_e2e.log('  values 0/1, p = 0 and p = 1 exact: %s' % ('ok' if exact else 'FAIL'))
    ok &= exact
    for i in range(1, 15):
        lv = float(levels[i])
        ok &= within('bernoulli mean at p = %.3f' % lv, float(b[i].mean()), lv, np.sqrt(lv * (1 - lv) / 4096))
    kiln_e2e.log('multinomial:')
    cls = r['classes']
    probs = np.exp(logits.astype(np.float64) - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    inrange = bool(((cls >= 0) & (cls < 5)).all()) and not (cls[1] == 4).any()
    kiln_e2e.log('  classes in [0, 5), none of probability 0: %s' % ('ok' if inrange else 'FAIL'))
    ok &= inrange
    for row in range(3):
        for c in range(5):
            pc = probs[row, c]
            if pc > 1e-4:
                ok &= within('multinomial row %d class %d share' % (row, c), float(np.mean(cls[row] == c)), pc,
                             np.sqrt(pc * (1 - pc) / cls.shape[1]))
    # Determinism: another run with 2 threads gives the same values.
    feeds['ratio'], feeds['training'] = os.path.join(work, 'r3.npy'), os.path.join(work, 't1.npy')
    np.save(feeds['ratio'], np.array(0.3, np.float32))
    np.save(feeds['training'], np.array(True))
    again = run(args, bundle, feeds, kiln_e2e.fresh_dir(os.path.join(work, 'out_threads')), ['--threads', '2'])
    same = again is not None and all(np.array_equal(again[k], r[k]) for k in r)
    kiln_e2e.log('the same draws with 2 threads and in another run: %s' % ('ok' if same else 'FAIL'))
    ok &= same
    if args.vulkan:
        vb = os.path.join(work, 'random_ops.vulkan.kiln')
        if kiln_e2e.run_tool('kilnc', [args.kilnc, path, '-o', vb, '--target=vulkan'], timeout=300).returncode != 0:
            return 1
        g = run(args, vb, feeds, kiln_e2e.fresh_dir(os.path.join(work, 'out_vulkan')), ['--device', 'vulkan'])
        gpu = g is not None and np.allclose(g['uniform'], r['uniform'], rtol=0, atol=1e-6) and \
            np.array_equal(g['mask'], r['mask']) and np.array_equal(g['bern'], r['bern'])
        kiln_e2e.log('Vulkan: the same uniform draws, mask and Bernoulli draws: %s' % ('ok' if gpu else 'FAIL'))
        ok &= gpu
    kiln_e2e.log('random_ops: %s' % ('PASS' if ok else 'FAIL'))
    return 0 if ok else 1


if __name__ == '__main__':
    kiln_e2e.run_script(main)
