#!/usr/bin/env python3
"""Times an ONNX model with OpenVINO (CPU plugin, float32 forced), the counterpart of `kiln bench`
and bench/ort_bench.js for bench/run_bench.py. Run it with the python of the OpenVINO venv
(bench/requirements-openvino.txt).

  ov_bench.py MODEL.onnx [--threads N] [--iterations K] [--warmup W]

Compile properties: INFERENCE_PRECISION_HINT=f32 (no bf16/f16 downconversion),
PERFORMANCE_HINT=LATENCY, NUM_STREAMS=1, INFERENCE_NUM_THREADS=N. Every float input is filled
once with the seeded values `kiln bench` uses (xorshift64*, [-1, 1)); integer inputs get [0, 10)
(bench/bench_feeds.py).
W untimed runs, then K timed runs of one infer request, each timed on its own. The last line is
  median_ms=X min_ms=Y mean_ms=Z iterations=K
Exit status 0, or 1 with "ov_bench: error: ..." on stderr.
"""

import argparse
import sys

from bench_feeds import input_values, time_runs


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
    feeds = {port.get_any_name(): input_values(port.get_shape(), port.get_element_type().to_dtype())
             for port in compiled.inputs}
    request = compiled.create_infer_request()
    time_runs(lambda: request.infer(feeds), args.warmup, args.iterations)
    return 0


if __name__ == '__main__':
    try:
        sys.exit(main())
    except Exception as e:  # noqa: BLE001 - any failure is reported as the tool's error
        print('ov_bench: error: %s: %s' % (type(e).__name__, e), file=sys.stderr)
        sys.exit(1)
