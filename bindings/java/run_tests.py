#!/usr/bin/python3
"""The Java binding's tests (meson test java_binding): Maven + JUnit 5 on this
machine's JVM against the build's libkiln_jni.

  run_tests.py --mvn MVN --kilnc KILNC --kiln KILN --jni LIBKILN_JNI
               --source-root SRC --workdir DIR [--cycles N]

1. compiles demo/shapes_cnn.onnx with the build's kilnc;
2. asks the C tools what the Java tests must find: `kiln run --top K` (the
   class order and the logits, the reference for the probabilities) and
   `kiln inspect --json` (inputs, outputs, memory plan), written to
   DIR/expected.properties with the input and logits as raw float32 files;
   the same for the demo compiled with run-time height and width, run at
   one shape in its range; a string Identity model (StringTest);
3. checks libkiln_jni: it implements every `native` method of Native.java,
   exports nothing else (no kiln_*), and needs only the C library;
4. runs `mvn test` (build directory DIR/maven), offline first (-o: Maven
   never touches the network once ~/.m2 holds the pinned plugins and JUnit),
   online only when something is missing; fails on -Xcheck:jni warnings
   (which surefire files in *.dumpstream) and unless every test ran (none
   skipped).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

import numpy as np

# The C library and the dynamic loader: all libkiln_jni may need.
ALLOWED_NEEDED = re.compile(r'^(libc|libm|libdl|libpthread|ld-linux[\w.-]*)\.so[.\d]*$')


def run(cmd, **kwargs):
    print('$ ' + ' '.join(cmd), flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    return proc


def check_call(cmd, show=True):
    proc = run(cmd, timeout=300)
    print((proc.stdout if show else '') + proc.stderr, end='')
    if proc.returncode != 0:
        raise SystemExit('FAIL: %s exited %d' % (cmd[0], proc.returncode))
    return proc.stdout


def write_raw(npy_path, raw_path):
    array = np.load(npy_path)
    if array.dtype != np.float32:
        raise SystemExit('FAIL: %s is %s, the tests expect float32' % (npy_path, array.dtype))
    array.astype(np.float32).tofile(raw_path)  # native order, as the runtime reads it
    return array


def expected_properties(args, bundle):
    """Runs kiln run / inspect and writes what the Java tests compare with."""
    work = args.workdir
    inspect = json.loads(check_call([args.kiln, 'inspect', bundle, '--json'], show=False))
    image = os.path.join(args.source_root, 'demo', 'example_triangle.npy')
    out_dir = os.path.join(work, 'reference')
    classes = int(np.prod(inspect['outputs'][0]['shape'][-1:]))
    stdout = check_call([args.kiln, 'run', bundle, '--input', 'input=' + image,
                         '--top', str(classes), '--output-dir', out_dir])
    order = [int(m) for m in re.findall(r'^top-\d+: class (\d+)', stdout, re.M)]
    if len(order) != classes:
        raise SystemExit('FAIL: kiln run --top %d printed %d classes' % (classes, len(order)))
    props = {'bundle': bundle, 'top': ','.join(map(str, order))}
    write_raw(image, os.path.join(work, 'input.f32'))
    props['input.0.values'] = os.path.join(work, 'input.f32')
    for i, out in enumerate(inspect['outputs']):
        name = re.sub(r'/', '_', out['name'])
        raw = os.path.join(work, 'output%d.f32' % i)
        write_raw(os.path.join(out_dir, name + '.npy'), raw)
        props['output.%d.values' % i] = raw
    for kind in ('input', 'output'):
        tensors = inspect[kind + 's']
        props[kind + '.count'] = len(tensors)
        for i, t in enumerate(tensors):
            props['%s.%d' % (kind, i)] = '%s:%s[%s]' % (t['name'], t['dtype'],
                                                        ','.join(map(str, t['shape'])))
            props['%s.%d.bytes' % (kind, i)] = t['byte_size']
            props['%s.%d.tensor' % (kind, i)] = t['tensor']
    for key in ('version', 'min_runtime_minor', 'producer', 'arena_bytes', 'constant_count',
                'constant_bytes'):
        props['model.' + key] = inspect[key]
    for key in ('tensors', 'nodes', 'kernels', 'dispatches'):
        props['model.%s.count' % key] = len(inspect[key])
    header = open(os.path.join(args.source_root, 'runtime', 'include', 'kiln', 'kiln.h')).read()
    props['runtime.version'] = re.search(r'#define KILN_VERSION_STRING "([^"]+)"', header).group(1)
    props['runtime.abi'] = re.search(r'#define KILN_ABI_VERSION (\d+)', header).group(1)
    props.update(dynamic_properties(args))
    props.update(strings_properties(args))
    path = os.path.join(work, 'expected.properties')
    with open(path, 'w') as f:
        for key, value in sorted(props.items()):
            # java.util.Properties: escape backslashes (paths have none here, but be safe)
            f.write('%s=%s\n' % (key, str(value).replace('\\', '\\\\')))
    print('expected (from kiln run/inspect): top classes %s, %s -> %s'
          % (props['top'], props['input.0'], props['output.0']))
    return path


# The demo compiled with run-time height and width, and the shape SessionTest
# runs it at (within the range, not the largest).
DYNAMIC_RANGE = 'input=1,3,32..96,32..96'
DYNAMIC_SHAPE = (1, 3, 48, 40)


def dynamic_properties(args):
    """A bundle with ranges, a seeded input at DYNAMIC_SHAPE and `kiln run`'s output for it."""
    work = args.workdir
    bundle = os.path.join(work, 'shapes_cnn_dynamic.kiln')
    check_call([args.kilnc, os.path.join(args.source_root, 'demo', 'shapes_cnn.onnx'), '-o', bundle,
                '--input-shape', DYNAMIC_RANGE])
    x = np.random.default_rng(7).random(DYNAMIC_SHAPE, dtype=np.float32)
    npy = os.path.join(work, 'dynamic_input.npy')
    np.save(npy, x)
    out_dir = os.path.join(work, 'reference_dynamic')
    check_call([args.kiln, 'run', bundle, '--input', 'input=' + npy, '--output-dir', out_dir], show=False)
    outputs = sorted(f for f in os.listdir(out_dir) if f.endswith('.npy'))
    if len(outputs) != 1:
        raise SystemExit('FAIL: kiln run wrote %s for the dynamic bundle, not one output' % outputs)
    x.tofile(os.path.join(work, 'dynamic_input.f32'))
    y = write_raw(os.path.join(out_dir, outputs[0]), os.path.join(work, 'dynamic_output.f32'))
    return {'dynamic.bundle': bundle, 'dynamic.range': DYNAMIC_RANGE,
            'dynamic.input.shape': ','.join(map(str, DYNAMIC_SHAPE)),
            'dynamic.input.values': os.path.join(work, 'dynamic_input.f32'),
            'dynamic.output.shape': ','.join(map(str, y.shape)),
            'dynamic.output.values': os.path.join(work, 'dynamic_output.f32')}


