"""Errors: the runtime's as kiln.Error with its message and status code name,
kilnc's as kiln.CompileError, misuse of the API as TypeError / ValueError."""

from __future__ import annotations

import os

import numpy as np
import pytest

import kiln


def test_versions():
    assert kiln.__version__ and kiln.__version__[0].isdigit()
    assert kiln.runtime_version.count(".") == 2
    assert isinstance(kiln.abi_version, int) and kiln.abi_version >= 1
    assert kiln._kiln.HEADER_ABI_VERSION == kiln.abi_version  # built against the library it runs


@pytest.mark.parametrize("make, code", [
    (lambda b: b"not a bundle", "INVALID_BUNDLE"),
    (lambda b: b"", "INVALID_ARGUMENT"),
    (lambda b: b[:len(b) // 2], "INVALID_BUNDLE"),
    (lambda b: b[:-100] + bytes([b[-100] ^ 0x40]) + b[-99:], "INVALID_BUNDLE"),  # a flipped byte: the content hash
], ids=["text", "empty", "truncated", "flipped"])
def test_bad_bundle_bytes(demo_bundle, make, code):
    with pytest.raises(kiln.Error) as e:
        kiln.Model.load(make(demo_bundle))
    assert e.value.code == code
    assert str(e.value) == e.value.message and e.value.message


def test_bad_bundle_files(tmp_path, demo_bundle):
    with pytest.raises(kiln.Error) as e:
        kiln.Model.load(tmp_path / "missing.kiln")
    assert e.value.code in ("IO_ERROR", "NOT_FOUND") and "missing.kiln" in e.value.message
    (tmp_path / "bad.kiln").write_bytes(demo_bundle[:1000])
    with pytest.raises(kiln.Error) as e:
        kiln.Model.load(tmp_path / "bad.kiln")
    assert e.value.code == "INVALID_BUNDLE"
    with pytest.raises(TypeError):
        kiln.Model.load(42)


def test_wrong_inputs(demo_bundle, demo_input):
    with kiln.Model.load(demo_bundle) as model, model.session() as session:
        with pytest.raises(kiln.Error) as e:
            session.run({"images": demo_input})
        assert e.value.code == "NOT_FOUND" and "images" in e.value.message
        with pytest.raises(kiln.Error) as e:
            session.run({"input": demo_input[:, :, :32]})
        assert e.value.code == "INVALID_ARGUMENT"
        assert "(1, 3, 32, 64)" in e.value.message and "(1, 3, 64, 64)" in e.value.message
        with pytest.raises(kiln.Error) as e:  # same size, other shape
            session.run({"input": demo_input.reshape(1, 3, 32, 128)})
        assert e.value.code == "INVALID_ARGUMENT"
        with pytest.raises(kiln.Error) as e:
            session.run({"input": demo_input.astype(np.complex64)})
        assert e.value.code == "INVALID_ARGUMENT" and "complex64" in e.value.message
        with pytest.raises(kiln.Error) as e:
            session.run({})
        assert e.value.code == "INVALID_ARGUMENT" and "missing input 'input'" in e.value.message
        with pytest.raises(TypeError):
            session.run([demo_input])
        with pytest.raises(TypeError):
            session.run({1: demo_input})
        # The session is still usable after every refusal.
        assert int(np.argmax(session.run({"input": demo_input})["logits"])) == 2


def test_session_options_the_runtime_refuses(demo_bundle):
    with kiln.Model.load(demo_bundle) as model:
        assert model.device == "cpu"
        with pytest.raises(kiln.Error) as e:
            model.session(threads=5000)
        assert e.value.code == "INVALID_ARGUMENT" and "5000" in e.value.message
        with pytest.raises(kiln.Error) as e:
            model.session(device="vulkan")
        assert e.value.code == "INVALID_ARGUMENT"
        with pytest.raises(ValueError):
            model.session(threads=0)
        with pytest.raises(ValueError):
            model.session(device="tpu")
        with model.session(device="cpu") as s:
            assert s.device_name == "cpu"


def test_verify_only_models_describe_but_do_not_run(demo_bundle):
    with kiln.Model.load(demo_bundle, verify_only=True) as model:
        assert model.inputs[0].shape == (1, 3, 64, 64) and model.outputs[0].name == "logits"
        with pytest.raises(kiln.Error):
            model.session()


def test_compile_errors(tmp_path, onnx_path):
    from helpers import models
    unsupported = str(tmp_path / "unsupported.onnx")
    models.export_model(models.UNSUPPORTED_MODEL, unsupported)
    with pytest.raises(kiln.CompileError) as e:
        kiln.compile(unsupported)
    assert isinstance(e.value, kiln.Error) and e.value.code == "INVALID_ARGUMENT"
    assert models.UNSUPPORTED_OP in e.value.message
    with pytest.raises(kiln.CompileError) as e:
        kiln.compile(b"this is not ONNX")
    assert e.value.code == "INVALID_ARGUMENT"
    with pytest.raises(kiln.CompileError) as e:
        kiln.compile(str(tmp_path / "missing.onnx"))
    assert "missing.onnx" in e.value.message
    with pytest.raises(kiln.CompileError, match="arena"):
        kiln.compile(onnx_path("ops_conv"), max_arena="4K")
    with pytest.raises(kiln.CompileError):
        kiln.compile(onnx_path("ops_conv"), target="llvm -mtriple=no-such-arch")
    with pytest.raises(kiln.CompileError, match="no-such-pass"):
        kiln.compile(onnx_path("ops_conv"), disable_graph_passes=["no-such-pass"])
    assert not os.path.exists(tmp_path / "out.kiln")


def test_compile_argument_errors(onnx_path):
    path = onnx_path("ops_conv")
    with pytest.raises(TypeError):
        kiln.compile(path, no_such_option=1)
    with pytest.raises(TypeError):
        kiln.compile(12345)
    with pytest.raises(ValueError):
        kiln.compile(path, kernels="sometimes")
    with pytest.raises(ValueError):
        kiln.compile(path, kernels="static")  # needs output=
    with pytest.raises(ValueError):
        kiln.compile(path, max_arena="lots")
    with pytest.raises(ValueError):
        kiln.compile(path, vulkan_features="everything")
    with pytest.raises(ValueError):
        kiln.compile(path, input_shapes={"input": (1, 0, 3)})
    with pytest.raises(ValueError):
        kiln.compile(path, model_dir="/tmp")
