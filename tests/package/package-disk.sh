#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# package-disk.sh ROOT MULTIARCH PLUGINDIR WORK: what `apt install
# ./pmemzerod_*.deb` then `nbdkit pmemz ...` does, without installing
# anything on the host: in a private mount namespace, nbdkit's plugin
# directory is the unpacked package's (ROOT), so `nbdkit pmemz` finds the
# packaged plugin by its name; the packaged pmemzerod serves a file region
# on a private socket, the plugin makes a disk, libnbd writes and reads it,
# and the packaged pmemzctl lists it.  The package's own library is found
# with LD_LIBRARY_PATH (the system's, if any, is not used).
# Exits 77 (with the reason) without root, unshare, nbdkit or python3-libnbd.
set -euo pipefail
root=$1
multiarch=$2
plugindir=$3
work=$4

skip() {
	echo "SKIP: $*: the packaged disk is NOT run"
	exit 77
}
((EUID == 0)) || skip "not root (a mount namespace)"
command -v unshare >/dev/null || skip "unshare is missing"
command -v nbdkit >/dev/null || skip "nbdkit is not installed"
# Debian's interpreter: python3-libnbd installs there.
/usr/bin/python3 -c 'import nbd' 2>/dev/null || skip "python3-libnbd is not installed"
[[ -d $plugindir ]] || skip "nbdkit's plugin directory $plugindir is missing"

rm -rf "$work"
mkdir -p "$work"
export ROOT=$root PLUGINDIR=$plugindir T=$work
export LD_LIBRARY_PATH=$root/usr/lib/$multiarch
exec unshare -m bash -euo pipefail -c '
	mount --bind "$ROOT$PLUGINDIR" "$PLUGINDIR"
	daemon= nbdkit_pid=
	cleanup() {
		[[ -f $T/nbdkit.pid ]] && kill "$(cat "$T/nbdkit.pid")" 2>/dev/null || true
		[[ -n $daemon ]] && kill "$daemon" 2>/dev/null || true
		wait 2>/dev/null || true
	}
	trap cleanup EXIT
	fail() { echo "FAIL: $*"; cat "$T/daemon.log" 2>/dev/null || true; exit 1; }

	"$ROOT/usr/sbin/pmemzerod" -d --socket "$T/d.sock" \
		--region "pkg=$T/pkg.img,size=64M,extent=1M" >"$T/daemon.log" 2>&1 &
	daemon=$!
	for ((i = 0; i < 200; i++)); do
		"$ROOT/usr/bin/pmemzctl" -s "$T/d.sock" status >/dev/null 2>&1 && break
		kill -0 "$daemon" 2>/dev/null || fail "the packaged pmemzerod exited"
		sleep 0.1
	done
	"$ROOT/usr/bin/pmemzctl" -s "$T/d.sock" status >/dev/null || fail "the packaged pmemzerod does not answer"

	# nbdkit forks into the background once it serves (-P: its pid)
	nbdkit -P "$T/nbdkit.pid" -U "$T/nbd.sock" pmemz region=pkg disk=vm1 size=32M \
		socket="$T/d.sock" 2>"$T/nbdkit.log" || { cat "$T/nbdkit.log"; fail "nbdkit pmemz did not start"; }
	/usr/bin/python3 -m nbd -u "nbd+unix:///?socket=$T/nbd.sock" -c "
h.pwrite(b\"packaged\" * 512, 3 * 1048576)
h.flush()
assert h.get_size() == 32 * 1048576
assert h.pread(4096, 3 * 1048576) == b\"packaged\" * 512
assert h.pread(4096, 0) == bytes(4096)
" || fail "the disk of the packaged plugin does not read back"
	"$ROOT/usr/bin/pmemzctl" -s "$T/d.sock" --json disks pkg >"$T/disks.json"
	/usr/bin/python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))[\"disks\"]
assert [(x[\"name\"], x[\"size\"], x[\"chunks\"], x[\"state\"]) for x in d] == [(\"vm1\", 32 << 20, 1, \"ok\")], d
" "$T/disks.json" || { cat "$T/disks.json"; fail "pmemzctl disks does not list the disk"; }
	echo "ok: nbdkit pmemz (found by name) serves a disk of the packaged pmemzerod; pmemzctl disks lists it"
'
