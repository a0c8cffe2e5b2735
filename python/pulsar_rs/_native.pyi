"""Type stubs for the ``pulsar_rs._native`` extension module (rust/py)."""

from collections.abc import Callable, Iterable, Iterator
from os import PathLike
from pathlib import Path
from types import TracebackType
from typing import ClassVar, Final, Literal, Self, TypeAlias, TypedDict, final

__version__: Final[str]
__all__ = [
    "METADATA_PREFIXES",
    "META_DIR",
    "ArrowStream",
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
    "export_data_dir",
    "export_metadata_store",
    "initialize_cluster_metadata",
    "key_hash",
    "murmur3_32",
    "parse_topic_name",
    "perf",
    "read_config",
    "split_batch",
]

# Names starting with "_" exist for type checkers only.

# --- positions --------------------------------------------------------------------------------

@final
class Position:
    """The address of one entry: ``(ledger_id, entry_id)``, ordered by ledger then entry."""

    EARLIEST: ClassVar[Position]
    LATEST: ClassVar[Position]
    @property
    def ledger_id(self) -> int: ...
    @property
    def entry_id(self) -> int: ...
    def __new__(cls, ledger_id: int, entry_id: int) -> Self: ...
    @classmethod
    def from_tuple(cls, value: Position | tuple[int, int]) -> Position: ...
    def to_tuple(self) -> tuple[int, int]: ...
    def next(self) -> Position: ...
    def __iter__(self) -> Iterator[int]: ...
    def __getnewargs__(self) -> tuple[int, int]: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __ne__(self, other: object, /) -> bool: ...
    def __lt__(self, other: Position, /) -> bool: ...
    def __le__(self, other: Position, /) -> bool: ...
    def __gt__(self, other: Position, /) -> bool: ...
    def __ge__(self, other: Position, /) -> bool: ...
    def __hash__(self) -> int: ...

_PositionLike: TypeAlias = Position | tuple[int, int]

# --- managed ledger ---------------------------------------------------------------------------

class _LedgerInfo(TypedDict):
    ledger_id: int
    entries: int
    size: int
    created_ms: int
    closed_ms: int | None

class _LedgerStats(TypedDict):
    entries_added: int
    number_of_entries: int
    total_size: int
    ledger_count: int
    current_ledger_id: int
    current_ledger_entries: int
    current_ledger_size: int
    last_confirmed: Position
    cursor_count: int

class _CacheStats(TypedDict):
    size_bytes: int
    hits_entries: int
    hits_bytes: int
    misses_entries: int
    misses_bytes: int
    evicted_entries: int

class _JournalStats(TypedDict):
    rounds: int
    segments: int
    disk_usage_bytes: int
    durable: bool

@final
class ManagedLedger:
    """A managed ledger (one topic's log) in a data directory of its own.

    Settings are Pulsar's ``broker.conf`` keys, listed in :attr:`SETTINGS`.
    """

    SETTINGS: ClassVar[list[str]]
    def __new__(
        cls,
        path: str | PathLike[str],
        name: str = "default",
        *,
        journalSyncData: bool = ...,
        journalMaxSizeMB: float = ...,
        journalMaxGroupWaitMSec: float = ...,
        journalBufferedWritesThreshold: int = ...,
        journalAdaptiveGroupWaitMicros: float = ...,
        journalPreAllocSizeMB: float = ...,
        journalDirectWrites: bool = ...,
        managedLedgerCacheSizeMB: float = ...,
        managedLedgerCacheEvictionWatermark: float = ...,
        managedLedgerCacheEvictionTimeThresholdMillis: float = ...,
        managedLedgerCacheEvictionIntervalMs: float = ...,
        managedLedgerMaxEntriesPerLedger: int = ...,
        managedLedgerMaxSizePerLedgerMbytes: float = ...,
        managedLedgerMinLedgerRolloverTimeMinutes: float = ...,
        managedLedgerMaxLedgerRolloverTimeMinutes: float = ...,
        defaultRetentionTimeInMinutes: float = ...,
        defaultRetentionSizeInMB: float = ...,
    ) -> Self: ...
    @property
    def name(self) -> str: ...
    @property
    def path(self) -> Path: ...
    @property
    def closed(self) -> bool: ...
    @property
    def durable(self) -> bool: ...
    @property
    def last_confirmed(self) -> Position: ...
    def add_entry(self, data: bytes) -> Position: ...
    def add_entries(self, entries: Iterable[bytes]) -> list[Position]: ...
    def open_cursor(self, name: str, earliest: bool = False) -> Cursor: ...
    def open_reader(self, start: _PositionLike, *, inclusive: bool = False, name: str | None = None) -> Cursor: ...
    def cursor_names(self) -> list[str]: ...
    def delete_cursor(self, name: str) -> None: ...
    def ledgers(self) -> list[_LedgerInfo]: ...
    def stats(self) -> _LedgerStats: ...
    def cache_stats(self) -> _CacheStats: ...
    def journal_stats(self) -> _JournalStats: ...
    def trim(self) -> None: ...
    def close(self) -> None: ...
    def __enter__(self) -> Self: ...
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> Literal[False]: ...

