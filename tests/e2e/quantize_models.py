#!/usr/bin/env python3
"""Quantized models of Kiln's int8 end-to-end tests, made by ONNX Runtime's own quantizer.

Runs in the int8 venv (tests/e2e/requirements-int8.txt: onnxruntime 1.30.0 and
the onnx its quantizer needs), not with Debian's python3; kiln_e2e.py's `int8`
command makes the venv and calls this script.

  quantize_models.py quantize --model FLOAT.onnx --variant VARIANT --out Q.onnx
                              [--seed S] [--calibration-inputs N]
      Quantizes a float model exported by models.py (one float32 input with a
      static shape) with onnxruntime.quantization, after ORT's quant_pre_process
      (ONNX shape inference and ORT's basic graph optimizations; the symbolic
      shape inference is skipped: every shape is static). Variants:
        qdq_pc  quantize_static, QuantFormat.QDQ, per-channel weights
        qdq_pt  the same with per-tensor weights
        qop_pc  quantize_static, QuantFormat.QOperator, per-channel weights
                (QLinearConv, QLinearMatMul, com.microsoft QLinearAdd, ...)
        dyn     quantize_dynamic of the MatMuls (DynamicQuantizeLinear +
                MatMulInteger)
      Static variants: activations QUInt8 (asymmetric), weights QInt8
      (symmetric), MinMax calibration on N (default 8) standard-normal inputs
      from numpy.random.default_rng(S). Writes Q.onnx and Q.json: the variant,
      the operator counts, and for every output where its quantization step
      comes from (see output_steps()). Fails when the quantized graph lacks what
      the variant must produce (e.g. no per-channel weight scale in qdq_pc).
  quantize_models.py reference --model M.onnx --out-dir DIR (--input NAME=FILE.npy ... | --random N --seed S)
                               [--no-optimization]
      Runs M with ONNX Runtime's Python package (CPU execution provider, default
      graph optimizations, one intra-op thread; --no-optimization: none, so the
      QDQ graph runs as written, in float) and writes every output as
      DIR/<name>.npy ('/' -> '_', as `kiln run`). With --random, runs N inputs
      random_input(shape, S, i) and writes each output stacked, with a leading
      axis of N.

Everything is seeded: the same float model and seed give the same quantized
model, byte for byte.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from typing import Dict, List, Optional, Sequence

sys.dont_write_bytecode = True

import numpy as np  # noqa: E402

VARIANTS = ('qdq_pc', 'qdq_pt', 'qop_pc', 'dyn')
CALIBRATION_SEED = 2024
CALIBRATION_INPUTS = 8

# Operators that move or reshape values without changing them: an output
# behind them and a DequantizeLinear still lies on that DequantizeLinear's grid.
PASS_THROUGH_OPS = frozenset({'Reshape', 'Flatten', 'Transpose', 'Squeeze', 'Unsqueeze', 'Identity'})

# The input holding the output scale of ops that produce a quantized tensor,
# as {(domain, op_type): input index}.
OUTPUT_SCALE_INPUT = {(domain, op): index for domain, ops in (
    ('', {'QuantizeLinear': 1, 'QLinearConv': 6, 'QLinearMatMul': 6}),
    ('com.microsoft', {'QLinearAdd': 6, 'QLinearMul': 6, 'QLinearGlobalAveragePool': 3, 'QLinearAveragePool': 3,
                       'QLinearConcat': 0, 'QLinearSigmoid': 3, 'QLinearLeakyRelu': 3, 'QLinearSoftmax': 3,
                       'QGemm': 6}),
) for op, index in ops.items()}


def log(msg: str = '') -> None:
    print(msg, flush=True)


def sanitize(name: str) -> str:
    return name.replace('/', '_')


def random_input(shape: Sequence[int], seed: int, index: int) -> np.ndarray:
    """Input `index` of a seeded series (the same in every process and numpy version: PCG64)."""
    return np.random.default_rng([seed, index]).standard_normal(tuple(shape)).astype(np.float32)


def input_shape(model) -> List[int]:
    """The static shape of the model's only input."""
    inits = {i.name for i in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in inits]
    if len(inputs) != 1:
        raise SystemExit('quantize_models.py: expected one model input, got %s' % [i.name for i in inputs])
    dims = inputs[0].type.tensor_type.shape.dim
    if not dims or any(not d.HasField('dim_value') for d in dims):
        raise SystemExit('quantize_models.py: input %s has no static shape' % inputs[0].name)
    return [d.dim_value for d in dims]


