"""String tensors (docs/python.md, Strings): numpy str arrays (and bytes
arrays, lists of str, object arrays) in, numpy str arrays out, through an
Identity model compiled in process; capacity (compile(string_bytes=N)),
shape and dtype errors as kiln.Error."""

from __future__ import annotations

import numpy as np
import pytest

import kiln
from helpers import onnx_graph_model


@pytest.fixture(scope="module")
def identity_bundle() -> bytes:
    """y = Identity(x), x and y strings [2, 3], 4 bytes of strings per element (24 in all)."""
    from onnx import TensorProto, helper
    model = onnx_graph_model([helper.make_node("Identity", ["x"], ["y"])],
                             [helper.make_tensor_value_info("x", TensorProto.STRING, [2, 3])],
                             [helper.make_tensor_value_info("y", TensorProto.STRING, [2, 3])])
    return kiln.compile(model, string_bytes=4)


def test_infos(identity_bundle):
    with kiln.Model.load(identity_bundle) as model:
        (x,), (y,) = model.inputs, model.outputs
        assert x.dtype.kind == "U" and y.dtype.kind == "U"
        assert x.string_bytes == 24 and y.string_bytes == 24
        assert x.nbytes == 4 * 7 + 24  # the largest table: 7 offsets, then the strings


@pytest.mark.parametrize("copy", [False, True])
def test_round_trip(identity_bundle, copy):
    x = np.array([["", "kiln", "été"], ["中", "\U0001f600", "a\x00b"]])  # 0 to 5 UTF-8 bytes each, 19 in all
    with kiln.Model.load(identity_bundle) as model, model.session() as session:
        for _ in range(2):  # every run sets the inputs again
            y = session.run({"x": x}, copy=copy)["y"]
            assert y.dtype == np.dtype("<U4") and y.shape == (2, 3)
            np.testing.assert_array_equal(y, x)
            assert y.flags.writeable  # an array of its own, copy or not


@pytest.mark.parametrize("value", [
    [["a", "b", "c"], ["d", "e", "f"]],
    np.array([["a", "b", "c"], ["d", "e", "f"]], dtype=object),
    np.array([[b"a", b"b", b"c"], [b"d", b"e", b"f"]]),
    np.array([["a", "b", "c"], ["d", "e", "f"]], dtype=">U1"),
], ids=["list", "object", "bytes", "big-endian"])
def test_other_string_inputs(identity_bundle, value):
    with kiln.Model.load(identity_bundle) as model, model.session() as session:
        np.testing.assert_array_equal(session.run({"x": value})["y"], [["a", "b", "c"], ["d", "e", "f"]])


def test_invalid_utf8_reads_as_replacement(identity_bundle):
    with kiln.Model.load(identity_bundle) as model, model.session() as session:
        y = session.run({"x": np.array([[b"\xff", b"ok", b""], [b"\xe2\x82", b"\xe2\x82\xac", b"z"]])})["y"]
        assert y.tolist() == [["\ufffd", "ok", ""], ["\ufffd", "\u20ac", "z"]]


@pytest.mark.parametrize("value, words", [
    (np.zeros((2, 3), np.float32), "takes strings"),
    (np.array([1, "a", None, "b", "c", "d"], dtype=object).reshape(2, 3), "takes strings"),
    (np.array([["a", "b"], ["c", "d"]]), "has shape (2, 2)"),
    (np.array([["a" * 20, "b", "c"], ["d", "e", "f"]]), "holds 25 bytes, more than the 24"),
    ([["\ud800", "b", "c"], ["d", "e", "f"]], "not valid Unicode"),
], ids=["float", "mixed", "shape", "capacity", "surrogate"])
def test_bad_string_inputs(identity_bundle, value, words):
    with kiln.Model.load(identity_bundle) as model, model.session() as session:
        with pytest.raises(kiln.Error) as e:
            session.run({"x": value})
        assert e.value.code == "INVALID_ARGUMENT" and words in e.value.message, e.value.message


def test_string_bytes_option():
    with pytest.raises(ValueError):
        kiln.compile(b"", string_bytes=0)
