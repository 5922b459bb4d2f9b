#!/usr/bin/env bash
# gen-corpus.sh GEN-CORPUS-BINARY — regenerate tests/fuzz/corpus/*/seed-*.
#
# The binary is fuzz-gen-corpus of a normal (gcc) build:
#   cmake --build build --target fuzz-gen-corpus
#   tests/fuzz/gen-corpus.sh build/fuzz-gen-corpus
# Regression inputs (regress-*) stay.  The configuration seeds are the
# golden configurations (tests/golden/*.conf) and the shipped example.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
gen=$1
corpus=$here/corpus

find "$corpus" -type f -name 'seed-*' -delete 2>/dev/null || true
mkdir -p "$corpus/config"
for f in "$here"/../golden/*.conf "$here"/../../etc/pmemzerod.conf; do
	cp "$f" "$corpus/config/seed-$(basename "$f")"
done
"$gen" "$corpus"
