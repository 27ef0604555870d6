#!/usr/bin/python3
"""Command-line conventions of kilnc and every kiln subcommand.

  options_test.py options|help --kilnc KILNC --kiln KILN --source-root DIR --workdir DIR [--vulkan]

options: a table with a case for every option each tool lists in its --help
  (the test fails when an option has no case). Each option that takes a value
  is run as --opt=value and as --opt value: same exit status, same output
  (timings masked), same files written; the value must have its effect (a
  check per case) and a bad value must give the same error in both forms.
  Flags must work and refuse a value (--flag=x: exit 2). The optional value
  of --validation is taken after '=', or as the next word only when it is one
  of its values (`--validation MODEL.kiln` leaves the model positional).
  Unknown options are usage errors (exit 2).
help: `--help` on every kiln subcommand and on kilnc prints that command's
  usage to stdout and exits 0 (also `kiln help COMMAND`); `--version` prints
  the runtime's version and ABI (kiln) and kilnc's version, the bundle format
  and LLVM's version (kilnc), as the headers define them.
"""

import difflib
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tools_common import (check, compile_model, demo_input, demo_onnx, main, mask_numbers,  # noqa: E402
                          run)

KILN_COMMANDS = ('run', 'inspect', 'bench', 'profile')


class Case:
    """One option of one tool: `base(ctx)` is the rest of the command line
    ('{out}' stands for the form's own directory), `effect(ctx, proc, out)`
    checks the option did what it says, `bad` is a value it must refuse
    (exit `bad_rc` with the same message in both forms), `files` are what the
    command writes under '{out}' (compared between the forms)."""

    def __init__(self, tool, option, value, base, effect=None, bad=None, bad_rc=2, files=()):
        self.tool, self.option, self.value, self.base = tool, option, value, base
        self.effect, self.bad, self.bad_rc, self.files = effect, bad, bad_rc, files


def has(text):
    def effect(ctx, proc, out):
        expected = text.replace('{pubkey}', ctx['pubkey'])
        check(expected in proc.stdout + proc.stderr, 'expected %r in the output' % expected)
    return effect


def exists(name):
    return lambda ctx, proc, out: check(os.path.exists(os.path.join(out, name)), '%s not written' % name)


def on_vulkan(command):
    """The check that a command ran on the Vulkan device (None without --vulkan)."""
    if not ctx_vulkan[0]:
        return None
    if command != 'inspect':
        return has('device=')
    return lambda ctx, proc, out: check('kernel time on ' in proc.stdout and 'kernel time on cpu' not in proc.stdout,
                                        'inspect --profile-run did not run on the Vulkan device')


def session_cases(command, base):
    """The options every command that runs a model shares (args.cpp, device.cpp)."""
    visible = command in ('bench', 'profile')
    return [
        Case(command, '--threads', '2', base, has('threads=2') if visible else None, bad='2000'),
        Case(command, '--iterations', '3', base, has({'bench': 'iterations=3', 'profile': '3 profiled runs'}.get(
            command, 'output logits' if command == 'run' else 'digraph')), bad='0'),
        Case(command, '--max-arena', '64M', base, None, bad='1K', bad_rc=1),
        Case(command, '--device', 'cpu', base, None, bad='gpu'),
        Case(command, '--vulkan-device', '0', lambda ctx: base(ctx, vulkan=True), on_vulkan(command), bad='x'),
        Case(command, '--validation', 'sync', lambda ctx: base(ctx, vulkan=True), on_vulkan(command), bad='bogus'),
    ]


ctx_vulkan = [False]  # whether the Vulkan bundle exists (set in check_options)


