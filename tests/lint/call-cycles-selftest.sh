#!/bin/sh
# call-cycles.py must fail on a cycle and pass without one: two tiny
# folders compiled into a fake CMake build tree.
# Usage: call-cycles-selftest.sh CALL_CYCLES_PY CC
set -eu
script=$1
cc=${2:-cc}
command -v "$cc" >/dev/null || { echo "SKIP: no C compiler ($cc)"; exit 77; }
command -v "${NM:-nm}" >/dev/null || { echo "SKIP: nm not found"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

obj() { # folder file.c source
	d="$tmp/$1/CMakeFiles/t.dir"
	mkdir -p "$d"
	printf '%s\n' "$3" > "$tmp/$2.src.c"
	"$cc" -c -o "$d/$2.o" "$tmp/$2.src.c"
}
obj ring a.c 'void b(void); void a(void) { b(); }'
obj ring b.c 'void c(void); void b(void) { c(); }'
obj ring c.c 'void a(void); void c(void) { a(); }'
obj tree top.c 'void low(void); void top(void) { low(); }'
obj tree low.c 'void low(void) { }'

if out=$(python3 "$script" "$tmp" ring tree); then
	echo "FAIL: the cycle a.c -> b.c -> c.c -> a.c was not found"; echo "$out"; exit 1
fi
echo "$out" | grep -q 'cycle: a.c -> b.c -> c.c -> a.c' ||
	{ echo "FAIL: the cycle is not printed as a chain"; echo "$out"; exit 1; }
echo "$out" | grep -q 'tree: 2 files, no cycle' ||
	{ echo "FAIL: the layered folder is not clean"; echo "$out"; exit 1; }
python3 "$script" "$tmp" tree --not-yet ring > "$tmp/out" ||
	{ echo "FAIL: a --not-yet folder failed the run"; cat "$tmp/out"; exit 1; }
grep -q 'ring: not yet layered' "$tmp/out" ||
	{ echo "FAIL: the --not-yet folder's cycle is not reported"; cat "$tmp/out"; exit 1; }
echo "ok: a cycle fails, a layered folder passes, --not-yet only reports"
