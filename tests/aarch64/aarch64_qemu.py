#!/usr/bin/python3
"""Kiln on AArch64, emulated: cross-built runtime + kiln tool under qemu-aarch64.

Run with Debian's /usr/bin/python3 (python3-torch, -torchvision, -onnx, -numpy).

  aarch64_qemu.py --kilnc PATH --kiln PATH --source-root DIR --cross-build-dir DIR --workdir DIR
                  [--qemu qemu-aarch64] [--qemu-cpu cortex-a72] [--sysroot /usr/aarch64-linux-gnu]
                  [--cross-cc aarch64-linux-gnu-gcc] [--cross-cxx aarch64-linux-gnu-g++]
                  [--meson meson] [--ninja ninja] [--jobs 2] [--models demo,mobilenet_v2,ops_winograd]

Steps (each prints PASS/FAIL; see docs/aarch64.md):
  1. cross-build the runtime and the kiln tool: `meson setup` CROSS_BUILD_DIR with
     tools/cross/aarch64-linux-gnu.ini (-Dcompiler=disabled -Dtests=false) when it is
     not configured yet, then `ninja` (incremental) in it; the tool must be an AArch64 ELF;
  2. the ELF loader's AArch64 relocations: tests/aarch64/reloc_kernels.c (every
     relocation type the loader handles) loaded and run by elf_reloc_check.cpp under qemu;
  3. for each model (the demo shapes_cnn with demo/example_triangle.npy, and torchvision
     MobileNetV2 exported by tests/e2e/models.py): compile it with the host kilnc twice,
     for the host and for --target="llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72",
     run the x86-64 bundle with the host `kiln run` and the AArch64 bundle with
     `qemu-aarch64 -cpu cortex-a72 -L SYSROOT kiln run`, compare every output (rtol 1e-4,
     atol 1e-5);
  4. on the demo's bundles: host `kiln inspect` (text and --json) of the AArch64 bundle
     works; host `kiln run` of it fails cleanly (exit 1, `kiln: error:` naming aarch64),
     and so does the AArch64 `kiln run` of the x86-64 bundle (naming x86_64);
  5. informational only (never fails): the AArch64 bundle under 64 KiB pages (qemu -p 65536).

Exit status: 0 when everything passed, 1 on any failure, 2 on a set-up error (a missing
tool: the test never passes silently without the cross toolchain or qemu).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import time
from typing import Dict, List, Sequence

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'e2e'))

import numpy as np  # noqa: E402

import kiln_e2e  # noqa: E402  (run_tool, compare, log)
import models  # noqa: E402

log = kiln_e2e.log
run_tool = kiln_e2e.run_tool

AARCH64_TARGET = 'llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72'
EM_X86_64 = 62
EM_AARCH64 = 183
RTOL = 1e-4
ATOL = 1e-5


class SetupError(Exception):
    pass


class Checks:
    """Collects PASS/FAIL results and timings for the summary."""

    def __init__(self):
        self.results: List[tuple] = []
        self.timings: List[tuple] = []

    def check(self, ok: bool, what: str, detail: str = '') -> bool:
        log('CHECK %s: %s%s' % (what, 'PASS' if ok else 'FAIL', (' (' + detail + ')') if detail else ''))
        self.results.append((what, ok))
        return ok

    def time(self, what: str, seconds: float) -> None:
        self.timings.append((what, seconds))

    def failed(self) -> List[str]:
        return [w for w, ok in self.results if not ok]


def need_program(name: str, what: str) -> str:
    path = shutil.which(name)
    if not path:
        raise SetupError('%s not found (%s); run tools/setup.sh' % (name, what))
    return path


def elf_machine(path: str) -> int:
    with open(path, 'rb') as f:
        head = f.read(20)
    if len(head) < 20 or head[:4] != b'\x7fELF':
        return -1
    return struct.unpack('<H', head[18:20])[0]


def timed(label: str, cmd: Sequence[str], timeout: float, checks: Checks, **kw):
    t0 = time.monotonic()
    proc = run_tool(label, cmd, timeout=timeout, **kw)
    checks.time(label, time.monotonic() - t0)
    return proc


def latency_ms(proc) -> str:
    for line in (proc.stdout or b'').decode('utf-8', 'replace').splitlines():
        if line.startswith('latency_ms='):
            return line.split('=', 1)[1]
    return '?'


# ---------------------------------------------------------------------------
# 1. Cross build.

def cross_build(args, checks: Checks) -> str:
    build_dir = os.path.abspath(args.cross_build_dir)
    cross_file = os.path.join(args.source_root, 'tools', 'cross', 'aarch64-linux-gnu.ini')
    meson = args.meson or need_program('meson', 'the cross build')
    ninja = args.ninja or need_program('ninja', 'the cross build')
    if not os.path.isfile(os.path.join(build_dir, 'meson-private', 'coredata.dat')):
        if os.path.isdir(build_dir):
            shutil.rmtree(build_dir)  # a half-configured directory from an interrupted run
        proc = timed('meson setup (aarch64)',
                     [meson, 'setup', build_dir, args.source_root, '--cross-file', cross_file,
                      '-Dcompiler=disabled', '-Dtests=false'], 300, checks)
        if not checks.check(proc.returncode == 0, 'cross build: meson setup'):
            return ''
    proc = timed('ninja (aarch64)', [ninja, '-C', build_dir, '-j', str(args.jobs)], 900, checks)
    if not checks.check(proc.returncode == 0, 'cross build: ninja'):
        return ''
    kiln = os.path.join(build_dir, 'tools', 'kiln', 'kiln')
    machine = elf_machine(kiln) if os.path.isfile(kiln) else -1
    if not checks.check(machine == EM_AARCH64, 'cross build: %s is an AArch64 ELF' % kiln,
                        'e_machine %d' % machine):
        return ''
    return kiln


def qemu_cmd(args) -> List[str]:
    # -cpu: the CPU the bundles are compiled for, so an instruction beyond it traps (SIGILL).
    return [args.qemu, '-cpu', args.qemu_cpu, '-L', args.sysroot]


# ---------------------------------------------------------------------------
# 2. Relocations.

def reloc_check(args, cross_build_dir: str, workdir: str, checks: Checks) -> None:
    so = os.path.join(workdir, 'reloc_kernels.so')
    exe = os.path.join(workdir, 'elf_reloc_check')
    src = args.source_root
    proc = run_tool('cc reloc_kernels.so',
                    [args.cross_cc, '-shared', '-fPIC', '-nostdlib', '-O2', '-fno-stack-protector',
                     '-fno-tree-loop-distribute-patterns', '-Wl,-z,now', '-Wl,--hash-style=both',
                     '-I', os.path.join(src, 'schema'), '-o', so, os.path.join(HERE, 'reloc_kernels.c')],
                    timeout=120)
    if not checks.check(proc.returncode == 0, 'relocations: build reloc_kernels.so'):
        return
    rt_lib = os.path.join(cross_build_dir, 'runtime', 'libkiln_runtime.a')
    proc = run_tool('c++ elf_reloc_check',
                    [args.cross_cxx, '-std=c++17', '-O1', '-fno-exceptions', '-fno-rtti',
                     '-I', os.path.join(src, 'runtime', 'src'), '-I', os.path.join(src, 'runtime', 'include'),
                     '-I', os.path.join(src, 'schema'), '-o', exe, os.path.join(HERE, 'elf_reloc_check.cpp'),
                     rt_lib], timeout=180)
    if not checks.check(proc.returncode == 0, 'relocations: build elf_reloc_check'):
        return
    proc = timed('qemu elf_reloc_check', qemu_cmd(args) + [exe, so], 120, checks)
    checks.check(proc.returncode == 0, 'relocations: RELATIVE, ABS64, GLOB_DAT, JUMP_SLOT loaded and run on aarch64')


# ---------------------------------------------------------------------------
# 3./4. Models.

def compile_both(args, name: str, onnx_path: str, workdir: str, checks: Checks):
    bundles = {}
    for arch, extra in (('x86_64', []), ('aarch64', ['--target=' + AARCH64_TARGET])):
        bundle = os.path.join(workdir, '%s.%s.kiln' % (name, arch))
        proc = timed('kilnc %s %s' % (name, arch), [args.kilnc, onnx_path, '-o', bundle] + extra, 900, checks)
        if not checks.check(proc.returncode == 0 and os.path.isfile(bundle), '%s: kilnc for %s' % (name, arch)):
            return None
        bundles[arch] = bundle
    return bundles


def run_both(args, name: str, bundles: Dict[str, str], inputs: Dict[str, str], output_names: Sequence[str],
             cross_kiln: str, workdir: str, checks: Checks, summary: Dict[str, str]) -> None:
    in_args = []
    for k, v in inputs.items():
        in_args += ['--input', '%s=%s' % (k, v)]
    out = {}
    for arch in ('x86_64', 'aarch64'):
        out[arch] = os.path.join(workdir, 'out_' + arch)
        os.makedirs(out[arch], exist_ok=True)
        runner = [args.kiln] if arch == 'x86_64' else qemu_cmd(args) + [cross_kiln]
        label = '%s: kiln run %s%s' % (name, arch, ' (qemu)' if arch == 'aarch64' else ' (native)')
        t0 = time.monotonic()
        proc = run_tool(label, runner + ['run', bundles[arch]] + in_args + ['--output-dir', out[arch]], timeout=600)
        wall = time.monotonic() - t0
        checks.time(label, wall)
        summary['%s %s' % (name, arch)] = 'latency_ms=%s, process %.2f s' % (latency_ms(proc), wall)
        if not checks.check(proc.returncode == 0, label):
            return
    ok = True
    for o in output_names:
        fname = kiln_e2e.sanitize(o) + '.npy'
        try:
            ref = np.load(os.path.join(out['x86_64'], fname), allow_pickle=False)
            got = np.load(os.path.join(out['aarch64'], fname), allow_pickle=False)
        except OSError as e:
            log('output %r: cannot read: %s' % (o, e))
            ok = False
            continue
        ok &= kiln_e2e.compare("%s output '%s' aarch64 vs x86_64" % (name, o), got, ref, RTOL, ATOL)
    checks.check(ok, '%s: aarch64 (qemu) outputs match x86_64 (rtol %g, atol %g)' % (name, RTOL, ATOL))


def cross_arch_checks(args, bundles: Dict[str, str], inputs: Dict[str, str], cross_kiln: str,
                      workdir: str, checks: Checks) -> None:
    a64 = bundles['aarch64']
    # kiln inspect on the x86-64 host: verify-only load, works for any architecture.
    proc = run_tool('kiln inspect (host, aarch64 bundle)', [args.kiln, 'inspect', a64], timeout=60)
    text = (proc.stdout or b'').decode('utf-8', 'replace')
    checks.check(proc.returncode == 0 and 'aarch64-linux-gnu' in text and 'cortex-a72' in text,
                 'host kiln inspect of the aarch64 bundle (names aarch64-linux-gnu, cortex-a72)')
    proc = run_tool('kiln inspect --json (host, aarch64 bundle)', [args.kiln, 'inspect', a64, '--json'], timeout=60)
    try:
        doc = json.loads((proc.stdout or b'').decode('utf-8', 'replace'))
        triples = [lib.get('target_triple', '') for lib in doc.get('libraries', [])]
        ok = proc.returncode == 0 and bool(triples) and all(t.startswith('aarch64') for t in triples) \
            and doc.get('dispatches')
        detail = 'libraries %s' % triples
    except ValueError as e:
        ok, detail = False, 'not JSON: %s' % e
    checks.check(bool(ok), 'host kiln inspect --json of the aarch64 bundle', detail)

    in_args = []
    for k, v in inputs.items():
        in_args += ['--input', '%s=%s' % (k, v)]

    def must_fail_cleanly(label: str, cmd: List[str], out_dir: str, words: Sequence[str]) -> None:
        os.makedirs(out_dir, exist_ok=True)
        proc = run_tool(label, cmd + ['--output-dir', out_dir], timeout=120)
        err = (proc.stderr or b'').decode('utf-8', 'replace')
        problems = []
        if proc.returncode is None:
            problems.append('timed out')
        elif proc.returncode < 0:
            problems.append('killed by signal %d (a crash)' % -proc.returncode)
        elif proc.returncode != 1:
            problems.append('exit %d, expected 1' % proc.returncode)
        if 'kiln: error:' not in err:
            problems.append('no "kiln: error:" on stderr')
        for w in words:
            if w not in err:
                problems.append('message does not name %r' % w)
        if os.listdir(out_dir):
            problems.append('wrote outputs %s' % sorted(os.listdir(out_dir)))
        checks.check(not problems, label + ' fails cleanly', '; '.join(problems) or err.strip().splitlines()[-1])

    must_fail_cleanly('host kiln run of the aarch64 bundle', [args.kiln, 'run', a64] + in_args,
                      os.path.join(workdir, 'out_wrong_arch_host'), ['aarch64', 'x86_64'])
    must_fail_cleanly('aarch64 kiln run (qemu) of the x86_64 bundle',
                      qemu_cmd(args) + [cross_kiln, 'run', bundles['x86_64']] + in_args,
                      os.path.join(workdir, 'out_wrong_arch_qemu'), ['x86_64', 'aarch64'])


def page_size_note(args, bundles: Dict[str, str], inputs: Dict[str, str], cross_kiln: str, workdir: str) -> str:
    """Informational: kilnc links AArch64 libraries with -z max-page-size=4096, so on a kernel with
    16/64 KiB pages their segments share pages with different protections and the loader rejects them."""
    in_args = []
    for k, v in inputs.items():
        in_args += ['--input', '%s=%s' % (k, v)]
    out_dir = os.path.join(workdir, 'out_64k')
    os.makedirs(out_dir, exist_ok=True)
    proc = run_tool('NOTE: aarch64 kiln run with 64 KiB pages (qemu -p 65536), informational',
                    qemu_cmd(args)[:1] + ['-p', '65536'] + qemu_cmd(args)[1:] + [cross_kiln, 'run', bundles['aarch64']] +
                    in_args + ['--output-dir', out_dir], timeout=300)
    if proc.returncode == 0:
        return 'runs with 64 KiB pages'
    err = (proc.stderr or b'').decode('utf-8', 'replace').strip().splitlines()
    return 'does not load with 64 KiB pages: %s' % (err[-1] if err else 'exit %s' % proc.returncode)


def model_demo(args, cross_kiln: str, workdir: str, checks: Checks, summary: Dict[str, str]) -> None:
    import onnx

    demo = os.path.join(args.source_root, 'demo')
    onnx_path = os.path.join(demo, 'shapes_cnn.onnx')
    inputs = {'input': os.path.join(demo, 'example_triangle.npy')}
    names = [o.name for o in onnx.load(onnx_path).graph.output]
    log('== demo shapes_cnn: %s, outputs %s' % (onnx_path, names))
    bundles = compile_both(args, 'shapes_cnn', onnx_path, workdir, checks)
    if not bundles:
        return
    run_both(args, 'shapes_cnn', bundles, inputs, names, cross_kiln, workdir, checks, summary)
    cross_arch_checks(args, bundles, inputs, cross_kiln, workdir, checks)
    summary['shapes_cnn 64 KiB pages (informational)'] = page_size_note(args, bundles, inputs, cross_kiln, workdir)


def model_torch(args, name: str, cross_kiln: str, workdir: str, checks: Checks, summary: Dict[str, str]) -> None:
    spec = models.MODELS[name]
    onnx_path = os.path.join(workdir, name + '.onnx')
    input_path = os.path.join(workdir, 'input.npy')
    log('== %s: %s, input %s' % (name, spec.description, list(spec.input_shape)))
    t0 = time.monotonic()
    models.export_model(spec, onnx_path)  # seeded; batchnorm statistics calibrated
    np.save(input_path, models.make_input(spec))  # seeded
    checks.time('%s: export (torch.onnx, opset %d)' % (name, models.OPSET), time.monotonic() - t0)
    bundles = compile_both(args, name, onnx_path, workdir, checks)
    if not bundles:
        return
    run_both(args, name, bundles, {models.INPUT_NAME: input_path}, spec.names_of_outputs(), cross_kiln,
             workdir, checks, summary)


# ---------------------------------------------------------------------------

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--kilnc', required=True)
    ap.add_argument('--kiln', required=True, help='the host (x86-64) kiln tool')
    ap.add_argument('--source-root', required=True)
    ap.add_argument('--cross-build-dir', required=True)
    ap.add_argument('--workdir', required=True)
    ap.add_argument('--qemu', default='qemu-aarch64')
    ap.add_argument('--sysroot', default='/usr/aarch64-linux-gnu')
    ap.add_argument('--qemu-cpu', default='cortex-a72', help='qemu -cpu (the -mcpu of the AArch64 target)')
    ap.add_argument('--cross-cc', default='aarch64-linux-gnu-gcc')
    ap.add_argument('--cross-cxx', default='aarch64-linux-gnu-g++')
    ap.add_argument('--meson', default=None)
    ap.add_argument('--ninja', default=None)
    ap.add_argument('--jobs', type=int, default=2)
    ap.add_argument('--models', default='demo,mobilenet_v2,ops_winograd')
    args = ap.parse_args()

    t_start = time.monotonic()
    try:
        args.source_root = os.path.abspath(args.source_root)
        args.kilnc = kiln_e2e.check_exe(args.kilnc, 'kilnc')
        args.kiln = kiln_e2e.check_exe(args.kiln, 'kiln')
        args.qemu = need_program(args.qemu, 'qemu-user')
        args.cross_cc = need_program(args.cross_cc, 'gcc-aarch64-linux-gnu')
        args.cross_cxx = need_program(args.cross_cxx, 'g++-aarch64-linux-gnu')
        if not os.path.isfile(os.path.join(args.sysroot, 'lib', 'ld-linux-aarch64.so.1')):
            raise SetupError('%s/lib/ld-linux-aarch64.so.1 not found (libc6-arm64-cross); run tools/setup.sh'
                             % args.sysroot)
        if elf_machine(args.kiln) != EM_X86_64:
            raise SetupError('this test runs on an x86-64 host (%s is not an x86-64 ELF)' % args.kiln)
        model_list = [m for m in args.models.split(',') if m]
        for m in model_list:
            if m != 'demo' and m not in models.MODELS:
                raise SetupError('unknown model %r' % m)
    except (SetupError, kiln_e2e.SetupError) as e:
        log('SETUP ERROR: %s' % e)
        return 2

    workdir = kiln_e2e.fresh_dir(args.workdir)
    checks = Checks()
    summary: Dict[str, str] = {}

    log('== 1. cross build (%s)' % args.cross_build_dir)
    cross_kiln = cross_build(args, checks)
    if cross_kiln:
        log('== 2. ELF loader relocations on aarch64')
        reloc_check(args, os.path.abspath(args.cross_build_dir), workdir, checks)
        for m in model_list:
            mdir = os.path.join(workdir, m)
            os.makedirs(mdir, exist_ok=True)
            if m == 'demo':
                model_demo(args, cross_kiln, mdir, checks, summary)
            else:
                model_torch(args, m, cross_kiln, mdir, checks, summary)

    log('')
    log('== timings')
    for what, seconds in checks.timings:
        log('  %-52s %7.2f s' % (what, seconds))
    for what, text in summary.items():
        log('  %-52s %s' % (what, text))
    log('  %-52s %7.2f s' % ('total', time.monotonic() - t_start))
    failed = checks.failed()
    log('%d checks, %d failed%s' % (len(checks.results), len(failed),
                                    (': ' + '; '.join(failed)) if failed else ''))
    log('aarch64_qemu: %s' % ('PASS' if not failed and checks.results else 'FAIL'))
    return 0 if not failed and checks.results else 1


if __name__ == '__main__':
    sys.exit(main())
