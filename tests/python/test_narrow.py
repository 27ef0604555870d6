"""ONNX's narrow types (docs/python.md, Narrow types; decision 62): a Cast
float32 -> float8e4m3fn and int4 -> float32 model compiled in process. With
ml_dtypes importable the tensors are ml_dtypes' arrays, without it their
bytes (uint8; int8 for int4), in and out, with or without copy."""

from __future__ import annotations

import numpy as np
import pytest

import kiln

try:
    import ml_dtypes
except ImportError:
    ml_dtypes = None

FLOAT8E4M3FN, INT4 = 17, 22  # ONNX's codes (Debian's onnx 1.12 has no names for them)


@pytest.fixture(scope="module")
def bundle() -> bytes:
    """f8 = Cast(x: float32 [4]) to float8e4m3fn; y = Cast(q: int4 [4]) to float32 (opset 25)."""
    from onnx import TensorProto, helper
    graph = helper.make_graph(
        [helper.make_node("Cast", ["x"], ["f8"], to=FLOAT8E4M3FN), helper.make_node("Cast", ["q"], ["y"], to=TensorProto.FLOAT)],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4]), helper.make_tensor_value_info("q", INT4, [4])],
        [helper.make_tensor_value_info("f8", FLOAT8E4M3FN, [4]), helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 25)], producer_name="kiln-python-tests")
    model.ir_version = 11  # (not checked here: onnx 1.12's checker knows neither; kilnc's is)
    return kiln.compile(model.SerializeToString())


def test_infos(bundle):
    with kiln.Model.load(bundle) as model:
        x, q = model.inputs
        f8, y = model.outputs
        if ml_dtypes is None:
            assert (q.dtype, f8.dtype) == (np.dtype(np.int8), np.dtype(np.uint8))
        else:
            assert (q.dtype, f8.dtype) == (np.dtype(ml_dtypes.int4), np.dtype(ml_dtypes.float8_e4m3fn))
        assert q.nbytes == 4 and f8.nbytes == 4  # one byte an element


@pytest.mark.parametrize("copy", [False, True])
def test_run(bundle, copy):
    x = np.array([1.0, 0.3, -448.0, 1e6], np.float32)  # 0x38, 0x2A (0.3125), 0xFE, saturated 0x7E
    q = np.array([-8, -1, 0, 7], np.int8)  # the bytes (ml_dtypes keeps -1 as 0x0F: the low 4 bits count)
    with kiln.Model.load(bundle) as model, model.session() as session:
        out = session.run({"x": x, "q": q}, copy=copy)
        np.testing.assert_array_equal(out["f8"].view(np.uint8), [0x38, 0x2A, 0xFE, 0x7E])
        np.testing.assert_array_equal(out["y"], [-8, -1, 0, 7])
        if ml_dtypes is None:
            assert out["f8"].dtype == np.uint8
        else:
            assert out["f8"].dtype == np.dtype(ml_dtypes.float8_e4m3fn)
            np.testing.assert_array_equal(out["f8"].astype(np.float32), [1.0, 0.3125, -448.0, 448.0])
            out = session.run({"x": x, "q": q.astype(ml_dtypes.int4)}, copy=copy)  # ml_dtypes' own bytes
            np.testing.assert_array_equal(out["y"], [-8, -1, 0, 7])
