#!/usr/bin/env bash
# Builds the fuzz harnesses, makes their seed corpora, replays the committed
# regression inputs and runs each harness for SECONDS, one at a time.
#
#   tests/fuzz/run.sh SECONDS [HARNESS...]    (default: every harness)
#
# Each harness keeps its corpus in WORK/corpus/HARNESS (it grows across runs;
# the generated seeds in WORK/seeds/HARNESS are read as well) and writes what
# it finds to WORK/crashes/HARNESS/ (crash-*, leak-*, timeout-*, oom-*).
# Exits 1 if any regression input or any run fails (crash, leak, timeout,
# sanitizer report, failed check); prints executions and coverage per harness.
#
# Environment:
#   KILN_FUZZ_BUILD_DIR  the fuzz build (default: build-fuzz at the repository root)
#   KILN_FUZZ_WORK       seeds, corpora and crashes (default: BUILD_DIR/work)
#   KILNC, KILN          kilnc and kiln for the seeds (default: build/compiler/kilnc, build/tools/kiln/kiln)
#   KILN_FUZZ_REQUIRE=1  missing clang-15 or libFuzzer fails (else the run is skipped, exit 77)
#   KILN_FUZZ_JOBS       passed to tests/fuzz/build.sh as KILN_JOBS (default 2)
#   KILN_FUZZ_RUNS       also stop each harness after this many executions (-runs)
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
usage() { sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; }
if [[ $# -lt 1 || ! "$1" =~ ^[0-9]+$ ]]; then usage >&2; exit 2; fi
seconds="$1"; shift
all=(fuzz_bundle fuzz_elf fuzz_spirv fuzz_npy fuzz_onnx_import)
harnesses=("$@")
((${#harnesses[@]})) || harnesses=("${all[@]}")

# Per harness: -max_len (the largest seed with room to grow) and -timeout (s).
declare -A max_len=([fuzz_bundle]=400000 [fuzz_elf]=131072 [fuzz_spirv]=32768 [fuzz_npy]=4096 [fuzz_onnx_import]=262144)
declare -A timeout=([fuzz_bundle]=10 [fuzz_elf]=10 [fuzz_spirv]=10 [fuzz_npy]=10 [fuzz_onnx_import]=30)
for h in "${harnesses[@]}"; do
  [[ -n "${max_len[$h]:-}" ]] || { echo "run.sh: unknown harness '$h' (one of: ${all[*]})" >&2; exit 2; }
done

fuzzer_lib="$(clang++-15 -print-resource-dir 2>/dev/null)/lib/linux/libclang_rt.fuzzer-x86_64.a"
if ! command -v clang++-15 >/dev/null 2>&1 || [[ ! -f "$fuzzer_lib" ]]; then
  echo "run.sh: clang-15 or libFuzzer (libfuzzer-15-dev) is missing; tools/setup.sh installs them" >&2
  [[ "${KILN_FUZZ_REQUIRE:-0}" == 1 ]] && exit 1
  exit 77
fi

build_dir="${KILN_FUZZ_BUILD_DIR:-$root/build-fuzz}"
work="${KILN_FUZZ_WORK:-$build_dir/work}"
kilnc="${KILNC:-$root/build/compiler/kilnc}"
kiln="${KILN:-$root/build/tools/kiln/kiln}"

echo "run.sh: building the harnesses in $build_dir"
KILN_JOBS="${KILN_FUZZ_JOBS:-2}" "$root/tests/fuzz/build.sh" "$build_dir" || { echo "run.sh: build failed" >&2; exit 1; }
echo "run.sh: making seed corpora in $work/seeds"
rm -rf "$work/seeds"
/usr/bin/python3 "$root/tests/fuzz/make_corpus.py" "$work/seeds" --kilnc "$kilnc" --kiln "$kiln" ||
  { echo "run.sh: make_corpus.py failed" >&2; exit 1; }

failed=0
summary=()
for h in "${harnesses[@]}"; do
  bin="$build_dir/$h"
  mkdir -p "$work/corpus/$h" "$work/crashes/$h" "$work/logs"
  # The committed regression inputs first: each must run clean.
  regressions=("$root/tests/fuzz/regressions/$h"/*)
  if [[ -e "${regressions[0]}" ]]; then
    if ! "$bin" -timeout="${timeout[$h]}" "${regressions[@]}" >"$work/logs/$h.regressions.log" 2>&1; then
      echo "run.sh: $h: a regression input fails again; see $work/logs/$h.regressions.log" >&2
      tail -n 30 "$work/logs/$h.regressions.log" >&2
      failed=1
    else
      echo "run.sh: $h: ${#regressions[@]} regression inputs pass"
    fi
  fi
  log="$work/logs/$h.log"
  start=$(date +%s)
  "$bin" "$work/corpus/$h" "$work/seeds/$h" -max_total_time="$seconds" -max_len="${max_len[$h]}" \
      -timeout="${timeout[$h]}" -rss_limit_mb=4096 -print_final_stats=1 \
      -artifact_prefix="$work/crashes/$h/" ${KILN_FUZZ_RUNS:+-runs="$KILN_FUZZ_RUNS"} >"$log" 2>&1
  status=$?
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)"
  last="$(grep -E '^#[0-9]+.*cov:' "$log" | tail -1)"
  cov="$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")"
  ft="$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")"
  corpus="$(ls "$work/corpus/$h" | wc -l)"
  wall=$(( $(date +%s) - start ))
  line="$(printf '%-17s %10s execs in %5ss  cov %-6s ft %-7s corpus %s' "$h" "${execs:-?}" "$wall" "${cov:-?}" "${ft:-?}" "$corpus")"
  if ((status != 0)); then
    failed=1
    line+="  FAILED (exit $status; $log, $work/crashes/$h/)"
    grep -E 'ERROR|SUMMARY|check failed|Error:|Test unit written' "$log" | head -n 10 >&2
  fi
  echo "$line"
  summary+=("$line")
done
echo "run.sh: summary"
printf '  %s\n' "${summary[@]}"
exit "$failed"
