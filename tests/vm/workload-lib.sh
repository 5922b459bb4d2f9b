# Shell helpers for VM test workloads (busybox sh).  run-vm-test puts this
# file in the guest as /vmtest/lib.sh; a workload sources it:
#   . /vmtest/lib.sh
# It expects VMTEST_DEV (guest-init) and uses SOCK, REGION and DAEMON_LOG,
# which it defaults.  Every assertion on the daemon's counters reads ONE
# snapshot (one pmemzctl --json call into a file, then fields from that
# file): two calls could straddle a zeroer step and disagree.

SOCK=${SOCK:-/run/pmemzerod.sock}
REGION=${REGION:-dax}
DAEMON_LOG=${DAEMON_LOG:-/tmp/pmemzerod.log}
DAEMON_PID=
DEVNAME=${VMTEST_DEV#/dev/}
DEVSYS=/sys/bus/dax/devices/$DEVNAME

say() { echo "workload: $*"; }
note() {
	echo "workload: ###################################################################"
	echo "workload: NOTE: $*"
	echo "workload: ###################################################################"
}
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
# wait_until SECONDS CMD...: poll CMD every 0.2 s until it succeeds; 1 when
# it did not within SECONDS.
wait_until() {
	n=$(($1 * 5))
	shift
	while ! "$@" >/dev/null 2>&1; do
		n=$((n - 1))
		[ $n -gt 0 ] || return 1
		sleep 0.2
	done
}

# A dead but unreaped child still answers kill -0: look at its state.
alive() {
	[ -r "/proc/$1/stat" ] && [ "$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)" != Z ]
}

# json_field FILE KEY: from pretty-printed JSON (pmemzctl --json), the first
# "KEY": value (strings unquoted; null as "null").
json_field() {
	sed -n "s/^ *\"$2\": *\"\{0,1\}\([^\",]*\)\"\{0,1\},\{0,1\}\$/\1/p" "$1" | head -n1
}

# snapshot FILE: one `pmemzctl --json regions` (this test's one region:
# geometry and the extent counters together) into FILE.
snapshot() {
	pmemzctl --socket "$SOCK" --json regions >"$1" || fail "pmemzctl --json regions failed"
}

# start_daemon PERSISTENCE_DOMAIN: pmemzerod -d -v on $VMTEST_DEV as region
# $REGION; wait until it answers; its start-up must describe the device as
# libdaxctl/libndctl see it, with that persistence domain.
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
	line=$(grep "region '$REGION': $VMTEST_DEV is $DEVNAME on region0" "$DAEMON_LOG" || true)
	[ -n "$line" ] || fail "the daemon's log does not describe $VMTEST_DEV (libdaxctl/libndctl)"
	case $line in
	*"persistence domain $1,"*) ;;
	*) fail "the daemon logged the wrong persistence domain (expected $1): $line" ;;
	esac
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

# show_view LABEL: pmemzctl regions and status, and a one-line summary from
# one snapshot.
show_view() {
	run pmemzctl --socket "$SOCK" regions
	run pmemzctl --socket "$SOCK" status
	f=/tmp/view.json
	snapshot $f
	say "VIEW ($1): device=$(json_field $f path) alignment=$(json_field $f alignment)" \
		"granularity=$(json_field $f granularity)" \
		"persistence_domain=$(json_field $f persistence_domain)" \
		"extent_size=$(json_field $f extent_size) extents=$(json_field $f extents)" \
		"zeroed=$(json_field $f zeroed) dirty=$(json_field $f dirty)" \
		"committed=$(json_field $f committed) bad=$(json_field $f bad)"
}

# check_region GRANULARITY PERSISTENCE_DOMAIN: the daemon took the
# device-DAX path (one snapshot): size and alignment of the device (sysfs),
# extents and the data area aligned to it, the store granularity libpmem2
# gave the mapping and the persistence domain discovery found.
check_region() {
	f=/tmp/check-region.json
	snapshot $f
	dev_size=$(cat "$DEVSYS/size")
	dev_align=$(cat "$DEVSYS/align")
	devdax=$(json_field $f devdax)
	gran=$(json_field $f granularity)
	pd=$(json_field $f persistence_domain)
	align=$(json_field $f alignment)
	size=$(json_field $f size)
	ext=$(json_field $f extent_size)
	data=$(json_field $f data_offset)
	say "daemon's view: devdax=$devdax size=$size alignment=$align extent_size=$ext" \
		"data_offset=$data granularity=$gran persistence_domain=$pd bad=$(json_field $f bad)"
	[ "$devdax" = true ] || fail "the daemon does not report region '$REGION' as device-DAX"
	[ "$gran" = "$1" ] || fail "granularity is '$gran', expected '$1'"
	[ "$pd" = "$2" ] || fail "persistence domain is '$pd', expected '$2'"
	[ "$size" = "$dev_size" ] || fail "region size $size != device size $dev_size"
	[ "$align" = "$dev_align" ] || fail "region alignment $align != device alignment $dev_align"
	[ $((ext % dev_align)) -eq 0 ] || fail "extent size $ext is not a multiple of the device alignment $dev_align"
	[ $((data % dev_align)) -eq 0 ] || fail "data offset $data is not aligned to $dev_align"
}

# The offline checker on the device, the daemon stopped: exit 0 is clean.
run_check() {
	run pmemzctl check "$VMTEST_DEV"
}
