#!/bin/sh
# The package upgrade test's workload (tests/vm/run-upgrade-test): runs as
# vmtest.service under the host's systemd on the NVDIMM machine, as
# workload-systemd.sh does.  /vmtest/pmemzerod-old.deb is the package of
# an older commit (the compat-baseline fixture's), /vmtest/pmemzerod.deb
# this tree's; /vmtest/old-versions says which layout and disk superblock
# versions the older one reads.
#
# 1. Install the older package (dpkg -i); /dev/dax0.0 as region pmem0; tags
#    committed with known content; a disk written through the
#    pmemzerod-nbd@ service (data, a chunk given back, holes, a FLUSH); a
#    client holding a reserve, a committed tag and an uncommitted lease.
# 2. apt-get install the new package over it: postinst restarts the daemon.
#    The client sees its connection break, reconnects, its uncommitted
#    lease is stale (released), its tag intact, and the library's reserve
#    leases again; every tag and every disk block is intact, read through
#    the still-running older plugin and again through the new one;
#    `pmemzctl check` of the device is clean.
# 3. A disk of the new plugin and a file region of the new daemon; then
#    the older package installed over the new one (dpkg -i).  A region whose
#    layout version the older build does not know is refused as unsupported
#    and its header and tables do not change by one byte; any other is
#    served intact.  A disk whose superblock version it does not know is
#    refused as a later version's; any other reads back block for block.
# docs/vm-test.md describes it.

DEV=/dev/dax0.0
FILE_REGION=/var/lib/pmemzerod/fresh.region
SOCK=/run/pmemzerod/pmemzerod.sock
CONF=/etc/pmemzerod/pmemzerod.conf
UNIT=pmemzerod.service
NBD_UNIT=pmemzerod-nbd@vmdisk.service
NBD_SOCK=/run/pmemzerod/nbd/vmdisk.sock
W=/tmp/upgrade
mkdir -p $W
# shellcheck disable=SC1091 # written by run-upgrade-test
. /vmtest/old-versions # OLD_LAYOUT, OLD_DISK

# say, note, wait_until; fail is this workload's own (below).
# shellcheck disable=SC1091 # tests/vm/workload-lib.sh, put there by run-vm-test
. /vmtest/lib.sh
# guest COMMAND ARGS...: tests/vm/upgrade-guest.py, the client side.
guest() { python3 /vmtest/upgrade-guest.py "$@"; }
step() { echo "workload: ======== $* (uptime $(cut -d' ' -f1 /proc/uptime)s)"; }
indent() { sed "s/^/  $1| /"; }
fail() {
	say "FAIL: $*"
	systemctl status --no-pager -n 0 "$UNIT" "pmemzerod-nbd@*" 2>&1 | indent status || true
	journalctl -u pmemzerod -u "pmemzerod-nbd@*" --no-pager -n 80 -o short-monotonic 2>&1 |
		indent journal || true
	exit 1
}
# run_st CMD...: run it, its output indented; fail on a non-zero status.
run_st() {
	say "\$ $*"
	t0=$(cut -d' ' -f1 /proc/uptime)
	if "$@" >/tmp/out.txt 2>&1; then
		indent "$(basename "$1")" </tmp/out.txt
		say "  ($(awk -v a="$t0" -v b="$(cut -d' ' -f1 /proc/uptime)" 'BEGIN { printf "%.1f", b - a }') s)"
	else
		st=$?
		indent "$(basename "$1")" </tmp/out.txt
		fail "'$*' exited with status $st"
	fi
}
prop() { systemctl show -p "$1" --value "${2:-$UNIT}"; }
lib() { dpkg -L pmemzerod | grep '/libpmemzclient\.so\.1$'; }
version() { dpkg-query -W -f '${Version}' pmemzerod; }
# install DEB: as an operator would, with dpkg -i, or apt-get install when
# APT is the second argument (the upgrade: what the release notes tell).
# The same version number (a tree not yet bumped) is a reinstall to APT, a
# lower one a downgrade.  The guest is offline: APT resolves against the
# installed packages alone (empty package lists), not the host's lists
# (minutes to read under TCG).
install() {
	new=$(dpkg-deb -f "$1" Version)
	say "installing $(basename "$1") (version $new) over $(version 2>/dev/null || echo nothing)"
	if [ "${2:-}" != APT ]; then
		run_st dpkg -i "$1"
		return
	fi
	mkdir -p $W/apt-lists/partial
	opts="-y --no-install-recommends -o Dir::State::Lists=$W/apt-lists"
	if [ "$new" = "$(version)" ]; then
		opts="$opts --reinstall"
	elif dpkg --compare-versions "$new" lt "$(version)"; then
		opts="$opts --allow-downgrades"
	fi
	# shellcheck disable=SC2086 # opts: several words
	run_st env DEBIAN_FRONTEND=noninteractive apt-get install $opts "$1"
}
# holder_leases: the leases of the holder's connection, as the daemon counts them.
holder_leases() {
	pmemzctl --json clients | python3 -c "import json,sys
pid=int(sys.argv[1])
print(sum(c['leases'] for c in json.load(sys.stdin)['clients'] if c['pid'] == pid))" "$(cat $W/holder.pid)"
}
leases_at_least() { [ "$(holder_leases)" -ge "$1" ]; }
region_state() {
	pmemzctl --json regions | python3 -c "import json,sys
print(next(r['state'] for r in json.load(sys.stdin)['regions'] if r['name'] == sys.argv[1]))" "$1"
}
online() { [ "$(region_state "$1")" = online ]; }
# disk_write NAME: a 64 MiB disk of region pmem0 served by
# pmemzerod-nbd@NAME, the compat tests' writes and a FLUSH; $W/NAME.json
# says what it must read.  Extents owned and leased ahead: a few, not the
# defaults' 62 MiB.
disk_write() {
	mkdir -p /etc/pmemzerod/nbd
	printf 'REGION=pmem0\nSIZE=64M\nPLUGIN_ARGS="ahead=16M reserve=8M"\n' >"/etc/pmemzerod/nbd/$1.conf"
	run_st systemctl start "pmemzerod-nbd@$1"
	run_st guest nbd-ready "/run/pmemzerod/nbd/$1.sock"
	run_st guest disk-write "/run/pmemzerod/nbd/$1.sock" "$1" 2097152 "$W/$1.json"
}
# disk_check NAME: serve it again and read every block.  The older unit
# does not remove the socket nbdkit left behind (nbdkit refuses to start
# on it): its operator has to, so the workload does, every time.
disk_check() {
	rm -f "/run/pmemzerod/nbd/$1.sock"
	run_st systemctl start "pmemzerod-nbd@$1"
	run_st guest nbd-ready "/run/pmemzerod/nbd/$1.sock"
	run_st guest disk-check "/run/pmemzerod/nbd/$1.sock" "$W/$1.json"
	run_st systemctl stop "pmemzerod-nbd@$1"
}
# disk_refused NAME: the plugin must refuse the disk as a later version's.
disk_refused() {
	rm -f "/run/pmemzerod/nbd/$1.sock"
	systemctl start "pmemzerod-nbd@$1" || true
	wait_until 60 sh -c "journalctl -u pmemzerod-nbd@$1 -o cat | grep -q 'later version'" ||
		fail "the older plugin did not refuse disk $1 as a later version's"
	run_st systemctl stop "pmemzerod-nbd@$1"
}