@final
class Cursor:
    """A cursor over a managed ledger: durable (a subscription) or not (a reader)."""

    @property
    def name(self) -> str: ...
    @property
    def durable(self) -> bool: ...
    @property
    def ledger(self) -> ManagedLedger: ...
    def read_entries(self, n: int) -> list[tuple[Position, bytes]]: ...
    def has_more_entries(self) -> bool: ...
    def delete(self, positions: _PositionLike | Iterable[_PositionLike]) -> None: ...
    def mark_delete(self, position: _PositionLike) -> None: ...
    def is_acked(self, position: _PositionLike) -> bool: ...
    @property
    def backlog(self) -> int: ...
    @property
    def estimated_backlog_size(self) -> int: ...
    @property
    def mark_delete_position(self) -> Position: ...
    @property
    def read_position(self) -> Position: ...
    def acked_ranges(self) -> list[tuple[Position, Position]]: ...
    def skip(self, n: int) -> None: ...
    def skip_all(self) -> None: ...
    def reset(self, position: _PositionLike) -> None: ...
    def reset_by_time(self, timestamp_ms: int) -> Position: ...
    def rewind(self) -> None: ...
    @property
    def properties(self) -> dict[str, int]: ...
    def set_property(self, key: str, value: int) -> None: ...
    def flush(self) -> None: ...
    def close(self) -> None: ...

# --- errors -----------------------------------------------------------------------------------

class PulsarRsError(Exception):
    """Base class of every error raised by pulsar_rs."""

class LedgerIoError(PulsarRsError, OSError):
    """An I/O call of the storage failed."""

class NoSpaceError(LedgerIoError):
    """The disk is full: the write was not acknowledged and may be retried later."""

class CorruptEntryError(PulsarRsError):
    """A stored entry failed its checksum or framing check."""

    ledger_id: int
    entry_id: int
    segment: int
    offset: int

class CorruptMetadataError(PulsarRsError):
    """A metadata record (ledger list, cursor state) is damaged."""

    key: str

class InvalidConfigError(PulsarRsError, ValueError):
    """A setting is unknown, of the wrong type or out of range."""

    key: str

class InvalidPositionError(PulsarRsError, ValueError):
    """A position does not name an entry of this managed ledger."""

    ledger: str
    position: Position

class ClosedError(PulsarRsError):
    """The managed ledger, cursor or storage has been closed."""

class TerminatedError(PulsarRsError):
    """The managed ledger was terminated (Pulsar's topic termination): it takes no more entries."""

class InvalidNameError(PulsarRsError, ValueError):
    """A managed ledger or cursor name is empty, too long or has control characters."""

    name: str

class DataDirLockedError(PulsarRsError):
    """The data directory is already open in another broker or storage instance."""

class ReadOnlyError(PulsarRsError):
    """A write was attempted on a data directory opened read-only (export, inspection)."""

class BrokerError(PulsarRsError):
    """A broker operation failed (topic, subscription, producer or consumer state)."""

class ServerError(PulsarRsError):
    """The server could not start or stop (ports, runtime, data directory)."""

class PerfError(PulsarRsError):
    """The load generator (``pulsar-rs perf``) failed: connection, protocol or broker refusal."""

