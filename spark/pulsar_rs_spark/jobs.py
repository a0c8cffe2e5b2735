"""The analytics: backlog report, hottest keys in backlog, consumer lag distribution.

Every function takes a :class:`~pulsar_rs_spark.io.Snapshot` (or DataFrames derived from it) and
returns DataFrames keyed by ``(broker, snapshot_ms, topic[, subscription])``.

Definitions (positions are ``(ledger_id, entry_id)``, ordered by ledger then entry):

* An entry is *in the backlog* of a subscription if it is after the subscription's mark-delete
  position and inside no acknowledged range (``ack_ranges``). ``backlog_entries`` counts them, as
  the broker's ``msgBacklog`` does; ``backlog_messages`` sums their ``messages`` (a batch entry
  holds several), ``backlog_bytes`` their stored sizes (exact, whereas the broker's
  ``backlog_size_bytes`` is Pulsar's estimate).
* ``oldest_unacked_age_ms`` = ``snapshot_ms`` - publish time of the first entry in the backlog.
* Ack-hole fragmentation: ``ack_ranges`` = acknowledged ranges after mark-delete (each one is
  preceded by a hole of unacknowledged entries, which the cursor must persist), ``acked_entries``
  the entries inside them, ``ack_ranges_per_1k_backlog`` = 1000 * ack_ranges / backlog_entries and
  ``acked_fraction`` = acked_entries / (acked_entries + backlog_entries): 0 for a cursor that acks in
  order, close to 1 for one that left a few old holes behind many individual acks.
* Backlog quota: ``quota_limit_bytes`` is the topic's ``backlog_quota_limit_bytes`` or, when the
  topic has none, the ``--quota-bytes`` default (null if neither). Headroom = limit - backlog bytes.
  The topic's backlog is its slowest durable subscription's (as the broker's quota check uses).
* Inflow: ``(size_bytes - previous size_bytes) / (snapshot_ms - previous snapshot_ms)`` between
  consecutive snapshots of the same broker and topic, in bytes/s; null for a topic's first snapshot.
  ``time_to_breach_s`` = headroom / inflow, 0 if already over the limit, null when there is no
  limit, no previous snapshot or the inflow is not positive.
"""

from __future__ import annotations

from pyspark import StorageLevel
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from .io import Snapshot

SNAP = ["broker", "snapshot_ms"]
TOPIC = [*SNAP, "topic"]
SUB = [*TOPIC, "subscription"]
COUNTS = ["backlog_entries", "backlog_messages", "backlog_bytes", "backlog_keys"]


def unacked_entries(snap: Snapshot) -> DataFrame:
    """One row per (subscription, entry in its backlog): the entry's columns plus ``subscription``."""
    subs = snap.subscriptions.select(
        *SUB, F.col("mark_delete_ledger").alias("_mdl"), F.col("mark_delete_entry").alias("_mde")
    )
    after_md = (
        snap.entries.join(subs, on=TOPIC)
        .where(
            (F.col("ledger_id") > F.col("_mdl"))
            | ((F.col("ledger_id") == F.col("_mdl")) & (F.col("entry_id") > F.col("_mde")))
        )
        .drop("_mdl", "_mde")
    )
    # A range covers one ledger (SCHEMA.md); expanding it to its entries keeps the anti-join an
    # equi-join, linear in the data however fragmented the acks are.
    acked = snap.ack_ranges.select(
        *SUB,
        F.col("start_ledger").alias("ledger_id"),
        F.explode(F.sequence(F.col("start_entry"), F.col("end_entry"))).alias("entry_id"),
    )
    return after_md.join(acked, on=[*SUB, "ledger_id", "entry_id"], how="left_anti")


def inflow(all_topics: DataFrame) -> DataFrame:
    """Bytes/s stored by each topic since the broker's previous snapshot (null for the first one)."""
    w = Window.partitionBy("broker", "topic").orderBy("snapshot_ms")
    prev_ms = F.lag("snapshot_ms").over(w)
    prev_size = F.lag("size_bytes").over(w)
    return all_topics.select(
        *TOPIC,
        prev_ms.alias("previous_snapshot_ms"),
        F.when(
            prev_ms.isNotNull() & (F.col("snapshot_ms") > prev_ms),
            (F.col("size_bytes") - prev_size) * F.lit(1000.0) / (F.col("snapshot_ms") - prev_ms),
        ).alias("inflow_bytes_per_s"),
    )


def _time_to_breach(headroom: F.Column, rate: F.Column) -> F.Column:
    return (
        F.when(headroom.isNull(), None)
        .when(headroom <= 0, F.lit(0.0))
        .when(rate.isNotNull() & (rate > 0), headroom / rate)
    )


