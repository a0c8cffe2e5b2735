"""Transactions through a power cut and a SIGKILL of the real broker (``tests/power_loss/txn_run``):
consume-transform-produce transactions on the raw wire, the broker killed shortly after an END_TXN
goes out, then restarted on what survived.

Two rounds (one power cut, one SIGKILL) with ``journalSyncData=true`` must show no violation: an
answered commit entirely visible (messages and acknowledgements), an answered abort or a transaction
never ended entirely invisible, one in doubt all or nothing, no input message lost. One power-cut
round with ``journalSyncData=false`` must report violations, which shows the checks can fail.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

RUN = Path(__file__).resolve().parent / "txn_run"
SUMMARY = re.compile(r"^txn-power-loss: (\d+) rounds, (\d+) ended, (\d+) committed, (\d+) violations$")

pytestmark = [
    pytest.mark.skipif(not os.path.exists("/dev/fuse"), reason="no /dev/fuse: FUSE is unavailable here"),
    pytest.mark.timeout(240),
]


def run(*args: str) -> tuple[int, int, int, subprocess.CompletedProcess[str]]:
    assert shutil.which("fusermount3"), "fusermount3 missing: .ci/run installs the fuse3 package"
    proc = subprocess.run([sys.executable, str(RUN), *args], capture_output=True, text=True, timeout=230, check=False)
    lines = proc.stdout.strip().splitlines()
    m = SUMMARY.match(lines[-1]) if lines else None
    assert m, f"no summary line (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr[-3000:]}"
    ended, committed, violations = (int(g) for g in m.groups()[1:])
    return ended, committed, violations, proc


def test_transactions_survive_power_cut_and_sigkill() -> None:
    ended, committed, violations, proc = run("--rounds", "2", "--alternate", "--verbose")
    assert committed > 0 and ended > committed, proc.stdout  # commits and aborts both answered
    assert violations == 0, proc.stdout
    assert proc.returncode == 0


def test_transactions_without_journal_sync_report_violations() -> None:
    ended, _committed, violations, proc = run("--rounds", "1", "--no-sync")
    assert ended > 0, proc.stdout
    assert violations > 0, f"journalSyncData=false showed nothing: the checks cannot fail\n{proc.stdout}"
    assert proc.returncode == 1
