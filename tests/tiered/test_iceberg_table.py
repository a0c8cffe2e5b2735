"""A topic as an Apache Iceberg table (the ``icebergTable`` policy): messages produced with the
official client (a JSON schema, keys, properties, batches, a chunked message) and by a
transactional producer on the wire (one committed, one aborted transaction) are committed by
the broker to a table in a SQLite catalog, and pyiceberg's ``SqlCatalog`` reads exactly the
committed messages, once each, with typed columns (from AVRO and STRING topics too); a
compatible schema version adds a column; the status call and the CLI say what is committed up
to which message id; a policy without a catalog, or a malformed one, is refused."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pulsar
import pytest
from pulsar.schema import AvroSchema, Double, Integer, JsonSchema, Record, String, StringSchema

from conftest import admin
from txn_wire import TxnWire

pyiceberg_sql = pytest.importorskip("pyiceberg.catalog.sql")

N = 50_000
CHUNKED = 200_000


class Order(Record):
    id = Integer()
    customer = String()
    amount = Double()


class OrderV2(Record):
    """``Order`` with a field that has a default: a compatible (BACKWARD) new version."""

    _avro_namespace = None
    id = Integer()
    customer = String()
    amount = Double()
    region = String(required_default=True)


def catalog_of(root: Path):
    return pyiceberg_sql.SqlCatalog(
        "pulsar", uri=f"sqlite:///{root / 'catalog.db'}", warehouse=f"file://{root / 'warehouse'}"
    )


def table_broker(factory, root: Path, **settings):
    return factory(icebergCatalogUri=f"sqlite:///{root / 'catalog.db'}", **settings)


def status(broker, topic: str) -> dict:
    code, body = admin(broker.admin_url, "GET", f"/admin/v2/persistent/public/default/{topic}/icebergTable")
    assert code == 200, (code, body)
    assert isinstance(body, dict)
    return body


def wait_rows(root: Path, topic: str, rows: int, timeout: float = 90.0):
    """The table once it has ``rows`` rows (it never has more: asserted by the callers)."""
    deadline = time.monotonic() + timeout
    seen = -1
    while time.monotonic() < deadline:
        try:
            table = catalog_of(root).load_table(("public", "default", topic)).scan().to_arrow()
            seen = table.num_rows
            if seen >= rows:
                return table
        except Exception as e:
            if "NoSuchTable" not in type(e).__name__:
                raise
        time.sleep(0.5)  # reason: the broker commits once per commitIntervalSeconds (1 s here)
    raise AssertionError(f"{topic}: {seen} rows after {timeout} s, {rows} expected")


def test_a_topic_becomes_a_table_that_pyiceberg_reads(pulsar_broker_factory, client_factory, tmp_path) -> None:
    topic = "iceberg-orders"
    full = f"persistent://public/default/{topic}"
    broker = table_broker(pulsar_broker_factory, tmp_path, transactionCoordinatorEnabled=True, maxMessageSize=64 * 1024)
    code, body = admin(
        broker.admin_url,
        "POST",
        "/admin/v2/namespaces/public/default/icebergTable",
        {"enabled": True, "commitIntervalSeconds": 1},
    )
    assert code == 204, (code, body)
    client = client_factory(broker.service_url)
    producer = client.create_producer(
        full,
        schema=JsonSchema(Order),
        batching_enabled=True,
        batching_max_messages=500,
        batching_max_allowed_size_in_bytes=32 * 1024,
        block_if_queue_full=True,
    )
    ids: dict[int, pulsar.MessageId] = {}

    def sent(i: int):
        def done(res, mid) -> None:
            assert res == pulsar.Result.Ok, res
            ids[i] = mid

        return done

    for i in range(N):
        producer.send_async(
            Order(id=i, customer=f"c{i % 100}", amount=i / 4),
            sent(i),
            partition_key=f"c{i % 100}",
            properties={"i": str(i)},
        )
    producer.flush()
    chunker = client.create_producer(
        full, schema=JsonSchema(Order), chunking_enabled=True, batching_enabled=False, send_timeout_millis=10_000
    )
    chunk_id = chunker.send(Order(id=N, customer="x" * CHUNKED, amount=-1.0), partition_key="big")
    with TxnWire(broker.service_url) as w:
        w.connect_coordinator(0)
        w.producer(full, 1)
        kept, dropped = w.new_txn(), w.new_txn()
        w.add_partition(kept, full)
        w.add_partition(dropped, full)
        w.send(1, json.dumps({"id": N + 1, "customer": "txn", "amount": 1.5}).encode(), kept)
        w.send(1, json.dumps({"id": N + 2, "customer": "aborted", "amount": 2.5}).encode(), dropped)
        w.end_txn(dropped, commit=False)
        w.end_txn(kept, commit=True)
    expected = N + 2
    table = wait_rows(tmp_path, topic, expected)
    # Two more commit intervals: nothing is committed twice.
    time.sleep(2.5)  # reason: two more commits (commitIntervalSeconds=1) must add nothing
    table = catalog_of(tmp_path).load_table(("public", "default", topic)).scan().to_arrow()
    assert table.num_rows == expected
    rows = table.to_pylist()
    got = sorted(r["id"] for r in rows)
    assert got == list(range(N + 2)), "each committed message once, the aborted one never"
    by_id = {r["id"]: r for r in rows}
    # Typed columns from the JSON schema beside the message's own.
    types = {f.name: str(f.type) for f in table.schema}
    assert types["id"] == "int32" and types["customer"] == "string" and types["amount"] == "double", types
    r = by_id[1234]
    assert r["customer"] == "c34" and r["amount"] == 1234 / 4 and r["__key"] == "c34"
    assert dict(r["__properties"]) == {"i": "1234"}
    assert r["__producer_name"] == producer.producer_name()
    mid = ids[1234]
    assert (r["__ledger_id"], r["__entry_id"], r["__index_in_batch"]) == (
        mid.ledger_id(),
        mid.entry_id(),
        mid.batch_index(),
    )
    assert r["__index_in_batch"] >= 0 and r["__partition"] == -1
    assert r["__publish_time"] is not None and r["__schema_version"] == 0
    big = by_id[N]
    assert len(big["customer"]) == CHUNKED and big["__key"] == "big"
    assert (big["__ledger_id"], big["__entry_id"]) == (chunk_id.ledger_id(), chunk_id.entry_id())
    assert by_id[N + 1]["customer"] == "txn" and by_id[N + 1]["amount"] == 1.5
    # The status: what is committed, through which message id.
    s = status(broker, topic)
    assert s["exists"] is True and s["table"] == f"public.default.{topic}", s
    assert s["appliedPolicy"]["enabled"] is True and s["totalRecords"] == expected, s
    ledger, entry, _ = (int(x) for x in s["lastCommittedMessageId"]["-1"].split(":"))
    assert (ledger, entry) >= (chunk_id.ledger_id(), chunk_id.entry_id()), s
    assert s["committedHere"][full]["rowsCommitted"] == expected, s
    # The CLI prints the same status.
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pulsar_rs.cli",
            "admin",
            "--admin-url",
            broker.admin_url,
            "--json",
            "topics",
            "table-status",
            full,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert json.loads(out)["totalRecords"] == expected, out


def test_a_compatible_schema_version_adds_a_column(pulsar_broker_factory, client_factory, tmp_path) -> None:
    topic = "iceberg-evolving"
    full = f"persistent://public/default/{topic}"
    broker = table_broker(pulsar_broker_factory, tmp_path)
    code, body = admin(
        broker.admin_url,
        "POST",
        f"/admin/v2/persistent/public/default/{topic}/icebergTable",
        {"enabled": True, "commitIntervalSeconds": 1, "partitionBy": "hour"},
    )
    # The topic does not exist yet: its policy waits for it.
    client = client_factory(broker.service_url)
    v1 = client.create_producer(full, schema=JsonSchema(Order))
    if code != 204:
        code, body = admin(
            broker.admin_url,
            "POST",
            f"/admin/v2/persistent/public/default/{topic}/icebergTable",
            {"enabled": True, "commitIntervalSeconds": 1, "partitionBy": "hour"},
        )
    assert code == 204, (code, body)
    for i in range(10):
        v1.send(Order(id=i, customer="a", amount=1.0))
    wait_rows(tmp_path, topic, 10)
    v2 = client.create_producer(full, schema=JsonSchema(OrderV2))
    for i in range(10, 20):
        v2.send(OrderV2(id=i, customer="b", amount=2.0, region="eu"))
    table = wait_rows(tmp_path, topic, 20)
    assert table.num_rows == 20
    rows = {r["id"]: r for r in table.to_pylist()}
    assert rows[3]["region"] is None and rows[15]["region"] == "eu"
    assert rows[15]["__schema_version"] == 1 and rows[3]["__schema_version"] == 0
    spec = catalog_of(tmp_path).load_table(("public", "default", topic)).spec()
    assert [str(f.transform) for f in spec.fields] == ["hour"], spec


def test_policies_without_a_catalog_or_malformed_are_refused(pulsar_broker_factory, tmp_path) -> None:
    plain = pulsar_broker_factory()
    code, body = admin(plain.admin_url, "POST", "/admin/v2/namespaces/public/default/icebergTable", {"enabled": True})
    assert code == 412 and "icebergCatalogUri" in str(body), (code, body)
    broker = table_broker(pulsar_broker_factory, tmp_path)
    path = "/admin/v2/namespaces/public/default/icebergTable"
    for bad in ({"enabled": "yes"}, {"commitIntervalSeconds": 0}, {"partitionBy": "week"}, [1]):
        code, body = admin(broker.admin_url, "POST", path, bad)
        assert code == 400, (bad, code, body)
    code, _ = admin(broker.admin_url, "POST", path, {"enabled": True, "commitIntervalSeconds": 5})
    assert code == 204
    code, body = admin(broker.admin_url, "GET", path)
    assert body == {"enabled": True, "commitIntervalSeconds": 5, "partitionBy": "day"}, body
    code, _ = admin(broker.admin_url, "DELETE", path)
    assert code == 204
    assert admin(broker.admin_url, "GET", path)[1] is None


def test_avro_and_string_schemas_give_typed_columns(pulsar_broker_factory, client_factory, tmp_path) -> None:
    broker = table_broker(pulsar_broker_factory, tmp_path)
    code, body = admin(
        broker.admin_url,
        "POST",
        "/admin/v2/namespaces/public/default/icebergTable",
        {"enabled": True, "commitIntervalSeconds": 1, "partitionBy": "none"},
    )
    assert code == 204, (code, body)
    client = client_factory(broker.service_url)
    avro = client.create_producer("persistent://public/default/avro-orders", schema=AvroSchema(Order))
    for i in range(20):
        avro.send(Order(id=i, customer=f"a{i}", amount=i + 0.25))
    texts = client.create_producer("persistent://public/default/text-values", schema=StringSchema())
    for i in range(20):
        texts.send(f"line {i}")
    table = wait_rows(tmp_path, "avro-orders", 20)
    rows = sorted(table.to_pylist(), key=lambda r: r["id"])
    assert [(r["id"], r["customer"], r["amount"]) for r in rows] == [(i, f"a{i}", i + 0.25) for i in range(20)]
    table = wait_rows(tmp_path, "text-values", 20)
    assert str(table.schema.field("value").type) == "string"
    assert sorted(table.column("value").to_pylist()) == sorted(f"line {i}" for i in range(20))
