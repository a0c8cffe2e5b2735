"""Topic compaction with the official client: keyed messages and tombstones are compacted, a
``read_compacted`` reader sees the last value per key then the live tail, the status JSON, the
view survives a restart, and the ``compactionThreshold`` monitor compacts by itself."""

from __future__ import annotations

import time

import pulsar
import pytest

import pulsar_rs
from conftest import admin, new_client
from pulsar_rs.export import snapshot_tables
from raw_protocol import send_null_values

pytestmark = pytest.mark.timeout(60)


def _path(topic: str) -> str:
    return "/admin/v2/persistent/" + topic.removeprefix("persistent://")


def _wait_status(admin_url: str, topic: str, want: str = "SUCCESS") -> dict:
    deadline = time.monotonic() + 15
    while True:
        code, body = admin(admin_url, "GET", _path(topic) + "/compaction")
        assert code == 200, body
        if body["status"] == want or time.monotonic() > deadline:
            return body
        time.sleep(0.05)  # poll: compaction runs in the background


def _produce(client, topic: str, items: list[tuple[str | None, bytes | None]], service_url: str = "") -> None:
    """Publishes ``items`` in order; a ``None`` value is a null value (a tombstone), sent on a raw
    connection to ``service_url`` as the Java and Go clients send one (the C++-based Python client
    cannot: its empty payload is an ordinary value, on Apache Pulsar as here)."""
    p = client.create_producer(topic, batching_enabled=False)
    for key, value in items:
        if value is None:
            assert key is not None and service_url, "a null value needs a key and the service URL"
            send_null_values(service_url, topic, [key])
        elif key is None:
            p.send(value)
        else:
            p.send(value, partition_key=key)
    p.close()


def _read_compacted(client, topic: str) -> list[tuple[str, bytes]]:
    r = client.create_reader(topic, pulsar.MessageId.earliest, is_read_compacted=True)
    out = []
    while True:
        try:
            m = r.read_next(timeout_millis=1500)
        except pulsar.Timeout:
            break
        out.append((m.partition_key(), m.data()))
    r.close()
    return out


HISTORY = [
    ("a", b"a1"),
    ("b", b"b1"),
    (None, b"no-key"),
    ("a", b"a2"),
    ("c", b"c1"),
    ("b", None),  # null value (tombstone): b disappears
    ("c", b"c2"),
]


def test_compact_then_read_compacted_sees_last_values_then_live(pulsar_broker, topic):
    client = new_client(pulsar_broker.service_url)
    _produce(client, topic, HISTORY, pulsar_broker.service_url)
    url = pulsar_broker.admin_url
    code, body = admin(url, "GET", _path(topic) + "/compaction")
    assert (code, body) == (200, {"status": "NOT_RUN", "lastError": ""})
    code, _ = admin(url, "PUT", _path(topic) + "/compaction")
    assert code == 204
    assert _wait_status(url, topic) == {"status": "SUCCESS", "lastError": ""}

    assert _read_compacted(client, topic) == [("a", b"a2"), ("c", b"c2")]
    # Pulsar's stats.compaction: 7 messages read, 2 kept.
    last = admin(url, "GET", _path(topic) + "/stats")[1]["compaction"]
    assert last["lastCompactionRemovedEventCount"] == 5
    assert last["lastCompactionSucceedTimestamp"] > 0 and last["lastCompactionFailedTimestamp"] == 0
    assert last["lastCompactionDurationTimeInMills"] >= 0
    # Without read_compacted the whole history is still there.
    r = client.create_reader(topic, pulsar.MessageId.earliest)
    assert len([r.read_next(timeout_millis=3000) for _ in HISTORY]) == len(HISTORY)
    r.close()

    # New live messages come after the compacted view.
    _produce(client, topic, [("a", b"a3"), ("d", b"d1")])
    assert _read_compacted(client, topic) == [
        ("a", b"a2"),
        ("c", b"c2"),
        ("a", b"a3"),
        ("d", b"d1"),
    ]
    # A second run folds them in.
    assert admin(url, "PUT", _path(topic) + "/compaction")[0] == 204
    _wait_status(url, topic)
    assert _read_compacted(client, topic) == [("c", b"c2"), ("a", b"a3"), ("d", b"d1")]

    code, stats = admin(url, "GET", _path(topic) + "/internalStats")
    assert code == 200
    assert stats["compactedLedger"]["entries"] == 3
    assert stats["compactedLedger"]["ledgerId"] > 0
    assert "__compaction" in stats["cursors"]
    assert (
        stats["cursors"]["__compaction"]["properties"]["CompactedTopicLedger"] == (stats["compactedLedger"]["ledgerId"])
    )
    client.close()


