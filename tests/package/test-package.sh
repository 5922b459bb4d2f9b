#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-package.sh SRC_DIR BUILD_DIR WORK_DIR: the .deb that scripts/package
# makes installs what Debian expects, and cpack refuses BUILD_DIR when its
# prefix is not /usr.  With nbdkit-pmemz-plugin, package-disk.sh also runs
# the packaged daemon, plugin and pmemzctl as `apt install` then `nbdkit
# pmemz` would, in a mount namespace.  Exits 77 without dpkg-deb,
# dpkg-shlibdeps or lintian.
set -euo pipefail
src=$1
build=$2
work=$3

for tool in dpkg-deb dpkg-shlibdeps lintian cpack; do
	if ! command -v "$tool" >/dev/null; then
		echo "SKIP: $tool is not installed (apt-get install dpkg-dev lintian): the package is NOT tested"
		exit 77
	fi
done

fails=0
fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}
ok() { echo "ok: $*"; }

rm -rf "$work"
mkdir -p "$work"

# ---- 1. cpack refuses a build directory not configured for /usr ---------
prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build/CMakeCache.txt")
if [[ $prefix == /usr ]]; then
	echo "note: $build is configured with prefix /usr: the refusal is not tested here"
else
	st=0
	(cd "$work" && cpack -G DEB --config "$build/CPackConfig.cmake" -B "$work/refused") \
		>"$work/refused.log" 2>&1 || st=$?
	if ((st == 0)); then
		fail "cpack made a .deb from $build (prefix $prefix)"
	elif ! grep -q "refusing to build a .deb" "$work/refused.log" ||
		! grep -q "scripts/package" "$work/refused.log"; then
		fail "cpack failed without saying why:"
		cat "$work/refused.log"
	elif compgen -G "$work/refused/*.deb" >/dev/null; then
		fail "cpack refused but left a .deb"
	else
		ok "cpack refuses $build (prefix $prefix) and names scripts/package"
	fi
fi

# ---- 2. the package --------------------------------------------------------
st=0
PKG_BUILD_DIR="$work/build-deb" "$src/scripts/package" --output "$work/out" >"$work/package.log" 2>&1 || st=$?
if ((st != 0)); then
	cat "$work/package.log"
	echo "FAIL: scripts/package exited with status $st"
	exit 1
fi
deb=$(tail -n1 "$work/package.log")
[[ -f $deb ]] || {
	cat "$work/package.log"
	echo "FAIL: scripts/package did not print the path of a .deb (last line: $deb)"
	exit 1
}
echo "package: $deb"

