"""Non-persistent topics with the official ``pulsar-client``: in-memory dispatch for the four
subscription types, nothing stored, messages a consumer has no room for dropped and counted
(``msgDropRate``), partitioned topics, and seek as the no-op Pulsar makes it. (The client itself
refuses ``read_compacted`` on them, so the broker's refusal is not reachable from here.)"""

from __future__ import annotations

import time

import pulsar
import pytest

from conftest import admin, assert_no_more, new_client, receive_all

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def np_topic(topic):
    return topic.replace("persistent://", "non-persistent://", 1)


def _stats(broker, topic):
    return admin(broker.admin_url, "GET", "/admin/v2/non-persistent/" + topic.split("://", 1)[1] + "/stats")


@pytest.mark.parametrize(
    "sub_type",
    [
        pulsar.ConsumerType.Exclusive,
        pulsar.ConsumerType.Shared,
        pulsar.ConsumerType.Failover,
        pulsar.ConsumerType.KeyShared,
    ],
)
def test_produce_and_consume(pulsar_broker, np_topic, sub_type):
    client = new_client(pulsar_broker.service_url)
    try:
        consumer = client.subscribe(np_topic, "s", consumer_type=sub_type)
        p = client.create_producer(np_topic, batching_enabled=False)
        assert p.last_sequence_id() == -1
        ids = [p.send(f"m{i}".encode(), partition_key=f"k{i % 3}") for i in range(20)]
        assert all((m.ledger_id(), m.entry_id()) == (0, 0) for m in ids)
        got = receive_all(consumer, 20)
        assert [m.data() for m in got] == [f"m{i}".encode() for i in range(20)]
        # Nothing is stored: a subscription created now sees nothing of the past.
        late = client.subscribe(np_topic, "late", consumer_type=sub_type)
        assert_no_more(late)
        status, stats = _stats(pulsar_broker, np_topic)
        assert status == 200 and stats["msgInCounter"] == 20
        assert stats["subscriptions"]["s"]["msgBacklog"] == 0
        assert (
            stats["subscriptions"]["s"]["type"]
            == {
                pulsar.ConsumerType.Exclusive: "Exclusive",
                pulsar.ConsumerType.Shared: "Shared",
                pulsar.ConsumerType.Failover: "Failover",
                pulsar.ConsumerType.KeyShared: "Key_Shared",
            }[sub_type]
        )
    finally:
        client.close()


def test_messages_without_permits_are_dropped_and_counted(pulsar_broker, np_topic):
    client = new_client(pulsar_broker.service_url)
    try:
        consumer = client.subscribe(np_topic, "slow", receiver_queue_size=10)
        p = client.create_producer(np_topic, batching_enabled=False)
        for i in range(100):
            p.send(f"m{i}".encode())
        time.sleep(0.2)  # dispatch (or drop) follows the receipts asynchronously: let it finish
        status, stats = _stats(pulsar_broker, np_topic)
        assert status == 200
        dropped = stats["subscriptions"]["slow"]["msgDropCounter"]
        got = receive_all(consumer, 100, timeout_ms=500)
        # The client's queue took what its permits allowed (about receiver_queue_size, topped up
        # as the app drains it); the rest was dropped, never delivered late.
        assert dropped > 0 and len(got) + dropped == 100
        assert len(got) < 100
    finally:
        client.close()


def test_partitioned_non_persistent_topic(pulsar_broker, np_topic):
    path = "/admin/v2/non-persistent/" + np_topic.split("://", 1)[1] + "/partitions"
    assert admin(pulsar_broker.admin_url, "PUT", path, 3)[0] == 204
    assert admin(pulsar_broker.admin_url, "GET", path) == (200, {"partitions": 3, "deleted": False})
    client = new_client(pulsar_broker.service_url)
    try:
        assert len(client.get_topic_partitions(np_topic)) == 3
        consumer = client.subscribe(np_topic, "s")
        p = client.create_producer(np_topic, batching_enabled=False)
        for i in range(30):
            p.send(f"m{i}".encode(), partition_key=f"k{i}")
        got = receive_all(consumer, 30)
        assert sorted(m.data() for m in got) == sorted(f"m{i}".encode() for i in range(30))
    finally:
        client.close()


def test_seek_is_a_no_op(pulsar_broker, np_topic):
    client = new_client(pulsar_broker.service_url)
    try:
        consumer = client.subscribe(np_topic, "s")
        p = client.create_producer(np_topic)
        p.send(b"one")
        assert consumer.receive(timeout_millis=5000).data() == b"one"
        consumer.seek(pulsar.MessageId.earliest)  # succeeds, replays nothing
        assert_no_more(consumer)
        p.send(b"two")
        assert consumer.receive(timeout_millis=5000).data() == b"two"
    finally:
        client.close()


def _metric(text, name, **labels):
    """The value of the first sample of `name` whose labels include `labels`."""
    for line in text.splitlines():
        if not line.startswith(name + "{"):
            continue
        if all(f'{k}="{v}"' in line for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return None


def test_metrics_count_messages_in_out_and_dropped(pulsar_broker, np_topic):
    client = new_client(pulsar_broker.service_url)
    try:
        consumer = client.subscribe(np_topic, "slow", receiver_queue_size=10)
        p = client.create_producer(np_topic, batching_enabled=False)
        for i in range(100):
            p.send(f"m{i}".encode())
        time.sleep(0.2)  # dispatch (or drop) follows the receipts asynchronously: let it finish
        got = receive_all(consumer, 100, timeout_ms=500)
        status, stats = _stats(pulsar_broker, np_topic)
        assert status == 200
        dropped = stats["subscriptions"]["slow"]["msgDropCounter"]
        assert dropped > 0 and len(got) + dropped == 100
        status, text = admin(pulsar_broker.admin_url, "GET", "/metrics")
        assert status == 200
        assert _metric(text, "pulsar_in_messages_total", topic=np_topic) == 100
        assert _metric(text, "pulsar_subscription_msg_drop_total", topic=np_topic, subscription="slow") == dropped
        assert _metric(text, "pulsar_subscription_msg_drop_rate", topic=np_topic, subscription="slow") is not None
        assert _metric(text, "pulsar_subscription_consumers_count", topic=np_topic, subscription="slow") == 1
    finally:
        client.close()
