"""Step 6 of cross_target.py: int8 models on another architecture, emulated.

Each model is quantized by ONNX Runtime's quantizer (QDQ, per-channel;
tests/e2e/quantize_models.py in the venv of kiln_e2e.ensure_int8_venv),
compiled by the host kilnc for each CPU of the architecture below, run by
the cross-built `kiln run` under qemu and compared with ONNX Runtime's int8
result in quantization steps (kiln_e2e.compare_steps: >= 99.9% of the
elements within 1 step, or as close as ONNX Runtime's own QDQ execution is).
Each CPU's library must contain its dot-product instruction (sdot, usdot)
or, without one, none. Every CPU gives the same outputs bit for bit (integer
accumulation, the same float epilogue).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from typing import Dict, Optional, Sequence

import kiln_e2e  # noqa: E402  (on sys.path through cross_target.py)
import models  # noqa: E402

# The models, per architecture (ARMv7 has no dot product: the widened form
# on NEON; the smaller set keeps the test's time down).
INT8_MODELS = {'aarch64': ('resnet18', 'mobilenet_v2', 'transformer'), 'armv7': ('resnet18', 'mobilenet_v2', 'transformer')}

# Per architecture: (label, -mcpu, qemu -cpu, the instruction its int8 kernels must use, or None: none of them).
INT8_CPUS = {
    'aarch64': (('cortex-a72', 'cortex-a72', 'cortex-a72', None),
                ('cortex-a76', 'cortex-a76', 'max', 'sdot'),       # dotprod
                ('neoverse-n2', 'neoverse-n2', 'max', 'usdot')),   # i8mm
    'armv7': (('cortex-a7', 'cortex-a7', 'cortex-a7', None),),
}
DOT_INSTRUCTIONS = ('sdot', 'udot', 'usdot')
# The models whose quantized GELUs become 256-entry tables (graph/pass_lookup_table.cpp),
# looked up on AArch64 with tbl/tbx from registers (codegen_llvm.cpp, emit_byte_table).
TABLE_MODELS = ('transformer',)
# Without a dot product the kernels widen bytes to int16 products and add pairs long (codegen_llvm.cpp).
WIDENED_INSTRUCTION = {'aarch64': 'saddlp', 'armv7': 'vpaddl.s16'}


def dot_counts(objdump: Optional[str], library: str) -> Dict[str, int]:
    """How many of each dot-product instruction the library has."""
    if not objdump:
        return {}
    text = subprocess.run([objdump, '-d', library], stdout=subprocess.PIPE, stderr=subprocess.PIPE).stdout.decode(
        'utf-8', 'replace')
    return {i: len(re.findall(r'\t%s\t' % re.escape(i), text))
            for i in DOT_INSTRUCTIONS + ('tbx',) + tuple(WIDENED_INSTRUCTION.values())}


def int8_check(args, name: str, workdir: str, checks, compile_bundle, extract_library, qemu_cmd, timed) -> None:
    """One int8 model on every CPU of the architecture (the helpers come from cross_target.py)."""
    mdir = os.path.join(workdir, 'int8_' + name)
    os.makedirs(mdir, exist_ok=True)
    kiln_e2e.log('== int8 %s' % name)
    python = kiln_e2e.ensure_int8_venv(args.int8_venv, args.int8_requirements)
    spec, onnx_path, input_path, _module, ok = kiln_e2e.prepare(name, mdir)
    qpath = os.path.join(mdir, '%s_qdq_pc.onnx' % name)
    feed = ['--input', '%s=%s' % (models.INPUT_NAME, input_path)]
    ort_out, noopt_out = os.path.join(mdir, 'ort_out'), os.path.join(mdir, 'ort_noopt_out')
    ok = ok and kiln_e2e.run_venv('quantize', python, ['quantize', '--model', onnx_path, '--variant', 'qdq_pc',
                                                       '--out', qpath])
    ok = ok and kiln_e2e.run_venv('onnxruntime int8', python, ['reference', '--model', qpath, '--out-dir', ort_out] + feed)
    ok = ok and kiln_e2e.run_venv('onnxruntime int8, no graph optimizations', python,
                                  ['reference', '--model', qpath, '--out-dir', noopt_out, '--no-optimization'] + feed)
    if not checks.check(ok, 'int8 %s: quantized by ONNX Runtime, its int8 reference' % name):
        return
    with open(os.path.splitext(qpath)[0] + '.json') as f:
        steps = {o['name']: o for o in json.load(f)['outputs']}
    outputs = spec.names_of_outputs()
    first: Optional[Dict[str, bytes]] = None
    for label, mcpu, qemu_cpu, instruction in INT8_CPUS[args.arch_name]:
        what = 'int8 %s -mcpu=%s' % (name, mcpu)
        target = re.sub(r'-mcpu=\S+', '-mcpu=' + mcpu, args.arch.target)
        bundle = os.path.join(mdir, '%s.%s.kiln' % (name, mcpu))
        if not compile_bundle(args, checks, what, qpath, bundle, target):
            continue
        counts = dot_counts(args.objdump, extract_library(args, bundle, os.path.join(mdir, 'kernels.%s.so' % mcpu)))
        if counts:
            if args.arch_name == 'aarch64' and name in TABLE_MODELS:
                checks.check(counts.pop('tbx') > 0, '%s: the lookup tables use tbx' % what)
            counts.pop('tbx', None)
            widened = WIDENED_INSTRUCTION[args.arch_name]
            if not instruction:
                checks.check(counts[widened] > 0, '%s: the widened kernels use %s' % (what, widened))
            for i in WIDENED_INSTRUCTION.values():
                counts.pop(i, None)
            used = sorted(i for i, c in counts.items() if c)
            checks.check(used == ([instruction] if instruction else []),
                         '%s: the kernels use %s' % (what, instruction or 'no dot-product instruction'),
                         ', '.join('%s %d' % kv for kv in sorted(counts.items())))
        out = os.path.join(mdir, 'out_' + mcpu)
        os.makedirs(out, exist_ok=True)
        proc = timed(checks, what + ' (qemu)', qemu_cmd(args, qemu_cpu) + [args.cross_kiln, 'run', bundle] + feed +
                     ['--output-dir', out], 600)
        if not checks.check(proc.returncode == 0, what + ': kiln run under qemu -cpu ' + qemu_cpu):
            continue
        import numpy as np
        same = True
        files = {}
        for oname in outputs:
            fname = kiln_e2e.sanitize(oname) + '.npy'
            got = np.load(os.path.join(out, fname))
            same &= kiln_e2e.compare_steps('%s output %s' % (what, oname), got, np.load(os.path.join(ort_out, fname)),
                                           steps[oname], 0.999, 4, baseline=np.load(os.path.join(noopt_out, fname)),
                                           baseline_bounds=True)
            with open(os.path.join(out, fname), 'rb') as f:
                files[fname] = f.read()
        checks.check(same, '%s matches ONNX Runtime int8 (quantization steps)' % what)
        if first is None:
            first = files
        else:
            checks.check(files == first, '%s: the outputs of the first CPU bit for bit' % what)


def run_int8(args, workdir: str, checks, compile_bundle, extract_library, qemu_cmd, timed,
             names: Sequence[str] = ()) -> None:
    for name in names or INT8_MODELS[args.arch_name]:
        int8_check(args, name, workdir, checks, compile_bundle, extract_library, qemu_cmd, timed)
