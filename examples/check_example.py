#!/usr/bin/python3
"""Runs an example (examples/) on the demo and checks its top class against
`kiln run --top 1` (meson tests example_c, example_cpp, example_java).

  check_example.py --kilnc KILNC --kiln KILN --source-root SRC --workdir DIR -- COMMAND...

Compiles demo/shapes_cnn.onnx with the build's kilnc into DIR, runs COMMAND
with {bundle}, {image} and {labels} replaced (demo/example_triangle.npy,
demo/labels.txt), and requires one line `top: LABEL (class N, p=P)` whose N is
the class `kiln run --top 1` prints, LABEL line N of the labels and P a
probability. Then runs COMMAND on a file that is no bundle: it must fail
(exit 1) with a message, not crash.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys


def run(cmd):
    print('$ ' + ' '.join(cmd), flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    print(proc.stdout + proc.stderr, end='')
    return proc


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    for flag in ('--kilnc', '--kiln', '--source-root', '--workdir'):
        parser.add_argument(flag, required=True)
    parser.add_argument('command', nargs='+')
    args = parser.parse_args()
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    demo = os.path.join(args.source_root, 'demo')
    bundle = os.path.join(args.workdir, 'shapes_cnn.kiln')
    image = os.path.join(demo, 'example_triangle.npy')
    labels_path = os.path.join(demo, 'labels.txt')
    if run([args.kilnc, os.path.join(demo, 'shapes_cnn.onnx'), '-o', bundle]).returncode:
        raise SystemExit('FAIL: kilnc')
    reference = run([args.kiln, 'run', bundle, '--input', 'input=' + image, '--top', '1'])
    want = re.search(r'^top-1: class (\d+) ', reference.stdout, re.M)
    if reference.returncode or not want:
        raise SystemExit('FAIL: kiln run --top 1')
    want = int(want.group(1))
    labels = [line.rstrip('\r\n') for line in open(labels_path)]

    def command(model):
        return [a.replace('{bundle}', model).replace('{image}', image).replace('{labels}', labels_path)
                for a in args.command]

    proc = run(command(bundle))
    got = re.findall(r'^top: (.+) \(class (\d+), p=([0-9.]+)\)$', proc.stdout, re.M)
    if proc.returncode or len(got) != 1:
        raise SystemExit('FAIL: exit %d, want exactly one "top: LABEL (class N, p=P)" line'
                         % proc.returncode)
    label, cls, p = got[0][0], int(got[0][1]), float(got[0][2])
    if cls != want or label != labels[want] or not 0 < p <= 1:
        raise SystemExit('FAIL: printed %s (class %d, p=%g); kiln run --top 1 says class %d (%s)'
                         % (label, cls, p, want, labels[want]))
    print('CHECK top class: PASS (%s, class %d, as kiln run --top 1)' % (label, cls))

    not_a_bundle = os.path.join(args.workdir, 'not_a_bundle.kiln')
    with open(not_a_bundle, 'w') as f:
        f.write('not a bundle\n')
    proc = run(command(not_a_bundle))
    if proc.returncode != 1 or 'INVALID_BUNDLE' not in proc.stderr:
        raise SystemExit('FAIL: on a file that is no bundle: exit %d, want 1 and INVALID_BUNDLE'
                         % proc.returncode)
    print('CHECK bad bundle: PASS (exit 1, INVALID_BUNDLE)')
    return 0


if __name__ == '__main__':
    sys.exit(main())
