"""The GIL is released while kiln runs a model and while it compiles: a second
Python thread keeps running during one long call. (Were it held, the other
thread could not run a single bytecode until the call returned.)"""

from __future__ import annotations

import threading
import time

import numpy as np

import kiln
from helpers import matmul_chain


def ticks_during(call):
    """Runs call() on this thread while another thread records the time in a
    loop; returns (start, end, the other thread's timestamps)."""
    ticks = []
    stop = threading.Event()
    started = threading.Event()

    def ticker():
        started.set()
        while not stop.is_set():
            ticks.append(time.perf_counter())

    thread = threading.Thread(target=ticker)
    thread.start()
    started.wait()
    start = time.perf_counter()
    call()
    end = time.perf_counter()
    stop.set()
    thread.join()
    return start, end, ticks


def assert_ran_meanwhile(start, end, ticks, what):
    """The other thread ticked during the middle 80% of the call."""
    span = end - start
    inner = [t for t in ticks if start + 0.1 * span <= t <= end - 0.1 * span]
    assert span > 0.02, "%s took only %.1f ms: too short to tell" % (what, span * 1e3)
    assert len(inner) >= 20, ("the other thread ran %d times during %s (%.0f ms): the GIL was held"
                              % (len(inner), what, span * 1e3))


def test_run_releases_the_gil():
    model = matmul_chain(n=768, layers=6)
    x = np.random.default_rng(3).standard_normal((768, 768)).astype(np.float32)
    with kiln.Model.load(kiln.compile(model)) as m, m.session(threads=1) as s:
        s.run({"x": x})  # first touch of the arena
        start, end, ticks = ticks_during(lambda: s.run({"x": x}))
    assert_ran_meanwhile(start, end, ticks, "Session.run")


def test_compile_releases_the_gil(demo_onnx):
    result = []
    start, end, ticks = ticks_during(lambda: result.append(kiln.compile(demo_onnx)))
    assert result and result[0][8:12] == b"KILN"
    assert_ran_meanwhile(start, end, ticks, "kiln.compile")
