#!/bin/sh
# SPDX-License-Identifier: MIT
# test-pmemzctl-cli.sh PMEMZCTL: exit statuses and one-line reasons without a daemon.
set -u
ctl=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

# expect STATUS REGEX-ON-STDERR ARGS...
expect() {
	want=$1 re=$2
	shift 2
	"$ctl" "$@" >"$tmp/out" 2>"$tmp/err"
	got=$?
	if [ "$got" -ne "$want" ] || ! grep -Eq "$re" "$tmp/err"; then
		echo "FAIL: pmemzctl $*: exit $got (want $want), stderr:"
		cat "$tmp/err"
		fail=1
	else
		echo "ok: pmemzctl $* -> $got"
	fi
}

expect 1 '^pmemzctl: cannot connect to /nonexistent-pmemz/sock: No such file or directory$' \
	--socket /nonexistent-pmemz/sock status
expect 1 '^pmemzctl: cannot connect to /nonexistent-pmemz/sock: ' -s /nonexistent-pmemz/sock regions
export PMEMZ_SOCKET=/nonexistent-pmemz/env.sock
expect 1 '^pmemzctl: cannot connect to /nonexistent-pmemz/env.sock: ' status
expect 1 'env\.sock' --json tags r --all
unset PMEMZ_SOCKET
# exactly one line when unreachable
[ "$(wc -l <"$tmp/err")" -eq 1 ] || { echo "FAIL: more than one line"; fail=1; }

# a socket nobody listens on
if command -v python3 >/dev/null 2>&1; then
	python3 -c 'import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$tmp/sock"
	expect 1 "^pmemzctl: cannot connect to $tmp/sock: Connection refused\$" -s "$tmp/sock" status
fi

expect 2 'unknown command' bogus
expect 2 'which region' -s /nonexistent-pmemz/sock tags
expect 2 'unexpected argument' -s /nonexistent-pmemz/sock status extra
expect 2 'Usage' -s /nonexistent-pmemz/sock regions --frobnicate
expect 2 "^pmemzctl: unrecognized option '--no-such-option'" --no-such-option status
expect 2 'Usage' # no command

# set-rate takes zero_rate's syntax (pmemz_parse_rate): a valid rate gets as
# far as connecting, an invalid one is a usage error before that.
for rate in 2G/s 300k/S Unlimited 1GiB/s 0; do
	expect 1 '^pmemzctl: cannot connect to ' -s /nonexistent-pmemz/sock set-rate r "$rate"
done
# 64 characters or more: set-rate once refused them, the file took them.
expect 1 '^pmemzctl: cannot connect to ' -s /nonexistent-pmemz/sock set-rate r \
	"$(printf '%070d' 0)1M/s"
for rate in 1M/sec /s unlimited/s fast; do
	expect 2 "invalid rate '$rate'" -s /nonexistent-pmemz/sock set-rate r "$rate"
done

"$ctl" --help | grep -q '^Commands:' || { echo "FAIL: --help"; fail=1; }
"$ctl" tags --help | grep -q -- '--all' || { echo "FAIL: tags --help"; fail=1; }
# help: the command list, then every listed command's own usage
"$ctl" help >"$tmp/help" || { echo "FAIL: help exits $?"; fail=1; }
grep -q '^Commands:' "$tmp/help" || { echo "FAIL: help lists no commands"; fail=1; }
cmds=$(sed -n '/^Commands:/,/^$/s/^  \([a-z][a-z-]*\) .*/\1/p' "$tmp/help")
[ "$(echo "$cmds" | wc -w)" -ge 9 ] || { echo "FAIL: help lists only: $cmds"; fail=1; }
for c in $cmds; do
	if ! "$ctl" help "$c" >"$tmp/out" 2>"$tmp/err" || [ -s "$tmp/err" ] ||
		! grep -q "^Usage: pmemzctl \[OPTIONS\] $c " "$tmp/out" ||
		! "$ctl" "$c" --help | cmp -s - "$tmp/out"; then
		echo "FAIL: pmemzctl help $c"
		cat "$tmp/out" "$tmp/err"
		fail=1
	else
		echo "ok: pmemzctl help $c"
	fi
done
# metrics has one format: its help offers no --json, and --json is refused
# before any connection (either side of the command name).
if "$ctl" metrics --help | grep -q -- '--json'; then
	echo "FAIL: metrics --help lists --json, which metrics refuses"
	fail=1
fi
"$ctl" status --help | grep -q -- '--json' || { echo "FAIL: status --help lacks --json"; fail=1; }
expect 2 '^pmemzctl: metrics prints the Prometheus text format, not JSON' metrics --json
expect 2 '^pmemzctl: metrics prints the Prometheus text format, not JSON' --json metrics
expect 2 "^pmemzctl: help: unknown command 'nosuch'" help nosuch
[ ! -s "$tmp/out" ] || { echo "FAIL: help nosuch wrote to stdout"; fail=1; }
expect 2 '^pmemzctl: help takes one command' help status tags

"$ctl" --version | grep -q '^pmemzctl [0-9]' || { echo "FAIL: --version"; fail=1; }
exit $fail
