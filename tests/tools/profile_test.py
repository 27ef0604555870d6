#!/usr/bin/python3
"""kiln profile, kiln inspect --dot/--svg and kilnc's progress line.

  profile_test.py profile|dot|progress --kilnc KILNC --kiln KILN --source-root DIR --workdir DIR [--vulkan]

profile: `kiln profile -o trace.json` on the `layers` model (tools_common.py),
  at 1 and 2 threads: json.load reads the trace; its dispatch events are the
  bundle's dispatches once per run (each run's inside the run's event), every
  duration is positive, the start-up stages are there; each dispatch's FLOPs
  are the direct count of its Conv/Gemm/MatMul nodes, computed here from the
  ONNX model (a Winograd conv counts as a direct one); the printed table's
  shares add up to 100%, its dispatch counts to the bundle's, and its GFLOP/s
  are the FLOPs over the time ('-' where no node's FLOPs are known), with
  --top too. With --vulkan, the demo on Vulkan: dispatches on the device track.
dot: `kiln inspect --dot` on the demo and the `layers` model is accepted by
  Graphviz's `dot -Tsvg` (missing Graphviz fails the test: tools/setup.sh
  installs it), has one cluster per multi-node dispatch holding exactly its
  nodes, every node once, edges labelled with shapes; colours with --profile
  (a trace of this bundle; another bundle's is refused) and --profile-run;
  --svg is SVG, and without dot on PATH a clear error.
progress: kilnc, compiling a model that takes more than a second, writes a
  progress line under a pseudo-terminal (erased at the end) and nothing when
  stderr is a pipe, or when --report writes to the terminal.
"""

import json
import os
import pty
import re
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tools_common import check, compile_model, demo_onnx, layers_model, main, run  # noqa: E402

ROW = re.compile(r'^ +(\d+|-) +([\d.]+) +([\d.]+)% +(\S+) +(\d+)  (.*)$')


def inspect_json(args, bundle):
    return json.loads(run([args.kiln, 'inspect', bundle, '--json'], expect_rc=0).stdout)


def check_trace(trace, info, runs, threads, expected_flops=None):
    """The trace of `runs` profiled runs of the bundle `info` describes."""
    events = trace['traceEvents']
    count = len(info['dispatches'])
    check(trace['otherData']['dispatch_count'] == count and trace['otherData']['runs'] == runs, 'otherData')
    complete = [e for e in events if e['ph'] == 'X']
    check(all(e['dur'] > 0 for e in complete), 'an event with a duration <= 0')
    names = {e['name'] for e in complete if e['cat'] == 'startup'}
    needed = {'load_to_first_run', 'model_load', 'bundle_map', 'bundle_verify', 'session_create', 'record',
              'first_run'} | ({'thread_start'} if threads > 1 else set())
    check(needed <= names, 'start-up stages missing: %s' % sorted(needed - names))
    run_events = sorted((e for e in complete if e['cat'] == 'run'), key=lambda e: e['args']['run'])
    check(len(run_events) == runs, '%d run events for %d runs' % (len(run_events), runs))
    dispatches = [e for e in complete if e['cat'] == 'dispatch']
    check(len(dispatches) == count * runs, '%d dispatch events, expected %d dispatches x %d runs'
          % (len(dispatches), count, runs))
    for r, run_event in enumerate(run_events):
        mine = sorted((e for e in dispatches if e['args']['run'] == r), key=lambda e: e['args']['dispatch'])
        check([e['args']['dispatch'] for e in mine] == list(range(count)), 'run %d: not every dispatch once' % r)
        for e in mine:
            check(run_event['ts'] <= e['ts'] and e['ts'] + e['dur'] <= run_event['ts'] + run_event['dur'] + 0.002,
                  'dispatch %d is outside run %d' % (e['args']['dispatch'], r))
            d = info['dispatches'][e['args']['dispatch']]
            check(e['args']['kernel'] == d['kernel'] and e['args']['nodes'] == d['source_nodes'], 'dispatch names')
            if d['device'] == 'cpu':
                check(e['args']['threads'] == threads, 'threads in args')
            if expected_flops is not None:
                known = [expected_flops[n] for n in d['source_nodes'] if n in expected_flops]
                check(e['args'].get('flops') == (sum(known) if known else None),
                      'dispatch %d (%s): flops %s, expected %s' % (e['args']['dispatch'], d['source_nodes'],
                                                                   e['args'].get('flops'), sum(known) if known else None))
    return dispatches


