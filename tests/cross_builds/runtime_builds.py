#!/usr/bin/python3
"""Cross builds of libkiln: every target with a toolchain, core and with Vulkan.

Run with Debian's /usr/bin/python3 (python3-numpy).

  runtime_builds.py --source-root DIR --build-root DIR --kilnc PATH --kiln PATH
                    [--jobs 2] [--meson meson] [--only TARGET,...]

For each target in TARGETS (cross files in tools/cross, docs/cross-builds.md)
and each variant (core: -Dvulkan=disabled; vulkan: -Dvulkan=enabled), it
configures BUILD_ROOT/<target>-<variant> (again only when its cross files,
options or compilers changed), builds it with ninja (incremental) and checks:
  1. libkiln_runtime.a and the shared library (libkiln.so.*, libkiln.*.dylib)
     are for the target's object format and architecture (Mach-O: platform);
     the shared library, stripped, fits the 300 kB budget of
     tests/unit/runtime_size.py (the archive, stripped of debug information,
     is reported: it also carries its symbol table and relocations);
  2. the shared library loads only the C library (ELF NEEDED: libc, libm,
     libdl, libpthread, ld-linux; Mach-O: libSystem), imports no C++ runtime
     symbol and exports only kiln_*; the archive's external symbols (undefined
     and defined by no member) include no C++ runtime symbol either;
  3. the kiln tool, where it runs: the demo model compiled by KILNC runs
     (natively or under qemu-user; AArch64 and ARMv7 bundles for those) and its output matches KILN's (the host's)
     within rtol 1e-4, atol 1e-5; the musl kiln is static; a kernel_loader=none kiln refuses
     an ELF kernel library with the message naming --kernels=static.
Then it prints the table of stripped sizes, target x {core, vulkan} x
{static, shared}.

Toolchains: Debian's cross g++ and qemu-user (tools/setup.sh), zig and a
meson that knows zig's linker, from .venv (tools/setup.sh, pinned in
tools/requirements-tools.txt), and the Android NDK, optional: found through
ANDROID_NDK_HOME, ANDROID_NDK_ROOT or a usual install path; without one the
Android rows say "skipped". A missing toolchain that tools/setup.sh installs
is a failure, never a skip.

Exit status: 0 when everything passed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import dataclasses
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Optional, Sequence, Tuple

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'e2e'))
sys.path.insert(0, os.path.join(HERE, '..', 'unit'))

import kiln_e2e  # noqa: E402  (run_tool, compare_dirs, log)
import runtime_size  # noqa: E402  (the size budget and the dependency rules)

log = kiln_e2e.log
BUNDLE_TARGETS = {  # the demo compiled for each architecture's kiln
    'aarch64': 'llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72',
    'armv7': 'llvm -mtriple=armv7a-linux-gnueabihf -mcpu=cortex-a7',
}
RTOL = 1e-4
ATOL = 1e-5
ELF_MACHINES = {'x86_64': 62, 'aarch64': 183, 'arm': 40}
# Symbols Mach-O linkers define in every dylib (zig's exports them).
MACHO_LINKER_SYMBOLS = {'_mh_dylib_header', '__dso_handle'}
LLVM_TOOLS = ('llvm-strip', 'llvm-readobj', 'llvm-nm', 'llvm-ar', 'llvm-objdump')
NDK_PATHS = ('/opt/android-ndk', '/usr/lib/android-ndk', '/usr/local/lib/android/sdk/ndk-bundle',
             '~/Android/Sdk/ndk/*', '/usr/local/lib/android/sdk/ndk/*')


@dataclasses.dataclass
class Target:
    name: str
    cross_file: str                    # in tools/cross; '' for a native build
    toolchain: str                     # host | gcc | zig | ndk
    arch: str                          # x86_64 | aarch64 | arm
    macho_platform: str = ''           # Mach-O targets: macos | ios
    variants: Tuple[str, ...] = ('core', 'vulkan')
    shared: bool = True                # False: no linker for the target (static library only)
    options: Tuple[str, ...] = ()
    kiln: str = ''                     # what the kiln tool does: run | no_loader ('' = not built)
    runner: Tuple[str, ...] = ()       # command prefix that runs the target's programs
    static_kiln: bool = False          # kiln must be statically linked


QEMU_A72 = ('qemu-aarch64', '-cpu', 'cortex-a72')
TARGETS = [
    Target('x86_64-linux-gnu', '', 'host', 'x86_64'),
    Target('x86_64-linux-gnu, kernel_loader=none', '', 'host', 'x86_64', variants=('core',),
           options=('-Dkernel_loader=none',), kiln='no_loader'),
    Target('aarch64-linux-gnu', 'aarch64-linux-gnu.ini', 'gcc', 'aarch64', kiln='run',
           runner=QEMU_A72 + ('-L', '/usr/aarch64-linux-gnu')),
    Target('armv7-linux-gnueabihf', 'arm-linux-gnueabihf.ini', 'gcc', 'arm', kiln='run',
           runner=('qemu-arm', '-L', '/usr/arm-linux-gnueabihf')),
    Target('x86_64-linux-musl', 'x86_64-linux-musl.ini', 'zig', 'x86_64', kiln='run', static_kiln=True),
    Target('aarch64-linux-musl', 'aarch64-linux-musl.ini', 'zig', 'aarch64', kiln='run',
           runner=QEMU_A72, static_kiln=True),
    Target('aarch64-macos', 'aarch64-macos.ini', 'zig', 'aarch64', macho_platform='macos'),
    Target('aarch64-ios', 'aarch64-ios.ini', 'zig', 'aarch64', macho_platform='ios', shared=False),
    Target('android-arm64-v8a', 'android-arm64-v8a.ini', 'ndk', 'aarch64'),
    Target('android-armeabi-v7a', 'android-armeabi-v7a.ini', 'ndk', 'arm'),
    Target('android-x86_64', 'android-x86_64.ini', 'ndk', 'x86_64'),
]


class Checks:
    """PASS/FAIL lines, the size table's cells and the timings."""

    def __init__(self):
        self.failed: List[str] = []
        self.count = 0
        self.cells: Dict[Tuple[str, str, str], str] = {}
        self.notes: Dict[str, str] = {}
        self.timings: List[Tuple[str, float]] = []

    def check(self, ok: bool, what: str, detail: str = '') -> bool:
        log('CHECK %s: %s%s' % (what, 'PASS' if ok else 'FAIL', (' (' + detail + ')') if detail else ''))
        self.count += 1
        if not ok:
            self.failed.append(what)
        return ok