def kiln_cases():
    def bundle(ctx, vulkan=False):
        return ctx['vulkan_bundle'] if vulkan and ctx['vulkan_bundle'] else ctx['bundle']

    run_base = lambda ctx, vulkan=False: ['run', bundle(ctx, vulkan), '--input', ctx['input']]  # noqa: E731
    bench_base = lambda ctx, vulkan=False: ['bench', bundle(ctx, vulkan), '--iterations', '2']  # noqa: E731
    profile_base = lambda ctx, vulkan=False: ['profile', bundle(ctx, vulkan), '--iterations', '2']  # noqa: E731
    dot_base = lambda ctx, vulkan=False: ['inspect', bundle(ctx, vulkan), '--dot']  # noqa: E731
    run_dot = lambda ctx, vulkan=False: dot_base(ctx, vulkan) + ['--profile-run']  # noqa: E731
    plain = {'run': lambda ctx, vulkan=False: ['run', bundle(ctx, vulkan)],
             'bench': lambda ctx, vulkan=False: ['bench', bundle(ctx, vulkan)],
             'profile': lambda ctx, vulkan=False: ['profile', bundle(ctx, vulkan)],
             'inspect': run_dot}
    cases = [
        Case('run', '--output-dir', '{out}/o', run_base, exists('o/logits.npy'), files=['o/logits.npy']),
        Case('run', '--top', '2', run_base, lambda ctx, proc, out: check(
            proc.stdout.count('top-') == 2, 'run --top 2 printed %d classes' % proc.stdout.count('top-')), bad='x'),
        Case('bench', '--warmup', '1', bench_base, has('warmup=1'), bad='x'),
        Case('bench', '--profile', None, bench_base, has('profile: ')),
        Case('bench', '--startup', None, bench_base, has('startup_stages: ')),
        # On the kiln rpc-server check_options starts (token 'sesame').
        Case('bench', '--rpc', '{rpc}', lambda ctx, vulkan=False: bench_base(ctx) + ['--token', 'sesame'],
             has('remote 127.0.0.1:'), bad='nohost', bad_rc=1),
        Case('bench', '--token', 'sesame', lambda ctx, vulkan=False: bench_base(ctx) + ['--rpc', ctx['rpc']],
             has('remote 127.0.0.1:'), bad='wrong', bad_rc=1),
        Case('bench', '--rpc-timeout', '60',
             lambda ctx, vulkan=False: bench_base(ctx) + ['--rpc', ctx['rpc'], '--token', 'sesame'],
             has('remote 127.0.0.1:'), bad='0'),
        Case('profile', '-o', '{out}/trace.json', profile_base, exists('trace.json'), files=['trace.json']),
        Case('profile', '--top', '3', profile_base, lambda ctx, proc, out: check(
            len(re.findall(r'^ +\d+ ', proc.stdout, re.M)) == 3, 'profile --top 3: not 3 rows'), bad='x'),
        Case('inspect', '--json', None, lambda ctx, vulkan=False: ['inspect', bundle(ctx)],
             lambda ctx, proc, out: check(json.loads(proc.stdout)['dispatches'], 'no JSON')),
        Case('inspect', '--dot', None, lambda ctx, vulkan=False: ['inspect', bundle(ctx)], has('digraph')),
        Case('inspect', '--svg', None, lambda ctx, vulkan=False: ['inspect', bundle(ctx)], has('<svg')),
        Case('inspect', '--profile', '{trace}', dot_base, has('kernel time'), bad='/nonexistent.json', bad_rc=1),
        Case('inspect', '--profile-run', None, dot_base, has('kernel time')),
    ]
    signed = {'run': lambda ctx, vulkan=False: ['run', ctx['signed_bundle'], '--input', ctx['input']],
              'bench': lambda ctx, vulkan=False: ['bench', ctx['signed_bundle'], '--iterations', '2'],
              'profile': lambda ctx, vulkan=False: ['profile', ctx['signed_bundle'], '--iterations', '2'],
              'inspect': lambda ctx, vulkan=False: ['inspect', ctx['signed_bundle']]}
    for command in KILN_COMMANDS:
        # A bundle signed by another key is refused (exit 1) the same way in both forms.
        cases.append(Case(command, '--trusted-key', '{pubkey}', signed[command],
                          has('verified against a trusted key') if command == 'inspect' else None,
                          bad='11' * 32, bad_rc=1))
    for command in KILN_COMMANDS:
        base = {'run': run_base, 'bench': bench_base, 'profile': plain['profile'], 'inspect': run_dot}[command]
        cases += session_cases(command, base)
        cases.append(Case(command, '--input', '{input}', plain[command],
                          has('output logits') if command == 'run' else None, bad='nope'))
    return cases


