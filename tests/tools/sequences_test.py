#!/usr/bin/python3
"""Sequences and optionals as model inputs and outputs (issue 19, docs/sequences.md): one model
takes a sequence `xs` of float32 [2, 3] tensors, an optional tensor `o` and a tensor `k`, and
gives the sequence's concatenation, the sequence with `k` appended (a sequence output), whether
`o` holds a value, and `o` itself (an optional output). kilnc compiles it with
--sequence-length xs=3; `kiln run` reads the sequence from a folder of .npy files and writes the
output sequence as one; an absent optional (--input o=none) gives False and no file. The
expected values are numpy's. Then the bad inputs: kilnc without the length, a folder with a
file missing or one too many, a file for a folder, a wrong element shape, a missing optional.

  sequences_test.py sequences --kilnc PATH --kiln PATH --source-root DIR --workdir DIR [--vulkan]
"""

import argparse
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper


def build_model(path: str) -> None:
    elem = helper.make_tensor_type_proto(TensorProto.FLOAT, [2, 3])
    inputs = [helper.make_value_info('xs', helper.make_sequence_type_proto(elem)),
              helper.make_value_info('o', helper.make_optional_type_proto(
                  helper.make_tensor_type_proto(TensorProto.FLOAT, [3]))),
              helper.make_tensor_value_info('k', TensorProto.FLOAT, [2, 3])]
    outputs = [helper.make_tensor_value_info('cat', TensorProto.FLOAT, [6, 3]),
               helper.make_value_info('ys', helper.make_sequence_type_proto(elem)),
               helper.make_tensor_value_info('has', TensorProto.BOOL, []),
               helper.make_value_info('oo', helper.make_optional_type_proto(
                   helper.make_tensor_type_proto(TensorProto.FLOAT, [3])))]
    nodes = [helper.make_node('ConcatFromSequence', ['xs'], ['cat'], axis=0),
             helper.make_node('SequenceInsert', ['xs', 'k'], ['ys']),
             helper.make_node('OptionalHasElement', ['o'], ['has']),
             helper.make_node('Identity', ['o'], ['oo'])]
    m = helper.make_model(helper.make_graph(nodes, 'sequences', inputs, outputs),
                          opset_imports=[helper.make_opsetid('', 16)])
    onnx.checker.check_model(m)
    onnx.save(m, path)


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('check', choices=['sequences'])
    p.add_argument('--kilnc', required=True)
    p.add_argument('--kiln', required=True)
    p.add_argument('--source-root', required=True)
    p.add_argument('--workdir', required=True)
    p.add_argument('--vulkan', action='store_true')
    args = p.parse_args()
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    w = args.workdir
    model, bundle = os.path.join(w, 'sequences.onnx'), os.path.join(w, 'sequences.kiln')
    build_model(model)
    results = []

    def check(what, good, detail=''):
        print('%-62s %s%s' % (what, 'PASS' if good else 'FAIL', (' (%s)' % detail) if detail and not good else ''))
        results.append(good)

    proc = run([args.kilnc, model, '-o', bundle])
    check('kilnc without --sequence-length names the input and the flag',
          proc.returncode == 1 and "'xs' is a sequence" in proc.stderr and '--sequence-length xs=N' in proc.stderr,
          proc.stderr.strip())
    targets = [[]] + ([['--target=vulkan']] if args.vulkan else [])
    for target in targets:
        device = ['--device', 'vulkan', '--validation'] if target else []
        name = 'vulkan' if target else 'cpu'
        proc = run([args.kilnc, model, '-o', bundle, '--sequence-length', 'xs=3'] + target)
        if proc.returncode != 0:
            check('%s: kilnc --sequence-length xs=3' % name, False, proc.stderr.strip())
            continue
        info = run([args.kiln, 'inspect', bundle]).stdout
        check('%s: kiln inspect names the sequences and optionals' % name,
              'input xs: a sequence of 3 [xs[0], xs[1], xs[2]]' in info and
              'output oo: an optional tensor [oo.value], present when oo.present' in info, info)
        rng = np.random.default_rng(19)
        xs = [rng.standard_normal((2, 3)).astype(np.float32) for _ in range(3)]
        k = rng.standard_normal((2, 3)).astype(np.float32)
        o = rng.standard_normal(3).astype(np.float32)
        folder = os.path.join(w, 'xs')
        os.makedirs(folder, exist_ok=True)
        for i, x in enumerate(xs):
            np.save(os.path.join(folder, '%d.npy' % i), x)
        np.save(os.path.join(w, 'k.npy'), k)
        np.save(os.path.join(w, 'o.npy'), o)
        base = [args.kiln, 'run', bundle, '--input', 'xs=' + folder, '--input', 'k=' + os.path.join(w, 'k.npy')] + device
        for present in (True, False):
            out = os.path.join(w, '%s_out_%s' % (name, present))
            feed = 'o=' + (os.path.join(w, 'o.npy') if present else 'none')
            proc = run(base + ['--input', feed, '--output-dir', out])
            if proc.returncode != 0:
                check('%s: kiln run (o %s)' % (name, 'present' if present else 'none'), False, proc.stderr.strip())
                continue
            cat = np.load(os.path.join(out, 'cat.npy'))
            ys = sorted(os.listdir(os.path.join(out, 'ys')))
            seq_ok = ys == ['0.npy', '1.npy', '2.npy', '3.npy'] and all(
                np.array_equal(np.load(os.path.join(out, 'ys', '%d.npy' % i)), a) for i, a in enumerate(xs + [k]))
            has = np.load(os.path.join(out, 'has.npy'))
            oo = os.path.join(out, 'oo.npy')
            opt_ok = (os.path.isfile(oo) and np.array_equal(np.load(oo), o)) if present else \
                (not os.path.exists(oo) and 'output oo: none' in proc.stdout)
            check('%s: o %s: concatenation, sequence folder, has, optional output' %
                  (name, 'present' if present else 'none'),
                  np.array_equal(cat, np.concatenate(xs)) and seq_ok and has.dtype == np.bool_ and
                  bool(has) == present and opt_ok, proc.stdout)
    # Bad inputs, each refused with a message naming the input.
    bundle_args = [args.kiln, 'run', bundle, '--input', 'k=' + os.path.join(w, 'k.npy'),
                   '--input', 'o=' + os.path.join(w, 'o.npy')]
    run([args.kilnc, model, '-o', bundle, '--sequence-length', 'xs=3'])
    short = os.path.join(w, 'short')
    shutil.copytree(folder, short)
    os.remove(os.path.join(short, '2.npy'))
    proc = run(bundle_args + ['--input', 'xs=' + short])
    check('a folder with 2.npy missing', proc.returncode == 1 and '2.npy' in proc.stderr, proc.stderr.strip())
    extra = os.path.join(w, 'extra')
    shutil.copytree(folder, extra)
    shutil.copy(os.path.join(folder, '0.npy'), os.path.join(extra, '3.npy'))
    proc = run(bundle_args + ['--input', 'xs=' + extra])
    check('a folder with one tensor too many', proc.returncode == 1 and 'more than the 3' in proc.stderr,
          proc.stderr.strip())
    proc = run(bundle_args + ['--input', 'xs=' + os.path.join(folder, '0.npy')])
    check('a file for a sequence', proc.returncode == 1 and 'no directory' in proc.stderr, proc.stderr.strip())
    wrong = os.path.join(w, 'wrong')
    shutil.copytree(folder, wrong)
    np.save(os.path.join(wrong, '1.npy'), np.zeros((3, 2), np.float32))
    proc = run(bundle_args + ['--input', 'xs=' + wrong])
    check('an element of the wrong shape', proc.returncode == 1 and 'xs[1]' in proc.stderr, proc.stderr.strip())
    proc = run([args.kiln, 'run', bundle, '--input', 'xs=' + folder, '--input', 'k=' + os.path.join(w, 'k.npy')])
    check('a missing optional says how to give it or none',
          proc.returncode == 1 and 'missing --input o=FILE.npy|none' in proc.stderr, proc.stderr.strip())

    # A run-time position: in range (negative ones from the end), and out of range, which fails the run.
    at_model, at_bundle = os.path.join(w, 'at.onnx'), os.path.join(w, 'at.kiln')
    elem = helper.make_tensor_type_proto(TensorProto.FLOAT, [2, 3])
    m = helper.make_model(helper.make_graph(
        [helper.make_node('SequenceAt', ['xs', 'p'], ['y'], name='pick')], 'at',
        [helper.make_value_info('xs', helper.make_sequence_type_proto(elem)),
         helper.make_tensor_value_info('p', TensorProto.INT64, [])],
        [helper.make_tensor_value_info('y', TensorProto.FLOAT, [2, 3])]), opset_imports=[helper.make_opsetid('', 16)])
    onnx.save(m, at_model)
    proc = run([args.kilnc, at_model, '-o', at_bundle, '--sequence-length', 'xs=3'])
    check('kilnc: SequenceAt at a run-time position', proc.returncode == 0, proc.stderr.strip())
    for p, want in ((1, xs[1]), (-1, xs[2]), (3, None), (-4, None)):
        pf = os.path.join(w, 'p.npy')
        np.save(pf, np.array(p, np.int64))
        out = os.path.join(w, 'at_out')
        proc = run([args.kiln, 'run', at_bundle, '--input', 'xs=' + folder, '--input', 'p=' + pf, '--output-dir', out])
        if want is not None:
            good = proc.returncode == 0 and np.array_equal(np.load(os.path.join(out, 'y.npy')), want)
            check('SequenceAt at run-time position %d' % p, good, proc.stderr.strip())
        else:
            check('SequenceAt at run-time position %d: the run fails, naming the position' % p,
                  proc.returncode != 0 and 'pick.position' in proc.stderr and 'outside the range 0..2' in proc.stderr,
                  proc.stderr.strip())
    ok = all(results)
    print('sequences: %s' % ('PASS' if ok else 'FAIL'))
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
