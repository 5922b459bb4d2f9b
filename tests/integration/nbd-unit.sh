#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# nbd-unit.sh UNIT SOCKET_UNIT EXAMPLE PMEMZEROD PMEMZCTL PLUGIN
#
# pmemzerod-nbd@.service as CMake configured it, with the example disk
# configuration:
#  1. systemd accepts it (systemd-analyze verify of an instance; its
#     EnvironmentFile and ExecStart binary exist);
#  2. its ExecStart, expanded as systemd does (%i; Environment= defaults,
#     then the EnvironmentFile; "$VAR" split at spaces, "${VAR}" one word),
#     serves the disk: run against a test pmemzerod on a region named as in
#     the example, with the socket moved to a temporary directory, the
#     plugin named by its build path instead of "pmemz" and the daemon's
#     socket given in PLUGIN_ARGS, as an admin would add parameters.  The
#     disk is named after the instance, has the example's size, and takes
#     one chunk per chunk written (pmemzctl disks).
# Skips (77, saying why) without nbdkit or python3-libnbd.
set -euo pipefail
unit=$1
socket_unit=$2
example=$3
daemon_bin=$4
ctl=$5
plugin=$6
instance=vm1

skip() {
	echo "SKIP: $*"
	exit 77
}
command -v nbdkit >/dev/null || skip "nbdkit is not installed: the unit's command line is NOT run"
/usr/bin/python3 -c 'import nbd' 2>/dev/null ||
	skip "python3-libnbd is not installed: the unit's command line is NOT run"

tmp=$(mktemp -d /dev/shm/pmemz-nbd-unit-XXXXXX)
daemon= nbdkit_pid=
cleanup() {
	# -9: nbdkit with ASan's runtime preloaded can hang in its exit handlers
	[[ -n $nbdkit_pid ]] && kill -9 "$nbdkit_pid" 2>/dev/null || true
	[[ -n $daemon ]] && kill "$daemon" 2>/dev/null || true
	wait 2>/dev/null || true
	[[ -n ${PMEMZ_ITEST_KEEP:-} ]] || rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*"
	exit 1
}

# ---- 1. systemd-analyze verify --------------------------------------------
env_file=$(sed -n 's/^EnvironmentFile=//p' "$unit")
[[ $env_file == */%i.conf ]] || fail "EnvironmentFile=$env_file is not DIR/%i.conf"
exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
[[ -n $exec_start ]] || fail "no ExecStart in $unit"
if command -v systemd-analyze >/dev/null; then
	mkdir -p "$tmp/units"
	sed "s#^EnvironmentFile=.*#EnvironmentFile=$tmp/units/%i.conf#; s#^ConditionPathExists=.*#ConditionPathExists=$tmp/units/%i.conf#" \
		"$unit" >"$tmp/units/pmemzerod-nbd@.service"
	cp "$example" "$tmp/units/$instance.conf"
	cp "$socket_unit" "$tmp/units/"
	# the service the socket activates, as far as verify looks at it
	printf '[Service]\nExecStart=/bin/true\n' >"$tmp/units/pmemzerod.service"
	(cd "$tmp/units" && SYSTEMD_LOG_LEVEL=warning systemd-analyze verify \
		"./pmemzerod-nbd@$instance.service") >"$tmp/verify" 2>&1 || true
	# Man pages are not installed in a build tree; anything else is a finding.
	if grep -v "Command 'man " "$tmp/verify" | grep -q .; then
		cat "$tmp/verify"
		fail "systemd-analyze verify"
	fi
	echo "ok: systemd-analyze verify pmemzerod-nbd@$instance.service"
else
	echo "note: systemd-analyze not found: the unit is not verified"
fi

