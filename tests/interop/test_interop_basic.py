"""Interop with the official ``pulsar-client``: producing and consuming, batching, compression,
large messages, schemas, partitioned topics, malformed input, serving as soon as ``Broker()`` returns."""

from __future__ import annotations

import collections
import socket
import struct
import threading

import pulsar
import pytest
from pulsar.schema import Integer, JsonSchema, Record, String, StringSchema

import pulsar_rs
from conftest import admin, assert_no_more, new_client, receive_all

pytestmark = pytest.mark.timeout(120)


def test_ordered_round_trip_with_properties_and_keys(client, topic):
    consumer = client.subscribe(topic, "sub", initial_position=pulsar.InitialPosition.Earliest)
    producer = client.create_producer(topic)
    ids = []
    for i in range(100):
        ids.append(
            producer.send(
                f"msg-{i}".encode(),
                properties={"i": str(i), "kind": "test"},
                partition_key=f"key-{i % 7}",
                event_timestamp=1_000 + i,
            )
        )
    got = receive_all(consumer, 100)
    assert [m.data() for m in got] == [f"msg-{i}".encode() for i in range(100)]
    for i, m in enumerate(got):
        assert m.properties() == {"i": str(i), "kind": "test"}
        assert m.partition_key() == f"key-{i % 7}"
        assert m.event_timestamp() == 1_000 + i
        assert m.message_id() == ids[i]
        assert m.redelivery_count() == 0
        assert m.publish_timestamp() > 0
    # Message ids grow with publish order.
    assert sorted(ids, key=lambda x: (x.ledger_id(), x.entry_id())) == ids
    assert_no_more(consumer)


def test_batched_async_produce_delivered_exactly_once(client, topic):
    n = 30_000
    consumer = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared)
    producer = client.create_producer(
        topic,
        batching_enabled=True,
        batching_max_messages=500,
        batching_max_publish_delay_ms=5,
        block_if_queue_full=True,
        max_pending_messages=5000,
    )
    lock = threading.Lock()
    results: dict[int, object] = {}
    failures = []

    def callback_for(i):
        def cb(res, msg_id):
            with lock:
                if res == pulsar.Result.Ok:
                    results[i] = msg_id
                else:
                    failures.append((i, res))

        return cb

    seen: dict[bytes, int] = {}

    def consume():
        while len(seen) < n:
            try:
                m = consumer.receive(timeout_millis=10_000)
            except pulsar.Timeout:
                return
            seen[m.data()] = seen.get(m.data(), 0) + 1
            consumer.acknowledge(m)

    t = threading.Thread(target=consume)
    t.start()
    for i in range(n):
        producer.send_async(str(i).encode(), callback_for(i))
    producer.flush()
    t.join(timeout=90)
    assert not failures
    assert len(results) == n
    # Batching happened: many messages share an entry.
    entries = {(m.ledger_id(), m.entry_id()) for m in results.values()}
    assert len(entries) < n / 5
    assert all(m.batch_index() >= 0 for m in list(results.values())[:10])
    assert len(seen) == n
    assert set(seen) == {str(i).encode() for i in range(n)}
    assert all(c == 1 for c in seen.values()), "duplicate delivery"
    assert_no_more(consumer)


@pytest.mark.parametrize("compression", ["LZ4", "ZSTD", "ZLib", "SNAPPY"])
@pytest.mark.parametrize("batching", [False, True])
def test_compression(client, topic, compression, batching):
    ctype = getattr(pulsar.CompressionType, compression)
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(topic, compression_type=ctype, batching_enabled=batching)
    payloads = [(f"compressible-{i}-" * 200).encode() for i in range(50)]
    for p in payloads:
        producer.send_async(p, None)
    producer.flush()
    got = receive_all(consumer, len(payloads))
    assert [m.data() for m in got] == payloads


def test_one_mib_message(client, topic):
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(topic)
    big = bytes(range(256)) * 4096  # 1 MiB
    assert len(big) == 1 << 20
    producer.send(big, properties={"size": "1MiB"})
    producer.send(b"after")
    got = receive_all(consumer, 2)
    assert got[0].data() == big
    assert got[1].data() == b"after"


