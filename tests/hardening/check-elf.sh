#!/usr/bin/env bash
# check-elf.sh ELF exe|lib X86(0|1) FORTIFY(0|1) CC
#
# Fails unless ELF was built hardened:
#   exe: ELF type DYN with DT_FLAGS_1 PIE (a position-independent executable)
#   GNU_RELRO segment and BIND_NOW (full RELRO: -Wl,-z,relro,-z,now)
#   __stack_chk_fail referenced (-fstack-protector-strong)
#   FORTIFY=1: fortified *_chk functions imported (_FORTIFY_SOURCE >= 2)
#   X86=1: -fcf-protection: an endbr64 at the entry of main (exe) or of an
#          exported function (lib), and the IBT and SHSTK property note
#          whenever the C library's startup files carry it (Debian 12's do
#          not: no linked program there can have the note)
#   lib: no getenv imported (secure_getenv only: setuid callers)
set -uo pipefail
elf=$1
kind=$2
x86=$3
fortify=$4
cc=$5
fail=0

ok() { echo "ok: $*"; }
bad() {
	echo "FAIL: $*" >&2
	fail=1
}

for tool in readelf nm objdump; do
	command -v "$tool" >/dev/null || {
		echo "SKIP: $tool not installed (binutils)"
		exit 77
	}
done
[[ -f $elf ]] || {
	bad "$elf does not exist"
	exit 1
}
echo "== $elf ($kind)"

header=$(readelf -hW "$elf")
dynamic=$(readelf -dW "$elf")
segments=$(readelf -lW "$elf")
dynsyms=$(nm -D "$elf")

if grep -Eq 'Type:[[:space:]]+DYN' <<<"$header"; then ok "type DYN"; else bad "ELF type is not DYN"; fi
if [[ $kind == exe ]]; then
	if grep -Eq 'FLAGS_1.*\bPIE\b' <<<"$dynamic"; then ok "FLAGS_1 PIE"; else bad "no DT_FLAGS_1 PIE: not a PIE"; fi
fi
if grep -q 'GNU_RELRO' <<<"$segments"; then ok "GNU_RELRO"; else bad "no GNU_RELRO segment (-z relro)"; fi
if grep -Eq '\(FLAGS\).*BIND_NOW|FLAGS_1.*\bNOW\b' <<<"$dynamic"; then ok "BIND_NOW"; else bad "no BIND_NOW (-z now)"; fi
if grep -Eq ' U __stack_chk_fail(@|$)' <<<"$dynsyms"; then ok "__stack_chk_fail"; else bad "__stack_chk_fail not referenced (-fstack-protector-strong)"; fi
if ((fortify)); then
	chk=$(grep -Eo ' U __[a-z_]+_chk(@|$)' <<<"$dynsyms" | tr -d ' U@' | sort -u | tr '\n' ' ')
	if [[ -n $chk ]]; then ok "fortified: $chk"; else bad "no *_chk function imported (_FORTIFY_SOURCE)"; fi
fi
if [[ $kind == lib ]]; then
	if grep -Eq ' U getenv(@|$)' <<<"$dynsyms"; then bad "imports getenv: use secure_getenv"; else ok "no getenv"; fi
fi

if ((x86)); then
	if [[ $kind == exe ]]; then
		fn=main
	else
		fn=$(nm -D --defined-only "$elf" | awk '$2 == "T" { sub(/@.*/, "", $3); print $3; exit }')
	fi
	first=$(objdump -d --no-show-raw-insn "$elf" --disassemble="$fn" 2>/dev/null |
		awk '/^[0-9a-f]+ <.*>:$/ { getline; print; exit }')
	if [[ $first == *endbr64* ]]; then ok "endbr64 at $fn"; else bad "$fn does not start with endbr64 (-fcf-protection): '$first'"; fi
	notes=$(readelf -nW "$elf")
	crti=$("$cc" -print-file-name=crti.o)
	if [[ -f $crti ]] && readelf -nW "$crti" | grep -q 'x86 feature:.*IBT.*SHSTK'; then
		if grep -q 'x86 feature:.*IBT.*SHSTK' <<<"$notes"; then
			ok "IBT, SHSTK property note"
		else
			bad "no IBT/SHSTK property note though the startup files have it: an object lacks -fcf-protection"
		fi
	else
		echo "note: $crti has no IBT/SHSTK property, so no program linked here has it; endbr64 checked instead"
	fi
fi
exit "$fail"