def strings_properties(args):
    """A string Identity model, x -> y [2, 3] of strings with 4 bytes each (kilnc --string-bytes 4)."""
    from onnx import TensorProto, helper, save
    model = helper.make_model(helper.make_graph(
        [helper.make_node('Identity', ['x'], ['y'])], 'strings',
        [helper.make_tensor_value_info('x', TensorProto.STRING, [2, 3])],
        [helper.make_tensor_value_info('y', TensorProto.STRING, [2, 3])]),
        opset_imports=[helper.make_opsetid('', 13)])
    onnx_path = os.path.join(args.workdir, 'strings.onnx')
    save(model, onnx_path)
    bundle = os.path.join(args.workdir, 'strings.kiln')
    check_call([args.kilnc, onnx_path, '-o', bundle, '--string-bytes', '4'])
    return {'strings.bundle': bundle}


def check_library(args):
    """libkiln_jni: every native method implemented, only JNI symbols exported, libc only."""
    native_java = open(os.path.join(args.source_root, 'bindings', 'java', 'src', 'main', 'java',
                                    'ai', 'kiln', 'Native.java')).read()
    methods = set(re.findall(r'static native \S+ (\w+)\(', native_java))
    symbols = run(['nm', '-D', '--defined-only', args.jni], timeout=60)
    dynamic = run(['readelf', '-d', args.jni], timeout=60)
    if symbols.returncode or dynamic.returncode:
        raise SystemExit('FAIL: nm/readelf on %s: %s' % (args.jni, symbols.stderr + dynamic.stderr))
    exported = {line.split()[-1] for line in symbols.stdout.splitlines() if line.strip()}
    problems = []
    implemented = {s[len('Java_ai_kiln_Native_'):] for s in exported
                   if s.startswith('Java_ai_kiln_Native_')}
    if methods - implemented:
        problems.append('native methods without a JNI function: %s' % sorted(methods - implemented))
    if implemented - methods:
        problems.append('JNI functions without a native method: %s' % sorted(implemented - methods))
    stray = sorted(s for s in exported if not re.match(r'^(Java_ai_kiln_|JNI_On(Load|Unload)$)', s))
    if stray:
        problems.append('exports other symbols: %s' % stray[:10])
    needed = re.findall(r'\(NEEDED\)\s+Shared library: \[([^\]]+)\]', dynamic.stdout)
    if [n for n in needed if not ALLOWED_NEEDED.match(n)]:
        problems.append('needs more than the C library: %s' % needed)
    if problems:
        raise SystemExit('FAIL: %s: %s' % (args.jni, '; '.join(problems)))
    print('libkiln_jni: %d native methods implemented, %d symbols exported, needs %s'
          % (len(methods), len(exported), ', '.join(needed)))
    if len(methods) < 20:
        raise SystemExit('FAIL: found only %d native methods in Native.java' % len(methods))


