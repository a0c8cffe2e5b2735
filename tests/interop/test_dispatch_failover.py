"""Failover dispatch with the official client: the active consumer (hash ring on non-partitioned
topics, partition index on partitioned ones), takeover after the failover delay, and exactly the
unacknowledged rest delivered to the new active consumer."""

from __future__ import annotations

import time

import pulsar
import pytest

from conftest import admin, assert_no_more, new_client, receive_all
from dispatch_util import failover_active, murmur3_32, sub_stats, wait_for_backlog

pytestmark = pytest.mark.timeout(120)

FAILOVER = pulsar.ConsumerType.Failover
EARLIEST = pulsar.InitialPosition.Earliest


def produce(client, topic, n, prefix="m"):
    p = client.create_producer(topic, batching_enabled=False)
    for i in range(n):
        p.send(f"{prefix}{i}".encode())
    p.close()


def test_murmur_helper_matches_reference():
    assert murmur3_32(b"hello") == 0x248BFA47
    assert murmur3_32(b"The quick brown fox jumps over the lazy dog") == 0x2E4FF723


def test_takeover_after_close_delivers_exactly_the_unacked_rest(pulsar_broker, client, topic):
    produce(client, topic, 20)
    a = client.subscribe(topic, "sub", consumer_type=FAILOVER, consumer_name="a", initial_position=EARLIEST)
    got = receive_all(a, 10)
    assert [m.data() for m in got] == [f"m{i}".encode() for i in range(10)]
    wait_for_backlog(pulsar_broker, topic, "sub", 10)
    b = client.subscribe(topic, "sub", consumer_type=FAILOVER, consumer_name="b", initial_position=EARLIEST)
    a.close()
    rest = receive_all(b, 10)
    assert [m.data() for m in rest] == [f"m{i}".encode() for i in range(10, 20)]
    assert_no_more(b)


def test_new_active_consumer_takes_over_after_the_delay(pulsar_broker_factory, client_factory, topic):
    broker = pulsar_broker_factory(activeConsumerFailoverDelayTimeMillis=1500)
    client = client_factory(broker.service_url)
    # Choose names so that the joining consumer becomes the active one.
    first = "first"
    second = next(f"second-{i}" for i in range(1000) if failover_active([first, f"second-{i}"], topic) != first)
    assert failover_active([first], topic) == first
    produce(client, topic, 20)
    a = client.subscribe(topic, "sub", consumer_type=FAILOVER, consumer_name=first, initial_position=EARLIEST)
    got = receive_all(a, 5)
    assert len(got) == 5
    wait_for_backlog(broker, topic, "sub", 15)
    assert sub_stats(broker, topic, "sub")["activeConsumerName"] == first
    joined = time.monotonic()
    b = client.subscribe(topic, "sub", consumer_type=FAILOVER, consumer_name=second, initial_position=EARLIEST)
    assert sub_stats(broker, topic, "sub")["activeConsumerName"] == second
    first_msg = b.receive(timeout_millis=10000)
    waited = time.monotonic() - joined
    assert waited >= 1.2, f"dispatched to the new active consumer after {waited:.2f}s, before the delay"
    rest = [first_msg, *receive_all(b, 14)]
    assert [m.data() for m in rest] == [f"m{i}".encode() for i in range(5, 20)]
    assert_no_more(b)
    # The old consumer is on standby: new messages go to the new active one only.
    produce(client, topic, 3, prefix="n")
    assert [m.data() for m in receive_all(b, 3)] == [b"n0", b"n1", b"n2"]


def test_active_consumer_follows_the_ring(pulsar_broker, client, topic):
    names = [f"c{i}" for i in range(4)]
    consumers = [
        client.subscribe(topic, "sub", consumer_type=FAILOVER, consumer_name=n, initial_position=EARLIEST)
        for n in names
    ]
    expected = failover_active(names, topic)
    assert sub_stats(pulsar_broker, topic, "sub")["activeConsumerName"] == expected
    by_name = dict(zip(names, consumers, strict=False))
    by_name[expected].close()
    remaining = [n for n in names if n != expected]
    assert sub_stats(pulsar_broker, topic, "sub")["activeConsumerName"] == failover_active(remaining, topic)


def test_partitioned_topic_splits_partitions_between_consumers(pulsar_broker_factory, topic):
    broker = pulsar_broker_factory(activeConsumerFailoverDelayTimeMillis=0)
    short = topic.rsplit("/", 1)[1]
    status, _ = admin(broker.admin_url, "PUT", f"/admin/v2/persistent/public/default/{short}/partitions", 4)
    assert status in (200, 204)
    client = new_client(broker.service_url)
    try:
        c0 = client.subscribe(topic, "sub", consumer_type=FAILOVER, consumer_name="c0", initial_position=EARLIEST)
        c1 = client.subscribe(topic, "sub", consumer_type=FAILOVER, consumer_name="c1", initial_position=EARLIEST)
        time.sleep(0.5)  # the second consumer's join moves half the partitions' active consumer: let it settle
        producer = client.create_producer(
            topic,
            batching_enabled=False,
            message_routing_mode=pulsar.PartitionsRoutingMode.RoundRobinDistribution,
        )
        for i in range(40):
            producer.send(f"m{i}".encode())
        seen: dict[str, set[int]] = {"c0": set(), "c1": set()}
        total = 0
        for name, c in (("c0", c0), ("c1", c1)):
            for m in receive_all(c, 40, timeout_ms=1500):
                seen[name].add(int(m.topic_name().rsplit("-", 1)[1]))
                total += 1
        assert total == 40
        # Sorted by name, partition i goes to consumer i % 2.
        assert seen == {"c0": {0, 2}, "c1": {1, 3}}
    finally:
        client.close()


def test_redeliver_rewinds_for_failover(pulsar_broker, client, topic):
    produce(client, topic, 6)
    c = client.subscribe(topic, "sub", consumer_type=FAILOVER, consumer_name="x", initial_position=EARLIEST)
    got = receive_all(c, 6, ack=False)
    assert len(got) == 6
    c.acknowledge(got[0])
    wait_for_backlog(pulsar_broker, topic, "sub", 5)
    c.redeliver_unacknowledged_messages()
    again = receive_all(c, 5)
    assert [m.data() for m in again] == [f"m{i}".encode() for i in range(1, 6)]
