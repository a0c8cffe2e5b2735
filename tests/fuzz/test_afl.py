"""A short AFL++ run over the binary protocol's decoders (``fuzz/``, ``tools/fuzz_afl``).

Each target (a socket's frames, stored entries with their codecs and batches, the codecs alone)
is fuzzed for ``PULSAR_RS_FUZZ_SECONDS`` (10 by default: CI's short form) from the seed corpus of real frames plus
whatever earlier runs on this machine found. Any crash or hang fails the test; the inputs are
kept in ``fuzz/findings/``. ``benches/fuzz.sh`` runs the same targets longer.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tools import fuzz_afl

SECONDS = int(os.environ.get("PULSAR_RS_FUZZ_SECONDS", "10"))


@pytest.mark.slow  # 6 s here with the crate built, a few minutes on a clean checkout
@pytest.mark.timeout(1800)
def test_the_seeds_reach_the_decoders():
    """The fuzz crate's own tests, without AFL: each seed decodes through its target."""
    if shutil.which("cargo") is None:
        pytest.skip("no cargo to build the fuzz targets with")
    subprocess.run(["cargo", "test", "--release", "--locked"], cwd=fuzz_afl.FUZZ, check=True)


@pytest.mark.slow  # about 30 s here (3 targets x 10 s), plus installing cargo-afl on a first run
@pytest.mark.timeout(1800 + 3 * SECONDS)
def test_afl_finds_no_crash_or_hang_in_the_protocol_decoders():
    if shutil.which("cargo") is None:
        pytest.skip("no cargo to build the fuzz targets with")
    results = fuzz_afl.run(SECONDS)
    for r in results:
        assert r.execs > 1000, f"{r.target} barely ran: {r.execs} executions"
    found = {r.target: [str(p) for p in r.crashes + r.hangs] for r in results}
    assert not any(found.values()), f"AFL found inputs that crash or hang: {found}"
