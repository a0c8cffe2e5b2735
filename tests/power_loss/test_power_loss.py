"""A quick run of the power-loss harness (``tests/power_loss/run``): a real power cut of the real
broker on powerfs, the FUSE file system that drops everything not fsynced.

Two rounds with ``journalSyncData=true`` must lose no receipted message; one round with
``journalSyncData=false`` must report loss, which shows the harness can fail.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

RUN = Path(__file__).resolve().parent / "run"
SUMMARY = re.compile(r"^power-loss: (\d+) rounds, (\d+) receipted, (\d+) lost$")

pytestmark = [
    pytest.mark.skipif(not os.path.exists("/dev/fuse"), reason="no /dev/fuse: FUSE is unavailable here"),
    pytest.mark.timeout(180),
]


def run(*args: str) -> tuple[int, int, int, subprocess.CompletedProcess[str]]:
    assert shutil.which("fusermount3"), "fusermount3 missing: .ci/run installs the fuse3 package"
    proc = subprocess.run([sys.executable, str(RUN), *args], capture_output=True, text=True, timeout=170, check=False)
    lines = proc.stdout.strip().splitlines()
    m = SUMMARY.match(lines[-1]) if lines else None
    assert m, f"no summary line (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr[-3000:]}"
    rounds, receipted, lost = (int(g) for g in m.groups())
    return rounds, receipted, lost, proc


def test_power_cut_loses_no_receipted_message() -> None:
    rounds, receipted, lost, proc = run("--rounds", "2", "--max-receipts", "2000", "--verbose")
    assert rounds == 2
    assert receipted > 0, proc.stdout
    assert lost == 0, proc.stdout
    assert proc.returncode == 0


def test_power_cut_without_journal_sync_reports_loss() -> None:
    rounds, receipted, lost, proc = run("--rounds", "1", "--no-sync")
    assert rounds == 1
    assert receipted > 0, proc.stdout
    assert lost > 0, f"journalSyncData=false lost nothing: the harness cannot see loss\n{proc.stdout}"
    assert proc.returncode == 1
