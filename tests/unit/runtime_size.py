#!/usr/bin/python3
"""Checks libkiln.so stays small and depends on libc only.

  runtime_size.py PATH/libkiln.so

Strips a copy, prints `libkiln stripped size: N bytes`, fails if it is over
300 kB, if `readelf -d` lists a NEEDED library other than libc/libm/libdl/
libpthread/ld-linux, or if `nm -D --undefined-only` shows C++ runtime symbols.
The rules (LIMIT and the *_problems functions) are also those of the cross
builds' test, tests/cross_builds/runtime_builds.py, for every target.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
from typing import Iterable, List

LIMIT = 300 * 1000
ALLOWED_NEEDED = re.compile(r'^(libc|libm|libdl|libpthread)\.so(\.\d+)*$|^ld-linux[-\w.]*\.so(\.\d+)*$')
# A Mach-O libkiln (Apple systems) may only load libSystem (libc, libm,
# libpthread and libdl in one).
ALLOWED_DYLIBS = re.compile(r'^/usr/lib/libSystem\.B\.dylib$')
# __cxa_finalize comes from libc (crtbeginS.o references it in every shared
# library, C ones included); any other __cxa/__gxx/_Z symbol means libstdc++.
CXX_SYMBOL = re.compile(r'^(_Z|__cxa|__gxx)')
LIBC_CXA = {'__cxa_finalize', '__cxa_atexit'}


def needed_problems(needed: Iterable[str], allowed=ALLOWED_NEEDED) -> List[str]:
    """The libraries in `needed` beyond the C library's."""
    return ['depends on %s (only libc-family libraries are allowed)' % name
            for name in needed if not allowed.match(name)]


def cxx_symbol_problems(undefined: Iterable[str]) -> List[str]:
    """The C++ runtime symbols among `undefined` (names without version suffixes)."""
    return ['C++ runtime symbol %s' % name for name in undefined
            if CXX_SYMBOL.match(name) and name not in LIBC_CXA]


def export_problems(exported: Iterable[str]) -> List[str]:
    """The exported names that are not kiln_* API functions."""
    return ['exports %s (only kiln_* may be exported)' % name
            for name in exported if not name.startswith('kiln_')]


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    lib = sys.argv[1]
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, 'libkiln.so')
        shutil.copyfile(lib, copy)
        strip = shutil.which('strip') or shutil.which('objcopy')
        args = [strip, copy] if strip.endswith('strip') else [strip, '--strip-all', copy]
        subprocess.run(args, check=True)
        size = os.path.getsize(copy)
    print('libkiln stripped size: %d bytes' % size)
    if size > LIMIT:
        problems.append('larger than %d bytes' % LIMIT)

    dyn = subprocess.run(['readelf', '-d', lib], check=True, capture_output=True, text=True).stdout
    needed = re.findall(r'\(NEEDED\)\s+Shared library: \[([^\]]+)\]', dyn)
    print('NEEDED: %s' % ', '.join(needed))
    problems += needed_problems(needed)

    def nm_names(*flags):
        out = subprocess.run(['nm', '-D'] + list(flags) + [lib], check=True,
                             capture_output=True, text=True).stdout
        return [line.split()[-1].split('@')[0] for line in out.split('\n') if line.split()]

    problems += cxx_symbol_problems(nm_names('--undefined-only'))
    out = subprocess.run(['nm', '-D', '--defined-only', lib], check=True,
                         capture_output=True, text=True).stdout
    problems += export_problems(line.split()[-1] for line in out.split('\n') if len(line.split()) >= 3)
    for problem in problems:
        print('FAIL: ' + problem)
    print('FAIL' if problems else 'PASS')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
