#!/usr/bin/python3
"""run_conformance.py --save-bundles then --load-bundles (tools/gpu_check's
split: compile on one machine, run on another) gives every case the same
status and reason, with kilnc not run the second time: passes (one of them
a window's expanded function body, sized per run), a pass with frozen
inputs (three kilnc runs: plain, a value range, frozen), a case kilnc
refuses (exit 1: a sequence whose shape only the data gives), a string case
(strings in and out as .npy) and a case refused before kilnc (its reference
is known bad). A case with no saved record fails.

  saved_bundles_test.py RUN_CONFORMANCE KILNC KILN DATA WORKDIR
"""

import os
import re
import shutil
import subprocess
import sys

CASES = '^node/test_(relu|blackmanwindow_expanded|sequence_insert_at_front|loop13_seq|cast_FLOAT_to_STRING|adam_multiple)$'


def statuses(report):
    rows = {}
    with open(report) as f:
        for line in f:
            m = re.match(r'^\| (node/test_\w+) \| (\w+) \| (.*) \|$', line.rstrip('\n'))
            if m:
                rows[m.group(1)] = (m.group(2), m.group(3))
    return rows


def run(runner, args, expect_rc):
    cmd = ['/usr/bin/python3', runner] + args
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = p.stdout.decode('utf-8', 'replace')
    if p.returncode != expect_rc:
        sys.exit('FAIL: %s exited %d, expected %d:\n%s' % (' '.join(cmd), p.returncode, expect_rc, out))
    return out


def main():
    runner, kilnc, kiln, data, work = sys.argv[1:6]
    if os.path.isdir(work):
        shutil.rmtree(work)
    os.makedirs(work)
    saved = os.path.join(work, 'bundles')
    common = ['--kiln', kiln, '--data', data, '--filter', CASES, '--jobs', '2']
    run(runner, common + ['--kilnc', kilnc, '--workdir', os.path.join(work, 'w1'),
                          '--report', os.path.join(work, 'save.md'), '--save-bundles', saved], 0)
    first = statuses(os.path.join(work, 'save.md'))
    want = {'node/test_relu': 'pass', 'node/test_blackmanwindow_expanded': 'pass',
            'node/test_sequence_insert_at_front': 'pass',  # (its insert position frozen)
            'node/test_loop13_seq': 'unsupported', 'node/test_cast_FLOAT_to_STRING': 'pass',
            'node/test_adam_multiple': 'unsupported'}
    for name, status in want.items():
        if first.get(name, ('missing',))[0] != status:
            sys.exit('FAIL: %s is %s when compiling, expected %s' % (name, first.get(name), status))
    if 'frozen' not in first['node/test_sequence_insert_at_front'][1]:
        sys.exit('FAIL: test_sequence_insert_at_front no longer freezes an input; pick another three-step case')
    # Replay: no --kilnc at all.
    run(runner, common + ['--workdir', os.path.join(work, 'w2'), '--report', os.path.join(work, 'load.md'),
                          '--load-bundles', saved], 0)
    second = statuses(os.path.join(work, 'load.md'))
    if second != first:
        sys.exit('FAIL: replayed statuses differ:\n  saved:  %s\n  loaded: %s' % (first, second))
    # A case without a saved record: a failure that says what is missing.
    shutil.rmtree(os.path.join(saved, 'node', 'test_relu'))
    run(runner, common + ['--workdir', os.path.join(work, 'w3'), '--report', os.path.join(work, 'gone.md'),
                          '--load-bundles', saved, '--expected', os.path.join(work, 'expected.txt'),
                          '--update-expected'], 0)
    third = statuses(os.path.join(work, 'gone.md'))
    status, reason = third.get('node/test_relu', ('missing', ''))
    if status != 'fail' or 'no saved kilnc result' not in reason:
        sys.exit('FAIL: a missing record gave %s: %s' % (status, reason))
    print('saved bundles: 6 cases replayed with the same statuses; a missing record fails')


if __name__ == '__main__':
    main()
