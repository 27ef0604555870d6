#!/usr/bin/env bash
# The Kiln demo: sets up the machine and builds Kiln (tools/setup.sh), compiles
# demo/shapes_cnn.onnx with kilnc and classifies an example image with kiln.
#
#   tools/demo.sh [IMAGE.npy]     (default: demo/example_triangle.npy;
#                                  float32 [1, 3, 64, 64], RGB in [0, 1])
#
# Environment: BUILD_DIR (default: build).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
build_dir="${BUILD_DIR:-build}"
image="${1:-demo/example_triangle.npy}"

"$root/tools/setup.sh"

kilnc="$build_dir/compiler/kilnc"
kiln="$build_dir/tools/kiln/kiln"
for exe in "$kilnc" "$kiln"; do
  if [[ ! -x "$exe" ]]; then
    echo "demo.sh: $exe was not built (is LLVM 15 installed? see meson's summary above)" >&2
    exit 1
  fi
done

mkdir -p "$build_dir/demo"
rm -rf "$build_dir/demo/out"
echo "==> $kilnc demo/shapes_cnn.onnx -o $build_dir/demo/shapes_cnn.kiln"
"$kilnc" demo/shapes_cnn.onnx -o "$build_dir/demo/shapes_cnn.kiln"
echo "==> $kiln run $build_dir/demo/shapes_cnn.kiln --input input=$image --top 3 --output-dir $build_dir/demo/out"
run_log="$("$kiln" run "$build_dir/demo/shapes_cnn.kiln" --input "input=$image" --top 3 \
           --output-dir "$build_dir/demo/out")"
printf '%s\n' "$run_log"

latency="$(printf '%s\n' "$run_log" | sed -n 's/.*latency_ms=\([0-9.eE+-]*\).*/\1/p' | tail -n 1)"
/usr/bin/python3 - "$build_dir/demo/out/logits.npy" demo/labels.txt "$image" "${latency:-?}" <<'PY'
import sys
import numpy as np
logits_path, labels_path, image, latency = sys.argv[1:5]
labels = [l.strip() for l in open(labels_path) if l.strip()]
logits = np.load(logits_path).reshape(-1).astype(np.float64)
p = np.exp(logits - logits.max())
p /= p.sum()
order = np.argsort(-p)
print()
print('%s: top classes' % image)
for i in order[:3]:
    print('  %-9s p=%.3f  (logit %.3f)' % (labels[i], p[i], logits[i]))
print('prediction: %s (p=%.3f), latency %s ms' % (labels[order[0]], p[order[0]], latency))
PY