dpkg-deb -I "$deb"
field() { dpkg-deb -f "$deb" "$1"; }
arch=$(dpkg --print-architecture)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
version=$(sed -n 's/^project(pmemzerod VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
lib_version=$(sed -n 's/^set(PMEMZ_CLIENT_VERSION \([0-9.]*\)).*/\1/p' "$src/CMakeLists.txt")

[[ $(field Package) == pmemzerod ]] || fail "Package: $(field Package)"
[[ $(field Architecture) == "$arch" ]] || fail "Architecture: $(field Architecture), host $arch"
[[ $(field Maintainer) =~ ^[^\<]+\ \<[^@\>]+@[^\>]+\>$ ]] || fail "Maintainer '$(field Maintainer)' is not 'Name <address>'"
for dep in libpmem2 libdaxctl1 libndctl6 libevent-2.1-7 libprotobuf-c1 libinih1 libjson-c5 libsystemd0; do
	field Depends | grep -Eq "(^|, )$dep( |,|$)" || fail "Depends lacks $dep: $(field Depends)"
done
[[ -n $(field Description) ]] || fail "no Description"
ok "control: $(field Package) $(field Version) $(field Architecture)"

# ---- files -------------------------------------------------------------------
dpkg-deb -c "$deb" | awk '{ print $6 }' | sed 's|^\./|/|; s|/$||' | sort >"$work/files"
has() { grep -qxF "$1" "$work/files" || fail "the package lacks $1"; }
has /usr/sbin/pmemzerod
has /usr/bin/pmemzctl
has "/usr/lib/$multiarch/libpmemzclient.so.1"
has "/usr/lib/$multiarch/pkgconfig/libpmemzclient.pc"
has /usr/include/libpmemzclient.h
has /usr/include/libpmemzadmin.h
has /etc/pmemzerod/pmemzerod.conf
has /usr/share/doc/pmemzerod/copyright
has /usr/share/doc/pmemzerod/changelog.gz
has /usr/share/man/man8/pmemzerod.8.gz
has /usr/lib/sysusers.d/pmemzerod.conf
has /usr/share/pmemzerod/prometheus/pmemzerod-alerts.yml
for ex in pmemz-example.c pmemz-reconnect.c pmemz-demo.c; do
	has "/usr/share/doc/pmemzerod/examples/$ex"
done
if grep -E '^/usr/local(/|$)|^/usr/etc(/|$)|^/usr/lib/libpmemzclient' "$work/files"; then
	fail "files outside Debian's paths (above)"
fi
units=$(grep -E '^(/usr)?/lib/systemd/system/pmemzerod\.(service|socket)$' "$work/files" || true)
[[ $(wc -w <<<"$units") -eq 2 ]] || fail "units not in /lib/systemd/system or /usr/lib/systemd/system: $units"
ok "files: $(wc -l <"$work/files") entries, no /usr/local"

# ---- the disk: nbdkit-pmemz-plugin, where nbdkit looks, with its unit -------
# Built when nbdkit's plugin header is there (nbdkit.pc), as here.
nbd_plugindir=
if pkg-config --exists nbdkit; then
	nbd_plugindir=$(pkg-config --variable=plugindir nbdkit)
	has "$nbd_plugindir/nbdkit-pmemz-plugin.so"
	has /usr/share/man/man1/nbdkit-pmemz-plugin.1.gz
	has /usr/share/doc/pmemzerod/examples/nbd-disk.conf
	nbd_unit=$(grep -E '^(/usr)?/lib/systemd/system/pmemzerod-nbd@\.service$' "$work/files" || true)
	[[ -n $nbd_unit ]] || fail "the package lacks the unit pmemzerod-nbd@.service"
	field Recommends | grep -Eq '(^|, )nbdkit( |,|$)' ||
		fail "Recommends lacks nbdkit: '$(field Recommends)'"
	ok "disk: plugin in $nbd_plugindir, man page, pmemzerod-nbd@.service, Recommends: nbdkit"
else
	echo "note: nbdkit.pc not found: the package has no nbdkit-pmemz-plugin, not tested"
fi

# ---- control files: conffiles, maintainer scripts, shlibs, triggers ------------
dpkg-deb -e "$deb" "$work/control"
grep -qxF /etc/pmemzerod/pmemzerod.conf "$work/control/conffiles" ||
	fail "/etc/pmemzerod/pmemzerod.conf is not a conffile: $(cat "$work/control/conffiles" 2>/dev/null)"
grep -q 'systemd-sysusers pmemzerod.conf' "$work/control/postinst" ||
	fail "postinst does not create the sysusers.d group"
grep -q 'daemon-reload' "$work/control/postinst" || fail "postinst does not reload systemd"
grep -q 'stop pmemzerod.socket pmemzerod.service' "$work/control/prerm" ||
	fail "prerm does not stop the units on removal"
grep -q '^libpmemzclient 1 ' "$work/control/shlibs" || fail "no shlibs entry for libpmemzclient.so.1"
grep -qx 'activate-noawait ldconfig' "$work/control/triggers" || fail "no ldconfig trigger"
ok "control files: conffiles, postinst, prerm, shlibs, triggers"

# ---- the units' paths exist in the package --------------------------------------
dpkg-deb -x "$deb" "$work/root"

# ---- every version number: the package's, its programs', library's, man pages' -------
st=0
"$src/tests/package/check-versions.sh" --project "$version" --library "$lib_version" \
	--root "$work/root" --deb "$deb" || st=$?
((st == 0)) || fail "version numbers of the package (above)"
service=$(grep pmemzerod.service <<<"$units")
socket=$(grep pmemzerod.socket <<<"$units")
exec_start=$(sed -n 's/^ExecStart=//p' "$work/root$service")
read -r -a cmd <<<"$exec_start"
[[ ${cmd[0]} == /usr/sbin/pmemzerod ]] || fail "ExecStart runs ${cmd[0]}, not /usr/sbin/pmemzerod"
[[ -x $work/root${cmd[0]} ]] || fail "ExecStart's ${cmd[0]} is not in the package"
conf=
for ((i = 1; i < ${#cmd[@]}; i++)); do
	[[ ${cmd[i]} == --config || ${cmd[i]} == -c ]] && conf=${cmd[i + 1]:-}
done
[[ $conf == /etc/pmemzerod/pmemzerod.conf ]] || fail "ExecStart's configuration is '$conf'"
[[ -f $work/root$conf ]] || fail "ExecStart's configuration $conf is not in the package"
listen=$(sed -n 's/^ListenStream=//p' "$work/root$socket")
[[ $listen == /run/pmemzerod/pmemzerod.sock ]] || fail "the socket unit listens on '$listen'"
# Every group a unit names is made by the sysusers.d file.
for g in $(sed -n 's/^\(Group\|SupplementaryGroups\|SocketGroup\)=//p' "$work/root$service" "$work/root$socket"); do
	grep -Eq "^g $g " "$work/root/usr/lib/sysusers.d/pmemzerod.conf" ||
		fail "a unit names group $g, which the sysusers.d file does not create"
done
grep -Eq '^g pmemz ' "$work/root/usr/lib/sysusers.d/pmemzerod.conf" ||
	fail "the sysusers.d file does not create the admin group pmemz"
# The .pc file is relocatable (prefix from ${pcfiledir}): in the unpacked
# tree its libdir must come out as that tree's /usr/lib/MULTIARCH.
pc_libdir=$(PKG_CONFIG_PATH="$work/root/usr/lib/$multiarch/pkgconfig" \
	pkg-config --dont-define-prefix --variable=libdir libpmemzclient 2>/dev/null || true)
[[ -n $pc_libdir && $(realpath -m "$pc_libdir") == "$work/root/usr/lib/$multiarch" ]] ||
	fail "libpmemzclient.pc: libdir '$pc_libdir' is not /usr/lib/$multiarch"
ok "unit: ExecStart=$exec_start; ListenStream=$listen"

# The disk's template: nbdkit (the package's own, Debian's /usr/bin/nbdkit)
# runs the plugin on a socket under /run/pmemzerod, configured by
# /etc/pmemzerod/nbd/%i.conf; the plugin loads with the packaged library
# (every symbol resolved: nbdkit --dump-plugin dlopen()s it).
if [[ -n $nbd_plugindir ]]; then
	nbd_exec=$(sed -n 's/^ExecStart=//p' "$work/root$nbd_unit")
	read -r -a cmd <<<"$nbd_exec"
	# Debian's nbdkit is /usr/bin/nbdkit (the package's own list says so when installed)
	nbdkit_path=$(dpkg -L nbdkit 2>/dev/null | grep -E '^/usr/s?bin/nbdkit$' || true)
	nbdkit_path=${nbdkit_path%%$'\n'*}
	[[ ${cmd[0]} == "${nbdkit_path:-/usr/bin/nbdkit}" ]] ||
		fail "pmemzerod-nbd@.service runs ${cmd[0]}, not ${nbdkit_path:-/usr/bin/nbdkit}"
	[[ " $nbd_exec " == *" -U /run/pmemzerod/nbd/%i.sock "* && " $nbd_exec " == *" pmemz region=\${REGION} "* ]] ||
		fail "pmemzerod-nbd@.service: ExecStart=$nbd_exec"
	grep -qx 'EnvironmentFile=/etc/pmemzerod/nbd/%i.conf' "$work/root$nbd_unit" ||
		fail "pmemzerod-nbd@.service does not read /etc/pmemzerod/nbd/%i.conf"
	grep -Eqx 'REGION=[^ ]+' "$work/root/usr/share/doc/pmemzerod/examples/nbd-disk.conf" &&
		grep -Eqx 'SIZE=[^ ]+' "$work/root/usr/share/doc/pmemzerod/examples/nbd-disk.conf" ||
		fail "the example disk configuration sets no REGION= or SIZE="
	if command -v nbdkit >/dev/null; then
		if LD_LIBRARY_PATH="$work/root/usr/lib/$multiarch" nbdkit --dump-plugin \
			"$work/root$nbd_plugindir/nbdkit-pmemz-plugin.so" >"$work/dump-plugin" 2>&1 &&
			grep -qx 'name=pmemz' "$work/dump-plugin"; then
			ok "nbdkit loads the packaged plugin: $(grep -m1 '^version=' "$work/dump-plugin")"
		else
			fail "nbdkit cannot load the packaged plugin:"
			cat "$work/dump-plugin"
		fi
	else
		echo "note: nbdkit is not installed: the packaged plugin is not loaded"
	fi
	st=0
	"$src/tests/package/package-disk.sh" "$work/root" "$multiarch" "$nbd_plugindir" \
		"$work/disk" || st=$?
	((st == 0 || st == 77)) || fail "the packaged disk (above)"
	ok "disk unit: ExecStart=$nbd_exec"
fi

# ---- lintian ---------------------------------------------------------------------
# (--show-overrides would count the overridden tags: only to display them.)
if lintian --fail-on error,warning --display-info "$deb" >"$work/lintian.log" 2>&1; then
	ok "lintian: no error or warning"
	grep -E '^[EWI]: ' "$work/lintian.log" || true
else
	fail "lintian reports errors or warnings:"
	cat "$work/lintian.log"
fi
echo "lintian's reasoned overrides (packaging/deb/lintian-overrides):"
lintian --no-tag-display-limit --show-overrides "$deb" 2>/dev/null | grep '^O: ' || true

if ((fails)); then
	echo "$fails check(s) FAILED"
	exit 1
fi
echo "package test passed"
