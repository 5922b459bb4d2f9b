#!/bin/sh
# SPDX-License-Identifier: MIT
#
# test-metrics-units.sh UNIT-DIR PMEMZCTL
#
# The pmemzerod-metrics timer and service as CMake configured them: systemd
# accepts them (systemd-analyze verify, with the ExecStart binary pointed at
# the build's pmemzctl), the timer fires every 15 s and runs the service,
# and the service's command line writes the textfile the collector reads.
set -eu

unitdir=$1
ctl=$2

command -v systemd-analyze >/dev/null 2>&1 || { echo "SKIP: systemd-analyze not found"; exit 77; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

svc=$unitdir/pmemzerod-metrics.service
tmr=$unitdir/pmemzerod-metrics.timer
for f in "$svc" "$tmr"; do
	[ -f "$f" ] || { echo "FAIL: $f missing"; exit 1; }
done

exec_line=$(sed -n 's/^ExecStart=//p' "$svc")
bin=${exec_line%% *}
case $bin in
*/pmemzctl) ;;
*) echo "FAIL: ExecStart does not run pmemzctl: $exec_line"; fail=1 ;;
esac
case $exec_line in
*" metrics --output \${PMEMZ_METRICS_FILE}") ;;
*) echo "FAIL: ExecStart is not 'pmemzctl ... metrics --output \${PMEMZ_METRICS_FILE}': $exec_line"; fail=1 ;;
esac
grep -qx 'Environment=PMEMZ_METRICS_FILE=/var/lib/prometheus/node-exporter/pmemzerod.prom' "$svc" ||
	{ echo "FAIL: the textfile is not /var/lib/prometheus/node-exporter/pmemzerod.prom"; fail=1; }
grep -qx 'Type=oneshot' "$svc" || { echo "FAIL: the service is not Type=oneshot"; fail=1; }
grep -qx 'OnUnitActiveSec=15s' "$tmr" || { echo "FAIL: the timer does not fire every 15 s"; fail=1; }
grep -qx 'WantedBy=timers.target' "$tmr" || { echo "FAIL: the timer is not wanted by timers.target"; fail=1; }

# systemd-analyze verify checks that the ExecStart binary exists: use ours.
sed "s#^ExecStart=$bin #ExecStart=$ctl #" "$svc" >"$tmp/pmemzerod-metrics.service"
cp "$tmr" "$tmp/pmemzerod-metrics.timer"
(cd "$tmp" && SYSTEMD_LOG_LEVEL=warning systemd-analyze verify \
	./pmemzerod-metrics.service ./pmemzerod-metrics.timer) >"$tmp/verify" 2>&1 || true
# The man page is not installed in a build tree; anything else is a finding.
if grep -v "Command 'man " "$tmp/verify" | grep -q .; then
	echo "FAIL: systemd-analyze verify:"
	grep -v "Command 'man " "$tmp/verify"
	fail=1
fi

if [ $fail -eq 0 ]; then
	echo "ok: pmemzerod-metrics.service and .timer"
fi
exit $fail
