"""A topic's Iceberg table in a warehouse on S3 (S3Proxy): ``icebergWarehouse=s3://bucket/prefix``
with ``icebergS3Endpoint``; the broker writes the table's metadata and Parquet files through its
S3 client (a file over one 8 MiB part as a multipart upload), nothing of the table lands on the
broker's disk, and pyiceberg's ``SqlCatalog`` (pyarrow's S3 file IO) and Spark (Iceberg's
``S3FileIO``, ``pulsar_rs_spark.iceberg_tables`` in its own JVM) read every message once. A
warehouse setting the broker cannot use is refused at start, the key named."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import admin
from fixtures.maven_jars import jar
from fixtures.s3proxy import S3Proxy

pyiceberg_sql = pytest.importorskip("pyiceberg.catalog.sql")

BUCKET = "tables"
#: Messages: 150 000 values of 128 hex characters (about half of it left after compression), so
#: that the one commit of the backlog writes a data file over one multipart part (8 MiB).
N = 150_000
PART_SIZE = 8 << 20


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Proxy]:
    with S3Proxy(bucket=BUCKET) as proxy:
        yield proxy


def catalog_of(root: Path, s3: S3Proxy):
    """pyiceberg's SQL catalog on the broker's catalog file, reading the warehouse through its own
    S3 file IO (pyarrow's). S3Proxy takes any credentials: these keep pyarrow from looking for
    others off this machine."""
    return pyiceberg_sql.SqlCatalog(
        "pulsar",
        uri=f"sqlite:///{root / 'catalog.db'}",
        warehouse=f"s3://{BUCKET}/warehouse",
        **{
            "s3.endpoint": s3.endpoint,
            "s3.region": "us-east-1",
            "s3.access-key-id": "pulsar-rs",
            "s3.secret-access-key": "pulsar-rs",
        },
    )


def test_a_topic_table_in_an_s3_warehouse(pulsar_broker_factory, client_factory, tmp_path, s3, monkeypatch) -> None:
    # pyarrow's AWS SDK asks for response checksums (`x-amz-checksum-mode`) by default, a header
    # S3Proxy refuses; the SDK's own settings turn that down to "when required".
    monkeypatch.setenv("AWS_RESPONSE_CHECKSUM_VALIDATION", "when_required")
    monkeypatch.setenv("AWS_REQUEST_CHECKSUM_CALCULATION", "when_required")
    topic = "on-s3"
    broker = pulsar_broker_factory(
        icebergCatalogUri=f"sqlite:///{tmp_path / 'catalog.db'}",
        icebergWarehouse=f"s3://{BUCKET}/warehouse",
        icebergS3Endpoint=s3.endpoint,
    )
    client = client_factory(broker.service_url)
    producer = client.create_producer(
        f"persistent://public/default/{topic}",
        batching_enabled=True,
        batching_max_messages=1000,
        block_if_queue_full=True,
    )
    sent = [os.urandom(64).hex().encode() for _ in range(N)]
    for value in sent:
        producer.send_async(value, None)
    producer.flush()
    # The policy after the messages: the first commit takes the whole backlog (one data file).
    code, body = admin(
        broker.admin_url,
        "POST",
        f"/admin/v2/persistent/public/default/{topic}/icebergTable",
        {"enabled": True, "commitIntervalSeconds": 1},
    )
    assert code == 204, (code, body)

    deadline = time.monotonic() + 120
    rows = -1
    while time.monotonic() < deadline:
        try:
            table = catalog_of(tmp_path, s3).load_table(("public", "default", topic))
            rows = table.scan().to_arrow().num_rows
            if rows >= N:
                break
        except Exception as e:
            if "NoSuchTable" not in type(e).__name__:
                raise
        time.sleep(0.5)  # reason: the broker commits once per commitIntervalSeconds (1 s here)
    assert rows == N, f"{rows} rows, {N} expected"

    values = table.scan(selected_fields=("__value",)).to_arrow().column("__value").to_pylist()
    assert sorted(values) == sorted(sent), "every message once, its bytes unchanged"
    assert table.metadata.location.startswith(f"s3://{BUCKET}/warehouse/"), table.metadata.location
    files = table.inspect.files().to_pylist()
    assert files and all(f["file_path"].startswith(f"s3://{BUCKET}/warehouse/") for f in files), files
    assert max(f["file_size_in_bytes"] for f in files) > PART_SIZE, "a data file written in parts"
    # On S3Proxy's disk (its filesystem provider keeps an object as a file under its bucket).
    on_s3 = [p for p in (s3.basedir / BUCKET / "warehouse").rglob("*") if p.is_file()]
    assert any(p.suffix == ".parquet" for p in on_s3), on_s3
    assert any(p.name.endswith(".metadata.json") for p in on_s3), on_s3
    assert not (tmp_path / "warehouse").exists(), "nothing of the table on the broker's disk"

    # Spark reads the same table through Iceberg's S3FileIO (the AWS SDK's checksum settings from
    # the environment set above; its credentials too).
    spark_dir = Path(__file__).resolve().parents[2] / "spark"
    sys.path.insert(0, str(spark_dir))
    from pulsar_rs_spark import iceberg_tables

    jars = ",".join(
        str(jar(c)) for c in (iceberg_tables.RUNTIME, iceberg_tables.SQLITE_JDBC, iceberg_tables.AWS_BUNDLE)
    )
    env = {
        **os.environ,
        "AWS_ACCESS_KEY_ID": "pulsar-rs",
        "AWS_SECRET_ACCESS_KEY": "pulsar-rs",
        "PYTHONPATH": os.pathsep.join([str(spark_dir), os.environ.get("PYTHONPATH", "")]),
    }
    sql = f"SELECT count(*) AS n, count(DISTINCT __value) AS d FROM pulsar.public.`default`.`{topic}`"
    args = ["--catalog", str(tmp_path / "catalog.db"), "--warehouse", f"s3://{BUCKET}/warehouse"]
    args += ["--s3-endpoint", s3.endpoint, "--jars", jars, "--sql", sql]
    out = subprocess.run(
        [sys.executable, "-m", "pulsar_rs_spark.iceberg_tables", *args],
        capture_output=True,
        text=True,
        timeout=500,
        env=env,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    got = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    assert got == [{"n": N, "d": len(set(sent))}], got


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"icebergWarehouse": "s3:///no-bucket"}, "icebergWarehouse"),
        ({"icebergWarehouse": "gs://b/p"}, "icebergWarehouse"),
        ({"icebergS3Endpoint": "http://127.0.0.1:1"}, "icebergS3Endpoint"),
        ({"icebergWarehouse": "s3://b/p", "icebergS3Endpoint": "127.0.0.1:1"}, "icebergS3Endpoint"),
    ],
)
def test_unusable_warehouse_settings_are_refused_at_start(pulsar_broker_factory, tmp_path, settings, named) -> None:
    with pytest.raises(Exception, match=named):
        pulsar_broker_factory(icebergCatalogUri=f"sqlite:///{tmp_path / 'catalog.db'}", **settings)
