"""Helpers of the Python package's tests: the e2e models' inputs, ONNX Runtime's
outputs, comparisons, hand-built ONNX models."""

from __future__ import annotations

import os
import sys
from typing import Dict, List

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))

import models  # noqa: E402  (tests/e2e/models.py)


def model_input(name: str) -> np.ndarray:
    """The e2e tests' seeded input of model `name`."""
    return models.make_input(models.MODELS[name])


def ort_run(path: str, feeds: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
    """ONNX Runtime's outputs (CPU, default optimizations, one thread), by name."""
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, feeds)))


def assert_matches(got: Dict[str, np.ndarray], ref: Dict[str, np.ndarray], rtol: float, atol: float) -> None:
    """Every output equal within numpy.allclose(rtol, atol) (exactly for integers),
    with a reference large enough for atol to mean something."""
    assert sorted(got) == sorted(ref)
    for name, r in ref.items():
        g = got[name]
        assert g.shape == r.shape and g.dtype == r.dtype, (name, g.shape, g.dtype, r.shape, r.dtype)
        if not np.issubdtype(r.dtype, np.floating):
            np.testing.assert_array_equal(g, r, err_msg=name)
            continue
        assert float(np.abs(r).max()) >= 100 * atol, "output %r: reference too small to compare" % name
        np.testing.assert_allclose(g, r, rtol=rtol, atol=atol, err_msg=name)


def onnx_graph_model(nodes: List, inputs: List, outputs: List, initializers=(), opset: int = 13):
    """A checked ONNX model (opset 13 unless given) of hand-written nodes."""
    from onnx import checker, helper
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="kiln-python-tests")
    model.ir_version = 8
    checker.check_model(model)
    return model


def matmul_chain(n: int, layers: int, seed: int = 7):
    """x (n x n) through `layers` Tanh(MatMul(., W_i)): about 2 n^3 layers flops."""
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(seed)
    nodes, inits, prev = [], [], "x"
    for i in range(layers):
        w = (rng.standard_normal((n, n)) / np.sqrt(n)).astype(np.float32)
        inits.append(numpy_helper.from_array(w, "w%d" % i))
        nodes.append(helper.make_node("MatMul", [prev, "w%d" % i], ["m%d" % i]))
        nodes.append(helper.make_node("Tanh", ["m%d" % i], ["y" if i == layers - 1 else "t%d" % i]))
        prev = "t%d" % i
    return onnx_graph_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, n])],
                            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, n])], inits)