@pytest.mark.parametrize("codec", ["LZ4", "ZLib", "ZSTD", "SNAPPY"])
def test_compressed_batches_are_compacted_per_message(pulsar_broker, topic, codec):
    # Pulsar's compactor decompresses a batch, keeps its winning messages and compresses it
    # again with the same codec; a compressed batch must not leak overwritten values.
    client = new_client(pulsar_broker.service_url)
    p = client.create_producer(
        topic,
        batching_enabled=True,
        batching_max_messages=len(HISTORY),
        batching_max_publish_delay_ms=60_000,
        compression_type=getattr(pulsar.CompressionType, codec),
    )
    for key, value in HISTORY:
        # In a batch an empty member is the null value (Pulsar reads its payload size).
        p.send_async(value or b"", None, **({"partition_key": key} if key else {}))
    p.flush()
    p.close()
    code, _ = admin(pulsar_broker.admin_url, "PUT", _path(topic) + "/compaction")
    assert code == 204
    assert _wait_status(pulsar_broker.admin_url, topic)["status"] == "SUCCESS"
    assert _read_compacted(client, topic) == [("a", b"a2"), ("c", b"c2")]
    client.close()


def test_read_compacted_refused_on_shared(pulsar_broker, topic):
    client = new_client(pulsar_broker.service_url)
    # The C++ client refuses this itself (InvalidConfiguration) before the broker would
    # (NotAllowedError; covered by the broker's unit test of check_subscribe).
    with pytest.raises((pulsar.InvalidConfiguration, pulsar.NotAllowedError)):
        client.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Shared, is_read_compacted=True)
    # Exclusive is fine, and a consumer sees the view too.
    _produce(client, topic, [("k", b"v1"), ("k", b"v2")])
    admin(pulsar_broker.admin_url, "PUT", _path(topic) + "/compaction")
    _wait_status(pulsar_broker.admin_url, topic)
    c = client.subscribe(
        topic,
        "ex",
        consumer_type=pulsar.ConsumerType.Exclusive,
        initial_position=pulsar.InitialPosition.Earliest,
        is_read_compacted=True,
    )
    m = c.receive(timeout_millis=5000)
    assert m.data() == b"v2"
    c.acknowledge(m)
    with pytest.raises(pulsar.Timeout):
        c.receive(timeout_millis=500)
    client.close()


def test_compaction_of_missing_and_partitioned_topics(pulsar_broker, topic):
    url = pulsar_broker.admin_url
    assert admin(url, "PUT", _path(topic) + "/compaction")[0] == 404
    assert admin(url, "PUT", _path(topic) + "/partitions", 2)[0] == 204
    client = new_client(pulsar_broker.service_url)
    _produce(client, topic, [("a", b"1"), ("a", b"2"), ("b", b"3")])
    assert admin(url, "PUT", _path(topic) + "/compaction")[0] == 204
    for i in range(2):
        _wait_status(url, f"{topic}-partition-{i}")
    got = []
    for i in range(2):
        got += _read_compacted(client, f"{topic}-partition-{i}")
    assert sorted(got) == [("a", b"2"), ("b", b"3")]
    client.close()


def test_restart_keeps_the_compacted_view(tmp_path, topic):
    data = str(tmp_path / "data")
    with pulsar_rs.Broker(data_dir=data) as broker:
        client = new_client(broker.service_url)
        _produce(client, topic, HISTORY, broker.service_url)
        admin(broker.admin_url, "PUT", _path(topic) + "/compaction")
        _wait_status(broker.admin_url, topic)
        client.close()
    with pulsar_rs.Broker(data_dir=data) as broker:
        client = new_client(broker.service_url)
        assert _read_compacted(client, topic) == [("a", b"a2"), ("c", b"c2")]
        _, stats = admin(broker.admin_url, "GET", _path(topic) + "/internalStats")
        assert stats["compactedLedger"]["entries"] == 2
        horizon = stats["cursors"]["__compaction"]["markDeletePosition"]
        # The Arrow export carries the same compaction state.
        row = next(r for r in snapshot_tables(broker)["topics"].to_pylist() if r["topic"] == topic)
        assert row["compacted_entries"] == 2
        assert row["compacted_ledger_id"] == stats["compactedLedger"]["ledgerId"]
        assert f"{row['compaction_horizon_ledger']}:{row['compaction_horizon_entry']}" == horizon
        client.close()


