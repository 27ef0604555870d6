#!/usr/bin/python3
"""The auto-tuner end to end (docs/tuning.md): `kilnc tune` against a local
`kiln rpc-server`, its log, `kilnc --tuning-log`, and the correctness of the
schedules' search spaces.

  tuning_models.py --kilnc KILNC --kiln KILN --ort-dir tests/ort --workdir DIR [--node node] [--vulkan]

1. Every point of a space must compile to correct code: for the demo model,
   the seeded `ops_conv` and `ops_matmul_softmax` operator models, the
   transformer encoder and ResNet-18 (streaming convolutions, its classifier),
   `kilnc tune --list-workloads` gives each workload's knobs; three seeded
   random points per workload (every knob drawn from its options) are written
   as a log, compiled with --tuning-log (the bundle must differ from the
   hand-written one) and run against ONNX Runtime (rtol 1e-4, atol 1e-5).
   With --vulkan, the same for the Vulkan schedules (--target=vulkan
   --vulkan-shared-memory=on) of `ops_conv`, `matmul_tiles` and ResNet-18,
   run on the Vulkan device.
2. `kilnc tune` on the demo model (a few trials): every workload tuned, its
   log records well-formed; the summary's model line; the tuned bundle
   matches ONNX Runtime. With --vulkan, the demo tuned for Vulkan too.
3. The log reused: tuning the demo again measures nothing and starts no
   server; a second model made of the demo's first layers (onnx.utils.
   extract_model) plus a conv of its own takes its shared workloads from the
   log and measures only the new one; a log without its verdicts (an
   unfinished tuning) resumes: its points count as trials and the
   hand-written points are not measured again.
4. Refusals: an unreachable --rpc, a log line that is not a record (named by
   file and line), a log of two thread counts without --tuning-threads, a
   missing --tuning-log.
"""

import json
import os
import random
import re
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnx.numpy_helper  # noqa: E402
import onnx.shape_inference  # noqa: E402
import onnx.utils  # noqa: E402

import kiln_e2e  # noqa: E402

log = kiln_e2e.log
RTOL, ATOL = 1e-4, 1e-5
DEMO = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'demo', 'shapes_cnn.onnx')
SPACE_MODELS = ['ops_conv', 'ops_matmul_softmax', 'transformer', 'attention_blocks', 'resnet18']
# --vulkan: the GPU schedules' spaces (register tiles; the shared-memory blocks of matmul_tiles'
# products and ResNet-18's large convolutions).
VULKAN_SPACE_MODELS = ['ops_conv', 'matmul_tiles', 'resnet18']
VULKAN_ARGS = ['--target=vulkan', '--vulkan-shared-memory=on']


class Checks:
    def __init__(self):
        self.failed = []
        self.count = 0

    def check(self, ok, what, detail=''):
        self.count += 1
        log('CHECK %s: %s%s' % (what, 'PASS' if ok else 'FAIL', '' if ok or not detail else ' -- %s' % detail))
        if not ok:
            self.failed.append(what)
        return ok


def run(cmd, timeout=900):
    log('$ ' + ' '.join(cmd))
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    for line in (proc.stdout + proc.stderr).splitlines()[-40:]:
        log('  ' + line[:240])
    return proc


def list_workloads(args, onnx_path, compile_args=()):
    """{workload key: [(knob, [options], fallback)]} from kilnc tune --list-workloads."""
    proc = run([args.kilnc, 'tune', onnx_path, '--list-workloads'] + list(compile_args))
    if proc.returncode != 0:
        return None, None
    header = proc.stdout.splitlines()[0]
    target = re.search(r'target (.*): \d+ workloads$', header).group(1)
    spaces = {}
    for line in proc.stdout.splitlines()[1:]:
        key = line[:line.index(' kernels=')]
        knobs = []
        for name, options in re.findall(r' (\w+)=\{([^}]*)\}', line[line.index(' knobs:'):]):
            values = [int(o.rstrip('*')) for o in options.split(',')]
            fallback = [int(o[:-1]) for o in options.split(',') if o.endswith('*')][0]
            knobs.append((name, values, fallback))
        spaces[key] = knobs
    return target, spaces


def version(args):
    return run([args.kilnc, '--version']).stdout.split()[1]


def write_log(path, records):
    with open(path, 'w') as f:
        for r in records:
            f.write(json.dumps(r) + '\n')


