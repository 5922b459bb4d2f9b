#!/bin/sh
# SPDX-License-Identifier: MIT
#
# test-symbols.sh LIBRARY.so VERSION-SCRIPT HEADER [CC [INCLUDE-DIR [CLIENT...]]]
#
# libpmemzclient's ABI check: the functions the shared library exports, the
# names its version script lists and the functions its public header
# declares must be the same three sets.  Also: every export carries a
# LIBPMEMZCLIENT_ version, the SONAME is libpmemzclient.so.<major>, and no
# protobuf-c message descriptor or other internal symbol leaks out.
# INCLUDE-DIR: where the header's generated companion
# (libpmemzclient-version.h) is.
#
# Each CLIENT (a program or module the project installs or ships as an
# example) is held to the public API: it needs the library's SONAME, every
# pmemz_ function it imports is a versioned export, and it carries no copy
# of an exported function (the static library linked in).
set -eu

lib=$1
map=$2
hdr=$3
cc=${4:-${CC:-cc}}
incdir=${5:-}
shift $(($# < 5 ? $# : 5))

for tool in nm readelf; do
	command -v "$tool" >/dev/null 2>&1 || { echo "SKIP: $tool not found"; exit 77; }
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

# Exported: defined dynamic symbols minus the version nodes (type A).
nm -D --defined-only "$lib" | awk '$2 != "A" { print $3 }' >"$tmp/exported-versioned"
sed 's/@.*//' "$tmp/exported-versioned" | sort -u >"$tmp/exported"

# Version script: the names in global: sections (comments and local: ignored).
awk '
	/\/\*/ { incomment = 1 }
	incomment { if ($0 ~ /\*\//) incomment = 0; next }
	/global:/ { global = 1; next }
	/local:/ || /}/ { global = 0; next }
	global && $1 ~ /^[A-Za-z_][A-Za-z0-9_]*;$/ { sub(/;$/, "", $1); print $1 }
' "$map" | sort -u >"$tmp/map"

# Header: preprocess it (comments and macros gone) and take every
# pmemz_name( that is declared.
"$cc" -E -P -x c ${incdir:+-I"$incdir"} "$hdr" | tr '\n' ' ' | grep -o '[A-Za-z_][A-Za-z0-9_]*[[:space:]]*(' |
	sed 's/[[:space:]]*($//' | grep '^pmemz_' | sort -u >"$tmp/header"

compare() {
	if ! diff -u "$tmp/$1" "$tmp/$2" >"$tmp/diff"; then
		echo "FAIL: $3"
		cat "$tmp/diff"
		fail=1
	else
		echo "ok: $3 ($(wc -l <"$tmp/$1") symbols)"
	fi
}

[ -s "$tmp/exported" ] || { echo "FAIL: $lib exports nothing"; fail=1; }
compare map exported "exported symbols == version script"
compare header exported "exported symbols == public header functions"

# Every export is versioned.
if grep -v '@@*LIBPMEMZCLIENT_[0-9]' "$tmp/exported-versioned" >"$tmp/unversioned"; then
	echo "FAIL: unversioned exports:"
	cat "$tmp/unversioned"
	fail=1
fi

# Each name carries the version of the node that lists it (a name moved to
# another node would break applications linked against the older release).
awk '
	/\/\*/ { incomment = 1 }
	incomment { if ($0 ~ /\*\//) incomment = 0; next }
	/^[A-Za-z_][A-Za-z0-9_.]*[[:space:]]*\{/ { node = $1; sub(/\{.*/, "", node); next }
	/global:/ { global = 1; next }
	/local:/ || /}/ { global = 0; next }
	global && $1 ~ /^[A-Za-z_][A-Za-z0-9_]*;$/ { sub(/;$/, "", $1); print $1 "@@" node }
' "$map" | sort -u >"$tmp/map-versioned"
sed 's/@@*/@@/' "$tmp/exported-versioned" | sort -u >"$tmp/exported-nodes"
compare map-versioned exported-nodes "every export has the version of its node"

# Nothing internal: protobuf-c descriptors, frame helpers, common helpers.
if grep -E '^(pmemz__|pmemz_frame_|pmemz_client_call|pmemz_err$|pmemz_debug|pmemz_parse_size|pmemz_format_size|pmemz_default_|protobuf_c_)' \
	"$tmp/exported" >"$tmp/leaks"; then
	echo "FAIL: internal symbols exported:"
	cat "$tmp/leaks"
	fail=1
fi

soname=$(readelf -d "$lib" | sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p')
case "$soname" in
libpmemzclient.so.[0-9]*) echo "ok: SONAME $soname" ;;
*)
	echo "FAIL: SONAME is '$soname'"
	fail=1
	;;
esac

for client in "$@"; do
	name=$(basename "$client")
	was=$fail
	fail=0
	if ! readelf -d "$client" | grep -q "(NEEDED).*\[$soname\]"; then
		echo "FAIL: $name does not link $soname"
		fail=1
	fi
	nm -D --undefined-only "$client" | awk '{ print $NF }' | grep '^pmemz_' >"$tmp/imports" || true
	if grep -v '@LIBPMEMZCLIENT_[0-9]' "$tmp/imports" >"$tmp/private"; then
		echo "FAIL: $name calls pmemz_ functions the library does not export:"
		cat "$tmp/private"
		fail=1
	fi
	nm --defined-only "$client" 2>/dev/null | awk '{ print $NF }' | sort -u >"$tmp/defined"
	if comm -12 "$tmp/exported" "$tmp/defined" >"$tmp/copies" && [ -s "$tmp/copies" ]; then
		echo "FAIL: $name carries its own copy of library functions:"
		cat "$tmp/copies"
		fail=1
	fi
	if [ $fail -eq 0 ]; then
		echo "ok: $name: $(wc -l <"$tmp/imports") imports, all exported"
	fi
	fail=$((fail | was))
done

exit $fail
