#!/usr/bin/python3
"""Operators added for ONNX coverage (issue 19) against ONNX Runtime on seeded inputs, at
rtol 1e-4 / atol 1e-5:

  grid_sample  every GridSample mode (bilinear, nearest, bicubic) x padding (zeros, border,
               reflection) x align_corners, the grid reaching past [-1, 1]
  det_reverse  Det of a batch of 6x6 matrices (pivoting needed) and of 1x1 ones; ReverseSequence
               along time (batch_axis 1) and along batch (time_axis 1) with run-time lengths

  sample_ops_models.py --kilnc PATH --kiln PATH --ort-dir tests/ort --workdir DIR [--node node]
"""

import itertools
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

sys.dont_write_bytecode = True

import kiln_e2e  # noqa: E402


def model() -> onnx.ModelProto:
    nodes, outputs = [], []
    for mode, padding, align in itertools.product(('bilinear', 'nearest', 'bicubic'), ('zeros', 'border', 'reflection'),
                                                  (0, 1)):
        name = '%s_%s_%d' % (mode, padding, align)
        nodes.append(helper.make_node('GridSample', ['x', 'grid'], [name], mode=mode, padding_mode=padding,
                                      align_corners=align))
        outputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, [2, 3, 5, 7]))
    g = helper.make_graph(nodes, 'grid_sample', [helper.make_tensor_value_info('x', TensorProto.FLOAT, [2, 3, 6, 9]),
                                                 helper.make_tensor_value_info('grid', TensorProto.FLOAT, [2, 5, 7, 2])],
                          outputs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid('', 16)])
    onnx.checker.check_model(m)
    return m


def det_reverse() -> onnx.ModelProto:
    F, I64 = TensorProto.FLOAT, TensorProto.INT64
    nodes = [helper.make_node('Det', ['m'], ['det']), helper.make_node('Det', ['one'], ['det1']),
             helper.make_node('ReverseSequence', ['seq', 'lens'], ['rev_time'], batch_axis=1, time_axis=0),
             helper.make_node('ReverseSequence', ['seqb', 'lensb'], ['rev_batch'], batch_axis=0, time_axis=1)]
    g = helper.make_graph(nodes, 'det_reverse',
                          [helper.make_tensor_value_info('m', F, [3, 6, 6]), helper.make_tensor_value_info('one', F, [2, 1, 1]),
                           helper.make_tensor_value_info('seq', F, [5, 4, 3]), helper.make_tensor_value_info('lens', I64, [4]),
                           helper.make_tensor_value_info('seqb', F, [4, 5, 2]), helper.make_tensor_value_info('lensb', I64, [4])],
                          [helper.make_tensor_value_info('det', F, [3]), helper.make_tensor_value_info('det1', F, [2]),
                           helper.make_tensor_value_info('rev_time', F, [5, 4, 3]),
                           helper.make_tensor_value_info('rev_batch', F, [4, 5, 2])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid('', 13)])
    onnx.checker.check_model(m)
    return m


def main() -> int:
    args = kiln_e2e.script_args(__doc__.split('\n')[0])
    work = kiln_e2e.fresh_dir(args.workdir)
    path = os.path.join(work, 'grid_sample.onnx')
    onnx.save(model(), path)
    rng = np.random.default_rng(19)
    feeds = []
    for k in range(2):
        x = os.path.join(work, 'x%d.npy' % k)
        grid = os.path.join(work, 'grid%d.npy' % k)
        np.save(x, (rng.standard_normal((2, 3, 6, 9)) + 2).astype(np.float32))
        np.save(grid, rng.uniform(-1.6, 1.6, (2, 5, 7, 2)).astype(np.float32))
        feeds.append({'x': x, 'grid': grid})
    ok = kiln_e2e.check_dynamic_against_ort(args, path, os.path.join(work, 'run'), [], feeds, 1e-4, 1e-5)
    kiln_e2e.log('grid_sample (18 combinations, 2 inputs): %s' % ('PASS' if ok else 'FAIL'))
    path = os.path.join(work, 'det_reverse.onnx')
    onnx.save(det_reverse(), path)
    arrays = {'m': rng.standard_normal((3, 6, 6)).astype(np.float32),
              'one': np.array([[[2.5]], [[-1.0]]], np.float32),
              'seq': rng.standard_normal((5, 4, 3)).astype(np.float32), 'lens': np.array([5, 1, 3, 0], np.int64),
              'seqb': rng.standard_normal((4, 5, 2)).astype(np.float32), 'lensb': np.array([2, 5, 4, 1], np.int64)}
    arrays['m'][1, 0, 0] = 0  # a zero at the first pivot: it must come from a row below
    files = {}
    for name, a in arrays.items():
        files[name] = os.path.join(work, 'dr_%s.npy' % name)
        np.save(files[name], a)
    one = kiln_e2e.check_dynamic_against_ort(args, path, os.path.join(work, 'det_reverse'), [], [files], 1e-4, 1e-5)
    kiln_e2e.log('det_reverse: %s' % ('PASS' if one else 'FAIL'))
    return 0 if ok and one else 1


if __name__ == '__main__':
    kiln_e2e.run_script(main)
