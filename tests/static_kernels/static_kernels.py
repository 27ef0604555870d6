#!/usr/bin/python3
"""Static kernels end to end: models compiled with `kilnc --kernels=static`,
their kernels linked into one test program with libkiln, run through the C
API and compared with ONNX Runtime; the program checks that loading and
running map no code.

  static_kernels.py --kilnc PATH --source-root DIR --workdir DIR --ort-dir DIR
                    [--arch x86_64|aarch64] [--runtime-archive PATH]
                    [--cross-build-dir DIR] [--cc cc] [--qemu qemu-aarch64]
                    [--sysroot /usr/aarch64-linux-gnu] [--meson meson] [--ninja ninja]

Steps (each prints PASS/FAIL):
  1. the runtime as a static archive for --arch (x86_64: --runtime-archive
     from the build; aarch64: libkiln cross-built in --cross-build-dir with
     tools/cross/aarch64-linux-gnu.ini);
  2. models (the demo, ops_conv, mobilenet_v2) exported (seeded), run by ONNX
     Runtime for reference outputs, compiled with --kernels=static for --arch:
     each gives MODEL.kiln, MODEL.kernels.o and MODEL.kernels.h;
  3. one program: static_runner.c + a generated register_all.c (it includes
     every MODEL.kernels.h, in C, and registers every library) + every
     MODEL.kernels.o + the runtime archive;
  4. each model run by it (under qemu for aarch64) matches ONNX Runtime
     (rtol 1e-4, atol 1e-5) and creates no executable mapping;
  5. controls: the demo compiled the ordinary way does map code (the check
     can see it); unregistered kernels fail to load naming the function to
     register; a bundle from another compilation of the same model (another
     -mcpu) fails to load saying so.

Exit status: 0 when everything passed, 1 on any failure, 2 on a set-up error.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from typing import Dict, List, Optional

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'e2e'))

import numpy as np  # noqa: E402

import kiln_e2e  # noqa: E402
import models  # noqa: E402

log = kiln_e2e.log
run_tool = kiln_e2e.run_tool

TARGETS = {  # --arch -> (kilnc target, a target for the same CPU family with another -mcpu)
    'x86_64': ('host', 'llvm -mtriple=x86_64-linux-gnu -mcpu=haswell'),
    'aarch64': ('llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72', 'llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a53'),
}
MODELS = ['demo', 'ops_conv', 'mobilenet_v2']
RTOL, ATOL = 1e-4, 1e-5


class SetupError(Exception):
    pass


class Checks:
    def __init__(self):
        self.failed: List[str] = []

    def check(self, ok: bool, what: str, detail: str = '') -> bool:
        log('CHECK %s: %s%s' % (what, 'PASS' if ok else 'FAIL', (' (' + detail + ')') if detail else ''))
        if not ok:
            self.failed.append(what)
        return ok


def runtime_archive(args, checks: Checks) -> str:
    if args.arch == 'x86_64':
        if not args.runtime_archive or not os.path.isfile(args.runtime_archive):
            raise SetupError('--runtime-archive (libkiln_runtime.a) is missing')
        return args.runtime_archive
    build_dir = os.path.abspath(args.cross_build_dir)
    cross_file = os.path.join(args.source_root, 'tools', 'cross', 'aarch64-linux-gnu.ini')
    if not os.path.isfile(os.path.join(build_dir, 'meson-private', 'coredata.dat')):
        if os.path.isdir(build_dir):
            shutil.rmtree(build_dir)
        proc = run_tool('meson setup (aarch64 runtime)',
                        [args.meson, 'setup', build_dir, args.source_root, '--cross-file', cross_file,
                         '-Dcompiler=disabled', '-Dtests=false', '-Dtools=false'], timeout=300)
        if not checks.check(proc.returncode == 0, 'aarch64 runtime: meson setup'):
            return ''
    proc = run_tool('ninja (aarch64 runtime)', [args.ninja, '-C', build_dir, '-j', '2'], timeout=900)
    archive = os.path.join(build_dir, 'runtime', 'libkiln_runtime.a')
    checks.check(proc.returncode == 0 and os.path.isfile(archive), 'aarch64 runtime: libkiln_runtime.a')
    return archive


def export(name: str, workdir: str, source_root: str):
    """(onnx path, input .npy path, output names) of model `name`."""
    import onnx
    os.makedirs(workdir, exist_ok=True)
    if name == 'demo':
        onnx_path = os.path.join(source_root, 'demo', 'shapes_cnn.onnx')
        input_path = os.path.join(source_root, 'demo', 'example_triangle.npy')
        model = onnx.load(onnx_path)
    else:
        spec = models.MODELS[name]
        onnx_path = os.path.join(workdir, name + '.onnx')
        input_path = os.path.join(workdir, 'input.npy')
        model, _ = models.export_model(spec, onnx_path)
        np.save(input_path, models.make_input(spec))
    inputs = [i.name for i in model.graph.input if i.name not in {t.name for t in model.graph.initializer}]
    return onnx_path, {inputs[0]: input_path}, [o.name for o in model.graph.output]


def kilnc(args, onnx_path: str, out: str, target: str, extra: List[str], checks: Checks, what: str) -> bool:
    os.makedirs(os.path.dirname(out), exist_ok=True)
    proc = run_tool('kilnc ' + what, [args.kilnc, onnx_path, '-o', out, '--target=' + target] + extra, timeout=900)
    return checks.check(proc.returncode == 0 and os.path.isfile(out), what)


def run_cmd(args) -> List[str]:
    return [] if args.arch == 'x86_64' else [args.qemu, '-L', args.sysroot]


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--kilnc', required=True)
    p.add_argument('--source-root', required=True)
    p.add_argument('--workdir', required=True)
    p.add_argument('--ort-dir', required=True)
    p.add_argument('--arch', choices=sorted(TARGETS), default='x86_64')
    p.add_argument('--runtime-archive')
    p.add_argument('--cross-build-dir')
    p.add_argument('--cc', default='cc')
    p.add_argument('--qemu', default='qemu-aarch64')
    p.add_argument('--sysroot', default='/usr/aarch64-linux-gnu')
    p.add_argument('--meson', default='meson')
    p.add_argument('--ninja', default='ninja')
    args = p.parse_args(argv)
    checks = Checks()
    try:
        for tool in [args.kilnc, args.cc] + ([args.qemu] if args.arch != 'x86_64' else []):
            if not shutil.which(tool):
                raise SetupError('%s not found' % tool)
        node = kiln_e2e.find_node(None)
        ort_script = kiln_e2e.check_ort_dir(args.ort_dir)
        workdir = kiln_e2e.fresh_dir(os.path.abspath(args.workdir))
        archive = runtime_archive(args, checks)
        if not archive:
            return 1
    except (SetupError, kiln_e2e.SetupError) as e:
        log('static_kernels: set-up error: %s' % e)
        return 2
    target, other_target = TARGETS[args.arch]

    # 2. Models: references and static compilations.
    compiled: Dict[str, dict] = {}
    for name in MODELS:
        mdir = os.path.join(workdir, name)
        onnx_path, inputs, outputs = export(name, mdir, args.source_root)
        ref = os.path.join(mdir, 'ref')
        if not checks.check(kiln_e2e.run_ort(node, ort_script, onnx_path, ref, inputs), '%s: ONNX Runtime reference' % name):
            continue
        bundle = os.path.join(mdir, 'static', name + '.kiln')
        if not kilnc(args, onnx_path, bundle, target, ['--kernels=static'], checks, '%s: kilnc --kernels=static' % name):
            continue
        obj, header = bundle[:-5] + '.kernels.o', bundle[:-5] + '.kernels.h'
        if not checks.check(os.path.isfile(obj) and os.path.isfile(header), '%s: .kernels.o and .kernels.h written' % name):
            continue
        compiled[name] = dict(onnx=onnx_path, inputs=inputs, outputs=outputs, ref=ref, bundle=bundle, obj=obj,
                              header=header)
    if not compiled:
        return 1

    # 3. One program with every model's kernels, registered from C.
    reg = os.path.join(workdir, 'register_all.c')
    with open(reg, 'w') as f:
        f.write('// Generated by static_kernels.py: registers every linked model.\n#include <stdio.h>\n')
        for m in compiled.values():
            f.write('#include "%s"\n' % m['header'])
        f.write('int kiln_test_register_all(void) {\n  kiln_status_t s;\n')
        for name in compiled:
            f.write('  if ((s = kiln_static_library_register(kiln_static_library_%s()))) {\n'
                    '    fprintf(stderr, "register %s: %%s\\n", kiln_status_message(s));\n'
                    '    kiln_status_free(s);\n    return 1;\n  }\n' % (name, name))
        f.write('  return 0;\n}\n')
    runner = os.path.join(workdir, 'static_runner')
    cmd = [args.cc, '-std=c11', '-O1', '-Wall', '-Werror', '-I', os.path.join(args.source_root, 'runtime', 'include'),
           '-o', runner, os.path.join(HERE, 'static_runner.c'), reg] + [m['obj'] for m in compiled.values()] + \
        [archive, '-lpthread', '-lm', '-ldl']
    proc = run_tool('cc static_runner', cmd, timeout=300)
    if not checks.check(proc.returncode == 0, 'link: runner + %d kernel objects + the runtime archive' % len(compiled)):
        return 1

    # 4. Every model through the runner, against ONNX Runtime.
    for name, m in compiled.items():
        out = os.path.join(workdir, name, 'out')
        os.makedirs(out, exist_ok=True)
        raw = []
        for i, (iname, path) in enumerate(m['inputs'].items()):
            rp = os.path.join(workdir, name, 'input%d.bin' % i)
            np.load(path).tofile(rp)
            raw.append(rp)
        t0 = time.monotonic()
        proc = run_tool('%s: static_runner' % name, run_cmd(args) + [runner, m['bundle'], out] + raw, timeout=600)
        if not checks.check(proc.returncode == 0, '%s: runs with static kernels, no executable mapping created' % name,
                            '%.1f s' % (time.monotonic() - t0)):
            continue
        ok = True
        for i, oname in enumerate(m['outputs']):
            ref = np.load(os.path.join(m['ref'], kiln_e2e.sanitize(oname) + '.npy'))
            got = np.fromfile(os.path.join(out, 'output%d.bin' % i), dtype=ref.dtype)
            ok &= got.size == ref.size and kiln_e2e.compare("%s output '%s'" % (name, oname), got.reshape(ref.shape),
                                                            ref, RTOL, ATOL)
        checks.check(ok, '%s: outputs match ONNX Runtime (rtol %g, atol %g)' % (name, RTOL, ATOL))

    # 5. Controls.
    demo = compiled.get('demo')
    if demo:
        dynamic = os.path.join(workdir, 'demo', 'dynamic', 'demo.kiln')
        if kilnc(args, demo['onnx'], dynamic, target, [], checks, 'demo: kilnc (kernels in the bundle)'):
            raw = os.path.join(workdir, 'demo', 'input0.bin')
            proc = run_tool('control: ELF kernels', run_cmd(args) + [runner, '--expect-exec', dynamic,
                                                                   os.path.join(workdir, 'demo', 'out')] + [raw], timeout=300)
            checks.check(proc.returncode == 0, 'control: the mapping check sees the code an ELF bundle maps')
            proc = run_tool('control: unregistered', run_cmd(args) + [runner, '--no-register', demo['bundle'],
                                                                    os.path.join(workdir, 'demo', 'out')] + [raw], timeout=300)
            err = proc.stderr.decode('utf-8', 'replace')
            checks.check(proc.returncode == 1 and 'NOT_FOUND' in err and
                         'kiln_static_library_register(kiln_static_library_demo())' in err,
                         'unregistered static kernels: the load fails naming the function to register')
            other = os.path.join(workdir, 'demo', 'other', 'demo.kiln')
            if kilnc(args, demo['onnx'], other, other_target, ['--kernels=static'], checks, 'demo: kilnc for another -mcpu'):
                proc = run_tool('control: other compilation', run_cmd(args) + [runner, other,
                                                                             os.path.join(workdir, 'demo', 'out')] + [raw],
                                timeout=300)
                err = proc.stderr.decode('utf-8', 'replace')
                checks.check(proc.returncode == 1 and 'different compilations' in err,
                             'a bundle from another compilation: the load fails saying so')
    log('static_kernels (%s): %s' % (args.arch, 'PASS' if not checks.failed else 'FAIL: ' + ', '.join(checks.failed)))
    return 0 if not checks.failed else 1


if __name__ == '__main__':
    sys.exit(main())
