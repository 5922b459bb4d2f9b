# Guest-side workload of the device-DAX VM test (busybox sh; run by
# tests/vm/guest-init as "sh -e /vmtest/workload").
#
# Every boot: pmemzctl discover (libdaxctl + libndctl, no daemon) must list
#   /dev/dax0.0 with the device's size, its 2 MiB alignment and the
#   persistence domain this machine advertises (memory_controller for the
#   cache_line flavour, cpu_cache for byte); then a bad block is injected on
#   the NVDIMM (a software machine check through mce-inject: the kernel adds
#   it to the region's bad-block list, as after a real poisoned line) and
#   discover must count it.
# Boot 1: start pmemzerod on /dev/dax0.0 (region "dax"), check it took the
#   device-DAX path (size, alignment, granularity, persistence domain) and
#   quarantined the bad block as a BAD extent, show its view, run pmemz-demo
#   --phase write (allocate, verify zero, write a pattern, commit tag
#   "demo"), write+commit+release a second tag, stop the daemon.  Then
#   pmemzerod with extent=1M must refuse the 2 MiB-aligned device with a
#   clear message, and pmemzctl check (offline) must find the device clean.
# Boot 2 (same backing file): start the daemon again, pmemz-demo --phase
#   verify (the committed tag and its data survived), allocate every free
#   extent (each must read zero: pmemz-demo checks every byte), release all,
#   stop the daemon, pmemzctl check again.
# Environment from guest-init: VMTEST_BOOT, VMTEST_BOOTS, VMTEST_GRANULARITY,
# VMTEST_DEV, VMTEST_NAMESPACE.

SOCK=/run/pmemzerod.sock
REGION=dax
DAEMON_LOG=/tmp/pmemzerod.log
DEVNAME=${VMTEST_DEV#/dev/}
DEVSYS=/sys/bus/dax/devices/$DEVNAME
NDREGION=/sys/bus/nd/devices/region0
# The machine's NFIT platform capabilities (tests/vm/run-vm-test).
case $VMTEST_GRANULARITY in
byte) PERSISTENCE=cpu_cache ;;
*) PERSISTENCE=memory_controller ;;
esac
# Where the bad block is injected: bytes into the NVDIMM region, inside the
# device's data area (the namespace's info block and the daemon's metadata
# are at the start).  4 KiB = 8 sectors are reported bad.
BAD_REGION_OFF=$((256 << 20))
BAD_SECTORS=8
INJECTED=0

# The helpers shared with the CXL workload: say, note, fail, run, alive,
# json_field, snapshot, start_daemon, stop_daemon (run-vm-test copies it in).
# shellcheck source=tests/vm/workload-lib.sh
. /vmtest/lib.sh

for b in pmemzerod pmemzctl pmemz-demo; do
	command -v "$b" >/dev/null || fail "$b is not in the initramfs (not built?)"
done

# ---- discovery ---------------------------------------------------------------

DISCOVER_JSON=/tmp/discover.json

# check_discover EXPECTED_BAD_SECTORS: pmemzctl discover, no daemon.
check_discover() {
	run pmemzctl discover
	pmemzctl --json discover >"$DISCOVER_JSON" || fail "pmemzctl --json discover failed"
	n=$(grep -c '"path":' "$DISCOVER_JSON" || true)
	[ "$n" -eq 1 ] || fail "pmemzctl discover lists $n devices, expected 1: $(cat "$DISCOVER_JSON")"
	d_path=$(json_field "$DISCOVER_JSON" path)
	d_size=$(json_field "$DISCOVER_JSON" size)
	d_align=$(json_field "$DISCOVER_JSON" align)
	d_numa=$(json_field "$DISCOVER_JSON" numa_node)
	d_mode=$(json_field "$DISCOVER_JSON" mode)
	d_region=$(json_field "$DISCOVER_JSON" region)
	d_pd=$(json_field "$DISCOVER_JSON" persistence_domain)
	d_gran=$(json_field "$DISCOVER_JSON" granularity)
	d_bad=$(json_field "$DISCOVER_JSON" badblocks)
	say "discover: path=$d_path size=$d_size align=$d_align numa_node=$d_numa mode=$d_mode" \
		"region=$d_region persistence_domain=$d_pd granularity=$d_gran badblocks=$d_bad"
	[ "$d_path" = "$VMTEST_DEV" ] || fail "discover: device '$d_path', expected $VMTEST_DEV"
	[ "$d_size" = "$(cat "$DEVSYS/size")" ] || fail "discover: size $d_size != sysfs $(cat "$DEVSYS/size")"
	[ "$d_align" = "$(cat "$DEVSYS/align")" ] || fail "discover: align $d_align != sysfs $(cat "$DEVSYS/align")"
	[ "$d_align" = 2097152 ] || fail "discover: align $d_align, expected 2 MiB"
	[ "$d_mode" = devdax ] || fail "discover: mode '$d_mode', expected devdax"
	[ "$d_region" = region0 ] || fail "discover: region '$d_region', expected region0"
	[ "$d_pd" = "$PERSISTENCE" ] || fail "discover: persistence domain '$d_pd', expected $PERSISTENCE"
	[ "$d_gran" = "$VMTEST_GRANULARITY" ] || fail "discover: granularity '$d_gran', expected $VMTEST_GRANULARITY"
	[ "$d_bad" = "$1" ] || fail "discover: $d_bad bad sectors, expected $1"
	case $d_numa in
	'' | *[!0-9]*) fail "discover: NUMA node '$d_numa' is not a number" ;;
	esac
	# One device by path: the same answer.
	pmemzctl --json discover "$VMTEST_DEV" >/tmp/discover1.json ||
		fail "pmemzctl discover $VMTEST_DEV failed"
	[ "$(json_field /tmp/discover1.json align)" = "$d_align" ] ||
		fail "pmemzctl discover $VMTEST_DEV disagrees with pmemzctl discover"
}

