#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# check-versions.sh --project X.Y.Z --library A.B.C (--root DIR | --install BUILD_DIR)
#                   [--deb FILE] [--source SRC_DIR]
#
# Every version number an installed pmemzerod states is the one CMake was
# given: the project's (project(... VERSION) in CMakeLists.txt) or
# libpmemzclient's (PMEMZ_CLIENT_VERSION).  DIR is an installed tree (a
# DESTDIR, or an unpacked .deb); with --install, BUILD_DIR is installed
# into a temporary DESTDIR first (cmake --install).  Checked:
#  - the installed header alone (pkg-config --cflags into DIR) compiles and
#    says A.B.C in PMEMZ_CLIENT_MAJOR/_MINOR/_PATCH and PMEMZ_CLIENT_VERSION;
#    linked against DIR's library, pmemz_library_version() says A.B.C and
#    pmemz_check_version(A, B) accepts it;
#  - the shared object is libpmemzclient.so.A.B.C, its soname
#    libpmemzclient.so.A, its newest symbol node LIBPMEMZCLIENT_A.B;
#  - pkg-config --modversion libpmemzclient, from DIR's .pc file: A.B.C;
#  - pmemzctl --version: "pmemzctl X.Y.Z (libpmemzclient A.B.C)", with
#    DIR's library loaded; pmemzerod --version: "pmemzerod X.Y.Z";
#  - the .TH line of every man page: "pmemzerod X.Y.Z", libpmemzclient(3)'s
#    "libpmemzclient A.B.C";
#  - nbdkit-pmemz-plugin, when installed: the libpmemzclient its man page
#    says it needs is the newest symbol node it links against, no newer
#    than A.B; nbdkit --dump-plugin (when nbdkit is there) says X.Y.Z and
#    loads A.B.C;
#  - --deb: the package's Version and its changelog's: X.Y.Z;
#  - --source: the first release SRC_DIR/NEWS.md describes, and the image
#    tag of every pmemzerod image deploy/kubernetes/ runs: X.Y.Z.
# Exits 77 when cc, readelf or pkg-config is missing.
set -euo pipefail

usage() {
	echo "usage: $0 --project X.Y.Z --library A.B.C (--root DIR | --install BUILD_DIR) [--deb FILE] [--source SRC_DIR]" >&2
	exit 2
}

project="" library="" root="" install="" deb="" src=""
while (($#)); do
	(($# > 1)) || usage
	case $1 in
	--project) project=$2 ;;
	--library) library=$2 ;;
	--root) root=$2 ;;
	--install) install=$2 ;;
	--deb) deb=$2 ;;
	--source) src=$2 ;;
	*) usage ;;
	esac
	shift 2