def run(cmd: Sequence[str], timeout: float = 600, quiet: bool = False):
    """Runs a command; logs it and its output unless quiet; returns CompletedProcess."""
    if not quiet:
        return kiln_e2e.run_tool(os.path.basename(cmd[0]), cmd, timeout=timeout)
    return subprocess.run(list(cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)


def text(cmd: Sequence[str]) -> str:
    proc = run(cmd, quiet=True)
    if proc.returncode != 0:
        raise RuntimeError('%s failed: %s' % (' '.join(cmd), proc.stderr.decode('utf-8', 'replace')))
    return proc.stdout.decode('utf-8', 'replace')


def find_llvm_tool(name: str) -> Optional[str]:
    return shutil.which(name + '-15') or shutil.which(os.path.join('/usr/lib/llvm-15/bin', name))


def find_ndk() -> str:
    """The Android NDK's root ('' when there is none)."""
    candidates = [os.environ.get(v, '') for v in ('ANDROID_NDK_HOME', 'ANDROID_NDK_ROOT', 'ANDROID_NDK')]
    for pattern in NDK_PATHS:
        candidates += sorted(glob.glob(os.path.expanduser(pattern)), reverse=True)
    for path in candidates:
        if path and os.path.isfile(os.path.join(path, 'toolchains', 'llvm', 'prebuilt', 'linux-x86_64', 'bin', 'clang')):
            return path
    return ''


class Toolchains:
    """What each kind of target needs, and why it is missing."""

    def __init__(self, args):
        self.source = args.source_root
        self.venv_meson = os.path.join(self.source, '.venv', 'bin', 'meson')
        self.zig = os.path.join(self.source, '.venv', 'zig', 'zig')
        self.system_meson = args.meson or shutil.which('meson') or ''
        self.ndk = find_ndk()
        self.ndk_file = os.path.join(args.build_root, 'android-ndk.ini')

    def meson(self, target: Target) -> str:
        return self.venv_meson if target.toolchain == 'zig' else self.system_meson

    def cross_files(self, target: Target) -> List[str]:
        if not target.cross_file:
            return []
        files = [os.path.join(self.source, 'tools', 'cross', target.cross_file)]
        if target.toolchain == 'ndk':
            files.append(self.ndk_file)  # [constants] ndk = the NDK found
        return files

    def missing(self, target: Target) -> List[str]:
        """Missing tools (setup.sh installs them: a failure); [] when all are there."""
        need = [] if self.system_meson else ['meson']
        if target.toolchain == 'gcc':
            prefix = target.cross_file[:-len('.ini')]
            need += [p for p in (prefix + '-gcc', prefix + '-g++') if not shutil.which(p)]
        if target.toolchain == 'zig':
            need += [p for p in (self.zig, self.venv_meson) if not os.path.isfile(p)]
        if target.runner and not shutil.which(target.runner[0]):
            need.append(target.runner[0])
        if len(target.runner) > 2 and target.runner[-2] == '-L' and not os.path.isdir(target.runner[-1]):
            need.append(target.runner[-1])
        return need

    def versions(self, target: Target) -> str:
        """The compiler and meson versions, part of a build directory's stamp."""
        if target.toolchain == 'zig':
            return text([self.zig, 'version']).strip() + ' ' + text([self.venv_meson, '--version']).strip()
        if target.toolchain == 'ndk':
            return self.ndk
        return text([self.system_meson, '--version']).strip()


# ---------------------------------------------------------------------------
# Building.

def build(target: Target, variant: str, tools: Toolchains, args, checks: Checks) -> str:
    """Configures (when needed) and builds one variant; returns its build directory, '' on failure."""
    build_dir = os.path.join(args.build_root, re.sub(r'[^\w.-]+', '-', target.name) + '-' + variant)
    label = '%s (%s)' % (target.name, variant)
    kiln = target.kiln and variant == target.variants[-1]  # the tool only where it is checked
    options = ['-Dcompiler=disabled', '-Dtests=false', '-Dtools=' + ('true' if kiln else 'false'),
               '-Dvulkan=' + ('enabled' if variant == 'vulkan' else 'disabled')] + list(target.options)
    cross_files = tools.cross_files(target)
    stamp = {'options': options, 'versions': tools.versions(target),
             'cross_files': [open(f).read() for f in cross_files]}
    stamp_path = os.path.join(build_dir, 'kiln-cross-stamp.json')
    try:
        with open(stamp_path) as f:
            configured = json.load(f) == stamp
    except (OSError, ValueError):
        configured = False
    if not configured:
        shutil.rmtree(build_dir, ignore_errors=True)
        cmd = [tools.meson(target), 'setup', build_dir, args.source_root] + options
        for f in cross_files:
            cmd += ['--cross-file', f]
        t0 = time.monotonic()
        proc = run(cmd, timeout=600)
        checks.timings.append(('meson setup ' + label, time.monotonic() - t0))
        if not checks.check(proc.returncode == 0, label + ': meson setup'):
            return ''
        with open(stamp_path, 'w') as f:
            json.dump(stamp, f)
    # iOS: nothing links, so only the static library is built.
    goals = [] if target.shared else ['runtime/libkiln_runtime.a']
    t0 = time.monotonic()
    proc = run(['ninja', '-C', build_dir, '-j', str(args.jobs)] + goals, timeout=1500, quiet=True)
    checks.timings.append(('ninja ' + label, time.monotonic() - t0))
    if proc.returncode != 0:
        kiln_e2e._show('ninja', proc.stdout)
    if not checks.check(proc.returncode == 0, label + ': ninja', '%.1f s' % (time.monotonic() - t0)):
        return ''
    return build_dir


# ---------------------------------------------------------------------------
# Libraries.

def symbol_names(llvm, path: str, flags: Sequence[str], macho: bool) -> List[str]:
    names = []
    for line in text([llvm['llvm-nm'], '--no-sort'] + list(flags) + [path]).split('\n'):
        parts = line.split()
        if not parts or line.endswith(':'):
            continue  # blank, or an archive member's header
        name = parts[-1].split('@')[0]
        names.append(name[1:] if macho and name.startswith('_') else name)  # Mach-O: C names get a '_'
    return names


def needed_libraries(llvm, path: str, extra_flags: Sequence[str] = ()) -> Tuple[List[str], str]:
    """The libraries `path` loads (ELF NEEDED, Mach-O load commands but its own name), and the listing."""
    listing = text([llvm['llvm-readobj'], '--needed-libs'] + list(extra_flags) + [path])
    found = re.search(r'^NeededLibraries \[\n(.*?)^\]', listing, re.S | re.M)
    own_name = '@rpath/' + os.path.basename(path)  # a dylib's LC_ID_DYLIB is listed too
    return [n for n in (found.group(1).split() if found else []) if n != own_name], listing


def check_format(llvm, target: Target, path: str, label: str, checks: Checks) -> None:
    """Every object in `path` is of the target's format and architecture (and Mach-O platform)."""
    headers = text([llvm['llvm-readobj'], '--file-headers', path])
    formats = sorted(set(re.findall(r'^Format: (.*)$', headers, re.M)))
    arches = sorted(set(re.findall(r'^Arch: (.*)$', headers, re.M)))
    want_format = 'Mach-O arm64' if target.macho_platform else \
        {'x86_64': 'elf64-x86-64', 'aarch64': 'elf64-littleaarch64', 'arm': 'elf32-littlearm'}[target.arch]
    ok = formats == [want_format] and arches == [target.arch]
    detail = 'format %s, arch %s' % ('/'.join(formats), '/'.join(arches))
    if ok and target.macho_platform:
        platforms = sorted(set(re.findall(r'^\s*platform (\w+)$',
                                          text([llvm['llvm-objdump'], '--macho', '--private-headers', path]), re.M)))
        ok = platforms == [target.macho_platform]
        detail += ', platform ' + '/'.join(platforms)
    checks.check(ok, '%s: %s is %s %s' % (label, os.path.basename(path), want_format, target.arch), detail)


def stripped_size(llvm, path: str, strip_flags: Sequence[str], materialize_thin: bool) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, os.path.basename(path))
        with open(path, 'rb') as f:
            thin = f.read(8) == b'!<thin>\n'
        if thin and materialize_thin:  # meson's uninstalled archives only name their members
            members = text([llvm['llvm-ar'], 't', path]).split()
            subprocess.run([llvm['llvm-ar'], 'qcs', copy] + members, check=True)
        else:
            shutil.copyfile(path, copy)
        subprocess.run([llvm['llvm-strip']] + list(strip_flags) + [copy], check=True)
        return os.path.getsize(copy)


