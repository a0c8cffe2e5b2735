"""pulsar_rs: a broker with Apache Pulsar's semantics, with a Rust core.

In-process broker: :class:`Broker` (``with Broker() as b: pulsar.Client(b.service_url)``).
Storage access: :class:`ManagedLedger` (one topic's log in a data directory), its
:class:`Cursor` objects and :class:`Position` values. Every error raised derives from
:class:`PulsarRsError`.
"""

from __future__ import annotations

from ._native import (
    Broker,
    BrokerError,
    ClosedError,
    CorruptEntryError,
    CorruptMetadataError,
    Cursor,
    DataDirLockedError,
    InvalidConfigError,
    InvalidNameError,
    InvalidPositionError,
    LedgerIoError,
    ManagedLedger,
    NoSpaceError,
    PerfError,
    Position,
    PulsarRsError,
    ServerError,
    __version__,
    enable_logging,
)

__all__ = [
    "Broker",
    "BrokerError",
    "ClosedError",
    "CorruptEntryError",
    "CorruptMetadataError",
    "Cursor",
    "DataDirLockedError",
    "InvalidConfigError",
    "InvalidNameError",
    "InvalidPositionError",
    "LedgerIoError",
    "ManagedLedger",
    "NoSpaceError",
    "PerfError",
    "Position",
    "PulsarRsError",
    "ServerError",
    "__version__",
    "enable_logging",
]
