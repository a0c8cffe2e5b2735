"""pulsar-admin's argument units: relative times (``30s``, ``10m``, ``3h``, ``2d``, ``1w``,
``1y``; a bare number is seconds), sizes (``512``, ``64K``, ``10M``, ``2G``, ``1T``; a bare
number is bytes; ``-1`` is unlimited) and message ids (``LEDGER:ENTRY``)."""

from __future__ import annotations

import argparse

from ... import units

#: pulsar-admin's relative-time suffixes (whole seconds: not ``ms``).
_SECONDS = {u: int(s) for u, s in units.SECONDS_PER_UNIT.items() if s >= 1}
_BYTES = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def seconds(text: str) -> int:
    """A relative time in seconds (negative stays as given: ``-1`` is Pulsar's "unlimited")."""
    t = text.strip().lower()
    try:
        if t and t[-1] in _SECONDS:
            return int(t[:-1]) * _SECONDS[t[-1]]
        return int(t)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid time {text!r} (e.g. 30s, 10m, 3h, 2d, 1w)") from None


def size(text: str) -> int:
    """A size in bytes."""
    t = text.strip().lower()
    try:
        if t and t[-1] in _BYTES:
            return int(t[:-1]) * _BYTES[t[-1]]
        return int(t)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid size {text!r} (e.g. 4096, 10M, 16G, 3T)") from None


def message_id(text: str) -> str:
    """``earliest``, ``latest`` or ``LEDGER:ENTRY``."""
    if text in ("earliest", "latest"):
        return text
    try:
        ledger, entry = units.message_id(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid message id {text!r} (LEDGER:ENTRY, earliest or latest)") from None
    return f"{ledger}:{entry}"


def csv(text: str | None) -> list[str]:
    """A comma-separated list."""
    return [x.strip() for x in (text or "").split(",") if x.strip()]
