# Guest-side workload of the CXL VM test (busybox sh; run by tests/vm/guest-init
# as "sh -e /vmtest/workload" on the CXL machine, after `cxl create-region`).
#
# Every boot:
#   - what pmemzctl discover said BEFORE the region was assembled
#     (guest-init saved it): on a fresh machine nothing; after the power
#     cycle, mem0 (serial 0x1234) as a pmem region that exists in its labels
#     but is not assembled, with the command `cxl create-region -m -t pmem
#     -d decoder0.0 -w 1 mem0`; pmemzerod started then (it fails: no
#     device yet) logs a warning naming that command;
#   - pmemzctl discover (libdaxctl, libndctl, libcxl; no daemon): exactly
#     /dev/dax0.0, 2 MiB alignment, region0, persistence domain
#     memory_controller, granularity cache_line, and its CXL side: memdev
#     mem0, serial 0x1234, CXL region region0, root decoder decoder0.0,
#     1-way interleave at the region's granularity; as nobody the same
#     device, on CXL.
# Boot 1: pmemzerod on /dev/dax0.0: its start-up names the CXL path, it took
#   the device-DAX path with CACHE_LINE granularity (libpmem2 flushes with
#   CPU instructions: msync would fail with EINVAL on device-DAX); pmemz-demo
#   writes and commits tag "demo" (8 extents, each verified zero first), a
#   tag "scratch" is written, committed and released; SIGTERM;
#   pmemzctl check.
# Boot 2 (same backing files; the region re-assembled by guest-init, the
#   namespace back from the labels): the daemon again, 8 extents committed,
#   pmemz-demo verifies "demo"'s data, then allocates every free extent
#   (each must read zero), releases everything; free + bad = all; SIGTERM;
#   pmemzctl check.
# Environment from guest-init: VMTEST_BOOT, VMTEST_DEV, VMTEST_NAMESPACE,
# VMTEST_CXL_BEFORE, VMTEST_CXL_BEFORE_DAEMON.

# shellcheck source=tests/vm/workload-lib.sh
. /vmtest/lib.sh

PERSISTENCE=memory_controller
GRANULARITY=cache_line
MEMDEV=mem0
SERIAL=0x1234
ROOT_DECODER=decoder0.0
CREATE_REGION="cxl create-region -m -t pmem -d $ROOT_DECODER -w 1 $MEMDEV"
CXLREGION=/sys/bus/cxl/devices/region0

for b in pmemzerod pmemzctl pmemz-demo cxl; do
	command -v "$b" >/dev/null || fail "$b is not in the initramfs"
done

# ---- discovery ---------------------------------------------------------------

# Before `cxl create-region` (guest-init): boot 1 has blank labels, so
# nothing to assemble; later boots must be told what to run.
check_before_assembly() {
	f=$VMTEST_CXL_BEFORE
	[ -s "$f" ] || fail "guest-init saved no pmemzctl discover output from before the region"
	if [ "$VMTEST_BOOT" -eq 1 ]; then
		grep -q '"cxl_unassembled"' "$f" &&
			fail "discover on blank labels reports an unassembled region: $(cat "$f")"
		say "before assembly (blank labels): no unassembled CXL region reported"
		return 0
	fi
	grep -q '"cxl_unassembled"' "$f" ||
		fail "discover before re-assembly does not report the unassembled region: $(cat "$f")"
	u_memdev=$(json_field "$f" memdev)
	u_serial=$(json_field "$f" serial)
	u_root=$(json_field "$f" root_decoder)
	u_labels=$(json_field "$f" labels)
	u_cmd=$(json_field "$f" command)
	say "before assembly: unassembled memdev=$u_memdev serial=$u_serial root_decoder=$u_root" \
		"labels=$u_labels command='$u_cmd'"
	[ "$u_memdev" = $MEMDEV ] || fail "unassembled: memdev '$u_memdev', expected $MEMDEV"
	[ "$u_serial" = $SERIAL ] || fail "unassembled: serial '$u_serial', expected $SERIAL"
	[ "$u_root" = $ROOT_DECODER ] || fail "unassembled: root decoder '$u_root', expected $ROOT_DECODER"
	case $u_labels in
	'' | null | 0 | *[!0-9]*) fail "unassembled: labels '$u_labels', expected a count > 0" ;;
	esac
	[ "$u_cmd" = "$CREATE_REGION" ] || fail "unassembled: command '$u_cmd', expected '$CREATE_REGION'"
}

