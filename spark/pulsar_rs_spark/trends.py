"""Trends over many snapshots: backlog and inflow per topic over time, and the topics whose time to
breach their backlog quota shrinks fastest.

Unlike the other jobs, which look at the selected snapshots' entries, the trend jobs read only the
``topics`` and ``subscriptions`` tables of **every** snapshot (``pulsar-rs export --every`` writes
one per period), so a hundred snapshots of ten thousand topics stay cheap.

Definitions (per broker and topic, at each snapshot):

* ``backlog_bytes`` / ``backlog_entries``: the slowest durable subscription's backlog as the broker's
  cursor reports it (``backlog_size_bytes``, ``backlog_entries`` of SCHEMA.md; the quota check of
  the broker uses the same figures). 0 for a topic without durable subscriptions.
* ``inflow_bytes_per_s``: as :func:`pulsar_rs_spark.jobs.inflow` (stored bytes since the previous
  snapshot); ``backlog_growth_bytes_per_s`` the same for ``backlog_bytes``.
* ``time_to_breach_s``: quota headroom / inflow, as in the backlog job (0 over quota, null without a
  limit or a positive inflow).

Per topic (``trend_summary``): first and last values, the least-squares slopes over time of the
backlog (bytes/s) and of the time to breach (seconds per second; -1 means it shrinks as fast as the
clock runs, i.e. steady inflow; below -1 means inflow is accelerating), and
``ttb_shrink_rank``: 1 for the topic whose time to breach shrinks fastest (most negative slope,
over at least two snapshots with a time to breach).
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from .jobs import TOPIC, _time_to_breach, inflow

TOPIC_KEY = ["broker", "topic"]


def topic_series(all_topics: DataFrame, all_subscriptions: DataFrame, quota_bytes: int | None = None) -> DataFrame:
    """``trend_topics``: one row per (broker, snapshot, topic) over every snapshot."""
    slowest = Window.partitionBy(*TOPIC).orderBy(F.col("backlog_size_bytes").desc(), F.col("subscription"))
    subs = (
        all_subscriptions.where(F.col("durable"))
        .withColumn("_rank", F.row_number().over(slowest))
        .where(F.col("_rank") == 1)
        .select(
            *TOPIC,
            F.col("subscription").alias("slowest_subscription"),
            F.col("backlog_size_bytes").alias("backlog_bytes"),
            F.col("backlog_entries").alias("backlog_entries"),
        )
    )
    default = F.lit(quota_bytes).cast("bigint") if quota_bytes is not None else F.lit(None).cast("bigint")
    per_topic = Window.partitionBy(*TOPIC_KEY).orderBy("snapshot_ms")
    prev_ms = F.lag("snapshot_ms").over(per_topic)
    prev_backlog = F.lag("backlog_bytes").over(per_topic)
    return (
        all_topics.select(*TOPIC, "entries", "size_bytes", "backlog_quota_limit_bytes")
        .join(subs, on=TOPIC, how="left")
        .join(inflow(all_topics), on=TOPIC, how="left")
        .fillna(0, ["backlog_bytes", "backlog_entries"])
        .withColumn(
            "backlog_growth_bytes_per_s",
            F.when(
                prev_ms.isNotNull() & (F.col("snapshot_ms") > prev_ms),
                (F.col("backlog_bytes") - prev_backlog) * F.lit(1000.0) / (F.col("snapshot_ms") - prev_ms),
            ),
        )
        .withColumn(
            "quota_limit_bytes",
            F.when(F.col("backlog_quota_limit_bytes") >= 0, F.col("backlog_quota_limit_bytes")).otherwise(default),
        )
        .withColumn("quota_headroom_bytes", F.col("quota_limit_bytes") - F.col("backlog_bytes"))
        .withColumn("time_to_breach_s", _time_to_breach(F.col("quota_headroom_bytes"), F.col("inflow_bytes_per_s")))
        .drop("backlog_quota_limit_bytes", "previous_snapshot_ms")
    )


def topic_summary(series: DataFrame) -> DataFrame:
    """``trend_summary``: one row per (broker, topic) over all its snapshots, ranked by how fast
    its time to breach shrinks."""
    t = F.col("snapshot_ms") / 1000.0
    first, last = F.min_by, F.max_by
    # Orders snapshots with a time to breach after those without, then by time.
    has_ttb = F.col("time_to_breach_s").isNotNull()
    summary = series.groupBy(*TOPIC_KEY).agg(
        F.count(F.lit(1)).alias("snapshots"),
        F.min("snapshot_ms").alias("first_snapshot_ms"),
        F.max("snapshot_ms").alias("last_snapshot_ms"),
        first("backlog_bytes", "snapshot_ms").alias("first_backlog_bytes"),
        last("backlog_bytes", "snapshot_ms").alias("last_backlog_bytes"),
        F.max("backlog_bytes").alias("max_backlog_bytes"),
        F.regr_slope("backlog_bytes", t).alias("backlog_slope_bytes_per_s"),
        F.avg("inflow_bytes_per_s").alias("mean_inflow_bytes_per_s"),
        F.max("inflow_bytes_per_s").alias("max_inflow_bytes_per_s"),
        last("quota_limit_bytes", "snapshot_ms").alias("quota_limit_bytes"),
        F.count("time_to_breach_s").alias("ttb_points"),
        # The earliest / latest snapshot that has a time to breach (nulls sort first in the struct).
        first("time_to_breach_s", F.struct(~has_ttb, F.col("snapshot_ms"))).alias("first_time_to_breach_s"),
        last("time_to_breach_s", F.struct(has_ttb, F.col("snapshot_ms"))).alias("last_time_to_breach_s"),
        F.regr_slope("time_to_breach_s", t).alias("ttb_slope"),
    )
    # One global ordering (the summary has one row per topic, small): negative slopes come first.
    rank = Window.orderBy(F.col("ttb_slope").asc_nulls_last(), *[F.col(c) for c in TOPIC_KEY])
    return summary.withColumn("ttb_shrink_rank", F.when(F.col("ttb_slope") < 0, F.row_number().over(rank)))


def run(all_topics: DataFrame, all_subscriptions: DataFrame, quota_bytes: int | None = None) -> dict[str, DataFrame]:
    """Both trend DataFrames."""
    series = topic_series(all_topics, all_subscriptions, quota_bytes)
    return {"trend_topics": series, "trend_summary": topic_summary(series)}
