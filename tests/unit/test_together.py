"""tools/together.py, which tox.ini uses to run the Rust tests beside the slow room: a failure of
either command fails the pair, and the background command's output is printed after the
foreground's, whole."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

TOGETHER = Path(__file__).resolve().parents[2] / "tools" / "together.py"


def together(tmp_path: Path, background: str, foreground: str) -> subprocess.CompletedProcess[str]:
    log = tmp_path / "bg.log"
    bg = [sys.executable, "-c", background]
    fg = [sys.executable, "-c", foreground]
    return subprocess.run(
        [sys.executable, TOGETHER, "--log", log, "--", *bg, ":::", *fg],
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("background", "foreground", "rc"),
    [
        ("print('bg')", "print('fg')", 0),
        ("raise SystemExit(3)", "print('fg')", 3),
        ("print('bg')", "raise SystemExit(4)", 4),
        ("raise SystemExit(3)", "raise SystemExit(4)", 4),
    ],
)
def test_either_failure_fails_the_pair(tmp_path: Path, background: str, foreground: str, rc: int) -> None:
    assert together(tmp_path, background, foreground).returncode == rc


def test_the_background_output_follows_the_foreground_whole(tmp_path: Path) -> None:
    # The background finishes last (it sleeps), and its output still comes after the foreground's.
    r = together(tmp_path, "import time; time.sleep(1); print('bg-1'); print('bg-2')", "print('fg-1')")
    assert r.returncode == 0
    out = r.stdout
    assert out.index("fg-1") < out.index("bg-1") < out.index("bg-2"), out
    assert "background exit 0, foreground exit 0" in out


def test_a_command_line_without_two_commands_is_refused(tmp_path: Path) -> None:
    r = subprocess.run(
        [sys.executable, TOGETHER, "--log", tmp_path / "bg.log", "--", "true"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode != 0
    assert "BACKGROUND ... ::: FOREGROUND" in r.stderr
