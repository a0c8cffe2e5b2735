"""The command: read snapshots, run the jobs, write Parquet results and ``report.html``.

``python -m pulsar_rs_spark --input IN --output OUT [--master local[*]] [--snapshot latest|all|MS]
[--quota-bytes N] [--top-keys 10] [--jobs backlog,hot-keys,lag,trends]
[--table-catalog CATALOG.db --table-warehouse DIR|s3://B/P [--table-jars A.jar,B.jar]
[--table-s3-endpoint URL] [--table-s3-region R]]``

With ``--table-catalog``, the entries of every topic that has an Iceberg table (the broker's
``icebergTable`` policy) are read from its table instead of the export (``table_entries``).

Output (any Hadoop-compatible URI): ``OUT/backlog``, ``OUT/topic_quota``, ``OUT/hot_keys``,
``OUT/lag_percentiles``, ``OUT/lag_histogram``, ``OUT/consumer_lag``, ``OUT/trend_topics``,
``OUT/trend_summary`` (Parquet), ``OUT/report.html`` and the trend charts ``OUT/trend_*.svg``.
The trend jobs read every snapshot, whatever ``--snapshot`` selects.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from . import iceberg_tables, io, jobs, report, table_entries, trend_report, trends

JOB_OUTPUTS = {
    "backlog": ("backlog", "topic_quota"),
    "hot-keys": ("hot_keys",),
    "lag": ("lag_percentiles", "lag_histogram", "consumer_lag"),
    "trends": ("trend_topics", "trend_summary"),
}
#: Results too large to collect for the report (one row per topic and snapshot).
_NOT_COLLECTED = ("trend_topics", "trend_summary")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="pulsar_rs_spark", description="Backlog analytics over pulsar_rs snapshot exports (spark/SCHEMA.md)."
    )
    p.add_argument("--input", required=True, help="export root (the OUT of pulsar-rs export); any Hadoop URI")
    p.add_argument("--output", required=True, help="results directory; any Hadoop URI (overwritten)")
    p.add_argument("--master", default=None, help="Spark master (default: local[*], or spark-submit's)")
    p.add_argument("--snapshot", default="latest", help="latest (per broker), all, or a snapshot_ms value")
    p.add_argument("--quota-bytes", type=int, default=None, help="backlog quota for topics without one")
    p.add_argument("--top-keys", type=int, default=10, help="hottest keys kept per topic (default: %(default)s)")
    p.add_argument(
        "--jobs",
        default="backlog,hot-keys,lag,trends",
        help="comma-separated subset of backlog,hot-keys,lag,trends (default: all)",
    )
    p.add_argument("--shuffle-partitions", type=int, default=None, help="spark.sql.shuffle.partitions")
    p.add_argument("--driver-memory", default=None, help="spark.driver.memory for local runs (e.g. 4g)")
    p.add_argument("--no-html", action="store_true", help="skip report.html (and the trend SVG charts)")
    p.add_argument(
        "--trend-topics", type=int, default=8, help="topics drawn in the trend charts (default: %(default)s)"
    )
    p.add_argument(
        "--table-catalog",
        default=None,
        help="the broker's Iceberg catalog file (icebergCatalogUri's path): entries read from the topics' tables",
    )
    p.add_argument("--table-warehouse", default=None, help="the tables' warehouse (icebergWarehouse)")
    p.add_argument(
        "--table-jars", default="", help="Iceberg's Spark runtime and sqlite-jdbc as local jars (else from Maven)"
    )
    p.add_argument("--table-catalog-name", default="pulsar", help="icebergCatalogName (default: %(default)s)")
    p.add_argument(
        "--table-s3-endpoint", default=None, help="an s3:// warehouse's S3-compatible service URL (icebergS3Endpoint)"
    )
    p.add_argument(
        "--table-s3-region",
        default=iceberg_tables.DEFAULT_S3_REGION,
        help="an s3:// warehouse's region (icebergS3Region; default: %(default)s)",
    )
    return p


@dataclass(frozen=True)
class TableSource:
    """The broker's Iceberg tables: its catalog file (``icebergCatalogUri``'s path), warehouse
    (a directory or ``s3://bucket/prefix``), local jars (else fetched from Maven Central), catalog
    name (``icebergCatalogName``) and, for an S3 warehouse, ``icebergS3Endpoint``/``icebergS3Region``."""

    catalog: str
    warehouse: str
    jars: list[str] = field(default_factory=list)
    name: str = "pulsar"
    s3_endpoint: str | None = None
    s3_region: str = iceberg_tables.DEFAULT_S3_REGION


def table_source(args: argparse.Namespace) -> TableSource | None:
    """The ``--table-*`` arguments as a :class:`TableSource` (None without ``--table-catalog``)."""
    if not args.table_catalog:
        return None
    if not args.table_warehouse:
        raise SystemExit("--table-catalog needs --table-warehouse")
    return TableSource(
        args.table_catalog,
        args.table_warehouse,
        [j for j in args.table_jars.split(",") if j],
        args.table_catalog_name,
        args.table_s3_endpoint,
        args.table_s3_region,
    )


def session_builder(
    master: str | None = None,
    app_name: str = "pulsar_rs backlog analytics",
    shuffle_partitions: int | None = None,
    driver_memory: str | None = None,
    tables: TableSource | None = None,
) -> SparkSession.Builder:
    """A session's settings; ``master=None`` keeps spark-submit's master, or ``local[*]`` outside
    it. ``tables``: where the broker's Iceberg tables are (:class:`TableSource`)."""
    b = SparkSession.builder.appName(app_name)
    if master:
        b = b.master(master)
    elif "PYSPARK_GATEWAY_PORT" not in os.environ:  # not under spark-submit, which sets the master
        b = b.master("local[*]")
    if shuffle_partitions:
        b = b.config("spark.sql.shuffle.partitions", str(shuffle_partitions))
    if driver_memory:
        b = b.config("spark.driver.memory", driver_memory)
    if tables:
        b = iceberg_tables.with_catalog(
            b, tables.catalog, tables.warehouse, tables.jars, tables.name, tables.s3_endpoint, tables.s3_region
        )
    return b.config("spark.sql.session.timeZone", "UTC")


def spark_session(*args: Any, **kwargs: Any) -> SparkSession:
    """The session of :func:`session_builder`'s settings (the same arguments)."""
    return session_builder(*args, **kwargs).getOrCreate()


def write_text(spark: SparkSession, path: str, text: str) -> None:
    """Writes a UTF-8 file through Hadoop's FileSystem (so ``path`` may be any Hadoop URI)."""
    jvm = spark.sparkContext._jvm  # type: ignore[attr-defined]
    conf = spark.sparkContext._jsc.hadoopConfiguration()  # type: ignore[attr-defined]
    p = jvm.org.apache.hadoop.fs.Path(path)
    stream = p.getFileSystem(conf).create(p, True)
    writer = jvm.java.io.OutputStreamWriter(stream, "UTF-8")
    try:
        writer.write(text)
    finally:
        writer.close()


@dataclass
class RunResult:
    """What :func:`run` produced: result DataFrames (persisted), output paths, timings (s)."""

    frames: dict[str, DataFrame]
    selected: list[tuple[str, int]]
    tables: list[str] = field(default_factory=list)  # the Iceberg tables entries were read from
    outputs: dict[str, str] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    report_path: str | None = None
    charts: dict[str, str] = field(default_factory=dict)  # name -> path of a trend SVG chart

    def rows(self, name: str) -> list[dict]:
        return [r.asDict() for r in self.frames[name].collect()]

    def unpersist(self) -> None:
        for df in self.frames.values():
            df.unpersist()


def run(
    spark: SparkSession,
    input_path: str,
    output_path: str | None,
    snapshot: str = "latest",
    quota_bytes: int | None = None,
    top_n: int = 10,
    jobs_wanted: Sequence[str] = tuple(JOB_OUTPUTS),
    html: bool = True,
    trend_topics: int = 8,
    table_catalog: str | None = None,
) -> RunResult:
    """Runs the jobs; writes results under ``output_path`` unless it is None. With
    ``table_catalog`` (a catalog of the session), entries come from the topics' Iceberg tables
    where they have one."""
    unknown = set(jobs_wanted) - set(JOB_OUTPUTS)
    if unknown:
        raise ValueError(f"unknown jobs {sorted(unknown)}; choose from {sorted(JOB_OUTPUTS)}")
    t0 = time.perf_counter()
    snap = io.load(spark, input_path, snapshot)
    tables: list[str] = []
    if table_catalog:
        snap, tables = table_entries.with_table_entries(spark, snap, table_catalog)
    frames = jobs.run_all(snap, quota_bytes, top_n)
    frames.update(trends.run(snap.all_topics, snap.all_subscriptions, quota_bytes))
    # The results are small (per subscription, per topic, top keys) and reused by other results and
    # the report: keep them once computed.
    for name in frames:
        if name != "_unacked":
            frames[name] = frames[name].persist()
    result = RunResult(frames=frames, selected=snap.selected, tables=tables)
    wanted = [name for job in jobs_wanted for name in JOB_OUTPUTS[job]]
    if output_path is not None:  # without an output the frames stay lazy for the caller to use
        for name in wanted:
            t = time.perf_counter()
            path = output_path.rstrip("/") + "/" + name
            frames[name].write.mode("overwrite").parquet(path)
            result.outputs[name] = path
            result.timings[name] = time.perf_counter() - t
    if html:
        t = time.perf_counter()
        collected = {
            name: result.rows(name) if name in wanted else []
            for name in (n for outs in JOB_OUTPUTS.values() for n in outs)
            if name not in _NOT_COLLECTED
        }
        trend = None
        if "trend_summary" in wanted:
            trend = trend_report.collect(frames["trend_summary"], frames["trend_topics"], trend_topics)
            if output_path is not None:
                for name, svg in trend_report.charts(trend).items():
                    path = output_path.rstrip("/") + f"/{name}.svg"
                    write_text(spark, path, svg)
                    result.charts[name] = path
        page = report.render(collected, snap.selected, input_path, quota_bytes, top_n, trend_report.section(trend))
        if output_path is not None:
            result.report_path = output_path.rstrip("/") + "/report.html"
            write_text(spark, result.report_path, page)
        result.timings["report"] = time.perf_counter() - t
    result.timings["total"] = time.perf_counter() - t0
    return result


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    owned = SparkSession.getActiveSession() is None  # leave a caller's session running
    tables = table_source(args)
    spark = spark_session(
        args.master, shuffle_partitions=args.shuffle_partitions, driver_memory=args.driver_memory, tables=tables
    )
    res = run(
        spark,
        args.input,
        args.output,
        snapshot=args.snapshot,
        quota_bytes=args.quota_bytes,
        top_n=args.top_keys,
        jobs_wanted=[j.strip() for j in args.jobs.split(",") if j.strip()],
        html=not args.no_html,
        trend_topics=args.trend_topics,
        table_catalog=tables.name if tables else None,
    )
    for name, path in res.outputs.items():
        took = f" ({res.timings[name]:.1f} s)" if name in res.timings else ""
        print(f"{name}: {path}{took}")
    for name, path in res.charts.items():
        print(f"{name}: {path}")
    if res.report_path:
        print(f"report: {res.report_path}")
    for name in res.tables:
        print(f"entries from table: {name}")
    print(f"total: {res.timings['total']:.1f} s over snapshots {res.selected}")
    res.unpersist()
    if owned:
        spark.stop()
    return 0
