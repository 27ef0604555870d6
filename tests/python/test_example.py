"""examples/python/classify.py: compiles the demo model, classifies the demo
triangle; and again from the bundle it saved."""

from __future__ import annotations

import os
import subprocess
import sys


def run_example(source_root, *args):
    script = os.path.join(source_root, "examples", "python", "classify.py")
    proc = subprocess.run([sys.executable, script, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_classify_example(source_root, tmp_path):
    saved = str(tmp_path / "demo.kiln")
    out = run_example(source_root, "--save", saved, "--threads", "2")
    assert out.splitlines()[0] == "top class: triangle", out
    assert os.path.getsize(saved) > 0
    out = run_example(source_root, "--bundle", saved, "--top", "4")
    lines = out.splitlines()
    assert lines[0] == "top class: triangle" and len(lines) == 5
    assert sorted(line.split()[0] for line in lines[1:]) == ["circle", "cross", "square", "triangle"]


def test_classify_example_reports_a_bad_bundle(source_root, tmp_path):
    bad = tmp_path / "bad.kiln"
    bad.write_bytes(b"KILN but not really")
    script = os.path.join(source_root, "examples", "python", "classify.py")
    proc = subprocess.run([sys.executable, script, "--bundle", str(bad)], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=300)
    assert proc.returncode == 1 and "INVALID_BUNDLE" in proc.stderr
