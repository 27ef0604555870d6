"""Fixtures of the Python package's tests (tests/python, docs/python.md).

Run by tests/python/run_tests.py in a venv that sees apt's torch, onnx and
numpy and has the pinned onnxruntime and pytest. Environment: KILN_TEST_WORK
(a folder kept between runs: seeded ONNX exports are cached there);
KILN_TEST_PACKAGE_DIR (kiln must come from there: build/python) or
KILN_TEST_INSTALLED=1 (kiln must come from the venv: pip install .).
"""

from __future__ import annotations

import hashlib
import os
import sys

import pytest

from helpers import models

SOURCE_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


@pytest.fixture(scope="session")
def source_root() -> str:
    return SOURCE_ROOT


@pytest.fixture(scope="session")
def workdir(tmp_path_factory) -> str:
    path = os.environ.get("KILN_TEST_WORK") or str(tmp_path_factory.mktemp("kiln-python"))
    os.makedirs(path, exist_ok=True)
    return path


@pytest.fixture(scope="session", autouse=True)
def kiln_origin():
    """kiln must be the package under test: build/python, or the installed one."""
    import kiln
    where = os.path.realpath(kiln.__file__)
    if os.environ.get("KILN_TEST_INSTALLED") == "1":
        assert where.startswith(os.path.realpath(sys.prefix)), "kiln imported from %s, not the venv" % where
    elif os.environ.get("KILN_TEST_PACKAGE_DIR"):
        want = os.path.realpath(os.environ["KILN_TEST_PACKAGE_DIR"])
        assert where.startswith(want + os.sep), "kiln imported from %s, not %s" % (where, want)
    return where


def _export_key() -> str:
    """Exports are cached under a hash of what makes them."""
    import torch
    h = hashlib.sha256(torch.__version__.encode())
    for name in ("models.py", "models_onnx.py"):
        with open(os.path.join(SOURCE_ROOT, "tests", "e2e", name), "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:16]


@pytest.fixture(scope="session")
def onnx_path(workdir):
    """onnx_path(name) -> the seeded export of tests/e2e/models.py's model `name`."""
    folder = os.path.join(workdir, "onnx", _export_key())
    os.makedirs(folder, exist_ok=True)

    def get(name: str) -> str:
        path = os.path.join(folder, name + ".onnx")
        if not os.path.isfile(path):
            tmp = path + ".tmp%d" % os.getpid()
            models.export_model(models.MODELS[name], tmp)
            os.replace(tmp, path)
        return path
    return get


@pytest.fixture(scope="session")
def demo_onnx(source_root) -> str:
    return os.path.join(source_root, "demo", "shapes_cnn.onnx")


@pytest.fixture(scope="session")
def demo_bundle(demo_onnx) -> bytes:
    """The demo model (a small CNN, input 'input' 1x3x64x64, output 'logits' 1x4)."""
    import kiln
    return kiln.compile(demo_onnx)


@pytest.fixture(scope="session")
def demo_input(source_root):
    import numpy as np
    return np.load(os.path.join(source_root, "demo", "example_triangle.npy"))


@pytest.fixture(scope="session")
def mobilenet_bundle(onnx_path) -> bytes:
    """MobileNetV2 (the e2e export), compiled from its path."""
    import kiln
    return kiln.compile(onnx_path("mobilenet_v2"))
