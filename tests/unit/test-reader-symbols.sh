#!/bin/sh
# SPDX-License-Identifier: MIT
#
# test-reader-symbols.sh FILE...
#
# The offline checker reads; it must not carry the writer.  For each FILE
# (the pmemzctl binary, the pmemzd_check archive), nm must show no symbol,
# defined or referenced, of the pmem store module (pstore_*), of the format
# writer (format_*: format.c) or of libpmem2's mapping and
# store functions -- and must show the checker and the media module's rules,
# so that an empty or wrong file cannot pass.
set -eu

command -v nm >/dev/null 2>&1 || { echo "SKIP: nm not found"; exit 77; }
[ $# -ge 1 ] || { echo "usage: $0 FILE..." >&2; exit 2; }

forbidden='^(pstore_.*|format_.*|pmem2_(map_.*|config_.*|source_.*|get_.*|memset|memcpy|memmove|deep_flush|persist|flush|drain))$'
fail=0
for f in "$@"; do
	[ -r "$f" ] || { echo "FAIL: cannot read $f"; fail=1; continue; }
	# Symbol names (defined or undefined), without symbol versions.
	syms=$(nm "$f" 2>/dev/null | awk 'NF >= 2 { print $NF }' | sed 's/@.*//' | sort -u)
	bad=$(printf '%s\n' "$syms" | grep -E "$forbidden" || true)
	if [ -n "$bad" ]; then
		echo "FAIL: $f defines or references writer symbols:"
		printf '  %s\n' $bad
		fail=1
	fi
	for want in check_image media_region_refusal media_missing_extents; do
		printf '%s\n' "$syms" | grep -qx "$want" ||
			{ echo "FAIL: $f has no symbol $want (not the checker?)"; fail=1; }
	done
	[ $fail -ne 0 ] || echo "ok: $f: $(printf '%s\n' "$syms" | wc -l) symbols, no writer"
done
exit $fail
