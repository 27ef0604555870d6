"""The inputs the Python peers of bench/run_bench.py (bench/ov_bench.py, bench/tvm_bench.py) feed
a model: the values `kiln bench` and bench/ort_bench.js use. Every float input gets seeded
xorshift64* values in [-1, 1) (the generator and seed of `kiln bench`, so a model with one float
input gets exactly kiln's input); an integer input gets [0, 10). Needs only numpy, so it runs in
each peer's venv."""

import statistics
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


def input_values(shape, dtype) -> np.ndarray:
    """One input of SHAPE and numpy DTYPE, filled as the docstring above says."""
    shape = [int(d) for d in shape]
    dtype = np.dtype(dtype)
    if np.issubdtype(dtype, np.floating):
        n = int(np.prod(shape)) if shape else 1
        return (random_values(n) * 2 - 1).astype(dtype).reshape(shape)
    return np.random.default_rng(0).integers(0, 10, shape).astype(dtype)


def time_runs(run, warmup: int, iterations: int) -> None:
    """WARMUP untimed calls of RUN, then ITERATIONS timed one by one; prints the peers' last line
    `median_ms=X min_ms=Y mean_ms=Z iterations=K` that bench/run_bench.py reads."""
    for _ in range(warmup):
        run()
    times = []
    for _ in range(iterations):
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1e3)
    print('median_ms=%.4f min_ms=%.4f mean_ms=%.4f iterations=%d'
          % (statistics.median(times), min(times), statistics.fmean(times), len(times)))
