#!/usr/bin/python3
"""Packs what a GPU machine needs to test and time Kiln's Vulkan backend there,
when that machine has a GPU driver but no kilnc (compile here, run there).

  /usr/bin/python3 tools/gpu_check/prepare.py --out DIR [--models a,b,...]

Writes DIR/pack.tar.xz (everything below) and DIR/pack/ (its contents):
  bin/kiln, bin/libvulkan.so.1       the runtime's CLI and this machine's Vulkan loader
  layers/                            Khronos validation layer (+ its manifest)
  conformance/data/                  ../shared/onnx-conformance (inputs and references)
  conformance/bundles_<target>/      kilnc's results for each case (run_conformance.py
                                     --save-bundles, targets vulkan and vulkan-shared)
  models/<name>.<plain|shared>.kiln  bench models compiled with --target=vulkan,
                                     --vulkan-shared-memory off / on
  models/<name>.input.npy, .ref.npy  a seeded input and ONNX Runtime's output for it

The bench models' float weights are rounded to bfloat16 precision (still float32)
before compiling, so that the pack compresses; the reference is computed from the
rounded model, so the check is exact in intent. tools/gpu_check/on_device.py runs the
pack on the GPU machine (see tools/gpu_check/README.md).
"""

import argparse
import os
import shutil
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, 'bench'))

DEFAULT_MODELS = 'squeezenet1_1,mobilenet_v2,transformer,decoder_step,ppocr_det,ppocr_rec'
VARIANTS = {'plain': ['--vulkan-shared-memory=off'], 'shared': ['--vulkan-shared-memory=on']}
VALIDATION_LAYER = '/usr/lib/x86_64-linux-gnu/libVkLayer_khronos_validation.so'
VALIDATION_JSON = '/usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json'
VULKAN_LOADER = '/usr/lib/x86_64-linux-gnu/libvulkan.so.1'


def run(cmd, **kw):
    print('+ ' + ' '.join(cmd), flush=True)
    subprocess.run(cmd, check=True, **kw)


def round_to_bf16(onnx_mod, numpy_helper, np, src, dst):
    """Saves SRC with every float32 initializer rounded (to nearest even) to bfloat16 precision."""
    model = onnx_mod.load(src)
    for i, t in enumerate(model.graph.initializer):
        if t.data_type != onnx_mod.TensorProto.FLOAT:
            continue
        a = numpy_helper.to_array(t).astype(np.float32)
        bits = a.view(np.uint32).astype(np.uint64)
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        r = bits.astype(np.uint32).view(np.float32).reshape(a.shape)
        r = np.where(np.isfinite(a), r, a)
        model.graph.initializer[i].CopyFrom(numpy_helper.from_array(r, t.name))
    onnx_mod.save(model, dst)


def pack_models(names, out, kilnc, work):
    import numpy as np
    import onnx
    from onnx import numpy_helper
    import run_bench
    from bench_config import MODELS
    src_dir = os.path.join(work, 'models_src')
    os.makedirs(src_dir, exist_ok=True)
    info = run_bench.export_models(names, src_dir, force=False)
    dst = os.path.join(out, 'models')
    os.makedirs(dst, exist_ok=True)
    rng = np.random.default_rng(20261127)
    for name in names:
        rounded = os.path.join(work, name + '.bf16.onnx')
        round_to_bf16(onnx, numpy_helper, np, info[name]['onnx'], rounded)
        for variant, flags in VARIANTS.items():
            run([kilnc, rounded, '--target=vulkan', '-o', os.path.join(dst, '%s.%s.kiln' % (name, variant))] + flags)
        x = rng.uniform(0.0, 1.0, size=MODELS[name][1]).astype(np.float32)
        inp = os.path.join(dst, name + '.input.npy')
        np.save(inp, x)
        ref_dir = os.path.join(work, name + '_ref')
        run(['node', os.path.join(REPO, 'tests', 'ort', 'ort_run.js'), rounded, ref_dir, 'input=' + inp])
        outs = sorted(os.listdir(ref_dir))
        if len(outs) != 1:
            raise SystemExit('%s: expected one output, ORT wrote %s' % (name, outs))
        shutil.copyfile(os.path.join(ref_dir, outs[0]), os.path.join(dst, name + '.ref.npy'))