def check_libraries(target: Target, variant: str, build_dir: str, llvm, checks: Checks) -> None:
    label = '%s (%s)' % (target.name, variant)
    macho = bool(target.macho_platform)
    archive = os.path.join(build_dir, 'runtime', 'libkiln_runtime.a')
    check_format(llvm, target, archive, label, checks)
    size = stripped_size(llvm, archive, ['--strip-debug'], True)
    checks.cells[(target.name, variant, 'static')] = str(size)
    # The budget is the shipped library's (below); an archive also carries
    # its symbol table and relocations, so its size is reported only.
    external = set(symbol_names(llvm, archive, ['-u'], macho)) - set(symbol_names(llvm, archive, ['--defined-only'], macho))
    problems = runtime_size.cxx_symbol_problems(sorted(external))
    checks.check(not problems, '%s: libkiln_runtime.a needs only the C library' % label,
                 '; '.join(problems) or '%d external symbols' % len(external))
    if not target.shared:
        checks.cells[(target.name, variant, 'shared')] = 'n/a'
        return
    shared = [p for p in glob.glob(os.path.join(build_dir, 'runtime', 'libkiln*.dylib' if macho else 'libkiln.so*'))
              if os.path.isfile(p) and not os.path.islink(p)]
    if not checks.check(len(shared) == 1, '%s: one shared library' % label, ', '.join(shared)):
        return
    lib = shared[0]
    check_format(llvm, target, lib, label, checks)
    size = stripped_size(llvm, lib, [], False)
    checks.cells[(target.name, variant, 'shared')] = str(size)
    checks.check(size <= runtime_size.LIMIT, '%s: %s stripped: %d bytes <= %d'
                 % (label, os.path.basename(lib), size, runtime_size.LIMIT))
    needed, _ = needed_libraries(llvm, lib)
    problems = runtime_size.needed_problems(
        needed, runtime_size.ALLOWED_DYLIBS if macho else runtime_size.ALLOWED_NEEDED)
    problems += runtime_size.cxx_symbol_problems(symbol_names(llvm, lib, ['-u'] if macho else ['-D', '-u'], macho))
    exported = symbol_names(llvm, lib, ['-gU'] if macho else ['-D', '--defined-only'], macho)
    problems += runtime_size.export_problems(n for n in exported if n not in MACHO_LINKER_SYMBOLS or not macho)
    checks.check(not problems, '%s: %s loads only %s, imports no C++ runtime, exports only kiln_*'
                 % (label, os.path.basename(lib), ', '.join(needed) or 'nothing'), '; '.join(problems))


