#!/usr/bin/env bash
# cppcheck.sh COMPILE_COMMANDS.json SRCDIR [JOBS]
#
# cppcheck (warning, portability, and its errors) over every source of a
# build that lies in SRCDIR; the suppressions, with their reasons, below.
set -uo pipefail
db=$1
src=$2
jobs=${3:-2}

suppress=(
	# The code frees with __attribute__((cleanup)) (_cleanup_free_,
	# _cleanup_fclose_, _cleanup_(...)p), which cppcheck does not model: it
	# calls every early return a leak.  ASan and the fuzzers check leaks.
	--suppress=memleak
	--suppress=resourceLeak
	# A NULL sentinel after the last variadic argument: glibc's NULL is
	# ((void *)0), the pointer the callee reads (tests/unit/test-conf.c).
	--suppress=varFuncNullUB
	# The generated pmemz.pb-c.h checks the version macro of
	# <protobuf-c/protobuf-c.h>, a system header cppcheck does not read.
	'--suppress=preprocessorErrorDirective:*/pmemz.pb-c.h'
)

command -v cppcheck >/dev/null || {
	echo "SKIP: cppcheck is not installed (apt-get install cppcheck)"
	exit 77
}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# cppcheck's own cache would land next to compile_commands.json: none.
# Generated files (a build directory inside SRCDIR) are not ours to lint.
build=$(cd "$(dirname "$db")" && pwd)
cppcheck --project="$db" --file-filter="$src/*" -i "$build" --enable=warning,portability \
	--std=c11 --inline-suppr "${suppress[@]}" -q -j "$jobs" \
	--error-exitcode=1 --template='{file}:{line}: {severity}: {message} [{id}]' >"$out" 2>&1
status=$?
cat "$out"
if ((status)) || grep -q ': \(error\|warning\|portability\|style\|performance\): ' "$out"; then
	echo "cppcheck: findings above" >&2
	exit 1
fi
echo "cppcheck: clean"
