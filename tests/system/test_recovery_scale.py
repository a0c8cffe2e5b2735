"""CI-sized run of benches/recovery_scale.py: a few hundred topics filled, the broker restarted
twice (once scanning and indexing the journal, once reading only the checkpointed index), random
topics looked up with the official client and checked to serve their first entry, and the offline
export checked to see every topic. No timing is asserted: the figures are in benches/RESULTS.md."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _built() -> None:
    """The workspace's binaries and examples, with the features `cargo test --release --locked
    --workspace` resolves (tox.ini): after it, a no-op. (`-p pulsar-rs-server` alone resolves the
    features for that crate only and rebuilds some 70 crates: four minutes of CI.)"""
    cmd = ["cargo", "build", "--release", "--locked", "--quiet", "--workspace", "--bins", "--examples"]
    subprocess.run(cmd, cwd=REPO, check=True)


# The larger budget only matters when the sources changed since the last build.
@pytest.mark.timeout(900)
def test_recovery_scale_small(tmp_path):
    _built()
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target")) / "release"
    export = shutil.which("pulsar-rs") or str(Path(sys.executable).parent / "pulsar-rs")
    res = subprocess.run(
        [
            sys.executable,
            str(REPO / "benches" / "recovery_scale.py"),
            "--topics",
            "300",
            "--entries",
            "3",
            "--size",
            "256",
            "--lookups",
            "5",
            "--work",
            str(tmp_path),
            "--server",
            str(target / "pulsar-rs-server"),
            "--fill",
            str(target / "examples" / "fill_topics"),
            "--export",
            export,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    lines = [json.loads(line) for line in res.stdout.splitlines() if line.startswith("{")]
    summary = lines[-1]
    assert summary["measure"] == "summary" and summary["topics"] == 300
    assert [r["server"] for r in summary["restarts"]] == ["new", "new-again"]
    assert all(r["lookups"] == 5 for r in summary["restarts"])
    journal = tmp_path / "data" / "journal"
    logs = sorted(p.stem for p in journal.glob("*.log") if p.stat().st_size > 0)
    idx = sorted(p.stem for p in journal.glob("*.idx"))
    assert logs and set(logs) <= set(idx), f"segments without index: {set(logs) - set(idx)}"
