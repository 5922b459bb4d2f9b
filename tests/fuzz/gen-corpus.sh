#!/usr/bin/env bash
# gen-corpus.sh GEN-CORPUS-BINARY — regenerate tests/fuzz/corpus/*/seed-*.
#
# The binary is fuzz-gen-corpus of a normal (gcc) build:
#   cmake --build build --target fuzz-gen-corpus
#   tests/fuzz/gen-corpus.sh build/tests/fuzz-gen-corpus
# Regression inputs (regress-*) and inputs merged from long fuzzing runs
# (found-*: fuzz-NAME -merge=1) stay.  The configuration seeds are the
# golden configurations (tests/golden/*.conf), the shipped example, and
# the golden command lines' --region specs (NAME.args) after a NUL, with
# NAME.conf when there is one (fuzz-config's input format).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
gen=$1
corpus=$here/corpus

find "$corpus" -type f -name 'seed-*' -delete 2>/dev/null || true
mkdir -p "$corpus/config"
for f in "$here"/../golden/*.conf "$here"/../../etc/pmemzerod.conf; do
	cp "$f" "$corpus/config/seed-$(basename "$f")"
done
for f in "$here"/../golden/*.args; do
	name=$(basename "$f" .args)
	conf=${f%.args}.conf
	{
		if [[ -f $conf ]]; then cat "$conf"; fi
		# fuzz-config takes up to two specs, NUL separated, after a NUL.
		{ grep -A1 -e '^--region$' "$f" || true; } | { grep -v -e '^--region$' -e '^--$' || true; } |
			head -n 2 | while IFS= read -r spec; do printf '\0%s' "$spec"; done
	} >"$corpus/config/seed-$name.args"
done
"$gen" "$corpus"