def kilnc_cases():
    def base(*extra):
        return lambda ctx: [ctx['onnx'], '-o', '{out}/m.kiln'] + list(extra)
    kiln_file = ['m.kiln']
    return [
        Case('kilnc', '-o', '{out}/m.kiln', lambda ctx: [ctx['onnx']], files=kiln_file),
        Case('kilnc', '--target', 'host', base(), files=kiln_file, bad='nonsense', bad_rc=1),
        Case('kilnc', '--vulkan-features', 'int64', base('--target', 'vulkan'), files=kiln_file, bad='x', bad_rc=1),
        Case('kilnc', '--vulkan-shared-memory', 'on', base('--target', 'vulkan'), files=kiln_file,
             bad='maybe', bad_rc=1),
        Case('kilnc', '--kernels', 'static', base(), exists('m.kernels.o'),
             files=['m.kiln', 'm.kernels.o', 'm.kernels.h'], bad='x', bad_rc=1),
        Case('kilnc', '--max-arena', '1M', base(), files=kiln_file, bad='1K', bad_rc=1),
        Case('kilnc', '--input-shape', 'input=1,3,64,64', base(), files=kiln_file, bad='input=1,3,x,64', bad_rc=1),
        # A named dimension bounded: the bundle takes 1 to 4 rows (kiln inspect shows the range).
        Case('kilnc', '--dim', 'n=1..4', lambda ctx: [ctx['named_onnx'], '-o', '{out}/m.kiln'], files=kiln_file,
             bad='n=4..1', bad_rc=1),
        Case('kilnc', '--freeze-input', 'input={tensor}', base(), files=kiln_file, bad='input=/nonexistent',
             bad_rc=1),
        # The pads of a Pad read at run time within 0..3 (the output is planned for 10 elements).
        Case('kilnc', '--input-value', 'pads=0..3', lambda ctx: [ctx['pad_onnx'], '-o', '{out}/m.kiln'], files=kiln_file,
             bad='pads=3..0', bad_rc=1),
        # A sequence input of three tensors (docs/sequences.md): inputs xs[0..2].
        Case('kilnc', '--sequence-length', 'xs=3', lambda ctx: [ctx['seq_onnx'], '-o', '{out}/m.kiln'], files=kiln_file,
             bad='xs=-1', bad_rc=1),
        # A string input's table sized for 8 bytes per element (docs/bundle.md#string-tensors).
        Case('kilnc', '--string-bytes', '8', lambda ctx: [ctx['str_onnx'], '-o', '{out}/m.kiln'], files=kiln_file,
             bad='0', bad_rc=1),
        Case('kilnc', '--sign-key', '{key}', base(), lambda ctx, proc, out: check(
            open(os.path.join(out, 'm.kiln'), 'rb').read()[-8:] == b'KILNSIG1', 'no signature trailer'),
            files=kiln_file, bad='{tensor}', bad_rc=1),
        Case('kilnc', '--print-public-key', '{key}', lambda ctx: [], has('{pubkey}'), bad='{tensor}', bad_rc=1),
        Case('kilnc', '--dump-after', 'lower', base(), has('after lower'), bad='nopass', bad_rc=1),
        Case('kilnc', '--dump-graph-after', 'all', base(), has('graph after'), bad='nopass', bad_rc=1),
        Case('kilnc', '--disable-graph-pass', 'winograd', base(), files=kiln_file, bad='nopass', bad_rc=1),
        Case('kilnc', '--dump-graph', None, base(), has('graph after import')),
        Case('kilnc', '--report', None, base(), has('[kilnc] ')),
        Case('kilnc', '--list-operators', None, lambda ctx: [], has('Conv')),
        # A log of `kilnc tune` on the demo (2 trials).
        Case('kilnc', '--tuning-log', '{tunelog}', base(), files=kiln_file, bad='/nonexistent.jsonl', bad_rc=1),
        Case('kilnc', '--tuning-threads', '1', base('--tuning-log', '{tunelog}'), files=kiln_file, bad='0', bad_rc=1),
    ]