def check_table(stdout, info, top=None):
    """The layer table: shares add up to 100%, dispatch counts to the bundle's; GFLOP/s are flops/time."""
    rows = [m.groups() for m in map(ROW.match, stdout.split('\n')) if m]
    check(rows, 'no layer table')
    ranked = [r for r in rows if r[0] != '-']
    if top is not None:
        check(len(ranked) == top and len(rows) == top + 1, 'not %d rows and the rest' % top)
    shares = sum(float(r[2]) for r in rows)
    check(abs(shares - 100.0) < 0.05 * len(rows), 'the shares add up to %.2f%%' % shares)
    check(sum(int(r[4]) for r in rows) == len(info['dispatches']), 'the dispatch counts do not add up')
    times = [float(r[1]) for r in ranked]
    check(times == sorted(times, reverse=True), 'the layers are not slowest first')
    for rank, ms, share, gflops, count, layer in ranked:
        counted = re.search(r'\b(Conv|Gemm|MatMul) "', layer)
        check((gflops != '-') == bool(counted), 'GFLOP/s %s for layer %s' % (gflops, layer))
    return rows


def check_profile(args):
    onnx_path = os.path.join(args.workdir, 'layers.onnx')
    expected = layers_model(onnx_path)
    bundle = compile_model(args, onnx_path, 'layers')
    info = inspect_json(args, bundle)
    winograd = [n['name'] for n in info['nodes'] if 'kiln_winograd' in n['attributes']]
    check(winograd, 'no Winograd conv in the layers model: its FLOPs path is untested (model or pass changed?)')
    for threads in (1, 2):
        trace_path = os.path.join(args.workdir, 'trace%d.json' % threads)
        proc = run([args.kiln, 'profile', bundle, '--threads', str(threads), '--iterations', '4', '-o', trace_path],
                   expect_rc=0)
        with open(trace_path) as f:
            trace = json.load(f)
        dispatches = check_trace(trace, info, 4, threads, expected)
        rows = check_table(proc.stdout, info)
        flops = {}
        for e in dispatches:
            flops.setdefault(tuple(e['args']['nodes']), e['args'].get('flops'))
        for rank, ms, share, gflops, count, layer in rows:
            nodes = tuple(re.findall(r'"([^"]*)"', layer))
            if gflops != '-' and float(ms) >= 0.01 and nodes in flops:
                want = flops[nodes] / (float(ms) * 1e6)
                check(abs(float(gflops) - want) <= 0.02 * want + 0.01, 'GFLOP/s %s for %s, expected %.2f'
                      % (gflops, layer, want))
    proc = run([args.kiln, 'profile', bundle, '--iterations', '2', '--top', '2'], expect_rc=0)
    check_table(proc.stdout, info, top=2)
    run([args.kiln, 'profile', bundle, '-o', os.path.join(args.workdir, 'missing', 'x.json')], expect_rc=1)
    run([args.kiln, 'profile', os.path.join(args.workdir, 'missing.kiln')], expect_rc=1)
    if args.vulkan:
        vulkan = compile_model(args, demo_onnx(args), 'demo_vulkan', ['--target=vulkan'])
        trace_path = os.path.join(args.workdir, 'trace_vulkan.json')
        proc = run([args.kiln, 'profile', vulkan, '--iterations', '2', '--validation', '-o', trace_path],
                   expect_rc=0)
        with open(trace_path) as f:
            trace = json.load(f)
        vulkan_info = inspect_json(args, vulkan)
        dispatches = check_trace(trace, vulkan_info, 2, 1)
        check(all(e['tid'] == 2 for e in dispatches), 'Vulkan dispatches not on the device track')
        check(any(e['name'] == 'pipeline_create' for e in trace['traceEvents']), 'no pipeline_create stage')
        check_table(proc.stdout, vulkan_info)


