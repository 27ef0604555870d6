"""Memory rules of Session.run (docs/python.md): inputs reach
kiln_session_set_input without a copy when their dtype and layout allow
(buffer protocol, DLPack), otherwise numpy converts them (counted); outputs
are read-only views of the session's arena that keep it alive, overwritten by
the next run; copy=True gives arrays of their own."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import kiln
from helpers import onnx_graph_model


@pytest.fixture()
def demo(demo_bundle):
    with kiln.Model.load(demo_bundle) as model, model.session() as session:
        yield session


def run_counting(session, value):
    """(outputs, direct inputs, converted inputs) of one run."""
    before = kiln._stats()
    out = session.run({"input": value})
    after = kiln._stats()
    return (out, after["inputs_direct"] - before["inputs_direct"],
            after["input_copies"] - before["input_copies"])


def interleaved(x):
    """x's values at the even columns of an array twice as wide (odd ones: junk)."""
    wide = np.full(x.shape[:-1] + (2 * x.shape[-1],), -7.0, x.dtype)
    wide[..., ::2] = x
    return wide


# --- inputs -------------------------------------------------------------------

def test_numpy_input_goes_straight_to_the_runtime(demo, demo_input):
    x = np.ascontiguousarray(demo_input)
    out, direct, copies = run_counting(demo, x)
    assert (direct, copies) == (1, 0)
    assert demo._last_input_addresses == (x.ctypes.data,)
    assert int(np.argmax(out["logits"])) == 2  # triangle


def test_read_only_array_and_memoryview_are_not_copied(demo, demo_input):
    x = demo_input.copy()
    x.setflags(write=False)
    _, direct, copies = run_counting(demo, x)
    assert (direct, copies) == (1, 0) and demo._last_input_addresses == (x.ctypes.data,)
    _, direct, copies = run_counting(demo, memoryview(x))
    assert (direct, copies) == (1, 0) and demo._last_input_addresses == (x.ctypes.data,)


def test_torch_tensor_is_read_through_dlpack(demo, demo_input):
    torch = pytest.importorskip("torch")
    reference = demo.run({"input": demo_input}, copy=True)["logits"]
    t = torch.from_numpy(demo_input.copy())
    out, direct, copies = run_counting(demo, t)
    assert (direct, copies) == (1, 0)
    assert demo._last_input_addresses == (t.data_ptr(),)
    np.testing.assert_array_equal(out["logits"], reference)
    # A tensor torch allocated itself (no numpy behind it).
    fresh = torch.randn(1, 3, 64, 64)
    _, direct, copies = run_counting(demo, fresh)
    assert (direct, copies) == (1, 0) and demo._last_input_addresses == (fresh.data_ptr(),)


@pytest.mark.parametrize("make", [
    lambda x: np.asfortranarray(x),                                   # another layout
    lambda x: interleaved(x)[:, :, :, ::2],                           # a strided view
    lambda x: x.astype(np.float64),                                   # another dtype (same_kind)
    lambda x: x.astype(">f4"),                                        # another byte order
    lambda x: x.tolist(),                                             # no buffer at all
], ids=["fortran", "strided", "float64", "big-endian", "list"])
def test_other_layouts_and_dtypes_are_converted_and_counted(demo, demo_input, make):
    reference = demo.run({"input": demo_input}, copy=True)["logits"]
    value = make(demo_input)
    out, direct, copies = run_counting(demo, value)
    assert (direct, copies) == (0, 1)
    if isinstance(value, np.ndarray):
        assert demo._last_input_addresses != (value.ctypes.data,)
    np.testing.assert_allclose(out["logits"], reference, rtol=1e-6, atol=1e-6)


def test_non_contiguous_torch_tensor_is_converted(demo, demo_input):
    torch = pytest.importorskip("torch")
    reference = demo.run({"input": demo_input}, copy=True)["logits"]
    wide = torch.from_numpy(interleaved(demo_input))
    view = wide[:, :, :, ::2]
    assert not view.is_contiguous()
    out, direct, copies = run_counting(demo, view)
    assert (direct, copies) == (0, 1)
    np.testing.assert_array_equal(out["logits"], reference)
    with pytest.raises(TypeError, match="requires grad"):
        demo.run({"input": torch.zeros(1, 3, 64, 64, requires_grad=True)})


