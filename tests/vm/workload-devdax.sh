# Guest-side workload of the device-DAX VM test (busybox sh; run by
# tests/vm/guest-init as "sh -e /vmtest/workload").
#
# Boot 1: start pmemzerod on /dev/dax0.0 (region "dax"), check it took the
#   device-DAX path (size, alignment, granularity), show its view, run
#   pmemz-demo --phase write (allocate, verify zero, write a pattern, commit
#   tag "demo"), write+commit+release a second tag, stop the daemon.
# Boot 2 (same backing file): start the daemon again, pmemz-demo --phase
#   verify (the committed tag and its data survived), allocate every free
#   extent (each must read zero: pmemz-demo checks every byte), release all,
#   stop the daemon.
# Environment from guest-init: VMTEST_BOOT, VMTEST_BOOTS, VMTEST_GRANULARITY,
# VMTEST_DEV, VMTEST_NAMESPACE.

SOCK=/run/pmemzerod.sock
REGION=dax
DAEMON_LOG=/tmp/pmemzerod.log
DAEMON_PID=

say() { echo "workload: $*"; }
fail() {
	say "FAIL: $*"
	if [ -n "$DAEMON_PID" ]; then
		say "daemon log:"
		sed 's/^/  pmemzerod| /' "$DAEMON_LOG"
	fi
	exit 1
}
run() {
	say "\$ $*"
	"$@" || fail "'$*' exited with status $?"
}

for b in pmemzerod pmemzctl pmemz-demo; do
	command -v "$b" >/dev/null || fail "$b is not in the initramfs (not built?)"
done

# A dead but unreaped child still answers kill -0: look at its state.
alive() {
	[ -r "/proc/$1/stat" ] && [ "$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)" != Z ]
}

start_daemon() {
	rm -f "$SOCK"
	say "\$ pmemzerod -d --socket $SOCK --region $REGION=$VMTEST_DEV -v"
	pmemzerod -d --socket "$SOCK" --region "$REGION=$VMTEST_DEV" -v >"$DAEMON_LOG" 2>&1 &
	DAEMON_PID=$!
	i=0
	until [ -S "$SOCK" ] && pmemzctl --socket "$SOCK" status >/dev/null 2>&1; do
		if ! alive "$DAEMON_PID"; then
			st=0
			wait "$DAEMON_PID" || st=$?
			fail "pmemzerod exited with status $st during start-up"
		fi
		i=$((i + 1))
		[ $i -le 600 ] || fail "pmemzerod not answering after 60 s"
		sleep 0.1
	done
	say "pmemzerod (pid $DAEMON_PID) ready after ~$((i / 10)).$((i % 10)) s"
}

stop_daemon() {
	say "stopping pmemzerod (SIGTERM)"
	kill -TERM "$DAEMON_PID" 2>/dev/null || true
	i=0
	while alive "$DAEMON_PID"; do
		i=$((i + 1))
		if [ $i -gt 300 ]; then
			kill -KILL "$DAEMON_PID" 2>/dev/null || true
			fail "pmemzerod did not stop within 30 s of SIGTERM"
		fi
		sleep 0.1
	done
	st=0
	wait "$DAEMON_PID" || st=$?
	say "daemon log:"
	sed 's/^/  pmemzerod| /' "$DAEMON_LOG"
	DAEMON_PID=
	[ "$st" -eq 0 ] || fail "pmemzerod exited with status $st after SIGTERM"
}

# One number from "pmemzctl --json regions" (this test has one region).
region_field() {
	pmemzctl --socket "$SOCK" --json regions |
		sed -n "s/^ *\"$1\": *\"\{0,1\}\([^\",]*\)\"\{0,1\},\{0,1\}\$/\1/p" | head -n1
}

# The guest's view: device, alignment, granularity, extents, zeroed bytes.
show_view() {
	say "--- guest view ($1): device $VMTEST_DEV, size $(cat /sys/bus/dax/devices/dax0.0/size) B," \
		"align $(cat /sys/bus/dax/devices/dax0.0/align) B," \
		"persistence domain $(grep . /sys/bus/nd/devices/region0/persistence_domain 2>/dev/null || echo none)," \
		"expected granularity $VMTEST_GRANULARITY"
	run pmemzctl --socket "$SOCK" regions
	run pmemzctl --socket "$SOCK" status
}

# The daemon must have taken the device-DAX path: size and alignment from
# libdaxctl, extents and the data area aligned to the device, and the store
# granularity this machine provides (CACHE_LINE, or BYTE with eADR).
check_region() {
	dev_size=$(cat /sys/bus/dax/devices/dax0.0/size)
	dev_align=$(cat /sys/bus/dax/devices/dax0.0/align)
	devdax=$(region_field devdax)
	gran=$(region_field granularity)
	align=$(region_field alignment)
	size=$(region_field size)
	ext=$(region_field extent_size)
	data=$(region_field data_offset)
	say "daemon's view: devdax=$devdax size=$size alignment=$align extent_size=$ext data_offset=$data granularity=$gran"
	[ "$devdax" = true ] || fail "the daemon does not report region '$REGION' as device-DAX"
	[ "$gran" = "$VMTEST_GRANULARITY" ] || fail "granularity is '$gran', expected '$VMTEST_GRANULARITY'"
	[ "$size" = "$dev_size" ] || fail "region size $size != device size $dev_size"
	[ "$align" = "$dev_align" ] || fail "region alignment $align != device alignment $dev_align"
	[ $((ext % dev_align)) -eq 0 ] || fail "extent size $ext is not a multiple of the device alignment $dev_align"
	[ $((data % dev_align)) -eq 0 ] || fail "data offset $data is not aligned to $dev_align"
}

free_extents() {
	echo $(($(region_field zeroed) + $(region_field dirty)))
}

DEMO="pmemz-demo --socket $SOCK --region $REGION"

case $VMTEST_BOOT in
1)
	[ "$VMTEST_NAMESPACE" = created ] || fail "boot 1 expects a fresh backing file"
	start_daemon
	check_region
	show_view "fresh region"
	# allocate, verify zero, write a pattern, persist, commit as 'demo'
	run $DEMO --tag demo --extents 8 --phase write
	# another allocation, written, committed, then released: its extents
	# hold a pattern and must come back zeroed
	run $DEMO --tag scratch --extents 4 --phase write
	run $DEMO --tag scratch --phase cleanup
	show_view "after the write phase"
	stop_daemon
	;;
*)
	[ "$VMTEST_NAMESPACE" = existing ] || fail "boot $VMTEST_BOOT created a new namespace: the backing file lost it"
	start_daemon
	check_region
	show_view "after reboot"
	[ "$(region_field committed)" -eq 8 ] || fail "expected 8 committed extents after reboot, found $(region_field committed)"
	run pmemzctl --socket "$SOCK" tags "$REGION"
	# the tag and its data survived the power-off
	run $DEMO --tag demo --phase verify
	# I1 across a reboot: every free extent (including the released,
	# once-written ones) allocates as zero
	n=$(free_extents)
	say "allocating all $n free extents; each must read zero"
	run $DEMO --tag fill --extents "$n" --phase write
	run $DEMO --tag fill --phase cleanup
	run $DEMO --tag demo --phase cleanup
	show_view "after cleanup"
	[ "$(free_extents)" -eq "$(region_field extents)" ] || fail "not every extent is free after cleanup (leak?)"
	say "pmemzctl check (offline checker) does not exist yet: skipped"
	stop_daemon
	;;
esac
say "boot $VMTEST_BOOT workload passed"