done
[[ $project =~ ^[0-9]+\.[0-9]+\.[0-9]+$ && $library =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || usage
[[ -n $root || -n $install ]] || usage
lib_major=${library%%.*}
lib_minor=${library#*.}
lib_minor=${lib_minor%%.*}

cc=${CC:-cc}
for tool in "$cc" readelf pkg-config; do
	command -v "$tool" >/dev/null || {
		echo "SKIP: $tool is not installed: the version numbers are NOT checked"
		exit 77
	}
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [[ -n $install ]]; then
	root=$tmp/destdir
	DESTDIR=$root cmake --install "$install" >"$tmp/install.log" 2>&1 || {
		cat "$tmp/install.log"
		echo "FAIL: cmake --install $install"
		exit 1
	}
fi
[[ -d $root ]] || {
	echo "FAIL: no installed tree at $root"
	exit 1
}

fails=0
fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}
ok() { echo "ok: $*"; }
# same WHAT GOT WANT
same() {
	if [[ $2 == "$3" ]]; then ok "$1: $2"; else fail "$1: '$2', want '$3'"; fi
}

# found=the one file of the tree matching a find expression (else a failure, and "").
found=
one() {
	local what=$1 list
	shift
	found=
	list=$(find "$root" "$@" 2>/dev/null | sort)
	if [[ -z $list ]]; then
		fail "no $what in $root"
	elif [[ $(wc -l <<<"$list") -ne 1 ]]; then
		fail "more than one $what in $root: $(tr '\n' ' ' <<<"$list")"
	else
		found=$list
	fi
}

one "libpmemzclient.pc" -name libpmemzclient.pc
pc=$found
[[ -n $pc ]] || exit 1
libdir=$(dirname "$(dirname "$pc")")
PKG_CONFIG_PATH=$(dirname "$pc")
export PKG_CONFIG_PATH LD_LIBRARY_PATH=$libdir

# The newest LIBPMEMZCLIENT_ node an ELF file defines or needs (MAJOR.MINOR).
newest_node() {
	readelf -V "$1" | sed -n 's/.*Name: LIBPMEMZCLIENT_\([0-9]*\.[0-9]*\).*/\1/p' |
		sort -t. -k1,1n -k2,2n | tail -n1
}

# ---- pkg-config ------------------------------------------------------------
same "pkg-config --modversion libpmemzclient" "$(pkg-config --modversion libpmemzclient)" "$library"

# ---- the shared object -------------------------------------------------------
one "libpmemzclient.so.*.*.*" -name 'libpmemzclient.so.*.*.*' -type f
so=$found
if [[ -n $so ]]; then
	same "shared object" "$(basename "$so")" "libpmemzclient.so.$library"
	same "soname" "$(readelf -d "$so" | sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p')" \
		"libpmemzclient.so.$lib_major"
	# an API addition bumps the minor and adds its node
	same "newest symbol node" "LIBPMEMZCLIENT_$(newest_node "$so")" \
		"LIBPMEMZCLIENT_$lib_major.$lib_minor"
fi

# ---- the installed header, alone, and the library it links ------------------
cat >"$tmp/v.c" <<'EOF'
#include <stdio.h>
#include <libpmemzclient.h>

int main(void)
{
	const char *why = pmemz_check_version(PMEMZ_CLIENT_MAJOR, PMEMZ_CLIENT_MINOR);

	printf("%d.%d.%d %s %s %s\n", PMEMZ_CLIENT_MAJOR, PMEMZ_CLIENT_MINOR, PMEMZ_CLIENT_PATCH,
	       PMEMZ_CLIENT_VERSION, pmemz_library_version(), why ? "refused" : "accepted");
	return 0;
}
EOF
# shellcheck disable=SC2046 # pkg-config's words are separate arguments
if "$cc" -o "$tmp/v" "$tmp/v.c" $(pkg-config --cflags --libs libpmemzclient) 2>"$tmp/cc.log"; then
	read -r macros string loaded check < <("$tmp/v") || true
	same "header PMEMZ_CLIENT_MAJOR.MINOR.PATCH" "$macros" "$library"
	same "header PMEMZ_CLIENT_VERSION" "$string" "$library"
	same "pmemz_library_version()" "$loaded" "$library"
	same "pmemz_check_version(PMEMZ_CLIENT_MAJOR, PMEMZ_CLIENT_MINOR)" "$check" accepted
else
	cat "$tmp/cc.log"
	fail "the installed header and library do not build a program (pkg-config --cflags --libs)"
fi

# ---- the programs --------------------------------------------------------------
one "pmemzctl" -type f -name pmemzctl -path '*/bin/*'
ctl=$found
if [[ -n $ctl ]]; then
	same "pmemzctl --version" "$("$ctl" --version 2>&1 || true)" \
		"pmemzctl $project (libpmemzclient $library)"
	# ldd's whole output first: under pipefail, grep -q leaving early
	# would fail the pipeline with ldd's SIGPIPE, now and then.
	loads=$(ldd "$ctl" 2>&1 || true)
	if grep -q "libpmemzclient.so.$lib_major => $libdir/" <<<"$loads"; then
		ok "pmemzctl loads $libdir/libpmemzclient.so.$lib_major"
	else
		fail "pmemzctl does not load the installed library: $(grep pmemzclient <<<"$loads")"
	fi
fi
one "pmemzerod" -type f -name pmemzerod -path '*/sbin/*'
daemon=$found
if [[ -n $daemon ]]; then
	same "pmemzerod --version" "$("$daemon" --version 2>&1 || true)" "pmemzerod $project"
fi

# ---- man pages -------------------------------------------------------------------
th() {
	case $1 in
	*.gz) zcat "$1" ;;
	*) cat "$1" ;;
	esac | grep -m1 '^\.TH '
}
pages=0
while IFS= read -r page; do
	name=$(basename "$page" .gz)
	# the alias pages of the functions (.so man3/libpmemzclient.3) have no .TH
	case $name in libpmemzclient.3) want="libpmemzclient $library" ;; pmemz_*.3) continue ;; *) want="pmemzerod $project" ;; esac
	line=$(th "$page" || true)
	if [[ $line == *"\"$want\""* ]]; then
		pages=$((pages + 1))
	else
		fail "$name: '$line' does not say \"$want\""
	fi
