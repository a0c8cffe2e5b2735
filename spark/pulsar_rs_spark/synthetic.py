"""Synthetic snapshots in the exact export layout (spark/SCHEMA.md), for tests and benchmarks.

:func:`write_tables` writes tables (pyarrow tables or lists of row dicts) as one snapshot
``<out>/<table>/broker=<b>/snapshot_ms=<ms>/part-0.parquet`` plus its manifest, like
``pulsar_rs.export.write_snapshot`` does. :func:`generate` builds a self-consistent snapshot of many
topics with numpy (subscriptions' ``backlog_entries`` computed the way the broker's cursor counts
them), fast enough for tens of millions of entries.
"""

from __future__ import annotations

import json
import pathlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pulsar_rs

from .schema import SCHEMA_VERSION, TABLES, arrow_schema


def key_hash(key: str) -> int:
    """The ``key_hash`` column: the broker's Key_Shared hash (``pulsar_rs.key_hash``)."""
    return pulsar_rs.key_hash(key.encode())


def _as_table(name: str, rows: Any):  # -> pyarrow.Table
    import pyarrow as pa

    schema = arrow_schema(name)
    if isinstance(rows, pa.Table):
        return rows.select(schema.names).cast(schema)
    return pa.Table.from_pylist(list(rows), schema=schema)


def partition_dir(out: str | pathlib.Path, table: str, broker: str, snapshot_ms: int) -> pathlib.Path:
    """The directory of one table's partition of one snapshot."""
    return pathlib.Path(out) / table / f"broker={broker}" / f"snapshot_ms={snapshot_ms}"


def write_tables(
    out: str | pathlib.Path,
    tables: Mapping[str, Any],
    broker: str = "synthetic",
    snapshot_ms: int = 0,
    source: str = "synthetic",
) -> pathlib.Path:
    """Writes one snapshot; tables missing from ``tables`` are written empty. Returns ``out``."""
    import pyarrow.parquet as pq

    out = pathlib.Path(out)
    counts: dict[str, int] = {}
    for name in TABLES:
        table = _as_table(name, tables.get(name, []))
        d = partition_dir(out, name, broker, snapshot_ms)
        d.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, d / "part-0.parquet")
        counts[name] = table.num_rows
    manifest = out / "_manifests" / f"broker={broker}" / f"snapshot_ms={snapshot_ms}.json"
    manifest.parent.mkdir(parents=True, exist_ok=True)
    manifest.write_text(
        json.dumps(
            {
                "schema_version": SCHEMA_VERSION,
                "broker": broker,
                "snapshot_ms": snapshot_ms,
                "source": source,
                "tables": counts,
            }
        )
    )
    return out


def ack_ranges_of(positions: Sequence[tuple[int, int]]) -> list[tuple[int, int, int, int, int]]:
    """Closed ranges ``(start_ledger, start_entry, end_ledger, end_entry, entries)`` of sorted
    acknowledged positions, one ledger per range, as the ``ack_ranges`` table holds them."""
    ranges: list[list[int]] = []
    for ledger, entry in sorted(positions):
        if ranges and ranges[-1][0] == ledger and ranges[-1][3] == entry - 1:
            ranges[-1][3] = entry
            ranges[-1][4] += 1
        else:
            ranges.append([ledger, entry, ledger, entry, 1])
    return [tuple(r) for r in ranges]  # type: ignore[misc]


def _chunks(n: int, size: int) -> Iterator[tuple[int, int]]:
    for start in range(0, n, size):
        yield start, min(n, start + size)


