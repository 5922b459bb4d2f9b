#!/bin/sh
# pmemz-bench --socket measures a daemon it did not start, and must leave
# it as it found it: its cleanup used to unlink that daemon's socket, so
# the daemon ran on with no way in.
#   bench-socket.sh PMEMZ-BENCH PMEMZEROD PMEMZCTL
set -eu
bench=$1 daemon=$2 ctl=$3
dir=$(mktemp -d /dev/shm/pmemz-bench-socket-XXXXXX)
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
PMEM2_FORCE_GRANULARITY=CACHE_LINE "$daemon" -d --socket "$dir/d.sock" \
	--region "default=$dir/r.img,size=320M,extent=2M" >"$dir/daemon.log" 2>&1 &
pid=$!
i=0
until [ -S "$dir/d.sock" ]; do
	i=$((i + 1))
	if [ "$i" -gt 100 ] || ! kill -0 "$pid" 2>/dev/null; then
		echo "FAIL: pmemzerod did not start:" >&2
		cat "$dir/daemon.log" >&2
		exit 1
	fi
	sleep 0.1
done
"$bench" --quick -s alloc --socket "$dir/d.sock" --region default --dir "$dir"
if [ ! -S "$dir/d.sock" ]; then
	echo "FAIL: pmemz-bench --socket removed the daemon's socket" >&2
	exit 1
fi
"$ctl" --socket "$dir/d.sock" status >/dev/null
echo "PASS: the daemon's socket is there and answers after the bench"
