# Guest-side workload of the device-DAX VM test (busybox sh; run by
# tests/vm/guest-init as "sh -e /vmtest/workload").
#
# Boot 1: start pmemzerod on /dev/dax0.0 (region "dax"), show its view of the
#   device, run pmemz-demo --phase write (allocate, verify zero, write a
#   pattern, commit a tag, release another allocation), stop the daemon.
# Boot 2 (same backing file): start the daemon again, pmemz-demo --phase
#   verify (the committed tag and its data survived; free space allocates as
#   zero), --phase cleanup, stop the daemon.
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

# The guest's view: device, alignment, granularity, extents, zeroed bytes.
show_view() {
	say "--- guest view ($1): device $VMTEST_DEV, size $(cat /sys/bus/dax/devices/dax0.0/size 2>/dev/null) B," \
		"align $(cat /sys/bus/dax/devices/dax0.0/align 2>/dev/null) B," \
		"persistence domain $(grep . /sys/bus/nd/devices/region0/persistence_domain 2>/dev/null || echo none)", \
		"expected granularity $VMTEST_GRANULARITY"
	run pmemzctl --socket "$SOCK" regions
	run pmemzctl --socket "$SOCK" status
}

# Did the daemon's mapping get the granularity this machine provides?
check_granularity() {
	case $VMTEST_GRANULARITY in
	cache_line) pat='cache[_ -]?line' ;;
	*) pat='(^|[^a-z_])byte($|[^a-z_])' ;;
	esac
	if pmemzctl --socket "$SOCK" regions 2>/dev/null | grep -qiE "$pat"; then
		say "granularity $VMTEST_GRANULARITY confirmed by pmemzctl regions"
	elif grep -i granularity "$DAEMON_LOG" | grep -qiE "$pat"; then
		say "granularity $VMTEST_GRANULARITY confirmed by the daemon log"
	else
		fail "neither pmemzctl regions nor the daemon log report granularity $VMTEST_GRANULARITY"
	fi
}

DEMO="pmemz-demo --socket $SOCK --region $REGION"

case $VMTEST_BOOT in
1)
	start_daemon
	check_granularity
	show_view "fresh region"
	run $DEMO --phase write
	show_view "after the write phase"
	stop_daemon
	;;
*)
	[ "$VMTEST_NAMESPACE" = existing ] || fail "boot $VMTEST_BOOT created a new namespace: the backing file lost it"
	start_daemon
	check_granularity
	show_view "after reboot"
	run $DEMO --phase verify
	run $DEMO --phase cleanup
	show_view "after cleanup"
	say "pmemzctl check (offline checker) does not exist yet: skipped"
	stop_daemon
	;;
esac
say "boot $VMTEST_BOOT workload passed"
