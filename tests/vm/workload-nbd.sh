# Guest-side workload of the vm-nbd test (busybox sh; run by
# tests/vm/guest-init as "sh -e /vmtest/workload"; tests/vm/run-nbd-test
# builds its guest).  File systems on pmemzerod disks, through the real
# stack: pmemzerod on /dev/dax0.0, nbdkit's pmemz plugin on a Unix socket
# (one nbdkit and one disk per file system), the kernel's nbd driver
# (nbd-client), ext4 and, when xfsprogs is on the host, XFS.
#
# Boot 1: pmemzerod (fresh device); per file system: nbdkit pmemz,
#   nbd-client, mkfs, mount, copy a host directory tree (/vmtest/tree),
#   sync, check every file against the host's sha256 list, save the guest's
#   own list on the disk.  Then a writer per file system loops: copy a
#   directory to inflight/N, sync, create the marker inflight/synced.N.  Once
#   every writer has created synced.2 (so sync 2 has returned, which made
#   synced.1 durable) the power is cut while they run (guest-init:
#   reboot(2) without sync): nbdkit, the daemon and the mounts die with
#   requests in flight.
# Boot 2: pmemzerod, nbdkit, nbd-client again; mount (the journal or log is
#   replayed), unmount, `fsck.ext4 -fn` / `xfs_repair -n` must be clean;
#   every file of the host's list must match (read through nbd: nothing is
#   cached after the reboot); synced.1 must exist and, for every marker
#   synced.N that survived, inflight/N must match too (it was synced before
#   the marker was made); nbd-client -d, nbdkit and the daemon stopped;
#   `pmemzctl check` (offline) must be clean.
#
# /vmtest/nbd.conf (written by run-nbd-test) sets NBD_BACKEND: "pmemz" (the
# test) or "memory" (nbdkit's RAM plugin: one boot, no daemon, no power cut;
# proves the guest side without the plugin), and NBD_FS, the file systems.

SOCK=/run/pmemzerod.sock
REGION=dax
# Thin: each disk alone is larger than the 502 MiB device.
DISK_SIZE=512M
TREE=/vmtest/tree
SUMS=/vmtest/tree.sha256
# What the writers copy in a loop at the power cut, and its sha256 list.
INFLIGHT_SRC=usr/include/asm-generic
INFLIGHT_SUMS=/tmp/inflight.sha256
INFLIGHT_MAX=40
NBD_BACKEND=pmemz
NBD_FS=ext4
# shellcheck source=/dev/null
[ -r /vmtest/nbd.conf ] && . /vmtest/nbd.conf

# shellcheck source=tests/vm/workload-lib.sh
. /vmtest/lib.sh

up() { cut -d' ' -f1 /proc/uptime; }
step() { say "[$(up)s] $*"; }

if [ ! -r "$SUMS" ] || [ ! -d "$TREE" ]; then
	fail "no tree to copy ($TREE, $SUMS)"
fi
[ -d "$TREE/$INFLIGHT_SRC" ] || fail "no $INFLIGHT_SRC in the tree"
grep " \./$INFLIGHT_SRC/" "$SUMS" | sed "s| \./$INFLIGHT_SRC/| ./|" >"$INFLIGHT_SUMS"
need="nbdkit nbd-client"
[ "$NBD_BACKEND" = pmemz ] && need="$need pmemzerod pmemzctl"
for fs in $NBD_FS; do
	case $fs in
	ext4) need="$need mkfs.ext4 fsck.ext4" ;;
	xfs) need="$need mkfs.xfs xfs_repair" ;;
	*) fail "unknown file system '$fs' in NBD_FS" ;;
	esac
done
for b in $need; do
	command -v "$b" >/dev/null || fail "$b is not in the guest"
done

# nbd.ko and the file systems (jbd2, mbcache, crc16, libcrc32c come with
# them) from the kernel package; both ask the crypto API for crc32c: load
# it first (no modprobe alias lookup from the kernel needed).
run modprobe nbd
run modprobe crc32c_generic
for fs in $NBD_FS; do
	run modprobe "$fs"
done

# Per file system: disk vm-FS, nbdkit on /run/nbd-FS.sock, /dev/nbdN, /mnt/FS.
set_fs() {
	FS=$1
	DISK=vm-$FS
	NBD_SOCK=/run/nbd-$FS.sock
	NBD_PIDF=/run/nbdkit-$FS.pid
	NBD_LOG=/tmp/nbdkit-$FS.log
	NBD_DEV=/dev/nbd$2
	NBD_SYS=/sys/block/nbd$2
	MNT=/mnt/$FS
}

nbd_log() {
	say "nbdkit log ($DISK):"
	sed "s/^/  nbdkit $FS| /" "$NBD_LOG"
}