def random_points_check(args, c, name, onnx_path, inputs, outputs, workdir, compile_args=()):
    """Three logs of seeded random points of every workload, each compiled (with COMPILE_ARGS: the
    target) and run against ONNX Runtime."""
    target, spaces = list_workloads(args, onnx_path, compile_args)
    if not c.check(bool(spaces), '%s: kilnc tune --list-workloads lists its workloads' % name):
        return
    plain = os.path.join(workdir, 'plain.kiln')
    if not c.check(run([args.kilnc, onnx_path, '-o', plain] + list(compile_args)).returncode == 0, '%s: compiles' % name):
        return
    rng = random.Random(name)
    kiln_version = version(args)
    for draw in range(3):
        records, changed = [], 0
        for key, knobs in sorted(spaces.items()):
            config = {knob: rng.choice(options) for knob, options, _ in knobs}
            changed += any(config[k] != fallback for k, _, fallback in knobs)
            records.append({'workload': key, 'target': target, 'kiln': kiln_version, 'threads': 1,
                            'config': config, 'ns': 1000, 'trial': 1, 'validated': True})
        ddir = os.path.join(workdir, 'draw%d' % draw)
        os.makedirs(ddir, exist_ok=True)
        log_path = os.path.join(ddir, 'points.jsonl')
        write_log(log_path, records)
        bundle = os.path.join(ddir, name + '.kiln')
        proc = run([args.kilnc, onnx_path, '-o', bundle, '--tuning-log', log_path] + list(compile_args))
        if not c.check(proc.returncode == 0, '%s: random points %d compile (%d of %d workloads off their hand-written point)'
                       % (name, draw, changed, len(spaces)), proc.stderr[-400:]):
            continue
        if changed:
            c.check(open(bundle, 'rb').read() != open(plain, 'rb').read(),
                    '%s: random points %d change the bundle' % (name, draw))
        c.check(kiln_e2e.run_compare(args.kiln, args.node, args.ort_script, onnx_path, bundle, inputs, outputs, ddir,
                                     RTOL, ATOL),
                '%s: random points %d match ONNX Runtime (rtol %g, atol %g)' % (name, draw, RTOL, ATOL))


def summary_rows(stdout):
    """{workload: trials column} of a kilnc tune summary."""
    rows = {}
    for line in stdout.splitlines():
        m = re.match(r'  (\S+ \S+ \[[^\]]*\](?: [a-z]\w*)*)\s+(\d+)\s+(\S+)\s', line)
        if m:
            rows[m.group(1)] = m.group(3)
    return rows