def help_options(args, tool):
    """The options a tool's --help lists (kilnc, or a kiln subcommand)."""
    cmd = [args.kilnc, '--help'] if tool == 'kilnc' else [args.kiln, tool, '--help']
    proc = run(cmd, expect_rc=0)
    return set(re.findall(r'^  (-{1,2}[a-z][\w-]*)', proc.stdout, re.M))


def normalize(text, out):
    """Output that must be equal between the forms: the form's directory as
    {out}, timings and what follows from them (colours, ranks, column
    widths) masked, lines sorted (tables are ordered by time)."""
    text = mask_numbers(text.replace(out, '{out}'))
    text = re.sub(r'fillcolor=\d', 'fillcolor=N', text).replace(', fontcolor=white', '').replace('; fontcolor=white', '')
    text = re.sub(r'^ +\d+( +F +F%)', r'  R\1', text, flags=re.M)  # the rank of a layer (by time)
    # Which layers make a --top K table depends on their times too: rows count, not who is in them.
    text = re.sub(r'^  R +F +F%.*$', '  R <layer>', text, flags=re.M)
    return sorted(re.sub(r' +', ' ', line) for line in text.split('\n'))  # column widths follow the numbers


def file_summary(path):
    """What must be equal in a written file: its bytes, or for a trace the
    events' names, categories and tracks."""
    data = open(path, 'rb').read()
    if path.endswith('.json'):
        events = json.loads(data)['traceEvents']
        return Counter((e['name'], e.get('cat'), e.get('tid')) for e in events)
    return data


def run_form(args, ctx, case, form, value):
    """Runs `case` with `value` as '--opt=value' ('eq'), '--opt value' ('sp') or a flag ('flag')."""
    out = os.path.join(args.workdir, 'case%d_%s' % (ctx['index'], form))
    os.makedirs(out, exist_ok=True)
    tool = [args.kilnc] if case.tool == 'kilnc' else [args.kiln]
    subst = lambda s: s.replace('{out}', out).replace('{input}', ctx['input']).replace(  # noqa: E731
        '{trace}', ctx['trace']).replace('{tensor}', ctx['tensor']).replace('{key}', ctx['key']).replace(
        '{pubkey}', ctx['pubkey']).replace('{rpc}', ctx['rpc']).replace('{tunelog}', ctx['tunelog'])
    option = [case.option] if value is None else (
        [case.option + '=' + subst(value)] if form.startswith('eq') else [case.option, subst(value)])
    return run(tool + [subst(a) for a in case.base(ctx)] + option), out


def check_case(args, ctx, case):
    label = '%s %s' % (case.tool, case.option)
    if case.value is None:
        proc, out = run_form(args, ctx, case, 'flag', None)
        check(proc.returncode == 0, label + ': exit %d' % proc.returncode)
        if case.effect:
            case.effect(ctx, proc, out)
        bad, _ = run_form(args, ctx, case, 'eq_flag', 'x')
        check(bad.returncode == 2 and 'takes no value' in bad.stderr, label + '=x is not refused')
        return
    results = [run_form(args, ctx, case, form, case.value) for form in ('eq', 'sp')]
    (eq, eq_out), (sp, sp_out) = results
    check(eq.returncode == sp.returncode, label + ': exit %d with =, %d without' % (eq.returncode, sp.returncode))
    check(eq.returncode == 0, label + ': exit %d' % eq.returncode)
    for stream in ('stdout', 'stderr'):
        a, b = normalize(getattr(eq, stream), eq_out), normalize(getattr(sp, stream), sp_out)
        check(a == b, label + ': %s differs between --opt=value and --opt value:\n%s' % (
            stream, '\n'.join(difflib.unified_diff(a, b, lineterm=''))))
    for name in case.files:
        paths = [os.path.join(o, name) for o in (eq_out, sp_out)]
        check(os.path.exists(paths[0]) == os.path.exists(paths[1]), label + ': %s written by one form only' % name)
        if os.path.exists(paths[0]):
            check(file_summary(paths[0]) == file_summary(paths[1]), label + ': %s differs between the forms' % name)
    if case.effect:
        case.effect(ctx, eq, eq_out)
        case.effect(ctx, sp, sp_out)
    if case.bad is not None:
        forms = ('eq_bad',) if case.option == '--validation' else ('eq_bad', 'sp_bad')
        bads = [run_form(args, ctx, case, form, case.bad)[0] for form in forms]
        for bad in bads:
            check(bad.returncode == case.bad_rc, label + ' %s: exit %d, expected %d' % (case.bad, bad.returncode,
                                                                                     case.bad_rc))
        check(len(set(mask_numbers(b.stderr) for b in bads)) == 1, label + ': the two forms fail differently')


