"""kiln.compile's options (kilnc's flags): output, input_shapes,
freeze_inputs, kernels="static", max_arena, external data, the Vulkan target."""

from __future__ import annotations

import os

import numpy as np
import pytest

import kiln
from helpers import assert_matches, model_input, models, onnx_graph_model, ort_run


def dynamic_relu():
    """y = Relu(x) + c with a symbolic batch dimension."""
    from onnx import TensorProto, helper, numpy_helper
    return onnx_graph_model(
        [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Add", ["r", "c"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 5])],
        [numpy_helper.from_array(np.arange(5, dtype=np.float32), "c")])


def test_output_is_written_and_its_path_returned(tmp_path, demo_onnx, demo_input):
    out = tmp_path / "demo.kiln"
    returned = kiln.compile(demo_onnx, out)
    assert returned == str(out) and out.is_file()
    assert out.read_bytes() == kiln.compile(demo_onnx)
    with kiln.Model.load(returned) as model, model.session() as s:
        assert int(np.argmax(s.run({"input": demo_input})["logits"])) == 2


def test_input_shapes_fix_symbolic_dimensions():
    model = dynamic_relu()
    # Without input_shapes, N is sized per run (unbounded): one bundle for any N.
    with kiln.Model.load(kiln.compile(model)) as m, m.session() as s:
        for n in (1, 7, 300):
            x = np.linspace(-2, 2, n * 5, dtype=np.float32).reshape(n, 5)
            np.testing.assert_array_equal(s.run({"x": x})["y"], np.maximum(x, 0) + np.arange(5, dtype=np.float32))
    bundle = kiln.compile(model, input_shapes={"x": [3, 5]})
    with kiln.Model.load(bundle) as m, m.session() as s:
        assert m.inputs[0].shape == (3, 5)
        x = np.linspace(-2, 2, 15, dtype=np.float32).reshape(3, 5)
        np.testing.assert_array_equal(s.run({"x": x})["y"], np.maximum(x, 0) + np.arange(5, dtype=np.float32))


def test_input_values_read_sizes_at_run_time():
    """input_values (kilnc --input-value): Pad's pads read at run time within 0..3, one bundle for every value."""
    from onnx import TensorProto, helper
    model = onnx_graph_model([helper.make_node("Pad", ["x", "pads"], ["y"])],
                             [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4]),
                              helper.make_tensor_value_info("pads", TensorProto.INT64, [2])],
                             [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["p"])])
    # Without input_values the pads are read at run time too, with no bound (the output sized per run).
    with kiln.Model.load(kiln.compile(model)) as m, m.session() as s:
        x = np.arange(1, 5, dtype=np.float32)
        for pads in ([0, 0], [2, 1], [40, 9]):
            np.testing.assert_array_equal(s.run({"x": x, "pads": np.array(pads, np.int64)})["y"], np.pad(x, pads))
    for ranges in ({"pads": (0, 3)}, {"pads": "0..3"}):
        bundle = kiln.compile(model, input_values=ranges)
        with kiln.Model.load(bundle) as m, m.session() as s:
            x = np.arange(1, 5, dtype=np.float32)
            for pads in ([0, 0], [1, 2], [3, 3]):
                y = s.run({"x": x, "pads": np.array(pads, np.int64)})["y"]
                np.testing.assert_array_equal(y, np.pad(x, pads))
            with pytest.raises(kiln.Error):
                s.run({"x": x, "pads": np.array([4, 0], np.int64)})
    for bad in ((3, 0), (-1, 2), "a..b", 5):
        with pytest.raises(ValueError):
            kiln.compile(model, input_values={"pads": bad})


def dynamic_rows():
    """Two inputs sharing the symbolic dimension N: y = Softmax(a @ W + b), z = ReduceSum(y, axis 0)."""
    from onnx import TensorProto, helper, numpy_helper
    w = np.linspace(-1, 1, 8 * 4, dtype=np.float32).reshape(8, 4)
    return onnx_graph_model(
        [helper.make_node("MatMul", ["a", "w"], ["m"]), helper.make_node("Add", ["m", "b"], ["s"]),
         helper.make_node("Softmax", ["s"], ["y"], axis=-1),
         helper.make_node("ReduceSum", ["y", "axes"], ["z"], keepdims=0)],
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, ["N", 8]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4]),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, [4])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.array([0], np.int64), "axes")]), w