def test_message_over_max_size_refused_cleanly(pulsar_broker_factory, client_factory, topic):
    broker = pulsar_broker_factory(maxMessageSize=128 * 1024)
    client = client_factory(broker.service_url)
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(topic)
    with pytest.raises(pulsar.MessageTooBig):
        producer.send(b"x" * (256 * 1024))
    # The producer and connection are still usable afterwards.
    producer.send(b"small")
    got = receive_all(consumer, 1)
    assert [m.data() for m in got] == [b"small"]
    assert_no_more(consumer)


def test_string_schema(client, topic):
    producer = client.create_producer(topic, schema=StringSchema())
    consumer = client.subscribe(topic, "sub", schema=StringSchema(), initial_position=pulsar.InitialPosition.Earliest)
    producer.send("héllo")
    producer.send("wörld")
    got = receive_all(consumer, 2)
    assert [m.value() for m in got] == ["héllo", "wörld"]


class Point(Record):
    name = String()
    x = Integer()
    y = Integer()


def test_json_schema(client, topic):
    producer = client.create_producer(topic, schema=JsonSchema(Point))
    consumer = client.subscribe(
        topic, "sub", schema=JsonSchema(Point), initial_position=pulsar.InitialPosition.Earliest
    )
    for i in range(5):
        producer.send(Point(name=f"p{i}", x=i, y=-i))
    got = receive_all(consumer, 5)
    assert [(m.value().name, m.value().x, m.value().y) for m in got] == [(f"p{i}", i, -i) for i in range(5)]
    # A second producer with the same schema attaches to the same schema version.
    producer2 = client.create_producer(topic, schema=JsonSchema(Point))
    producer2.send(Point(name="again", x=1, y=2))
    got = receive_all(consumer, 1)
    assert got[0].value().name == "again"


def _roundtrip_partitioned(client, topic, n_partitions):
    partitions = client.get_topic_partitions(topic)
    assert partitions == [f"{topic}-partition-{i}" for i in range(n_partitions)]
    consumer = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared)
    producer = client.create_producer(
        topic, message_routing_mode=pulsar.PartitionsRoutingMode.RoundRobinDistribution, batching_enabled=False
    )
    n = 60
    for i in range(n):
        producer.send(f"m{i}".encode(), partition_key=f"k{i}")
    got = receive_all(consumer, n)
    assert sorted(m.data() for m in got) == sorted(f"m{i}".encode() for i in range(n))
    used = {m.topic_name() for m in got}
    assert used == set(partitions), "round-robin routing must reach every partition"
    assert_no_more(consumer)


def test_partitioned_topic_via_admin(pulsar_broker, client, topic):
    status, _ = admin(
        pulsar_broker.admin_url, "PUT", f"/admin/v2/persistent/public/default/{topic.rsplit('/', 1)[1]}/partitions", 3
    )
    assert status in (200, 204), status
    status, meta = admin(
        pulsar_broker.admin_url, "GET", f"/admin/v2/persistent/public/default/{topic.rsplit('/', 1)[1]}/partitions"
    )
    assert status == 200 and meta == {"partitions": 3, "deleted": False}
    _roundtrip_partitioned(client, topic, 3)


def test_partitioned_topic_via_auto_creation(pulsar_broker_factory, client_factory, topic):
    broker = pulsar_broker_factory(allowAutoTopicCreationType="partitioned", defaultNumPartitions=4)
    client = client_factory(broker.service_url)
    _roundtrip_partitioned(client, topic, 4)


def test_malformed_bytes_close_only_that_connection(pulsar_broker, client, topic):
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(topic)
    producer.send(b"before")
    host, port = pulsar_broker.service_url.removeprefix("pulsar://").rsplit(":", 1)
    garbage_frames = [
        b"\x00\x00\x00\x08\x00\x00\x00\x04\xff\xff\xff\xff",  # cmdSize fits, protobuf is garbage
        struct.pack(">I", 0x7FFFFFFF) + b"x" * 16,  # frame larger than the limit
        b"\x00\x00\x00\x02\x00\x00",  # cmdSize larger than the frame
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",  # not Pulsar at all
    ]
    for junk in garbage_frames:
        s = socket.create_connection((host, int(port)), timeout=5)
        s.sendall(junk)
        # The broker closes the connection: recv sees EOF (or a reset), never hangs.
        try:
            data = s.recv(4096)
        except ConnectionResetError:
            data = b""
        assert data == b"", f"expected the broker to close after {junk!r}, got {data!r}"
        s.close()
    # The client that was already connected keeps working, and new ones connect.
    producer.send(b"after")
    got = receive_all(consumer, 2)
    assert [m.data() for m in got] == [b"before", b"after"]
    other = new_client(pulsar_broker.service_url)
    try:
        p2 = other.create_producer(topic)
        p2.send(b"from-new-client")
        assert receive_all(consumer, 1)[0].data() == b"from-new-client"
    finally:
        other.close()


