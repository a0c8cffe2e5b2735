"""The default region of an S3 warehouse is written twice, in the broker (``icebergS3Region``'s
default, rust/table/src/config.rs) and in the Spark reader (``--s3-region``'s default,
spark/pulsar_rs_spark/iceberg_tables.py): read from both sources, they must be the same."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_broker_and_the_spark_reader_default_to_the_same_s3_region() -> None:
    rust = re.search(r'DEFAULT_S3_REGION: &str = "([^"]+)"', (ROOT / "rust/table/src/config.rs").read_text())
    spark = re.search(
        r'^DEFAULT_S3_REGION = "([^"]+)"', (ROOT / "spark/pulsar_rs_spark/iceberg_tables.py").read_text(), re.M
    )
    assert rust and spark, "a DEFAULT_S3_REGION is missing"
    assert rust.group(1) == spark.group(1)
