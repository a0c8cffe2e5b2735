#!/usr/bin/env bash
# A longer AFL++ run over the binary protocol's decoders (fuzz/): SECONDS per target (default
# 1800). Installs cargo-afl when missing, keeps the grown corpus in fuzz/out/ between runs, and
# exits 1 with the inputs in fuzz/findings/ if anything crashed or hung. CI runs 10 s per target
# (tests/fuzz/test_afl.py).
set -euo pipefail
cd "$(dirname "$0")/.."
exec nice -n 10 python3 -m tools.fuzz_afl --seconds "${SECONDS_PER_TARGET:-1800}" "$@"