start_nbdkit() {
	rm -f "$NBD_SOCK" "$NBD_PIDF"
	case $NBD_BACKEND in
	pmemz) set -- pmemz "region=$REGION" "disk=$DISK" "size=$DISK_SIZE" "socket=$SOCK" ;;
	memory) set -- memory "size=$DISK_SIZE" ;;
	*) fail "unknown NBD_BACKEND '$NBD_BACKEND'" ;;
	esac
	say "\$ nbdkit -f --log=stderr --unix $NBD_SOCK --pidfile $NBD_PIDF $*"
	nbdkit -f --log=stderr --unix "$NBD_SOCK" --pidfile "$NBD_PIDF" "$@" >"$NBD_LOG" 2>&1 &
	pid=$!
	i=0
	# nbdkit writes the pid file once it listens.
	until [ -s "$NBD_PIDF" ]; do
		if ! alive "$pid"; then
			st=0
			wait "$pid" || st=$?
			nbd_log
			fail "nbdkit ($DISK) exited with status $st during start-up"
		fi
		i=$((i + 1))
		[ $i -le 600 ] || { nbd_log; fail "nbdkit ($DISK) not listening after 60 s"; }
		sleep 0.1
	done
	[ "$(cat "$NBD_PIDF")" = "$pid" ] || fail "nbdkit's pid file says $(cat "$NBD_PIDF"), not $pid"
	step "nbdkit (pid $pid) serves disk $DISK on $NBD_SOCK"
}

stop_nbdkit() {
	pid=$(cat "$NBD_PIDF")
	kill -TERM "$pid" 2>/dev/null || true
	i=0
	while alive "$pid"; do
		i=$((i + 1))
		[ $i -le 300 ] || { nbd_log; fail "nbdkit ($DISK) did not stop within 30 s of SIGTERM"; }
		sleep 0.1
	done
	st=0
	wait "$pid" || st=$?
	nbd_log
	[ "$st" -eq 0 ] || fail "nbdkit ($DISK) exited with status $st after SIGTERM"
}

connect_nbd() {
	# -N: the newstyle handshake with a named export (nbdkit serves any name).
	run nbd-client -N "$DISK" -unix "$NBD_SOCK" "$NBD_DEV" -b 4096
	size=$(cat "$NBD_SYS/size")
	say "$NBD_DEV: $((size / 2048)) MiB, discard_max_bytes $(cat "$NBD_SYS/queue/discard_max_bytes")," \
		"write_cache $(cat "$NBD_SYS/queue/write_cache"), fua $(cat "$NBD_SYS/queue/fua" 2>/dev/null || echo ?)"
	[ "$size" -gt 0 ] || fail "$NBD_DEV has size 0 after nbd-client"
}

# verify_tree DIR [LIST]: every file of the host's list (default: the
# whole tree's) under DIR.
verify_tree() {
	list=${2:-$SUMS}
	(cd "$1" && sha256sum -c -s "$list") || {
		(cd "$1" && sha256sum -c "$list" 2>&1 | grep -v ': OK$' | head -n 20)
		fail "checksums differ under $1"
	}
	step "all $(wc -l <"$list") files under $1 match the host's sha256 list"
}

# writer DIR: copy, sync, mark; INFLIGHT_MAX times (each copy stays small:
# the disks are thin, the region holds 250 chunks).
writer() {
	mkdir -p "$1"
	i=1
	while [ $i -le $INFLIGHT_MAX ]; do
		cp -a "$TREE/$INFLIGHT_SRC" "$1/$i"
		sync
		: >"$1/synced.$i"
		i=$((i + 1))
	done
}

# check_inflight DIR: what the writer synced before the power cut is there.
check_inflight() {
	[ -e "$1/synced.1" ] || fail "$1/synced.1 is missing: sync 2 returned before the power cut, so it was durable"
	i=1
	while [ -e "$1/synced.$i" ]; do
		verify_tree "$1/$i" "$INFLIGHT_SUMS"
		i=$((i + 1))
	done
	step "$((i - 1)) synced writer copies under $1 survived the power cut, each complete"
}

# check_fs: the file system on $NBD_DEV (unmounted) is consistent.
check_fs() {
	case $FS in
	ext4) set -- fsck.ext4 -fn "$NBD_DEV" ;;
	xfs) set -- xfs_repair -n "$NBD_DEV" ;;
	esac
	say "\$ $*"
	st=0
	"$@" >"/tmp/check-$FS.log" 2>&1 || st=$?
	sed "s/^/  $1| /" "/tmp/check-$FS.log"
	[ "$st" -eq 0 ] || fail "$* exited with status $st"
	step "$1 clean"
}