def check_options(args):
    import numpy as np
    from onnx import numpy_helper
    bundle = compile_model(args, demo_onnx(args), 'demo')
    vulkan_bundle = compile_model(args, demo_onnx(args), 'demo_vulkan', ['--target=vulkan']) if args.vulkan else ''
    ctx_vulkan[0] = bool(vulkan_bundle)
    tensor = os.path.join(args.workdir, 'input.pb')
    with open(tensor, 'wb') as f:
        array = np.load(os.path.join(args.source_root, 'demo', 'example_triangle.npy'))
        f.write(numpy_helper.from_array(array, 'input').SerializeToString())
    trace = os.path.join(args.workdir, 'trace.json')
    run([args.kiln, 'profile', bundle, '--iterations', '2', '-o', trace], expect_rc=0)
    # An Ed25519 key (kilnc --sign-key), its public key in hex and a bundle it signed.
    key = os.path.join(args.workdir, 'key.pem')
    run(['openssl', 'genpkey', '-algorithm', 'ed25519', '-out', key], expect_rc=0)
    printed = run([args.kilnc, '--print-public-key', key], expect_rc=0).stdout
    pubkey = re.search(r'hex: ([0-9a-f]{64})', printed).group(1)
    signed_bundle = compile_model(args, demo_onnx(args), 'demo_signed', ['--sign-key', key])
    # A model with a named dimension (kilnc --dim): y = softmax(relu(x W + b)), x [n, 16].
    from onnx import helper, TensorProto
    rng = np.random.default_rng(0)
    named = helper.make_model(helper.make_graph(
        [helper.make_node('MatMul', ['x', 'W'], ['m']), helper.make_node('Add', ['m', 'B'], ['a']),
         helper.make_node('Relu', ['a'], ['r']), helper.make_node('Softmax', ['r'], ['y'], axis=-1)], 'named',
        [helper.make_tensor_value_info('x', TensorProto.FLOAT, ['n', 16])],
        [helper.make_tensor_value_info('y', TensorProto.FLOAT, ['n', 8])],
        [numpy_helper.from_array(rng.standard_normal((16, 8)).astype(np.float32), 'W'),
         numpy_helper.from_array(rng.standard_normal((8,)).astype(np.float32), 'B')]),
        opset_imports=[helper.make_opsetid('', 13)])
    named_onnx = os.path.join(args.workdir, 'named_dim.onnx')
    with open(named_onnx, 'wb') as f:
        f.write(named.SerializeToString())
    # A model whose integer input decides a size (kilnc --input-value): y = Pad(x, pads).
    padded = helper.make_model(helper.make_graph(
        [helper.make_node('Pad', ['x', 'pads'], ['y'])], 'padded',
        [helper.make_tensor_value_info('x', TensorProto.FLOAT, [4]),
         helper.make_tensor_value_info('pads', TensorProto.INT64, [2])],
        [helper.make_tensor_value_info('y', TensorProto.FLOAT, ['p'])]), opset_imports=[helper.make_opsetid('', 13)])
    pad_onnx = os.path.join(args.workdir, 'pad_values.onnx')
    with open(pad_onnx, 'wb') as f:
        f.write(padded.SerializeToString())
    # A model with a sequence input (kilnc --sequence-length): y = ConcatFromSequence(xs).
    sequenced = helper.make_model(helper.make_graph(
        [helper.make_node('ConcatFromSequence', ['xs'], ['y'], axis=0)], 'sequenced',
        [helper.make_value_info('xs', helper.make_sequence_type_proto(
            helper.make_tensor_type_proto(TensorProto.FLOAT, [2])))],
        [helper.make_tensor_value_info('y', TensorProto.FLOAT, ['n'])]), opset_imports=[helper.make_opsetid('', 13)])
    seq_onnx = os.path.join(args.workdir, 'sequence_input.onnx')
    with open(seq_onnx, 'wb') as f:
        f.write(sequenced.SerializeToString())
    # A model with a string input (kilnc --string-bytes): y = Cast(s, to=FLOAT).
    stringed = helper.make_model(helper.make_graph(
        [helper.make_node('Cast', ['s'], ['y'], to=TensorProto.FLOAT)], 'stringed',
        [helper.make_tensor_value_info('s', TensorProto.STRING, [3])],
        [helper.make_tensor_value_info('y', TensorProto.FLOAT, [3])]), opset_imports=[helper.make_opsetid('', 13)])
    str_onnx = os.path.join(args.workdir, 'string_input.onnx')
    with open(str_onnx, 'wb') as f:
        f.write(stringed.SerializeToString())
    # A tuning log (kilnc --tuning-log) and a measurement server (kiln bench --rpc).
    tunelog = os.path.join(args.workdir, 'tune.jsonl')
    run([args.kilnc, 'tune', demo_onnx(args), '--log', tunelog, '--trials', '2', '--repeats', '1',
         '--kiln', args.kiln], expect_rc=0)
    server_log = os.path.join(args.workdir, 'rpc_server.log')
    server = subprocess.Popen([args.kiln, 'rpc-server', '--port', '0', '--token', 'sesame'],
                              stdout=open(server_log, 'w'), stderr=subprocess.STDOUT)
    try:
        for _ in range(200):
            first = open(server_log).readline()
            if first.endswith('\n'):
                break
            time.sleep(0.05)
        check(first.startswith('listening on 127.0.0.1:'), 'kiln rpc-server did not start: ' + first)
        rpc = first.split()[2]
        check_all_options(args, {
            'bundle': bundle, 'vulkan_bundle': vulkan_bundle, 'input': demo_input(args), 'trace': trace,
            'tensor': tensor, 'onnx': demo_onnx(args), 'index': 0, 'key': key, 'pubkey': pubkey,
            'signed_bundle': signed_bundle, 'named_onnx': named_onnx, 'pad_onnx': pad_onnx, 'seq_onnx': seq_onnx, 'str_onnx': str_onnx, 'rpc': rpc,
            'tunelog': tunelog})
    finally:
        server.kill()
        server.wait()


