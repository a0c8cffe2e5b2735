"""Chunked messages with the official ``pulsar-client``: a message larger than ``maxMessageSize``
is sent as chunks (one entry each, the limit applying per chunk) and reassembled by the client;
backlog counts the chunk entries and an acknowledgement clears them all; unacknowledged chunked
messages are redelivered whole; on Shared subscriptions all chunks of a message go to one consumer."""

from __future__ import annotations

import hashlib

import pulsar
import pytest

from conftest import admin, assert_no_more, new_client

pytestmark = pytest.mark.timeout(60)

MAX = 64 * 1024


def _payload(n: int, seed: int = 0) -> bytes:
    return bytes((i * 7 + seed) % 251 for i in range(n))


def _producer(client, topic):
    return client.create_producer(topic, chunking_enabled=True, batching_enabled=False, send_timeout_millis=5000)


def _stats(broker, topic):
    status, stats = admin(broker.admin_url, "GET", "/admin/v2/persistent/" + topic.split("://", 1)[1] + "/stats")
    assert status == 200
    return stats


@pytest.mark.parametrize("sub_type", [pulsar.ConsumerType.Exclusive, pulsar.ConsumerType.Failover])
def test_large_message_is_chunked_and_reassembled(pulsar_broker_factory, topic, sub_type):
    broker = pulsar_broker_factory(maxMessageSize=MAX)
    client = new_client(broker.service_url)
    try:
        consumer = client.subscribe(topic, "s", consumer_type=sub_type)
        p = _producer(client, topic)
        big = _payload(5 * MAX + 123)
        p.send(b"small")
        p.send(big)
        p.send(b"after")
        got = [consumer.receive(timeout_millis=5000) for _ in range(3)]
        assert [m.data() for m in got] == [b"small", big, b"after"]
        stats = _stats(broker, topic)
        # 1 + 6 chunk entries + 1, none acknowledged yet.
        assert stats["subscriptions"]["s"]["msgBacklog"] == 8
        for m in got:
            consumer.acknowledge(m)
        consumer.close()  # flushes the acknowledgements
        assert _stats(broker, topic)["subscriptions"]["s"]["msgBacklog"] == 0
    finally:
        client.close()


def test_unacked_chunked_message_is_redelivered_whole(pulsar_broker_factory, topic):
    broker = pulsar_broker_factory(maxMessageSize=MAX)
    client = new_client(broker.service_url)
    try:
        consumer = client.subscribe(topic, "s")
        big = _payload(3 * MAX, seed=5)
        _producer(client, topic).send(big)
        assert consumer.receive(timeout_millis=5000).data() == big
        consumer.close()  # no ack
        consumer = client.subscribe(topic, "s")
        m = consumer.receive(timeout_millis=5000)
        assert m.data() == big
        consumer.acknowledge(m)
        assert_no_more(consumer)
    finally:
        client.close()


def test_without_chunking_the_same_message_is_too_big(pulsar_broker_factory, topic):
    broker = pulsar_broker_factory(maxMessageSize=MAX)
    client = new_client(broker.service_url)
    try:
        p = client.create_producer(topic, batching_enabled=False)
        with pytest.raises(pulsar.MessageTooBig):
            p.send(_payload(2 * MAX))
    finally:
        client.close()


def test_twelve_mib_with_default_max_message_size(pulsar_broker, topic):
    client = new_client(pulsar_broker.service_url)
    try:
        consumer = client.subscribe(topic, "s")
        big = _payload(12 << 20, seed=9)
        _producer(client, topic).send(big)
        m = consumer.receive(timeout_millis=10000)
        assert m.data() == big
        consumer.acknowledge(m)
        consumer.close()
        # 12 MiB in chunks of just under 5 MiB: three entries, all acknowledged.
        assert _stats(pulsar_broker, topic)["subscriptions"]["s"]["msgBacklog"] == 0
        assert _stats(pulsar_broker, topic)["msgInCounter"] == 3
    finally:
        client.close()


def test_shared_subscription_gets_each_chunked_message_whole_once(pulsar_broker_factory, topic):
    """Two Shared consumers: every chunk of a message goes to one consumer (Pulsar's
    SharedConsumerAssignor), so each big message is reassembled exactly once across them, with
    the small messages between them spread round-robin."""
    mib = 1 << 20
    broker = pulsar_broker_factory(maxMessageSize=mib, dispatcherMaxRoundRobinBatchSize=1)
    client = new_client(broker.service_url)
    try:
        consumers = [
            client.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Shared, consumer_name=n) for n in "ab"
        ]
        p = _producer(client, topic)
        bigs = [_payload(3 * mib + 1000 * i, seed=i) for i in range(4)]
        expected = []
        for i, big in enumerate(bigs):
            for j in range(2):
                p.send(f"small-{i}-{j}".encode())
                expected.append(f"small-{i}-{j}".encode())
            p.send(big)
            expected.append(big)
        got: dict[str, list[bytes]] = {"a": [], "b": []}
        idle = 0
        while idle < 3 and sum(len(v) for v in got.values()) < len(expected):
            idle += 1
            for name, c in zip("ab", consumers, strict=True):
                try:
                    m = c.receive(timeout_millis=1000)
                except pulsar.Timeout:
                    continue
                got[name].append(m.data())
                c.acknowledge(m)
                idle = 0

        def digest(msgs):
            return sorted((len(d), hashlib.sha1(d).hexdigest()) for d in msgs)

        assert digest(got["a"] + got["b"]) == digest(expected), "each message exactly once, whole"
        assert got["a"] and got["b"], "both consumers served"
        for c in consumers:
            assert_no_more(c)
        for c in consumers:
            c.close()
        assert _stats(broker, topic)["subscriptions"]["s"]["msgBacklog"] == 0
    finally:
        client.close()
