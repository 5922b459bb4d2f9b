#!/bin/sh
# SPDX-License-Identifier: MIT
# The installed nbdkit-pmemz-plugin carries no test or benchmark knob:
#  - it exports plugin_init alone: no pmemz_debug_* variable, which nbdkit's
#    -D pmemz.NAME=VALUE would set;
#  - it refuses the test build's journal-slots= and the benchmark build's
#    zeroing=inline, which those builds take (zeroing=service, what it
#    always does, is accepted: configurations that name it still start).
#   plugin-product.sh PLUGIN TEST_BUILD BENCH_BUILD
# Exit 77 when nm (or, for the parameters, nbdkit) is missing, or when the
# plugin is a sanitizer build that Debian's nbdkit cannot load (set
# PMEMZ_NBDKIT to a wrapper that preloads the runtime, as for tests/nbd).
set -u
plugin=$1 test_build=$2 bench_build=$3
nm=${NM:-nm}
fail=0

command -v "$nm" >/dev/null 2>&1 || { echo "SKIP: $nm is not installed"; exit 77; }
for so in "$plugin" "$test_build" "$bench_build"; do
	# defined code and data, without the linker's own symbols
	syms=$("$nm" -D --defined-only "$so" | awk '$2 ~ /^[TtDdBbRrVvWw]$/ { print $3 }' |
		grep -v -x -e _init -e _fini -e _edata -e _end -e __bss_start)
	if [ "$syms" != plugin_init ]; then
		echo "FAIL: $so exports more than plugin_init:"
		echo "$syms"
		fail=1
	fi
done
if "$nm" -D "$plugin" | grep -q pmemz_debug; then
	echo "FAIL: $plugin names a pmemz_debug symbol"
	fail=1
fi

nbdkit=${PMEMZ_NBDKIT:-nbdkit}
skip=
command -v "$nbdkit" >/dev/null 2>&1 || skip="nbdkit is not installed"
[ "${PMEMZ_NBD_SANITIZED:-}" = 1 ] && [ -z "${PMEMZ_NBDKIT:-}" ] &&
	skip="the plugin is a sanitizer build and PMEMZ_NBDKIT names no wrapper to load it"
if [ -n "$skip" ]; then
	echo "SKIP: $skip (the parameters are not checked)"
	[ "$fail" = 0 ] && exit 77
	exit 1
fi
# config is parsed before anything connects: an unknown parameter fails there
refused() { # SO PARAMETER WHY: nbdkit must refuse it, saying WHY
	out=$("$nbdkit" --run true "$1" region=r "$2" 2>&1)
	if [ $? = 0 ] || ! printf '%s' "$out" | grep -q "$3"; then
		echo "FAIL: $1 took $2:"
		echo "$out"
		fail=1
	fi
}
accepted() { # SO PARAMETER: config goes past it (and fails later, on region=r: no daemon)
	out=$("$nbdkit" --run true "$1" region=r socket=/nonexistent "$2" 2>&1)
	if printf '%s' "$out" | grep -q "unknown parameter"; then
		echo "FAIL: $1 refused $2:"
		echo "$out"
		fail=1
	fi
}
refused "$plugin" journal-slots=8 "unknown parameter"
refused "$plugin" zeroing=inline "only the benchmark build"
accepted "$plugin" zeroing=service
accepted "$test_build" journal-slots=8
accepted "$bench_build" zeroing=inline
[ "$fail" = 0 ] && echo "PASS: the installed plugin exports plugin_init alone and takes no test parameter"
exit "$fail"
