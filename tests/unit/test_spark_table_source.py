"""The backlog jobs' table mode (``python -m pulsar_rs_spark --table-catalog ...``) on an S3
warehouse: the ``--table-*`` arguments reach the Spark session's catalog settings (``cli.session_builder``), the S3 ones
included. A session builder only records its settings, so no JVM starts here; Spark reading a
table on S3 is ``tests/tiered/test_iceberg_table_s3.py``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "spark"))

from pulsar_rs_spark import cli, iceberg_tables

KEY = "spark.sql.catalog.pulsar"


def settings(argv: list[str]) -> dict[str, str]:
    source = cli.table_source(cli.build_parser().parse_args(["--input", "in", "--output", "out", *argv]))
    assert source is not None
    return dict(cli.session_builder("local[1]", tables=source)._options)  # type: ignore[attr-defined]


def test_an_s3_warehouse_is_read_through_s3fileio_at_the_given_endpoint_and_region() -> None:
    opts = settings(
        [
            *("--table-catalog", "/abs/catalog.db", "--table-warehouse", "s3://tables/wh"),
            *("--table-s3-endpoint", "http://127.0.0.1:9000", "--table-s3-region", "eu-west-1"),
        ]
    )
    assert opts[f"{KEY}.warehouse"] == "s3://tables/wh"
    assert opts[f"{KEY}.io-impl"] == "org.apache.iceberg.aws.s3.S3FileIO"
    assert opts[f"{KEY}.s3.endpoint"] == "http://127.0.0.1:9000"
    assert opts[f"{KEY}.s3.path-style-access"] == "true"
    assert opts[f"{KEY}.client.region"] == "eu-west-1"
    assert iceberg_tables.AWS_BUNDLE in opts["spark.jars.packages"].split(",")


def test_a_local_warehouse_has_no_s3_settings_and_the_region_defaults_to_the_brokers() -> None:
    opts = settings(["--table-catalog", "/abs/catalog.db", "--table-warehouse", "/abs/wh"])
    assert opts[f"{KEY}.warehouse"] == "file:///abs/wh"
    assert not [k for k in opts if ".s3." in k or k.endswith("io-impl")]
    args = cli.build_parser().parse_args(
        ["--input", "in", "--output", "out", "--table-catalog", "c", "--table-warehouse", "w"]
    )
    assert args.table_s3_region == iceberg_tables.DEFAULT_S3_REGION


def test_a_catalog_without_a_warehouse_is_refused() -> None:
    with pytest.raises(SystemExit, match="--table-warehouse"):
        cli.table_source(cli.build_parser().parse_args(["--input", "in", "--output", "out", "--table-catalog", "c"]))
    assert cli.table_source(cli.build_parser().parse_args(["--input", "in", "--output", "out"])) is None