class MetadataStoreError(PulsarRsError):
    """The cluster's metadata store (ZooKeeper) failed, or a record there changed meanwhile or does not parse."""

# --- clock ------------------------------------------------------------------------------------

@final
class ManualClock:
    """The broker's clock for tests, moved by hand instead of sleeping.

    ``ManualClock()`` reads the real time plus every advance so far (clients stamp messages with
    the real time, so a message sent after an advance is new); ``ManualClock(start_ms=T)`` is
    frozen at ``T`` and moves only when advanced. Pass it to ``Broker(clock=...)``.
    """

    def __new__(cls, start_ms: int | None = None) -> Self: ...
    def now_ms(self) -> int:
        """The clock's time in milliseconds since the Unix epoch."""
    def advance(self, seconds: float) -> None:
        """Move ``seconds`` forward (never back; ``ValueError`` otherwise); waiting dispatchers look again."""

# --- broker -----------------------------------------------------------------------------------

@final
class Broker:
    """A complete broker running in-process; use it as a context manager.

    ``Broker(data_dir=None, port=0, admin_port=0, **settings)``: ``data_dir=None`` uses a
    temporary directory (removed on exit); port 0 picks a free port; settings are Pulsar's
    ``broker.conf`` keys (``maxMessageSize=...``). Pulsar keys pulsar-rs does not implement are
    accepted and named in one ``UserWarning``; a key Pulsar does not have raises
    ``InvalidConfigError`` naming it and the closest known key. ``clock``: a :class:`ManualClock`
    the broker reads instead of the system clock (TTL, retention, inactive topics, delayed
    delivery, token expiry, timestamps).
    """

    def __new__(
        cls,
        data_dir: str | PathLike[str] | None = None,
        port: int = 0,
        admin_port: int = 0,
        clock: ManualClock | None = None,
        **settings: bool | float | str | list[str] | None,
    ) -> Self: ...
    @property
    def service_url(self) -> str: ...
    @property
    def admin_url(self) -> str: ...
    @property
    def service_url_tls(self) -> str | None:
        """``pulsar+ssl://host:port`` when ``brokerServicePortTls`` is set, else ``None``."""
    @property
    def admin_url_tls(self) -> str | None:
        """``https://host:port`` of the admin API when ``webServicePortTls`` is set, else ``None``."""
    @property
    def data_dir(self) -> Path: ...
    @property
    def port(self) -> int: ...
    @property
    def io_threads(self) -> int:
        """How many threads serve its connections (``numIOThreads``; default: cores - 1, at least 1)."""
    @property
    def running(self) -> bool: ...
    def stop(self) -> None: ...
    def cleanup(self) -> None: ...
    def check_message_expiry(self) -> None:
        """Run one message-expiry check now (Pulsar's BrokerService.checkMessageExpiry)."""
    def check_gc(self) -> list[str]:
        """Run one inactive-topic check now; returns the topics deleted."""
    def export_tables(self, progress: Callable[[int, int, int], None] | None = None) -> dict[str, ArrowStream]:
        """The broker's state as Arrow streams; ``progress(topics_done, topics_total, rows)`` is
        called as topics are exported (an exception it raises stops the export)."""
    def __enter__(self) -> Self: ...
    def __exit__(self, *args: object) -> bool: ...

@final
class ArrowStream:
    """One exported table; pass it to ``pyarrow.table()`` (once) to take its columns without a copy."""

    @property
    def name(self) -> str: ...
    @property
    def num_rows(self) -> int: ...
    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object: ...

def export_data_dir(
    path: str | PathLike[str],
    progress: Callable[[int, int, int], None] | None = None,
    config: str | PathLike[str] | None = None,
) -> dict[str, ArrowStream]:
    """Exports a data directory no broker has open, as Arrow streams keyed by table name;
    ``progress(topics_done, topics_total, rows)`` is called as topics are exported. ``config``: the
    broker's configuration file, whose tiered-storage keys let offloaded ledgers be read."""

