# Guest-side workload of the vm-nbd test (busybox sh; run by
# tests/vm/guest-init as "sh -e /vmtest/workload"; tests/vm/run-nbd-test
# builds its guest).  A file system on a pmemzerod disk, through the real
# stack: pmemzerod on /dev/dax0.0, nbdkit's pmemz plugin on a Unix socket,
# the kernel's nbd driver (nbd-client), ext4.
#
# Boot 1: pmemzerod (fresh device), nbdkit pmemz, nbd-client, mkfs.ext4,
#   mount, copy a host directory tree (/vmtest/tree), sync, check every file
#   against the host's sha256 list (from the page cache, and again after
#   dropping the caches: read back through nbd), save the guest's own list in
#   the file system.  Then a writer copies the tree again with syncs in
#   between, and while it runs the power is cut (guest-init: reboot(2)
#   without sync): nbdkit, the daemon and the mount die with requests in
#   flight.
# Boot 2: pmemzerod, nbdkit, nbd-client again; mount (ext4 replays its
#   journal), unmount, `fsck.ext4 -fn` must be clean; every file of the host's
#   list must match (read through nbd after a fresh mount); nbd-client -d,
#   nbdkit and the daemon stopped; `pmemzctl check` (offline) must be clean.
#
# /vmtest/nbd.conf (written by run-nbd-test) sets NBD_BACKEND: "pmemz" (the
# test) or "memory" (nbdkit's RAM plugin: one boot, no daemon, no power cut;
# proves the guest side without the plugin).

SOCK=/run/pmemzerod.sock
REGION=dax
DAEMON_LOG=/tmp/pmemzerod.log
NBD_SOCK=/run/nbd-pmemz.sock
NBD_PID=/run/nbdkit.pid
NBD_LOG=/tmp/nbdkit.log
NBD_DEV=/dev/nbd0
# Thin: larger than the 502 MiB device.
DISK=vm
DISK_SIZE=512M
MNT=/mnt
TREE=/vmtest/tree
SUMS=/vmtest/tree.sha256
NBD_BACKEND=pmemz
# shellcheck source=/dev/null
[ -r /vmtest/nbd.conf ] && . /vmtest/nbd.conf

# shellcheck source=tests/vm/workload-lib.sh
. /vmtest/lib.sh

up() { cut -d' ' -f1 /proc/uptime; }
step() { say "[$(up)s] $*"; }

for b in nbdkit nbd-client mkfs.ext4 fsck.ext4; do
	command -v "$b" >/dev/null || fail "$b is not in the guest"
done
if [ "$NBD_BACKEND" = pmemz ]; then
	for b in pmemzerod pmemzctl; do
		command -v "$b" >/dev/null || fail "$b is not in the guest (not built?)"
	done
fi
[ -r "$SUMS" ] && [ -d "$TREE" ] || fail "no tree to copy ($TREE, $SUMS)"

# nbd.ko and ext4 (with jbd2, mbcache, crc16) from the kernel package;
# ext4 asks the crypto API for crc32c at mount time: load it first.
for m in nbd crc32c_generic ext4; do
	run modprobe "$m"
done

nbd_log() {
	say "nbdkit log:"
	sed 's/^/  nbdkit| /' "$NBD_LOG"
}

start_nbdkit() {
	rm -f "$NBD_SOCK" "$NBD_PID"
	case $NBD_BACKEND in
	pmemz) set -- pmemz "region=$REGION" "disk=$DISK" "size=$DISK_SIZE" "socket=$SOCK" ;;
	memory) set -- memory "size=$DISK_SIZE" ;;
	*) fail "unknown NBD_BACKEND '$NBD_BACKEND'" ;;
	esac
	say "\$ nbdkit -f --log=stderr --unix $NBD_SOCK --pidfile $NBD_PID $*"
	nbdkit -f --log=stderr --unix "$NBD_SOCK" --pidfile "$NBD_PID" "$@" >"$NBD_LOG" 2>&1 &
	NBDKIT=$!
	i=0
	# nbdkit writes the pid file once it listens.
	until [ -s "$NBD_PID" ]; do
		if ! alive "$NBDKIT"; then
			st=0
			wait "$NBDKIT" || st=$?
			nbd_log
			fail "nbdkit exited with status $st during start-up"
		fi
		i=$((i + 1))
		[ $i -le 600 ] || { nbd_log; fail "nbdkit not listening after 60 s"; }
		sleep 0.1
	done
	step "nbdkit (pid $NBDKIT) listening on $NBD_SOCK"
}

stop_nbdkit() {
	kill -TERM "$NBDKIT" 2>/dev/null || true
	i=0
	while alive "$NBDKIT"; do
		i=$((i + 1))
		[ $i -le 300 ] || { nbd_log; fail "nbdkit did not stop within 30 s of SIGTERM"; }
		sleep 0.1
	done
	st=0
	wait "$NBDKIT" || st=$?
	nbd_log
	[ "$st" -eq 0 ] || fail "nbdkit exited with status $st after SIGTERM"
}

