#!/usr/bin/env bash
# Builds the Android library (AAR) of the Java binding (docs/java.md):
# libkiln and libkiln_jni cross-built per ABI with the NDK's clang and
# tools/cross/android-<abi>.ini, the ai.kiln classes compiled to Java 8
# bytecode (what every Android toolchain reads), and the AAR layout zipped:
#   AndroidManifest.xml  classes.jar  R.txt  proguard.txt  jni/<abi>/libkiln_jni.so
#
#   ANDROID_NDK_HOME=/path/to/ndk bindings/java/android/build_aar.sh [options]
#   bindings/java/android/build_aar.sh --jni-lib arm64-v8a=PATH ... [options]
#
#   --ndk DIR          the NDK (r23 or newer; default: $ANDROID_NDK_HOME, then
#                      $ANDROID_NDK_ROOT)
#   --abis "A B"       the ABIs (default: "arm64-v8a armeabi-v7a"; x86_64 too)
#   --out FILE         the AAR (default: build/android/kiln.aar)
#   --build-root DIR   where the per-ABI build directories go (default: build/android)
#   --jobs N           ninja -j (default: 2)
#   --jni-lib ABI=PATH use an already built libkiln_jni.so for ABI instead of
#                      cross-building (repeatable; then no NDK is needed: the
#                      test java_aar assembles the host library this way)
#
# libkiln_jni.so contains the runtime (linked statically) and needs only
# bionic's libc; libkiln.so is built next to it for apps that call the C API
# from native code of their own. Exits 2 when no NDK is found.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
here="$root/bindings/java/android"
usage() { sed -n '2,23p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
fail() { echo "build_aar.sh: $*" >&2; exit 2; }

ndk="${ANDROID_NDK_HOME:-${ANDROID_NDK_ROOT:-}}"
abis="arm64-v8a armeabi-v7a"
out="$root/build/android/kiln.aar"
build_root="$root/build/android"
jobs=2
declare -A prebuilt=()
while (($#)); do
  case "$1" in
    --ndk) ndk="$2"; shift 2 ;;
    --abis) abis="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --build-root) build_root="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --jni-lib)
      [[ "$2" == *=* ]] || fail "--jni-lib wants ABI=PATH, got '$2'"
      prebuilt["${2%%=*}"]="${2#*=}"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; fail "unknown argument: $1" ;;
  esac
done
if ((${#prebuilt[@]})); then
  abis="${!prebuilt[*]}"
fi
for abi in $abis; do
  case "$abi" in
    arm64-v8a|armeabi-v7a|x86_64) ;;
    *) fail "unknown ABI '$abi' (arm64-v8a, armeabi-v7a or x86_64: tools/cross/android-<abi>.ini)" ;;
  esac
done
for tool in javac jar; do
  command -v "$tool" >/dev/null || fail "$tool not found: install a JDK (apt-get install openjdk-17-jdk-headless)"
done

# --- libkiln_jni.so per ABI ---------------------------------------------------
declare -A libs=()
if ((${#prebuilt[@]})); then
  for abi in $abis; do
    [[ -f "${prebuilt[$abi]}" ]] || fail "--jni-lib $abi=${prebuilt[$abi]}: no such file"
    libs[$abi]="${prebuilt[$abi]}"
  done
else
  [[ -n "$ndk" ]] || fail "no Android NDK: set ANDROID_NDK_HOME (or pass --ndk DIR) to an NDK r23 or newer (https://developer.android.com/ndk/downloads); nothing was built"
  [[ -d "$ndk" ]] || fail "no Android NDK at '$ndk' (from ANDROID_NDK_HOME, ANDROID_NDK_ROOT or --ndk): no such directory"
  clang="$ndk/toolchains/llvm/prebuilt/linux-x86_64/bin/clang"
  [[ -x "$clang" ]] || fail "'$ndk' is not an NDK r23+ for Linux x86-64: $clang is missing"
  command -v meson >/dev/null && command -v ninja >/dev/null || fail "meson and ninja are needed (tools/setup.sh)"
  mkdir -p "$build_root"
  ndk_ini="$build_root/ndk.ini"
  printf "[constants]\nndk = '%s'\n" "$ndk" > "$ndk_ini"
  for abi in $abis; do
    dir="$build_root/build-$abi"
    if [[ ! -f "$dir/meson-private/coredata.dat" ]]; then
      echo "==> meson setup $dir ($abi)"
      meson setup "$dir" "$root" --cross-file "$root/tools/cross/android-$abi.ini" \
          --cross-file "$ndk_ini" -Dcompiler=disabled -Dtools=false -Dtests=false -Djava=enabled
    fi
    echo "==> ninja -C $dir ($abi)"
    ninja -C "$dir" -j "$jobs" runtime/libkiln.so bindings/java/libkiln_jni.so
    libs[$abi]="$dir/bindings/java/libkiln_jni.so"
  done
fi

# --- The AAR ------------------------------------------------------------------
stage="$(mktemp -d "${TMPDIR:-/tmp}/kiln-aar.XXXXXX")"
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/aar" "$stage/classes"
echo "==> javac --release 8 (ai.kiln)"
# Java 8 bytecode and API: D8 reads it everywhere, and buffer calls link to
# Java 8's signatures (Buffer.position(int), not JDK 9's ByteBuffer override).
find "$root/bindings/java/src/main/java" -name '*.java' -print0 | sort -z |
  xargs -0 javac --release 8 -Xlint:all,-options -Werror -d "$stage/classes"
jar --create --file "$stage/aar/classes.jar" -C "$stage/classes" .
cp "$here/AndroidManifest.xml" "$here/proguard.txt" "$stage/aar/"
: > "$stage/aar/R.txt"  # no resources
for abi in $abis; do
  mkdir -p "$stage/aar/jni/$abi"
  strip="$ndk/toolchains/llvm/prebuilt/linux-x86_64/bin/llvm-strip"
  if ((${#prebuilt[@]} == 0)) && [[ -x "$strip" ]]; then
    "$strip" --strip-unneeded -o "$stage/aar/jni/$abi/libkiln_jni.so" "${libs[$abi]}"
  else
    cp "${libs[$abi]}" "$stage/aar/jni/$abi/libkiln_jni.so"
  fi
done
mkdir -p "$(dirname "$out")"
rm -f "$out"
jar --create --no-manifest --file "$out" -C "$stage/aar" .
echo "==> $out"
jar --list --file "$out" | sed 's/^/    /'