def test_ranges_make_one_bundle_for_many_shapes():
    """input_shapes with a range: one bundle, runs at several shapes (copies
    and views, buffer protocol and DLPack); outside the range, a clear error."""
    model, w = dynamic_rows()
    for spec in ((( 2, 16), 8), ("2..16", 8)):
        bundle = kiln.compile(model, input_shapes={"a": spec, "b": (spec[0], 4)})
        with kiln.Model.load(bundle) as m, m.session() as s:
            assert (m.inputs[0].shape, m.inputs[0].min_shape) == ((16, 8), (2, 8))
            assert (m.outputs[0].shape, m.outputs[0].min_shape) == ((16, 4), (2, 4))
            for rows in (2, 7, 16, 3):
                a = np.sin(np.arange(rows * 8, dtype=np.float32)).reshape(rows, 8)
                b = np.cos(np.arange(rows * 4, dtype=np.float32)).reshape(rows, 4)
                e = np.exp(a @ w + b - (a @ w + b).max(axis=-1, keepdims=True))
                want = e / e.sum(axis=-1, keepdims=True)
                for copy in (False, True):
                    got = s.run({"a": a, "b": b}, copy=copy)
                    assert got["y"].shape == (rows, 4) and got["z"].shape == (4,)
                    assert got["y"].flags.writeable == copy
                    np.testing.assert_allclose(got["y"], want, rtol=1e-5, atol=1e-6)
                    np.testing.assert_allclose(got["z"], want.sum(axis=0), rtol=1e-5, atol=1e-6)
                got = s.run({"a": memoryview(a), "b": b.tolist()})  # buffer protocol; a list converted
                np.testing.assert_allclose(got["y"], want, rtol=1e-5, atol=1e-6)
            with pytest.raises(kiln.Error) as e:
                s.run({"a": np.zeros((17, 8), np.float32), "b": np.zeros((17, 4), np.float32)})
            assert "outside the model's range (2..16, 8)" in str(e.value)
            with pytest.raises(kiln.Error) as e:  # in range, but the inputs disagree on N
                s.run({"a": np.zeros((4, 8), np.float32), "b": np.zeros((5, 4), np.float32)})
            assert e.value.code == "INVALID_ARGUMENT"
            got = s.run({"a": a, "b": b})  # the session still works
            assert got["y"].shape == (3, 4)
    for bad in ((0, 4), (5, 2), "4..x", (1, 2, 3)):
        with pytest.raises(ValueError):
            kiln.compile(model, input_shapes={"a": (bad, 8)})


def test_sizes_only_the_kernel_knows_come_back_at_the_run_size():
    """NonZero (a data symbol, docs/dynamic-shapes.md): each run returns the
    coordinates at that run's count, none included; copies and views alike."""
    from onnx import TensorProto, helper
    model = onnx_graph_model(
        [helper.make_node("NonZero", ["x"], ["nz"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 5])],
        [helper.make_tensor_value_info("nz", TensorProto.INT64, [2, "n"])])
    with kiln.Model.load(kiln.compile(model)) as m, m.session() as s:
        assert (m.outputs[0].shape, m.outputs[0].min_shape) == ((2, 15), (2, 0))
        rng = np.random.default_rng(3)
        for x in (rng.standard_normal((3, 5)).clip(0), np.zeros((3, 5)), np.ones((3, 5)), np.eye(3, 5)):
            x = x.astype(np.float32)
            for copy in (False, True):
                got = s.run({"x": x}, copy=copy)["nz"]
                np.testing.assert_array_equal(got, np.array(np.nonzero(x), np.int64))


def test_unsigned_types_go_in_and_out():
    """uint16/32/64 tensors (bundle 0.6) through Session.run, extremes included."""
    from onnx import TensorProto, helper
    types = {"uint16": TensorProto.UINT16, "uint32": TensorProto.UINT32, "uint64": TensorProto.UINT64}
    model = onnx_graph_model(
        [helper.make_node("Concat", ["x_" + n, "x_" + n], ["y_" + n], axis=0) for n in types],
        [helper.make_tensor_value_info("x_" + n, t, [2, 3]) for n, t in types.items()],
        [helper.make_tensor_value_info("y_" + n, t, [4, 3]) for n, t in types.items()])
    with kiln.Model.load(kiln.compile(model)) as m, m.session() as s:
        assert [i.dtype for i in m.inputs] == list(types)
        feeds = {}
        for n in types:
            info = np.iinfo(n)
            feeds["x_" + n] = np.array([[info.min, info.max, 7], [1, 2, info.max - 1]], dtype=n)
        got = s.run(feeds)
        for n in types:
            assert got["y_" + n].dtype == np.dtype(n)
            np.testing.assert_array_equal(got["y_" + n], np.concatenate([feeds["x_" + n]] * 2))


