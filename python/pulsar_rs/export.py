"""Snapshots of broker state as Arrow tables and Parquet files (schema: ``spark/SCHEMA.md``).

* :func:`snapshot_tables` returns the seven tables as ``pyarrow.Table`` objects. The columns are
  built in Rust and handed over through the Arrow C stream interface without copying.
* :func:`write_snapshot` writes them as Parquet under ``OUT/<table>/broker=<id>/snapshot_ms=<t>/``
  with a JSON manifest, so snapshots of many brokers and times sit side by side.

The source is a running :class:`pulsar_rs.Broker` (a *live* snapshot, with consumers), the path
of a data directory that no broker has open (an *offline* snapshot), or a Pulsar cluster's
``metadataStoreUrl`` (``"zk:host:port"``, or ``"etcd:http://host:port"`` with
``bookkeeper_metadata_service_uri``, the cluster's ``bookkeeperMetadataServiceUri``: every topic the
cluster keeps on BookKeeper, whichever broker wrote it, read from the metadata store and the bookies
without fencing anything: a *bookkeeper* snapshot; a ledger still being written is read up to its
last add confirmed).
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from . import _native

if TYPE_CHECKING:
    import pyarrow as pa

SCHEMA_VERSION = 1
TABLES = ("topics", "ledgers", "entries", "subscriptions", "ack_ranges", "consumers", "transaction_coordinators")


#: Source prefixes read as a metadata store: Pulsar's ``metadataStoreUrl`` forms of ZooKeeper and etcd.
METADATA_STORE_SCHEMES = ("zk:", "metadata-store:zk:", "etcd:")

#: ``(topics_done, topics_total, rows)`` progress callback of an export.
Progress = Callable[[int, int, int], None]


def _streams(
    source: _native.Broker | str | os.PathLike[str],
    progress: Progress | None = None,
    bookkeeper_metadata_service_uri: str | None = None,
    config: str | os.PathLike[str] | None = None,
) -> tuple[dict[str, _native.ArrowStream], str]:
    if isinstance(source, _native.Broker):
        return source.export_tables(progress), "live"
    if is_metadata_store_url(source):
        streams = _native.export_metadata_store(str(source), progress, bookkeeper_metadata_service_uri, config)
        return streams, "bookkeeper"
    return _native.export_data_dir(Path(source), progress, config), "offline"


def is_metadata_store_url(source: object) -> bool:
    """Whether an export source names a metadata store (``zk:...``, ``etcd:...``) rather than a path."""
    return isinstance(source, str) and source.startswith(METADATA_STORE_SCHEMES)


def snapshot_tables(
    source: _native.Broker | str | os.PathLike[str],
    bookkeeper_metadata_service_uri: str | None = None,
    config: str | os.PathLike[str] | None = None,
) -> dict[str, pa.Table]:
    """The state of every topic as Arrow tables, keyed by table name (``bookkeeper_metadata_service_uri``:
    BookKeeper's metadata when ``source`` names an etcd; ``config``: a broker configuration file whose
    tiered-storage keys let an offline export read offloaded ledgers)."""
    import pyarrow as pa

    streams, _ = _streams(source, bookkeeper_metadata_service_uri=bookkeeper_metadata_service_uri, config=config)
    return {name: pa.table(stream) for name, stream in streams.items()}


def write_snapshot(
    source: _native.Broker | str | os.PathLike[str],
    out: str | os.PathLike[str],
    broker_id: str | None = None,
    snapshot_ms: int | None = None,
    progress: Progress | None = None,
    bookkeeper_metadata_service_uri: str | None = None,
    config: str | os.PathLike[str] | None = None,
) -> Path:
    """Writes one snapshot as Parquet under ``out``; returns the manifest's path
    (``bookkeeper_metadata_service_uri``: BookKeeper's metadata when ``source`` names an etcd;
    ``config``: a broker configuration file whose tiered-storage keys let offloaded ledgers be read).

    ``progress`` is called with ``(topics_done, topics_total, rows)`` while topics are exported;
    if it has a ``table_written(name, rows)`` method, that is called after each Parquet table.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    broker_id = broker_id or socket.gethostname()
    if "/" in broker_id or "=" in broker_id:
        raise ValueError(f"broker_id must not contain '/' or '=': {broker_id!r}")
    snapshot_ms = snapshot_ms if snapshot_ms is not None else int(time.time() * 1000)
    streams, kind = _streams(source, progress, bookkeeper_metadata_service_uri, config)
    table_written = getattr(progress, "table_written", None)
    root = Path(out)
    rows: dict[str, int] = {}
    for name in TABLES:
        table = pa.table(streams[name])
        rows[name] = table.num_rows
        part = root / name / f"broker={broker_id}" / f"snapshot_ms={snapshot_ms}"
        part.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, part / "part-0.parquet")
        if table_written is not None:
            table_written(name, table.num_rows)
    manifest_dir = root / "_manifests" / f"broker={broker_id}"
    manifest_dir.mkdir(parents=True, exist_ok=True)
    manifest = manifest_dir / f"snapshot_ms={snapshot_ms}.json"
    manifest.write_text(
        json.dumps(
            {
                "schema_version": SCHEMA_VERSION,
                "broker": broker_id,
                "snapshot_ms": snapshot_ms,
                "source": kind,
                "tables": rows,
            },
            indent=2,
        )
    )
    return manifest