# pmemzctl discover as an unprivileged user: the physical addresses are
# root-only, so the bad sectors are counted for the whole region (scope
# "region"); everything else is the same.
check_discover_unprivileged() {
	say "\$ su -s /bin/sh nobody -c 'pmemzctl --json discover'"
	su -s /bin/sh nobody -c 'pmemzctl discover; pmemzctl --json discover >/tmp/discover-nobody.json' ||
		fail "pmemzctl discover as nobody failed"
	f=/tmp/discover-nobody.json
	say "discover (nobody): align=$(json_field $f align) persistence_domain=$(json_field $f persistence_domain)" \
		"badblocks=$(json_field $f badblocks) badblocks_scope=$(json_field $f badblocks_scope)"
	[ "$(json_field $f path)" = "$VMTEST_DEV" ] || fail "discover as nobody: no $VMTEST_DEV"
	[ "$(json_field $f align)" = 2097152 ] || fail "discover as nobody: wrong alignment"
	[ "$(json_field $f persistence_domain)" = "$PERSISTENCE" ] || fail "discover as nobody: wrong persistence domain"
	[ "$(json_field $f badblocks)" = "$1" ] || fail "discover as nobody: $(json_field $f badblocks) bad sectors, expected $1"
	[ "$(json_field $f badblocks_scope)" = region ] || fail "discover as nobody: badblocks_scope is not 'region'"
}

# Make the kernel report a bad block on the NVDIMM.  mce-inject's software
# injection ("sw") feeds an uncorrected memory error at a physical address
# to the MCE decode chain, where the NFIT driver adds it to the bus's
# bad-range list and revalidates region0's bad blocks: what libndctl and
# libpmem2 read, exactly as after a real machine check on a poisoned line.
# Nothing is written to the NVDIMM; the list is volatile (gone at reboot, as
# the real one would be until ARS finds the poison again), so every boot
# injects.  Returns 1 (after a loud note) when the kernel cannot do it.
inject_badblock() {
	dbg=/sys/kernel/debug
	[ -d $dbg/mce-inject ] || mount -t debugfs debugfs $dbg 2>/dev/null || true
	modprobe mce-inject 2>/dev/null || true
	if [ ! -d $dbg/mce-inject ]; then
		note "mce-inject is not available: the bad-block path is NOT tested"
		return 1
	fi
	vendor=$(sed -n 's/^vendor_id[[:space:]]*: *//p' /proc/cpuinfo | head -n1)
	case $vendor in
	AuthenticAMD | HygonGenuine)
		if grep -qw smca /proc/cpuinfo; then
			note "$vendor CPU with SMCA: no software-injectable memory error; bad blocks NOT tested"
			return 1
		fi
		# Bank 4 (northbridge), extended error code 8 (DRAM ECC):
		# VAL|UC|EN|ADDRV; MISC address LSB 12 (a 4 KiB range).
		bank=4 status=0xb400000000080000 misc=12
		;;
	GenuineIntel)
		# Memory-controller read error (MCACOD 0x9f): VAL|UC|EN|ADDRV;
		# MISC: address LSB 12, physical address mode.
		bank=1 status=0xb40000000000009f misc=0x8c
		;;
	*)
		note "CPU vendor '$vendor': bad-block injection NOT tested"
		return 1
		;;
	esac
	addr=$(printf '0x%x' $(($(cat $NDREGION/resource) + BAD_REGION_OFF)))
	say "injecting an uncorrected memory error at $addr (region0 + $((BAD_REGION_OFF >> 20)) MiB, $vendor bank $bank)"
	echo sw >$dbg/mce-inject/flags
	echo $status >$dbg/mce-inject/status
	echo "$addr" >$dbg/mce-inject/addr
	echo $misc >$dbg/mce-inject/misc
	echo $bank >$dbg/mce-inject/bank # injects
	i=0
	while [ -z "$(cat $NDREGION/badblocks)" ]; do
		i=$((i + 1))
		[ $i -le 100 ] || fail "the kernel did not report the injected bad block in $NDREGION/badblocks"
		sleep 0.1
	done
	say "kernel: region0 badblocks (sector count): $(cat $NDREGION/badblocks | tr '\n' ' ')"
	INJECTED=1
}

