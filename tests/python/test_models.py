"""kiln against ONNX Runtime's Python package on the e2e models (seeded torch
exports of tests/e2e/models.py): MobileNetV2 and operator models, compiled
from a path, bytes and an onnx.ModelProto; threads."""

from __future__ import annotations

import numpy as np
import pytest

import kiln
from helpers import assert_matches, model_input, models, ort_run


def test_mobilenet_v2_matches_onnxruntime(onnx_path, mobilenet_bundle):
    path = onnx_path("mobilenet_v2")
    spec = models.MODELS["mobilenet_v2"]
    x = model_input("mobilenet_v2")
    with kiln.Model.load(mobilenet_bundle) as model, model.session() as session:
        assert [(i.name, i.dtype, i.shape) for i in model.inputs] == [("input", np.dtype(np.float32), (1, 3, 224, 224))]
        assert [(o.name, o.shape) for o in model.outputs] == [("output", (1, 1000))]
        before = kiln._stats()
        got = session.run({"input": x})
        after = kiln._stats()
    # The input went to the runtime as it was.
    assert after["input_copies"] == before["input_copies"]
    assert after["inputs_direct"] == before["inputs_direct"] + 1
    assert session._last_input_addresses == (x.ctypes.data,)
    assert_matches(got, ort_run(path, {"input": x}), spec.rtol, spec.atol)


# (model, how it is given to kiln.compile)
OPERATOR_MODELS = [
    ("ops_conv", "proto"),
    ("ops_pool", "bytes"),
    ("ops_elementwise", "path"),
    ("ops_matmul_softmax", "proto"),
    ("ops_shape", "bytes"),
    ("seq_rnn", "path"),
    ("transformer", "proto"),
]


@pytest.mark.parametrize("name,given", OPERATOR_MODELS)
def test_operator_models_match_onnxruntime(onnx_path, name, given):
    import onnx
    path = onnx_path(name)
    source = {"path": path, "bytes": open(path, "rb").read(), "proto": onnx.load(path)}[given]
    bundle = kiln.compile(source)
    assert isinstance(bundle, bytes) and bundle[8:12] == b"KILN"
    spec = models.MODELS[name]
    x = model_input(name)
    with kiln.Model.load(bundle) as model, model.session() as session:
        assert [o.name for o in model.outputs] == spec.names_of_outputs()
        got = session.run({"input": x})
    assert_matches(got, ort_run(path, {"input": x}), spec.rtol, spec.atol)


def test_compile_from_path_bytes_and_proto_agree(onnx_path):
    """The three ways to give a model compile the same bundle (the content hash
    covers everything, and compilation is deterministic)."""
    import onnx
    path = onnx_path("ops_conv")
    from_path = kiln.compile(path)
    assert kiln.compile(open(path, "rb").read()) == from_path
    assert kiln.compile(onnx.load(path)) == from_path


@pytest.mark.parametrize("threads", [2, 3])
def test_threads_give_the_same_outputs(mobilenet_bundle, threads):
    """Each workgroup runs exactly once with the same arguments: bit for bit
    the results of one thread (docs/runtime.md, Threads)."""
    x = model_input("mobilenet_v2")
    with kiln.Model.load(mobilenet_bundle) as model:
        with model.session(threads=1) as one:
            expected = one.run({"input": x}, copy=True)["output"]
        with model.session(threads=threads) as many:
            assert many.device_name == "cpu"
            for _ in range(3):
                np.testing.assert_array_equal(many.run({"input": x})["output"], expected)


def test_sessions_of_one_model_in_parallel_threads(onnx_path):
    """A model is shared by threads, each with its own session; the GIL is
    released, so they run at the same time; results are each thread's own."""
    import threading
    bundle = kiln.compile(onnx_path("ops_conv"))
    model = kiln.Model.load(bundle)
    rng = np.random.default_rng(5)
    inputs = [rng.standard_normal((1, 3, 19, 23)).astype(np.float32) for _ in range(4)]
    with model.session() as s:
        expected = [s.run({"input": x}, copy=True) for x in inputs]
    failures = []

    def work(i):
        with model.session() as session:
            for _ in range(20):
                out = session.run({"input": inputs[i]})
                for name, value in expected[i].items():
                    if not np.array_equal(out[name], value):
                        failures.append((i, name))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    model.close()
    assert not failures