def maven(args, bundle, expected):
    pom = os.path.join(args.source_root, 'bindings', 'java', 'pom.xml')
    cmd = [args.mvn, '-B', '--no-transfer-progress', '-f', pom, 'test',
           '-Dkiln.buildDirectory=' + os.path.join(args.workdir, 'maven'),
           '-Dkiln.jni=' + os.path.abspath(args.jni), '-Dkiln.test.bundle=' + bundle,
           '-Dkiln.test.expected=' + expected, '-Dkiln.test.cycles=%d' % args.cycles]
    reports = os.path.join(args.workdir, 'maven', 'surefire-reports')
    shutil.rmtree(reports, ignore_errors=True)
    t0 = time.monotonic()
    proc = run(cmd[:1] + ['-o'] + cmd[1:], timeout=1200)
    offline_miss = proc.returncode != 0 and re.search(
        r'offline mode|has not been downloaded from it before|Cannot access \S+ in offline',
        proc.stdout)
    if offline_miss:
        print('(offline: ~/.m2 lacks a pinned artifact, %.1f s; downloading it)' % (time.monotonic() - t0))
        proc = run(cmd, timeout=1200)
    print(proc.stdout + proc.stderr, end='')
    print('mvn test: %.1f s' % (time.monotonic() - t0))
    output = proc.stdout + proc.stderr
    # -Xcheck:jni writes to the forked JVM's stdout, which surefire files in
    # *.dumpstream ("Corrupted channel"), not on the console.
    for name in sorted(os.listdir(reports)) if os.path.isdir(reports) else []:
        if name.endswith('.dumpstream'):
            text = open(os.path.join(reports, name), errors='replace').read()
            print('--- %s:\n%s' % (name, text[:4000]))
            output += text
    jni = re.findall(r'(?:WARNING|FATAL ERROR) in native method[^\n\\]*|WARNING: JNI local refs[^\n\\]*',
                     output)
    if jni:
        raise SystemExit('FAIL: -Xcheck:jni reported JNI misuse: %s' % sorted(set(jni)))
    if proc.returncode != 0:
        raise SystemExit('FAIL: mvn test exited %d' % proc.returncode)
    totals = re.findall(r'Tests run: (\d+), Failures: (\d+), Errors: (\d+), Skipped: (\d+)\s*$',
                        output, re.M)
    if not totals:
        raise SystemExit('FAIL: no test summary in the Maven output')
    run_count, failures, errors, skipped = map(int, totals[-1])
    sources = os.path.join(args.source_root, 'bindings', 'java', 'src', 'test', 'java')
    declared = sum(len(re.findall(r'^\s*@Test\s*$', open(os.path.join(d, f)).read(), re.M))
                   for d, _, files in os.walk(sources) for f in files if f.endswith('.java'))
    if failures or errors or skipped or run_count != declared:
        raise SystemExit('FAIL: %d tests ran of %d declared (%d failures, %d errors, %d skipped)'
                         % (run_count, declared, failures, errors, skipped))
    print('%d JUnit tests passed (all %d declared)' % (run_count, declared))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    for flag in ('--mvn', '--kilnc', '--kiln', '--jni', '--source-root', '--workdir'):
        parser.add_argument(flag, required=True)
    parser.add_argument('--cycles', type=int, default=10000)
    args = parser.parse_args()
    t0 = time.monotonic()
    shutil.rmtree(os.path.join(args.workdir, 'reference'), ignore_errors=True)
    shutil.rmtree(os.path.join(args.workdir, 'reference_dynamic'), ignore_errors=True)
    os.makedirs(args.workdir, exist_ok=True)
    bundle = os.path.join(args.workdir, 'shapes_cnn.kiln')
    check_call([args.kilnc, os.path.join(args.source_root, 'demo', 'shapes_cnn.onnx'), '-o', bundle])
    expected = expected_properties(args, bundle)
    check_library(args)
    maven(args, bundle, expected)
    print('java_binding: PASS (%.1f s)' % (time.monotonic() - t0))
    return 0


if __name__ == '__main__':
    sys.exit(main())
