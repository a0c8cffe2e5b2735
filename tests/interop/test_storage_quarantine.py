"""Corruption stays contained, seen through the official ``pulsar-client``.

Two topics of 200 messages; a few bytes of the first topic's metadata record are overwritten
while the broker is stopped. The broker must still start, the second topic must serve every
message, the first topic's clients must get an error naming the problem, and the admin API must
say why it is quarantined. Also: an offline export opens the directory read-only (no file
changes)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pulsar
import pytest

import pulsar_rs
from conftest import admin, new_client, receive_all
from pulsar_rs._native import META_DIR, METADATA_PREFIXES
from pulsar_rs.export import snapshot_tables

pytestmark = pytest.mark.timeout(120)

EARLIEST = pulsar.InitialPosition.Earliest
BAD = "persistent://public/default/quarantine-bad"
GOOD = "persistent://public/default/quarantine-good"


def _fill(data: Path) -> None:
    with pulsar_rs.Broker(data_dir=data) as broker:
        client = new_client(broker.service_url)
        for topic in (BAD, GOOD):
            client.subscribe(topic, "sub", initial_position=EARLIEST).close()
            producer = client.create_producer(topic)
            for i in range(200):
                producer.send(f"{topic}-{i}".encode())
            producer.close()
        client.close()
        broker.stop()


def _tree_digest(root: Path) -> dict[str, str]:
    files = [p for p in root.rglob("*") if p.is_file()]
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


@pytest.mark.slow  # about 10 s here (README, 'Tests')
def test_corrupt_metadata_quarantines_one_topic_and_the_broker_serves_the_rest(tmp_path):
    data = tmp_path / "data"
    _fill(data)
    records = data / META_DIR / METADATA_PREFIXES["managed_ledgers"]
    [record] = [p for p in records.iterdir() if "quarantine-bad" in p.name]
    raw = bytearray(record.read_bytes())
    raw[2:6] = b"\xff\xfe\xfd\xfc"
    record.write_bytes(bytes(raw))

    with pulsar_rs.Broker(data_dir=data) as broker:
        client = new_client(broker.service_url)
        try:
            good = client.subscribe(GOOD, "sub", initial_position=EARLIEST)
            got = receive_all(good, 200)
            assert [m.data() for m in got] == [f"{GOOD}-{i}".encode() for i in range(200)]
            with pytest.raises(Exception) as err:
                client.create_producer(BAD)
            assert not isinstance(err.value, AssertionError)
            base = "/admin/v2/persistent/public/default"
            status, body = admin(broker.admin_url, "GET", f"{base}/quarantine-bad/internalStats")
            assert status >= 500
            assert "quarantined" in str(body) and "corrupt" in str(body)
            status, stats = admin(broker.admin_url, "GET", f"{base}/quarantine-good/internalStats")
            assert status == 200
            assert stats["corruptEntries"] == []
        finally:
            client.close()


def test_offline_export_changes_no_file(tmp_path):
    data = tmp_path / "data"
    _fill(data)
    before = _tree_digest(data)
    tables = snapshot_tables(data)
    assert tables["entries"].num_rows == 400
    assert _tree_digest(data) == before