show_disks() {
	[ "$NBD_BACKEND" = pmemz ] || return 0
	pmemzctl --socket "$SOCK" tags "$REGION" >/tmp/tags.txt 2>&1 || true
	f=/tmp/disk-view.json
	snapshot $f
	say "REGION ($1): extent_size=$(json_field $f extent_size) extents=$(json_field $f extents)" \
		"committed=$(json_field $f committed) zeroed=$(json_field $f zeroed) dirty=$(json_field $f dirty)"
	for fs in $NBD_FS; do
		say "DISK vm-$fs ($1): $(grep "nbd/vm-$fs/" /tmp/tags.txt | grep -vcE "/(ahead|pool)/" || true) chunk tags"
	done
}

step "boot $VMTEST_BOOT/$VMTEST_BOOTS, backend $NBD_BACKEND, file systems: $NBD_FS, $(wc -l <"$SUMS") files in the tree"
[ "$NBD_BACKEND" = pmemz ] && start_daemon memory_controller
n=0
for fs in $NBD_FS; do
	set_fs "$fs" $n
	n=$((n + 1))
	start_nbdkit
	connect_nbd
	mkdir -p "$MNT"
done

if [ "$VMTEST_BOOT" -eq 1 ]; then
	n=0
	for fs in $NBD_FS; do
		set_fs "$fs" $n
		n=$((n + 1))
		case $fs in
		ext4) run mkfs.ext4 -q -F -b 4096 -L pmemz-vm "$NBD_DEV" ;;
		xfs) run mkfs.xfs -q -f -L pmemz-vm "$NBD_DEV" ;;
		esac
		step "mkfs.$fs done"
		# what mkfs made the thin disk allocate: its zero-filled writes stay holes
		[ "$NBD_BACKEND" = pmemz ] && say "DISK vm-$fs after mkfs.$fs:" \
			"$(pmemzctl --socket "$SOCK" disks "$REGION" | grep -w "vm-$fs" || true)"
		run mount -t "$fs" "$NBD_DEV" "$MNT"
		run cp -a "$TREE" "$MNT/tree"
		step "tree copied to $MNT ($(du -sk "$MNT/tree" | cut -f1) KiB)"
		run sync
		step "synced"
		verify_tree "$MNT/tree"
		# The guest's own list, on the disk.
		(cd "$MNT/tree" && find . -type f | sort | xargs sha256sum) >"$MNT/tree.sha256"
		cmp -s "$MNT/tree.sha256" "$SUMS" || fail "the guest's sha256 list differs from the host's"
		run sync
		df -k "$MNT" | sed 's/^/  df| /'
	done
	show_disks "after the copies"
	if [ "$NBD_BACKEND" != pmemz ]; then
		n=0
		for fs in $NBD_FS; do
			set_fs "$fs" $n
			n=$((n + 1))
			run umount "$MNT"
			check_fs
			run nbd-client -d "$NBD_DEV"
			stop_nbdkit
		done
		step "memory backend: one boot, no power cut"
		exit 0
	fi
	# Writes in flight at the power cut: per file system a writer (copies,
	# syncs: journal or log commits, FLUSH and FUA, fresh chunks taken),
	# still running when the power goes.
	for fs in $NBD_FS; do
		writer "/mnt/$fs/inflight" >"/tmp/writer-$fs.log" 2>&1 &
	done
	for fs in $NBD_FS; do
		i=0
		until [ -e "/mnt/$fs/inflight/synced.2" ]; do
			i=$((i + 1))
			[ $i -le 1200 ] || fail "the $fs writer did not sync twice within 120 s"
			sleep 0.1
		done
	done
	step "writers past their second sync: cutting the power with $NBD_FS mounted, nbdkit and pmemzerod up"
	echo "$NBD_FS mounted on nbd, writers copying" >"$VMTEST_POWER_CUT"
	exit 0
fi

# Boot 2 and later: after the power cut.
n=0
for fs in $NBD_FS; do
	set_fs "$fs" $n
	n=$((n + 1))
	run mount -t "$fs" "$NBD_DEV" "$MNT"
	step "$fs mounted (journal/log replayed): $(cd "$MNT" && echo *)"
	run umount "$MNT"
	check_fs
	run mount -t "$fs" -o ro "$NBD_DEV" "$MNT"
	verify_tree "$MNT/tree"
	cmp -s "$MNT/tree.sha256" "$SUMS" || fail "the list saved on $DISK differs from the host's"
	check_inflight "$MNT/inflight"
done
show_disks "after the power cut"
n=0
for fs in $NBD_FS; do
	set_fs "$fs" $n
	n=$((n + 1))
	run umount "$MNT"
	run nbd-client -d "$NBD_DEV"
	stop_nbdkit
done
stop_daemon
if pmemzctl check --help >/dev/null 2>&1; then
	run_check
	step "pmemzctl check clean"
else
	note "this pmemzctl has no 'check': the offline check is skipped"
fi