def test_integer_bool_and_float16_inputs():
    """Other element types: direct when they match, same_kind conversions,
    kiln.Error for the rest; outputs of those types."""
    from onnx import TensorProto, helper, numpy_helper
    model = onnx_graph_model(
        [helper.make_node("Add", ["i", "k"], ["i_plus"]),
         helper.make_node("Not", ["b"], ["not_b"]),
         helper.make_node("Cast", ["h"], ["h32"], to=TensorProto.FLOAT)],
        [helper.make_tensor_value_info("i", TensorProto.INT64, [2, 3]),
         helper.make_tensor_value_info("b", TensorProto.BOOL, [5]),
         helper.make_tensor_value_info("h", TensorProto.FLOAT16, [4])],
        [helper.make_tensor_value_info("i_plus", TensorProto.INT64, [2, 3]),
         helper.make_tensor_value_info("not_b", TensorProto.BOOL, [5]),
         helper.make_tensor_value_info("h32", TensorProto.FLOAT, [4])],
        [numpy_helper.from_array(np.array([1, 2, 3], np.int64) * (1 << 40), "k")])
    with kiln.Model.load(kiln.compile(model)) as m, m.session() as s:
        assert [(t.name, t.dtype) for t in m.inputs] == [("i", np.int64), ("b", np.bool_), ("h", np.float16)]
        i = np.arange(6, dtype=np.int64).reshape(2, 3) - 3
        b = np.array([True, False, True, True, False])
        h = np.array([0.5, -2.25, 1024, 65504], np.float16)
        before = kiln._stats()
        out = s.run({"i": i, "b": b, "h": h})
        assert kiln._stats()["input_copies"] == before["input_copies"]
        np.testing.assert_array_equal(out["i_plus"], i + np.array([1, 2, 3]) * (1 << 40))
        np.testing.assert_array_equal(out["not_b"], ~b)
        np.testing.assert_array_equal(out["h32"], h.astype(np.float32))
        assert out["i_plus"].dtype == np.int64 and out["not_b"].dtype == np.bool_
        # int32 -> int64 is a same_kind cast: converted.
        out = s.run({"i": i.astype(np.int32), "b": b, "h": h})
        assert kiln._stats()["input_copies"] == before["input_copies"] + 1
        np.testing.assert_array_equal(out["i_plus"], i + np.array([1, 2, 3]) * (1 << 40))
        # float -> int is not.
        with pytest.raises(kiln.Error, match="input 'i' is int64; float64") as e:
            s.run({"i": i.astype(np.float64), "b": b, "h": h})
        assert e.value.code == "INVALID_ARGUMENT"


# --- outputs ------------------------------------------------------------------

def test_outputs_are_read_only_views_overwritten_by_the_next_run(demo, demo_input):
    first = demo.run({"input": demo_input})["logits"]
    kept = first.copy()
    assert not first.flags.writeable
    with pytest.raises(ValueError):
        first[0, 0] = 1.0
    other = np.flip(demo_input, axis=3).copy()
    second = demo.run({"input": other})["logits"]
    # The same memory: the session's arena, now holding the second run's results.
    assert second.ctypes.data == first.ctypes.data and np.shares_memory(first, second)
    assert not np.array_equal(second, kept)
    np.testing.assert_array_equal(first, second)


def test_copy_true_gives_arrays_of_their_own(demo, demo_input):
    view = demo.run({"input": demo_input})["logits"]
    own = demo.run({"input": demo_input}, copy=True)["logits"]
    assert own.flags.writeable and own.flags.c_contiguous and own.flags.owndata
    assert not np.shares_memory(own, view)
    np.testing.assert_array_equal(own, view)
    kept = own.copy()
    demo.run({"input": np.flip(demo_input, axis=2).copy()})
    np.testing.assert_array_equal(own, kept)
    own[0, 0] = 42.0  # writable


def test_outputs_keep_the_session_alive(demo_bundle, demo_input):
    model = kiln.Model.load(demo_bundle)
    session = model.session()
    out = session.run({"input": demo_input})["logits"]
    expected = out.copy()
    session.close()
    model.close()
    assert session.closed and model.closed
    with pytest.raises(ValueError, match="closed"):
        session.run({"input": demo_input})
    with pytest.raises(ValueError, match="closed"):
        model.session()
    del session, model
    gc.collect()
    # Still the session's memory, still mapped: the view holds the session.
    filler = [np.full(1 << 16, 7.0) for _ in range(64)]
    np.testing.assert_array_equal(out, expected)
    del filler


def test_sessions_do_not_share_output_memory(demo_bundle, demo_input):
    with kiln.Model.load(demo_bundle) as model, model.session() as a, model.session() as b:
        out_a = a.run({"input": demo_input})["logits"]
        out_b = b.run({"input": np.zeros_like(demo_input)})["logits"]
        assert not np.shares_memory(out_a, out_b)
        assert not np.array_equal(out_a, out_b)


def test_session_outlives_a_closed_model(demo_bundle, demo_input):
    with kiln.Model.load(demo_bundle) as model:
        session = model.session(threads=2)
    assert model.closed
    del model
    gc.collect()
    with session:
        assert int(np.argmax(session.run({"input": demo_input})["logits"])) == 2
