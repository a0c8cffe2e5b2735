"""Arrow exports: live from a Broker, offline from a data directory, and the Parquet snapshot CLI."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path

import pulsar
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pulsar_rs import Broker
from pulsar_rs.export import TABLES, snapshot_tables, write_snapshot


def _produce_and_ack_holes(broker: Broker, topic: str, n: int) -> None:
    client = pulsar.Client(broker.service_url, operation_timeout_seconds=10)
    try:
        producer = client.create_producer(topic, batching_enabled=False)
        consumer = client.subscribe(topic, "sub", initial_position=pulsar.InitialPosition.Earliest)
        for i in range(n):
            producer.send(f"m{i}".encode(), partition_key=f"key-{i % 4}")
        received = [consumer.receive(timeout_millis=5000) for _ in range(n)]
        for m in received[1::2]:  # ack every other message: holes after the first
            consumer.acknowledge(m)
        producer.flush()
    finally:
        client.close()


def _stats(broker: Broker, topic: str) -> dict:
    with urllib.request.urlopen(f"{broker.admin_url}/admin/v2/persistent/public/default/{topic}/stats") as r:
        return json.load(r)


def test_live_export_matches_broker_stats(tmp_path: Path) -> None:
    with Broker(data_dir=tmp_path / "data") as broker:
        _produce_and_ack_holes(broker, "exp-live", 30)
        tables = snapshot_tables(broker)
        assert set(tables) == set(TABLES)
        stats = _stats(broker, "exp-live")
    subs = tables["subscriptions"].to_pylist()
    assert len(subs) == 1
    sub = subs[0]
    assert sub["backlog_entries"] == stats["subscriptions"]["sub"]["msgBacklog"] == 15
    assert sub["backlog_size_bytes"] == stats["subscriptions"]["sub"]["backlogSize"]
    assert sub["ack_ranges"] == 15 and sub["acked_entries"] == 15
    assert tables["ack_ranges"].num_rows == 15
    entries = tables["entries"]
    assert entries.num_rows == 30
    assert set(entries.column("key").to_pylist()) == {f"key-{i}" for i in range(4)}
    assert all(h is not None and h >= 0 for h in entries.column("key_hash").to_pylist())
    assert tables["topics"].column("entries").to_pylist() == [30]


def test_offline_export_and_lock(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with Broker(data_dir=data) as broker:
        _produce_and_ack_holes(broker, "exp-off", 10)
        # Offline export opens the directory read-only (no lock, no writes): it works, and
        # cannot disturb, while a broker runs on it.
        assert snapshot_tables(data)["topics"].num_rows >= 1
    tables = snapshot_tables(data)
    assert tables["subscriptions"].column("backlog_entries").to_pylist() == [5]
    assert tables["consumers"].num_rows == 0


def test_stream_is_consumed_once() -> None:
    with Broker() as broker:
        streams = broker.export_tables()
        t = pa.table(streams["topics"])
        assert t.schema.names[0] == "topic"
        with pytest.raises(ValueError, match="already consumed"):
            pa.table(streams["topics"])


def test_snapshots_accumulate_side_by_side(tmp_path: Path) -> None:
    data, out = tmp_path / "data", tmp_path / "out"
    with Broker(data_dir=data) as broker:
        _produce_and_ack_holes(broker, "exp-snap", 6)
        write_snapshot(broker, out, broker_id="b1", snapshot_ms=1000)
    cli = [sys.executable, "-m", "pulsar_rs.cli", "export", "--data-dir", str(data), "--out", str(out)]
    result = subprocess.run([*cli, "--broker-id", "b2"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    manifest = json.loads(result.stdout)
    assert manifest["schema_version"] == 1 and manifest["source"] == "offline"
    subs = pq.read_table(out / "subscriptions").to_pylist()
    assert sorted(s["broker"] for s in subs) == ["b1", "b2"]
    assert {s["backlog_entries"] for s in subs} == {3}