def pack_conformance(out, kilnc, kiln, data, work, jobs, reuse):
    os.makedirs(os.path.join(out, 'conformance'), exist_ok=True)
    shutil.copytree(data, os.path.join(out, 'conformance', 'data'))
    for target in ('vulkan', 'vulkan-shared'):
        if reuse:
            shutil.copytree(os.path.join(reuse, 'bundles_' + target),
                            os.path.join(out, 'conformance', 'bundles_' + target))
            continue
        # Runs each case on this machine's Vulkan (lavapipe) too: the log says what it passes here.
        subprocess.run(['/usr/bin/python3', os.path.join(REPO, 'tests', 'conformance', 'run_conformance.py'),
                        '--kilnc', kilnc, '--kiln', kiln, '--data', data, '--jobs', str(jobs),
                        '--workdir', os.path.join(work, 'conf_' + target),
                        '--report', os.path.join(out, 'conformance', 'lavapipe_%s.md' % target),
                        '--target', target,
                        '--save-bundles', os.path.join(out, 'conformance', 'bundles_' + target)], check=False)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--out', required=True)
    ap.add_argument('--build', default=os.path.join(REPO, 'build'))
    ap.add_argument('--data', default=os.path.join(os.path.dirname(REPO), 'shared', 'onnx-conformance'))
    ap.add_argument('--models', default=DEFAULT_MODELS)
    ap.add_argument('--no-conformance', action='store_true')
    ap.add_argument('--conformance-from', metavar='DIR',
                    help='take bundles_vulkan/ and bundles_vulkan-shared/ from an earlier '
                         'run_conformance.py --save-bundles run instead of compiling them again')
    ap.add_argument('--jobs', type=int, default=2)
    args = ap.parse_args()
    kilnc = os.path.join(args.build, 'compiler', 'kilnc')
    kiln = os.path.join(args.build, 'tools', 'kiln', 'kiln')
    out = os.path.abspath(args.out)
    pack = os.path.join(out, 'pack')
    work = os.path.join(out, 'work')
    if os.path.isdir(pack):
        shutil.rmtree(pack)
    os.makedirs(os.path.join(pack, 'bin'))
    os.makedirs(os.path.join(pack, 'layers'))
    os.makedirs(work, exist_ok=True)
    shutil.copy(kiln, os.path.join(pack, 'bin', 'kiln'))
    run(['strip', os.path.join(pack, 'bin', 'kiln')])
    shutil.copy(VULKAN_LOADER, os.path.join(pack, 'bin', 'libvulkan.so.1'))
    shutil.copy(VALIDATION_LAYER, os.path.join(pack, 'layers'))
    with open(VALIDATION_JSON) as f:
        manifest = f.read().replace('"library_path": "libVkLayer_khronos_validation.so"',
                                    '"library_path": "./libVkLayer_khronos_validation.so"')
    with open(os.path.join(pack, 'layers', 'VkLayer_khronos_validation.json'), 'w') as f:
        f.write(manifest)
    if args.models:
        pack_models([m for m in args.models.split(',') if m], pack, kilnc, work)
    if not args.no_conformance:
        pack_conformance(pack, kilnc, kiln, args.data, work, args.jobs, args.conformance_from)
    # xz (Python's tarfile reads it where no xz is installed) with a dictionary larger than a
    # model: each model's plain and shared bundles hold the same weights, stored once.
    archive = os.path.join(out, 'pack.tar.xz')
    with open(archive, 'wb') as f:
        tar = subprocess.Popen(['tar', '-C', out, '-cf', '-', 'pack'], stdout=subprocess.PIPE)
        subprocess.run(['xz', '-T1', '--lzma2=preset=6,dict=192MiB', '-c'], stdin=tar.stdout, stdout=f, check=True)
        if tar.wait() != 0:
            raise SystemExit('tar failed')
    print('%s: %.1f MB' % (archive, os.path.getsize(archive) / 1e6))


if __name__ == '__main__':
    main()