# pmemzerod started before the region (guest-init): it cannot open the
# device, and after the power cycle its start-up says why and what to run.
check_daemon_before_assembly() {
	f=$VMTEST_CXL_BEFORE_DAEMON
	[ -r "$f" ] || fail "guest-init did not start pmemzerod before the region"
	[ "$(cat "$f.status")" != 0 ] || fail "pmemzerod started without $VMTEST_DEV"
	warn="CXL memdev $MEMDEV (serial $SERIAL) holds "
	if [ "$VMTEST_BOOT" -eq 1 ]; then
		grep -q "$warn" "$f" && fail "pmemzerod warns about an unassembled region on blank labels"
		return 0
	fi
	line=$(grep -F "$warn" "$f" || true)
	[ -n "$line" ] || fail "pmemzerod's start-up does not report the unassembled region: $(cat "$f")"
	case $line in
	*"is in no CXL region"*"'$CREATE_REGION'"*) ;;
	*) fail "pmemzerod's warning does not name '$CREATE_REGION': $line" ;;
	esac
	say "pmemzerod before assembly: ${line#*warning: }"
}

check_discover() {
	run pmemzctl discover
	f=/tmp/discover.json
	pmemzctl --json discover >$f || fail "pmemzctl --json discover failed"
	n=$(grep -c '"path":' $f || true)
	# One device: once in "devices", once in "cxl".
	[ "$n" -eq 2 ] || fail "pmemzctl discover lists $n paths, expected 2 (devices, cxl): $(cat $f)"
	grep -q '"cxl_unassembled"' $f && fail "discover reports an unassembled region after assembly"
	d_path=$(json_field $f path)
	d_size=$(json_field $f size)
	d_align=$(json_field $f align)
	d_region=$(json_field $f region)
	d_pd=$(json_field $f persistence_domain)
	d_gran=$(json_field $f granularity)
	c_memdev=$(json_field $f memdev)
	c_serial=$(json_field $f serial)
	c_region=$(json_field $f cxl_region)
	c_root=$(json_field $f root_decoder)
	c_ways=$(json_field $f interleave_ways)
	c_ig=$(json_field $f interleave_granularity)
	say "discover: path=$d_path size=$d_size align=$d_align region=$d_region" \
		"persistence_domain=$d_pd granularity=$d_gran"
	say "discover (CXL): memdev=$c_memdev serial=$c_serial cxl_region=$c_region" \
		"root_decoder=$c_root interleave_ways=$c_ways interleave_granularity=$c_ig"
	[ "$d_path" = "$VMTEST_DEV" ] || fail "discover: device '$d_path', expected $VMTEST_DEV"
	[ "$d_size" = "$(cat "$DEVSYS/size")" ] || fail "discover: size $d_size != sysfs $(cat "$DEVSYS/size")"
	[ "$d_align" = 2097152 ] || fail "discover: align $d_align, expected 2 MiB"
	[ "$d_region" = region0 ] || fail "discover: region '$d_region', expected region0"
	[ "$d_pd" = $PERSISTENCE ] || fail "discover: persistence domain '$d_pd', expected $PERSISTENCE"
	[ "$d_gran" = $GRANULARITY ] || fail "discover: granularity '$d_gran', expected $GRANULARITY"
	[ "$c_memdev" = $MEMDEV ] || fail "discover: memdev '$c_memdev', expected $MEMDEV"
	[ "$c_serial" = $SERIAL ] || fail "discover: serial '$c_serial', expected $SERIAL"
	[ "$c_region" = region0 ] || fail "discover: CXL region '$c_region', expected region0"
	[ "$c_root" = $ROOT_DECODER ] || fail "discover: root decoder '$c_root', expected $ROOT_DECODER"
	[ "$c_ways" = "$(cat $CXLREGION/interleave_ways)" ] || fail "discover: interleave ways $c_ways != sysfs"
	[ "$c_ig" = "$(cat $CXLREGION/interleave_granularity)" ] ||
		fail "discover: interleave granularity $c_ig != sysfs $(cat $CXLREGION/interleave_granularity)"
	# The text output names the CXL side too.
	pmemzctl discover >/tmp/discover.txt || fail "pmemzctl discover failed"
	grep -q "$MEMDEV .*$SERIAL .*region0 .*$ROOT_DECODER" /tmp/discover.txt ||
		fail "pmemzctl discover's text does not show memdev, serial, region and root decoder"
	# One device by path: the same CXL answer.
	pmemzctl --json discover "$VMTEST_DEV" >/tmp/discover1.json || fail "pmemzctl discover $VMTEST_DEV failed"
	[ "$(json_field /tmp/discover1.json memdev)" = $MEMDEV ] ||
		fail "pmemzctl discover $VMTEST_DEV does not show the memdev"
}

