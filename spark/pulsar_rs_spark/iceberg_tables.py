"""Spark over a topic's Iceberg table (the broker's ``icebergTable`` policy): a session whose
catalog ``pulsar`` (``icebergCatalogName``) is the broker's SQLite catalog, through Iceberg's
``SparkCatalog`` on its JDBC catalog, and a one-shot query.

``python -m pulsar_rs_spark.iceberg_tables --catalog /abs/catalog.db --warehouse /abs/warehouse
--jars RUNTIME.jar,SQLITE_JDBC.jar --sql "SELECT ... FROM pulsar.public.\\`default\\`.orders"``
prints the rows as JSON lines. The jars: ``org.apache.iceberg:iceberg-spark-runtime-4.1_2.13``
(for Spark 4.1; :data:`RUNTIME`) and ``org.xerial:sqlite-jdbc`` (:data:`SQLITE_JDBC`), from
Maven Central (``spark.jars.packages``) or local files (``--jars``).

A warehouse on S3 (``--warehouse s3://bucket/prefix``, the broker's ``icebergWarehouse``) is read
through Iceberg's ``S3FileIO`` (:data:`AWS_BUNDLE` too), with ``--s3-endpoint`` for an
S3-compatible service (``icebergS3Endpoint``; path-style) and ``--s3-region``; its credentials
come from the AWS SDK's usual places (``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence

from pyspark.sql import SparkSession

__all__ = ["AWS_BUNDLE", "RUNTIME", "SQLITE_JDBC", "main", "session", "with_catalog"]

#: Iceberg's Spark runtime for Spark 4.1 (Scala 2.13).
RUNTIME = "org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:1.12.0"
#: SQLite's JDBC driver (the broker's catalog is a SQLite file).
SQLITE_JDBC = "org.xerial:sqlite-jdbc:3.50.3.0"
#: Iceberg's AWS bundle (``S3FileIO`` and the AWS SDK), for a warehouse on S3.
AWS_BUNDLE = "org.apache.iceberg:iceberg-aws-bundle:1.12.0"
#: The region an S3 warehouse's requests are signed for when none is given (the broker's default).
DEFAULT_S3_REGION = "us-east-1"


def with_catalog(
    b: SparkSession.Builder,
    catalog: str,
    warehouse: str,
    jars: Sequence[str] = (),
    name: str = "pulsar",
    s3_endpoint: str | None = None,
    s3_region: str = DEFAULT_S3_REGION,
) -> SparkSession.Builder:
    """``b`` with the broker's catalog as ``name``. ``jars``: local jar files; without them Spark
    fetches :data:`RUNTIME` and :data:`SQLITE_JDBC` (and :data:`AWS_BUNDLE` for an ``s3://``
    warehouse) from Maven Central. ``s3_endpoint``: an S3-compatible service's URL."""
    on_s3 = warehouse.startswith("s3://")
    key = f"spark.sql.catalog.{name}"
    b = (
        b.config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
        .config(key, "org.apache.iceberg.spark.SparkCatalog")
        .config(f"{key}.type", "jdbc")
        .config(f"{key}.uri", f"jdbc:sqlite:{catalog}")
        .config(f"{key}.warehouse", warehouse if "://" in warehouse else f"file://{warehouse}")
    )
    if on_s3:
        b = b.config(f"{key}.io-impl", "org.apache.iceberg.aws.s3.S3FileIO").config(f"{key}.client.region", s3_region)
        if s3_endpoint:
            b = b.config(f"{key}.s3.endpoint", s3_endpoint).config(f"{key}.s3.path-style-access", "true")
    if jars:
        return b.config("spark.jars", ",".join(jars))
    packages = [RUNTIME, SQLITE_JDBC] + ([AWS_BUNDLE] if on_s3 else [])
    return b.config("spark.jars.packages", ",".join(packages))


def session(
    catalog: str,
    warehouse: str,
    jars: Sequence[str] = (),
    name: str = "pulsar",
    master: str = "local[1]",
    s3_endpoint: str | None = None,
    s3_region: str = DEFAULT_S3_REGION,
) -> SparkSession:
    """A Spark session with the broker's catalog as ``name`` (:func:`with_catalog`)."""
    b = (
        SparkSession.builder.master(master)
        .appName("pulsar_rs iceberg table")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
    )
    return with_catalog(b, catalog, warehouse, jars, name, s3_endpoint, s3_region).getOrCreate()


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m pulsar_rs_spark.iceberg_tables")
    p.add_argument("--catalog", required=True, help="the broker's catalog file (icebergCatalogUri's path)")
    p.add_argument("--warehouse", required=True, help="a directory or s3://bucket/prefix (icebergWarehouse)")
    p.add_argument("--s3-endpoint", default=None, help="an S3-compatible service's URL (icebergS3Endpoint)")
    p.add_argument("--s3-region", default=DEFAULT_S3_REGION, help="an S3 warehouse's region (icebergS3Region)")
    p.add_argument("--jars", default="", help="comma-separated local jars (else fetched from Maven Central)")
    p.add_argument("--name", default="pulsar", help="the catalog's name (icebergCatalogName)")
    p.add_argument("--sql", required=True, help="the query")
    a = p.parse_args(argv)
    jars = [j for j in a.jars.split(",") if j]
    spark = session(a.catalog, a.warehouse, jars, a.name, s3_endpoint=a.s3_endpoint, s3_region=a.s3_region)
    spark.sparkContext.setLogLevel("ERROR")
    try:
        for row in spark.sql(a.sql).collect():
            print(json.dumps(row.asDict(recursive=True), default=str))
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
