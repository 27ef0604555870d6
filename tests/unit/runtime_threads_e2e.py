#!/usr/bin/python3
"""Threaded execution on a real compiled model: bit-identical outputs.

  runtime_threads_e2e.py KILNC KILN MODEL.onnx INPUT_NAME=INPUT.npy WORKDIR [STRESS]

Compiles MODEL.onnx with kilnc, runs it with `kiln run --threads N` for N in
1, 2, 3 and checks every output file is byte-for-byte the --threads 1 one
(kernels are deterministic per workgroup, so the split must not matter).
Then checks `kiln bench --threads 2 --profile` prints a per-dispatch profile
and still ends with the median_ms= line. With STRESS (the
kiln_concurrency_stress program): 8 threads x 200 runs on their own
sessions of the one model are bit-identical to a reference, and 8 threads
sharing one session get each call done or refused as "in use", never a hang
or a wrong result.
"""
import os
import shutil
import subprocess
import sys


def run(cmd):
    print('$ ' + ' '.join(cmd))
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    print(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        raise SystemExit('FAIL: exit %d' % proc.returncode)
    return proc


def main():
    if len(sys.argv) not in (6, 7):
        print(__doc__)
        return 2
    kilnc, kiln, onnx, input_arg, work = sys.argv[1:6]
    stress = sys.argv[6] if len(sys.argv) == 7 else None
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    bundle = os.path.join(work, 'model.kiln')
    run([kilnc, onnx, '-o', bundle])

    outputs = {}
    for threads in (1, 2, 3):
        out_dir = os.path.join(work, 'out%d' % threads)
        run([kiln, 'run', bundle, '--input', input_arg, '--output-dir', out_dir,
             '--threads', str(threads), '--iterations', '3'])
        files = sorted(os.listdir(out_dir))
        assert files, 'no outputs written'
        outputs[threads] = {name: open(os.path.join(out_dir, name), 'rb').read() for name in files}
    for threads in (2, 3):
        assert outputs[threads].keys() == outputs[1].keys(), (threads, outputs[threads].keys())
        for name, data in outputs[1].items():
            if outputs[threads][name] != data:
                raise SystemExit('FAIL: %s differs between --threads 1 and --threads %d'
                                 % (name, threads))
    print('outputs identical for --threads 1, 2, 3: %s' % ', '.join(sorted(outputs[1])))

    proc = run([kiln, 'bench', bundle, '--threads', '2', '--iterations', '3', '--warmup', '1',
                '--profile'])
    lines = proc.stdout.strip().split('\n')
    assert lines[-1].startswith('median_ms=') and lines[-1].endswith('iterations=3'), lines[-1]
    assert any(line.startswith('profile: ') for line in lines), proc.stdout
    rows = [line for line in lines if line.startswith('  ') and 'median_ms' not in line]
    assert rows and len(rows) <= 20, rows
    times = [float(row.split()[0]) for row in rows]
    assert times == sorted(times, reverse=True), times
    assert all(t > 0 for t in times), times

    if stress:
        import numpy as np
        raw = os.path.join(work, 'input.bin')
        np.load(input_arg.split('=', 1)[1]).tofile(raw)
        run([stress, bundle, raw, '8', '200'])
    print('PASS')
    return 0


if __name__ == '__main__':
    sys.exit(main())
