"""Reading snapshot exports (spark/SCHEMA.md) into Spark DataFrames and choosing snapshots.

Paths are Hadoop paths: a local directory, ``file:///...``, ``hdfs://...``, ``s3a://...`` all work.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from .schema import TABLES, spark_ddl


def path_exists(spark: SparkSession, path: str) -> bool:
    """Whether ``path`` exists, through the Hadoop FileSystem of its scheme."""
    jvm = spark.sparkContext._jvm  # type: ignore[attr-defined]
    conf = spark.sparkContext._jsc.hadoopConfiguration()  # type: ignore[attr-defined]
    p = jvm.org.apache.hadoop.fs.Path(path)
    return bool(p.getFileSystem(conf).exists(p))


def read_table(spark: SparkSession, root: str, table: str) -> DataFrame:
    """One table of an export with its partition columns; an absent table reads as empty."""
    path = root.rstrip("/") + "/" + table
    schema = spark_ddl(table)
    if not path_exists(spark, path):
        return spark.createDataFrame([], schema)
    return spark.read.schema(schema).option("basePath", path).parquet(path)


@dataclass
class Snapshot:
    """The tables of the selected snapshots, plus ``all_topics`` and ``all_subscriptions`` (every
    snapshot, for inflow rates and trends)."""

    topics: DataFrame
    ledgers: DataFrame
    entries: DataFrame
    subscriptions: DataFrame
    ack_ranges: DataFrame
    consumers: DataFrame
    transaction_coordinators: DataFrame
    all_topics: DataFrame
    all_subscriptions: DataFrame
    selected: list[tuple[str, int]]


def available_snapshots(spark: SparkSession, root: str) -> list[tuple[str, int]]:
    """``(broker, snapshot_ms)`` of every snapshot, sorted: the partition directories of the topics
    table, listed through Hadoop's FileSystem (no Spark job)."""
    jvm = spark.sparkContext._jvm  # type: ignore[attr-defined]
    conf = spark.sparkContext._jsc.hadoopConfiguration()  # type: ignore[attr-defined]
    base = jvm.org.apache.hadoop.fs.Path(root.rstrip("/") + "/topics")
    fs = base.getFileSystem(conf)
    if not fs.exists(base):
        return []
    found = []
    for b in fs.listStatus(base):
        name = b.getPath().getName()
        if not (b.isDirectory() and name.startswith("broker=")):
            continue
        for s in fs.listStatus(b.getPath()):
            sname = s.getPath().getName()
            if s.isDirectory() and sname.startswith("snapshot_ms="):
                found.append((unquote(name[len("broker=") :]), int(unquote(sname[len("snapshot_ms=") :]))))
    return sorted(found)


def select_snapshots(available: list[tuple[str, int]], which: str) -> list[tuple[str, int]]:
    """``latest`` (each broker's newest), ``all``, or one ``snapshot_ms`` (of every broker)."""
    if which == "all":
        return list(available)
    if which == "latest":
        newest: dict[str, int] = {}
        for broker, ms in available:
            newest[broker] = max(ms, newest.get(broker, ms))
        return sorted(newest.items())
    try:
        ms = int(which)
    except ValueError:
        raise ValueError(f"--snapshot must be latest, all or an epoch-ms value, not {which!r}") from None
    chosen = [s for s in available if s[1] == ms]
    if not chosen:
        raise ValueError(f"no snapshot with snapshot_ms={ms}; available: {available}")
    return chosen


def _filter(df: DataFrame, selected: list[tuple[str, int]]) -> DataFrame:
    """Keeps the selected partitions (a disjunction of partition predicates, so Spark prunes)."""
    cond = None
    for broker, ms in selected:
        c = (F.col("broker") == F.lit(broker)) & (F.col("snapshot_ms") == F.lit(ms))
        cond = c if cond is None else cond | c
    return df.where(cond if cond is not None else F.lit(False))


def load(spark: SparkSession, root: str, which: str = "latest") -> Snapshot:
    """Reads an export and keeps the snapshots chosen by ``which`` (see :func:`select_snapshots`)."""
    available = available_snapshots(spark, root)
    if not available:
        raise ValueError(f"no snapshots under {root} (expected {root}/topics/broker=*/snapshot_ms=*/)")
    selected = select_snapshots(available, which)
    tables = {t: _filter(read_table(spark, root, t), selected) for t in TABLES}
    return Snapshot(
        **tables,
        all_topics=read_table(spark, root, "topics"),
        all_subscriptions=read_table(spark, root, "subscriptions"),
        selected=selected,
    )
