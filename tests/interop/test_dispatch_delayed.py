"""Delayed delivery with the official client: deliver_after / deliver_at honoured on Shared and
Key_Shared, ignored on Exclusive and Failover (as Pulsar), and kept across a broker restart."""

from __future__ import annotations

import time
from datetime import timedelta

import pulsar
import pytest

import pulsar_rs
from conftest import assert_no_more, new_client, receive_all
from dispatch_util import sub_stats, wait_for_backlog

pytestmark = pytest.mark.timeout(120)

EARLIEST = pulsar.InitialPosition.Earliest
STRICT = {"delayedDeliveryTickTimeMillis": 100, "delayedDeliveryDeliverAtTimeStrict": True}


@pytest.mark.parametrize(
    "sub_type", [pulsar.ConsumerType.Shared, pulsar.ConsumerType.KeyShared], ids=["shared", "key_shared"]
)
def test_deliver_after_is_honoured(pulsar_broker_factory, client_factory, topic, sub_type):
    broker = pulsar_broker_factory(**STRICT)
    client = client_factory(broker.service_url)
    c = client.subscribe(topic, "sub", consumer_type=sub_type, initial_position=EARLIEST)
    p = client.create_producer(topic, batching_enabled=False)
    sent = time.time()
    p.send(b"late", partition_key="k", deliver_after=timedelta(seconds=2))
    p.send(b"on-time", partition_key="k")
    first = c.receive(timeout_millis=1500)
    assert first.data() == b"on-time", "a delayed message does not hold back the others"
    c.acknowledge(first)
    assert sub_stats(broker, topic, "sub")["msgDelayed"] == 1
    late = c.receive(timeout_millis=5000)
    elapsed = time.time() - sent
    assert late.data() == b"late"
    assert 1.95 <= elapsed < 3.5, elapsed
    c.acknowledge(late)


def test_deliver_at_orders_by_time(pulsar_broker_factory, client_factory, topic):
    broker = pulsar_broker_factory(**STRICT)
    client = client_factory(broker.service_url)
    c = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared, initial_position=EARLIEST)
    p = client.create_producer(topic, batching_enabled=False)
    now_ms = int(time.time() * 1000)
    for i, delay in enumerate([1500, 500, 1000]):
        p.send(f"d{i}".encode(), deliver_at=now_ms + delay)
    got = receive_all(c, 3, timeout_ms=4000)
    assert [m.data() for m in got] == [b"d1", b"d2", b"d0"]


@pytest.mark.parametrize(
    "sub_type", [pulsar.ConsumerType.Exclusive, pulsar.ConsumerType.Failover], ids=["exclusive", "failover"]
)
def test_single_consumer_types_ignore_the_delay(client, topic, sub_type):
    c = client.subscribe(topic, "sub", consumer_type=sub_type, initial_position=EARLIEST)
    p = client.create_producer(topic, batching_enabled=False)
    p.send(b"late", deliver_after=timedelta(seconds=30))
    assert c.receive(timeout_millis=2000).data() == b"late"


def test_delayed_delivery_disabled(pulsar_broker_factory, client_factory, topic):
    broker = pulsar_broker_factory(delayedDeliveryEnabled=False)
    client = client_factory(broker.service_url)
    c = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared, initial_position=EARLIEST)
    p = client.create_producer(topic, batching_enabled=False)
    p.send(b"late", deliver_after=timedelta(seconds=30))
    assert c.receive(timeout_millis=2000).data() == b"late"


def test_a_clock_jump_delivers_what_became_due(pulsar_broker_factory, client_factory, topic):
    """On a ManualClock, advancing past a delayed message's time delivers it at once: the broker
    reads the due time on its clock, and a jump wakes the dispatchers (nothing sleeps an hour)."""
    clock = pulsar_rs.ManualClock()
    broker = pulsar_broker_factory(clock=clock, **STRICT)
    client = client_factory(broker.service_url)
    c = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared, initial_position=EARLIEST)
    p = client.create_producer(topic, batching_enabled=False)
    p.send(b"in an hour", deliver_after=timedelta(hours=1))
    with pytest.raises(pulsar.Timeout):
        c.receive(timeout_millis=300)
    assert sub_stats(broker, topic, "sub")["msgDelayed"] == 1
    clock.advance(3600)
    assert c.receive(timeout_millis=2000).data() == b"in an hour"


def test_delayed_messages_survive_a_restart(tmp_path, topic):
    data = tmp_path / "data"
    sent = time.time()
    with pulsar_rs.Broker(data_dir=str(data), **STRICT) as broker:
        client = new_client(broker.service_url)
        c = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared, initial_position=EARLIEST)
        p = client.create_producer(topic, batching_enabled=False)
        p.send(b"late", deliver_after=timedelta(seconds=4))
        p.send(b"now")
        m = c.receive(timeout_millis=2000)
        assert m.data() == b"now"
        c.acknowledge(m)
        wait_for_backlog(broker, topic, "sub", 1)  # the delayed one
        client.close()
    with pulsar_rs.Broker(data_dir=str(data), **STRICT) as broker:
        client = new_client(broker.service_url)
        try:
            c = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared)
            late = c.receive(timeout_millis=8000)
            elapsed = time.time() - sent
            assert late.data() == b"late"
            assert elapsed >= 3.95, f"delivered {elapsed:.2f}s after sending, before its time"
            c.acknowledge(late)
            assert_no_more(c)
        finally:
            client.close()
