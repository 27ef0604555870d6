"""Shared pieces of the command-line tool tests (tests/tools): the command
line every check takes, running a tool, and the models they use.

  demo:   demo/shapes_cnn.onnx (committed), compiled for the host and, with
          --vulkan, for Vulkan.
  layers: a model built here with onnx.helper whose FLOPs are known: two
          3x3 64->64 convs at 14x14 (Winograd-eligible; the second with a
          residual Add and a Relu fused into it), a strided 1x1 conv, a
          depthwise conv, GlobalAveragePool, Flatten, a Gemm and a MatMul.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True


def parse_args(checks):
    """The checks' shared command line; returns the arguments (workdir fresh)."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument('check', choices=sorted(checks))
    ap.add_argument('--kilnc', required=True)
    ap.add_argument('--kiln', required=True)
    ap.add_argument('--source-root', required=True)
    ap.add_argument('--workdir', required=True)
    ap.add_argument('--vulkan', action='store_true',
                    help='also check Vulkan bundles (lavapipe and the validation layer installed)')
    args = ap.parse_args()
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    return args


class Failure(Exception):
    pass


def check(ok, what):
    """Fails the test with `what` unless `ok`."""
    if not ok:
        raise Failure(what)


def run(cmd, expect_rc=None, timeout=300, env=None):
    """Runs `cmd` (text output); prints it; fails when expect_rc is given and differs."""
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout, env=env)
    print('$ ' + ' '.join(str(c) for c in cmd) + '   -> exit %d' % proc.returncode)
    for name, text in (('stdout', proc.stdout), ('stderr', proc.stderr)):
        if text:
            lines = text.rstrip('\n').split('\n')
            shown = lines if len(lines) <= 40 else lines[:20] + ['... (%d lines)' % len(lines)] + lines[-10:]
            print('  %s: ' % name + '\n          '.join(shown))
    if expect_rc is not None and proc.returncode != expect_rc:
        raise Failure('%s: exit %d, expected %d' % (' '.join(str(c) for c in cmd), proc.returncode, expect_rc))
    return proc


def main(checks):
    """Runs the check named on the command line: PASS (exit 0) or FAIL (exit 1)."""
    args = parse_args(checks)
    try:
        checks[args.check](args)
    except Failure as e:
        print('FAIL: %s' % e)
        return 1
    print('PASS')
    return 0


# ---------------------------------------------------------------------------
# Models.

def demo_onnx(args):
    return os.path.join(args.source_root, 'demo', 'shapes_cnn.onnx')


def demo_input(args):
    return 'input=' + os.path.join(args.source_root, 'demo', 'example_triangle.npy')


def compile_model(args, onnx_path, name, extra=()):
    """kilnc ONNX -o WORKDIR/NAME.kiln [extra]; returns the bundle's path."""
    bundle = os.path.join(args.workdir, name + '.kiln')
    run([args.kilnc, onnx_path, '-o', bundle] + list(extra), expect_rc=0, timeout=600)
    return bundle


def layers_model(path):
    """Writes the `layers` model; returns {node name: its direct FLOPs} for
    its Conv, Gemm and MatMul nodes (2 per multiply-add)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(7)
    inits = []

    def weight(name, *shape):
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) * 0.1).astype(np.float32), name))
        return name

    def conv(name, x, y, cin, cout, k, stride=1, group=1, bias=True):
        inputs = [x, weight(name + '.w', cout, cin // group, k, k)] + ([weight(name + '.b', cout)] if bias else [])
        return helper.make_node('Conv', inputs, [y], name=name, kernel_shape=[k, k], pads=[k // 2] * 4,
                                strides=[stride, stride], group=group)

    nodes = [
        conv('c1', 'x', 'c1_out', 64, 64, 3), helper.make_node('Relu', ['c1_out'], ['r1'], name='r1'),
        conv('c2', 'r1', 'c2_out', 64, 64, 3), helper.make_node('Add', ['c2_out', 'r1'], ['a2'], name='a2'),
        helper.make_node('Relu', ['a2'], ['r2'], name='r2'),
        conv('c3', 'r2', 'c3_out', 64, 32, 1, stride=2, bias=False),
        conv('c4', 'c3_out', 'c4_out', 32, 32, 3, group=32), helper.make_node('Relu', ['c4_out'], ['r4'], name='r4'),
        helper.make_node('GlobalAveragePool', ['r4'], ['gap'], name='gap'),
        helper.make_node('Flatten', ['gap'], ['flat'], name='flat'),
        helper.make_node('Gemm', ['flat', weight('fc.w', 10, 32), weight('fc.b', 10)], ['logits'], name='fc', transB=1),
        helper.make_node('MatMul', ['flat', weight('proj.w', 32, 8)], ['embedding'], name='proj'),
    ]
    graph = helper.make_graph(nodes, 'layers', [helper.make_tensor_value_info('x', TensorProto.FLOAT, [1, 64, 14, 14])],
                              [helper.make_tensor_value_info('logits', TensorProto.FLOAT, [1, 10]),
                               helper.make_tensor_value_info('embedding', TensorProto.FLOAT, [1, 8])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 13)])
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return {
        'c1': 2 * 14 * 14 * 64 * 64 * 9,
        'c2': 2 * 14 * 14 * 64 * 64 * 9,
        'c3': 2 * 7 * 7 * 32 * 64,
        'c4': 2 * 7 * 7 * 32 * 9,
        'fc': 2 * 10 * 32,
        'proj': 2 * 8 * 32,
    }


def mask_numbers(text):
    """`text` with decimal fractions (timings) replaced by 'F'."""
    return re.sub(r'\d+\.\d+', 'F', text)
