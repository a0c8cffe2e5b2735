"""Spark reads a topic's Iceberg table (``icebergTable`` policy) through Iceberg's Spark runtime on
the broker's SQLite catalog (``pulsar_rs_spark.iceberg_tables``, its own JVM: the room's other
session has no Iceberg jars): the rows Spark counts, their distinct ids and per-key sums equal
what the official client produced, and what pyiceberg reads."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pulsar.schema import Double, Integer, JsonSchema, Record, String

from conftest import admin

pyiceberg_sql = pytest.importorskip("pyiceberg.catalog.sql")
pyspark = pytest.importorskip("pyspark")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "spark"))

from pulsar_rs_spark import iceberg_tables  # noqa: E402

pytestmark = [pytest.mark.spark, pytest.mark.timeout(600)]

N = 3_000


class Order(Record):
    id = Integer()
    customer = String()
    amount = Double()


def jar(coordinates: str) -> Path:
    """The jar of ``group:artifact:version`` in the local Maven repository, fetched when missing."""
    group, artifact, version = coordinates.split(":")
    path = Path.home() / ".m2/repository" / group.replace(".", "/") / artifact / version / f"{artifact}-{version}.jar"
    if not path.exists():
        subprocess.run(
            ["mvn", "-q", "dependency:get", f"-Dartifact={coordinates}", "-Dtransitive=false"],
            check=True,
            timeout=600,
        )
    return path


def test_spark_reads_the_topic_table(pulsar_broker_factory, client_factory, tmp_path) -> None:
    if not (shutil.which("java") and shutil.which("mvn")):
        pytest.skip("Spark's Iceberg runtime needs Java and Maven")
    if not pyspark.__version__.startswith("4.1."):
        pytest.skip(f"iceberg-spark-runtime-4.1 needs Spark 4.1, not {pyspark.__version__}")
    catalog = tmp_path / "catalog.db"
    broker = pulsar_broker_factory(icebergCatalogUri=f"sqlite:///{catalog}")
    code, body = admin(
        broker.admin_url,
        "POST",
        "/admin/v2/namespaces/public/default/icebergTable",
        {"enabled": True, "commitIntervalSeconds": 1},
    )
    assert code == 204, (code, body)
    client = client_factory(broker.service_url)
    producer = client.create_producer("persistent://public/default/spark-orders", schema=JsonSchema(Order))
    for i in range(N):
        producer.send_async(Order(id=i, customer=f"c{i % 7}", amount=float(i)), None, partition_key=f"c{i % 7}")
    producer.flush()
    reader = pyiceberg_sql.SqlCatalog("pulsar", uri=f"sqlite:///{catalog}", warehouse=f"file://{tmp_path}/warehouse")
    deadline = time.monotonic() + 60
    rows = 0
    while time.monotonic() < deadline and rows < N:
        try:
            rows = reader.load_table(("public", "default", "spark-orders")).scan().to_arrow().num_rows
        except Exception as e:
            if "NoSuchTable" not in type(e).__name__:
                raise
        time.sleep(0.5)  # reason: the broker commits once per second here
    assert rows == N
    jars = ",".join(str(jar(c)) for c in (iceberg_tables.RUNTIME, iceberg_tables.SQLITE_JDBC))
    sql = (
        "SELECT __key AS key, count(*) AS n, count(DISTINCT id) AS ids, sum(amount) AS total "
        "FROM pulsar.public.`default`.`spark-orders` GROUP BY __key ORDER BY __key"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            [str(Path(__file__).resolve().parents[2] / "spark"), os.environ.get("PYTHONPATH", "")]
        ),
    }
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pulsar_rs_spark.iceberg_tables",
            "--catalog",
            str(catalog),
            "--warehouse",
            str(tmp_path / "warehouse"),
            "--jars",
            jars,
            "--sql",
            sql,
        ],
        capture_output=True,
        text=True,
        timeout=500,
        env=env,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    got = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    expected = [
        {"key": f"c{k}", "n": len(range(k, N, 7)), "ids": len(range(k, N, 7)), "total": float(sum(range(k, N, 7)))}
        for k in range(7)
    ]
    assert got == expected, got