def check_all_options(args, ctx):
    bundle = ctx['bundle']
    cases = kiln_cases() + kilnc_cases()
    for tool in ('kilnc',) + KILN_COMMANDS:
        listed = help_options(args, tool) - {'--help', '-h', '--version'}
        tested = {c.option for c in cases if c.tool == tool}
        check(listed == tested, '%s: options without a case: %s; cases for options it does not list: %s' % (
            tool, sorted(listed - tested), sorted(tested - listed)))
    for case in cases:
        ctx['index'] += 1
        check_case(args, ctx, case)

    # The optional value: the next word is taken only when it is one of its values.
    run([args.kiln, 'run', '--validation', bundle, '--input', demo_input(args)], expect_rc=0)
    run([args.kiln, 'run', bundle, '--validation', '--input', demo_input(args)], expect_rc=0)
    # Usage errors: exit 2, naming the option; after "--" words are positional.
    for tool in ([args.kilnc], [args.kiln, 'run'], [args.kiln, 'inspect'], [args.kiln, 'bench'],
                 [args.kiln, 'profile']):
        proc = run(tool + [bundle, '--frobnicate=1'], expect_rc=2)
        check("'--frobnicate=1'" in proc.stderr, 'the unknown option is not named')
    run([args.kiln, 'inspect', '--', bundle], expect_rc=0)
    run([args.kiln, 'run', bundle, '--input'], expect_rc=2)
    run([args.kiln, 'inspect', bundle, '--json', '--dot'], expect_rc=2)
    run([args.kiln, 'inspect', bundle, '--profile-run'], expect_rc=2)  # colours need --dot or --svg
    run([args.kiln, 'inspect', bundle, '--threads', '2'], expect_rc=2)  # session options need --profile-run