# ---------------------------------------------------------------------------
# The kiln tool.

class Demo:
    """The demo model compiled for x86-64 and AArch64, and the host kiln's output."""

    def __init__(self, args, checks: Checks):
        self.args = args
        self.workdir = os.path.join(args.build_root, 'demo')
        shutil.rmtree(self.workdir, ignore_errors=True)
        os.makedirs(self.workdir)
        self.input = 'input=' + os.path.join(args.source_root, 'demo', 'example_triangle.npy')
        self.onnx = os.path.join(args.source_root, 'demo', 'shapes_cnn.onnx')
        self.bundles: Dict[str, str] = {}
        self.reference = os.path.join(self.workdir, 'out-host')
        proc = run([args.kiln, 'run', self.bundle('x86_64'), '--input', self.input, '--output-dir', self.reference])
        checks.check(proc.returncode == 0, 'demo: host kiln run (the reference)')

    def bundle(self, arch: str) -> str:
        if arch not in self.bundles:
            path = os.path.join(self.workdir, 'shapes_cnn.%s.kiln' % arch)
            extra = ['--target=' + BUNDLE_TARGETS[arch]] if arch in BUNDLE_TARGETS else []
            proc = run([self.args.kilnc, self.onnx, '-o', path] + extra, timeout=300)
            self.bundles[arch] = path if proc.returncode == 0 else ''
        return self.bundles[arch]


