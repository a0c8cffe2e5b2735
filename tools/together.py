"""Runs a foreground command while a background one runs beside it, and fails if either fails.

    python tools/together.py --log LOG -- BACKGROUND ... ::: FOREGROUND ...

tox.ini runs the Rust workspace tests (already built) in the background while the slow pytest room
runs in the foreground: both mostly wait (on ZooKeeper, bookies, JVMs, timers), so on two cores the
pair takes about the time of the longer one. The background command's output goes to LOG and is
printed after the foreground command ends (so the two never interleave), with its exit status and
time; the exit status is the foreground's, or the background's when the foreground passed.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

SEPARATOR = ":::"


def split(argv: list[str]) -> tuple[list[str], list[str]]:
    """The two commands of ``BACKGROUND ... ::: FOREGROUND ...``; both must be non-empty."""
    if SEPARATOR not in argv:
        raise SystemExit(f"together: expected BACKGROUND ... {SEPARATOR} FOREGROUND ...")
    i = argv.index(SEPARATOR)
    background, foreground = argv[:i], argv[i + 1 :]
    if not background or not foreground:
        raise SystemExit("together: both commands must be given")
    return background, foreground


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log", type=Path, required=True, help="where the background command's output goes")
    parser.add_argument("commands", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    commands = args.commands[1:] if args.commands[:1] == ["--"] else args.commands
    background, foreground = split(commands)
    args.log.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    with args.log.open("wb") as log:
        bg = subprocess.Popen(background, stdout=log, stderr=subprocess.STDOUT)
        try:
            fg_rc = subprocess.call(foreground)
        finally:
            # The foreground has ended (or we are interrupted): wait for the background to finish.
            bg_rc = bg.wait()
    elapsed = time.monotonic() - t0
    sys.stdout.write(f"\n=== together: {' '.join(background)} (output {args.log}) ===\n")
    sys.stdout.write(args.log.read_text(errors="replace"))
    sys.stdout.write(
        f"=== together: background exit {bg_rc}, foreground exit {fg_rc}, both done after {elapsed:.0f} s ===\n"
    )
    sys.stdout.flush()
    return fg_rc if fg_rc != 0 else bg_rc


if __name__ == "__main__":
    sys.exit(main())