def main():
    args = kiln_e2e.script_args(__doc__.split('\n')[0], lambda ap: ap.add_argument(
        '--vulkan', action='store_true', help='also the Vulkan schedules\' spaces and tuning on the Vulkan device'))
    args.node = kiln_e2e.find_node(args.node)
    args.ort_script = kiln_e2e.check_ort_dir(args.ort_dir)
    work = kiln_e2e.fresh_dir(args.workdir)
    c = Checks()

    # 1. The spaces: random points compile to correct code.
    demo_dir = os.path.join(work, 'demo')
    os.makedirs(demo_dir)
    demo = os.path.join(demo_dir, 'demo.onnx')
    shutil.copy(DEMO, demo)
    demo_input = os.path.join(demo_dir, 'input.npy')
    model = onnx.load(demo)
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    np.save(demo_input, np.random.default_rng(7).random(shape, dtype=np.float32))
    demo_inputs = {model.graph.input[0].name: demo_input}
    demo_outputs = [o.name for o in model.graph.output]
    random_points_check(args, c, 'demo', demo, demo_inputs, demo_outputs, demo_dir)
    for name in SPACE_MODELS:
        mdir = os.path.join(work, name)
        spec, onnx_path, input_path, _module, ok = kiln_e2e.prepare(name, mdir)
        if not c.check(ok, '%s: exported' % name):
            continue
        exported = onnx.load(onnx_path)
        outputs = [o.name for o in exported.graph.output]
        random_points_check(args, c, name, onnx_path, {exported.graph.input[0].name: input_path}, outputs, mdir)
    if args.vulkan:  # the GPU schedules' spaces, with shared memory (its blocks are knobs too)
        for name in VULKAN_SPACE_MODELS:
            mdir = os.path.join(work, 'vulkan_' + name)
            spec, onnx_path, input_path, _module, ok = kiln_e2e.prepare(name, mdir)
            if not c.check(ok, '%s: exported' % name):
                continue
            exported = onnx.load(onnx_path)
            outputs = [o.name for o in exported.graph.output]
            random_points_check(args, c, 'vulkan ' + name, onnx_path, {exported.graph.input[0].name: input_path},
                                outputs, mdir, VULKAN_ARGS)

    # 2. Tuning the demo on a local server.
    tune_dir = os.path.join(work, 'tune')
    os.makedirs(tune_dir)
    log_path = os.path.join(tune_dir, 'tune.jsonl')
    tune = [args.kilnc, 'tune', demo, '--log', log_path, '--repeats', '2', '--kiln', args.kiln]
    proc = run(tune + ['--trials', '4'])
    target, spaces = list_workloads(args, demo)
    rows = summary_rows(proc.stdout)
    c.check(proc.returncode == 0 and sorted(rows) == sorted(spaces) and
            all(rows[k] == '4' or int(rows[k]) >= 1 for k in rows) and 'on 127.0.0.1:' in proc.stdout,
            'kilnc tune measures every workload of the demo on a local server', proc.stdout[-600:] + proc.stderr[-600:])
    c.check(re.search(r'^model: (hand-written .* tuned .* ms|every workload keeps its hand-written point)', proc.stdout,
                      re.M) is not None, 'the summary compares the model before and after')
    records = [json.loads(line) for line in open(log_path)] if os.path.isfile(log_path) else []
    good = [r for r in records if r['target'] == target and r['workload'] in spaces and r['threads'] == 1 and
            isinstance(r['config'], dict) and (r['ns'] is None or r['ns'] > 0)]
    c.check(records and len(good) == len(records) and
            all(sum(1 for r in records if r['workload'] == k and not r.get('validated')) >= 1 for k in spaces),
            'the log holds a well-formed record per measurement (%d)' % len(records))
    tuned = os.path.join(tune_dir, 'demo_tuned.kiln')
    ok = run([args.kilnc, demo, '-o', tuned, '--tuning-log', log_path]).returncode == 0
    c.check(ok and kiln_e2e.run_compare(args.kiln, args.node, args.ort_script, demo, tuned, demo_inputs, demo_outputs,
                                        tune_dir, RTOL, ATOL), 'the tuned demo matches ONNX Runtime')

    if args.vulkan:  # the same on the server's Vulkan device
        vlog = os.path.join(tune_dir, 'vulkan.jsonl')
        proc = run([args.kilnc, 'tune', demo, '--log', vlog, '--repeats', '2', '--trials', '3', '--kiln', args.kiln] +
                   VULKAN_ARGS)
        vtarget, vspaces = list_workloads(args, demo, VULKAN_ARGS)
        rows = summary_rows(proc.stdout)
        vrecords = [json.loads(line) for line in open(vlog)] if os.path.isfile(vlog) else []
        c.check(proc.returncode == 0 and vspaces and sorted(rows) == sorted(vspaces) and
                all(k.startswith(('conv2d_gpu ', 'matmul_gpu ')) for k in vspaces) and vrecords and
                all(r['target'] == vtarget and r['ns'] is not None and r['ns'] > 0 for r in vrecords),
                'kilnc tune --target=vulkan measures every GPU workload of the demo on the server\'s Vulkan device',
                proc.stdout[-600:] + proc.stderr[-600:])
        vtuned = os.path.join(tune_dir, 'demo_vulkan_tuned.kiln')
        ok = run([args.kilnc, demo, '-o', vtuned, '--tuning-log', vlog] + VULKAN_ARGS).returncode == 0
        c.check(ok and kiln_e2e.run_compare(args.kiln, args.node, args.ort_script, demo, vtuned, demo_inputs,
                                            demo_outputs, tune_dir, RTOL, ATOL),
                'the demo tuned for Vulkan matches ONNX Runtime')

    # 3. The log reused, by the same model and by one sharing its first layers.
    before = len(records)
    proc = run(tune + ['--trials', '4'])
    after = len(open(log_path).read().splitlines())
    c.check(proc.returncode == 0 and 'on 127.0.0.1:' not in proc.stdout and after == before and
            ('%d from the log without measuring' % len(spaces)) in proc.stdout and
            all(v == 'log' for v in summary_rows(proc.stdout).values()),
            'tuning the demo again takes every workload from the log and measures nothing', proc.stdout[-400:])
    prefix = os.path.join(tune_dir, 'prefix.onnx')
    second_conv = [n for n in model.graph.node if n.op_type == 'Conv'][1].output[0]
    onnx.utils.extract_model(demo, prefix, [model.graph.input[0].name], [second_conv])
    # ... and one layer of its own: a 3x3 conv to 48 channels (a workload the demo lacks).
    m = onnx.load(prefix)
    dims = next([d.dim_value for d in v.type.tensor_type.shape.dim] for v in
                list(onnx.shape_inference.infer_shapes(m).graph.value_info) + list(m.graph.output)
                if v.name == second_conv)
    channels = dims[1]
    weight = np.random.default_rng(3).standard_normal((48, channels, 3, 3)).astype(np.float32) * 0.1
    m.graph.initializer.append(onnx.numpy_helper.from_array(weight, 'own_w'))
    m.graph.node.append(onnx.helper.make_node('Conv', [second_conv, 'own_w'], ['own_out'], pads=[1, 1, 1, 1]))
    del m.graph.output[:]
    m.graph.output.append(onnx.helper.make_tensor_value_info('own_out', onnx.TensorProto.FLOAT,
                                                             [dims[0], 48, dims[2], dims[3]]))
    onnx.save(m, prefix)
    _, prefix_spaces = list_workloads(args, prefix)
    shared = sorted(set(prefix_spaces) & set(spaces))
    proc = run([args.kilnc, 'tune', prefix, '--log', log_path, '--repeats', '2', '--trials', '2', '--kiln', args.kiln])
    rows = summary_rows(proc.stdout)
    own = set(prefix_spaces) - set(spaces)
    c.check(proc.returncode == 0 and shared and own and all(rows.get(k) == 'log' for k in shared) and
            all(rows.get(k) == '2' for k in own) and 'on 127.0.0.1:' in proc.stdout,
            'a model sharing %d workloads with the demo measures only its own (%d)'
            % (len(shared), len(set(prefix_spaces) - set(spaces))), proc.stdout[-600:])

    # An unfinished tuning resumes: without its verdicts the log's points count as trials.
    resume_log = os.path.join(tune_dir, 'resume.jsonl')
    unfinished = [line for line in open(log_path) if line.strip() and not json.loads(line).get('validated')]
    with open(resume_log, 'w') as f:
        f.writelines(unfinished)
    proc = run([args.kilnc, 'tune', demo, '--log', resume_log, '--repeats', '2', '--trials', '6', '--kiln', args.kiln])
    rows = summary_rows(proc.stdout)
    fresh = [json.loads(line) for line in open(resume_log)][len(unfinished):]
    plain_points = {k: {name: fallback for name, _, fallback in knobs} for k, knobs in spaces.items()}
    remeasured = [r for r in fresh if not r.get('validated') and r['config'] == plain_points[r['workload']]]
    c.check(proc.returncode == 0 and all(int(rows.get(k, '0')) <= 6 for k in spaces) and
            any(int(rows.get(k, '0')) > 4 for k in spaces) and not remeasured and
            all(sum(1 for r in fresh if r['workload'] == k and r.get('validated')) == 1 for k in spaces),
            'an unfinished tuning resumes from the log (trials go on past 4, the hand-written points are not '
            'measured again, each workload gets one verdict)', proc.stdout[-800:])

    # 4. Refusals.
    proc = run([args.kilnc, 'tune', demo, '--log', os.path.join(tune_dir, 'x.jsonl'), '--rpc', '127.0.0.1:1'])
    c.check(proc.returncode == 1 and 'cannot connect' in proc.stderr, 'an unreachable --rpc is a user error', proc.stderr)
    bad_log = os.path.join(tune_dir, 'bad.jsonl')
    with open(bad_log, 'w') as f:
        f.write(open(log_path).readline() + '{"workload": 3}\n')
    proc = run([args.kilnc, demo, '-o', os.path.join(tune_dir, 'bad.kiln'), '--tuning-log', bad_log])
    c.check(proc.returncode == 1 and 'bad.jsonl:2:' in proc.stderr, 'a log line that is not a record is named', proc.stderr)
    two_counts = os.path.join(tune_dir, 'threads.jsonl')
    with open(two_counts, 'w') as f:
        for line in open(log_path):
            r = json.loads(line)
            f.write(line)
            r['threads'] = 2
            f.write(json.dumps(r) + '\n')
    proc = run([args.kilnc, demo, '-o', os.path.join(tune_dir, 't.kiln'), '--tuning-log', two_counts])
    c.check(proc.returncode == 1 and 'at 1, 2 threads' in proc.stderr and '--tuning-threads' in proc.stderr,
            'a log of several thread counts needs --tuning-threads', proc.stderr)
    proc = run([args.kilnc, demo, '-o', os.path.join(tune_dir, 't.kiln'), '--tuning-log', two_counts,
                '--tuning-threads', '2'])
    c.check(proc.returncode == 0, 'and compiles with it', proc.stderr)
    proc = run([args.kilnc, demo, '-o', os.path.join(tune_dir, 'bad.kiln'), '--tuning-log', bad_log + '.missing'])
    c.check(proc.returncode == 1 and 'cannot read the tuning log' in proc.stderr, 'a missing --tuning-log is an error',
            proc.stderr)

    log('%d checks, %d failed%s' % (c.count, len(c.failed), (': ' + '; '.join(c.failed)) if c.failed else ''))
    return 1 if c.failed else 0


if __name__ == '__main__':
    kiln_e2e.run_script(main)
