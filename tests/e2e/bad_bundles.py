#!/usr/bin/python3
"""Feeds `kiln run` and `kiln inspect` hostile bundle files.

  bad_bundles.py --kilnc PATH --kiln PATH --workdir DIR [--timeout 10] [--seed 1] [--jobs 2]

Compiles a small conv model with kilnc, then runs the kiln tool on truncated
copies, single-byte flips, multi-byte corruptions, targeted rewrites of
header fields (data-segment offset/size, version) and files that are no
bundle at all. Every run must finish within the timeout and never die by a
signal; it must either succeed (a flipped byte may be unused: then the
outputs must still be written) or exit 1 with a `kiln: error:` message. Cases
that are certainly invalid (truncated below the data segment's end, a rewritten
header field pointing past the file, ...) must be rejected.

Prints the counts per category; exits 1 on any violation (the offending files
are kept under DIR/violations/), 2 on a set-up error. Run with /usr/bin/python3.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import os
import random
import shutil
import struct
import subprocess
import sys
import time
from typing import Dict, List, Optional, Tuple

sys.dont_write_bytecode = True

MISSING = object()


@dataclasses.dataclass
class Case:
    category: str
    label: str
    data: Optional[bytes] = None      # file contents; None: `path` is used as is
    path: Optional[str] = None        # a special path (directory, ELF, missing file)
    must_fail: bool = False           # certainly invalid: success is a violation


@dataclasses.dataclass
class Result:
    case: Case
    violations: List[str]
    outcomes: Dict[str, str]


def log(msg: str = '') -> None:
    print(msg, flush=True)


# ---------------------------------------------------------------------------
# The model.

def make_bundle(kilnc: str, workdir: str) -> Tuple[str, str]:
    import numpy as np
    import torch
    import torch.nn as nn

    torch.manual_seed(0)
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))

    class SmallConv(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = nn.Conv2d(3, 8, 3, padding=1)
            self.c2 = nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=8)
            self.fc = nn.Linear(8, 4)

        def forward(self, x):
            y = torch.relu(self.c1(x))
            y = nn.functional.max_pool2d(y, 2)
            y = torch.relu(self.c2(y))
            y = nn.functional.adaptive_avg_pool2d(y, 1).flatten(1)
            return self.fc(y)

    onnx_path = os.path.join(workdir, 'small_conv.onnx')
    with torch.no_grad():
        torch.onnx.export(SmallConv().eval(), torch.zeros(1, 3, 16, 16), onnx_path, opset_version=13,
                          input_names=['input'], output_names=['output'], do_constant_folding=True)
    input_path = os.path.join(workdir, 'input.npy')
    np.save(input_path, np.random.default_rng(5).standard_normal((1, 3, 16, 16)).astype(np.float32))
    bundle = os.path.join(workdir, 'small_conv.kiln')
    proc = subprocess.run([kilnc, onnx_path, '-o', bundle], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=300)
    if proc.returncode != 0 or not os.path.isfile(bundle):
        log(proc.stdout.decode('utf-8', 'replace') + proc.stderr.decode('utf-8', 'replace'))
        raise SystemExit('error: kilnc failed to compile the test model (exit %s)' % proc.returncode)
    return bundle, input_path


# ---------------------------------------------------------------------------
# A minimal reader of the bundle's root table (schema/bundle.fbs), enough to
# locate scalar fields for targeted rewrites. Returns None when the layout is
# not what it expects (then those cases are skipped).

BUNDLE_FIELDS = ['version_major', 'version_minor', 'min_runtime_minor', 'producer', 'tensors', 'inputs',
                 'outputs', 'nodes', 'memory', 'libraries', 'kernels', 'dispatches',
                 'data_segment_offset', 'data_segment_size', 'content_hash']


def root_field_pos(buf: bytes, field: str) -> Optional[int]:
    try:
        base = 4  # after the u32 size prefix
        table = base + struct.unpack_from('<I', buf, base)[0]
        vtable = table - struct.unpack_from('<i', buf, table)[0]
        vt_size = struct.unpack_from('<H', buf, vtable)[0]
        idx = BUNDLE_FIELDS.index(field)
        entry = 4 + 2 * idx
        if entry + 2 > vt_size:
            return None
        off = struct.unpack_from('<H', buf, vtable + entry)[0]
        return table + off if off else None
    except (struct.error, ValueError):
        return None


def read_u64(buf: bytes, pos: Optional[int]) -> Optional[int]:
    if pos is None or pos + 8 > len(buf):
        return None
    return struct.unpack_from('<Q', buf, pos)[0]


_M64 = (1 << 64) - 1
_P1, _P2, _P3, _P4, _P5 = (0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9,
                           0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5)


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _M64


def _round(acc: int, lane: int) -> int:
    return (_rotl((acc + lane * _P2) & _M64, 31) * _P1) & _M64


def xxh64(data: bytes, seed: int = 0) -> int:
    """XXH64 (the bundle's content_hash), in plain Python."""
    n = len(data)
    i = 0
    if n >= 32:
        v = [(seed + _P1 + _P2) & _M64, (seed + _P2) & _M64, seed, (seed - _P1) & _M64]
        lanes = struct.unpack_from('<%dQ' % (n // 32 * 4), data)
        for j in range(0, len(lanes), 4):
            v[0] = _round(v[0], lanes[j])
            v[1] = _round(v[1], lanes[j + 1])
            v[2] = _round(v[2], lanes[j + 2])
            v[3] = _round(v[3], lanes[j + 3])
        i = n // 32 * 32
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M64
        for x in v:
            h = ((h ^ _round(0, x)) * _P1 + _P4) & _M64
    else:
        h = (seed + _P5) & _M64
    h = (h + n) & _M64
    while i + 8 <= n:
        h ^= _round(0, struct.unpack_from('<Q', data, i)[0])
        h = (_rotl(h, 27) * _P1 + _P4) & _M64
        i += 8
    if i + 4 <= n:
        h ^= (struct.unpack_from('<I', data, i)[0] * _P1) & _M64
        h = (_rotl(h, 23) * _P2 + _P3) & _M64
        i += 4
    while i < n:
        h ^= (data[i] * _P5) & _M64
        h = (_rotl(h, 11) * _P1) & _M64
        i += 1
    h ^= h >> 33
    h = (h * _P2) & _M64
    h ^= h >> 29
    h = (h * _P3) & _M64
    h ^= h >> 32
    return h


def content_hash(buf: bytes) -> Optional[int]:
    """The content_hash the runtime would compute for buf (None if the layout is not readable)."""
    pos = root_field_pos(buf, 'content_hash')
    dso = read_u64(buf, root_field_pos(buf, 'data_segment_offset'))
    dss = read_u64(buf, root_field_pos(buf, 'data_segment_size'))
    if pos is None or dso is None or dss is None or pos + 8 > len(buf):
        return None
    end = max(4 + struct.unpack_from('<I', buf, 0)[0], dso + dss)
    end = min(end, len(buf))
    data = bytearray(buf[:end])
    if pos + 8 <= end:
        data[pos:pos + 8] = bytes(8)
    return xxh64(bytes(data))


def rehash(buf: bytes) -> bytes:
    """buf with its content_hash recomputed, so that only the structural checks can reject it."""
    pos = root_field_pos(buf, 'content_hash')
    h = content_hash(buf)
    if pos is None or h is None:
        return buf
    return put(buf, pos, '<Q', h)


def put(buf: bytes, pos: int, fmt: str, value: int) -> bytes:
    b = bytearray(buf)
    struct.pack_into(fmt, b, pos, value)
    return bytes(b)


# ---------------------------------------------------------------------------
# Cases.

def make_cases(good: bytes, workdir: str, seed: int) -> List[Case]:
    rng = random.Random(seed)
    n = len(good)
    fb_size = struct.unpack_from('<I', good, 0)[0] if n >= 4 else 0
    fb_end = min(n, 4 + fb_size)
    dso_pos = root_field_pos(good, 'data_segment_offset')
    dss_pos = root_field_pos(good, 'data_segment_size')
    dso = read_u64(good, dso_pos)
    dss = read_u64(good, dss_pos)
    if dso is not None and dss is not None and dso + dss <= n:
        data_start, data_end = dso, dso + dss
    else:
        data_start, data_end = (fb_end + 63) // 64 * 64, n
        dso = dss = None
    log('bundle: %d bytes; FlatBuffer [4, %d); data segment [%d, %d)%s'
        % (n, fb_end, data_start, data_end, '' if dso is not None else ' (estimated)'))

    cases: List[Case] = []

    # Truncations.
    lengths = {0, 1, 2, 3, 4, 5, 7, 8, 9, 11, 12, 13, 16, 24, 32, 63, 64,
               fb_end - 1, fb_end, fb_end + 1, data_start - 1, data_start, data_start + 1,
               data_end - 1, n - 64, n - 2, n - 1}
    for i in range(1, 11):
        lengths.add(4 + (fb_end - 4) * i // 11)                                # through the FlatBuffer
    for i in range(1, 13):
        lengths.add(data_start + (data_end - data_start) * i // 13)            # through the data segment
    for length in sorted(l for l in lengths if 0 <= l < n):
        cases.append(Case('truncated', 'truncated to %d bytes' % length, good[:length],
                          must_fail=length < data_end))

    # Single-byte flips: half in the header/FlatBuffer, half anywhere.
    for i in range(300):
        pos = rng.randrange(0, fb_end) if i % 2 == 0 else rng.randrange(0, n)
        b = bytearray(good)
        b[pos] ^= rng.randrange(1, 256)
        cases.append(Case('byte-flip', 'byte %d: 0x%02x -> 0x%02x' % (pos, good[pos], b[pos]), bytes(b)))

    # Multi-byte corruptions.
    extremes = [0, 1, 0x7F, 0x80, 0xFF, 0x7FFF, 0xFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, n, n * 2]
    for i in range(100):
        kind = i % 5
        b = bytearray(good)
        if kind == 0:     # a run of random bytes
            pos = rng.randrange(0, n)
            ln = rng.randrange(2, 33)
            b[pos:pos + ln] = bytes(rng.randrange(256) for _ in range(len(b[pos:pos + ln])))
            label = 'random run of %d bytes at %d' % (ln, pos)
        elif kind == 1:   # an aligned u32 in the FlatBuffer set to an extreme value
            pos = rng.randrange(0, max(1, (fb_end - 4) // 4)) * 4
            val = rng.choice(extremes)
            struct.pack_into('<I', b, pos, val & 0xFFFFFFFF)
            label = 'u32 at %d = 0x%x' % (pos, val)
        elif kind == 2:   # zeroed range
            pos = rng.randrange(0, n)
            ln = rng.randrange(4, 257)
            b[pos:pos + ln] = bytes(len(b[pos:pos + ln]))
            label = 'zeroed %d bytes at %d' % (ln, pos)
        elif kind == 3:   # bytes removed (everything after shifts)
            pos = rng.randrange(0, n - 1)
            ln = rng.randrange(1, 65)
            del b[pos:pos + ln]
            label = 'removed %d bytes at %d' % (ln, pos)
        else:             # bytes inserted
            pos = rng.randrange(0, n)
            ln = rng.randrange(1, 65)
            b[pos:pos] = bytes(rng.randrange(256) for _ in range(ln))
            label = 'inserted %d bytes at %d' % (ln, pos)
        cases.append(Case('multi-byte', label, bytes(b)))

    # Targeted header rewrites (certainly invalid).
    cases.append(Case('header', 'size prefix = 0xFFFFFFFF', put(good, 0, '<I', 0xFFFFFFFF), must_fail=True))
    cases.append(Case('header', 'size prefix = file size', put(good, 0, '<I', n), must_fail=True))
    cases.append(Case('header', 'size prefix = 0', put(good, 0, '<I', 0), must_fail=True))
    cases.append(Case('header', 'root offset = 0xFFFFFFF0', put(good, 4, '<I', 0xFFFFFFF0), must_fail=True))
    cases.append(Case('header', 'identifier "KILM"', good[:8] + b'KILM' + good[12:], must_fail=True))
    hash_pos = root_field_pos(good, 'content_hash')
    hash_ok = hash_pos is not None and content_hash(good) == read_u64(good, hash_pos)
    if hash_pos is not None and not hash_ok:
        log('note: content_hash does not match this script\'s XXH64; no re-hashed cases')
    if dso_pos is not None and dss_pos is not None and dso is not None:
        for label, pos, val in [
                ('data_segment_offset past the end of the file', dso_pos, (n + 64 + 63) // 64 * 64),
                ('data_segment_offset = 2^64 - 64', dso_pos, 2 ** 64 - 64),
                ('data_segment_offset = 2^63', dso_pos, 2 ** 63),
                ('data_segment_size = file size', dss_pos, n),
                ('data_segment_size + 64', dss_pos, dss + 64),
                ('data_segment_size = 2^64 - 1', dss_pos, 2 ** 64 - 1),
                ('data_segment_offset + 64 (segment runs past the end)', dso_pos, dso + 64)]:
            bad = put(good, pos, '<Q', val)
            cases.append(Case('header', label, bad, must_fail=True))
            if hash_ok:  # the same with a valid content_hash: the structural checks must catch it
                cases.append(Case('header', label + ', re-hashed', rehash(bad), must_fail=True))
    else:
        log('note: data_segment_offset/size not located; skipping their rewrites')
    vmaj = root_field_pos(good, 'version_major')
    if vmaj is not None:
        major = struct.unpack_from('<H', good, vmaj)[0]
        cases.append(Case('header', 'version_major %d -> %d' % (major, major + 1),
                          put(good, vmaj, '<H', major + 1), must_fail=True))
        cases.append(Case('header', 'version_major -> 0xFFFF', put(good, vmaj, '<H', 0xFFFF), must_fail=True))
        if hash_ok:
            cases.append(Case('header', 'version_major %d -> %d, re-hashed' % (major, major + 1),
                              rehash(put(good, vmaj, '<H', major + 1)), must_fail=True))
    if hash_ok:
        cases.append(Case('header', 'content_hash + 1', put(good, hash_pos, '<Q', (read_u64(good, hash_pos) + 1) & _M64),
                          must_fail=True))
        cases.append(Case('header', 'content_hash = 0', put(good, hash_pos, '<Q', 0), must_fail=True))

    # Not a bundle at all.
    cases.append(Case('not-a-bundle', 'empty file', b'', must_fail=True))
    cases.append(Case('not-a-bundle', 'text file',
                      b'This is not a Kiln bundle.\nJust some text, KILN KILN KILN.\n' * 20, must_fail=True))
    rnd = random.Random(seed + 1)
    for size in (1, 12, 100, 4096, 65536):
        cases.append(Case('not-a-bundle', '%d random bytes' % size,
                          bytes(rnd.randrange(256) for _ in range(size)), must_fail=True))
    cases.append(Case('not-a-bundle', 'valid first 12 bytes + 4 KiB random',
                      good[:12] + bytes(rnd.randrange(256) for _ in range(4096)), must_fail=True))
    cases.append(Case('not-a-bundle', 'valid FlatBuffer, data segment replaced by random bytes',
                      good[:data_start] + bytes(rnd.randrange(256) for _ in range(n - data_start))))
    cases.append(Case('not-a-bundle', 'two bundles concatenated', good + good))
    elf = '/bin/true'
    if os.path.isfile(elf):
        cases.append(Case('not-a-bundle', 'ELF executable %s' % elf, path=elf, must_fail=True))
    cases.append(Case('not-a-bundle', 'missing path', path=os.path.join(workdir, 'does-not-exist.kiln'),
                      must_fail=True))
    d = os.path.join(workdir, 'a-directory.kiln')
    os.makedirs(d, exist_ok=True)
    cases.append(Case('not-a-bundle', 'directory', path=d, must_fail=True))
    return cases


# ---------------------------------------------------------------------------
# Running.

def run_case(idx: int, case: Case, kiln: str, input_path: str, casedir: str, timeout: float) -> Result:
    if case.data is not None:
        path = os.path.join(casedir, 'case%04d.kiln' % idx)
        with open(path, 'wb') as f:
            f.write(case.data)
    else:
        path = case.path
    outdir = os.path.join(casedir, 'out%04d' % idx)
    os.makedirs(outdir, exist_ok=True)
    inspect_cmd = [kiln, 'inspect', path] + (['--json'] if idx % 2 else [])
    commands = {
        'run': [kiln, 'run', path, '--input', 'input=' + input_path, '--output-dir', outdir],
        'inspect': inspect_cmd,
    }
    violations: List[str] = []
    outcomes: Dict[str, str] = {}
    for what, cmd in commands.items():
        try:
            proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
        except subprocess.TimeoutExpired:
            violations.append('%s: timed out after %g s' % (what, timeout))
            outcomes[what] = 'timeout'
            continue
        err = proc.stderr.decode('utf-8', 'replace')
        rc = proc.returncode
        if rc < 0 or rc > 128:
            sig = -rc if rc < 0 else rc - 128
            violations.append('%s: killed by signal %d; stderr: %s' % (what, sig, err.strip()[-500:]))
            outcomes[what] = 'signal'
        elif rc == 0:
            outcomes[what] = 'ok'
            if case.must_fail:
                violations.append('%s: accepted a file that must be rejected' % what)
            elif what == 'run' and not os.path.isfile(os.path.join(outdir, 'output.npy')):
                violations.append('run: exit 0 but no output.npy written')
            elif what == 'inspect' and not proc.stdout.strip():
                violations.append('inspect: exit 0 but printed nothing')
        elif rc == 1:
            outcomes[what] = 'error'
            if 'kiln: error:' not in err:
                violations.append('%s: exit 1 without a "kiln: error:" message; stderr: %s'
                                  % (what, err.strip()[-500:]))
        else:
            outcomes[what] = 'exit%d' % rc
            violations.append('%s: unexpected exit status %d; stderr: %s' % (what, rc, err.strip()[-500:]))
    shutil.rmtree(outdir, ignore_errors=True)
    if case.data is not None:
        if violations:
            keep = os.path.join(os.path.dirname(casedir), 'violations')
            os.makedirs(keep, exist_ok=True)
            shutil.move(path, os.path.join(keep, 'case%04d.kiln' % idx))
        else:
            os.remove(path)
    return Result(case, violations, outcomes)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument('--kilnc', required=True)
    parser.add_argument('--kiln', required=True)
    parser.add_argument('--workdir', required=True)
    parser.add_argument('--timeout', type=float, default=10.0, help='seconds per kiln invocation (10)')
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument('--jobs', type=int, default=2)
    args = parser.parse_args(argv)

    for what in ('kilnc', 'kiln'):
        p = getattr(args, what)
        if not (os.path.isfile(p) and os.access(p, os.X_OK)):
            log('error: %s not found or not executable: %s' % (what, p))
            return 2
    kiln = os.path.abspath(args.kiln)
    workdir = os.path.abspath(args.workdir)
    if os.path.isdir(workdir):
        shutil.rmtree(workdir)
    os.makedirs(workdir)

    bundle, input_path = make_bundle(os.path.abspath(args.kilnc), workdir)
    with open(bundle, 'rb') as f:
        good = f.read()

    # The unmodified bundle must work.
    casedir = os.path.join(workdir, 'cases')
    os.makedirs(casedir)
    base = run_case(0, Case('baseline', 'unmodified bundle', good), kiln, input_path, casedir, args.timeout)
    if base.violations or base.outcomes != {'run': 'ok', 'inspect': 'ok'}:
        log('FAIL: the unmodified bundle does not work: %s %s' % (base.outcomes, base.violations))
        return 1

    cases = make_cases(good, workdir, args.seed)
    log('%d cases, 2 kiln invocations each, %d jobs' % (len(cases), args.jobs))
    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(lambda ic: run_case(ic[0] + 1, ic[1], kiln, input_path, casedir, args.timeout),
                                enumerate(cases)))

    stats: Dict[str, Dict[str, int]] = {}
    nviol = 0
    for i, r in enumerate(results):
        s = stats.setdefault(r.case.category, {'cases': 0, 'run ok': 0, 'run rejected': 0,
                                               'inspect ok': 0, 'inspect rejected': 0, 'violations': 0})
        s['cases'] += 1
        s['run ok' if r.outcomes.get('run') == 'ok' else 'run rejected'] += r.outcomes.get('run') in ('ok', 'error')
        s['inspect ok' if r.outcomes.get('inspect') == 'ok' else 'inspect rejected'] += \
            r.outcomes.get('inspect') in ('ok', 'error')
        if r.violations:
            s['violations'] += 1
            nviol += 1
            log('VIOLATION case%04d [%s] %s:' % (i + 1, r.case.category, r.case.label))
            for v in r.violations:
                log('    ' + v)
    log('')
    log('%-14s %6s %8s %13s %11s %17s %10s' % ('category', 'cases', 'run ok', 'run rejected', 'inspect ok',
                                               'inspect rejected', 'violations'))
    for cat, s in stats.items():
        log('%-14s %6d %8d %13d %11d %17d %10d' % (cat, s['cases'], s['run ok'], s['run rejected'],
                                                   s['inspect ok'], s['inspect rejected'], s['violations']))
    log('%d cases in %.1f s; %d with violations: %s' % (len(results), time.monotonic() - start, nviol,
                                                        'FAIL' if nviol else 'PASS'))
    if nviol:
        log('offending files kept in %s' % os.path.join(workdir, 'violations'))
    return 1 if nviol else 0


if __name__ == '__main__':
    sys.exit(main())