def clusters(dot_text):
    """{cluster: set of node ids}, and {node id: label} of a --dot graph."""
    labels = dict(re.findall(r'^\s*(n\d+) \[label="([^"]*)"', dot_text, re.M))
    found = {}
    for name, body in re.findall(r'subgraph (cluster_\d+) \{(.*?)\n  \}', dot_text, re.S):
        found[name] = set(re.findall(r'^\s*(n\d+) \[', body, re.M))
    return found, labels


def check_dot_graph(args, bundle, trace=None):
    info = inspect_json(args, bundle)
    extra = ['--profile', trace] if trace else []
    text = run([args.kiln, 'inspect', bundle, '--dot'] + extra, expect_rc=0).stdout
    path = bundle + ('.profiled' if trace else '') + '.dot'
    with open(path, 'w') as f:
        f.write(text)
    check(shutil.which('dot'), "Graphviz's dot is not installed (tools/setup.sh installs graphviz)")
    svg = run(['dot', '-Tsvg', path], expect_rc=0).stdout
    check('<svg' in svg, 'dot wrote no SVG')
    found, labels = clusters(text)
    multi = {tuple(d['source_nodes']) for d in info['dispatches'] if len(d['source_nodes']) > 1}
    check(len(found) == len(multi), '%d clusters for %d multi-node dispatches' % (len(found), len(multi)))
    check(len(labels) == len(info['nodes']), '%d node boxes for %d nodes' % (len(labels), len(info['nodes'])))
    in_clusters = sorted(tuple(sorted(labels[n].split('\\n')[1] for n in ids)) for ids in found.values())
    check(in_clusters == sorted(tuple(sorted(m)) for m in multi), 'the clusters do not hold their dispatches\' nodes')
    edge_labels = re.findall(r'-> \w+ \[label="([^"]*)"\]', text)
    check(edge_labels and all(re.fullmatch(r'[a-z0-9]+\[[\d,]*\]', l) for l in edge_labels), 'edge labels: %s'
          % edge_labels[:5])
    check(('colorscheme=reds9' in text) == bool(trace), 'colours with a profile only')
    if trace:
        check('kernel time' in text, 'no time legend with a profile')
        for name, body in re.findall(r'subgraph (cluster_\d+) \{\s*label="([^"]*)"', text):
            check(' ms, ' in body, '%s: no time in its label' % name)
    return info


def check_dot(args):
    demo = compile_model(args, demo_onnx(args), 'demo')
    onnx_path = os.path.join(args.workdir, 'layers.onnx')
    layers_model(onnx_path)
    layers = compile_model(args, onnx_path, 'layers')
    for bundle in (demo, layers):
        check_dot_graph(args, bundle)
        trace = bundle + '.trace.json'
        run([args.kiln, 'profile', bundle, '--iterations', '2', '-o', trace], expect_rc=0)
        check_dot_graph(args, bundle, trace)
    found, labels = clusters(run([args.kiln, 'inspect', layers, '--dot'], expect_rc=0).stdout)
    residual = [ids for ids in found.values() if any(labels[n].endswith('\\na2') for n in ids)]
    check(residual and {labels[n].split('\\n')[1] for n in residual[0]} == {'c2', 'a2', 'r2'},
          'the residual block c2 + a2 + r2 is not one cluster')
    # Another bundle's trace, and a file that is not JSON, are refused.
    proc = run([args.kiln, 'inspect', demo, '--dot', '--profile', layers + '.trace.json'], expect_rc=1)
    check('another bundle' in proc.stderr, 'another bundle\'s trace: %s' % proc.stderr)
    run([args.kiln, 'inspect', demo, '--dot', '--profile', onnx_path], expect_rc=1)
    proc = run([args.kiln, 'inspect', demo, '--dot', '--profile-run', '--threads', '2'], expect_rc=0)
    check('colorscheme=reds9' in proc.stdout and 'kernel time on cpu, 2 threads' in proc.stdout,
          '--profile-run: no colours, or not said where they were measured')
    proc = run([args.kiln, 'inspect', layers, '--svg', '--profile', layers + '.trace.json'], expect_rc=0)
    check(proc.stdout.startswith('<?xml') and '<svg' in proc.stdout, '--svg wrote no SVG')
    empty = os.path.join(args.workdir, 'empty_path')
    os.makedirs(empty, exist_ok=True)
    proc = run([args.kiln, 'inspect', demo, '--svg'], expect_rc=1, env=dict(os.environ, PATH=empty))
    check('Graphviz' in proc.stderr and not proc.stdout, '--svg without dot: %s' % proc.stderr)
    if args.vulkan:  # measured on the device: the DOT text stays clean for dot
        vulkan = compile_model(args, demo_onnx(args), 'demo_vulkan', ['--target=vulkan'])
        check_dot_graph(args, vulkan)
        proc = run([args.kiln, 'inspect', vulkan, '--svg', '--profile-run', '--validation'], expect_rc=0)
        check(proc.stdout.startswith('<?xml') and 'kernel time on ' in proc.stdout, '--svg --profile-run on Vulkan')


