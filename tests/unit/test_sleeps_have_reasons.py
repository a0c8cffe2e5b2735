"""Every sleep in the Python suite and package says why it sleeps (issue 32, "one clock").

A wait for the broker's time to pass (a TTL, an expiry by age, an inactivity or retention limit)
advances a :class:`pulsar_rs.ManualClock` instead; what still sleeps waits for something the clock
cannot move (clients stamping times with the real clock, a real-time schedule, an external process,
asynchronous deliveries, a poll) and says so in a comment on the same line or the line above.
"""

from __future__ import annotations

import io
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("tests", "python")


def unexplained_sleeps(source: str) -> list[int]:
    """The lines of ``source`` calling ``sleep(`` (``time.sleep``, ``asyncio.sleep``, a bare
    ``sleep``) with no comment on that line nor a comment line directly above. Tokens, not text:
    a ``sleep(`` inside a string or a comment is no call, and ``def sleep(`` is a definition."""
    lines = source.splitlines()
    tokens = [t for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type != tokenize.NL]
    commented = {t.start[0] for t in tokens if t.type == tokenize.COMMENT}
    found = []
    for i, tok in enumerate(tokens[:-1]):
        if tok.type != tokenize.NAME or tok.string != "sleep":
            continue
        after = tokens[i + 1]
        if after.type != tokenize.OP or after.string != "(":
            continue
        if i > 0 and tokens[i - 1].type == tokenize.NAME and tokens[i - 1].string == "def":
            continue
        line = tok.start[0]
        above = lines[line - 2].strip() if line >= 2 else ""
        if line not in commented and not above.startswith("#"):
            found.append(line)
    return found


def test_the_scanner_finds_bare_sleeps_only() -> None:
    source = (
        "import time, asyncio\n"
        "from time import sleep\n"
        "time.sleep(1)\n"  # 3: bare
        "time.sleep(1)  # the reason\n"
        "# the reason, above\n"
        "time.sleep(1)\n"
        "async def f():\n"
        "    await asyncio.sleep(0.1)\n"  # 8: bare
        "sleep(2)\n"  # 9: bare
        "def sleep(s):\n"
        "    pass\n"
        "x = 'time.sleep(1)'\n"
        "y = time.sleep\n"
        "time.sleep (\n"  # 14: bare (a space before the parenthesis)
        "    1)\n"
    )
    assert unexplained_sleeps(source) == [3, 8, 9, 14]


def test_every_sleep_has_a_reason() -> None:
    bare = []
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            rel = path.relative_to(ROOT)
            bare += [f"{rel}:{n}" for n in unexplained_sleeps(path.read_text(encoding="utf-8"))]
    assert not bare, (
        "sleeps without a reason (advance a pulsar_rs.ManualClock if it waits for the broker's time; "
        "otherwise say why on that line or the line above):\n  " + "\n  ".join(bare)
    )