def generate(
    out: str | pathlib.Path,
    *,
    topics: int,
    entries: int,
    subscriptions_per_topic: int = 2,
    keys: int = 1000,
    entries_per_ledger: int = 5000,
    broker: str = "synthetic",
    snapshot_ms: int = 1_700_000_000_000,
    seed: int = 0,
    quota_bytes: int = -1,
    topics_per_file: int = 1000,
) -> dict[str, int]:
    """Writes a consistent synthetic snapshot of ``topics`` topics holding ``entries`` entries in all.

    Keys follow a Zipf law (a few hot keys); every subscription has a random mark-delete position and
    random individual acks (holes) just after it. Returns the row counts per table.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    out = pathlib.Path(out)
    per_topic = np.full(topics, entries // topics, dtype=np.int64)
    per_topic[: entries % topics] += 1
    key_names = np.array([f"key-{i}" for i in range(keys)], dtype=object)
    key_hashes = np.array([key_hash(k) for k in key_names], dtype=np.int32)
    names = [f"persistent://public/default/synthetic-{t:06d}" for t in range(topics)]
    counts = dict.fromkeys(TABLES, 0)
    writers: dict[str, pq.ParquetWriter] = {}
    for name in TABLES:
        d = partition_dir(out, name, broker, snapshot_ms)
        d.mkdir(parents=True, exist_ok=True)
        writers[name] = pq.ParquetWriter(d / "part-0.parquet", arrow_schema(name))

    def emit(name: str, columns: dict[str, Any]) -> None:
        table = pa.table(columns).select(arrow_schema(name).names).cast(arrow_schema(name))
        writers[name].write_table(table)
        counts[name] += table.num_rows

    for lo, hi in _chunks(topics, topics_per_file):
        ent: dict[str, list[Any]] = {k: [] for k in ("topic", "ledger_id", "entry_id", "pub", "size", "msgs", "key")}
        top: dict[str, list[Any]] = {k: [] for k in ("topic", "entries", "size", "ledgers", "lcl", "lce")}
        led: dict[str, list[Any]] = {k: [] for k in ("topic", "ledger_id", "entries", "size", "created", "closed")}
        sub: dict[str, list[Any]] = {
            k: [] for k in ("topic", "sub", "mdl", "mde", "rl", "re", "backlog", "bsize", "acked", "ranges", "oldest")
        }
        rng_rows: dict[str, list[Any]] = {k: [] for k in ("topic", "sub", "sl", "se", "el", "ee", "n")}
        for t in range(lo, hi):
            n = int(per_topic[t])
            idx = np.arange(n, dtype=np.int64)
            ledger = t * 1_000_000 + idx // entries_per_ledger
            entry = idx % entries_per_ledger
            pub = snapshot_ms - 3_600_000 + (idx * 3_600_000) // max(n, 1)
            size = rng.integers(100, 1100, n, dtype=np.int64)
            msgs = np.where(rng.random(n) < 0.1, 10, 1).astype(np.int32)
            key = np.minimum(rng.zipf(1.3, n) - 1, keys - 1)
            ent["topic"].append(np.full(n, t - lo, dtype=np.int32))
            for k, v in (("ledger_id", ledger), ("entry_id", entry), ("pub", pub), ("size", size)):
                ent[k].append(v)
            ent["msgs"].append(msgs)
            ent["key"].append(key)
            cum_size = np.concatenate([[0], np.cumsum(size)])
            nledgers = max(1, -(-n // entries_per_ledger))
            for li in range(nledgers):
                a, b = li * entries_per_ledger, min(n, (li + 1) * entries_per_ledger)
                led["topic"].append(names[t])
                led["ledger_id"].append(t * 1_000_000 + li)
                led["entries"].append(b - a)
                led["size"].append(int(cum_size[b] - cum_size[a]))
                led["created"].append(int(pub[a]) if n else snapshot_ms)
                led["closed"].append(None if li == nledgers - 1 else int(pub[b - 1]))
            top["topic"].append(names[t])
            top["entries"].append(n)
            top["size"].append(int(cum_size[-1]))
            top["ledgers"].append(nledgers)
            top["lcl"].append(int(ledger[-1]) if n else t * 1_000_000)
            top["lce"].append(int(entry[-1]) if n else -1)
            for s in range(subscriptions_per_topic):
                md = int(rng.integers(-1, n)) if n else -1  # index of the mark-delete entry, -1 = none acked
                window = min(64, n - md - 1)
                acked_idx = np.array([], dtype=np.int64)
                if window > 1:
                    acked_idx = md + 2 + np.flatnonzero(rng.random(window - 1) < 0.5)
                positions = [(int(ledger[i]), int(entry[i])) for i in acked_idx]
                ranges = ack_ranges_of(positions)
                backlog = n - md - 1 - len(acked_idx)
                mask = np.ones(n, dtype=bool)
                mask[: md + 1] = False
                mask[acked_idx] = False
                sub["topic"].append(names[t])
                sub["sub"].append(f"sub-{s}")
                if md >= 0:
                    sub["mdl"].append(int(ledger[md]))
                    sub["mde"].append(int(entry[md]))
                else:
                    sub["mdl"].append(t * 1_000_000)
                    sub["mde"].append(-1)
                nxt = md + 1
                sub["rl"].append(int(ledger[nxt]) if nxt < n else top["lcl"][-1])
                sub["re"].append(int(entry[nxt]) if nxt < n else top["lce"][-1] + 1)
                sub["backlog"].append(backlog)
                sub["bsize"].append(int(size[mask].sum()))
                sub["acked"].append(len(acked_idx))
                sub["ranges"].append(len(ranges))
                sub["oldest"].append(int(pub[nxt]) if backlog else None)
                for r in ranges:
                    rng_rows["topic"].append(names[t])
                    rng_rows["sub"].append(f"sub-{s}")
                    for k, v in zip(("sl", "se", "el", "ee", "n"), r, strict=True):
                        rng_rows[k].append(v)
        chunk_names = pa.array(names[lo:hi])
        topic_idx = np.concatenate(ent["topic"]) if ent["topic"] else np.array([], dtype=np.int32)
        key_idx = np.concatenate(ent["key"]) if ent["key"] else np.array([], dtype=np.int64)
        emit(
            "entries",
            {
                "topic": pa.DictionaryArray.from_arrays(pa.array(topic_idx), chunk_names).cast(pa.string()),
                "ledger_id": np.concatenate(ent["ledger_id"]),
                "entry_id": np.concatenate(ent["entry_id"]),
                "publish_time_ms": np.concatenate(ent["pub"]),
                "size_bytes": np.concatenate(ent["size"]).astype(np.int32),
                "messages": np.concatenate(ent["msgs"]),
                "key": pa.DictionaryArray.from_arrays(pa.array(key_idx.astype(np.int32)), pa.array(key_names)).cast(
                    pa.string()
                ),
                "key_hash": key_hashes[key_idx],
            },
        )
        m = len(top["topic"])
        emit(
            "topics",
            {
                "topic": top["topic"],
                "partition": [-1] * m,
                "entries": top["entries"],
                "size_bytes": top["size"],
                "ledgers": top["ledgers"],
                "last_confirmed_ledger": top["lcl"],
                "last_confirmed_entry": top["lce"],
                "subscriptions": [subscriptions_per_topic] * m,
                "producers": [0] * m,
                "msg_rate_in": [0.0] * m,
                "backlog_quota_limit_bytes": [quota_bytes] * m,
                "backlog_quota_limit_seconds": [-1] * m,
                "compacted_ledger_id": pa.nulls(m, pa.int64()),
                "compaction_horizon_ledger": pa.nulls(m, pa.int64()),
                "compaction_horizon_entry": pa.nulls(m, pa.int64()),
                "compacted_entries": [0] * m,
                "txn_ongoing": pa.nulls(m, pa.int64()),
                "txn_max_read_ledger": pa.nulls(m, pa.int64()),
                "txn_max_read_entry": pa.nulls(m, pa.int64()),
            },
        )
        emit(
            "ledgers",
            {
                "topic": led["topic"],
                "ledger_id": led["ledger_id"],
                "entries": led["entries"],
                "size_bytes": led["size"],
                "created_ms": led["created"],
                "closed_ms": pa.array(led["closed"], pa.int64()),
            },
        )
        k = len(sub["topic"])
        emit(
            "subscriptions",
            {
                "topic": sub["topic"],
                "subscription": sub["sub"],
                "durable": [True] * k,
                "type": pa.nulls(k, pa.string()),
                "mark_delete_ledger": sub["mdl"],
                "mark_delete_entry": sub["mde"],
                "read_ledger": sub["rl"],
                "read_entry": sub["re"],
                "backlog_entries": sub["backlog"],
                "backlog_size_bytes": sub["bsize"],
                "acked_entries": sub["acked"],
                "ack_ranges": sub["ranges"],
                "oldest_unacked_publish_ms": pa.array(sub["oldest"], pa.int64()),
                "consumers": [0] * k,
                "unacked_messages": [0] * k,
                "txn_pending_ack_ongoing": pa.nulls(k, pa.int64()),
            },
        )
        emit(
            "ack_ranges",
            {
                "topic": pa.array(rng_rows["topic"], pa.string()),
                "subscription": pa.array(rng_rows["sub"], pa.string()),
                "start_ledger": pa.array(rng_rows["sl"], pa.int64()),
                "start_entry": pa.array(rng_rows["se"], pa.int64()),
                "end_ledger": pa.array(rng_rows["el"], pa.int64()),
                "end_entry": pa.array(rng_rows["ee"], pa.int64()),
                "entries": pa.array(rng_rows["n"], pa.int64()),
            },
        )
    for w in writers.values():
        w.close()
    manifest = out / "_manifests" / f"broker={broker}" / f"snapshot_ms={snapshot_ms}.json"
    manifest.parent.mkdir(parents=True, exist_ok=True)
    manifest.write_text(
        json.dumps(
            {
                "schema_version": SCHEMA_VERSION,
                "broker": broker,
                "snapshot_ms": snapshot_ms,
                "source": "synthetic",
                "tables": counts,
            }
        )
    )
    return counts
