#!/usr/bin/python3
"""Runs the Python package's tests (tests/python) in a venv; the meson tests
`python` and `python_pip_install` call it (tests/python/meson.build).

  run_tests.py pytest --python PY --venv DIR --requirements FILE --package-dir build/python
                      --source-root ROOT --workdir DIR [-- PYTEST ARGS]
      pytest on the package as the build assembled it (PYTHONPATH=build/python).
  run_tests.py install --python PY --venv DIR --requirements FILE --build-dir DIR
                       --source-root ROOT --workdir DIR [-- PYTEST ARGS]
      `pip install ROOT` (meson-python, build isolation, pinned build
      dependencies from PyPI; the build directory DIR is kept, so the next
      install is incremental), then pytest on the installed package.

The venv is made from PY (the interpreter the extension is built for) with
--system-site-packages, so apt's numpy, torch and onnx are visible, and gets
FILE's pinned packages (pip install --no-deps -r FILE); it is made again only
when FILE or PY changes. Exit status: pytest's, or 2 when the venv cannot be
set up (no network to PyPI, a missing package); "no tests ran" is a failure.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import time


def log(message: str) -> None:
    print("run_tests.py: " + message, flush=True)


def run(cmd, **kwargs) -> int:
    log("$ " + " ".join(cmd))
    start = time.monotonic()
    status = subprocess.call(cmd, **kwargs)
    log("exit %d after %.1f s" % (status, time.monotonic() - start))
    return status


def venv_python(venv: str) -> str:
    return os.path.join(venv, "bin", "python")


def ensure_venv(venv: str, python: str, requirements: str) -> None:
    """Makes the venv (again) unless its stamp says it has these requirements."""
    with open(requirements, "rb") as f:
        wanted = hashlib.sha256(f.read() + os.path.realpath(python).encode()).hexdigest()
    stamp = os.path.join(venv, "kiln-requirements.sha256")
    if os.path.isfile(stamp) and os.path.isfile(venv_python(venv)):
        with open(stamp) as f:
            if f.read().strip() == wanted:
                log("venv %s: up to date" % venv)
                return
    log("making venv %s" % venv)
    shutil.rmtree(venv, ignore_errors=True)
    pip = [venv_python(venv), "-m", "pip", "--disable-pip-version-check", "--no-input"]
    if run([python, "-m", "venv", "--system-site-packages", venv]) != 0:
        raise SystemExit("run_tests.py: cannot make a venv with %s (apt-get install python3-venv)" % python)
    if run(pip + ["install", "--no-deps", "-r", requirements]) != 0:
        raise SystemExit("run_tests.py: cannot install %s from PyPI (network?)" % requirements)
    check = "import numpy, onnx, onnxruntime, pytest, torch, torchvision"
    if run([venv_python(venv), "-c", check]) != 0:
        raise SystemExit("run_tests.py: the venv lacks a module the tests need (%s): run tools/setup.sh" % check)
    with open(stamp, "w") as f:
        f.write(wanted + "\n")


def pip_install(args) -> None:
    """pip install of the source tree, as a user would, with a kept build directory."""
    cmd = [venv_python(args.venv), "-m", "pip", "--disable-pip-version-check", "--no-input", "install",
           "--config-settings=build-dir=" + os.path.abspath(args.build_dir),
           "--config-settings=compile-args=-j2", args.source_root]
    if run(cmd, cwd=args.workdir) != 0:
        raise SystemExit("run_tests.py: pip install %s failed" % args.source_root)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=["pytest", "install"])
    parser.add_argument("--python", required=True)
    parser.add_argument("--venv", required=True)
    parser.add_argument("--requirements", required=True)
    parser.add_argument("--source-root", required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--package-dir", help="pytest: where the build assembled the package")
    parser.add_argument("--build-dir", help="install: meson-python's build directory (kept)")
    parser.add_argument("pytest_args", nargs="*")
    args = parser.parse_args()
    args.source_root = os.path.abspath(args.source_root)
    os.makedirs(args.workdir, exist_ok=True)

    ensure_venv(args.venv, args.python, args.requirements)
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", KILN_TEST_WORK=os.path.abspath(args.workdir))
    env.pop("PYTHONPATH", None)
    if args.mode == "pytest":
        if not args.package_dir or not os.path.isdir(os.path.join(args.package_dir, "kiln")):
            raise SystemExit("run_tests.py: --package-dir has no kiln/ (build it: ninja -C build)")
        env["PYTHONPATH"] = env["KILN_TEST_PACKAGE_DIR"] = os.path.abspath(args.package_dir)
    else:
        if not args.build_dir:
            raise SystemExit("run_tests.py: install needs --build-dir")
        pip_install(args)
        env["KILN_TEST_INSTALLED"] = "1"
    tests = os.path.join(args.source_root, "tests", "python")
    # From the work folder, so neither the source tree nor the build is on sys.path.
    status = run([venv_python(args.venv), "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rs",
                  "--rootdir", tests, "-W", "ignore::UserWarning",
                  tests] + args.pytest_args, cwd=args.workdir, env=env)
    if status == 5:
        log("pytest ran no test")
        return 1
    return status


if __name__ == "__main__":
    sys.exit(main())
