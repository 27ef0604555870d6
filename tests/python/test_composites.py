"""Sequences and optionals at the model's boundary (docs/sequences.md):
compile(sequence_lengths=...) expands a sequence input into tensors, and
Model.composites says which inputs and outputs belong together; a sequence
fed element by element runs like any other inputs."""

from __future__ import annotations

import numpy as np
import pytest

import kiln
from helpers import onnx_graph_model


def sequence_model():
    """cat = ConcatFromSequence(xs); ys = xs with k appended; has = OptionalHasElement(o); oo = o."""
    from onnx import TensorProto, helper
    elem = helper.make_tensor_type_proto(TensorProto.FLOAT, [2])
    optional = helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, [3]))
    return onnx_graph_model(
        [helper.make_node("ConcatFromSequence", ["xs"], ["cat"], axis=0),
         helper.make_node("SequenceInsert", ["xs", "k"], ["ys"]),
         helper.make_node("OptionalHasElement", ["o"], ["has"]),
         helper.make_node("Identity", ["o"], ["oo"])],
        [helper.make_value_info("xs", helper.make_sequence_type_proto(elem)),
         helper.make_value_info("o", optional),
         helper.make_tensor_value_info("k", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("cat", TensorProto.FLOAT, [6]),
         helper.make_value_info("ys", helper.make_sequence_type_proto(elem)),
         helper.make_tensor_value_info("has", TensorProto.BOOL, []),
         helper.make_value_info("oo", optional)], opset=16)


def test_composites_name_the_tensors():
    bundle = kiln.compile(sequence_model(), sequence_lengths={"xs": 3})
    with kiln.Model.load(bundle) as model:
        by_name = {c.name: c for c in model.composites}
        assert set(by_name) == {"xs", "o", "ys", "oo"}
        xs, o, ys, oo = by_name["xs"], by_name["o"], by_name["ys"], by_name["oo"]
        assert (xs.kind, xs.is_output, xs.tensors, xs.presence) == ("sequence", False, ("xs[0]", "xs[1]", "xs[2]"), None)
        assert (o.kind, o.is_output, o.tensors, o.presence, o.holds_sequence) == \
            ("optional", False, ("o.value",), "o.present", False)
        assert ys.kind == "sequence" and ys.is_output and len(ys.tensors) == 4
        assert oo.kind == "optional" and oo.is_output and oo.presence in [t.name for t in model.outputs]
        names = {t.name for t in model.inputs}
        assert set(xs.tensors) | set(o.tensors) | {o.presence} <= names
        rng = np.random.default_rng(5)
        feeds = {name: rng.standard_normal(2).astype(np.float32) for name in xs.tensors}
        feeds.update({"k": np.ones(2, np.float32), "o.present": np.array(True), "o.value": np.arange(3, dtype=np.float32)})
        with model.session() as session:
            out = session.run(feeds)
        np.testing.assert_array_equal(out["cat"], np.concatenate([feeds[n] for n in xs.tensors]))
        np.testing.assert_array_equal(out[ys.tensors[-1]], feeds["k"])
        assert bool(out["has"]) and bool(out[oo.presence])


def test_no_composites():
    from onnx import TensorProto, helper
    model = onnx_graph_model([helper.make_node("Relu", ["x"], ["y"])],
                             [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                             [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    with kiln.Model.load(kiln.compile(model)) as m:
        assert m.composites == ()


@pytest.mark.parametrize("lengths", [{"xs": -1}, {"xs": 4097}, {"xs": True}, {3: 1}])
def test_bad_sequence_lengths(lengths):
    with pytest.raises((ValueError, TypeError)):
        kiln.compile(sequence_model(), sequence_lengths=lengths)


def test_missing_sequence_length_is_a_compile_error():
    with pytest.raises(kiln.CompileError, match="--sequence-length xs=N"):
        kiln.compile(sequence_model())
