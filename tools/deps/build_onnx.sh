#!/usr/bin/env bash
# Builds the ONNX release that tools/deps/onnx.env pins (its C++ library:
# protobuf schema, checker, operator schemas, shape inference, version
# converter) from the PyPI source distribution, and installs it into
# .deps/onnx, where compiler/meson.build finds it. Idempotent: does nothing
# when .deps/onnx already holds that release built with these flags.
#
#   tools/deps/build_onnx.sh
#
# Needs: curl, a C++17 compiler, ninja, Debian's libprotobuf-dev and
# protobuf-compiler, and python3-venv (CMake >= 3.26 comes from PyPI, pinned
# with hashes in tools/deps/requirements-cmake.txt, into .deps/cmake-venv).
# Environment: KILN_DEPS_DIR (default: .deps), KILN_JOBS (ninja -j).
#
# The library is built once for every build directory (the sanitizer builds
# link the same one): a unity build at -O1 (about 1.5 minutes on 2 cores;
# shape inference is not a hot path), static, position-independent (the
# Python extension links it), against the system protobuf (decision 60). Its
# C++ namespace and protobuf package are onnx_kiln, not onnx: a process that
# also holds another ONNX (the Python package `onnx` beside `kiln`) has two
# different onnx-ml.proto in protobuf's one descriptor pool otherwise, which
# protobuf refuses. The compiler calls it `onnx` (support/onnx_namespace.h).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=onnx.env
source "$root/tools/deps/onnx.env"
deps="${KILN_DEPS_DIR:-$root/.deps}"
prefix="$deps/onnx"
# What the stamp records: the release and every flag below (bump the last
# word when the configuration changes, so existing builds are redone).
flags="unity O1 static pic ml protobuf-shared namespace-onnx_kiln v2"
# The system protobuf's version too: its protoc generates the .pb.cc files
# that must match the headers and library a later upgrade would bring.
want_stamp="onnx $ONNX_VERSION $ONNX_SDIST_SHA256 $flags $(protoc --version 2>/dev/null || echo no-protoc)"

say() { printf '==> %s\n' "$*"; }

if [[ -f "$prefix/kiln-stamp" && "$(cat "$prefix/kiln-stamp")" == "$want_stamp" ]]; then
  say "onnx $ONNX_VERSION: already built in $prefix"
  exit 0
fi
mkdir -p "$deps"

# --- CMake from PyPI ---------------------------------------------------------
cmake_venv="$deps/cmake-venv"
cmake="$cmake_venv/bin/cmake"
cmake_want="$(sed -n 's/^cmake==\([0-9.]*\).*/\1/p' "$root/tools/deps/requirements-cmake.txt")"
if [[ ! -x "$cmake" ]] || [[ "$("$cmake" --version | head -1)" != "cmake version $cmake_want" ]]; then
  say "installing CMake $cmake_want into $cmake_venv"
  rm -rf "$cmake_venv"
  /usr/bin/python3 -m venv "$cmake_venv"
  "$cmake_venv/bin/python" -m pip install --disable-pip-version-check --no-input -q --require-hashes \
    -r "$root/tools/deps/requirements-cmake.txt" ||
    { echo "build_onnx.sh: cannot install CMake $cmake_want from PyPI (offline?)" >&2; exit 1; }
fi

# --- The source distribution, checked ----------------------------------------
tarball="$deps/onnx-$ONNX_VERSION.tar.gz"
check() { [[ -f "$tarball" ]] && echo "$ONNX_SDIST_SHA256  $tarball" | sha256sum -c --status; }
if ! check; then
  say "downloading onnx $ONNX_VERSION ($ONNX_SDIST_URL)"
  rm -f "$tarball.part"
  if ! curl -fsSL --retry 3 -o "$tarball.part" "$ONNX_SDIST_URL"; then
    echo "build_onnx.sh: cannot download $ONNX_SDIST_URL (offline?): place that file, sha256 $ONNX_SDIST_SHA256," \
         "at $tarball and run again" >&2
    rm -f "$tarball.part"
    exit 1
  fi
  mv "$tarball.part" "$tarball"
  if ! check; then
    echo "build_onnx.sh: $tarball does not have the sha256 tools/deps/onnx.env pins ($ONNX_SDIST_SHA256)" >&2
    rm -f "$tarball"
    exit 1
  fi
fi

# --- Configure, build, install -------------------------------------------------
src="$deps/onnx-src"
build="$deps/onnx-build"
rm -rf "$src" "$build" "$prefix"
mkdir -p "$src" "$build"
tar -xzf "$tarball" -C "$src" --strip-components=1
say "building onnx $ONNX_VERSION into $prefix"
start=$SECONDS
"$cmake" -S "$src" -B "$build" -G Ninja -Wno-dev \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" \
  -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_INSTALL_LIBDIR=lib \
  -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DBUILD_SHARED_LIBS=OFF \
  -DONNX_USE_UNITY_BUILD=ON -DONNX_ML=1 -DONNX_USE_PROTOBUF_SHARED_LIBS=ON -DONNX_NAMESPACE=onnx_kiln \
  -DONNX_BUILD_PYTHON=OFF -DONNX_BUILD_TESTS=OFF -DONNX_GEN_PB_TYPE_STUBS=OFF \
  -DPython3_EXECUTABLE=/usr/bin/python3 >"$build/configure.log" 2>&1 ||
  { cat "$build/configure.log" >&2; exit 1; }
ninja -C "$build" ${KILN_JOBS:+-j "$KILN_JOBS"} install >"$build/build.log" 2>&1 ||
  { tail -50 "$build/build.log" >&2; exit 1; }
echo "$want_stamp" >"$prefix/kiln-stamp"
rm -rf "$src" "$build"
say "onnx $ONNX_VERSION built in $((SECONDS - start)) s"
