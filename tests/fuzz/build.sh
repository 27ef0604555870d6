#!/usr/bin/env bash
# Builds the fuzz harnesses (tests/fuzz/meson.build, a meson project of its
# own) with clang-15, libFuzzer, ASan and UBSan, incrementally.
#
#   tests/fuzz/build.sh [BUILD_DIR]     default: build-fuzz at the repository root
#
# Environment: KILN_JOBS (ninja -j; default 2).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build_dir="${1:-$root/build-fuzz}"
if [[ ! -f "$build_dir/build.ninja" ]]; then
  CC=clang-15 CXX=clang++-15 meson setup "$build_dir" "$root/tests/fuzz" >/dev/null
fi
ninja -C "$build_dir" -j "${KILN_JOBS:-2}" >/dev/null
