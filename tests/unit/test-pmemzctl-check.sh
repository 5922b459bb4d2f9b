#!/bin/sh
# SPDX-License-Identifier: MIT
# test-pmemzctl-check.sh PMEMZCTL: `pmemzctl check` without a daemon: usage,
# unreadable and unusable input (exit 2), text and JSON output.
set -u
ctl=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

# expect STATUS REGEX-ON-STDOUT+STDERR ARGS...
expect() {
	want=$1 re=$2
	shift 2
	"$ctl" "$@" >"$tmp/out" 2>&1
	got=$?
	if [ "$got" -ne "$want" ] || ! grep -Eq "$re" "$tmp/out"; then
		echo "FAIL: pmemzctl $*: exit $got (want $want, /$re/), output:"
		cat "$tmp/out"
		fail=1
	else
		echo "ok: pmemzctl $* -> $got"
	fi
}

expect 2 'which region file or device' check
expect 2 'unexpected argument' check a b
expect 2 'Usage' check --frobnicate x
expect 2 '^pmemzctl: cannot check /nonexistent-pmemz/r.img: No such file or directory$' \
	check /nonexistent-pmemz/r.img
expect 2 'cannot check /: Is a directory' check /
expect 2 'cannot check /dev/null: not a regular file or a device-DAX' check /dev/null
: >"$tmp/empty"
expect 2 'status: +unusable' check "$tmp/empty"
head -c 1048576 /dev/zero >"$tmp/blank"
expect 2 'not a pmemzerod region: primary header blank' check --no-data "$tmp/blank"
expect 2 '"status": "unusable"' --json check "$tmp/blank"
expect 2 '"exit_status": 2' check --json --recovered "$tmp/blank"
if command -v python3 >/dev/null 2>&1; then
	"$ctl" check --json "$tmp/blank" | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["status"]=="unusable" and d["problems"], d' ||
		{ echo "FAIL: JSON does not parse"; fail=1; }
fi
"$ctl" check --help | grep -q -- '--recovered' || { echo "FAIL: check --help"; fail=1; }
"$ctl" --help | grep -q '^  check ' || { echo "FAIL: check not in --help"; fail=1; }
exit $fail
