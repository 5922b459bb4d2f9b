#!/bin/sh
# The systemd VM test's workload (run-vm-test --machine systemd): runs as
# vmtest.service under the host's systemd (PID 1) on the NVDIMM machine.
# Installs the project's .deb with dpkg, configures /dev/dax0.0 in
# /etc/pmemzerod/pmemzerod.conf and checks, logging what it sees:
# socket activation; READY and the zeroing STATUS; journald's priorities;
# deep flush inside the unit's sandbox; kill -9 -> restart, the acknowledged
# commit intact, the client reconnects; the watchdog (SIGSTOP); reload (or
# a loud SKIP while the daemon does not support it); stop under load within
# TimeoutStopSec, then `pmemzctl check`; the sysusers.d group; and
# `systemd-analyze security`.  docs/vm-test.md describes it.

DEV=/dev/dax0.0
REGION=pmem0
SOCK=/run/pmemzerod/pmemzerod.sock
CONF=/etc/pmemzerod/pmemzerod.conf
BIN=/vmtest/bin
UNIT=pmemzerod.service
# Test-only: a shorter watchdog, and the abort (SIGABRT) not waiting the
# unit's TimeoutStopSec before SIGKILL.
WATCHDOG_SEC=10

# wait_until; the helpers below are this workload's own.
# shellcheck disable=SC1091 # tests/vm/workload-lib.sh, put there by run-vm-test
. /vmtest/lib.sh
say() { echo "workload: $*"; }
step() { echo "workload: ======== $* (uptime $(cut -d' ' -f1 /proc/uptime)s)"; }
indent() { sed "s/^/  $1| /"; }
fail() {
	say "FAIL: $*"
	systemctl status --no-pager -n 0 "$UNIT" 2>&1 | indent status || true
	journalctl -u pmemzerod --no-pager -n 80 -o short-monotonic 2>&1 | indent journal || true
	exit 1
}
run() {
	say "\$ $*"
	"$@" || fail "'$*' exited with status $?"
}
# show CMD...: run it, its output indented under its name.
show() {
	say "\$ $*"
	"$@" 2>&1 | indent "$1" || true
}
prop() { systemctl show -p "$1" --value "$UNIT"; }
# daemon_count PRIORITY-RANGE: the daemon's journal records at those
# priorities (its stderr stream: SYSLOG_IDENTIFIER=pmemzerod).
daemon_count() {
	journalctl --no-pager -o cat SYSLOG_IDENTIFIER=pmemzerod -p "$1" | grep -c . || true
}
restarted() { [ "$(prop NRestarts)" -gt "$1" ] && [ "$(prop ActiveState)" = active ] && [ "$(prop SubState)" = running ]; }
# client NAME ARGS...: pmemz-reconnect in the background against the
# installed library (LD_LIBRARY_PATH goes before the build tree's RUNPATH).
client() {
	name=$1
	shift
	LD_LIBRARY_PATH=$LIBDIR "$BIN/pmemz-reconnect" "$@" >"/tmp/$name.log" 2>&1 &
	echo $! >"/tmp/$name.pid"
}
client_wait() {
	st=0
	wait "$(cat "/tmp/$1.pid")" || st=$?
	indent "$1" <"/tmp/$1.log"
	[ $st -eq 0 ] || fail "$1 exited with status $st"
}

step "device"
if [ ! -e $DEV ]; then
	run ndctl create-namespace -f -e namespace0.0 -m devdax
fi
wait_until 20 test -c $DEV || fail "no $DEV"
show ndctl list -R -N

step "install the package"
run dpkg -i /vmtest/pmemzerod.deb
show dpkg -s pmemzerod
getent group pmemz >/dev/null || fail "the sysusers.d group pmemz does not exist after dpkg -i"
say "sysusers.d group: $(getent group pmemz)"
LIBDIR=$(dirname "$(dpkg -L pmemzerod | grep '/libpmemzclient\.so\.1$')")
[ -n "$LIBDIR" ] || fail "the package has no libpmemzclient.so.1"
# dpkg -i leaves both units stopped and disabled: the operator configures first.
[ "$(prop ActiveState)" = inactive ] || fail "$UNIT is $(prop ActiveState) right after dpkg -i"