# ---- 2. the command line, expanded as systemd would --------------------------
# Environment= defaults, then the file (KEY=value lines) overrides them.
declare -A env=()
for kv in $(sed -n 's/^Environment=//p' "$unit"); do
	kv=${kv//%i/$instance}
	env[${kv%%=*}]=${kv#*=}
done
while IFS= read -r line; do
	[[ $line =~ ^([A-Za-z_][A-Za-z0-9_]*)=(.*)$ ]] || continue
	env[${BASH_REMATCH[1]}]=${BASH_REMATCH[2]}
done <"$example"
[[ -n ${env[REGION]:-} && -n ${env[SIZE]:-} ]] || fail "the example sets no REGION= or SIZE="
[[ ${env[DISK]} == "$instance" ]] || fail "DISK does not default to the instance name"
env[PLUGIN_ARGS]="${env[PLUGIN_ARGS]:-} socket=$tmp/d.sock"

argv=()
for w in ${exec_start//%i/$instance}; do
	if [[ $w =~ ^\$([A-Za-z_][A-Za-z0-9_]*)$ ]]; then
		# shellcheck disable=SC2206 # split at spaces, as systemd does for $VAR
		argv+=(${env[${BASH_REMATCH[1]}]:-})
		continue
	fi
	while [[ $w =~ \$\{([A-Za-z_][A-Za-z0-9_]*)\} ]]; do
		w=${w/"${BASH_REMATCH[0]}"/${env[${BASH_REMATCH[1]}]:-}}
	done
	argv+=("$w")
done
echo "ExecStart, expanded: ${argv[*]}"
[[ ${argv[0]} == */nbdkit ]] || fail "ExecStart runs ${argv[0]}, not nbdkit"
nbd_sock=
for ((i = 0; i < ${#argv[@]}; i++)); do
	case ${argv[i]} in
	-U)
		[[ ${argv[i + 1]} == "/run/pmemzerod/nbd/$instance.sock" ]] ||
			fail "the socket is ${argv[i + 1]}, not /run/pmemzerod/nbd/$instance.sock"
		nbd_sock=$tmp/$instance.sock
		argv[i + 1]=$nbd_sock
		;;
	pmemz) argv[i]=$plugin ;;
	esac
done
[[ -n $nbd_sock ]] || fail "ExecStart has no -U socket"

"$daemon_bin" -d --socket "$tmp/d.sock" \
	--region "${env[REGION]}=$tmp/r.img,size=32M,extent=1M" >"$tmp/daemon.log" 2>&1 &
daemon=$!
for ((i = 0; i < 300; i++)); do
	"$ctl" -s "$tmp/d.sock" status >/dev/null 2>&1 && break
	kill -0 "$daemon" 2>/dev/null || { cat "$tmp/daemon.log"; fail "pmemzerod exited"; }
	sleep 0.1
done

# (a sanitizer build's plugin needs ASan's runtime in the uninstrumented nbdkit)
LD_PRELOAD=${PMEMZ_NBDKIT_PRELOAD:-} "${argv[@]}" >"$tmp/nbdkit.log" 2>&1 &
nbdkit_pid=$!
for ((i = 0; i < 300; i++)); do
	[[ -S $nbd_sock ]] && break
	kill -0 "$nbdkit_pid" 2>/dev/null || { cat "$tmp/nbdkit.log"; fail "nbdkit exited"; }
	sleep 0.1
done
[[ -S $nbd_sock ]] || { cat "$tmp/nbdkit.log"; fail "nbdkit does not serve $nbd_sock"; }

/usr/bin/python3 -m nbd -u "nbd+unix:///?socket=$nbd_sock" -c "
h.pwrite(b'u' * 65536, 5 << 20)
h.flush()
assert h.pread(65536, 5 << 20) == b'u' * 65536
" || { cat "$tmp/nbdkit.log"; fail "the unit's disk does not read back"; }
"$ctl" -s "$tmp/d.sock" --json --bytes disks "${env[REGION]}" >"$tmp/disks.json"
size=$(/usr/bin/python3 -c "
import sys
s = sys.argv[1]
m = {'k': 1 << 10, 'K': 1 << 10, 'M': 1 << 20, 'G': 1 << 30, 'T': 1 << 40}
print(int(s[:-1]) * m[s[-1]] if s[-1] in m else int(s))
" "${env[SIZE]}")
/usr/bin/python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))['disks']
want = [(sys.argv[2], int(sys.argv[3]), 1, 'ok')]
got = [(x['name'], x['size'], x['chunks'], x['state']) for x in d]
assert got == want, (got, want)
" "$tmp/disks.json" "$instance" "$size" || { cat "$tmp/disks.json"; fail "pmemzctl disks"; }
echo "ok: the unit's command line serves disk $instance (${env[SIZE]}) of region ${env[REGION]}"
