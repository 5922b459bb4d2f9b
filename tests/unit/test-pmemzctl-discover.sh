#!/bin/sh
# SPDX-License-Identifier: MIT
# test-pmemzctl-discover.sh PMEMZCTL: `pmemzctl discover` needs no daemon.
# On a machine without device-DAX devices (a build host) it says so and
# exits 0, and --json is an empty "devices" array; with devices, every
# entry has a path, a size and a power-of-two alignment.  Without CXL
# memdevs there is no CXL part (the CXL machine: tests/vm/workload-cxl.sh).
# shellcheck disable=SC2015 # "A && ok || bad": ok() never fails
set -u
ctl=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

ok() { echo "ok: $*"; }
bad() {
	echo "FAIL: $*"
	fail=1
}

# No daemon, and a socket that cannot work: discover must not care.
export PMEMZ_SOCKET=/nonexistent-pmemz/sock

have_devices=0
for d in /sys/bus/dax/devices/*; do
	[ -e "$d" ] && have_devices=1
done

"$ctl" discover >"$tmp/text" 2>"$tmp/err"
st=$?
[ "$st" -eq 0 ] && ok "discover -> 0" || bad "discover exited $st: $(cat "$tmp/err")"
[ -s "$tmp/err" ] && bad "discover wrote to stderr: $(cat "$tmp/err")"
if [ $have_devices -eq 0 ]; then
	if [ "$(cat "$tmp/text")" = "no device-DAX devices found" ]; then
		ok "discover: 'no device-DAX devices found'"
	else
		bad "discover printed: $(cat "$tmp/text")"
	fi
else
	head -n1 "$tmp/text" | grep -q '^DEVICE ' && ok "discover: a table" ||
		bad "discover printed no table: $(cat "$tmp/text")"
fi

"$ctl" --json discover >"$tmp/json" 2>"$tmp/err"
st=$?
[ "$st" -eq 0 ] && ok "--json discover -> 0" || bad "--json discover exited $st"
"$ctl" discover --json >"$tmp/json2" 2>/dev/null && cmp -s "$tmp/json" "$tmp/json2" &&
	ok "discover --json == --json discover" || bad "discover --json differs"

# Validate with jq, else python3; the check itself is the same.
if command -v jq >/dev/null 2>&1; then
	n=$(jq -e '.devices | length' "$tmp/json" 2>"$tmp/err") || bad "not JSON with a devices array: $(cat "$tmp/json")"
	jq -e '.devices | all(has("path") and has("persistence_domain") and .size > 0 and
		.align >= 4096 and .align % 4096 == 0)' "$tmp/json" >/dev/null ||
		bad "a device lacks path/size/align/persistence_domain"
elif command -v python3 >/dev/null 2>&1; then
	n=$(python3 -c 'import json,sys
d=json.load(open(sys.argv[1]))["devices"]
assert all("path" in x and x["size"] > 0 and x["align"] > 0 and x["align"] & (x["align"]-1) == 0 for x in d)
print(len(d))' "$tmp/json") || bad "not JSON with a devices array: $(cat "$tmp/json")"
else
	echo "SKIP: neither jq nor python3 to validate JSON"
	exit 77
fi
if [ $have_devices -eq 0 ]; then
	[ "${n:-x}" = 0 ] && ok "--json: devices is an empty array" || bad "--json: $n devices"
else
	ok "--json: $n device(s)"
fi

# Without CXL memdevs there is no CXL part (an NVDIMM machine's output is unchanged).
have_cxl=0
for d in /sys/bus/cxl/devices/mem*; do
	[ -e "$d" ] && have_cxl=1
done
if [ $have_cxl -eq 0 ]; then
	if grep -q '"cxl' "$tmp/json" || grep -q 'CXL' "$tmp/text"; then
		bad "discover shows CXL on a machine without CXL memdevs"
	else
		ok "discover: no CXL part without CXL memdevs"
	fi
fi
"$ctl" discover --help 2>&1 | grep -q 'cxl create-region' && ok "discover --help names cxl create-region" ||
	bad "discover --help does not explain the CXL part"

# A path that is not a device-DAX: one line, exit 1.
"$ctl" discover /dev/null >"$tmp/out" 2>"$tmp/err"
st=$?
if [ "$st" -eq 1 ] && grep -qx 'pmemzctl: /dev/null is not a device-DAX device' "$tmp/err"; then
	ok "discover /dev/null -> 1"
else
	bad "discover /dev/null: exit $st, stderr: $(cat "$tmp/err")"
fi
"$ctl" discover /nonexistent-pmemz/dax9.9 >"$tmp/out" 2>"$tmp/err"
st=$?
if [ "$st" -eq 1 ] && grep -q 'No such file or directory' "$tmp/err"; then
	ok "discover /nonexistent -> 1"
else
	bad "discover /nonexistent: exit $st, stderr: $(cat "$tmp/err")"
fi
"$ctl" discover a b >"$tmp/out" 2>"$tmp/err"
st=$?
[ "$st" -eq 2 ] && ok "discover a b -> 2 (usage)" || bad "discover a b: exit $st"
"$ctl" discover --help >"$tmp/out" 2>&1 && grep -q 'persistence' "$tmp/out" &&
	ok "discover --help" || bad "discover --help"

exit $fail