def test_broker_serves_as_soon_as_constructed(tmp_path):
    """When ``Broker()`` returns the broker is serving: its port accepts at once and a producer's
    send gets a receipt, on three fresh data directories in a row. (The time it takes is measured by
    ``benches/start_to_ready.py``, not here.)"""
    for i in range(3):
        broker = pulsar_rs.Broker(data_dir=tmp_path / f"d{i}")
        try:
            host, port = broker.service_url.removeprefix("pulsar://").rsplit(":", 1)
            socket.create_connection((host, int(port)), timeout=1).close()  # accepting already
            client = new_client(broker.service_url)
            try:
                msg_id = client.create_producer("persistent://public/default/ready").send(b"x")
                assert msg_id.entry_id() == 0
            finally:
                client.close()
        finally:
            broker.stop()


def test_exclusive_producer_access_mode(client, topic):
    first = client.create_producer(topic, access_mode=pulsar.ProducerAccessMode.Exclusive)
    with pytest.raises(pulsar.PulsarException):
        client.create_producer(topic, access_mode=pulsar.ProducerAccessMode.Exclusive)
    with pytest.raises(pulsar.PulsarException):
        client.create_producer(topic)  # Shared while an Exclusive one is attached
    first.send(b"still-works")
    first.close()
    client.create_producer(topic, access_mode=pulsar.ProducerAccessMode.Exclusive).send(b"x")


def test_duplicate_producer_name_is_busy(client, topic):
    client.create_producer(topic, producer_name="same")
    with pytest.raises(pulsar.ProducerBusy):
        client.create_producer(topic, producer_name="same")


def test_producer_name_and_sequence_ids(client, topic):
    consumer = client.subscribe(topic, "sub")
    named = client.create_producer(topic, producer_name="alice")
    assert named.producer_name() == "alice"
    unnamed = client.create_producer(topic)
    assert unnamed.producer_name(), "the broker generates a name"
    assert unnamed.producer_name() != "alice"
    named.send(b"a")
    unnamed.send(b"b")
    got = receive_all(consumer, 2)
    assert [m.data() for m in got] == [b"a", b"b"]
    assert named.last_sequence_id() == 0 and unnamed.last_sequence_id() == 0


def test_many_topics_and_producers_concurrently(client, topic):
    topics = [f"{topic}-{k}" for k in range(8)]
    consumers = [client.subscribe(t, "sub") for t in topics]
    producers = [client.create_producer(t, batching_enabled=True, block_if_queue_full=True) for t in topics]
    per_topic = 2000
    results: list = []
    for i in range(per_topic):
        for p in producers:
            p.send_async(str(i).encode(), lambda res, _id: results.append(res))
    for p in producers:
        p.flush()
    outcome = collections.Counter(str(r) for r in results)
    assert outcome == {"Result.Ok": per_topic * len(topics)}, outcome
    for c in consumers:
        assert [int(m.data()) for m in receive_all(c, per_topic)] == list(range(per_topic))
        assert_no_more(c, 200)


def test_reader_on_partitioned_topic(pulsar_broker, client, topic):
    status, _ = admin(
        pulsar_broker.admin_url, "PUT", f"/admin/v2/persistent/public/default/{topic.rsplit('/', 1)[1]}/partitions", 3
    )
    assert status in (200, 204)
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(30):
        producer.send(f"r{i}".encode())
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    got = [reader.read_next(timeout_millis=5000).data() for _ in range(30)]
    assert sorted(got) == sorted(f"r{i}".encode() for i in range(30))
    assert reader.has_message_available() is False
