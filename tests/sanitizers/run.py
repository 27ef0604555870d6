#!/usr/bin/env python3
"""The sanitizer suites (docs/testing.md, "Sanitizers"): a second build of
Kiln with sanitizers, then the listed tests of the ordinary suite run on it.

  run.py address ...  ASan + UBSan + LeakSanitizer: the runtime, kiln and
                      kilnc built with -fsanitize=address,undefined; runs the
                      unit, e2e and conformance tests given with --tests.
  run.py thread ...   ThreadSanitizer: the runtime and kiln (no compiler);
                      runs the thread-pool and concurrency unit tests and the
                      8-thread stress program on a bundle the ordinary
                      build's kilnc compiles (--kilnc).

A test passes only when it passes and no sanitizer wrote a report: reports go
to files under the build's sanitizer-reports/ (log_path), each process's
exit code on a report is 86, and any report file fails the suite (so a
report inside a test that expects a failing kiln cannot pass unseen).
"""

import argparse
import glob
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# Meson options of each sanitizer build (the optimization is kept low: the
# build is what costs time, and kernels are generated code either way).
# UBSan's vptr check is off: it needs RTTI of every polymorphic class, and
# LLVM's and glslang's libraries are built without it (so is the runtime).
_COMMON = ['-Db_lundef=false', '-Doptimization=1', '-Db_ndebug=false', '-Dpython=disabled', '-Djava=disabled']
_ASAN_FLAGS = '-fno-omit-frame-pointer -fno-sanitize-recover=undefined -fno-sanitize=vptr'
SETUP = {
    'address': ['-Db_sanitize=address,undefined', '-Dcpp_args=' + _ASAN_FLAGS, '-Dc_args=' + _ASAN_FLAGS] + _COMMON,
    'thread': ['-Db_sanitize=thread', '-Dcompiler=disabled'] + _COMMON,
}


def keep_modules(build_dir):
    """keep_modules.c as a shared library (see there), built once."""
    out = os.path.abspath(os.path.join(build_dir, 'libkiln_keep_modules.so'))
    source = os.path.join(HERE, 'keep_modules.c')
    if not os.path.exists(out) or os.path.getmtime(out) < os.path.getmtime(source):
        subprocess.run(['cc', '-shared', '-fPIC', '-O1', '-o', out, source], check=True)
    return out


def sanitizer_env(kind, reports, build_dir):
    env = dict(os.environ)
    reports = os.path.abspath(reports)
    common = 'exitcode=86:log_path=%s/%s' % (reports, kind)
    if kind == 'address':
        env['ASAN_OPTIONS'] = common + (':detect_leaks=1:detect_stack_use_after_return=1:strict_string_checks=1'
                                        ':verify_asan_link_order=0')
        env['LD_PRELOAD'] = keep_modules(build_dir)
        env['UBSAN_OPTIONS'] = 'exitcode=86:log_path=%s/ubsan:halt_on_error=1:print_stacktrace=1' % reports
        env['LSAN_OPTIONS'] = 'suppressions=%s:print_suppressions=0' % os.path.join(HERE, 'lsan.supp')
    else:
        env['TSAN_OPTIONS'] = common + ':halt_on_error=1:second_deadlock_stack=1'
    return env


def step(label, cmd, env=None, timeout=None, cwd=None):
    start = time.time()
    print('== %s: %s' % (label, ' '.join(cmd)), flush=True)
    proc = subprocess.run(cmd, env=env, timeout=timeout, cwd=cwd)
    print('== %s: exit %d, %.0f s' % (label, proc.returncode, time.time() - start), flush=True)
    return proc.returncode


def configure(args, kind):
    # An existing build is reconfigured with the same options, so a change to
    # SETUP reaches it (the build itself stays incremental).
    existing = os.path.isfile(os.path.join(args.build_dir, 'build.ninja'))
    return step('setup', ['meson', 'setup'] + (['--reconfigure'] if existing else []) +
                [args.build_dir, args.source_root] + SETUP[kind])


def reports_of(reports):
    found = sorted(glob.glob(os.path.join(reports, '*')))
    for path in found:
        print('---- sanitizer report %s' % path)
        with open(path, errors='replace') as f:
            sys.stdout.write(f.read()[:20000])
    return found


def run_address(args, reports):
    env = sanitizer_env('address', reports, args.build_dir)
    rc = step('build', ['ninja', '-C', args.build_dir], env=env)
    if rc:
        return rc
    # The listed tests of the ordinary suite, on the sanitized binaries; they
    # take longer, hence the multiplier.
    return step('tests', ['meson', 'test', '-C', args.build_dir, '--no-rebuild', '--print-errorlogs',
                          '--num-processes', '2', '--timeout-multiplier', '4'] + args.tests.split(), env=env)


def run_thread(args, reports):
    env = sanitizer_env('thread', reports, args.build_dir)
    rc = step('build', ['ninja', '-C', args.build_dir], env=env)  # the runtime and its tests: small
    if rc:
        return rc
    tests = os.path.join(args.build_dir, 'tests')
    failed = 0
    # The pool, its wait primitives, one session from two threads, limits and
    # the exec path at 1-4 threads (runtime_threads_test, runtime_concurrency_test).
    failed += step('unit', [os.path.join(tests, 'kiln_runtime_tests'),
                            '--test-case=threads*,session:*,exec*,profiling*'], env=env, cwd=tests) != 0
    for wait in ('futex', 'condvar'):
        failed += step('wait_' + wait, [os.path.join(tests, 'runtime_thread_wait_%s_test' % wait)], env=env) != 0
    # 8 threads x 200 runs on own sessions, then 8 threads on one session.
    work = os.path.join(args.build_dir, 'tsan-work')
    os.makedirs(work, exist_ok=True)
    bundle = os.path.join(work, 'demo.kiln')
    if step('kilnc', [args.kilnc, os.path.join(args.source_root, 'demo', 'shapes_cnn.onnx'), '-o', bundle]):
        return 1
    import numpy as np
    raw = os.path.join(work, 'input.bin')
    with open(raw, 'wb') as f:
        f.write(np.load(os.path.join(args.source_root, 'demo', 'example_triangle.npy')).astype(np.float32).tobytes())
    failed += step('stress', [os.path.join(tests, 'kiln_concurrency_stress'), bundle, raw, '8', str(args.runs)],
                   env=env) != 0
    return 1 if failed else 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('kind', choices=['address', 'thread'])
    p.add_argument('--source-root', required=True)
    p.add_argument('--build-dir', required=True, help='the sanitizer build (made on first use, then incremental)')
    p.add_argument('--tests', default='', help='address: the suite\'s test names to run')
    p.add_argument('--kilnc', default='', help='thread: the ordinary build\'s kilnc')
    p.add_argument('--runs', type=int, default=200, help='thread: runs per stress thread')
    args = p.parse_args()
    args.source_root, args.build_dir = os.path.abspath(args.source_root), os.path.abspath(args.build_dir)
    if args.kilnc:
        args.kilnc = os.path.abspath(args.kilnc)
    start = time.time()
    rc = configure(args, args.kind)
    reports = os.path.join(args.build_dir, 'sanitizer-reports')
    shutil.rmtree(reports, ignore_errors=True)
    os.makedirs(reports)
    if not rc:
        rc = run_address(args, reports) if args.kind == 'address' else run_thread(args, reports)
    found = reports_of(reports)
    print('sanitize %s: %s, %d report(s), %.0f s' % (args.kind, 'ok' if rc == 0 and not found else 'FAILED',
                                                     len(found), time.time() - start))
    return 1 if rc or found else 0


if __name__ == '__main__':
    sys.exit(main())