step "configure $DEV"
cat >$CONF <<EOF
# the systemd VM test
[daemon]
admin_group = pmemz
log_level = info

[region $REGION]
path = $DEV
EOF
show cat $CONF
run pmemzerod -n --config $CONF
mkdir -p /etc/systemd/system/$UNIT.d
cat >/etc/systemd/system/$UNIT.d/vmtest.conf <<EOF
[Service]
WatchdogSec=$WATCHDOG_SEC
TimeoutAbortSec=10
EOF
show cat /etc/systemd/system/$UNIT.d/vmtest.conf
run systemctl daemon-reload

step "socket activation"
run systemctl start pmemzerod.socket
show systemctl status --no-pager pmemzerod.socket
[ "$(prop ActiveState)" = inactive ] || fail "$UNIT started with its socket"
say "before the first client: $UNIT is $(prop ActiveState)"
show pmemzctl status
[ "$(prop ActiveState)" = active ] || fail "the first pmemzctl status did not activate $UNIT"
say "after the first client: $UNIT is $(prop ActiveState) ($(prop SubState)), TriggeredBy $(prop TriggeredBy)"

step "READY and STATUS"
# Type=notify: active only after READY=1; StatusText is the last STATUS=.
wait_until 60 sh -c "systemctl show -p StatusText --value $UNIT | grep -q 'zeroed (.*/.* extents)'" ||
	fail "no zeroing STATUS: '$(prop StatusText)'"
show systemctl status --no-pager -n 5 $UNIT
systemctl status --no-pager -n 0 $UNIT | grep -q 'Status: ".* zeroed (' || fail "systemctl status shows no Status line"
say "READY: Type=$(prop Type) ActiveState=$(prop ActiveState) SubState=$(prop SubState) MainPID=$(prop MainPID)"
say "STATUS: $(prop StatusText)"

step "journal priorities"
# A warning on demand: a second listening socket (the daemon uses the first).
mkdir -p /etc/systemd/system/pmemzerod.socket.d
printf '[Socket]\nListenStream=/run/pmemzerod/vmtest-second.sock\n' \
	>/etc/systemd/system/pmemzerod.socket.d/vmtest-second.conf
run systemctl daemon-reload
run systemctl stop $UNIT pmemzerod.socket
run systemctl start pmemzerod.socket
run pmemzctl status >/dev/null
WARNING="systemd passed 2 sockets, using the first"
wait_until 20 sh -c "journalctl -u pmemzerod -p warning -o cat | grep -q '$WARNING'" ||
	fail "the daemon's warning is not in journalctl -p warning"
show journalctl -u pmemzerod -p warning --no-pager -o short-monotonic
counts=
for p in 0 1 2 3 4 5 6 7; do
	counts="$counts $p:$(daemon_count $p..$p)"
done
say "the daemon's journal records per PRIORITY:$counts"
[ "$(daemon_count 4..4)" -ge 1 ] || fail "no daemon record at PRIORITY=4 (warning)"
[ "$(daemon_count 6..6)" -ge 1 ] || fail "no daemon record at PRIORITY=6 (info)"
journalctl -u pmemzerod -p warning -o cat >/tmp/warn.txt
journalctl -u pmemzerod -o cat >/tmp/all.txt
grep -q "^Ready, listening" /tmp/all.txt || fail "the info line 'Ready, listening' is not in the journal"
grep -q "^Ready, listening\|^region '$REGION': device-DAX" /tmp/warn.txt &&
	fail "journalctl -p warning shows the daemon's info lines"
