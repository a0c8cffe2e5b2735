"""pulsar_rs: a broker with Apache Pulsar's semantics, with a Rust core.

Storage access: :class:`ManagedLedger` (one topic's log in a data directory), its
:class:`Cursor` objects and :class:`Position` values. Every error raised derives from
:class:`PulsarRsError`.
"""

from __future__ import annotations

from ._native import (
    ClosedError,
    CorruptEntryError,
    CorruptMetadataError,
    Cursor,
    InvalidConfigError,
    InvalidNameError,
    InvalidPositionError,
    LedgerIoError,
    ManagedLedger,
    NoSpaceError,
    Position,
    PulsarRsError,
    __version__,
)

# --- Broker -------------------------------------------------------------------------------
# The lead adds `Broker` (and broker exceptions) here, re-exported from `._native`, and lists
# them in `__all__` below.
# ------------------------------------------------------------------------------------------

__all__ = [
    "ClosedError",
    "CorruptEntryError",
    "CorruptMetadataError",
    "Cursor",
    "InvalidConfigError",
    "InvalidNameError",
    "InvalidPositionError",
    "LedgerIoError",
    "ManagedLedger",
    "NoSpaceError",
    "Position",
    "PulsarRsError",
    "__version__",
]
