# shellcheck shell=bash
# How the VM harness puts programs and their shared libraries into the
# guest's initramfs.  Sourced by tests/vm/run-vm-test and by
# tests/vm/check-guest-paths (ctest vm-harness-paths); expects ROOT (the
# initramfs tree being built) and a die function.
#
# The guest must not depend on host paths.  The build tree may be anywhere
# (under /tmp or /run, in a path with spaces, outside the source tree) and
# the guest's init mounts tmpfs on /tmp and /run, hiding whatever the
# initramfs held there: a library copied to its host path
# /tmp/x/build/client/libpmemzclient.so.1 for the build tree's RUNPATH was
# not there any more for the guest.  So every program goes to
# GUEST_BINDIR and every shared library of the programs' closures, from the
# build tree or the system, to GUEST_LIBDIR under the name the programs ask
# for (DT_NEEDED); tests/vm/guest-init puts GUEST_BINDIR first in PATH and
# exports LD_LIBRARY_PATH=GUEST_LIBDIR, which the loader searches before any
# RUNPATH (whose host directories do not exist in the guest).  Only the
# dynamic loader keeps its path: the kernel opens the program's PT_INTERP.
# check_guest_paths fails the run if any file lies where the guest mounts.

# Keep in sync with tests/vm/guest-init (PATH, LD_LIBRARY_PATH).
# shellcheck disable=SC2034 # used by those who source this file
GUEST_BINDIR=/vmtest/bin
GUEST_LIBDIR=/vmtest/lib

declare -A GUEST_COPIED=()

# guest_copy SRC DEST: SRC (symbolic links followed) to DEST in the guest,
# mode 0755; once per DEST, and two different files for one DEST are an error.
guest_copy() {
	local src=$1 dst=$2
	if [[ -n ${GUEST_COPIED[$dst]:-} ]]; then
		[[ ${GUEST_COPIED[$dst]} == "$src" ]] || cmp -s "$src" "$ROOT$dst" ||
			die "two different files for $dst in the guest: '${GUEST_COPIED[$dst]}' and '$src'"
		return 0
	fi
	GUEST_COPIED[$dst]=$src
	mkdir -p "$ROOT$(dirname "$dst")"
	cp -L "$src" "$ROOT$dst"
	chmod 0755 "$ROOT$dst"
}

# copy_closure ELF: the shared libraries ldd resolves for ELF (on the host,
# with its RUNPATH), each to GUEST_LIBDIR/NAME; the dynamic loader to its
# own path.  A static program has no closure.
copy_closure() {
	local src=$1 line name lib
	while read -r line; do
		case $line in
		*'=> not found'*) die "$src: ${line%% *} not found by ldd" ;;
		*' => /'*)
			name=${line%% => *}
			lib=${line#* => }
			lib=${lib% (0x*}
			[[ $name != */* ]] || name=${name##*/}
			guest_copy "$lib" "$GUEST_LIBDIR/$name"
			;;
		/*) guest_copy "${line% (0x*}" "${line% (0x*}" ;; # the dynamic loader
		esac
	done < <(ldd "$src" 2>/dev/null || true)
}

# add_binary SRC DEST: a program (ELF with its closure, or a script whose
# interpreter the guest has: busybox sh) to DEST, normally GUEST_BINDIR/NAME.
add_binary() {
	local src=$1 dst=$2 magic
	[[ -f $src && -x $src ]] || die "binary '$src' not found or not executable"
	magic=$(LC_ALL=C od -An -c -N4 "$src" | tr -d ' ')
	case $magic in
	'177ELF') ;;
	'#!'*) ;;
	*) die "'$src' is neither an ELF executable nor a script" ;;
	esac
	guest_copy "$src" "$dst"
	[[ $magic != '177ELF' ]] || copy_closure "$src"
}

# guest_mount_points INIT...: the directories the guest's init scripts
# mount on: the last operand of every `mount` command line; a stage-1 init
# that prepares the real root in /newroot mounts the guest's X on /newroot/X.
guest_mount_points() {
	awk '$1 == "mount" {
		d = ""
		for (i = 2; i <= NF; i++) {
			if ($i ~ /^(\|\||&&|;|[0-9]?[<>])/) break
			d = $i
		}
		sub(/^\/newroot/, "", d)
		if (d ~ /^\//) print d
	}' "$@" | LC_ALL=C sort -u
}

# check_guest_paths TREE INIT...: dies naming every file of the initramfs
# TREE that lies on or under a directory INIT mounts over (the guest would
# not see it).
check_guest_paths() {
	local tree=$1 m hidden=()
	shift
	while read -r m; do
		[[ -e $tree$m ]] || continue
		while IFS= read -r -d '' f; do
			hidden+=("${f#"$tree"}")
		done < <(find "$tree$m" -mindepth 1 -print0)
	done < <(guest_mount_points "$@")
	if ((${#hidden[@]})); then
		printf '  %s\n' "${hidden[@]}" >&2
		die "${#hidden[@]} file(s) copied into the guest where its init ($(printf '%s ' "${@##*/}")) mounts over them: the guest cannot see them"
	fi
}
