#!/usr/bin/env python3
"""Times an ONNX model with OpenVINO (CPU plugin, float32 forced), the counterpart of `kiln bench`
and bench/ort_bench.js for bench/run_bench.py. Run it with the python of the OpenVINO venv
(bench/requirements-openvino.txt).

  ov_bench.py MODEL.onnx [--threads N] [--iterations K] [--warmup W]

Compile properties: INFERENCE_PRECISION_HINT=f32 (no bf16/f16 downconversion),
PERFORMANCE_HINT=LATENCY, NUM_STREAMS=1, INFERENCE_NUM_THREADS=N. Every float input is filled
once with the seeded values `kiln bench` uses (xorshift64*, [-1, 1)); integer inputs get [0, 10).
W untimed runs, then K timed runs of one infer request, each timed on its own. The last line is
  median_ms=X min_ms=Y mean_ms=Z iterations=K
Exit status 0, or 1 with "ov_bench: error: ..." on stderr.
"""

import argparse
import statistics
import sys
import time

import numpy as np


def random_values(n: int) -> np.ndarray:
    """n values in [0, 1) from xorshift64*, the generator and seed of `kiln bench`."""
    mask = (1 << 64) - 1
    state = 0x9E3779B97F4A7C15
    out = np.empty(n, np.float64)
    for i in range(n):
        state ^= state >> 12
        state = (state ^ (state << 25)) & mask
        state ^= state >> 27
        out[i] = (((state * 2685821657736338717) & mask) >> 11) / 9007199254740992.0
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('model')
    ap.add_argument('--threads', type=int, default=1)
    ap.add_argument('--iterations', type=int, default=10)
    ap.add_argument('--warmup', type=int, default=2)
    args = ap.parse_args()
    if args.threads < 1 or args.iterations < 1 or args.warmup < 0:
        ap.error('--threads and --iterations need at least 1, --warmup at least 0')
    import openvino as ov
    core = ov.Core()
    compiled = core.compile_model(core.read_model(args.model), 'CPU', {
        'INFERENCE_PRECISION_HINT': 'f32', 'PERFORMANCE_HINT': 'LATENCY', 'NUM_STREAMS': '1',
        'INFERENCE_NUM_THREADS': str(args.threads)})
    feeds = {}
    for port in compiled.inputs:
        shape = [int(d) for d in port.get_shape()]
        n = int(np.prod(shape)) if shape else 1
        dtype = port.get_element_type().to_dtype()
        if np.issubdtype(dtype, np.floating):
            feeds[port.get_any_name()] = (random_values(n) * 2 - 1).astype(dtype).reshape(shape)
        else:
            feeds[port.get_any_name()] = np.random.default_rng(0).integers(0, 10, shape).astype(dtype)
    request = compiled.create_infer_request()
    for _ in range(args.warmup):
        request.infer(feeds)
    times = []
    for _ in range(args.iterations):
        start = time.perf_counter()
        request.infer(feeds)
        times.append((time.perf_counter() - start) * 1e3)
    print('median_ms=%.4f min_ms=%.4f mean_ms=%.4f iterations=%d'
          % (statistics.median(times), min(times), statistics.fmean(times), len(times)))
    return 0


if __name__ == '__main__':
    try:
        sys.exit(main())
    except Exception as e:  # noqa: BLE001 - any failure is reported as the tool's error
        print('ov_bench: error: %s: %s' % (type(e).__name__, e), file=sys.stderr)
        sys.exit(1)
