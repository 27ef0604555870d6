#!/usr/bin/python3
"""Smoke test of the kiln tool on the unit tests' add/scale bundle.

  runtime_tool_test.py KILN_RUNTIME_TESTS KILN WORKDIR

out = (a + b) * 2 where b[i] = 0.5 * i. Checks run (outputs, --top, errors),
inspect (text, --json and --dot) and bench (with its start-up lines and --input),
profile (its trace and table), and that bad input exits 1 cleanly; .npy strings
through a string identity bundle (check_strings). Then `kiln bench --device vulkan --startup` on the unit
tests' vector-add Vulkan bundle (skipped without lavapipe).
"""
import json
import os
import shutil
import struct
import subprocess
import sys


def write_npy(path, descr, shape, payload):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        descr, ''.join('%d,' % d for d in shape))
    header += ' ' * ((64 - (10 + len(header) + 1) % 64) % 64) + '\n'
    with open(path, 'wb') as f:
        f.write(b'\x93NUMPY\x01\x00' + struct.pack('<H', len(header)) + header.encode() + payload)


def read_npy_f32(path):
    data = open(path, 'rb').read()
    assert data[:6] == b'\x93NUMPY', 'bad magic'
    hlen = struct.unpack('<H', data[8:10])[0]
    header = data[10:10 + hlen].decode()
    assert "'descr': '<f4'" in header, header
    body = data[10 + hlen:]
    return list(struct.unpack('<%df' % (len(body) // 4), body)), header


def write_unicode_npy(path, shape, strings, width=None, order='<'):
    """A numpy '<U{width}' (or '>U') .npy of `strings` (code points padded with NULs)."""
    width = max([len(t) for t in strings] + [1]) if width is None else width
    payload = b''.join(struct.pack(order + '%dI' % width, *([ord(c) for c in t] + [0] * (width - len(t))))
                       for t in strings)
    write_npy(path, '%sU%d' % (order, width), shape, payload)


def read_unicode_npy(path):
    """(descr, shape, strings) of a '<U' .npy, each string without its padding NULs."""
    data = open(path, 'rb').read()
    hlen = struct.unpack('<H', data[8:10])[0]
    header = eval(data[10:10 + hlen].decode())  # a dict literal the test itself checks
    width = int(header['descr'][2:])
    body = data[10 + hlen:]
    units = struct.unpack('<%dI' % (len(body) // 4), body)
    strings = [''.join(chr(u) for u in units[i:i + width]).rstrip('\0') for i in range(0, len(units), width)]
    return header['descr'], header['shape'], strings


def check_strings(tests, kiln, work):
    """A string identity bundle (the unit tests' x -> y, [2, 3], 64 bytes of
    strings): .npy unicode and bytes in, unicode out; bad string .npy files
    and inputs past the capacity refused with a message."""
    bundle = os.path.join(work, 'strings.kiln')
    env = dict(os.environ, KILN_TEST_WRITE_STRING_BUNDLE=bundle)
    subprocess.run([tests, '-tc=strings: write the string bundle*'], env=env, check=True, capture_output=True)
    out = os.path.join(work, 'strings_out')
    strings = ['a', 'été', '', 'x' * 9, '€ uro', 'z\0q']
    x = os.path.join(work, 'x.npy')
    write_unicode_npy(x, (2, 3), strings)
    run([kiln, 'run', bundle, '--input', 'x=' + x, '--output-dir', out, '--iterations', '2'])
    assert read_unicode_npy(os.path.join(out, 'y.npy')) == ('<U9', (2, 3), strings)
    write_unicode_npy(x, (2, 3), ['ab', 'c', '', 'd', 'e', 'f'], order='>')
    run([kiln, 'run', bundle, '--input', 'x=' + x, '--output-dir', out])
    assert read_unicode_npy(os.path.join(out, 'y.npy')) == ('<U2', (2, 3), ['ab', 'c', '', 'd', 'e', 'f'])
    # Bytes ('|S'), invalid UTF-8 included: each ill-formed sequence reads as U+FFFD.
    write_npy(x, '|S3', (2, 3), b'ab\0' + b'\0\0\0' + b'\xff\xfeA' + b'\xe2\x82\xac' + b'\xe2\x82x' + b'\xc0\xafz')
    run([kiln, 'run', bundle, '--input', 'x=' + x, '--output-dir', out])
    assert read_unicode_npy(os.path.join(out, 'y.npy')) == (
        '<U3', (2, 3), ['ab', '', '\ufffd\ufffdA', '€', '\ufffdx', '\ufffd\ufffdz'])
    write_unicode_npy(x, (2, 3), [''] * 6, width=0)  # '<U0': every string empty
    run([kiln, 'run', bundle, '--input', 'x=' + x, '--output-dir', out])
    assert read_unicode_npy(os.path.join(out, 'y.npy')) == ('<U1', (2, 3), [''] * 6)

    # Refused, with a message.
    def refused(words):
        proc = run([kiln, 'run', bundle, '--input', 'x=' + x], 1)
        assert words in proc.stderr, (words, proc.stderr)
    write_unicode_npy(x, (2, 3), ['a', 'b', 'c', 'd', 'e', '\U0010ffff'])
    run([kiln, 'run', bundle, '--input', 'x=' + x])  # the last code point
    write_npy(x, '<U1', (2, 3), struct.pack('<6I', 97, 98, 99, 100, 101, 0x110000))
    refused('string element 5 holds 0x110000, which is no Unicode code point')
    write_npy(x, '<U1', (2, 3), struct.pack('<6I', 97, 0xD800, 99, 100, 101, 102))
    refused('string element 1 holds 0xD800')
    write_npy(x, '<U2', (2, 3), b'\0' * 44)
    refused('has 44 data bytes, its header describes 48')
    write_npy(x, '|U2', (2, 3), b'\0' * 48)
    refused("unsupported dtype '|U2'")
    write_npy(x, '<U99999999999', (2, 3), b'')
    refused("unsupported dtype '<U99999999999'")
    write_npy(x, '<U1073741824', (1 << 62, 2), b'')
    refused('shape too large')
    write_npy(x, '<U0', (1 << 40,), b'')
    refused('strings of width 0, more than')
    write_unicode_npy(x, (2, 3), ['y' * 22, 'z' * 22, 'w' * 22, '', '', ''])
    refused("string input 'x' holds 66 bytes, more than the 64 the bundle was compiled for (kilnc --string-bytes)")
    write_npy(x, '<f4', (2, 3), b'\0' * 24)
    refused('is float32[2,3] but the model expects string[2,3]')
    write_unicode_npy(x, (2, 3), strings)
    proc = run([kiln, 'run', bundle, '--input', 'x=' + x, '--top', '1'], 1)
    assert '--top needs scores' in proc.stderr, proc.stderr

    # inspect: the dtype and the capacity; bench fills strings by itself.
    proc = run([kiln, 'inspect', bundle])
    assert 'inputs:  x:string[2,3] (64 bytes of strings)' in proc.stdout, proc.stdout
    info = json.loads(run([kiln, 'inspect', bundle, '--json']).stdout)
    assert info['inputs'][0]['dtype'] == 'string' and info['inputs'][0]['string_bytes'] == 64, info['inputs']
    assert info['tensors'][1]['string_bytes'] == 64 and info['tensors'][1]['byte_size'] == 4 * 7 + 64, info['tensors']
    run([kiln, 'bench', bundle, '--iterations', '3'])


def run(cmd, expect_rc=0):
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    print('$ ' + ' '.join(cmd))
    print(proc.stdout + proc.stderr)
    if proc.returncode != expect_rc:
        raise SystemExit('FAIL: exit %d, expected %d' % (proc.returncode, expect_rc))
    if expect_rc == 1 and 'kiln: error:' not in proc.stderr:
        raise SystemExit('FAIL: no "kiln: error:" message')
    return proc


def startup_lines(stdout):
    """{label: {key: value}} of bench's startup:, startup_stages:, startup_warm: lines."""
    lines = {}
    for line in stdout.split('\n'):
        label, sep, rest = line.partition(': ')
        if sep and label in ('startup', 'startup_stages', 'startup_warm'):
            fields = dict(kv.split('=', 1) for kv in rest.split())
            lines[label] = {k: (v if k == 'pipeline_cache' else float(v)) for k, v in fields.items()}
    return lines


def check_startup(stdout, pipelines, warm_cache):
    """The start-up lines are there, before the median line, and add up."""
    lines = startup_lines(stdout)
    assert set(lines) == {'startup', 'startup_stages', 'startup_warm'}, stdout
    assert stdout.strip().split('\n')[-1].startswith('median_ms='), stdout
    for label in ('startup', 'startup_warm'):
        s = lines[label]
        assert s['pipelines'] == pipelines, (label, s)
        assert s['first_run_ms'] > 0 and s['model_load_ms'] > 0 and s['session_create_ms'] > 0, (label, s)
        assert s['load_to_first_run_ms'] >= s['model_load_ms'] + s['session_create_ms'] + s['first_run_ms'] - 0.01, s
        assert s['load_to_first_run_ms'] >= s['pipeline_create_ms'], s
        assert s['session_create_ms'] >= s['pipeline_create_ms'], s
        assert (s['pipeline_create_ms'] > 0) == (pipelines > 0), s
    assert lines['startup']['pipeline_cache'] == ('cold' if pipelines else 'none'), lines
    assert lines['startup_warm']['pipeline_cache'] == warm_cache, lines
    stages = lines['startup_stages']
    assert stages['pipeline_create_ms'] == lines['startup']['pipeline_create_ms'], lines
    assert stages['bundle_verify_ms'] > 0, stages
    return lines


def main():
    tests, kiln, work = sys.argv[1:4]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    bundle = os.path.join(work, 'add_scale.kiln')
    env = dict(os.environ, KILN_TEST_WRITE_BUNDLE=bundle)
    subprocess.run([tests, '-tc=exec: write the sample bundle*'], env=env, check=True,
                   capture_output=True)
    n = 256
    a = [float((i % 7) - 3) for i in range(n)]
    write_npy(os.path.join(work, 'a.npy'), '<f4', (1, n), struct.pack('<%df' % n, *a))
    out_dir = os.path.join(work, 'out')

    proc = run([kiln, 'run', bundle, '--input', 'a=' + os.path.join(work, 'a.npy'),
                '--output-dir', out_dir, '--top', '2', '--iterations', '3'])
    assert 'latency_ms=' in proc.stdout
    assert 'top-1: class 251 (score 257)' in proc.stdout, proc.stdout
    values, header = read_npy_f32(os.path.join(out_dir, 'out_final.npy'))
    assert "'shape': (1, 256)" in header, header
    for i in range(n):
        assert values[i] == (a[i] + 0.5 * i) * 2, (i, values[i])
    assert os.listdir(out_dir) == ['out_final.npy'], os.listdir(out_dir)

    proc = run([kiln, 'inspect', bundle, '--json'])
    info = json.loads(proc.stdout)
    assert info['arena_bytes'] == 3072 and info['constant_bytes'] == 1024, info
    assert [d['kernel'] for d in info['dispatches']] == ['vector_add', 'scale']
    assert info['dispatches'][0]['workgroup_count'] == [4, 1, 1]
    assert info['dispatches'][1]['source_nodes'] == ['mul']
    assert info['inputs'][0]['name'] == 'a' and info['outputs'][0]['name'] == 'out/final'
    for key in ('nodes', 'tensors', 'libraries', 'version'):
        assert key in info, key
    proc = run([kiln, 'inspect', bundle])
    assert 'vector_add workgroups=(4,1,1)' in proc.stdout

    proc = run([kiln, 'bench', bundle, '--iterations', '5', '--warmup', '1', '--threads', '2'])
    last = proc.stdout.strip().split('\n')[-1]
    assert last.startswith('median_ms=') and last.endswith('iterations=5'), last
    assert 'threads=2 ' in proc.stdout and 'profile:' not in proc.stdout, proc.stdout
    startup = startup_lines(proc.stdout)
    assert list(startup) == ['startup'], proc.stdout  # always printed; the rest with --startup
    assert startup['startup']['pipeline_cache'] == 'none' and startup['startup']['first_run_ms'] > 0, startup

    # --input (shared with run): the file's values instead of pseudo-random
    # ones; a file that does not match the input is an error.
    proc = run([kiln, 'bench', bundle, '--iterations', '2', '--input', 'a=' + os.path.join(work, 'a.npy')])
    assert 'input a: float32[1,256] (--input)' in proc.stdout, proc.stdout
    write_npy(os.path.join(work, 'short.npy'), '<f4', (1, 8), b'\0' * 32)
    run([kiln, 'bench', bundle, '--input', 'a=' + os.path.join(work, 'short.npy')], 1)
    run([kiln, 'bench', bundle, '--input', 'nope'], 2)

    # --startup: every stage, and a second load (CPU: nothing to cache).
    proc = run([kiln, 'bench', bundle, '--iterations', '2', '--threads', '2', '--startup'])
    stages = check_startup(proc.stdout, 0, 'none')['startup_stages']
    assert stages['kernel_load_ms'] > 0 and stages['thread_start_ms'] > 0, stages
    assert stages['instance_create_ms'] == 0 and stages['parameter_upload_ms'] == 0, stages

    # --profile: a row per dispatch (slowest first) with kernel and source nodes.
    proc = run([kiln, 'bench', bundle, '--iterations', '3', '--threads', '3', '--profile'])
    lines = proc.stdout.strip().split('\n')
    assert lines[-1].startswith('median_ms=') and lines[-1].endswith('iterations=3'), lines[-1]
    assert any(l.startswith('profile: 2 dispatches') for l in lines), proc.stdout
    rows = [l.split() for l in lines if l.startswith('  ') and 'median_ms' not in l]
    assert sorted((r[2], r[3], r[4]) for r in rows) == [('0', 'vector_add', 'add'),
                                                        ('1', 'scale', 'mul')], rows
    assert float(rows[0][0]) >= float(rows[1][0]) > 0, rows

    # kiln profile: the trace has both dispatches once per run, the table
    # both layers (their shares adding up to 100%); --dot draws both nodes
    # (one dispatch each: no cluster) and the edge between them.
    trace_path = os.path.join(work, 'trace.json')
    proc = run([kiln, 'profile', bundle, '--iterations=3', '--threads', '2', '-o', trace_path])
    events = json.load(open(trace_path))['traceEvents']
    dispatches = [e for e in events if e.get('cat') == 'dispatch']
    assert sorted((e['args']['run'], e['args']['kernel']) for e in dispatches) == [
        (r, k) for r in range(3) for k in ('scale', 'vector_add')], dispatches
    assert all(e['dur'] > 0 and e['args']['threads'] == 2 for e in dispatches), dispatches
    rows = [l.split() for l in proc.stdout.split('\n') if l.startswith('     ')]
    assert sorted(r[5] for r in rows) == ['Add', 'Mul'] and abs(sum(float(r[2][:-1]) for r in rows) - 100) < 0.1, rows
    proc = run([kiln, 'inspect', bundle, '--dot', '--profile', trace_path])
    assert 'cluster' not in proc.stdout and 'n0 -> n1 [label="float32[1,256]"]' in proc.stdout, proc.stdout

    # --threads gives the same outputs.
    for threads in ('2', '4'):
        threaded_dir = os.path.join(work, 'out_threads' + threads)
        run([kiln, 'run', bundle, '--input', 'a=' + os.path.join(work, 'a.npy'),
             '--output-dir', threaded_dir, '--threads', threads])
        assert (open(os.path.join(threaded_dir, 'out_final.npy'), 'rb').read() ==
                open(os.path.join(out_dir, 'out_final.npy'), 'rb').read())
    run([kiln, 'bench', bundle, '--threads', '1025'], 2)

    # Errors: exit 1 with a message; usage errors exit 2.
    write_npy(os.path.join(work, 'wrong.npy'), '<f4', (2, n), b'\0' * (8 * n))
    run([kiln, 'run', bundle, '--input', 'a=' + os.path.join(work, 'wrong.npy')], 1)
    write_npy(os.path.join(work, 'i32.npy'), '<i4', (1, n), b'\0' * (4 * n))
    run([kiln, 'run', bundle, '--input', 'a=' + os.path.join(work, 'i32.npy')], 1)
    run([kiln, 'run', bundle], 1)
    run([kiln, 'run', bundle, '--input', 'zz=' + os.path.join(work, 'a.npy')], 1)
    with open(os.path.join(work, 'bad.npy'), 'wb') as f:
        f.write(b'\x93NUMPY\x01\x00\x20\x00{\'descr\': \'<f4\', \'shape\': (1')
    run([kiln, 'run', bundle, '--input', 'a=' + os.path.join(work, 'bad.npy')], 1)
    data = bytearray(open(bundle, 'rb').read())
    data[len(data) // 2] ^= 0x40
    open(os.path.join(work, 'flipped.kiln'), 'wb').write(data)
    run([kiln, 'inspect', os.path.join(work, 'flipped.kiln')], 1)
    run([kiln, 'run', os.path.join(work, 'missing.kiln')], 1)
    run([kiln, 'frobnicate'], 2)
    run([kiln, 'run', bundle, '--top'], 2)

    check_strings(tests, kiln, work)

    # Vulkan: the start-up lines with a pipeline; the second load is seeded
    # with the first session's pipeline cache.
    vulkan_bundle = os.path.join(work, 'vector_add_vulkan.kiln')
    env = dict(os.environ, KILN_TEST_WRITE_VULKAN_BUNDLE=vulkan_bundle)
    subprocess.run([tests, '-tc=vulkan session: write the sample bundle*'], env=env, check=True,
                   capture_output=True)
    if not os.path.exists(vulkan_bundle):
        print('vulkan: skipped (no lavapipe or no compiled test shader; see runtime_unit)')
    else:
        proc = run([kiln, 'bench', vulkan_bundle, '--device', 'vulkan', '--startup', '--iterations', '2',
                    '--validation'])
        stages = check_startup(proc.stdout, 1, 'used')['startup_stages']
        assert stages['instance_create_ms'] > 0 and stages['device_create_ms'] > 0, stages
        assert stages['parameter_upload_ms'] > 0 and stages['kernel_load_ms'] == 0, stages
        assert 'device=' in proc.stdout, proc.stdout
    print('PASS')


if __name__ == '__main__':
    main()