def chain_model(path, layers):
    """A chain of `layers` 3x3 convs with Relus: compile time grows with it."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    nodes, inits, x = [], [], 'x'
    for i in range(layers):
        w = numpy_helper.from_array(np.full((16, 16, 3, 3), 0.01, np.float32), 'w%d' % i)
        inits.append(w)
        nodes += [helper.make_node('Conv', [x, w.name], ['c%d' % i], name='conv%d' % i, pads=[1, 1, 1, 1]),
                  helper.make_node('Relu', ['c%d' % i], ['r%d' % i], name='relu%d' % i)]
        x = 'r%d' % i
    graph = helper.make_graph(nodes, 'chain', [helper.make_tensor_value_info('x', TensorProto.FLOAT, [1, 16, 16, 16])],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, 16, 16, 16])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid('', 13)]), path)


def run_pty(cmd):
    """Runs `cmd` with a pseudo-terminal as stdin, stdout and stderr; (exit status, bytes written)."""
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(cmd[0], cmd)
    out = b''
    while True:
        try:
            data = os.read(fd, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        out += data
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    print('$ (pty) %s -> exit %d, %d bytes: %r' % (' '.join(cmd), os.waitstatus_to_exitcode(status), len(out),
                                                    out[:300]))
    return os.waitstatus_to_exitcode(status), out


def check_progress(args):
    # A model that takes at least 2 s to compile here (the line appears after 1 s).
    layers, elapsed = 16, 0.0
    while True:
        onnx_path = os.path.join(args.workdir, 'chain%d.onnx' % layers)
        chain_model(onnx_path, layers)
        bundle = os.path.join(args.workdir, 'chain%d.kiln' % layers)
        start = time.monotonic()
        piped = run([args.kilnc, onnx_path, '-o', bundle], expect_rc=0, timeout=900)
        elapsed = time.monotonic() - start
        check(piped.stderr == '', 'kilnc wrote to a piped stderr: %r' % piped.stderr[:200])
        if elapsed >= 2.0 or layers >= 1024:
            break
        layers *= 2
    check(elapsed >= 2.0, 'no model took 2 s to compile (%.1f s for %d layers)' % (elapsed, layers))
    tty_bundle = bundle + '.tty'
    rc, out = run_pty([args.kilnc, onnx_path, '-o', tty_bundle])
    check(rc == 0, 'kilnc under a terminal: exit %d' % rc)
    text = out.decode('utf-8', 'replace')
    check(re.search(r'\r\[kilnc\] [a-z][^\r]* \(\d+\.\d s\)', text), 'no progress line under a terminal')
    check(re.search(r'\r +\r$', text), 'the progress line is not erased at the end')
    check(open(bundle, 'rb').read() == open(tty_bundle, 'rb').read(), 'the bundle differs under a terminal')
    rc, out = run_pty([args.kilnc, onnx_path, '-o', tty_bundle, '--report'])
    check(rc == 0 and b'[kilnc] import' in out and b'\r[kilnc]' not in out, 'progress line mixed with --report')


if __name__ == '__main__':
    sys.exit(main({'profile': check_profile, 'dot': check_dot, 'progress': check_progress}))
