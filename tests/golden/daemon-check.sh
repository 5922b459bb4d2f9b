#!/usr/bin/env bash
# daemon-check.sh STATUS REGEX COMMAND...: runs COMMAND, which must exit with
# STATUS and print (stdout or stderr) a line matching the extended REGEX.
set -euo pipefail

if (($# < 3)); then
	echo "usage: $0 STATUS REGEX COMMAND..." >&2
	exit 2
fi
want=$1
regex=$2
shift 2

status=0
out=$("$@" 2>&1) || status=$?
printf '%s\n' "$out"
if [[ $status -ne $want ]]; then
	echo "FAIL: '$*' exited with $status, expected $want" >&2
	exit 1
fi
if ! grep -Eq -- "$regex" <<<"$out"; then
	echo "FAIL: no line of the output matches /$regex/" >&2
	exit 1
fi
echo "ok: exit $status, output matches /$regex/"