step "device"
if [ ! -e $DEV ]; then
	run_st ndctl create-namespace -f -e namespace0.0 -m devdax
fi
wait_until 20 test -c $DEV || fail "no $DEV"

step "the older package"
install /vmtest/pmemzerod-old.deb
OLD_VERSION=$(version)
say "installed pmemzerod $OLD_VERSION: $(pmemzerod --version 2>&1 | head -n1)"
cat >$CONF <<EOF
# the package upgrade VM test
[daemon]
admin_group = pmemz

[region pmem0]
path = $DEV
# Zero what allocations need, not the whole device: under TCG, one vCPU
# zeroing 500 MiB would slow every other step.
zero_policy = adaptive
reserve_min = 32M
EOF
run_st pmemzerod -n --config $CONF
run_st systemctl start pmemzerod.socket
run_st pmemzctl status
[ "$(prop ActiveState)" = active ] || fail "$UNIT did not start"

step "tags and a disk with the older package"
run_st guest tags-write "$(lib)" $SOCK pmem0 before $W/tags-before.json
disk_write vmdisk
NBD_PID=$(prop MainPID $NBD_UNIT)

step "a client holding leases"
python3 /vmtest/upgrade-guest.py holder "$(lib)" $SOCK pmem0 $W >$W/holder.log 2>&1 &
echo $! >$W/holder.pid
wait_until 120 grep -q "^holding" $W/holder.log || { indent holder <$W/holder.log; fail "the holder did not start"; }
indent holder <$W/holder.log
wait_until 30 leases_at_least 3 || fail "the holder's connection holds $(holder_leases) leases, not 3 or more"
say "the holder's connection holds $(holder_leases) leases (its reserve and its lease)"

step "apt-get install the new package over it"
MAIN=$(prop MainPID)
install /vmtest/pmemzerod.deb APT
NEW_VERSION=$(version)
say "installed pmemzerod $NEW_VERSION: $(pmemzerod --version 2>&1 | head -n1)"
wait_until 60 sh -c "[ \"\$(systemctl show -p ActiveState --value $UNIT)\" = active ]" ||
	fail "$UNIT is not active after the upgrade"
