# Guest-side workload of the NUMA VM test (busybox sh; run by
# tests/vm/guest-init as "sh -e /vmtest/workload").
#
# The machine (run-vm-test --machine numa): two NUMA nodes, one CPU each,
# an emulated NVDIMM on each node.  guest-init made /dev/dax0.0 on region0;
# this workload makes the second device-DAX namespace on region1.  Then
# pmemzerod serves both, one region per device, and the test shows:
#   - each region reports its node (pmemzctl status, its JSON, the metrics)
#     and it is the node the kernel gives the device (sysfs numa_node), the
#     two devices on different nodes;
#   - each region's zeroer threads ("zero:REGION" in /proc/PID/task/*/comm)
#     are allowed only their node's CPUs (Cpus_allowed_list against
#     /sys/devices/system/node/nodeN/cpulist);
#   - every extent of both regions gets zeroed, and extents are served:
#     pmemz-demo allocates (each byte must read zero), writes, commits and
#     releases on each region.

SOCK=/run/pmemzerod.sock
DAEMON_LOG=/tmp/pmemzerod.log
REGIONS="n0 n1"

# shellcheck source=tests/vm/workload-lib.sh
. /vmtest/lib.sh

for b in pmemzerod pmemzctl pmemz-demo; do
	command -v "$b" >/dev/null || fail "$b is not in the initramfs (not built?)"
done

dev_of() { echo "/dev/dax${1#n}.0"; }

# wait_file PATH: up to ~10 s for a device node.
wait_file() {
	i=0
	while [ ! -e "$1" ]; do
		i=$((i + 1))
		[ $i -le 100 ] || return 1
		sleep 0.1
	done
}

