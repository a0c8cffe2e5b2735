"""pulsar_rs: a broker with Apache Pulsar's semantics, with a Rust core.

In-process broker: :class:`Broker` (``with Broker() as b: pulsar.Client(b.service_url)``), on the
system clock or a :class:`ManualClock` that tests advance instead of sleeping.
Storage access: :class:`ManagedLedger` (one topic's log in a data directory), its
:class:`Cursor` objects and :class:`Position` values. Admin REST client: :class:`Admin`
(package :mod:`pulsar_rs.admin`, with its typed results); the ``pulsar-rs`` command:
:mod:`pulsar_rs.cli`.
Every error raised derives from :class:`PulsarRsError`.
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
    ManualClock,
    MetadataStoreError,
    NoSpaceError,
    PerfError,
    Position,
    PulsarRsError,
    ReadOnlyError,
    ServerError,
    TerminatedError,
    __version__,
    enable_logging,
    initialize_cluster_metadata,
    key_hash,
    murmur3_32,
    read_config,
)
from .admin import Admin, AdminError

__all__ = [
    "Admin",
    "AdminError",
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
    "ManualClock",
    "MetadataStoreError",
    "NoSpaceError",
    "PerfError",
    "Position",
    "PulsarRsError",
    "ReadOnlyError",
    "ServerError",
    "TerminatedError",
    "__version__",
    "enable_logging",
    "initialize_cluster_metadata",
    "key_hash",
    "murmur3_32",
    "read_config",
]