def test_run_time_if_runs_only_the_taken_branch_run_after_run():
    """An If on a model input (both branches compiled, predicated): in one
    session, runs alternate branches; the untaken one holds a TopK whose k
    (an input) is past the row, which would fail the run if it ran."""
    from onnx import TensorProto, helper, numpy_helper
    F = TensorProto.FLOAT
    then_g = helper.make_graph([helper.make_node("Relu", ["x"], ["t"])], "then", [],
                               [helper.make_tensor_value_info("t", F, [2, 8])])
    else_g = helper.make_graph([helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=-1),
                                helper.make_node("ReduceSum", ["v", "last"], ["s"], keepdims=1),
                                helper.make_node("Sub", ["x", "s"], ["e"])], "else", [],
                               [helper.make_tensor_value_info("e", F, [2, 8])])
    model = onnx_graph_model(
        [helper.make_node("If", ["flag"], ["y"], then_branch=then_g, else_branch=else_g)],
        [helper.make_tensor_value_info("x", F, [2, 8]), helper.make_tensor_value_info("flag", TensorProto.BOOL, []),
         helper.make_tensor_value_info("k", TensorProto.INT64, [1])],
        [helper.make_tensor_value_info("y", F, [2, 8])],
        [numpy_helper.from_array(np.array([-1], np.int64), "last")])
    rng = np.random.default_rng(5)
    with kiln.Model.load(kiln.compile(model)) as m, m.session() as s:
        for flag, k in ((False, 3), (True, 99), (False, 8), (True, 99), (True, 2)):
            x = rng.standard_normal((2, 8)).astype(np.float32)
            got = s.run({"x": x, "flag": np.array(flag), "k": np.array([k], np.int64)})["y"]
            want = np.maximum(x, 0) if flag else x - np.sort(x, axis=-1)[:, ::-1][:, :k].sum(axis=-1, keepdims=True)
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        with pytest.raises(kiln.Error) as e:  # the else branch taken with k past the row
            s.run({"x": np.zeros((2, 8), np.float32), "flag": np.array(False), "k": np.array([99], np.int64)})
        assert "came out as 99" in str(e.value)