# region_json FILE REGION KEY: KEY of REGION's item in `pmemzctl --json status`.
region_json() {
	awk -v r="$2" -v k="$3" '
	{
		if (match($0, /"name": *"[^"]*"/)) {
			s = substr($0, RSTART, RLENGTH)
			sub(/"name": *"/, "", s)
			sub(/"$/, "", s)
			cur = s
		}
		if (cur == r && match($0, "\"" k "\": *[^,]*")) {
			s = substr($0, RSTART, RLENGTH)
			sub("\"" k "\": *", "", s)
			gsub(/"/, "", s)
			print s
			exit
		}
	}' "$1"
}

# The kernel's node of a dax device: its own numa_node, else its nd region's.
sysfs_node() {
	d=/sys/bus/dax/devices/dax${1#n}.0
	n=$(cat "$d/numa_node" 2>/dev/null || true)
	case $n in
	'' | -1) n=$(cat "/sys/bus/nd/devices/region${1#n}/numa_node") ;;
	esac
	echo "$n"
}

# ---- the machine ---------------------------------------------------------------
say "--- the machine: NUMA nodes and NVDIMM regions"
for n in 0 1; do
	[ -r /sys/devices/system/node/node$n/cpulist ] || fail "no NUMA node $n in the guest"
	say "node $n: cpus $(cat /sys/devices/system/node/node$n/cpulist)"
done
[ ! -e /sys/devices/system/node/node2 ] || fail "more than two NUMA nodes"
for n in 0 1; do
	[ -e /sys/bus/nd/devices/region$n ] || fail "no nvdimm region$n"
	say "region$n: numa_node $(cat /sys/bus/nd/devices/region$n/numa_node)" \
		"target_node $(cat /sys/bus/nd/devices/region$n/target_node 2>/dev/null || echo ?)"
done
if [ ! -e /dev/dax1.0 ]; then
	say "no /dev/dax1.0: creating a devdax namespace on region1"
	run ndctl create-namespace -f -e namespace1.0 -m devdax
fi
wait_file /dev/dax1.0 || fail "/dev/dax1.0 did not appear"
run ndctl list -R -N -u
run daxctl list -u

for r in $REGIONS; do
	eval "NODE_$r=$(sysfs_node $r)"
done
say "the kernel's nodes: n0 ($(dev_of n0)) on node $NODE_n0, n1 ($(dev_of n1)) on node $NODE_n1"
[ "$NODE_n0" != "$NODE_n1" ] || fail "both devices are on node $NODE_n0: the machine is not two-node"
for r in $REGIONS; do
	eval "n=\$NODE_$r"
	case $n in
	0 | 1) ;;
	*) fail "$(dev_of $r): node '$n', expected 0 or 1" ;;
	esac
done

# ---- the daemon ------------------------------------------------------------------
say "\$ pmemzerod -d --socket $SOCK --region n0=/dev/dax0.0 --region n1=/dev/dax1.0 -v"
rm -f "$SOCK"
pmemzerod -d --socket "$SOCK" --region n0=/dev/dax0.0 --region n1=/dev/dax1.0 -v \
	>"$DAEMON_LOG" 2>&1 &
DAEMON_PID=$!
i=0
until [ -S "$SOCK" ] && pmemzctl --socket "$SOCK" status >/dev/null 2>&1; do
	alive "$DAEMON_PID" || fail "pmemzerod exited during start-up"
	i=$((i + 1))
	[ $i -le 600 ] || fail "pmemzerod not answering after 60 s"
	sleep 0.1
done
say "pmemzerod (pid $DAEMON_PID) ready"

# ---- each region reports its node -------------------------------------------------------
say "--- each region reports its node"
run pmemzctl --socket "$SOCK" status
ST=/tmp/status.json
pmemzctl --socket "$SOCK" --json status >$ST || fail "pmemzctl --json status failed"
for r in $REGIONS; do
	eval "want=\$NODE_$r"
	got=$(region_json $ST $r numa_node)
	say "region $r: daemon says node '$got', the kernel $want"
	[ "$got" = "$want" ] || fail "region $r: STAT numa_node '$got', expected $want"
	grep -q "region '$r': on NUMA node $want" "$DAEMON_LOG" ||
		fail "region $r: the daemon's log does not name node $want"
done
pmemzctl --socket "$SOCK" metrics >/tmp/metrics.txt || fail "pmemzctl metrics failed"
grep pmemzerod_region_numa_node /tmp/metrics.txt | sed 's/^/  metrics| /'
for r in $REGIONS; do
	eval "want=\$NODE_$r"
	grep -q "^pmemzerod_region_numa_node{region=\"$r\"} $want\$" /tmp/metrics.txt ||
		fail "metrics: no pmemzerod_region_numa_node{region=\"$r\"} $want"
done

# ---- each region's zeroer threads run on its node's CPUs --------------------------------
say "--- zeroer threads and their CPUs"
for r in $REGIONS; do
	eval "node=\$NODE_$r"
	cpus=$(cat /sys/devices/system/node/node$node/cpulist)
	found=0
	for t in /proc/$DAEMON_PID/task/*; do
		[ "$(cat "$t/comm" 2>/dev/null)" = "zero:$r" ] || continue
		allowed=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' "$t/status")
		say "region $r: zeroer thread ${t##*/} Cpus_allowed_list $allowed (node $node: $cpus)"
		[ "$allowed" = "$cpus" ] ||
			fail "region $r: zeroer thread ${t##*/} may run on CPUs $allowed, node $node has $cpus"
		found=$((found + 1))
	done
	[ $found -ge 1 ] || fail "region $r: no zeroer thread (comm zero:$r) in /proc/$DAEMON_PID/task"
done

# ---- extents zeroed and served ----------------------------------------------------
say "--- every extent zeroed"
for r in $REGIONS; do
	i=0
	while :; do
		pmemzctl --socket "$SOCK" --json status >$ST || fail "pmemzctl --json status failed"
		dirty=$(region_json $ST $r dirty)
		zeroing=$(region_json $ST $r zeroing)
		[ "$dirty" = 0 ] && [ "$zeroing" = 0 ] && break
		i=$((i + 1))
		[ $i -le 1800 ] || fail "region $r: still $dirty dirty extents after 180 s"
		sleep 0.1
	done
	say "region $r: $(region_json $ST $r zeroed) of $(region_json $ST $r extents) extents" \
		"zeroed, bad $(region_json $ST $r bad), fences $(region_json $ST $r zero_fences)"
done
say "--- extents served (each byte must read zero)"
for r in $REGIONS; do
	run pmemz-demo --socket "$SOCK" --region $r --tag numa --extents 8 --phase write
	run pmemz-demo --socket "$SOCK" --region $r --tag numa --phase verify
	run pmemz-demo --socket "$SOCK" --region $r --tag numa --phase cleanup
done
run pmemzctl --socket "$SOCK" status
stop_daemon
say "numa workload passed"
