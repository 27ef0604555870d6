#!/usr/bin/python3
"""Kiln on another CPU architecture, emulated: the cross-built runtime and kiln tool under qemu.

Run with Debian's /usr/bin/python3 (python3-torch, -torchvision, -onnx, -numpy) and Node.js
with tests/ort/node_modules (the ONNX Runtime reference).

  cross_target.py --arch aarch64|armv7 --kilnc PATH --kiln PATH --source-root DIR
                  --cross-build-dir DIR --workdir DIR --ort-dir tests/ort [--node node]
                  [--meson meson] [--ninja ninja] [--jobs 2] [--models demo,ops_conv,...]

Steps (each prints CHECK ...: PASS/FAIL; see docs/cross-targets.md):
  1. cross-build the runtime and the kiln tool: `meson setup` CROSS_BUILD_DIR with the
     architecture's tools/cross/*.ini (-Dcompiler=disabled -Dtests=false) when it is not
     configured yet, then `ninja` (incremental); the tool must be an ELF of the architecture;
  2. the ELF loader's relocations: reloc_kernels.c (every relocation type the loader handles
     for the architecture), linked by GNU ld and by lld, loaded and run by elf_reloc_check.cpp
     under qemu; the same library speaking kernel ABI version 2 is refused;
  3. models (the demo, torchvision and operator models of tests/e2e/models.py, seeded):
     compiled by the host kilnc for the architecture, run by the cross-built `kiln run` under
     `qemu -cpu CPU` and compared with ONNX Runtime's outputs (rtol 1e-4, atol 1e-5); the
     relocation types in kilnc's libraries are listed (each must be one the loader handles);
     ARMv7 also compiles for -mcpu=cortex-a53 and cortex-a72 (AArch32) and runs those; the demo
     with --threads 3 must give the single-thread outputs bit for bit;
  4. bad input (demo bundles): the host `kiln inspect` of the target's bundle works; bundles for
     another architecture or ELF class are refused both ways with a message naming both sides, and
     one whose library speaks another kernel ABI version naming both versions;
     ARMv7: a soft-float library, a 3 GiB arena and a 3 GiB input file (beyond a 32-bit address
     space) are refused;
  5. informational (never fails): AArch64 with 64 KiB pages; NEON instruction counts;
  6. int8 (cross_int8.py): ResNet-18, MobileNetV2 (AArch64) and the transformer quantized by ONNX
     Runtime's quantizer (QDQ, per-channel), compiled for each CPU (AArch64: cortex-a72 without a
     dot product, cortex-a76 with sdot, neoverse-n2 with usdot; ARMv7: cortex-a7 NEON), run under
     qemu and compared with ONNX Runtime int8 in quantization steps; the expected dot-product
     instructions are checked in the libraries and every CPU gives the same outputs bit for bit;
  7. the measurement server (docs/rpc.md): the cross-built `kiln rpc-server` under qemu on
     loopback measures the target's demo bundle for the host `kiln bench --rpc` (the handshake
     names the architecture), refuses the x86-64 bundle with the loader's message, and measures
     again after it; then `kilnc tune --target ... --rpc` tunes the demo against it (2 trials),
     and the demo compiled with that log (`--tuning-log`) matches ONNX Runtime under qemu.

Exit status: 0 when everything passed, 1 on any failure, 2 on a set-up error (a missing tool:
the test never passes without the cross toolchain, qemu or ONNX Runtime).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import time
from typing import Dict, List, Optional, Sequence, Tuple

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'e2e'))

import bad_bundles  # noqa: E402  (root_field_pos, put, rehash: patching bundles)
import cross_int8  # noqa: E402  (step 6: int8 models)
import kiln_e2e  # noqa: E402  (run_tool, prepare, run_ort, compare_dirs, log)
import models  # noqa: E402

log = kiln_e2e.log
run_tool = kiln_e2e.run_tool

RTOL = 1e-4
ATOL = 1e-5
EM_X86_64 = 62
ARENA_3GIB = 3 << 30  # beyond a 32-bit address space, mappable on a 64-bit one


@dataclasses.dataclass
class Arch:
    """One target architecture: its toolchain, emulator, kilnc target and loader names."""
    cross_file: str                 # tools/cross/<this>
    gnu: str                        # GNU triple: <gnu>-gcc, -g++, -readelf, /usr/<gnu> (sysroot)
    loader: str                     # the dynamic loader inside the sysroot
    qemu: str                       # qemu-user binary
    qemu_cpu: str                   # qemu -cpu for the default target
    target: str                     # kilnc --target
    e_machine: int                  # ELF e_machine of the tool and the libraries
    runtime_name: str               # the loader's name for it (cpu/arch/*.cpp)
    elf_class: str                  # ELFCLASS32 / ELFCLASS64
    lld_emulation: str              # ld.lld -m
    reloc_types: Tuple[str, ...]    # relocation types reloc_kernels.so must contain
    models: Tuple[str, ...]         # default --models
    extra_cpus: Tuple[Tuple[str, str], ...] = ()  # (-mcpu, qemu -cpu) also compiled and run
    extra_models: Tuple[str, ...] = ()            # ... on these models
    page_note: bool = False         # informational 64 KiB page run


ALL_MODELS = ('demo', 'squeezenet1_1', 'mobilenet_v2', 'resnet18', 'transformer', 'decoder_step', 'ops_conv', 'ops_pool',
              'ops_elementwise', 'ops_matmul_softmax', 'ops_shape', 'ops_winograd', 'seq_rnn', 'const_weights')

ARCHES = {
    'aarch64': Arch('aarch64-linux-gnu.ini', 'aarch64-linux-gnu', 'lib/ld-linux-aarch64.so.1', 'qemu-aarch64',
                    'cortex-a72', 'llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72', 183, 'aarch64', 'ELFCLASS64',
                    'aarch64linux',
                    ('R_AARCH64_RELATIVE', 'R_AARCH64_ABS64', 'R_AARCH64_GLOB_DAT', 'R_AARCH64_JUMP_SLOT'),
                    ALL_MODELS, page_note=True),
    'armv7': Arch('arm-linux-gnueabihf.ini', 'arm-linux-gnueabihf', 'lib/ld-linux-armhf.so.3', 'qemu-arm',
                  'cortex-a7', 'llvm -mtriple=armv7a-linux-gnueabihf -mcpu=cortex-a7', 40, 'arm', 'ELFCLASS32',
                  'armelf_linux_eabi',
                  ('R_ARM_RELATIVE', 'R_ARM_ABS32', 'R_ARM_GLOB_DAT', 'R_ARM_JUMP_SLOT'),
                  ALL_MODELS,
                  # qemu-arm has no cortex-a53/a72 models: `max` is an ARMv8-A CPU in AArch32.
                  extra_cpus=(('cortex-a53', 'max'), ('cortex-a72', 'max')),
                  extra_models=('demo', 'ops_conv', 'mobilenet_v2')),
}
# The other cross architecture, for the ELF-class mismatch (64-bit <-> 32-bit libraries).
OTHER = {'aarch64': 'armv7', 'armv7': 'aarch64'}


class SetupError(Exception):
    pass


class Checks:
    """Collects PASS/FAIL results, timings and notes for the summary."""

    def __init__(self):
        self.results: List[tuple] = []
        self.timings: List[tuple] = []
        self.notes: Dict[str, str] = {}

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


def timed(checks: Checks, label: str, cmd: Sequence[str], timeout: float, **kw):
    t0 = time.monotonic()
    proc = run_tool(label, cmd, timeout=timeout, **kw)
    checks.time(label, time.monotonic() - t0)
    return proc


def latency_ms(proc) -> str:
    for line in (proc.stdout or b'').decode('utf-8', 'replace').splitlines():
        if line.startswith('latency_ms='):
            return line.split('=', 1)[1]
    return '?'


def qemu_cmd(args, cpu: Optional[str] = None) -> List[str]:
    # -cpu: the CPU the bundles are compiled for, so an instruction beyond it traps (SIGILL).
    return [args.qemu, '-cpu', cpu or args.arch.qemu_cpu, '-L', args.sysroot]


def input_args(inputs: Dict[str, str]) -> List[str]:
    out: List[str] = []
    for k, v in inputs.items():
        out += ['--input', '%s=%s' % (k, v)]
    return out


# ---------------------------------------------------------------------------
# 1. Cross build.

def cross_build(args, checks: Checks) -> str:
    build_dir = os.path.abspath(args.cross_build_dir)
    cross_file = os.path.join(args.source_root, 'tools', 'cross', args.arch.cross_file)
    if not os.path.isfile(os.path.join(build_dir, 'meson-private', 'coredata.dat')):
        if os.path.isdir(build_dir):
            shutil.rmtree(build_dir)  # a half-configured directory from an interrupted run
        proc = timed(checks, 'meson setup (%s)' % args.arch_name,
                     [args.meson, 'setup', build_dir, args.source_root, '--cross-file', cross_file,
                      '-Dcompiler=disabled', '-Dtests=false'], 300)
        if not checks.check(proc.returncode == 0, 'cross build: meson setup'):
            return ''
    proc = timed(checks, 'ninja (%s)' % args.arch_name, [args.ninja, '-C', build_dir, '-j', str(args.jobs)], 900)
    if not checks.check(proc.returncode == 0, 'cross build: ninja'):
        return ''
    kiln = os.path.join(build_dir, 'tools', 'kiln', 'kiln')
    machine = elf_machine(kiln) if os.path.isfile(kiln) else -1
    if not checks.check(machine == args.arch.e_machine, 'cross build: %s is an ELF for e_machine %d (%s)'
                        % (kiln, args.arch.e_machine, args.arch.runtime_name), 'e_machine %d' % machine):
        return ''
    return kiln


# ---------------------------------------------------------------------------
# 2. Relocations.

def relocation_types(args, library: str) -> List[str]:
    """The dynamic relocation types in `library` (readelf -rW), sorted, without duplicates."""
    proc = subprocess.run([args.readelf, '-rW', library], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    found = re.findall(r'\b(R_[A-Z0-9]+_[A-Z0-9_]+)\b', proc.stdout.decode('utf-8', 'replace'))
    return sorted(set(found))


def reloc_check(args, cross_build_dir: str, workdir: str, checks: Checks) -> None:
    src = args.source_root
    source = os.path.join(HERE, 'reloc_kernels.c')
    cflags = ['-fPIC', '-O2', '-fno-stack-protector', '-fno-tree-loop-distribute-patterns',
              '-I', os.path.join(src, 'schema')]
    libraries = {}
    for linker in ('gnu-ld', 'lld', 'abi2'):
        so = os.path.join(workdir, 'reloc_kernels.%s.so' % linker)
        if linker == 'lld':
            obj = os.path.join(workdir, 'reloc_kernels.o')
            proc = run_tool('cc -c reloc_kernels.o', [args.cross_cc, '-c'] + cflags + ['-o', obj, source], 120)
            if proc.returncode == 0:
                proc = run_tool('ld.lld reloc_kernels.so', [args.lld, '-m', args.arch.lld_emulation, '-shared',
                                                             '-z', 'now', '--hash-style=both', '-o', so, obj], 120)
        else:
            # abi2: small (4 KiB pages), so that it fits in place of the demo's library (step 4).
            extra = ['-DRELOC_ABI_VERSION=2', '-Wl,-z,max-page-size=4096'] if linker == 'abi2' else []
            proc = run_tool('cc reloc_kernels.so (%s)' % linker,
                            [args.cross_cc, '-shared', '-nostdlib', '-Wl,-z,now', '-Wl,--hash-style=both'] + cflags +
                            extra + ['-o', so, source], 120)
        if not checks.check(proc.returncode == 0, 'relocations: build reloc_kernels.so (%s)' % linker):
            return
        libraries[linker] = so
    rt_lib = os.path.join(cross_build_dir, 'runtime', 'libkiln_runtime.a')
    exe = os.path.join(workdir, 'elf_reloc_check')
    proc = run_tool('c++ elf_reloc_check',
                    [args.cross_cxx, '-std=c++17', '-O1', '-fno-exceptions', '-fno-rtti',
                     '-I', os.path.join(src, 'runtime', 'src'), '-I', os.path.join(src, 'runtime', 'include'),
                     '-I', os.path.join(src, 'schema'), '-o', exe, os.path.join(HERE, 'elf_reloc_check.cpp'),
                     rt_lib, '-pthread'], timeout=180)
    if not checks.check(proc.returncode == 0, 'relocations: build elf_reloc_check'):
        return
    for linker in ('gnu-ld', 'lld'):
        types = relocation_types(args, libraries[linker])
        checks.notes['reloc_kernels.so relocations (%s)' % linker] = ' '.join(types)
        missing = [t for t in args.arch.reloc_types if t not in types]
        checks.check(not missing, 'relocations: the %s library needs %s' % (linker, ', '.join(args.arch.reloc_types)),
                     'missing %s' % missing if missing else '')
        cmd = qemu_cmd(args) + [exe, libraries[linker]] + (['--abi2', libraries['abi2']] if linker == 'gnu-ld' else [])
        proc = timed(checks, 'qemu elf_reloc_check (%s)' % linker, cmd, 120)
        checks.check(proc.returncode == 0, 'relocations: the %s library loads and runs on %s%s'
                     % (linker, args.arch_name, '; kernel ABI 2 refused' if linker == 'gnu-ld' else ''))


# ---------------------------------------------------------------------------
# Bundles: compiling, reading their libraries, patching them.

def compile_bundle(args, checks: Checks, name: str, onnx_path: str, out: str, target: Optional[str]) -> bool:
    label = 'kilnc %s %s' % (name, target or 'host')
    proc = timed(checks, label, [args.kilnc, onnx_path, '-o', out] + (['--target=' + target] if target else []), 900)
    return checks.check(proc.returncode == 0 and os.path.isfile(out), label)


def data_segment_offset(buf: bytes) -> int:
    return bad_bundles.read_u64(buf, bad_bundles.root_field_pos(buf, 'data_segment_offset')) or 0


def libraries_of(args, bundle: str) -> List[Tuple[int, int]]:
    """(file offset, size) of each kernel library of `bundle`, from the host `kiln inspect --json`."""
    proc = subprocess.run([args.kiln, 'inspect', '--json', bundle], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    with open(bundle, 'rb') as f:
        base = data_segment_offset(f.read())
    return [(base + lib['offset'], lib['size']) for lib in json.loads(proc.stdout.decode('utf-8'))['libraries']]


def extract_library(args, bundle: str, out: str) -> str:
    offset, size = libraries_of(args, bundle)[0]
    with open(bundle, 'rb') as f:
        f.seek(offset)
        data = f.read(size)
    with open(out, 'wb') as f:
        f.write(data)
    return out


def patched(bundle: str, out: str, patches: Sequence[Tuple[int, str, int]]) -> str:
    """Writes `bundle` with (position, struct format, value) patches and a recomputed content hash."""
    with open(bundle, 'rb') as f:
        buf = f.read()
    for pos, fmt, value in patches:
        buf = bad_bundles.put(buf, pos, fmt, value)
    with open(out, 'wb') as f:
        f.write(bad_bundles.rehash(buf))
    return out


def table_field_pos(buf: bytes, ref: int, field: int) -> int:
    """File position of field `field` of the FlatBuffers table the uoffset at `ref` points to."""
    table = ref + struct.unpack_from('<I', buf, ref)[0]
    vtable = table - struct.unpack_from('<i', buf, table)[0]
    return table + struct.unpack_from('<H', buf, vtable + 4 + 2 * field)[0]


def arena_bytes_pos(bundle: str) -> int:
    """File position of MemoryPlan.arena_bytes (field 0 of Bundle.memory)."""
    with open(bundle, 'rb') as f:
        buf = f.read()
    return table_field_pos(buf, bad_bundles.root_field_pos(buf, 'memory'), 0)


def library_size_pos(bundle: str) -> int:
    """File position of Bundle.libraries[0].size (KernelLibrary field 5, a ulong)."""
    with open(bundle, 'rb') as f:
        buf = f.read()
    ref = bad_bundles.root_field_pos(buf, 'libraries')
    vector = ref + struct.unpack_from('<I', buf, ref)[0]
    return table_field_pos(buf, vector + 4, 5)  # element 0's uoffset follows the length


def with_library(args, bundle: str, library: str, out: str) -> str:
    """`bundle` with its first kernel library replaced in place by the (smaller) file `library`."""
    with open(library, 'rb') as f:
        blob = f.read()
    offset, size = libraries_of(args, bundle)[0]
    if len(blob) > size:
        raise SetupError('%s does not fit in place of the library of %s' % (library, bundle))
    with open(bundle, 'rb') as f:
        buf = bytearray(f.read())
    buf[offset:offset + len(blob)] = blob
    with open(out, 'wb') as f:
        f.write(bytes(buf))
    return patched(out, out, [(library_size_pos(out), '<Q', len(blob))])


# ---------------------------------------------------------------------------
# 3. Models.

def model_files(args, name: str, mdir: str, checks: Checks):
    """Exports model `name` (or takes the demo) and runs ONNX Runtime on it: (onnx, inputs, outputs, ort_out)."""
    t0 = time.monotonic()
    if name == 'demo':
        import onnx
        onnx_path = os.path.join(args.source_root, 'demo', 'shapes_cnn.onnx')
        inputs = {'input': os.path.join(args.source_root, 'demo', 'example_triangle.npy')}
        outputs = [o.name for o in onnx.load(onnx_path).graph.output]
    else:
        spec, onnx_path, input_path, _module, ok = kiln_e2e.prepare(name, mdir)  # seeded export, op coverage
        checks.check(ok, '%s: the export has its operators' % name)
        inputs, outputs = {models.INPUT_NAME: input_path}, spec.names_of_outputs()
    checks.time('%s: export' % name, time.monotonic() - t0)
    ort_out = os.path.join(mdir, 'ort_out')
    t0 = time.monotonic()
    ok = kiln_e2e.run_ort(args.node, args.ort_script, onnx_path, ort_out, inputs)
    checks.time('%s: onnxruntime' % name, time.monotonic() - t0)
    checks.check(ok, '%s: ONNX Runtime reference' % name)
    return onnx_path, inputs, outputs, ort_out if ok else ''


def run_and_compare(args, checks: Checks, label: str, bundle: str, inputs: Dict[str, str], outputs: Sequence[str],
                    ort_out: str, out_dir: str, qemu_cpu: Optional[str] = None) -> None:
    os.makedirs(out_dir, exist_ok=True)
    t0 = time.monotonic()
    proc = run_tool(label, qemu_cmd(args, qemu_cpu) + [args.cross_kiln, 'run', bundle] + input_args(inputs) +
                    ['--output-dir', out_dir], timeout=600)
    wall = time.monotonic() - t0
    checks.time(label + ' (qemu)', wall)
    checks.notes[label] = 'latency_ms=%s, process %.2f s' % (latency_ms(proc), wall)
    if not checks.check(proc.returncode == 0, label + ' (qemu)') or not ort_out:
        return
    extra = sorted(set(os.listdir(out_dir)) - {kiln_e2e.sanitize(n) + '.npy' for n in outputs})
    ok = kiln_e2e.compare_dirs(out_dir, ort_out, outputs, RTOL, ATOL, 'kiln run (%s)' % args.arch_name) and not extra
    checks.check(ok, '%s matches ONNX Runtime (rtol %g, atol %g)%s' % (label, RTOL, ATOL,
                                                                      ', extra files %s' % extra if extra else ''))


def neon_note(args, library: str) -> str:
    """ARMv7: floating-point instructions on NEON q registers vs. scalar VFP ones (informational)."""
    proc = subprocess.run([args.objdump, '-d', library], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    text = proc.stdout.decode('utf-8', 'replace')
    vector = len(re.findall(r'\tv(?:fma|mla|mul|add)\.f32\tq', text))
    scalar = len(re.findall(r'\tv(?:fma|mla|mul|add)\.f32\ts', text))
    return 'NEON q-register f32 fma/mla/mul/add: %d, scalar VFP s-register: %d' % (vector, scalar)


def threads_check(args, checks: Checks, bundle: str, inputs: Dict[str, str], outputs: Sequence[str],
                  mdir: str) -> None:
    """The thread pool (futexes, atomics) on the target: --threads 3 gives the outputs of one thread bit for bit."""
    out = os.path.join(mdir, 'out_threads3')
    os.makedirs(out, exist_ok=True)
    proc = run_tool('kiln run --threads 3', qemu_cmd(args) + [args.cross_kiln, 'run', bundle, '--threads', '3'] +
                    input_args(inputs) + ['--output-dir', out], timeout=300)
    same = proc.returncode == 0
    for name in outputs:
        fname = kiln_e2e.sanitize(name) + '.npy'
        try:
            with open(os.path.join(out, fname), 'rb') as a, open(os.path.join(mdir, 'out', fname), 'rb') as b:
                same = same and a.read() == b.read()
        except OSError:
            same = False
    checks.check(same, 'demo: kiln run --threads 3 on %s gives the single-thread outputs bit for bit' % args.arch_name)


def model_check(args, name: str, workdir: str, checks: Checks) -> Dict[str, str]:
    """One model on the target (and, for the demo, the bundles the bad-input checks use)."""
    mdir = os.path.join(workdir, name)
    os.makedirs(mdir, exist_ok=True)
    log('== %s' % name)
    onnx_path, inputs, outputs, ort_out = model_files(args, name, mdir, checks)
    bundles = {}
    bundle = os.path.join(mdir, '%s.%s.kiln' % (name, args.arch_name))
    if not compile_bundle(args, checks, name, onnx_path, bundle, args.arch.target):
        return {}
    bundles['target'] = bundle
    library = extract_library(args, bundle, os.path.join(mdir, 'kernels.so'))
    types = relocation_types(args, library)
    checks.notes['%s: relocations in kilnc\'s library' % name] = ' '.join(types) or 'none'
    unknown = [t for t in types if t not in args.arch.reloc_types]
    checks.check(not unknown, '%s: kilnc\'s library has only relocation types the loader handles' % name,
                 ' '.join(types))
    if args.objdump and args.arch_name == 'armv7' and name in ('demo', 'resnet18', 'mobilenet_v2'):
        checks.notes['%s: code (informational)' % name] = neon_note(args, library)
    run_and_compare(args, checks, '%s: kiln run %s' % (name, args.arch_name), bundle, inputs, outputs, ort_out,
                    os.path.join(mdir, 'out'))
    if name in args.arch.extra_models:
        for mcpu, qemu_cpu in args.arch.extra_cpus:
            target = re.sub(r'-mcpu=\S+', '-mcpu=' + mcpu, args.arch.target)
            extra = os.path.join(mdir, '%s.%s.kiln' % (name, mcpu))
            if compile_bundle(args, checks, name, onnx_path, extra, target):
                run_and_compare(args, checks, '%s: kiln run %s -mcpu=%s' % (name, args.arch_name, mcpu), extra,
                                inputs, outputs, ort_out, os.path.join(mdir, 'out_' + mcpu), qemu_cpu)
    if name == 'demo':
        threads_check(args, checks, bundle, inputs, outputs, mdir)
        bundles['host'] = os.path.join(mdir, 'demo.x86_64.kiln')
        bundles['other'] = os.path.join(mdir, 'demo.%s.kiln' % OTHER[args.arch_name])
        if not (compile_bundle(args, checks, name, onnx_path, bundles['host'], None) and
                compile_bundle(args, checks, name, onnx_path, bundles['other'], ARCHES[OTHER[args.arch_name]].target)):
            return {}
        bundles['inputs'] = inputs
        bundles.update(onnx=onnx_path, outputs=outputs, ort_out=ort_out)
    return bundles


# ---------------------------------------------------------------------------
# 4./5. Bad input and informational runs (demo bundles).

def must_fail_cleanly(checks: Checks, label: str, cmd: List[str], out_dir: str, words: Sequence[str]) -> None:
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
    last = err.strip().splitlines()[-1] if err.strip() else ''
    checks.check(not problems, label + ' fails cleanly', '; '.join(problems) or last)


def rpc_check(args, bundles: Dict, workdir: str, checks: Checks) -> None:
    """7. The cross-built rpc-server under qemu, measuring for the host kiln (timings meaningless)."""
    log_path = os.path.join(workdir, 'rpc_server.log')
    with open(log_path, 'w') as log_file:
        server = subprocess.Popen(qemu_cmd(args) + [args.cross_kiln, 'rpc-server', '--port', '0'],
                                  stdout=log_file, stderr=subprocess.STDOUT)
    try:
        port, deadline = None, time.monotonic() + 60
        while port is None and time.monotonic() < deadline and server.poll() is None:
            time.sleep(0.1)
            first = open(log_path).readline()
            if first.startswith('listening on ') and first.endswith('\n'):
                port = int(first.split()[2].rsplit(':', 1)[1])
        if not checks.check(port is not None, 'rpc: the %s rpc-server starts under qemu' % args.arch_name,
                            open(log_path).read()):
            return
        bench = [args.kiln, 'bench', '--rpc', '127.0.0.1:%d' % port, '--iterations', '3', '--warmup', '1']
        remote = 'remote 127.0.0.1:%d: kiln ' % port
        proc = run_tool('host kiln bench --rpc (%s bundle)' % args.arch_name, bench + [bundles['target']], timeout=300)
        out = (proc.stdout or b'').decode('utf-8', 'replace')
        checks.check(proc.returncode == 0 and remote in out and ', %s, ' % args.arch.runtime_name in out and
                     'iterations=3' in out, 'rpc: the host kiln bench --rpc measures the %s bundle on the %s server'
                     % (args.arch_name, args.arch_name), out + (proc.stderr or b'').decode('utf-8', 'replace'))
        proc = run_tool('host kiln bench --rpc (x86_64 bundle)', bench + [bundles['host']], timeout=300)
        err = (proc.stderr or b'').decode('utf-8', 'replace')
        checks.check(proc.returncode == 1 and 'load failed' in err and 'x86_64' in err,
                     'rpc: the %s server refuses the x86_64 bundle with the loader\'s message' % args.arch_name, err)
        proc = run_tool('host kiln bench --rpc again', bench + [bundles['target']], timeout=300)
        checks.check(proc.returncode == 0 and server.poll() is None, 'rpc: the %s server measures again after it'
                     % args.arch_name, (proc.stderr or b'').decode('utf-8', 'replace'))
        # The tuning flow against it: kilnc tune for the target, then --tuning-log.
        tune_log = os.path.join(workdir, 'tune.jsonl')
        if os.path.exists(tune_log):
            os.remove(tune_log)
        proc = run_tool('kilnc tune --rpc (%s)' % args.arch_name,
                        [args.kilnc, 'tune', bundles['onnx'], '--target', args.arch.target, '--rpc',
                         '127.0.0.1:%d' % port, '--trials', '2', '--repeats', '1', '--log', tune_log], timeout=600)
        out = (proc.stdout or b'').decode('utf-8', 'replace')
        records = [json.loads(line) for line in open(tune_log)] if os.path.isfile(tune_log) else []
        triple = re.search(r'-mtriple=(\S+)', args.arch.target).group(1)
        checks.check(proc.returncode == 0 and records and all(r['target'].startswith(triple) for r in records) and
                     '(%s, ' % args.arch.runtime_name in out,
                     'rpc: kilnc tune measures the demo\'s workloads on the %s server (%d records)'
                     % (args.arch_name, len(records)), out[-800:] + (proc.stderr or b'').decode('utf-8', 'replace'))
        tuned = os.path.join(workdir, 'demo.%s.tuned.kiln' % args.arch_name)
        proc = run_tool('kilnc --tuning-log (%s)' % args.arch_name,
                        [args.kilnc, bundles['onnx'], '-o', tuned, '--target', args.arch.target,
                         '--tuning-log', tune_log], timeout=300)
        if checks.check(proc.returncode == 0, 'rpc: kilnc --tuning-log compiles the demo for %s' % args.arch_name):
            run_and_compare(args, checks, 'demo: kiln run %s, tuned' % args.arch_name, tuned, bundles['inputs'],
                            bundles['outputs'], bundles['ort_out'], os.path.join(workdir, 'out_tuned'))
    finally:
        server.kill()
        server.wait()


def bad_input_checks(args, bundles: Dict, workdir: str, checks: Checks) -> None:
    arch, target = args.arch, bundles['target']
    inputs = input_args(bundles['inputs'])
    cross = qemu_cmd(args) + [args.cross_kiln, 'run']
    other = ARCHES[OTHER[args.arch_name]]
    lib_side = 'kernel library is %s (e_machine %d, %s)'
    runs = 'this runtime runs %s (%s)'
    proc = run_tool('host kiln inspect (%s bundle)' % args.arch_name, [args.kiln, 'inspect', target], timeout=60)
    text = (proc.stdout or b'').decode('utf-8', 'replace')
    triple, cpu = re.search(r'-mtriple=(\S+) -mcpu=(\S+)', arch.target).groups()
    checks.check(proc.returncode == 0 and triple in text and cpu in text,
                 'host kiln inspect of the %s bundle (names %s, %s)' % (args.arch_name, triple, cpu))
    proc = run_tool('host kiln inspect --json', [args.kiln, 'inspect', target, '--json'], timeout=60)
    try:
        doc = json.loads((proc.stdout or b'').decode('utf-8', 'replace'))
        triples = [lib.get('target_triple', '') for lib in doc.get('libraries', [])]
        ok, detail = proc.returncode == 0 and bool(triples) and all(t == triple for t in triples) \
            and bool(doc.get('dispatches')), 'libraries %s' % triples
    except ValueError as e:
        ok, detail = False, 'not JSON: %s' % e
    checks.check(bool(ok), 'host kiln inspect --json of the %s bundle' % args.arch_name, detail)

    host_lib = lib_side % ('x86_64', EM_X86_64, 'ELFCLASS64')
    target_lib = lib_side % (arch.runtime_name, arch.e_machine, arch.elf_class)
    must_fail_cleanly(checks, 'host kiln run of the %s bundle' % args.arch_name, [args.kiln, 'run', target] + inputs,
                      os.path.join(workdir, 'out_wrong_host'), [target_lib, runs % ('x86_64', 'ELFCLASS64')])
    must_fail_cleanly(checks, '%s kiln run of the x86_64 bundle' % args.arch_name, cross + [bundles['host']] + inputs,
                      os.path.join(workdir, 'out_wrong_x86'), [host_lib, runs % (arch.runtime_name, arch.elf_class)])
    must_fail_cleanly(checks, '%s kiln run of the %s bundle (ELF class)' % (args.arch_name, OTHER[args.arch_name]),
                      cross + [bundles['other']] + inputs, os.path.join(workdir, 'out_wrong_class'),
                      [lib_side % (other.runtime_name, other.e_machine, other.elf_class),
                       runs % (arch.runtime_name, arch.elf_class)])

    # The demo's library replaced by reloc_kernels.c speaking kernel ABI version 2 (built in step 2).
    abi2 = os.path.join(os.path.dirname(workdir), 'reloc_kernels.abi2.so')
    label = '%s kiln run of a bundle whose library speaks kernel ABI 2' % args.arch_name
    try:
        abi2_bundle = with_library(args, target, abi2, os.path.join(workdir, 'demo.abi2.kiln'))
        must_fail_cleanly(checks, label, cross + [abi2_bundle] + inputs, os.path.join(workdir, 'out_abi2'),
                          ['kernel library speaks kernel ABI version 2 but this runtime speaks version 1'])
    except (SetupError, OSError) as e:
        checks.check(False, label, 'cannot make the bundle: %s' % e)

    # A 3 GiB arena: beyond a 32-bit address space, fine on a 64-bit one once
    # --max-arena lifts the session's default limit (1 GiB), which alone refuses it.
    big_host = patched(bundles['host'], os.path.join(workdir, 'demo.x86_64.arena3g.kiln'),
                       [(arena_bytes_pos(bundles['host']), '<Q', ARENA_3GIB)])
    big_target = patched(target, os.path.join(workdir, 'demo.%s.arena3g.kiln' % args.arch_name),
                         [(arena_bytes_pos(target), '<Q', ARENA_3GIB)])
    out = os.path.join(workdir, 'out_arena3g_host')
    os.makedirs(out, exist_ok=True)
    must_fail_cleanly(checks, 'host kiln run of the demo with a 3 GiB arena and the default --max-arena',
                      [args.kiln, 'run', big_host] + inputs, os.path.join(workdir, 'out_arena3g_default'),
                      ['%d bytes' % ARENA_3GIB, 'max_arena_bytes'])
    proc = run_tool('host kiln run, 3 GiB arena', [args.kiln, 'run', big_host, '--max-arena', '4G'] + inputs +
                    ['--output-dir', out], 120)
    checks.check(proc.returncode == 0, 'host kiln run of the demo with a 3 GiB arena (the patched bundle is valid)')
    if arch.elf_class == 'ELFCLASS64':
        out = os.path.join(workdir, 'out_arena3g')
        os.makedirs(out, exist_ok=True)
        proc = run_tool('%s kiln run, 3 GiB arena' % args.arch_name,
                        cross + [big_target, '--max-arena', '4G'] + inputs + ['--output-dir', out], 120)
        checks.check(proc.returncode == 0, '%s kiln run of the demo with a 3 GiB arena (64-bit address space)'
                     % args.arch_name)
    else:
        must_fail_cleanly(checks, '%s kiln run of the demo with a 3 GiB arena' % args.arch_name,
                          cross + [big_target, '--max-arena', '4G'] + inputs, os.path.join(workdir, 'out_arena3g'), ['%d bytes' % ARENA_3GIB, '32-bit address space'])
        # A 3 GiB input file (sparse): kiln's .npy reader refuses it instead of aborting in the allocator.
        big_input = os.path.join(workdir, 'input_3g.npy')
        with open(big_input, 'wb') as f:
            f.truncate(ARENA_3GIB)
        must_fail_cleanly(checks, '%s kiln run with a 3 GiB input file' % args.arch_name,
                          cross + [target, '--input', 'input=' + big_input], os.path.join(workdir, 'out_input3g'),
                          ['%d bytes' % ARENA_3GIB, '32-bit process'])
        os.remove(big_input)
        # The same library marked for the soft-float ABI (armel).
        lib_offset = libraries_of(args, target)[0][0]
        soft = patched(target, os.path.join(workdir, 'demo.armel.kiln'), [(lib_offset + 36, '<I', 0x05000200)])
        must_fail_cleanly(checks, '%s kiln run of a soft-float (armel) library' % args.arch_name, cross + [soft] + inputs,
                          os.path.join(workdir, 'out_armel'), ['soft-float ABI (armel', 'hard-float ABI (armhf)'])
    if arch.page_note:
        out = os.path.join(workdir, 'out_64k')
        os.makedirs(out, exist_ok=True)
        cmd = [args.qemu, '-p', '65536'] + qemu_cmd(args)[1:] + [args.cross_kiln, 'run', target] + inputs
        proc = run_tool('NOTE: kiln run with 64 KiB pages (qemu -p 65536), informational', cmd + ['--output-dir', out],
                        timeout=300)
        err = (proc.stderr or b'').decode('utf-8', 'replace').strip().splitlines()
        checks.notes['demo with 64 KiB pages (informational)'] = 'runs' if proc.returncode == 0 else \
            'does not load: %s' % (err[-1] if err else 'exit %s' % proc.returncode)


# ---------------------------------------------------------------------------

def setup(args) -> None:
    args.arch = ARCHES[args.arch_name]
    args.source_root = os.path.abspath(args.source_root)
    args.kilnc = kiln_e2e.check_exe(args.kilnc, 'kilnc')
    args.kiln = kiln_e2e.check_exe(args.kiln, 'kiln')
    args.node = kiln_e2e.find_node(args.node)
    args.ort_script = kiln_e2e.check_ort_dir(args.ort_dir)
    args.qemu = need_program(args.qemu or args.arch.qemu, 'qemu-user')
    gnu = args.arch.gnu
    args.cross_cc = need_program(gnu + '-gcc', 'gcc-' + gnu)
    args.cross_cxx = need_program(gnu + '-g++', 'g++-' + gnu)
    args.readelf = need_program(gnu + '-readelf', 'binutils-' + gnu)
    args.objdump = shutil.which(gnu + '-objdump')  # NEON notes (ARMv7), dot-product instructions (int8)
    args.lld = shutil.which('ld.lld') or need_program('ld.lld-15', 'lld-15 (kilnc links with it)')
    args.meson = args.meson or need_program('meson', 'the cross build')
    args.ninja = args.ninja or need_program('ninja', 'the cross build')
    args.sysroot = '/usr/' + gnu
    if not os.path.isfile(os.path.join(args.sysroot, args.arch.loader)):
        raise SetupError('%s/%s not found (libc6-*-cross); run tools/setup.sh' % (args.sysroot, args.arch.loader))
    if elf_machine(args.kiln) != EM_X86_64:
        raise SetupError('this test runs on an x86-64 host (%s is not an x86-64 ELF)' % args.kiln)
    args.model_list = [m for m in (args.models or ','.join(args.arch.models)).split(',') if m]
    for m in args.model_list:
        if m != 'demo' and m not in models.MODELS:
            raise SetupError('unknown model %r' % m)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--arch', dest='arch_name', required=True, choices=sorted(ARCHES))
    ap.add_argument('--kilnc', required=True)
    ap.add_argument('--kiln', required=True, help='the host (x86-64) kiln tool')
    ap.add_argument('--source-root', required=True)
    ap.add_argument('--cross-build-dir', required=True)
    ap.add_argument('--workdir', required=True)
    ap.add_argument('--ort-dir', required=True, help='tests/ort (ONNX Runtime for Node.js)')
    ap.add_argument('--node', default=None)
    ap.add_argument('--qemu', default=None, help='default: the architecture\'s qemu-user binary')
    ap.add_argument('--meson', default=None)
    ap.add_argument('--ninja', default=None)
    ap.add_argument('--jobs', type=int, default=2)
    ap.add_argument('--models', default=None, help='comma-separated; default: all of ' + ','.join(ALL_MODELS))
    ap.add_argument('--int8-venv', required=True, help='the venv of ONNX Runtime\'s quantizer (made on first use)')
    ap.add_argument('--int8-requirements', required=True, help='tests/e2e/requirements-int8.txt')
    ap.add_argument('--int8-models', default=None,
                    help='comma-separated; default: ' + '; '.join('%s: %s' % (a, ','.join(m))
                                                                    for a, m in cross_int8.INT8_MODELS.items()))
    args = ap.parse_args()

    t_start = time.monotonic()
    try:
        setup(args)
    except (SetupError, kiln_e2e.SetupError) as e:
        log('SETUP ERROR: %s' % e)
        return 2

    workdir = kiln_e2e.fresh_dir(args.workdir)
    checks = Checks()
    log('== 1. cross build (%s)' % args.cross_build_dir)
    args.cross_kiln = cross_build(args, checks)
    if args.cross_kiln:
        log('== 2. ELF loader relocations on %s' % args.arch_name)
        reloc_check(args, os.path.abspath(args.cross_build_dir), workdir, checks)
        log('== 3. models')
        demo = {}
        for m in args.model_list:
            bundles = model_check(args, m, workdir, checks)
            if m == 'demo':
                demo = bundles
        if demo:
            log('== 4. bad input')
            bad_input_checks(args, demo, os.path.join(workdir, 'demo'), checks)
            log('== 7. rpc-server on %s' % args.arch_name)
            rpc_check(args, demo, os.path.join(workdir, 'demo'), checks)
        log('== 6. int8')
        try:
            cross_int8.run_int8(args, workdir, checks, compile_bundle, extract_library, qemu_cmd, timed,
                                [m for m in (args.int8_models or '').split(',') if m])
        except kiln_e2e.SetupError as e:
            checks.check(False, 'int8: set-up', str(e))

    log('')
    log('== timings')
    for what, seconds in checks.timings:
        log('  %-60s %7.2f s' % (what, seconds))
    for what, text in checks.notes.items():
        log('  %-60s %s' % (what, text))
    log('  %-60s %7.2f s' % ('total', time.monotonic() - t_start))
    failed = checks.failed()
    log('%d checks, %d failed%s' % (len(checks.results), len(failed), (': ' + '; '.join(failed)) if failed else ''))
    passed = not failed and bool(checks.results)
    log('cross_%s: %s' % (args.arch_name, 'PASS' if passed else 'FAIL'))
    return 0 if passed else 1


if __name__ == '__main__':
    sys.exit(main())
