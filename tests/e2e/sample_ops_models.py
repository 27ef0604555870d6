#!/usr/bin/python3
"""Operators added for ONNX coverage (issue 19) against ONNX Runtime on seeded inputs, at
rtol 1e-4 / atol 1e-5:

  grid_sample  every GridSample mode (bilinear, nearest, bicubic) x padding (zeros, border,
               reflection) x align_corners, the grid reaching past [-1, 1]
  det_reverse  Det of a batch of 6x6 matrices (pivoting needed) and of 1x1 ones; ReverseSequence
               along time (batch_axis 1) and along batch (time_axis 1) with run-time lengths
  windows      HannWindow, HammingWindow and BlackmanWindow, periodic and symmetric, int32 and int64
               sizes, float32 and float64 outputs; a size given at run time, sized per run
  signal       DFT (real and complex, two axes, inverse, onesided, dft_length shorter and longer) and
               STFT (with a window, with frame_length, onesided and not)
  tfidf        TfIdfVectorizer TF, IDF and TFIDF with weights, 1- to 3-grams with skips, int32 and int64
               ids, one row and a batch
  pool_index   MaxPool's Indices (2-D with pads, strides and dilations, row- and column-major; 1-D; 3-D)
               and MaxUnpool of them back, batch 2 x 3 channels (MaxUnpool with an output_shape: ONNX's
               test data and ONNX Runtime read the indices differently; the conformance case checks ONNX's)
  roi_align    RoiAlign avg and max, half_pixel and output_half_pixel, a fixed and an adaptive
               sampling grid, regions partly and wholly outside the map, over two images

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


def roi_align() -> onnx.ModelProto:
    F, I64 = TensorProto.FLOAT, TensorProto.INT64
    nodes, outputs = [], []
    for mode, ctm, ratio in itertools.product(('avg', 'max'), ('half_pixel', 'output_half_pixel'), (0, 2)):
        name = 'roi_%s_%s_%d' % (mode, ctm, ratio)
        nodes.append(helper.make_node('RoiAlign', ['x', 'rois', 'idx'], [name], mode=mode, coordinate_transformation_mode=ctm,
                                      sampling_ratio=ratio, output_height=3, output_width=4, spatial_scale=0.5))
        outputs.append(helper.make_tensor_value_info(name, F, [6, 3, 3, 4]))
    g = helper.make_graph(nodes, 'roi_align',
                          [helper.make_tensor_value_info('x', F, [2, 3, 10, 12]), helper.make_tensor_value_info('rois', F, [6, 4]),
                           helper.make_tensor_value_info('idx', I64, [6])], outputs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid('', 16)])
    onnx.checker.check_model(m)
    return m


def windows(size_input: bool) -> onnx.ModelProto:
    nodes, outputs, inits = [], [], [helper.make_tensor('n32', TensorProto.INT32, [], [12]),
                                     helper.make_tensor('n64', TensorProto.INT64, [], [7])]
    for op, periodic, size, dtype in itertools.product(('HannWindow', 'HammingWindow', 'BlackmanWindow'), (0, 1),
                                                       ('n32', 'n64'), (TensorProto.FLOAT, TensorProto.DOUBLE)):
        name = '%s_%d_%s_%d' % (op, periodic, size, dtype)
        nodes.append(helper.make_node(op, ['n' if size_input else size], [name], periodic=periodic, output_datatype=dtype))
        outputs.append(helper.make_tensor_value_info(name, dtype, ['n'] if size_input else [12 if size == 'n32' else 7]))
    inputs = [helper.make_tensor_value_info('n', TensorProto.INT32, [])] if size_input else []
    g = helper.make_graph(nodes[:1] if size_input else nodes, 'windows', inputs, outputs[:1] if size_input else outputs,
                          [] if size_input else inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid('', 17)])
    onnx.checker.check_model(m)
    return m


def pool_index() -> onnx.ModelProto:
    F, I64 = TensorProto.FLOAT, TensorProto.INT64
    nodes = [helper.make_node('MaxPool', ['x'], ['y2', 'i2'], kernel_shape=[3, 3], pads=[1, 0, 1, 2], strides=[2, 2]),
             helper.make_node('MaxPool', ['x'], ['yc', 'ic'], kernel_shape=[2, 3], strides=[2, 1], storage_order=1),
             helper.make_node('MaxPool', ['x'], ['yd', 'id'], kernel_shape=[2, 2], dilations=[2, 2]),
             helper.make_node('MaxPool', ['x1'], ['y1', 'i1'], kernel_shape=[3], strides=[2]),
             helper.make_node('MaxPool', ['x3'], ['y3', 'i3'], kernel_shape=[2, 2, 2], strides=[2, 2, 2]),
             helper.make_node('MaxPool', ['x8'], ['yu', 'iu'], kernel_shape=[2, 2], strides=[2, 2]),
             # Ties: the first maximum in window order, numbered column-major afterwards (ORT's pick).
             helper.make_node('MaxPool', ['xt'], ['yt', 'it'], kernel_shape=[2, 2], storage_order=1),
             helper.make_node('MaxUnpool', ['yu', 'iu'], ['u'], kernel_shape=[2, 2], strides=[2, 2])]
    g = helper.make_graph(nodes, 'pool_index',
                          [helper.make_tensor_value_info('x', F, [2, 3, 9, 8]), helper.make_tensor_value_info('x1', F, [2, 3, 11]),
                           helper.make_tensor_value_info('x3', F, [2, 3, 4, 6, 4]), helper.make_tensor_value_info('x8', F, [2, 3, 8, 8]),
                           helper.make_tensor_value_info('xt', F, [1, 2, 2, 2])],
                          [helper.make_tensor_value_info(name, t, shape) for name, t, shape in
                           (('y2', F, [2, 3, 5, 4]), ('i2', I64, [2, 3, 5, 4]), ('yc', F, [2, 3, 4, 6]),
                            ('ic', I64, [2, 3, 4, 6]), ('yd', F, [2, 3, 7, 6]), ('id', I64, [2, 3, 7, 6]),
                            ('y1', F, [2, 3, 5]), ('i1', I64, [2, 3, 5]), ('y3', F, [2, 3, 2, 3, 2]),
                            ('i3', I64, [2, 3, 2, 3, 2]), ('u', F, [2, 3, 8, 8]), ('yt', F, [1, 2, 1, 1]),
                            ('it', I64, [1, 2, 1, 1]))])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid('', 12)])
    onnx.checker.check_model(m)
    return m


def signal() -> onnx.ModelProto:
    F, I64 = TensorProto.FLOAT, TensorProto.INT64
    nodes = [helper.make_node('DFT', ['xr'], ['d_real']),
             helper.make_node('DFT', ['xc'], ['d_axis2'], axis=2),
             helper.make_node('DFT', ['xc'], ['d_inv'], inverse=1),
             helper.make_node('DFT', ['xr'], ['d_one'], onesided=1),
             helper.make_node('DFT', ['xr', 'len6'], ['d_short']),
             helper.make_node('DFT', ['xc', 'len16'], ['d_long']),
             helper.make_node('STFT', ['sig', 'step', 'win'], ['s_win']),
             helper.make_node('STFT', ['sig', 'step', '', 'flen'], ['s_len'], onesided=0)]
    inits = [helper.make_tensor('len6', I64, [], [6]), helper.make_tensor('len16', I64, [], [16]),
             helper.make_tensor('step', I64, [], [5]), helper.make_tensor('flen', I64, [], [12]),
             helper.make_tensor('win', F, [16], list(0.5 - 0.5 * np.cos(2 * np.pi * np.arange(16) / 16)))]
    outs = [('d_real', [2, 10, 3, 2]), ('d_axis2', [2, 10, 3, 2]), ('d_inv', [2, 10, 3, 2]), ('d_one', [2, 6, 3, 2]),
            ('d_short', [2, 6, 3, 2]), ('d_long', [2, 16, 3, 2]), ('s_win', [2, 17, 9, 2]), ('s_len', [2, 17, 12, 2])]
    g = helper.make_graph(nodes, 'signal',
                          [helper.make_tensor_value_info('xr', F, [2, 10, 3, 1]), helper.make_tensor_value_info('xc', F, [2, 10, 3, 2]),
                           helper.make_tensor_value_info('sig', F, [2, 96, 1])],
                          [helper.make_tensor_value_info(name, F, shape) for name, shape in outs], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid('', 17)])
    onnx.checker.check_model(m)
    return m


def signal_against_numpy(out_dir: str, x) -> bool:
    """kiln's DFT/STFT outputs against numpy's FFT (float64) at rtol 1e-5 / atol 1e-5."""
    xc = x['xc'][..., 0] + 1j * x['xc'][..., 1]
    sig = x['sig'][..., 0].astype(np.float64)
    win = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(16) / 16)
    frames = lambda n, w: np.stack([sig[:, f * 5:f * 5 + n] * w for f in range((96 - n) // 5 + 1)], axis=1)
    want = {'d_real': np.fft.fft(x['xr'][..., 0].astype(np.float64), axis=1),
            'd_axis2': np.fft.fft(xc, axis=2), 'd_inv': np.fft.ifft(xc, axis=1),
            'd_one': np.fft.rfft(x['xr'][..., 0].astype(np.float64), axis=1),
            'd_short': np.fft.fft(x['xr'][:, :6, :, 0].astype(np.float64), axis=1),
            'd_long': np.fft.fft(xc, n=16, axis=1),
            's_win': np.fft.rfft(frames(16, win), axis=2), 's_len': np.fft.fft(frames(12, 1.0), axis=2)}
    ok = True
    for name, ref in want.items():
        got = np.load(os.path.join(out_dir, name + '.npy'))
        ref = np.stack([ref.real, ref.imag], axis=-1)
        err = np.abs(got - ref).max()
        good = got.shape == ref.shape and bool(np.allclose(got, ref, rtol=1e-5, atol=1e-5))
        kiln_e2e.log('  %s against numpy: max abs err %.2g %s' % (name, err, 'PASS' if good else 'FAIL'))
        ok &= good
    return ok


def tfidf() -> onnx.ModelProto:
    pool = [2, 3, 5, 4, 5, 6, 7, 8, 6, 7, 1, 3, 3, 3, 3, 7]  # 4 unigrams, 3 bigrams, 2 trigrams
    common = dict(ngram_counts=[0, 4, 10], ngram_indexes=[0, 1, 2, 3, 4, 5, 6, 7, 8], pool_int64s=pool)
    nodes = [helper.make_node('TfIdfVectorizer', ['x32'], ['tf'], mode='TF', min_gram_length=1, max_gram_length=3,
                              max_skip_count=2, **common),
             helper.make_node('TfIdfVectorizer', ['x64'], ['idf'], mode='IDF', min_gram_length=2, max_gram_length=3,
                              max_skip_count=0, weights=[0.1 * k + 0.5 for k in range(9)], **common),
             helper.make_node('TfIdfVectorizer', ['x64'], ['tfidf'], mode='TFIDF', min_gram_length=1, max_gram_length=2,
                              max_skip_count=4, weights=[1.5 - 0.1 * k for k in range(9)], **common)]
    g = helper.make_graph(nodes, 'tfidf', [helper.make_tensor_value_info('x32', TensorProto.INT32, [3, 12]),
                                           helper.make_tensor_value_info('x64', TensorProto.INT64, [20])],
                          [helper.make_tensor_value_info('tf', TensorProto.FLOAT, [3, 9]),
                           helper.make_tensor_value_info('idf', TensorProto.FLOAT, [9]),
                           helper.make_tensor_value_info('tfidf', TensorProto.FLOAT, [9])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid('', 9)])
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
    path = os.path.join(work, 'roi_align.onnx')
    onnx.save(roi_align(), path)
    # Regions (x1, y1, x2, y2) in image pixels (spatial_scale 0.5): inside, large (an adaptive grid
    # of several samples per bin), degenerate, past the edges, wholly outside, inverted.
    rois = np.array([[2, 3, 15, 17], [0, 0, 23, 19], [5, 5, 5.5, 6], [18, 14, 30, 26], [-9, -8, -3, -2],
                     [12, 10, 4, 2]], np.float32)
    files = {'x': os.path.join(work, 'ra_x.npy'), 'rois': os.path.join(work, 'ra_rois.npy'),
             'idx': os.path.join(work, 'ra_idx.npy')}
    np.save(files['x'], rng.standard_normal((2, 3, 10, 12)).astype(np.float32))
    np.save(files['rois'], rois)
    np.save(files['idx'], np.array([0, 1, 1, 0, 1, 0], np.int64))
    ra = kiln_e2e.check_dynamic_against_ort(args, path, os.path.join(work, 'roi_align'), [], [files], 1e-4, 1e-5)
    files_ra = files
    kiln_e2e.log('roi_align (8 combinations): %s' % ('PASS' if ra else 'FAIL'))
    path = os.path.join(work, 'windows.onnx')
    onnx.save(windows(False), path)
    win = kiln_e2e.check_dynamic_against_ort(args, path, os.path.join(work, 'windows'), [], [{}], 1e-5, 1e-6)
    path = os.path.join(work, 'window_size_input.onnx')
    onnx.save(windows(True), path)
    # A size given at run time: read by the bundle, its window sized per run (no flag).
    sizes = []
    for n in (7, 300):
        sizes.append({'n': os.path.join(work, 'n%d.npy' % n)})
        np.save(sizes[-1]['n'], np.array(n, np.int32))
    win &= kiln_e2e.check_dynamic_against_ort(args, path, os.path.join(work, 'window_size_input'), [], sizes, 1e-5, 1e-6)
    kiln_e2e.log('windows (24 variants; a size given at run time, 7 and 300): %s' % ('PASS' if win else 'FAIL'))
    path = os.path.join(work, 'signal.onnx')
    onnx.save(signal(), path)
    files = {}
    for name, shape in (('xr', (2, 10, 3, 1)), ('xc', (2, 10, 3, 2)), ('sig', (2, 96, 1))):
        files[name] = os.path.join(work, 'sg_%s.npy' % name)
        np.save(files[name], rng.standard_normal(shape).astype(np.float32))
    # ONNX Runtime transforms in float32 (a bin that should cancel is off by up to 3e-5 here); kiln
    # sums in float64, so numpy's FFT is the tight reference.
    sg = kiln_e2e.check_dynamic_against_ort(args, path, os.path.join(work, 'signal'), [], [files], 1e-4, 1e-4)
    sg &= signal_against_numpy(os.path.join(work, 'signal', '0', 'kiln_out'), {k: np.load(v) for k, v in files.items()})
    kiln_e2e.log('signal (6 DFTs, 2 STFTs): %s' % ('PASS' if sg else 'FAIL'))
    path = os.path.join(work, 'tfidf.onnx')
    onnx.save(tfidf(), path)
    files = {'x32': os.path.join(work, 'tf_x32.npy'), 'x64': os.path.join(work, 'tf_x64.npy')}
    np.save(files['x32'], rng.integers(1, 9, (3, 12)).astype(np.int32))
    np.save(files['x64'], rng.integers(1, 9, 20).astype(np.int64))
    tf = kiln_e2e.check_dynamic_against_ort(args, path, os.path.join(work, 'tfidf'), [], [files], 1e-6, 1e-6)
    # A hostile max_skip_count compiles at once (gaps past the row are not enumerated).
    m = tfidf()
    for a in m.graph.node[0].attribute:
        if a.name == 'max_skip_count':
            a.i = 10 ** 12
    path = os.path.join(work, 'tfidf_skip.onnx')
    onnx.save(m, path)
    proc = kiln_e2e.run_tool('kilnc', [args.kilnc, path, '-o', os.path.join(work, 'tfidf_skip.kiln')], timeout=60)
    tf &= proc.returncode == 0
    kiln_e2e.log('tfidf (TF, IDF, TFIDF; max_skip_count 1e12): %s' % ('PASS' if tf else 'FAIL'))
    path = os.path.join(work, 'pool_index.onnx')
    onnx.save(pool_index(), path)
    files = {}
    for name, shape in (('x', (2, 3, 9, 8)), ('x1', (2, 3, 11)), ('x3', (2, 3, 4, 6, 4)), ('x8', (2, 3, 8, 8))):
        files[name] = os.path.join(work, 'pi_%s.npy' % name)
        # Distinct values (no ties: ONNX leaves which tied index is reported to the runtime).
        np.save(files[name], rng.permutation(int(np.prod(shape))).reshape(shape).astype(np.float32))
    files['xt'] = os.path.join(work, 'pi_xt.npy')
    np.save(files['xt'], np.array([[[[0, 5], [5, 0]], [[7, 7], [7, 7]]]], np.float32))
    pi = kiln_e2e.check_dynamic_against_ort(args, path, os.path.join(work, 'pool_index'), [], [files], 1e-5, 1e-6)
    kiln_e2e.log('pool_index (6 MaxPools with Indices, a MaxUnpool): %s' % ('PASS' if pi else 'FAIL'))
    ra_bad = roi_align_hostile(args, work, files_ra['x'], os.path.join(work, 'roi_align', 'roi_align.kiln'))
    kiln_e2e.log('roi_align, hostile regions and batch indices: %s' % ('PASS' if ra_bad else 'FAIL'))
    return 0 if ok and one and ra and ra_bad and win and pi and sg and tf else 1


def roi_align_hostile(args, work: str, x: str, bundle: str) -> bool:
    """NaN, infinite and 1e30-sized regions and batch indices outside [0, N): the run ends quickly
    (adaptive grids are capped), every output is finite, and a bad batch index gives zeros."""
    rois = np.array([[np.nan, 0, 3, 3], [0, 0, 1e30, 1e30], [-1e30, -1e30, 1e30, 1e30], [0, 0, 4, 4],
                     [np.inf, 0, np.inf, 5], [0, 0, 2, 2]], np.float32)
    idx = np.array([0, 1, 0, 7, -3, 1], np.int64)
    files = {'rois': os.path.join(work, 'ra_bad_rois.npy'), 'idx': os.path.join(work, 'ra_bad_idx.npy')}
    np.save(files['rois'], rois)
    np.save(files['idx'], idx)
    out = kiln_e2e.fresh_dir(os.path.join(work, 'roi_align_hostile'))
    proc = kiln_e2e.run_tool('kiln run', [args.kiln, 'run', bundle, '--input', 'x=' + x, '--input', 'rois=' + files['rois'],
                                          '--input', 'idx=' + files['idx'], '--output-dir', out], timeout=60)
    if proc.returncode != 0:
        return False
    ok = True
    for name in sorted(os.listdir(out)):
        y = np.load(os.path.join(out, name))
        ok &= bool(np.isfinite(y).all()) and not y[3].any() and not y[4].any()
    return ok and len(os.listdir(out)) == 8


if __name__ == '__main__':
    kiln_e2e.run_script(main)
