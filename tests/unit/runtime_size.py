#!/usr/bin/python3
"""Checks libkiln.so stays small and depends on libc only.

  runtime_size.py PATH/libkiln.so

Strips a copy, prints `libkiln stripped size: N bytes`, fails if it is over
300 kB, if `readelf -d` lists a NEEDED library other than libc/libm/libdl/
libpthread/ld-linux, or if `nm -D --undefined-only` shows C++ runtime symbols.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

LIMIT = 300 * 1000
ALLOWED_NEEDED = re.compile(r'^(libc|libm|libdl|libpthread)\.so(\.\d+)*$|^ld-linux[-\w.]*\.so(\.\d+)*$')
# __cxa_finalize comes from libc (crtbeginS.o references it in every shared
# library, C ones included); any other __cxa/__gxx/_Z symbol means libstdc++.
CXX_SYMBOL = re.compile(r'^(_Z|__cxa|__gxx)')
LIBC_CXA = {'__cxa_finalize', '__cxa_atexit'}


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    lib = sys.argv[1]
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, 'libkiln.so')
        shutil.copyfile(lib, copy)
        strip = shutil.which('strip') or shutil.which('objcopy')
        args = [strip, copy] if strip.endswith('strip') else [strip, '--strip-all', copy]
        subprocess.run(args, check=True)
        size = os.path.getsize(copy)
    print('libkiln stripped size: %d bytes' % size)
    if size > LIMIT:
        print('FAIL: larger than %d bytes' % LIMIT)
        ok = False

    dyn = subprocess.run(['readelf', '-d', lib], check=True, capture_output=True, text=True).stdout
    needed = re.findall(r'\(NEEDED\)\s+Shared library: \[([^\]]+)\]', dyn)
    print('NEEDED: %s' % ', '.join(needed))
    for name in needed:
        if not ALLOWED_NEEDED.match(name):
            print('FAIL: depends on %s (only libc-family libraries are allowed)' % name)
            ok = False

    undefined = subprocess.run(['nm', '-D', '--undefined-only', lib], check=True,
                               capture_output=True, text=True).stdout.split('\n')
    for line in undefined:
        parts = line.split()
        if not parts:
            continue
        symbol = parts[-1].split('@')[0]
        if CXX_SYMBOL.match(symbol) and symbol not in LIBC_CXA:
            print('FAIL: C++ runtime symbol %s' % symbol)
            ok = False

    exported = subprocess.run(['nm', '-D', '--defined-only', lib], check=True,
                              capture_output=True, text=True).stdout.split('\n')
    for line in exported:
        parts = line.split()
        if len(parts) >= 3 and not parts[-1].startswith('kiln_'):
            print('FAIL: exports %s (only kiln_* may be exported)' % parts[-1])
            ok = False
    print('PASS' if ok else 'FAIL')
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
