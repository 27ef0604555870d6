"""FLOP counting for bench/run_bench.py: 2 x MACs of every Conv, ConvTranspose,
Gemm and MatMul of an ONNX model, per node (with each Conv's kernel size) and in
total, after folding the small shape computations that torch.onnx exports."""

from typing import Dict, List


def _attr(node, name, default=None):
    from onnx import helper
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def _prod(xs) -> int:
    p = 1
    for x in xs:
        p *= int(x)
    return p


def _static_shapes(model) -> Dict[str, List[int]]:
    """Names -> static shapes of the model's values (inputs, outputs, value_info after inference)."""
    shapes: Dict[str, List[int]] = {}
    g = model.graph
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        t = vi.type.tensor_type
        if t.HasField('shape'):
            dims = [d.dim_value if d.HasField('dim_value') else None for d in t.shape.dim]
            if all(d is not None for d in dims):
                shapes[vi.name] = dims
    for init in g.initializer:
        shapes[init.name] = list(init.dims)
    return shapes


def _eval_small(node, vals, shapes):
    """Evaluates one shape-computation node with numpy, or returns None."""
    import numpy as np
    from onnx import numpy_helper
    op = node.op_type
    if op == 'Constant':
        t = _attr(node, 'value')
        return numpy_helper.to_array(t) if t is not None else None
    if op == 'Shape':
        s = shapes.get(node.input[0])
        return None if s is None else np.array(s, dtype=np.int64)
    ins = [vals.get(i) if i else None for i in node.input]
    if any(x is None for x, name in zip(ins, node.input) if name):
        return None
    if op == 'Gather':
        return np.take(ins[0], ins[1], axis=_attr(node, 'axis', 0))
    if op == 'Unsqueeze':
        axes = ins[1] if len(ins) > 1 else _attr(node, 'axes')
        out = ins[0]
        for a in sorted(int(a) % (out.ndim + len(axes)) for a in axes):
            out = np.expand_dims(out, a)
        return out
    if op == 'Squeeze':
        axes = ins[1] if len(ins) > 1 and ins[1] is not None else _attr(node, 'axes')
        return np.squeeze(ins[0], axis=tuple(int(a) for a in axes) if axes is not None else None)
    if op == 'Concat':
        return np.concatenate([np.atleast_1d(x) for x in ins], axis=_attr(node, 'axis', 0))
    if op in ('Add', 'Sub', 'Mul'):
        return {'Add': np.add, 'Sub': np.subtract, 'Mul': np.multiply}[op](ins[0], ins[1])
    if op == 'Div':
        a, b = ins
        if np.issubdtype(a.dtype, np.integer):
            return (np.abs(a) // np.abs(b)) * np.sign(a) * np.sign(b)
        return a / b
    if op == 'Cast':
        from onnx import mapping
        return ins[0].astype(mapping.TENSOR_TYPE_TO_NP_TYPE[_attr(node, 'to')])
    if op == 'Slice':
        data, starts, ends = ins[0], ins[1], ins[2]
        axes = ins[3] if len(ins) > 3 and node.input[3] else range(len(starts))
        steps = ins[4] if len(ins) > 4 and node.input[4] else [1] * len(starts)
        sl = [slice(None)] * data.ndim
        for s, e, a, st in zip(starts, ends, axes, steps):
            sl[int(a)] = slice(int(s), int(e), int(st))
        return data[tuple(sl)]
    return None


def _fold_shape_computations(model):
    """Makes shapes static where the exporter computed them at run time (e.g. ShuffleNet's
    channel split: Shape -> Gather -> Div -> Slice): repeatedly infers shapes, evaluates
    small constant subgraphs with numpy and turns their results into initializers."""
    import onnx
    from onnx import numpy_helper
    for _ in range(20):
        model = onnx.shape_inference.infer_shapes(model)
        shapes = _static_shapes(model)
        g = model.graph
        vals = {i.name: numpy_helper.to_array(i) for i in g.initializer if _prod(i.dims) <= 4096}
        folded = []
        for n in g.node:
            if len(n.output) != 1 or n.op_type not in ('Constant', 'Shape', 'Gather', 'Unsqueeze', 'Squeeze',
                                                         'Concat', 'Add', 'Sub', 'Mul', 'Div', 'Cast', 'Slice'):
                continue
            try:
                v = _eval_small(n, vals, shapes)
            except Exception:  # noqa: BLE001 - leave the node alone
                v = None
            if v is not None and v.size <= 4096:
                vals[n.output[0]] = v
                folded.append((n, v))
        if not folded:
            return model
        for n, v in folded:
            g.node.remove(n)
            g.initializer.append(numpy_helper.from_array(v, n.output[0]))
        del g.value_info[:]
    return onnx.shape_inference.infer_shapes(model)


def count_flops(onnx_path: str) -> Dict[str, object]:
    """2 x MACs of every Conv, ConvTranspose, Gemm and MatMul; per node name and in total."""
    import onnx
    model = onnx.load(onnx_path)
    model = _fold_shape_computations(model)
    g = model.graph
    shapes = _static_shapes(model)

    per_node: Dict[str, int] = {}
    conv_kind: Dict[str, str] = {}  # e.g. '3x3', '1x1', '3x3 depthwise'
    unknown: List[str] = []
    ops: Dict[str, int] = {}
    for i, n in enumerate(g.node):
        if n.op_type not in ('Conv', 'ConvTranspose', 'Gemm', 'MatMul'):
            continue
        name = n.name or '%s_%d' % (n.op_type, i)
        try:
            if n.op_type == 'Conv':
                w, y = shapes[n.input[1]], shapes[n.output[0]]
                macs = y[0] * y[1] * _prod(y[2:]) * _prod(w[1:])            # N*M*OHW * (C/g)*KHW
                group = _attr(n, 'group', 1)
                conv_kind[name] = 'x'.join(str(d) for d in w[2:]) + (' depthwise' if group > 1 and w[1] == 1 else
                                                                      ' grouped' if group > 1 else '')
            elif n.op_type == 'ConvTranspose':
                x, w = shapes[n.input[0]], shapes[n.input[1]]
                macs = x[0] * x[1] * _prod(x[2:]) * _prod(w[1:])            # N*C*IHW * (M/g)*KHW
            elif n.op_type == 'Gemm':
                a, y = shapes[n.input[0]], shapes[n.output[0]]
                k = a[0] if _attr(n, 'transA', 0) else a[1]
                macs = _prod(y) * k
            else:  # MatMul
                a, y = shapes[n.input[0]], shapes[n.output[0]]
                macs = _prod(y) * a[-1]
        except (KeyError, IndexError):
            unknown.append(name)
            continue
        per_node[name] = 2 * macs
        ops[n.op_type] = ops.get(n.op_type, 0) + 2 * macs
    return {'total': sum(per_node.values()), 'per_node': per_node, 'conv_kind': conv_kind, 'by_op': ops,
            'unknown_nodes': unknown}

