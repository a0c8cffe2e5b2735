"""Spark over a topic's Iceberg table (the broker's ``icebergTable`` policy): a session whose
catalog ``pulsar`` (``icebergCatalogName``) is the broker's SQLite catalog, through Iceberg's
``SparkCatalog`` on its JDBC catalog, and a one-shot query.

``python -m pulsar_rs_spark.iceberg_tables --catalog /abs/catalog.db --warehouse /abs/warehouse
--jars RUNTIME.jar,SQLITE_JDBC.jar --sql "SELECT ... FROM pulsar.public.\\`default\\`.orders"``
prints the rows as JSON lines. The jars: ``org.apache.iceberg:iceberg-spark-runtime-4.1_2.13``
(for Spark 4.1; :data:`RUNTIME`) and ``org.xerial:sqlite-jdbc`` (:data:`SQLITE_JDBC`), from
Maven Central (``spark.jars.packages``) or local files (``--jars``).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence

from pyspark.sql import SparkSession

__all__ = ["RUNTIME", "SQLITE_JDBC", "main", "session", "with_catalog"]

#: Iceberg's Spark runtime for Spark 4.1 (Scala 2.13).
RUNTIME = "org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:1.12.0"
#: SQLite's JDBC driver (the broker's catalog is a SQLite file).
SQLITE_JDBC = "org.xerial:sqlite-jdbc:3.50.3.0"


def with_catalog(
    b: SparkSession.Builder, catalog: str, warehouse: str, jars: Sequence[str] = (), name: str = "pulsar"
) -> SparkSession.Builder:
    """``b`` with the broker's catalog as ``name``. ``jars``: local jar files; without them Spark
    fetches :data:`RUNTIME` and :data:`SQLITE_JDBC` from Maven Central."""
    b = (
        b.config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
        .config(f"spark.sql.catalog.{name}", "org.apache.iceberg.spark.SparkCatalog")
        .config(f"spark.sql.catalog.{name}.type", "jdbc")
        .config(f"spark.sql.catalog.{name}.uri", f"jdbc:sqlite:{catalog}")
        .config(f"spark.sql.catalog.{name}.warehouse", warehouse if "://" in warehouse else f"file://{warehouse}")
    )
    if jars:
        return b.config("spark.jars", ",".join(jars))
    return b.config("spark.jars.packages", f"{RUNTIME},{SQLITE_JDBC}")


def session(
    catalog: str, warehouse: str, jars: Sequence[str] = (), name: str = "pulsar", master: str = "local[1]"
) -> SparkSession:
    """A Spark session with the broker's catalog as ``name`` (:func:`with_catalog`)."""
    b = (
        SparkSession.builder.master(master)
        .appName("pulsar_rs iceberg table")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
    )
    return with_catalog(b, catalog, warehouse, jars, name).getOrCreate()


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m pulsar_rs_spark.iceberg_tables")
    p.add_argument("--catalog", required=True, help="the broker's catalog file (icebergCatalogUri's path)")
    p.add_argument("--warehouse", required=True, help="the warehouse directory (icebergWarehouse)")
    p.add_argument("--jars", default="", help="comma-separated local jars (else fetched from Maven Central)")
    p.add_argument("--name", default="pulsar", help="the catalog's name (icebergCatalogName)")
    p.add_argument("--sql", required=True, help="the query")
    a = p.parse_args(argv)
    spark = session(a.catalog, a.warehouse, [j for j in a.jars.split(",") if j], a.name)
    spark.sparkContext.setLogLevel("ERROR")
    try:
        for row in spark.sql(a.sql).collect():
            print(json.dumps(row.asDict(recursive=True), default=str))
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
