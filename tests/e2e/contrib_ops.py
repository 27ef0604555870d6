#!/usr/bin/python3
"""ONNX Runtime's quantized contrib operators (domain com.microsoft: QLinearAdd, QLinearConcat,
QLinearGlobalAveragePool, QGemm), which kilnc expands at import (docs/int8.md), against
ONNX Runtime itself on seeded inputs: every uint8 output element within one quantization step.

  contrib_ops.py --kilnc PATH --kiln PATH --ort-dir tests/ort --workdir DIR [--node node]

The model is the fuzz seed of tests/fuzz/make_corpus.py (one definition of it).
"""

import os
import sys

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'fuzz'))
sys.dont_write_bytecode = True

import kiln_e2e  # noqa: E402
import make_corpus  # noqa: E402


def main() -> int:
    args = kiln_e2e.script_args(__doc__.split('\n')[0])
    work = kiln_e2e.fresh_dir(args.workdir)
    model = make_corpus.onnx_models(np.random.default_rng(2026))['qoperator_contrib']
    path = os.path.join(work, 'qoperator_contrib.onnx')
    onnx.save(model, path)
    ok = True
    for seed in range(3):
        rng = np.random.default_rng(seed)
        feeds = []
        for inp in model.graph.input:
            shape = [d.dim_value for d in inp.type.tensor_type.shape.dim]
            f = os.path.join(work, '%s_%d.npy' % (inp.name, seed))
            np.save(f, rng.integers(0, 256, shape).astype(np.uint8))
            feeds.append('%s=%s' % (inp.name, f))
        ok &= kiln_e2e.check_against_ort(args, path, os.path.join(work, 'run_%d' % seed), feeds, 0, 1)
    kiln_e2e.log('contrib_ops: %s' % ('PASS' if ok else 'FAIL'))
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