class SeededReader:
    """onnxruntime.quantization's CalibrationDataReader over N seeded standard-normal inputs."""

    def __init__(self, name: str, shape: Sequence[int], seed: int, count: int):
        rng = np.random.default_rng(seed)
        self._data = [{name: rng.standard_normal(tuple(shape)).astype(np.float32)} for _ in range(count)]
        self._it = iter(self._data)

    def get_next(self):
        return next(self._it, None)

    def rewind(self):
        self._it = iter(self._data)


def _reader_class():
    from onnxruntime.quantization import CalibrationDataReader

    class Reader(SeededReader, CalibrationDataReader):
        pass
    return Reader


def quantize(float_path: str, variant: str, out_path: str, seed: int, count: int) -> None:
    import onnx
    from onnxruntime.quantization import (CalibrationMethod, QuantFormat, QuantType, quantize_dynamic,
                                          quantize_static)
    from onnxruntime.quantization.shape_inference import quant_pre_process

    model = onnx.load(float_path)
    shape = input_shape(model)
    name = [i.name for i in model.graph.input if i.name not in {x.name for x in model.graph.initializer}][0]
    with tempfile.TemporaryDirectory(prefix='kiln-quant-') as tmp:
        src = os.path.join(tmp, 'float.onnx')
        inlined = inline_identity_initializers(model)
        onnx.save(model, src)
        pre = os.path.join(tmp, 'pre.onnx')
        # ORT's recommended pre-processing: shape inference and its basic graph
        # optimizations (Conv+BatchNorm folding, constant folding, ...).
        quant_pre_process(src, pre, skip_optimization=False, skip_onnx_shape=False,
                          skip_symbolic_shape=True)
        if variant == 'dyn':
            quantize_dynamic(pre, out_path, op_types_to_quantize=['MatMul'], per_channel=False,
                             weight_type=QuantType.QInt8)
        else:
            fmt = QuantFormat.QOperator if variant == 'qop_pc' else QuantFormat.QDQ
            reader = _reader_class()(name, shape, seed, count)
            quantize_static(pre, out_path, reader, quant_format=fmt, per_channel=(variant != 'qdq_pt'),
                            activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                            calibrate_method=CalibrationMethod.MinMax,
                            extra_options={'ActivationSymmetric': False, 'WeightSymmetric': True})
    qmodel = onnx.load(out_path)
    info = {
        'variant': variant, 'float_model': os.path.basename(float_path), 'calibration_seed': seed,
        'calibration_inputs': count, 'input': name, 'input_shape': shape, 'inlined_identities': inlined,
        'opsets': {o.domain or 'ai.onnx': o.version for o in qmodel.opset_import},
        'ops': op_counts(qmodel), 'outputs': output_steps(qmodel),
    }
    problems = check_variant(qmodel, variant)
    with open(os.path.splitext(out_path)[0] + '.json', 'w') as f:
        json.dump(info, f, indent=1, sort_keys=True)
    log('quantized %s -> %s (%s, %d bytes): opsets %s; %s'
        % (float_path, out_path, variant, os.path.getsize(out_path), info['opsets'],
           ', '.join('%s x%d' % kv for kv in sorted(info['ops'].items()))))
    for o in info['outputs']:
        log("output '%s': %s" % (o['name'], o['how']))
    for p in problems:
        log('quantized graph: FAIL: ' + p)
    if problems:
        raise SystemExit(1)


def inline_identity_initializers(model) -> int:
    """Replaces each Identity of an initializer by a copy of the initializer.

    torch.onnx de-duplicates equal initializers (e.g. the all-zero conv biases
    of an untrained torchvision model) and reads the copies through Identity
    nodes, which ORT's pre-processing keeps; the quantizer then leaves such a
    bias in float ("Expected bias ... to be an initializer") and ORT runs that
    Conv in float. Returns the number of Identity nodes replaced.
    """
    inits = {i.name: i for i in model.graph.initializer}
    outputs = {o.name for o in model.graph.output}
    done = [n for n in model.graph.node
            if n.op_type == 'Identity' and n.input[0] in inits and n.output[0] not in outputs]
    for n in done:
        copy = model.graph.initializer.add()
        copy.CopyFrom(inits[n.input[0]])
        copy.name = n.output[0]
        model.graph.node.remove(n)
    return len(done)


def op_counts(model) -> Dict[str, int]:
    counts: Dict[str, int] = {}
    for n in model.graph.node:
        key = n.op_type if n.domain in ('', 'ai.onnx') else '%s.%s' % (n.domain, n.op_type)
        counts[key] = counts.get(key, 0) + 1
    return counts