def test_threshold_compacts_automatically(pulsar_broker_factory, topic):
    broker = pulsar_broker_factory(brokerServiceCompactionMonitorIntervalInSeconds=1)
    url = broker.admin_url
    ns = "/admin/v2/namespaces/public/default/compactionThreshold"
    client = new_client(broker.service_url)
    _produce(client, topic, [("k", b"x" * 100), ("k", b"y" * 100), ("j", b"z")])
    time.sleep(1.5)  # negative check over the compaction monitor's real-time schedule (1 s)
    # Threshold off (0 by default): nothing happens.
    assert admin(url, "GET", _path(topic) + "/compaction")[1]["status"] == "NOT_RUN"
    assert admin(url, "POST", ns, 100)[0] == 204
    assert admin(url, "GET", ns)[1] == 100
    body = _wait_status(url, topic)
    assert body["status"] == "SUCCESS"
    assert _read_compacted(client, topic) == [("k", b"y" * 100), ("j", b"z")]
    # The topic policy overrides the namespace's.
    assert admin(url, "POST", _path(topic) + "/compactionThreshold", 0)[0] == 204
    assert admin(url, "GET", _path(topic) + "/compactionThreshold")[1] == 0
    client.close()


def test_bad_threshold_is_refused(pulsar_broker):
    code, _ = admin(
        pulsar_broker.admin_url,
        "POST",
        "/admin/v2/namespaces/public/default/compactionThreshold",
        -5,
    )
    assert code == 412


def _compact(url: str, topic: str) -> None:
    assert admin(url, "PUT", _path(topic) + "/compaction")[0] == 204
    assert _wait_status(url, topic) == {"status": "SUCCESS", "lastError": ""}


def test_read_compacted_last_message_id_is_the_views_last(pulsar_broker, topic):
    """As Pulsar 4.x (ServerCnx.getLargestBatchIndexWhenPossible with readCompacted): when the
    topic is compacted up to its last entry, GET_LAST_MESSAGE_ID answers the compacted view's last
    message, so a reader whose last key was deleted has nothing more available."""
    client = new_client(pulsar_broker.service_url)
    url = pulsar_broker.admin_url
    _produce(client, topic, [("a", b"a1"), ("b", b"b1"), ("b", None)], pulsar_broker.service_url)
    _compact(url, topic)
    r = client.create_reader(topic, pulsar.MessageId.earliest, is_read_compacted=True)
    assert r.has_message_available()
    m = r.read_next(timeout_millis=3000)
    assert (m.partition_key(), m.data()) == ("a", b"a1")
    assert not r.has_message_available(), "the tombstone of b is not in the view"
    # A plain reader still sees the whole topic, the tombstone last.
    plain = client.create_reader(topic, pulsar.MessageId.earliest)
    assert [plain.read_next(timeout_millis=3000).data() for _ in range(3)][-1] == b""
    assert not plain.has_message_available()
    plain.close()
    # Past the horizon the live topic counts again.
    _produce(client, topic, [("c", b"c1")])
    assert r.has_message_available()
    assert r.read_next(timeout_millis=3000).data() == b"c1"
    assert not r.has_message_available()
    r.close()
    # Every key deleted: the view is empty and so is the compacted reader's topic.
    _produce(client, topic, [("a", None), ("c", None)], pulsar_broker.service_url)
    _compact(url, topic)
    r = client.create_reader(topic, pulsar.MessageId.earliest, is_read_compacted=True)
    assert not r.has_message_available()
    r.close()
    client.close()


def test_an_empty_payload_of_the_python_client_is_a_value(pulsar_broker, topic):
    """The C++-based client sends no ``uncompressed_size``: its empty payload is a value, which
    Apache Pulsar 4.0 keeps in the compacted view (tests/differential checks it against Pulsar)."""
    client = new_client(pulsar_broker.service_url)
    _produce(client, topic, [("a", b"a1"), ("b", b"b1"), ("a", b"")])
    _compact(pulsar_broker.admin_url, topic)
    assert _read_compacted(client, topic) == [("b", b"b1"), ("a", b"")]
    client.close()
