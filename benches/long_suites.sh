#!/usr/bin/env bash
# The long suites in full, which CI runs in short versions (tox.ini; docs/testing.md): the Java
# client suite with TransactionTest on one broker too (CI leaves it to the three-broker cluster
# room), AFL++ over the protocol decoders for FUZZ_SECONDS per target (default 600; CI: 10), load
# shedding with both strategies (CI: AvgShedder, the default), and the Rust load soak (1 000
# connections, 10 000 producers) for LOAD_SECS (default 300; CI: 15).
# Run from an environment with the package and its `test` extras installed (as tox's); extra
# arguments go to pytest. Exits non-zero when any test fails.
set -euo pipefail
cd "$(dirname "$0")/.."
PULSAR_RS_LOAD_SECS="${LOAD_SECS:-300}" cargo test --release --locked -p pulsar-rs-server --test load
cd tests
export PULSAR_RS_FULL_SUITES=1
export PULSAR_RS_FUZZ_SECONDS="${FUZZ_SECONDS:-600}"
exec python3 -m pytest -p no:cacheprovider --durations=20 \
    java/test_java_client.py fuzz/test_afl.py cluster/test_load_shedding.py "$@"
