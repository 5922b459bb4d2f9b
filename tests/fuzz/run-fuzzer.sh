#!/usr/bin/env bash
# run-fuzzer.sh FUZZER CORPUS WORKDIR [SECONDS]
#
# The fuzz ctests and scripts/fuzz: run FUZZER over every file of CORPUS
# (the committed seeds and regression inputs: each must pass), then fuzz
# for SECONDS (default $PMEMZ_FUZZ_SECONDS or 20), starting from CORPUS
# plus what earlier runs found (WORKDIR/corpus; the source tree is never
# written).  Any crash, leak, sanitizer report or timeout fails; its input
# is saved in WORKDIR/ (crash-*, leak-*, timeout-*): add it to CORPUS as a
# regression case with the fix.
set -euo pipefail

fuzzer=$1
corpus=$2
work=$3
seconds=${4:-${PMEMZ_FUZZ_SECONDS:-20}}
name=$(basename "$fuzzer")

mkdir -p "$work/corpus"
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

mapfile -t seeds < <(find "$corpus" -type f | sort)
if ((${#seeds[@]} == 0)); then
	echo "$name: no seeds in $corpus" >&2
	exit 1
fi
echo "==> $name: ${#seeds[@]} corpus inputs"
"$fuzzer" -timeout=10 "${seeds[@]}" >"$work/regression.log" 2>&1 || {
	tail -n 60 "$work/regression.log" >&2
	echo "$name: a corpus input fails (log: $work/regression.log)" >&2
	exit 1
}

echo "==> $name: fuzzing for ${seconds}s"
# -runs caps the cheap harnesses; the last line of stats is the report.
"$fuzzer" -max_total_time="$seconds" -runs="${PMEMZ_FUZZ_RUNS:-100000000}" -timeout=10 \
	-rss_limit_mb=2048 -max_len=${PMEMZ_FUZZ_MAX_LEN:-16384} -print_final_stats=1 \
	-artifact_prefix="$work/" "$work/corpus" "$corpus" >"$work/fuzz.log" 2>&1 || {
	tail -n 80 "$work/fuzz.log" >&2
	echo "$name: fuzzing found a failure (log: $work/fuzz.log, inputs: $work/)" >&2
	exit 1
}
grep -E '^#[0-9]+.*(DONE|cov:)' "$work/fuzz.log" | tail -n 1
grep -E '^stat::(number_of_executed_units|peak_rss_mb)' "$work/fuzz.log" || true
