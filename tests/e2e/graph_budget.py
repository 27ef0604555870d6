#!/usr/bin/python3
"""Budgets of the graph optimizer and the memory planner (issue 4) on real models.

  graph_budget.py --name resnet50|mobilenet_v2|transformer_256 --kilnc PATH --kiln PATH --workdir DIR

Exports the model (torchvision, weights=None; or the 4-layer transformer
encoder, d=256, 4 heads, sequence 128, of models.build_transformer_encoder),
compiles it with `kilnc --report`, and checks:
  * dispatches (`kiln inspect --json`): ResNet-50 at most 60; MobileNetV2 at
    most #Conv + #Gemm + 3 of its ONNX graph;
  * the arena is at most 1.3x the lower bound (the most bytes live at once),
    from kilnc's plan-memory report line.
Exit 0 when every budget holds, 1 otherwise, 2 on a set-up error.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import kiln_e2e  # noqa: E402
import models  # noqa: E402

ARENA_RATIO = 1.3

BUDGETS = {
    'resnet50': dict(spec=models.ModelSpec(models._torchvision('resnet50'), (1, 3, 224, 224), frozenset({'Conv', 'Gemm'})),
                     max_dispatches=lambda ops: 60),
    'mobilenet_v2': dict(spec=models.ModelSpec(models._torchvision('mobilenet_v2'), (1, 3, 224, 224),
                                               frozenset({'Conv', 'Gemm'})),
                         max_dispatches=lambda ops: ops.count('Conv') + ops.count('Gemm') + 3),
    'transformer_256': dict(spec=models.ModelSpec(models.build_transformer_encoder, (1, 128, 256),
                                                  frozenset({'MatMul', 'Softmax'})),
                            max_dispatches=None),
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--name', required=True, choices=sorted(BUDGETS))
    ap.add_argument('--kilnc', required=True)
    ap.add_argument('--kiln', required=True)
    ap.add_argument('--workdir', required=True)
    args = ap.parse_args()
    try:
        kilnc = kiln_e2e.check_exe(args.kilnc, 'kilnc')
        kiln = kiln_e2e.check_exe(args.kiln, 'kiln')
    except kiln_e2e.SetupError as e:
        print('SETUP ERROR: %s' % e)
        return 2
    workdir = os.path.abspath(args.workdir)
    if os.path.isdir(workdir):
        shutil.rmtree(workdir)
    os.makedirs(workdir)
    budget = BUDGETS[args.name]
    onnx_path = os.path.join(workdir, args.name + '.onnx')
    model, _ = models.export_model(budget['spec'], onnx_path)
    ops = models.op_types(model)
    bundle = os.path.join(workdir, args.name + '.kiln')
    proc = kiln_e2e.run_tool('kilnc', [kilnc, onnx_path, '-o', bundle, '--report'], timeout=900)
    if proc.returncode != 0:
        print('FAIL: kilnc failed')
        return 1
    report = proc.stderr.decode('utf-8', 'replace')
    insp = kiln_e2e.run_tool('kiln inspect', [kiln, 'inspect', '--json', bundle], timeout=120)
    if insp.returncode != 0:
        print('FAIL: kiln inspect failed')
        return 1
    info = json.loads(insp.stdout.decode('utf-8'))
    ok = True
    n = len(info['dispatches'])
    if budget['max_dispatches'] is not None:
        limit = budget['max_dispatches'](ops)
        good = n <= limit
        print('dispatches: %d (budget %d) %s' % (n, limit, 'ok' if good else 'FAIL'))
        ok &= good
    else:
        print('dispatches: %d' % n)
    m = re.search(r'plan-memory: arena (\d+) bytes \(sum of tensors (\d+), lower bound (\d+)\)', report)
    if not m:
        print('FAIL: no plan-memory line in the kilnc report')
        return 1
    arena, total, lower = (int(g) for g in m.groups())
    ratio = arena / max(lower, 1)
    good = ratio <= ARENA_RATIO
    print('arena: %d bytes, %.3fx the lower bound %d (budget %.1fx; sum of tensors %d) %s'
          % (arena, ratio, lower, ARENA_RATIO, total, 'ok' if good else 'FAIL'))
    ok &= good
    print('%s: %s' % (args.name, 'PASS' if ok else 'FAIL'))
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
