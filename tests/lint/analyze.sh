#!/usr/bin/env bash
# analyze.sh COMPILE_COMMANDS.json SRCDIR [JOBS]
#
# gcc -fanalyzer over the shipped code of a build (daemon/, client/,
# common/, proto/; generated files and tests aside), with the build's own
# flags and -Werror: each file is compiled again to /dev/null.
#
# Checks turned off, and why: gcc 12's analyzer does not model
# __attribute__((cleanup)) (_cleanup_free_, _cleanup_(...)p, TAKE_PTR),
# which every function here uses for its early returns, so on this code
# these report the variable a cleanup frees as leaked, freed twice, used
# after free or (for the cleanup function's read) uninitialized:
#   -Wno-analyzer-malloc-leak -Wno-analyzer-double-free
#   -Wno-analyzer-use-after-free -Wno-analyzer-use-of-uninitialized-value
# (ASan and the fuzzers' leak checks cover those at run time.)
#
# Per file, below (per_file): findings checked by hand and found false.
set -uo pipefail
db=$1
src=$2
jobs=${3:-2}

command -v gcc >/dev/null || {
	echo "SKIP: no gcc"
	exit 77
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# compile_commands.json as CMake writes it: "directory", "command", "file"
# lines per entry.  JSON-unescape \\ and \" in the command.
build=$(cd "$(dirname "$db")" && pwd)
awk -v src="$src" -v build="$build" '
	/"directory":/ { d = $0; sub(/^[^:]*: "/, "", d); sub(/",?$/, "", d) }
	/"command":/ { c = $0; sub(/^[^:]*: "/, "", c); sub(/",?$/, "", c) }
	/"file":/ {
		f = $0; sub(/^[^:]*: "/, "", f); sub(/",?$/, "", f)
		if (index(f, src "/") == 1 && index(f, build "/") != 1 &&
		    substr(f, length(src) + 1) ~ /^\/(daemon|client|common|proto)\//) {
			gsub(/\\\\/, "\001", c); gsub(/\\"/, "\"", c); gsub(/\001/, "\\", c)
			print d "\t" f "\t" c
		}
	}' "$db" >"$tmp/list"
n=$(wc -l <"$tmp/list")
if ((n == 0)); then
	echo "no sources of $src in $db" >&2
	exit 1
fi
echo "analyzing $n files"

no_checks="-Wno-analyzer-malloc-leak -Wno-analyzer-double-free -Wno-analyzer-use-after-free"
no_checks+=" -Wno-analyzer-use-of-uninitialized-value"
declare -A per_file=(
	# resolve_path() sets its out-parameter on every 0 return; the
	# analyzer then takes the path as NULL after a successful call.
	[client/lib/client.c]="-Wno-analyzer-null-dereference -Wno-analyzer-null-argument"
)
i=0
while IFS=$'\t' read -r dir file cmd; do
	i=$((i + 1))
	# Replace the output by /dev/null; the analyzer's findings are errors.
	cmd=$(sed -E 's/ -o [^ ]+/ -o \/dev\/null/' <<<"$cmd")
	extra=${per_file[${file#"$src"/}]:-}
	(cd "$dir" && eval "$cmd -fanalyzer -Werror $no_checks $extra" >"$tmp/$i.log" 2>&1 || echo "$file" >"$tmp/$i.fail") &
	while (($(jobs -rp | wc -l) >= jobs)); do wait -n; done
done <"$tmp/list"
wait
status=0
for f in "$tmp"/*.fail; do
	[[ -e $f ]] || continue
	status=1
	cat "${f%.fail}.log"
done
if ((status)); then
	echo "gcc -fanalyzer: findings in: $(cat "$tmp"/*.fail | tr '\n' ' ')" >&2
else
	echo "gcc -fanalyzer: $n files clean"
fi
exit $status
