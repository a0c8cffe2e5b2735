"""The Rust workspace's own tests, ``cargo test --release --locked --workspace`` (every crate,
the PyO3 crate's included), as one group of the slow pytest room.

tox.ini builds them beside the quick room (``--no-run``); they run here, on one of the room's
pytest-xdist workers while the others take the room's other groups. Half of their time is spent
waiting on ZooKeeper, bookies, etcd and S3Proxy to start (their CPU use over the run: about one
core of two), so beside the room they cost less than after it. ``worker_groups.LONGEST_FIRST``
starts them first. Their output's end, and every failed test's lines, are in a failure's report.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
#: cargo's summary line of one test binary.
RESULT = re.compile(r"^test result: (\w+)\. (\d+) passed;", re.M)


@pytest.mark.timeout(1800)
def test_the_rust_workspace_tests_pass() -> None:
    if shutil.which("cargo") is None:
        pytest.skip("no cargo: the Rust workspace's tests need a Rust toolchain")
    cmd = ["cargo", "test", "--release", "--locked", "--workspace"]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, check=False)
    out = proc.stdout + proc.stderr
    failed = [line for line in out.splitlines() if re.search(r"FAILED|panicked|^error", line)]
    results = RESULT.findall(proc.stdout)
    assert proc.returncode == 0, (
        f"`{' '.join(cmd)}` exited {proc.returncode}:\n" + "\n".join(failed[-80:]) + "\n...\n" + out[-8000:]
    )
    assert results and all(r[0] == "ok" for r in results), out[-8000:]
    passed = sum(int(r[1]) for r in results)
    assert passed >= 500, f"only {passed} Rust tests passed: a partial run\n{out[-4000:]}"
    print(f"{len(results)} test binaries, {passed} tests passed")
