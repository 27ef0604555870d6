"""What bench/run_bench.py and bench/bench_dynamic.py share: the repository's
paths, the error a failed step raises, progress logging, running a tool (every
failure fatal, saying what failed) and reading `kiln bench`'s timing line."""

import os
import re
import subprocess
import sys
from typing import Dict, Optional, Sequence

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH_DIR = os.path.join(REPO, 'bench')


class BenchError(Exception):
    pass


def log(msg: str = '') -> None:
    """Progress goes to stderr; stdout gets only the final Markdown."""
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------
# Running tools: every failure is fatal and says what failed.

def run_tool(cmd: Sequence[str], what: str, timeout: float = 900, cwd: Optional[str] = None) -> str:
    try:
        proc = subprocess.run(list(cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout, cwd=cwd)
    except subprocess.TimeoutExpired:
        raise BenchError('%s: timed out after %.0f s: %s' % (what, timeout, ' '.join(cmd)))
    except OSError as e:
        raise BenchError('%s: cannot run %s: %s' % (what, cmd[0], e))
    out = proc.stdout.decode('utf-8', 'replace')
    if proc.returncode != 0:
        err = proc.stderr.decode('utf-8', 'replace').strip()
        status = ('killed by signal %d' % -proc.returncode) if proc.returncode < 0 else 'exit status %d' % proc.returncode
        tail = '\n'.join((out.strip() + '\n' + err).strip().splitlines()[-15:])
        raise BenchError('%s failed (%s): %s\n%s' % (what, status, ' '.join(cmd), tail))
    return out


TIMING_RE = re.compile(r'median_ms=([0-9.eE+-]+)\s+min_ms=([0-9.eE+-]+)\s+mean_ms=([0-9.eE+-]+)')
STARTUP_RE = re.compile(r'^(startup|startup_warm|startup_stages): (.*)$', re.M)


def parse_timing(out: str, what: str) -> Dict[str, float]:
    matches = TIMING_RE.findall(out)
    if not matches:
        raise BenchError('%s: no "median_ms=.. min_ms=.." line in its output:\n%s' % (what, out[-2000:]))
    med, mn, mean = (float(x) for x in matches[-1])
    return {'median_ms': med, 'min_ms': mn, 'mean_ms': mean}
