#!/bin/sh
# SPDX-License-Identifier: MIT
#
# test-examples.sh BUILD_DIR CC WORK_DIR
#
# The examples as a user gets them: `cmake --install` of the build into a
# DESTDIR, then every example source installed in the doc directory
# compiled and linked with the installed headers and library, found by
# pkg-config alone (no -I or -L of the source or build tree), and each
# program must ask the dynamic loader for the installed soname.
set -eu

build=$1
cc=$2
work=$3

command -v pkg-config >/dev/null || { echo "SKIP: pkg-config not found"; exit 77; }
command -v readelf >/dev/null || { echo "SKIP: readelf not found"; exit 77; }

rm -rf "$work"
mkdir -p "$work/bin"
root="$work/root"
if ! DESTDIR="$root" cmake --install "$build" >"$work/install.log" 2>&1; then
	echo "FAIL: cmake --install into $root:"
	cat "$work/install.log"
	exit 1
fi

pc=$(find "$root" -name libpmemzclient.pc | head -n 1)
[ -n "$pc" ] || { echo "FAIL: no libpmemzclient.pc installed"; exit 1; }
examples=$(find "$root" -path '*/doc/*/examples' -type d | head -n 1)
[ -n "$examples" ] || { echo "FAIL: no examples directory installed"; exit 1; }
export PKG_CONFIG_PATH="${pc%/*}"
flags=$(pkg-config --cflags --libs libpmemzclient)
libdir=$(pkg-config --variable=libdir libpmemzclient)
case $libdir in
"$root"/*) ;;
*) echo "FAIL: pkg-config's libdir $libdir is not the installed one (under $root)"; exit 1 ;;
esac

fail=0
n=0
for want in pmemz-example.c pmemz-reconnect.c pmemz-demo.c; do
	[ -f "$examples/$want" ] || { echo "FAIL: $want is not installed in $examples"; fail=1; }
done
for src in "$examples"/*.c; do
	name=$(basename "$src" .c)
	n=$((n + 1))
	# shellcheck disable=SC2086 # pkg-config's flags are words
	if ! (cd "$work" && "$cc" -std=gnu11 -Wall -Wextra -Werror -o "bin/$name" "$src" $flags) \
		>"$work/$name.log" 2>&1; then
		echo "FAIL: $name does not build from the package alone:"
		cat "$work/$name.log"
		fail=1
		continue
	fi
	if ! readelf -d "$work/bin/$name" | grep -q 'NEEDED.*\[libpmemzclient\.so\.1\]'; then
		echo "FAIL: $name does not load libpmemzclient.so.1"
		fail=1
		continue
	fi
	if ! LD_LIBRARY_PATH="$libdir" ldd "$work/bin/$name" | grep -q "$libdir/libpmemzclient.so.1"; then
		echo "FAIL: $name does not resolve libpmemzclient.so.1 in $libdir"
		fail=1
		continue
	fi
	echo "ok: $name builds and links from the installed headers and pkg-config"
done
[ "$n" -gt 0 ] || { echo "FAIL: no example source in $examples"; fail=1; }
exit $fail