done < <(find "$root" -path '*/man/man[1-8]/*' -type f | sort)
if ((pages >= 4)); then
	ok "$pages man pages say their version in .TH"
else
	fail "only $pages man pages with a version (pmemzctl.1, pmemzerod.8, pmemzerod.conf.5, libpmemzclient.3 at least)"
fi

# ---- nbdkit-pmemz-plugin: what it needs, what it loads ----------------------------
plugin=$(find "$root" -type f -name nbdkit-pmemz-plugin.so | head -n1)
if [[ -n $plugin ]]; then
	linked=$(newest_node "$plugin")
	man=$(find "$root" -path '*/man1/nbdkit-pmemz-plugin.1*' -type f | head -n1)
	needs=
	if [[ -n $man ]]; then
		needs=$(case $man in *.gz) zcat "$man" ;; *) cat "$man" ;; esac | tr '\n' ' ' |
			sed -n 's/.*needs libpmemzclient \([0-9]*\.[0-9]*\).*/\1/p')
	fi
	if [[ -z $needs ]]; then
		fail "nbdkit-pmemz-plugin(1) does not say which libpmemzclient it needs"
	elif [[ $needs != "$linked" ]]; then
		fail "nbdkit-pmemz-plugin(1) says it needs libpmemzclient $needs; it links LIBPMEMZCLIENT_$linked"
	elif [[ $(printf '%s\n' "$needs" "$lib_major.$lib_minor" | sort -t. -k1,1n -k2,2n | tail -n1) != "$lib_major.$lib_minor" ]]; then
		fail "nbdkit-pmemz-plugin needs libpmemzclient $needs, newer than $library"
	else
		ok "nbdkit-pmemz-plugin needs libpmemzclient $needs (its man page, its symbol versions)"
	fi
	if command -v nbdkit >/dev/null; then
		nbdkit --dump-plugin "$plugin" >"$tmp/dump" 2>&1 || true
		if grep -qx "version=$project" "$tmp/dump" && grep -qx "pmemz_client_loaded=$library" "$tmp/dump"; then
			ok "nbdkit --dump-plugin: version=$project, pmemz_client_loaded=$library"
		else
			fail "nbdkit --dump-plugin: want version=$project and pmemz_client_loaded=$library:"
			cat "$tmp/dump"
		fi
	fi
fi

# ---- the package, the release notes ------------------------------------------------
if [[ -n $deb ]]; then
	same ".deb Version" "$(dpkg-deb -f "$deb" Version)" "$project"
	changelog=$(find "$root" -path '*/doc/pmemzerod/changelog.gz' | head -n1)
	first=
	[[ -z $changelog ]] || first=$(zcat "$changelog" | head -n1)
	same "the package's changelog" "${first%% unstable*}" "pmemzerod ($project)"
fi
if [[ -n $src ]]; then
	same "the first release of NEWS.md" \
		"$(sed -n 's/^## \([0-9][0-9.]*\).*/\1/p' "$src/NEWS.md" | head -n1)" "$project"
	same "the image tags of deploy/kubernetes" "$(sed -n 's/.*image: *[^ ]*\/pmemzerod:\([^ ]*\).*/\1/p' \
		"$src"/deploy/kubernetes/*.yaml | sort -u | paste -sd' ')" "$project"
fi

if ((fails)); then
	echo "$fails version check(s) FAILED"
	exit 1
fi
echo "every version number agrees: pmemzerod $project, libpmemzclient $library"