def backlog_report(snap: Snapshot, unacked: DataFrame, quota_bytes: int | None = None) -> dict[str, DataFrame]:
    """``backlog`` (per subscription) and ``topic_quota`` (per topic) DataFrames."""
    position = F.struct("ledger_id", "entry_id")
    per_sub = unacked.groupBy(*SUB).agg(
        F.count(F.lit(1)).alias("backlog_entries"),
        F.sum("messages").alias("backlog_messages"),
        F.sum("size_bytes").alias("backlog_bytes"),
        F.min_by("publish_time_ms", position).alias("oldest_unacked_publish_ms"),
        F.countDistinct("key").alias("backlog_keys"),
    )
    ranges = snap.ack_ranges.groupBy(*SUB).agg(
        F.count(F.lit(1)).alias("ack_ranges"), F.sum("entries").alias("acked_entries")
    )
    topics = snap.topics.select(
        *TOPIC,
        F.col("size_bytes").alias("topic_size_bytes"),
        F.col("backlog_quota_limit_bytes"),
        F.col("backlog_quota_limit_seconds"),
    )
    default = F.lit(quota_bytes).cast("bigint") if quota_bytes is not None else F.lit(None).cast("bigint")
    subs = snap.subscriptions.select(
        *SUB,
        "durable",
        "type",
        "consumers",
        "mark_delete_ledger",
        "mark_delete_entry",
        F.col("backlog_entries").alias("broker_backlog_entries"),
        F.col("backlog_size_bytes").alias("broker_backlog_size_bytes"),
        F.col("oldest_unacked_publish_ms").alias("broker_oldest_unacked_publish_ms"),
        F.col("unacked_messages").alias("broker_unacked_messages"),
    )
    df = (
        subs.join(per_sub, on=SUB, how="left")
        .join(ranges, on=SUB, how="left")
        .join(topics, on=TOPIC, how="left")
        .join(inflow(snap.all_topics), on=TOPIC, how="left")
        .fillna(0, [*COUNTS, "ack_ranges", "acked_entries"])
    )
    limit = F.when(F.col("backlog_quota_limit_bytes") >= 0, F.col("backlog_quota_limit_bytes")).otherwise(default)
    headroom = F.col("quota_limit_bytes") - F.col("backlog_bytes")
    age = F.col("snapshot_ms") - F.col("oldest_unacked_publish_ms")
    df = (
        df.withColumn("oldest_unacked_age_ms", age)
        .withColumn(
            "ack_ranges_per_1k_backlog",
            F.when(F.col("backlog_entries") > 0, F.col("ack_ranges") * 1000.0 / F.col("backlog_entries")),
        )
        .withColumn(
            "acked_fraction",
            F.when(
                F.col("acked_entries") + F.col("backlog_entries") > 0,
                F.col("acked_entries") / (F.col("acked_entries") + F.col("backlog_entries")),
            ).otherwise(F.lit(0.0)),
        )
        .withColumn("quota_limit_bytes", limit)
        .withColumn("quota_headroom_bytes", headroom)
        .withColumn(
            "quota_time_headroom_s",
            F.when(
                F.col("backlog_quota_limit_seconds") >= 0,
                F.col("backlog_quota_limit_seconds") - F.coalesce(age, F.lit(0)) / 1000.0,
            ),
        )
        .withColumn("time_to_breach_s", _time_to_breach(F.col("quota_headroom_bytes"), F.col("inflow_bytes_per_s")))
        .withColumn("matches_broker", F.col("backlog_entries") == F.col("broker_backlog_entries"))
        .drop("backlog_quota_limit_bytes", "backlog_quota_limit_seconds")
    )
    backlog = df.select(
        *SUB,
        "durable",
        "type",
        "consumers",
        "backlog_entries",
        "backlog_messages",
        "backlog_bytes",
        "backlog_keys",
        "oldest_unacked_publish_ms",
        "oldest_unacked_age_ms",
        "ack_ranges",
        "acked_entries",
        "ack_ranges_per_1k_backlog",
        "acked_fraction",
        "quota_limit_bytes",
        "quota_headroom_bytes",
        "quota_time_headroom_s",
        "inflow_bytes_per_s",
        "time_to_breach_s",
        "broker_backlog_entries",
        "broker_backlog_size_bytes",
        "broker_oldest_unacked_publish_ms",
        "broker_unacked_messages",
        "matches_broker",
        "mark_delete_ledger",
        "mark_delete_entry",
    )
    # Per topic: the slowest durable subscription's backlog against the topic's limit.
    slowest = Window.partitionBy(*TOPIC).orderBy(F.col("backlog_bytes").desc(), F.col("subscription"))
    durable = backlog.where(F.col("durable"))
    top = (
        durable.withColumn("_rank", F.row_number().over(slowest))
        .where(F.col("_rank") == 1)
        .select(
            *TOPIC,
            F.col("subscription").alias("slowest_subscription"),
            F.col("backlog_bytes").alias("topic_backlog_bytes"),
            F.col("backlog_entries").alias("topic_backlog_entries"),
            F.col("oldest_unacked_age_ms").alias("topic_oldest_unacked_age_ms"),
        )
    )
    topic_quota = (
        snap.topics.select(*TOPIC, "entries", "size_bytes", "backlog_quota_limit_bytes")
        .join(top, on=TOPIC, how="left")
        .join(inflow(snap.all_topics), on=TOPIC, how="left")
        .withColumn(
            "quota_limit_bytes",
            F.when(F.col("backlog_quota_limit_bytes") >= 0, F.col("backlog_quota_limit_bytes")).otherwise(default),
        )
        .fillna(0, ["topic_backlog_bytes", "topic_backlog_entries"])
        .withColumn("quota_headroom_bytes", F.col("quota_limit_bytes") - F.col("topic_backlog_bytes"))
        .withColumn("time_to_breach_s", _time_to_breach(F.col("quota_headroom_bytes"), F.col("inflow_bytes_per_s")))
        .drop("backlog_quota_limit_bytes")
    )
    return {"backlog": backlog, "topic_quota": topic_quota}


