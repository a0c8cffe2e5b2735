"""The ``entries`` of a snapshot read from the topics' Apache Iceberg tables (the broker's
``icebergTable`` policy, docs/iceberg-tables.md) instead of the export: the export then only has to
hold the cursors (``pulsar-rs export`` reads every stored entry to write ``entries``; the table
already holds them, one row per message).

One row per entry, in the export's ``entries`` columns (spark/SCHEMA.md), from the table's rows:

* ``topic``: the table's topic, with ``-partition-N`` from ``__partition`` for a partitioned one;
* ``ledger_id``, ``entry_id``: ``__ledger_id``, ``__entry_id``; ``messages``: the entry's rows
  (a batch's messages; aborted transactions' messages are never in the table);
* ``publish_time_ms``: the entry's earliest ``__publish_time``;
* ``key``: the ordering key, else the key, when every message of the entry has the same one (an
  unbatched message's, a key-based batch's; null for a batch of mixed keys, which the export
  would give the batch's own key), ``key_hash`` Pulsar's hash of it (:func:`key_hash`);
* ``size_bytes``: an estimate, the topic's mean stored entry size in the snapshot (its
  ``size_bytes / entries`` in the export's ``topics``): the table keeps the messages' values, not
  the stored entries, so the jobs' byte counts (``backlog_bytes``, quota headroom, time to
  breach) are estimates in this mode, exact when the entries are alike.

A topic whose table does not exist (no policy) keeps the export's entries. Entries the broker has
not committed to the table yet (the open ledger's tail, up to the policy's
``commitIntervalSeconds``) are missing: the snapshot's backlog is counted up to the table's
``lastCommittedMessageId`` (``pulsar-rs admin topics table-status``). Entries published after a
snapshot was taken are not in that snapshot's.
"""

from __future__ import annotations

import re

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType

from .io import Snapshot

__all__ = ["key_hash", "table_identifier", "with_table_entries"]

_PARTITION = re.compile(r"-partition-\d+$")


def key_hash(key: bytes) -> int:
    """Murmur3_x86_32 of ``key`` with seed 0, masked to 31 bits: Pulsar's Key_Shared hash (the
    export's ``key_hash``, ``pulsar_rs.key_hash``), in Python so that executors need no wheel."""
    c1, c2, mask = 0xCC9E2D51, 0x1B873593, 0xFFFFFFFF
    h = 0
    n = len(key) // 4 * 4
    for i in range(0, n, 4):
        k = int.from_bytes(key[i : i + 4], "little")
        k = (k * c1) & mask
        k = ((k << 15) | (k >> 17)) & mask
        h ^= (k * c2) & mask
        h = ((h << 13) | (h >> 19)) & mask
        h = (h * 5 + 0xE6546B64) & mask
    k = 0
    tail = key[n:]
    for i, b in enumerate(tail):
        k |= b << (8 * i)
    if tail:
        k = (k * c1) & mask
        k = ((k << 15) | (k >> 17)) & mask
        h ^= (k * c2) & mask
    h ^= len(key)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & mask
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & mask
    h ^= h >> 16
    return h & 0x7FFFFFFF


def table_identifier(topic: str, catalog: str) -> str | None:
    """``catalog.`tenant`.`namespace`.`topic``` of a persistent topic's (or partition's) table;
    None for any other topic."""
    m = re.fullmatch(r"persistent://([^/]+)/([^/]+)/(.+)", topic)
    if not m:
        return None
    tenant, ns, local = m.group(1), m.group(2), _PARTITION.sub("", m.group(3))
    return ".".join([catalog] + [f"`{p.replace('`', '``')}`" for p in (tenant, ns, local)])


def _entries_of_table(table: DataFrame, base: str) -> DataFrame:
    key = F.coalesce(F.col("__ordering_key").cast("string"), F.col("__key"))
    topic = F.when(F.col("__partition") >= 0, F.concat(F.lit(base + "-partition-"), F.col("__partition"))).otherwise(
        F.lit(base)
    )
    return (
        table.select(
            topic.alias("topic"),
            F.col("__ledger_id").alias("ledger_id"),
            F.col("__entry_id").alias("entry_id"),
            F.unix_millis(F.col("__publish_time")).alias("_publish_ms"),
            key.alias("_key"),
        )
        .groupBy("topic", "ledger_id", "entry_id")
        .agg(
            F.min("_publish_ms").alias("publish_time_ms"),
            F.count(F.lit(1)).cast("int").alias("messages"),
            F.countDistinct("_key").alias("_keys"),
            F.count("_key").alias("_keyed"),
            F.first("_key", ignorenulls=True).alias("_first_key"),
        )
        .select(
            "topic",
            "ledger_id",
            "entry_id",
            "publish_time_ms",
            "messages",
            F.when((F.col("_keys") == 1) & (F.col("_keyed") == F.col("messages")), F.col("_first_key")).alias("key"),
        )
    )


def with_table_entries(spark: SparkSession, snap: Snapshot, catalog: str) -> tuple[Snapshot, list[str]]:
    """``snap`` with the entries of every topic that has a table in Spark's catalog ``catalog``
    read from it (the export's kept for the others), and the tables read."""
    names = sorted({r.topic for r in snap.topics.select("topic").distinct().collect()})
    bases: dict[str, str] = {}
    for name in names:
        ident = table_identifier(name, catalog)
        if ident is not None:
            bases.setdefault(_PARTITION.sub("", name), ident)
    frames, read = [], []
    for base, ident in sorted(bases.items()):
        if not spark.catalog.tableExists(ident):
            continue
        frames.append(_entries_of_table(spark.table(ident), base))
        read.append(ident)
    if not frames:
        return snap, read
    from_tables = frames[0]
    for f in frames[1:]:
        from_tables = from_tables.unionByName(f)
    hash_udf = F.udf(lambda k: key_hash(k.encode()) if k is not None else None, IntegerType())
    keys = from_tables.select("key").where(F.col("key").isNotNull()).distinct()
    keys = keys.withColumn("key_hash", hash_udf(F.col("key")))
    from_tables = from_tables.join(keys, on="key", how="left")
    # Each snapshot of a topic gets the entries published by the time it was taken, each the size
    # of the topic's mean stored entry then.
    mean = F.when(F.col("entries") > 0, F.col("size_bytes") / F.col("entries")).otherwise(F.lit(0))
    stamps = snap.topics.select("broker", "snapshot_ms", "topic", F.round(mean).cast("int").alias("size_bytes"))
    from_tables = from_tables.join(stamps, on="topic").where(F.col("publish_time_ms") <= F.col("snapshot_ms"))
    read_bases = {b for b, i in bases.items() if i in read}
    tabled = sorted(n for n in names if _PARTITION.sub("", n) in read_bases)
    kept = snap.entries.where(~F.col("topic").isin(tabled))
    entries = kept.unionByName(from_tables.select(*snap.entries.columns))
    fields = {k: getattr(snap, k) for k in snap.__dataclass_fields__}
    return Snapshot(**{**fields, "entries": entries}), read