connect_nbd() {
	run nbd-client -unix "$NBD_SOCK" "$NBD_DEV" -b 4096
	size=$(cat /sys/block/nbd0/size)
	say "$NBD_DEV: $((size / 2048)) MiB, discard_max_bytes $(cat /sys/block/nbd0/queue/discard_max_bytes)," \
		"write_zeroes_max_bytes $(cat /sys/block/nbd0/queue/write_zeroes_max_bytes)," \
		"fua $(cat /sys/block/nbd0/queue/fua 2>/dev/null || echo ?)"
	[ "$size" -gt 0 ] || fail "$NBD_DEV has size 0 after nbd-client"
}

# verify_tree DIR: every file of the host's list under DIR.
verify_tree() {
	(cd "$1" && sha256sum -c -s "$SUMS") || {
		(cd "$1" && sha256sum -c "$SUMS" | grep -v ': OK$' | head -n 20)
		fail "checksums differ under $1"
	}
	step "all $(wc -l <"$SUMS") files under $1 match the host's sha256 list"
}

show_disk() {
	[ "$NBD_BACKEND" = pmemz ] || return 0
	n=$(pmemzctl --socket "$SOCK" tags "$REGION" 2>/dev/null | grep -c "nbd/$DISK/" || true)
	f=/tmp/disk-view.json
	snapshot $f
	say "DISK ($1): $n chunk tags nbd/$DISK/*, extent_size=$(json_field $f extent_size)" \
		"extents=$(json_field $f extents) committed=$(json_field $f committed)" \
		"zeroed=$(json_field $f zeroed) dirty=$(json_field $f dirty)"
}

step "boot $VMTEST_BOOT/$VMTEST_BOOTS, backend $NBD_BACKEND, $(wc -l <"$SUMS") files in the tree"
[ "$NBD_BACKEND" = pmemz ] && start_daemon memory_controller
start_nbdkit
connect_nbd
mkdir -p "$MNT"

if [ "$VMTEST_BOOT" -eq 1 ]; then
	run mkfs.ext4 -q -F -b 4096 -L pmemz-vm "$NBD_DEV"
	step "mkfs.ext4 done"
	run mount -t ext4 "$NBD_DEV" "$MNT"
	run cp -a "$TREE" "$MNT/tree"
	step "tree copied ($(du -sk "$MNT/tree" | cut -f1) KiB)"
	run sync
	step "synced"
	verify_tree "$MNT/tree"
	# Read back through nbd, not from the page cache.
	echo 3 >/proc/sys/vm/drop_caches
	verify_tree "$MNT/tree"
	# The guest's own list, on the disk: a later reader can compare both.
	(cd "$MNT/tree" && find . -type f | sort | xargs sha256sum) >"$MNT/tree.sha256"
	cmp -s "$MNT/tree.sha256" "$SUMS" || fail "the guest's sha256 list differs from the host's"
	run sync
	df -k "$MNT" | sed 's/^/  df| /'
	show_disk "after the copy"
	if [ "$NBD_BACKEND" != pmemz ]; then
		run umount "$MNT"
		run nbd-client -d "$NBD_DEV"
		stop_nbdkit
		step "memory backend: one boot, no power cut"
		exit 0
	fi
	# Writes in flight at the power cut: two more copies, synced in between
	# (journal commits, FLUSH and FUA, fresh chunks taken), still running
	# when the power goes.
	(
		cp -a "$TREE" "$MNT/inflight.1" && sync && touch "$MNT/inflight.1.synced" &&
			cp -a "$TREE" "$MNT/inflight.2" && sync
	) >/tmp/writer.log 2>&1 &
	i=0
	until [ -d "$MNT/inflight.1/usr" ]; do
		i=$((i + 1))
		[ $i -le 600 ] || fail "the writer did not start within 60 s"
		sleep 0.1
	done
	step "writer running: cutting the power with the file system mounted, nbdkit and pmemzerod up"
	echo "ext4 on $NBD_DEV mounted, a writer copying" >"$VMTEST_POWER_CUT"
	exit 0
fi

# Boot 2 and later: after the power cut.
run mount -t ext4 "$NBD_DEV" "$MNT"
step "mounted (journal replayed)"
ls -la "$MNT" | sed 's/^/  ls| /'
run umount "$MNT"
say "\$ fsck.ext4 -fn $NBD_DEV"
st=0
fsck.ext4 -fn "$NBD_DEV" >/tmp/fsck.log 2>&1 || st=$?
sed 's/^/  fsck| /' /tmp/fsck.log
[ "$st" -eq 0 ] || fail "fsck.ext4 -fn exited with status $st after the power cut"
step "fsck.ext4 -fn clean"
run mount -t ext4 -o ro "$NBD_DEV" "$MNT"
verify_tree "$MNT/tree"
cmp -s "$MNT/tree.sha256" "$SUMS" || fail "the list saved on the disk differs from the host's"
show_disk "after the power cut"
run umount "$MNT"
run nbd-client -d "$NBD_DEV"
stop_nbdkit
stop_daemon
if pmemzctl check --help >/dev/null 2>&1; then
	run_check
	step "pmemzctl check clean"
else
	note "this pmemzctl has no 'check': the offline check is skipped"
fi
