#!/usr/bin/python3
"""GridSample (issue 19) against ONNX Runtime: one model with every mode (bilinear, nearest,
bicubic) x padding (zeros, border, reflection) x align_corners combination, on seeded inputs
whose grid reaches past [-1, 1] (so every padding mode is exercised), at rtol 1e-4 / atol 1e-5.

  grid_sample_models.py --kilnc PATH --kiln PATH --ort-dir tests/ort --workdir DIR [--node node]
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
    return 0 if ok else 1


if __name__ == '__main__':
    kiln_e2e.run_script(main)