# ---- the daemon --------------------------------------------------------------

# The shared start (lib.sh: start, wait, the start-up's description of the
# device and its persistence domain), then the start-up's device list.
start_devdax_daemon() {
	start_daemon "$PERSISTENCE"
	if grep -q "device-DAX $VMTEST_DEV: " "$DAEMON_LOG"; then
		say "start-up device list: $(grep "device-DAX $VMTEST_DEV: " "$DAEMON_LOG")"
	else
		note "the daemon's start-up does not list the device-DAX devices (dax_log_devices() not called)"
	fi
}

REGIONS_JSON=/tmp/regions.json
STATUS_JSON=/tmp/status.json
# The zeroer moves extents from dirty to zeroed while the test reads the
# counters, so numbers from two pmemzctl calls come from two moments: every
# assertion that combines counters takes them from one snapshot
# (region_snapshot, then snap_field).
region_snapshot() {
	pmemzctl --socket "$SOCK" --json regions >"$REGIONS_JSON" || fail "pmemzctl --json regions failed"
}
snap_field() {
	json_field "$REGIONS_JSON" "$1"
}
# One number from a fresh snapshot (this test has one region).
region_field() {
	region_snapshot
	snap_field "$1"
}

# The guest's view: device, alignment, granularity, persistence domain,
# extents, zeroed bytes.
show_view() {
	say "--- guest view ($1): device $VMTEST_DEV, size $(cat "$DEVSYS/size") B," \
		"align $(cat "$DEVSYS/align") B," \
		"persistence domain $(grep . $NDREGION/persistence_domain 2>/dev/null || echo none)," \
		"expected granularity $VMTEST_GRANULARITY"
	run pmemzctl --socket "$SOCK" regions
	run pmemzctl --socket "$SOCK" status
	pmemzctl --socket "$SOCK" --json regions >"$REGIONS_JSON" || fail "pmemzctl --json regions failed"
	pmemzctl --socket "$SOCK" --json status >"$STATUS_JSON" || fail "pmemzctl --json status failed"
	say "VIEW ($1): device=$(json_field "$REGIONS_JSON" path)" \
		"alignment=$(json_field "$REGIONS_JSON" alignment)" \
		"granularity=$(json_field "$REGIONS_JSON" granularity)" \
		"persistence_domain=$(json_field "$REGIONS_JSON" persistence_domain)" \
		"extent_size=$(json_field "$REGIONS_JSON" extent_size)" \
		"extents=$(json_field "$STATUS_JSON" extents) zeroed=$(json_field "$STATUS_JSON" zeroed)" \
		"dirty=$(json_field "$STATUS_JSON" dirty) committed=$(json_field "$STATUS_JSON" committed)" \
		"bad=$(json_field "$STATUS_JSON" bad) bytes_zeroed=$(json_field "$STATUS_JSON" bytes_zeroed)"
}

# The daemon must have taken the device-DAX path: size and alignment from
# libdaxctl, extents and the data area aligned to the device, the store
# granularity this machine provides (CACHE_LINE, or BYTE with eADR), the
# persistence domain from libndctl, and the injected bad block quarantined.
check_region() {
	dev_size=$(cat "$DEVSYS/size")
	dev_align=$(cat "$DEVSYS/align")
	devdax=$(region_field devdax)
	gran=$(json_field "$REGIONS_JSON" granularity)
	pd=$(json_field "$REGIONS_JSON" persistence_domain)
	align=$(json_field "$REGIONS_JSON" alignment)
	size=$(json_field "$REGIONS_JSON" size)
	ext=$(json_field "$REGIONS_JSON" extent_size)
	data=$(json_field "$REGIONS_JSON" data_offset)
	bad=$(json_field "$REGIONS_JSON" bad)
	say "daemon's view: devdax=$devdax size=$size alignment=$align extent_size=$ext" \
		"data_offset=$data granularity=$gran persistence_domain=$pd bad=$bad"
	[ "$devdax" = true ] || fail "the daemon does not report region '$REGION' as device-DAX"
	[ "$gran" = "$VMTEST_GRANULARITY" ] || fail "granularity is '$gran', expected '$VMTEST_GRANULARITY'"
	[ "$pd" = "$PERSISTENCE" ] || fail "persistence domain is '$pd', expected '$PERSISTENCE'"
	[ "$size" = "$dev_size" ] || fail "region size $size != device size $dev_size"
	[ "$align" = "$dev_align" ] || fail "region alignment $align != device alignment $dev_align"
	[ $((ext % dev_align)) -eq 0 ] || fail "extent size $ext is not a multiple of the device alignment $dev_align"
	[ $((data % dev_align)) -eq 0 ] || fail "data offset $data is not aligned to $dev_align"
	# The bad 4 KiB lie in one extent; it stays BAD on media across boots.
	if [ $INJECTED -eq 1 ]; then
		[ "$bad" -eq 1 ] || fail "$bad BAD extents, expected 1 (the injected bad block)"
		grep -q "libpmem2 reports 1 bad block" "$DAEMON_LOG" ||
			fail "the daemon's log does not show libpmem2 reporting the bad block"
	fi
}

