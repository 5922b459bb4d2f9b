#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# tests/wire/record-baseline.sh [COMMIT]
#
# Record the wire frames of an older release for test-wire-compat
# (tests/wire/README.md): build COMMIT (default: the baseline of every
# compatibility promise, db6afef, the last commit before the version
# ranges) from this clone's history in a temporary worktree, out of tree,
# run its pmemzerod on a fresh file region and, through record-proxy.py,
# its clients: wire-workload.c built against that commit's libpmemzclient,
# then that commit's pmemzctl, one command after the other.  The frames go
# to tests/wire/frames/<first 7 digits of COMMIT>/, one file per
# connection, NN-NAME-1.frames in the order they were made; commit them.  The worktree and the build are removed at exit; nothing
# else of the clone changes.
#
# The recorded replies hold the region's path: the region is in the fixed
# directory /tmp/pmemz-wire-recording, the same on every machine.
set -euo pipefail

commit=${1:-db6afef5bd950d2f9eab6e3b68d27bb0b055684a}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(git -C "$here" rev-parse --show-toplevel)
commit=$(git -C "$top" rev-parse --verify "$commit^{commit}")
out=$here/frames/${commit:0:7}
dir=/tmp/pmemz-wire-recording
region_size=64M extent_size=1M

for tool in cmake python3 cc; do
	command -v "$tool" >/dev/null || {
		echo "record-baseline.sh: $tool is missing" >&2
		exit 1
	}
done

tmp=$(mktemp -d)
daemon_pid=
proxy_pid=
cleanup() {
	if [[ -n $proxy_pid ]]; then kill "$proxy_pid" 2>/dev/null || true; fi
	if [[ -n $daemon_pid ]]; then kill "$daemon_pid" 2>/dev/null || true; fi
	wait 2>/dev/null || true
	git -C "$top" worktree remove --force "$tmp/src" 2>/dev/null || true
	rm -rf "$tmp" "$dir"
}
trap cleanup EXIT

echo "==> $commit: a worktree in $tmp/src, built in $tmp/build"
git -C "$top" worktree add --detach "$tmp/src" "$commit" >/dev/null
cmake -S "$tmp/src" -B "$tmp/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	-DPMEMZ_BUILD_TESTS=OFF -DPMEMZ_NBDKIT=OFF >"$tmp/cmake.log"
cmake --build "$tmp/build" -j "$(nproc)" --target pmemzerod pmemzctl pmemzclient >"$tmp/build.log"
cc -O2 -DWIRE_WORKLOAD_MAIN -I"$tmp/src/client" -I"$here" -o "$tmp/wire-workload" \
	"$here/wire-workload.c" -L"$tmp/build/client" -lpmemzclient -Wl,-rpath,"$tmp/build/client"
ctl=$tmp/build/client/pmemzctl

echo "==> its pmemzerod on a fresh region wire ($region_size in extents of $extent_size)"
rm -rf "$dir"
mkdir -p "$dir"
printf '[daemon]\nadmin_group = %s\n' "$(id -gn)" >"$dir/pmemzerod.conf"
"$tmp/build/daemon/pmemzerod" -d --socket "$dir/d.sock" -c "$dir/pmemzerod.conf" \
	--region "wire=$dir/wire.img,size=$region_size,extent=$extent_size" >"$tmp/daemon.log" 2>&1 &
daemon_pid=$!
# Every extent zeroed before the clients come, so that what they get does
# not depend on the zeroer's progress (the replay waits for the same).
for ((i = 0; ; i++)); do
	if "$ctl" -s "$dir/d.sock" --json regions >"$tmp/regions.json" 2>/dev/null &&
		python3 -c 'import json, sys; r = json.load(open(sys.argv[1]))["regions"][0]
sys.exit(0 if r["zeroed"] == r["extents"] else 1)' "$tmp/regions.json"; then
		break
	fi
	kill -0 "$daemon_pid" 2>/dev/null || {
		cat "$tmp/daemon.log"
		exit 1
	}
	((i < 600)) || {
		echo "record-baseline.sh: the region is not zeroed after 60 s" >&2
		exit 1
	}
	sleep 0.1
done

rm -rf "$out"
mkdir -p "$out"
# record NAME WHAT COMMAND...: COMMAND's connections, through the proxy, as NN-NAME-i.frames
n=0
record() {
	local name what=$2
	n=$((n + 1))
	name=$(printf '%02d-%s' "$n" "$1")
	shift 2
	cat >"$tmp/header" <<EOF
# pmemz wire frames recorded by tests/wire/record-baseline.sh from commit
# $commit: its pmemzerod with one region, wire
# ($region_size in extents of $extent_size, every extent zeroed), and its client: $what.
# One frame a line, as the proxy saw them: C a request (client to daemon),
# D a response, D+fd a response that came with a file descriptor.
EOF
	rm -f "$dir/p.sock"
	python3 "$here/record-proxy.py" "$dir/p.sock" "$dir/d.sock" "$out" "$name" "$tmp/header" &
	proxy_pid=$!
	while [[ ! -S $dir/p.sock ]]; do
		kill -0 "$proxy_pid" 2>/dev/null || exit 1
		sleep 0.05
	done
	"$@" >"$tmp/client.log"
	kill "$proxy_pid"
	wait "$proxy_pid" 2>/dev/null || true
	proxy_pid=
	echo "    $name: $(cat "$out/$name"-*.frames | grep -c '^[CD]') frames"
}

echo "==> record into ${out#"$top"/}"
record workload "wire-workload.c, built against that commit's libpmemzclient" \
	"$tmp/wire-workload" "$dir/p.sock" wire
for cmd in status regions "tags wire --all" "usage wire" clients "map wire" metrics; do
	# shellcheck disable=SC2086 # the command's words
	record "pmemzctl-${cmd%% *}" "that commit's pmemzctl $cmd" \
		"$ctl" -s "$dir/p.sock" $cmd
done
kill "$daemon_pid"
wait "$daemon_pid" || {
	cat "$tmp/daemon.log"
	echo "record-baseline.sh: the daemon did not stop cleanly" >&2
	exit 1
}
daemon_pid=
echo "==> done: $(find "$out" -name '*.frames' | wc -l) connections in ${out#"$top"/}"
