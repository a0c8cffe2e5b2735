"""Units the admin client and the command line share, each written once: the time suffixes
(``ms`` to ``y``, in seconds) and Pulsar's message ids (``LEDGER:ENTRY``, ``earliest``,
``latest``)."""

from __future__ import annotations

__all__ = ["EARLIEST", "LATEST", "SECONDS_PER_UNIT", "message_id"]

#: Seconds in one of each time suffix, as pulsar-admin's relative times read them (``30s``,
#: ``10m``, ``3h``, ``2d``, ``1w``, ``1y``), with ``ms`` for sub-second durations.
SECONDS_PER_UNIT: dict[str, float] = {
    "ms": 0.001,
    "s": 1,
    "m": 60,
    "h": 3600,
    "d": 86400,
    "w": 7 * 86400,
    "y": 365 * 86400,
}

#: ``MessageId.earliest`` and ``MessageId.latest`` as (ledger, entry).
EARLIEST = (-1, -1)
LATEST = (2**63 - 1, 2**63 - 1)


def message_id(text: str) -> tuple[int, int]:
    """``earliest``, ``latest`` or ``LEDGER:ENTRY`` (a batch index after a third ``:`` is
    ignored) as (ledger, entry); ``ValueError`` otherwise."""
    if text == "earliest":
        return EARLIEST
    if text == "latest":
        return LATEST
    parts = text.split(":")
    try:
        return int(parts[0]), int(parts[1])
    except (ValueError, IndexError):
        raise ValueError(f"a message id is earliest, latest or LEDGER:ENTRY, got {text!r}") from None