def check_kiln(target: Target, build_dir: str, demo: Demo, llvm, checks: Checks) -> str:
    """Runs the target's kiln as target.kiln says; returns the table's note."""
    label = target.name + ' kiln'
    kiln = os.path.join(build_dir, 'tools', 'kiln', 'kiln')
    runner = list(target.runner)
    if target.static_kiln:
        needed, listing = needed_libraries(llvm, kiln, ['--program-headers'])
        static = 'PT_INTERP' not in listing and not needed
        checks.check(static, label + ': statically linked (no PT_INTERP, no NEEDED)')
    if target.kiln == 'no_loader':
        out = os.path.join(demo.workdir, 'out-no-loader')
        proc = run([kiln, 'run', demo.bundle('x86_64'), '--input', demo.input, '--output-dir', out])
        stderr = proc.stderr.decode('utf-8', 'replace')
        checks.check(proc.returncode == 1 and 'kernel_loader=none' in stderr and '--kernels=static' in stderr
                     and not glob.glob(os.path.join(out, '*.npy')),
                     label + ': an ELF kernel library is refused (exit 1, names --kernels=static, no output)')
        return 'refuses ELF kernels'
    arch = {'x86_64': 'x86_64', 'arm': 'armv7'}.get(target.arch, 'aarch64')
    for threads in ('1', '2'):
        out = os.path.join(demo.workdir, 'out-%s-%st' % (re.sub(r'\W+', '-', target.name), threads))
        proc = run(runner + [kiln, 'run', demo.bundle(arch), '--input', demo.input, '--output-dir', out,
                             '--threads', threads])
        names = [f[:-4] for f in sorted(os.listdir(demo.reference)) if f.endswith('.npy')]
        same = proc.returncode == 0 and bool(names) and \
            kiln_e2e.compare_dirs(out, demo.reference, names, RTOL, ATOL, label)
        checks.check(same, '%s: demo (%s bundle, %s thread%s) matches the host kiln'
                           % (label, arch, threads, 's' if threads != '1' else ''))
    return 'runs demo (%s)' % ('qemu' if runner else 'native')


# ---------------------------------------------------------------------------
# The table.

