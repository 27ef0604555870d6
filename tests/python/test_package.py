"""The package's rules that code review alone would have to keep: the extension
reaches the runtime only through kiln.h, every PyPI version is pinned
exactly, the stub lists what the extension has, models load from any bytes."""

from __future__ import annotations

import glob
import os
import re

import kiln


def test_extension_uses_only_the_runtime_public_api(source_root):
    """No file of python/src includes a runtime header but kiln/kiln.h (never
    runtime/src, the bundle schema or kiln.hpp's internals)."""
    runtime_src = os.path.join(source_root, "runtime", "src")
    internal = {os.path.relpath(p, runtime_src) for p in glob.glob(os.path.join(runtime_src, "**", "*.h"),
                                                                    recursive=True)}
    assert "exec/model.h" in internal  # the walk found the runtime's headers
    sources = glob.glob(os.path.join(source_root, "python", "src", "*"))
    assert any(s.endswith("session.cpp") for s in sources)
    for path in sources:
        with open(path) as f:
            for include in re.findall(r'#include\s+[<"]([^">]+)[">]', f.read()):
                assert include not in internal, "%s includes the runtime's internal %s" % (path, include)
                assert "bundle_generated" not in include and "runtime/src" not in include, (path, include)


def pins(lines):
    return [line.split("#")[0].strip() for line in lines if line.split("#")[0].strip()]


def test_every_pypi_version_is_pinned_exactly(source_root):
    with open(os.path.join(source_root, "pyproject.toml")) as f:
        text = f.read()
    requires = re.search(r"^requires = \[(.*?)^\]", text, re.S | re.M).group(1)
    build = re.findall(r"'([^']+)'", requires)
    assert {b.split("==")[0] for b in build} >= {"meson-python", "meson", "ninja"}
    with open(os.path.join(source_root, "tests", "python", "requirements.txt")) as f:
        tests = pins(f)
    assert any(t.startswith("onnxruntime==") for t in tests)
    for requirement in build + tests:
        assert re.fullmatch(r"[A-Za-z0-9_.-]+==[0-9][0-9A-Za-z.]*", requirement), requirement


def test_the_stub_matches_the_extension(source_root):
    with open(os.path.join(source_root, "python", "kiln", "_kiln.pyi")) as f:
        stub = f.read()
    declared = set(re.findall(r"^(?:def|class) (\w+)", stub, re.M)) | set(re.findall(r"^(\w+):", stub, re.M))
    public = {name for name in dir(kiln._kiln) if not name.startswith("__") or name == "__version__"}
    assert public == declared
    for cls in ("Model", "Session"):
        methods = {name for name in vars(getattr(kiln._kiln, cls)) if not name.startswith("__")}
        body = stub.split("class %s" % cls, 1)[1].split("\nclass ", 1)[0]
        assert methods == set(re.findall(r"def (\w+)", body)) - {"__init__"}, cls


def test_models_load_from_any_bytes_like(demo_bundle, demo_input):
    for source in (demo_bundle, bytearray(demo_bundle), memoryview(demo_bundle)):
        with kiln.Model.load(source) as model, model.session() as session:
            assert session.run({"input": demo_input})["logits"].argmax() == 2