# As nobody: the same device and persistence domain, on CXL (which CXL
# region needs the physical address: root only, so it may be unknown).
check_discover_unprivileged() {
	say "\$ su -s /bin/sh nobody -c 'pmemzctl --json discover'"
	su -s /bin/sh nobody -c 'pmemzctl discover; pmemzctl --json discover >/tmp/discover-nobody.json' ||
		fail "pmemzctl discover as nobody failed"
	f=/tmp/discover-nobody.json
	say "discover (nobody): path=$(json_field $f path) persistence_domain=$(json_field $f persistence_domain)" \
		"memdev=$(json_field $f memdev) cxl_region=$(json_field $f cxl_region)"
	[ "$(json_field $f path)" = "$VMTEST_DEV" ] || fail "discover as nobody: no $VMTEST_DEV"
	[ "$(json_field $f persistence_domain)" = $PERSISTENCE ] || fail "discover as nobody: wrong persistence domain"
	grep -q '"cxl"' $f || fail "discover as nobody: the device is not shown on CXL"
}

check_daemon_cxl_line() {
	want="device-DAX $VMTEST_DEV is on CXL region0 (root decoder $ROOT_DECODER, 1 way x $(cat $CXLREGION/interleave_granularity) B): $MEMDEV (serial $SERIAL), persistence domain $PERSISTENCE"
	line=$(grep -F "$want" "$DAEMON_LOG" || true)
	[ -n "$line" ] || fail "the daemon's start-up log lacks: $want"
	say "daemon's start-up: ${line#*device-DAX }"
}

# ---- the workload ------------------------------------------------------------

DEMO="pmemz-demo --socket $SOCK --region $REGION"

say "--- discovery (boot $VMTEST_BOOT): pmemzctl discover, no daemon"
check_before_assembly
check_daemon_before_assembly
check_discover
check_discover_unprivileged

case $VMTEST_BOOT in
1)
	[ "$VMTEST_NAMESPACE" = created ] || fail "boot 1 expects fresh backing files"
	start_daemon $PERSISTENCE
	check_daemon_cxl_line
	check_region $GRANULARITY $PERSISTENCE
	show_view "fresh region"
	# allocate, verify zero, write a pattern, persist, commit as 'demo'
	run $DEMO --tag demo --extents 8 --phase write
	# written, committed, released: these extents must come back zeroed
	run $DEMO --tag scratch --extents 4 --phase write
	run $DEMO --tag scratch --phase cleanup
	show_view "after the write phase"
	stop_daemon
	run_check
	;;
*)
	[ "$VMTEST_NAMESPACE" = existing ] ||
		fail "boot $VMTEST_BOOT created a new namespace: the labels did not bring it back"
	start_daemon $PERSISTENCE
	check_daemon_cxl_line
	check_region $GRANULARITY $PERSISTENCE
	show_view "after the power cycle"
	f=/tmp/after-reboot.json
	snapshot $f
	[ "$(json_field $f committed)" -eq 8 ] ||
		fail "expected 8 committed extents after the power cycle, found $(json_field $f committed)"
	run pmemzctl --socket "$SOCK" tags "$REGION"
	# the tag and its data survived the power cycle
	run $DEMO --tag demo --phase verify
	say "VERIFIED after the power cycle: tag 'demo' (8 extents) and its data"
	# I1 across a power cycle: every free extent (the released, once
	# written ones too) allocates as zero.  Counted from one snapshot.
	snapshot $f
	n=$(($(json_field $f zeroed) + $(json_field $f dirty)))
	say "allocating all $n free extents; each must read zero"
	run $DEMO --tag fill --extents "$n" --phase write
	say "VERIFIED after the power cycle: all $n free extents read zero"
	run $DEMO --tag fill --phase cleanup
	run $DEMO --tag demo --phase cleanup
	show_view "after cleanup"
	# I3: free + bad = all (nothing leaked), from one snapshot.
	snapshot $f
	free=$(($(json_field $f zeroed) + $(json_field $f dirty)))
	bad=$(json_field $f bad)
	all=$(json_field $f extents)
	say "after cleanup: free $free + bad $bad of $all extents"
	[ $((free + bad)) -eq "$all" ] || fail "free $free + bad $bad != all $all extents after cleanup (leak?)"
	stop_daemon
	run_check
	;;
esac
say "boot $VMTEST_BOOT workload passed"