def check_help(args):
    header = open(os.path.join(args.source_root, 'runtime', 'include', 'kiln', 'kiln.h')).read()
    version = re.search(r'#define KILN_VERSION_STRING "([^"]+)"', header).group(1)
    abi = re.search(r'#define KILN_ABI_VERSION (\d+)', header).group(1)
    proc = run([args.kiln, '--version'], expect_rc=0)
    check('libkiln %s, ABI %s' % (version, abi) in proc.stdout, 'kiln --version does not say libkiln %s, ABI %s'
          % (version, abi))
    schema = open(os.path.join(args.source_root, 'schema', 'kiln_bundle_version.h')).read()
    major, minor = (re.search(r'#define KILN_BUNDLE_VERSION_%s (\d+)' % w, schema).group(1) for w in ('MAJOR', 'MINOR'))
    proc = run([args.kilnc, '--version'], expect_rc=0)
    check(re.match(r'kilnc \d+\.\d+\.\d+\n', proc.stdout), 'kilnc --version: no version line')
    check('bundle format %s.%s\n' % (major, minor) in proc.stdout, 'kilnc --version: no bundle format line')
    check(re.search(r'^LLVM \d+\.\d+', proc.stdout, re.M), 'kilnc --version: no LLVM version')

    for command in KILN_COMMANDS:
        proc = run([args.kiln, command, '--help'], expect_rc=0)
        check(proc.stdout.startswith('usage: kiln %s ' % command) and not proc.stderr,
              'kiln %s --help: not its usage on stdout' % command)
        check('--help' in proc.stdout and 'options:' in proc.stdout, 'kiln %s --help lists no options' % command)
        check(run([args.kiln, 'help', command], expect_rc=0).stdout == proc.stdout,
              'kiln help %s differs from kiln %s --help' % (command, command))
        # A usage error names the command and points to its --help, on stderr.
        bad = run([args.kiln, command, '--frobnicate'], expect_rc=2)
        check('kiln %s --help' % command in bad.stderr and not bad.stdout, 'kiln %s: usage error' % command)
    # The commands that run no model: their --help (their options are checked by tools_rpc_server
    # and e2e_tuning, which run a server and a tuning).
    for command, usage in (([args.kiln, 'rpc-server'], 'usage: kiln rpc-server '),
                           ([args.kilnc, 'tune'], 'usage: kilnc tune ')):
        proc = run(command + ['--help'], expect_rc=0)
        check(proc.stdout.startswith(usage) and 'options:' in proc.stdout and not proc.stderr,
              '%s --help: not its usage on stdout' % ' '.join(command[1:]))
        bad = run(command + ['--frobnicate'], expect_rc=2)
        check("--frobnicate" in bad.stderr and not bad.stdout, '%s: usage error' % ' '.join(command[1:]))
    proc = run([args.kiln, '--help'], expect_rc=0)
    for command in KILN_COMMANDS + ('rpc-server',):
        check('kiln %s ' % command in proc.stdout, 'kiln --help does not list %s' % command)
    for flag in ('--help', '-h'):
        proc = run([args.kilnc, flag], expect_rc=0)
        check(proc.stdout.startswith('usage: kilnc ') and '--target' in proc.stdout, 'kilnc %s' % flag)
    run([args.kiln, 'frobnicate'], expect_rc=2)


if __name__ == '__main__':
    sys.exit(main({'options': check_options, 'help': check_help}))
