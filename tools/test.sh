#!/usr/bin/env bash
# Sets up the machine (tools/setup.sh --with-tests), builds Kiln and runs the
# whole test suite. Prints "N passed, N failed[, N skipped]" last and exits
# with meson test's status.
#
#   tools/test.sh [extra `meson test` arguments, e.g. --suite e2e]
#
# Environment: BUILD_DIR (default: build).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
build_dir="${BUILD_DIR:-build}"

"$root/tools/setup.sh" --with-tests

testlog="$build_dir/meson-logs/testlog.json"
rm -f "$testlog"
status=0
meson test -C "$build_dir" --print-errorlogs "$@" || status=$?

if [[ -f "$testlog" ]]; then
  /usr/bin/python3 - "$testlog" <<'PY'
import json, sys
passed = failed = skipped = 0
with open(sys.argv[1]) as f:
    for line in f:
        line = line.strip()
        if not line:
            continue
        result = json.loads(line).get('result', '')
        if result in ('OK', 'EXPECTEDFAIL'):
            passed += 1
        elif result == 'SKIP':
            skipped += 1
        else:  # FAIL, TIMEOUT, UNEXPECTEDPASS, ERROR, INTERRUPT
            failed += 1
summary = '%d passed, %d failed' % (passed, failed)
if skipped:
    summary += ', %d skipped' % skipped
print(summary)
PY
else
  echo "test.sh: $testlog not written (meson test exited $status before running tests)" >&2
  echo "0 passed, 0 failed"
  [[ $status -ne 0 ]] || status=1
fi
exit "$status"