def _constants(model) -> Dict[str, np.ndarray]:
    from onnx import numpy_helper
    consts = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    for n in model.graph.node:
        if n.op_type == 'Constant':
            for a in n.attribute:
                if a.name == 'value':
                    consts[n.output[0]] = numpy_helper.to_array(a.t)
    return consts


def output_steps(model) -> List[dict]:
    """For each graph output, the size of one quantization step, from the graph.

    From the output back through ops that only move values (PASS_THROUGH_OPS):
      * a DequantizeLinear: its x_scale (a scalar, or per `axis`);
      * an op producing a quantized (uint8/int8) tensor (QuantizeLinear,
        QLinearConv, QLinearMatMul, com.microsoft QLinear*): the output is
        compared in integer units, its step is 1 (the scale is recorded);
      * anything else (a float op after the last DequantizeLinear, e.g. the
        transformer's Softmax, or a dynamically quantized model): 'float', and
        the test falls back to the step of an 8-bit per-tensor quantization of
        the reference output's range, (max - min) / 255.
    """
    from onnx import helper
    consts = _constants(model)
    producer = {o: n for n in model.graph.node for o in n.output}
    result = []
    for out in model.graph.output:
        name, via = out.name, []
        node = producer.get(name)
        while node is not None and node.op_type in PASS_THROUGH_OPS and node.domain in ('', 'ai.onnx'):
            via.append(node.op_type)
            node = producer.get(node.input[0])
        entry = {'name': out.name, 'via': via}
        key = (node.domain if node is not None and node.domain != 'ai.onnx' else '', node.op_type if node else '')
        if node is not None and key == ('', 'DequantizeLinear') and node.input[1] in consts:
            scale = np.asarray(consts[node.input[1]], dtype=np.float64)
            attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
            entry.update(kind='dq', scale=scale.reshape(-1).tolist(), scale_shape=list(scale.shape),
                         axis=int(attrs.get('axis', 1)), node=node.name,
                         how='DequantizeLinear %r scale %s%s' % (node.name, _fmt_scale(scale),
                                                                (' (through %s)' % ', '.join(via)) if via else ''))
        elif node is not None and key in OUTPUT_SCALE_INPUT and len(node.input) > OUTPUT_SCALE_INPUT[key] \
                and node.input[OUTPUT_SCALE_INPUT[key]] in consts:
            scale = np.asarray(consts[node.input[OUTPUT_SCALE_INPUT[key]]], dtype=np.float64)
            entry.update(kind='quantized', scale=scale.reshape(-1).tolist(), node=node.name,
                         how='quantized output of %s %r (scale %s): compared in integer steps'
                             % (node.op_type, node.name, _fmt_scale(scale)))
        else:
            entry.update(kind='float', node=node.name if node is not None else '',
                         how='float output of %s %r, not behind a DequantizeLinear: step = reference range / 255'
                             % (node.op_type if node is not None else 'a graph input', node.name if node else name))
        result.append(entry)
    return result


def _fmt_scale(scale: np.ndarray) -> str:
    flat = scale.reshape(-1)
    if flat.size == 1:
        return '%.6g' % flat[0]
    return '[%d values, %.3g..%.3g]' % (flat.size, flat.min(), flat.max())


def check_variant(model, variant: str) -> List[str]:
    """What the quantizer must have produced for each variant (so that a test
    cannot silently stop covering int8 when the quantizer changes)."""
    consts = _constants(model)
    ops = op_counts(model)
    producer = {o: n for n in model.graph.node for o in n.output}
    problems = []

    def need(*names):
        for n in names:
            if n not in ops:
                problems.append('%s: no %s node (has %s)' % (variant, n, sorted(ops)))

    if variant in ('qdq_pc', 'qdq_pt'):
        need('QuantizeLinear', 'DequantizeLinear')
        weight_scales = []
        for n in model.graph.node:
            if n.op_type not in ('Conv', 'Gemm', 'MatMul'):
                continue
            w = producer.get(n.input[1])
            if w is None or w.op_type != 'DequantizeLinear':
                if n.input[1] in consts:
                    problems.append('%s: %s %r has a float weight (not behind a DequantizeLinear)'
                                    % (variant, n.op_type, n.name))
                continue
            if w.input[0] in consts:
                weight_scales.append(np.asarray(consts[w.input[1]]).size)
            if n.op_type == 'Conv' and len(n.input) > 2 and n.input[2]:
                bias = producer.get(n.input[2])
                if bias is None or bias.op_type != 'DequantizeLinear':
                    problems.append('%s: Conv %r has a float bias (ORT would run it in float)' % (variant, n.name))
        if not weight_scales:
            problems.append('%s: no quantized weight' % variant)
        elif variant == 'qdq_pc' and max(weight_scales) == 1:
            problems.append('qdq_pc: no per-channel weight scale (all %d are scalars)' % len(weight_scales))
        elif variant == 'qdq_pt' and max(weight_scales) != 1:
            problems.append('qdq_pt: a per-channel weight scale (sizes %s)' % sorted(set(weight_scales)))
    elif variant == 'qop_pc':
        if 'QLinearConv' not in ops and 'QLinearMatMul' not in ops:
            problems.append('qop_pc: neither QLinearConv nor QLinearMatMul (has %s)' % sorted(ops))
    elif variant == 'dyn':
        need('DynamicQuantizeLinear', 'MatMulInteger')
    return problems