grep -q "^<[0-7]>" /tmp/all.txt && fail "a record kept its <N> prefix: journald did not parse it"
say "journalctl -u pmemzerod -p warning: $(grep -c . /tmp/warn.txt) line(s), the warning, no info line"
rm -r /etc/systemd/system/pmemzerod.socket.d
run systemctl daemon-reload
run systemctl stop $UNIT pmemzerod.socket
run systemctl start pmemzerod.socket
run pmemzctl status >/dev/null

step "deep flush inside the sandbox"
MAIN=$(prop MainPID)
say "host view of region0's deep_flush: $(ls -l /sys/bus/nd/devices/region0/deep_flush 2>&1) = $(cat /sys/bus/nd/devices/region0/deep_flush 2>&1)"
# What the daemon sees: its own mount namespace.  /sys is read-only
# (ProtectKernelTunables=yes) but for the NVDIMM bus the unit keeps writable:
# libpmem2 writes deep_flush where the region reads 1 (the platform has WPQ
# flush hints; QEMU's NVDIMM has none: 0, mode 0444) and ignores a failed
# write, so a read-only mount would silently make deep flushes plain ones.
in_unit() { nsenter -t "$MAIN" -m "$@"; }
df=$(readlink -f /sys/bus/nd/devices/region0)/deep_flush
sys_opts=$(in_unit findmnt -no OPTIONS /sys)
df_target=$(in_unit findmnt -no TARGET -T "$df")
df_opts=$(in_unit findmnt -no OPTIONS -T "$df")
say "in the unit: /sys is mounted $sys_opts"
say "in the unit: $df is on $df_target, mounted $df_opts"
say "in the unit: deep_flush reads $(in_unit cat "$df")"
case $sys_opts in ro,*) ;; *) fail "/sys is not read-only in the unit: $sys_opts" ;; esac
case $df_opts in rw,*) ;; *) fail "deep_flush is on a read-only mount in the unit ($df_target: $df_opts)" ;; esac
client deepflush "$SOCK" $REGION vmtest-deep 1
wait_until 60 grep -q "waiting for the connection" /tmp/deepflush.log || true
kill "$(cat /tmp/deepflush.pid)" 2>/dev/null || true
wait "$(cat /tmp/deepflush.pid)" 2>/dev/null || true
indent deepflush </tmp/deepflush.log
grep -q "^deep flush: ok" /tmp/deepflush.log || fail "pmemz_flush(PMEMZ_FLUSH_DEEP) failed in the sandbox"

step "kill -9: systemd restarts the daemon, the client reconnects"
client reconnect "$SOCK" $REGION vmtest-kill 180
wait_until 60 grep -q "waiting for the connection" /tmp/reconnect.log ||
	{ indent reconnect </tmp/reconnect.log; fail "pmemz-reconnect did not commit"; }
MAIN=$(prop MainPID)
N=$(prop NRestarts)
say "the commit is acknowledged; kill -9 $MAIN (NRestarts $N)"
kill -9 "$MAIN"
wait_until 60 restarted "$N" || fail "systemd did not restart $UNIT after kill -9"
say "restarted: MainPID $MAIN -> $(prop MainPID), NRestarts $(prop NRestarts)"
client_wait reconnect
grep -q "^verified: " /tmp/reconnect.log || fail "the acknowledged commit was not verified"
journalctl -u pmemzerod --no-pager -o short-monotonic | grep -E "status=9/KILL|Scheduled restart|Started|Failed with result" | tail -n 5 | indent journal

step "watchdog: SIGSTOP"
MAIN=$(prop MainPID)
N=$(prop NRestarts)
say "WatchdogUSec=$(prop WatchdogUSec); kill -STOP $MAIN (NRestarts $N)"
kill -STOP "$MAIN"
wait_until 120 restarted "$N" || fail "the watchdog did not restart $UNIT"
say "restarted: MainPID $MAIN -> $(prop MainPID), NRestarts $(prop NRestarts)"
journalctl -u pmemzerod --no-pager -o short-monotonic | grep -iE "watchdog|status=6/ABRT|status=9/KILL|Scheduled restart" | tail -n 4 | indent journal
journalctl -u pmemzerod --no-pager -o cat | grep -q "Watchdog timeout" || fail "no 'Watchdog timeout' in the journal"
run pmemzctl status >/dev/null