def export_metadata_store(
    metadata_store_url: str,
    progress: Callable[[int, int, int], None] | None = None,
    bookkeeper_metadata_service_uri: str | None = None,
    config: str | PathLike[str] | None = None,
) -> dict[str, ArrowStream]:
    """Exports every topic a Pulsar cluster keeps on BookKeeper (``zk:host:port``, or
    ``etcd:http://host:port`` with BookKeeper's own metadata at ``bookkeeper_metadata_service_uri``:
    the managed ledgers in that store, their entries read from the bookies), read-only: nothing is
    fenced or written; a ledger still being written is read up to its last add confirmed.
    ``config``: a broker configuration file whose tiered-storage keys let offloaded ledgers be read."""

def read_config(path: str | PathLike[str]) -> dict[str, bool | int | float | str | None]:
    """Reads Pulsar's ``broker.conf`` / ``standalone.conf`` (Java properties) or a TOML file into
    settings for ``Broker(**settings)``: the keys the file sets, typed. Raises
    ``InvalidConfigError`` naming a key Pulsar does not have (with the closest known key) or a bad
    value."""

def murmur3_32(data: bytes, seed: int = 0) -> int:
    """Murmur3_x86_32 of ``data`` (unsigned), as Pulsar hashes keys for Key_Shared and Failover."""

def key_hash(key: bytes) -> int:
    """Pulsar's Key_Shared key hash, ``murmur3_32(key) & 0x7fffffff``: the broker's own, as its
    Key_Shared dispatcher routes by it."""

class _BatchMember(TypedDict):
    properties: dict[str, str]
    key: str | None
    event_time: int
    sequence_id: int | None
    data: bytes

def split_batch(payload: bytes, count: int) -> list[_BatchMember]:
    """The first ``count`` messages of an uncompressed batch payload
    (``[u32 size][SingleMessageMetadata][payload]`` each), decoded by the broker's own code;
    ``event_time`` is 0 when not set. A malformed batch raises ``ValueError``."""

def parse_topic_name(name: str) -> tuple[str, str, str, str]:
    """``(domain, tenant, namespace, local)`` of a topic name as the broker parses it (``x`` is
    ``persistent://public/default/x``, ``t/ns/x`` is persistent). Raises ``InvalidNameError``."""

META_DIR: Final[str]
"""The metadata store's folder in a data directory."""
METADATA_PREFIXES: Final[dict[str, str]]
"""The metadata store's key prefixes by name (``managed_ledgers``, ``cursors``, ``clusters``...):
each is a folder under :data:`META_DIR`."""

def enable_logging(level: str = "info", format: str = "text") -> None:
    """Sends the broker's log lines to stderr at ``level`` (a tracing filter such as "debug"),
    as text or as one JSON object per line (``format="json"``)."""

def initialize_cluster_metadata(
    cluster: str,
    web_service_url: str,
    metadata_store_url: str,
    configuration_metadata_store_url: str,
    *,
    web_service_url_tls: str | None = None,
    broker_service_url: str | None = None,
    broker_service_url_tls: str | None = None,
    default_namespace_bundles: int | None = None,
    transaction_coordinators: int | None = None,
    existing_bookkeeper: bool = False,
    session_timeout_ms: int = 30000,
) -> bool:
    """Writes a new cluster's records in its metadata store (``zk:host:port[/chroot]``) as
    ``pulsar initialize-cluster-metadata`` does: BookKeeper's ``/ledgers`` format unless
    ``existing_bookkeeper``, the cluster, the tenants ``public`` and ``pulsar``, the namespaces
    ``public/default`` and ``pulsar/system``, the transaction coordinators' topic (``None``
    counts: Pulsar's 16). Records that exist are kept (the cluster is added to their lists).
    Returns whether BookKeeper's metadata was formatted. A store other than ZooKeeper raises
    ``ValueError``, a store failure :class:`MetadataStoreError`; the GIL is released meanwhile."""

def perf(mode: Literal["produce", "consume"], argv: list[str]) -> str | None:
    """Runs the load generator (``pulsar-rs perf``) with pulsar-perf style ``argv``, printing a line
    per second; returns the summary as JSON text (None when ``--help`` was printed). Bad arguments
    raise ``ValueError``, a failed run :class:`PerfError`."""