[ "$(prop MainPID)" != "$MAIN" ] || fail "the upgrade did not restart the daemon (MainPID $MAIN)"
say "postinst restarted the daemon: MainPID $MAIN -> $(prop MainPID)"
journalctl -u pmemzerod --no-pager -o cat | grep "recovered:" | tail -n 1 | indent journal

step "what the client holding leases sees"
touch $W/go
wait_until 120 grep -q "^reconnected" $W/holder.log || { indent holder <$W/holder.log; fail "the holder did not reconnect"; }
wait_until 60 leases_at_least 2 || fail "the reserve did not lease again: $(holder_leases) leases"
say "after the reconnect the holder's connection holds $(holder_leases) leases: the reserve leased again"
touch $W/stop
st=0
wait "$(cat $W/holder.pid)" || st=$?
indent holder <$W/holder.log
[ $st = 0 ] || fail "the holder exited with status $st"
grep -q "^after-restart: leased and committed" $W/holder.log || fail "no commit after the restart"

step "every byte after the upgrade"
run_st guest tags-check "$(lib)" $SOCK pmem0 $W/tags-before.json
[ "$(prop MainPID $NBD_UNIT)" = "$NBD_PID" ] || say "NOTE: $NBD_UNIT restarted meanwhile"
run_st guest disk-check $NBD_SOCK $W/vmdisk.json
say "read through the older plugin, still running, reconnected to the new daemon"
run_st systemctl restart $NBD_UNIT
run_st guest nbd-ready $NBD_SOCK
run_st guest disk-check $NBD_SOCK $W/vmdisk.json
say "read through the new plugin"
run_st systemctl stop $NBD_UNIT
# A disk of the new plugin's own, for the way back.
disk_write newdisk
run_st systemctl stop pmemzerod-nbd@newdisk
run_st systemctl stop pmemzerod.socket $UNIT
run_st pmemzctl check $DEV

step "a region of the new build's own"
cat >>$CONF <<EOF

[region fresh]
path = $FILE_REGION
size = 32M
EOF
run_st systemctl start pmemzerod.socket
run_st guest tags-write "$(lib)" $SOCK fresh fresh $W/tags-fresh.json
for d in vmdisk newdisk; do
	echo "$d $(guest super-version pmemzctl $SOCK pmem0 $d)" >>$W/disks.txt
done
run_st systemctl stop pmemzerod.socket $UNIT
for r in pmem0:$DEV fresh:$FILE_REGION; do
	name=${r%%:*}
	path=${r#*:}
	v=$(guest header-version "$path")
	len=$(guest metadata-size pmemzctl "$path")
	h=$(guest hash-prefix "$path" "$len")
	echo "$name $path $v $len $h" >>$W/regions.txt
	say "$name: layout version $v, header and tables ($len bytes) sha256 $h"
done
while read -r d v; do say "disk $d: superblock version $v"; done <$W/disks.txt

step "the older package over the new one"
install /vmtest/pmemzerod-old.deb
[ "$(version)" = "$OLD_VERSION" ] || fail "the older package is not installed: $(version)"
run_st systemctl start pmemzerod.socket
run_st pmemzctl status
refused=0
while read -r name path v len h; do
	if [ "$v" -gt "$OLD_LAYOUT" ]; then
		online "$name" && fail "the older daemon serves $name, of layout version $v"
		journalctl -u pmemzerod --no-pager -o cat | grep "region '$name'" | grep -q unsupported ||
			fail "the older daemon did not say 'unsupported' for $name"
		say "the older daemon refuses $name (layout version $v > $OLD_LAYOUT): $(region_state "$name")"
		refused=$((refused + 1))
	else
		online "$name" || fail "the older daemon does not serve $name (layout version $v): $(region_state "$name")"
		say "the older daemon serves $name (layout version $v): reading every tag"
	fi
done <$W/regions.txt
online pmem0 && run_st guest tags-check "$(lib)" $SOCK pmem0 $W/tags-before.json
online fresh && run_st guest tags-check "$(lib)" $SOCK fresh $W/tags-fresh.json
if online pmem0; then
	while read -r d v; do
		if [ "$v" -gt "$OLD_DISK" ]; then
			disk_refused "$d"
			say "the older plugin refuses $d (superblock version $v > $OLD_DISK)"
		else
			disk_check "$d"
			say "the older plugin reads $d (superblock version $v)"
		fi
	done <$W/disks.txt
fi
run_st systemctl stop pmemzerod.socket $UNIT
while read -r name path v len h; do
	[ "$v" -gt "$OLD_LAYOUT" ] || continue
	after=$(guest hash-prefix "$path" "$len")
	[ "$after" = "$h" ] || fail "the older daemon changed the header or tables of $name"
	say "$name: not one byte of its header and tables changed"
done <$W/regions.txt
if [ $refused = 0 ]; then
	note "the new package writes layout version $OLD_LAYOUT, which the older one reads:" \
		"nothing to refuse; it served every region intact"
fi
say "all checks passed"