# Extent size 1 MiB on a 2 MiB-aligned device: refused, with a message that
# names the region, the extent size and the device alignment; nothing
# written (the next start and pmemzctl check see the region unchanged).
check_extent_refused() {
	log=/tmp/pmemzerod-extent.log
	say "\$ pmemzerod -d --socket /run/pmemzerod-neg.sock --region $REGION=$VMTEST_DEV,extent=1M" \
		"(must refuse: 1 MiB is not a multiple of the 2 MiB device alignment)"
	st=0
	timeout 60 pmemzerod -d --socket /run/pmemzerod-neg.sock \
		--region "$REGION=$VMTEST_DEV,extent=1M" >"$log" 2>&1 || st=$?
	sed 's/^/  pmemzerod| /' "$log"
	say "pmemzerod exited with status $st"
	[ "$st" -ne 0 ] || fail "pmemzerod accepted extent=1M on a 2 MiB-aligned device"
	grep -q "Ready" "$log" && fail "pmemzerod got ready with extent=1M"
	grep -q "region '$REGION'.*extent size 1.0 MiB.*device alignment 2.0 MiB" "$log" ||
		fail "no clear message naming region '$REGION', the extent size (1 MiB) and the device alignment (2 MiB)"
}

# The offline checker on the device, the daemon stopped: exit 0 is clean.
run_check() {
	if ! pmemzctl check --help >/dev/null 2>&1; then
		note "'pmemzctl check' is not in this build: the offline check was SKIPPED"
		return 0
	fi
	run pmemzctl check "$VMTEST_DEV"
}

# Free extents (zeroed + dirty) of the last snapshot.
snap_free_extents() {
	echo $(($(snap_field zeroed) + $(snap_field dirty)))
}

DEMO="pmemz-demo --socket $SOCK --region $REGION"

say "--- discovery (boot $VMTEST_BOOT): pmemzctl discover, no daemon"
check_discover 0
if inject_badblock; then
	check_discover $BAD_SECTORS
	check_discover_unprivileged $BAD_SECTORS
else
	check_discover_unprivileged 0
fi

case $VMTEST_BOOT in
1)
	[ "$VMTEST_NAMESPACE" = created ] || fail "boot 1 expects a fresh backing file"
	start_devdax_daemon
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
	check_extent_refused
	run_check
	;;
*)
	[ "$VMTEST_NAMESPACE" = existing ] || fail "boot $VMTEST_BOOT created a new namespace: the backing file lost it"
	start_devdax_daemon
	check_region
	show_view "after reboot"
	committed=$(region_field committed)
	[ "$committed" -eq 8 ] || fail "expected 8 committed extents after reboot, found $committed"
	run pmemzctl --socket "$SOCK" tags "$REGION"
	# the tag and its data survived the power-off
	run $DEMO --tag demo --phase verify
	# I1 across a reboot: every free extent (including the released,
	# once-written ones) allocates as zero
	region_snapshot
	n=$(snap_free_extents)
	say "allocating all $n free extents; each must read zero"
	run $DEMO --tag fill --extents "$n" --phase write
	run $DEMO --tag fill --phase cleanup
	run $DEMO --tag demo --phase cleanup
	show_view "after cleanup"
	# I3: free + bad = all (nothing leaked), from one snapshot
	region_snapshot
	free=$(snap_free_extents)
	bad=$(snap_field bad)
	all=$(snap_field extents)
	[ $((free + bad)) -eq "$all" ] ||
		fail "free ($(snap_field zeroed) zeroed + $(snap_field dirty) dirty) + bad ($bad)" \
			"!= all ($all) extents after cleanup (leak?): leased $(snap_field leased)," \
			"committed $(snap_field committed)"
	stop_daemon
	run_check
	;;
esac
say "boot $VMTEST_BOOT workload passed"