def print_table(checks: Checks, skipped: Dict[str, str]) -> None:
    head = ('target', 'core .a', 'core shared', 'vulkan .a', 'vulkan shared', 'kiln')
    rows = []
    for target in TARGETS:
        if target.name in skipped:
            rows.append((target.name, skipped[target.name]))
            continue
        cells = [checks.cells.get((target.name, v, k), '-') if v in target.variants else '-'
                 for v in ('core', 'vulkan') for k in ('static', 'shared')]
        rows.append((target.name, *cells, checks.notes.get(target.name, '-')))
    widths = [max(len(head[i]), *(len(r[i]) for r in rows if len(r) == len(head) or i == 0))
              for i in range(len(head))]
    log('')
    log('Stripped sizes in bytes (budget %d; .a: debug information stripped; shared: libkiln.so or '
        'libkiln.1.dylib, all stripped):' % runtime_size.LIMIT)
    line = '  '.join(h.ljust(w) if i in (0, 5) else h.rjust(w) for i, (h, w) in enumerate(zip(head, widths)))
    log(line.rstrip())
    log('-' * len(line))
    for r in rows:
        if len(r) == 2:
            log(r[0].ljust(widths[0]) + '  ' + r[1])
        else:
            log('  '.join(c.ljust(w) if i in (0, 5) else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip())


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--source-root', required=True)
    parser.add_argument('--build-root', required=True)
    parser.add_argument('--kilnc', required=True)
    parser.add_argument('--kiln', required=True)
    parser.add_argument('--jobs', type=int, default=2)
    parser.add_argument('--meson', default='')
    parser.add_argument('--only', default='', help='comma-separated target names (default: all)')
    args = parser.parse_args(argv)
    args.source_root = os.path.abspath(args.source_root)
    args.build_root = os.path.abspath(args.build_root)
    os.makedirs(args.build_root, exist_ok=True)
    start = time.monotonic()
    checks = Checks()
    tools = Toolchains(args)
    llvm = {name: find_llvm_tool(name) for name in LLVM_TOOLS}
    missing_llvm = [name for name, path in llvm.items() if not path]
    if not checks.check(not missing_llvm, 'LLVM 15 binary tools', 'missing ' + ', '.join(missing_llvm)
                        + ' (apt-get install llvm-15; tools/setup.sh)' if missing_llvm else ''):
        return 1
    if tools.ndk:
        with open(tools.ndk_file, 'w') as f:
            f.write("# Written by runtime_builds.py: the NDK it found.\n[constants]\nndk = '%s'\n" % tools.ndk)
    log('toolchains: zig %s, Android NDK %s' % (
        text([tools.zig, 'version']).strip() if os.path.isfile(tools.zig) else 'missing',
        tools.ndk or 'none (set ANDROID_NDK_HOME)'))
    demo = Demo(args, checks)
    skipped: Dict[str, str] = {}
    only = [n for n in args.only.split(',') if n]
    for target in TARGETS:
        if only and target.name not in only:
            skipped[target.name] = 'not selected (--only)'
            continue
        if target.toolchain == 'ndk' and not tools.ndk:
            skipped[target.name] = 'skipped: no Android NDK (set ANDROID_NDK_HOME)'
            log('SKIP %s: no Android NDK found (ANDROID_NDK_HOME, ANDROID_NDK_ROOT, %s)'
                % (target.name, ', '.join(NDK_PATHS)))
            continue
        missing = tools.missing(target)
        if not checks.check(not missing, target.name + ': toolchain present',
                            'missing ' + ', '.join(missing) + '; run tools/setup.sh' if missing else ''):
            skipped[target.name] = 'FAILED: missing ' + ', '.join(missing)
            continue
        for variant in target.variants:
            build_dir = build(target, variant, tools, args, checks)
            if not build_dir:
                continue
            check_libraries(target, variant, build_dir, llvm, checks)
            if target.kiln and variant == target.variants[-1]:
                checks.notes[target.name] = check_kiln(target, build_dir, demo, llvm, checks)
    print_table(checks, skipped)
    log('')
    for what, seconds in checks.timings:
        log('time %-60s %7.1f s' % (what, seconds))
    log('time %-60s %7.1f s' % ('whole test', time.monotonic() - start))
    log('%d checks, %d failed' % (checks.count, len(checks.failed)))
    for what in checks.failed:
        log('FAILED: ' + what)
    log('runtime_cross_builds: ' + ('FAIL' if checks.failed else 'PASS'))
    return 1 if checks.failed else 0


if __name__ == '__main__':
    sys.exit(main())