step "reload"
echo 'zero_rate = 64M' >>$CONF # [region $REGION] is the last section
show cat $CONF
MAIN=$(prop MainPID)
since=$(date '+%Y-%m-%d %H:%M:%S')
if [ "$(prop CanReload)" = yes ]; then
	run systemctl reload $UNIT
else
	say "$UNIT has no ExecReload; sending SIGHUP as ExecReload would"
	run systemctl kill -s HUP --kill-whom=main $UNIT
fi
# reload_state: "unsupported" (the daemon said so), "applied" (the new rate
# is in effect) or nothing yet.
reload_state() {
	if journalctl -u pmemzerod --since "$since" -o cat | grep -q "reloading the configuration is not supported"; then
		echo unsupported
	elif pmemzctl --json regions 2>/dev/null | grep -q '"zero_rate_limit": *67108864'; then
		echo applied
	else
		return 1
	fi
}
wait_until 20 reload_state || true
case $(reload_state) in
unsupported)
	say "###################################################################"
	say "SKIP reload: not implemented (the daemon logs 'reloading the configuration is not supported')"
	say "###################################################################"
	sed -i '/^zero_rate = 64M$/d' $CONF
	;;
applied)
	[ "$(prop CanReload)" = yes ] || fail "the daemon reloads on SIGHUP but $UNIT has no ExecReload"
	[ "$(prop MainPID)" = "$MAIN" ] || fail "reload restarted the daemon"
	pmemzctl --json regions | grep '"zero_rate_limit"' | indent regions
	say "reload applied zero_rate = 64M (MainPID $MAIN kept)"
	;;
*)
	pmemzctl --json regions 2>&1 | grep '"zero_rate_limit"' | indent regions
	fail "the reload did not apply zero_rate = 64M within 20 s"
	;;
esac

step "stop while clients allocate and commit"
client churn1 --churn "$SOCK" $REGION vmtest-churn1
client churn2 --churn "$SOCK" $REGION vmtest-churn2
wait_until 60 grep -q churning /tmp/churn1.log || fail "churn1 did not start"
wait_until 60 grep -q churning /tmp/churn2.log || fail "churn2 did not start"
say "TimeoutStopSec=$(prop TimeoutStopUSec)"
t0=$(cut -d' ' -f1 /proc/uptime)
run systemctl stop pmemzerod.socket $UNIT
t1=$(cut -d' ' -f1 /proc/uptime)
say "systemctl stop returned after $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')s:" \
	"Result=$(prop Result) ExecMainCode=$(prop ExecMainCode) ExecMainStatus=$(prop ExecMainStatus)"
# Killed at the timeout, Result would be "timeout" and the status SIGKILL's.
[ "$(prop Result)" = success ] || fail "the stop did not end in success: Result=$(prop Result)"
[ "$(prop ExecMainStatus)" = 0 ] || fail "the daemon exited with status $(prop ExecMainStatus)"
client_wait churn1
client_wait churn2
journalctl -u pmemzerod --no-pager -o short-monotonic | tail -n 4 | indent journal
st=0
pmemzctl check $DEV >/tmp/check.txt 2>&1 || st=$?
indent check </tmp/check.txt
[ $st -eq 0 ] || fail "pmemzctl check $DEV exited with status $st (0 = clean)"
say "pmemzctl check: $DEV is clean"

step "systemd-analyze security"
systemd-analyze security --no-pager $UNIT >/tmp/security.txt 2>&1 || true
grep -q "Overall exposure level" /tmp/security.txt || { indent security </tmp/security.txt; fail "systemd-analyze security gave no score"; }
grep -E "PrivateNetwork|ProtectKernelTunables|CapabilityBoundingSet|SystemCallFilter" /tmp/security.txt | head -n 6 | indent security
say "$(grep "Overall exposure level" /tmp/security.txt)"
say "all checks passed"