def test_freeze_inputs_make_an_input_a_constant():
    from onnx import TensorProto, helper, numpy_helper
    model = onnx_graph_model(
        [helper.make_node("Mul", ["a", "b"], ["y"])],
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [4]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    b = np.array([1, -2, 3, -4], np.float32)
    a = np.array([0.5, 0.25, 2, 8], np.float32)
    for frozen in (b, numpy_helper.from_array(b, "b").SerializeToString()):
        with kiln.Model.load(kiln.compile(model, freeze_inputs={"b": frozen})) as m, m.session() as s:
            assert [i.name for i in m.inputs] == ["a"]
            np.testing.assert_array_equal(s.run({"a": a})["y"], a * b)


def test_static_kernels_write_the_object_and_header(tmp_path, onnx_path):
    out = tmp_path / "ops conv.kiln"
    kiln.compile(onnx_path("ops_conv"), out, kernels="static")
    header = (tmp_path / "ops conv.kernels.h").read_text()
    assert "kiln_static_library_ops_conv" in header
    assert (tmp_path / "ops conv.kernels.o").read_bytes()[:4] == b"\x7fELF"
    # The bundle has no code: it loads only once the application registered
    # the kernels; inspecting it works.
    with pytest.raises(kiln.Error) as e:
        kiln.Model.load(out)
    assert e.value.code == "NOT_FOUND" and "kiln_static_library_ops_conv" in e.value.message
    with kiln.Model.load(out, verify_only=True) as m:
        assert [o.name for o in m.outputs] == ["output", "output_1"]


def test_max_arena_accepts_bytes_and_suffixes(onnx_path):
    path = onnx_path("ops_conv")
    assert kiln.compile(path, max_arena="64M") == kiln.compile(path, max_arena=64 << 20)
    with pytest.raises(kiln.CompileError):
        kiln.compile(path, max_arena=1024)


def test_external_data_of_models_in_memory(tmp_path):
    """A ModelProto whose weights live in a file: read from model_dir."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    w = np.arange(64 * 64, dtype=np.float32).reshape(64, 64) / 4096
    model = onnx_graph_model(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 64])],
        [numpy_helper.from_array(w, "w")])
    onnx.save_model(model, str(tmp_path / "m.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
                    location="weights.bin", size_threshold=0)
    in_memory = onnx.load(str(tmp_path / "m.onnx"), load_external_data=False)
    x = np.ones((2, 64), np.float32)
    (tmp_path / "elsewhere").mkdir()
    with pytest.raises(kiln.CompileError, match="tensor 'w'"):
        kiln.compile(in_memory, model_dir=tmp_path / "elsewhere")
    for bundle in (kiln.compile(in_memory, model_dir=tmp_path), kiln.compile(tmp_path / "m.onnx")):
        with kiln.Model.load(bundle) as m, m.session() as s:
            np.testing.assert_allclose(s.run({"x": x})["y"], x @ w, rtol=1e-5)


@pytest.mark.parametrize("shared", [False, True])
def test_vulkan_target(onnx_path, shared):
    """--target=vulkan (and --vulkan-shared-memory=on): run on a Vulkan device
    (Mesa's lavapipe where tools/setup.sh installed it)."""
    path = onnx_path("ops_elementwise")
    try:
        bundle = kiln.compile(path, target="vulkan", vulkan_shared_memory=shared)
    except kiln.CompileError as e:
        pytest.skip("kilnc was built without the Vulkan target: %s" % e)
    spec = models.MODELS["ops_elementwise"]
    x = model_input("ops_elementwise")
    with kiln.Model.load(bundle) as m:
        assert m.device == "vulkan"
        if not os.path.exists("/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"):
            try:
                session = m.session()
            except kiln.Error as e:
                pytest.skip("no Vulkan device: %s" % e)
        else:
            session = m.session()
        with session:
            assert session.device_name != "cpu"
            got = session.run({"input": x})
            got_again = session.run({"input": x}, copy=True)
    assert_matches(got, ort_run(path, {"input": x}), max(spec.rtol, 1e-3), max(spec.atol, 1e-4))
    assert_matches(got_again, got, 0, 0)


def test_sign_key_signs_and_trusted_keys_check(tmp_path, demo_onnx, demo_input):
    import subprocess
    keys = []
    for name in ("a", "b"):
        pem = tmp_path / (name + ".pem")
        subprocess.run(["openssl", "genpkey", "-algorithm", "ed25519", "-out", str(pem)], check=True)
        der = subprocess.run(["openssl", "pkey", "-in", str(pem), "-pubout", "-outform", "DER"],
                             check=True, capture_output=True).stdout
        keys.append((pem, der[-32:]))  # the raw key ends the SubjectPublicKeyInfo
    (pem_a, key_a), (_, key_b) = keys
    signed = kiln.compile(demo_onnx, sign_key=pem_a)
    unsigned = kiln.compile(demo_onnx)
    assert signed[:len(unsigned)] == unsigned and signed.endswith(b"KILNSIG1")
    with kiln.Model.load(signed, trusted_keys=[key_b, key_a.hex()]) as model, model.session() as s:
        assert int(np.argmax(s.run({"input": demo_input})["logits"])) == 2
    for bundle, key, words in ((signed, key_b, "not among"), (unsigned, key_a, "not signed")):
        with pytest.raises(kiln.Error) as e:
            kiln.Model.load(bundle, trusted_keys=[key])
        assert e.value.code == "INVALID_BUNDLE" and words in e.value.message
    with pytest.raises(ValueError):
        kiln.Model.load(signed, trusted_keys=[b"short"])
    with pytest.raises(kiln.CompileError) as e:
        kiln.compile(demo_onnx, sign_key=tmp_path / "missing.pem")
    assert "missing.pem" in e.value.message


def test_a_wrong_declared_shape_is_replaced_with_a_compile_warning():
    """The file declares y [2, 5] where Relu gives [2, 3, 5]: kilnc compiles
    it with the inferred shape and warns, naming the value."""
    from onnx import TensorProto, helper
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 5])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    with pytest.warns(kiln.CompileWarning, match="'y'"):
        bundle = kiln.compile(model.SerializeToString())
    x = np.linspace(-1, 1, 30, dtype=np.float32).reshape(2, 3, 5)
    with kiln.Model.load(bundle) as m, m.session() as s:
        y = s.run({"x": x})["y"]
    assert y.shape == (2, 3, 5)
    np.testing.assert_array_equal(y, np.maximum(x, 0))