def run_reference(model_path: str, out_dir: str, inputs: Dict[str, str], random: Optional[int], seed: int,
                  optimize: bool = True) -> None:
    import onnxruntime as ort
    opts = ort.SessionOptions()
    if not optimize:
        # The graph as written: QuantizeLinear/DequantizeLinear around float
        # kernels instead of ORT's fused integer kernels.
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    # Exact integer products on every x86-64 host: without VNNI, ONNX Runtime's
    # u8s8 kernels sum pairs of products in saturating int16 (vpmaddubsw), and
    # its int8 results drift several quantization steps from the model's
    # (46% within one step on resnet18 on an AVX2-only EPYC). This option makes
    # it use u8u8 products there (its Avx2WeightS8ToU8 transformer); with VNNI,
    # or on Arm, it changes nothing (decision 64).
    opts.add_session_config_entry('session.x64quantprecision', '1')
    sess = ort.InferenceSession(model_path, opts, providers=['CPUExecutionProvider'])
    names = [o.name for o in sess.get_outputs()]
    os.makedirs(out_dir, exist_ok=True)
    if random is None:
        feeds = {k: np.load(v, allow_pickle=False) for k, v in inputs.items()}
        outs = sess.run(names, feeds)
    else:
        (inp,) = sess.get_inputs()
        per_run = [sess.run(names, {inp.name: random_input(inp.shape, seed, i)}) for i in range(random)]
        outs = [np.stack([r[k] for r in per_run]) for k in range(len(names))]
    for name, arr in zip(names, outs):
        np.save(os.path.join(out_dir, sanitize(name) + '.npy'), arr)
    shapes = ', '.join('%s %s %s' % (n, a.dtype, list(a.shape)) for n, a in zip(names, outs))
    log('onnxruntime %s (python, CPU EP%s): %s -> %s: %s'
        % (ort.__version__, '' if optimize else ', graph optimizations off', model_path, out_dir, shapes))


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = parser.add_subparsers(dest='command', required=True)
    p = sub.add_parser('quantize', help='quantize a float model with onnxruntime.quantization')
    p.add_argument('--model', required=True)
    p.add_argument('--variant', required=True, choices=VARIANTS)
    p.add_argument('--out', required=True)
    p.add_argument('--seed', type=int, default=CALIBRATION_SEED, help='calibration data seed')
    p.add_argument('--calibration-inputs', type=int, default=CALIBRATION_INPUTS)
    p = sub.add_parser('reference', help='run a model with ONNX Runtime (Python)')
    p.add_argument('--model', required=True)
    p.add_argument('--out-dir', required=True)
    p.add_argument('--input', action='append', default=[], metavar='NAME=FILE.npy')
    p.add_argument('--random', type=int, help='run N seeded random inputs; outputs stacked')
    p.add_argument('--seed', type=int, default=0)
    p.add_argument('--no-optimization', action='store_true',
                   help='ORT_DISABLE_ALL: run the graph as written (no fused integer kernels)')
    args = parser.parse_args(argv)

    if args.command == 'quantize':
        quantize(args.model, args.variant, args.out, args.seed, args.calibration_inputs)
        return 0
    inputs = {}
    for spec in args.input:
        name, sep, path = spec.partition('=')
        if not sep:
            parser.error('bad --input %r (expected NAME=FILE.npy)' % spec)
        inputs[name] = path
    if (args.random is None) == (not inputs):
        parser.error('reference needs either --input or --random')
    run_reference(args.model, args.out_dir, inputs, args.random, args.seed, not args.no_optimization)
    return 0


if __name__ == '__main__':
    sys.exit(main())