def hot_keys(unacked: DataFrame, top_n: int = 10) -> DataFrame:
    """The ``top_n`` keys of each topic by backlog messages (then bytes), summed over subscriptions.

    A key's ``backlog_messages`` counts every delivery still owed: an entry in the backlog of two
    subscriptions counts twice; ``subscriptions`` says how many subscriptions owe it.
    """
    per_key = (
        unacked.where(F.col("key").isNotNull())
        .groupBy(*TOPIC, "key")
        .agg(
            F.first("key_hash", ignorenulls=True).alias("key_hash"),
            F.count(F.lit(1)).alias("backlog_entries"),
            F.sum("messages").alias("backlog_messages"),
            F.sum("size_bytes").alias("backlog_bytes"),
            F.countDistinct("subscription").alias("subscriptions"),
            F.min("publish_time_ms").alias("oldest_publish_ms"),
        )
    )
    rank = Window.partitionBy(*TOPIC).orderBy(
        F.col("backlog_messages").desc(), F.col("backlog_bytes").desc(), F.col("key")
    )
    total = Window.partitionBy(*TOPIC)
    return (
        per_key.withColumn("share_of_keyed_backlog", F.col("backlog_messages") / F.sum("backlog_messages").over(total))
        .withColumn("rank", F.row_number().over(rank))
        .where(F.col("rank") <= top_n)
    )


def _bucket(col: F.Column) -> F.Column:
    """Decade bucket of a count: 0 → 0, 1..9 → 1, 10..99 → 2, ..."""
    return F.when(col <= 0, F.lit(0)).otherwise(F.floor(F.log10(col)).cast("int") + 1)


def consumer_lag(backlog: DataFrame, consumers: DataFrame) -> dict[str, DataFrame]:
    """``lag_percentiles`` and ``lag_histogram`` per subscription name across topics, and
    ``consumer_lag`` per consumer (empty when the export has no consumers, e.g. offline)."""
    pct = "array(0.5, 0.9, 0.99)"
    per = backlog.groupBy(*SNAP, "subscription").agg(
        F.count(F.lit(1)).alias("topics"),
        F.sum("backlog_entries").alias("total_backlog_entries"),
        F.sum("backlog_messages").alias("total_backlog_messages"),
        F.sum("backlog_bytes").alias("total_backlog_bytes"),
        F.expr(f"percentile(backlog_entries, {pct})").alias("_e"),
        F.max("backlog_entries").alias("max_backlog_entries"),
        F.expr(f"percentile(oldest_unacked_age_ms, {pct})").alias("_a"),
        F.max("oldest_unacked_age_ms").alias("max_oldest_unacked_age_ms"),
    )
    for i, p in enumerate(("p50", "p90", "p99")):
        per = per.withColumn(f"{p}_backlog_entries", F.col("_e")[i]).withColumn(
            f"{p}_oldest_unacked_age_ms", F.col("_a")[i]
        )
    percentiles = per.drop("_e", "_a")
    histogram = (
        backlog.withColumn("bucket", _bucket(F.col("backlog_entries")))
        .groupBy(*SNAP, "subscription", "bucket")
        .agg(F.count(F.lit(1)).alias("topics"))
        .withColumn(
            "bucket_low", F.when(F.col("bucket") == 0, 0).otherwise(F.pow(10, F.col("bucket") - 1)).cast("bigint")
        )
    )
    subs = backlog.select(*SUB, "backlog_entries", "backlog_messages", "oldest_unacked_age_ms", "type")
    per_consumer = (
        consumers.join(subs, on=SUB, how="left")
        .withColumn(
            "share_of_subscription_unacked",
            F.col("unacked_messages") / F.sum("unacked_messages").over(Window.partitionBy(*SUB)),
        )
        .withColumnRenamed("backlog_entries", "subscription_backlog_entries")
        .withColumnRenamed("backlog_messages", "subscription_backlog_messages")
    )
    return {"lag_percentiles": percentiles, "lag_histogram": histogram, "consumer_lag": per_consumer}


def run_all(snap: Snapshot, quota_bytes: int | None = None, top_n: int = 10) -> dict[str, DataFrame]:
    """All result DataFrames. The backlog entry set is persisted; call ``unpersist`` on
    ``result["_unacked"]`` when done."""
    unacked = unacked_entries(snap).persist(StorageLevel.MEMORY_AND_DISK)
    out = backlog_report(snap, unacked, quota_bytes)
    out["hot_keys"] = hot_keys(unacked, top_n)
    out.update(consumer_lag(out["backlog"], snap.consumers))
    out["_unacked"] = unacked
    return out
