"""Producer access modes as Pulsar answers them, seen with the official client: Exclusive
conflicts raise ProducerFenced, Shared against an exclusive producer raises ProducerBusy,
ExclusiveWithFencing fences the current producer (its sends fail with ProducerFenced), and
WaitForExclusive waits its turn (creation blocks until the holder closes)."""

from __future__ import annotations

import threading
import time

import pulsar
import pytest

from conftest import receive_all

pytestmark = pytest.mark.timeout(60)

Mode = pulsar.ProducerAccessMode


def test_exclusive_conflicts_are_producer_fenced(client, topic):
    first = client.create_producer(topic, access_mode=Mode.Exclusive)
    with pytest.raises(pulsar.ProducerFenced):
        client.create_producer(topic, access_mode=Mode.Exclusive)
    with pytest.raises(pulsar.ProducerBusy):
        client.create_producer(topic)  # Shared against an exclusive producer
    first.close()
    shared = client.create_producer(topic + "-shared")
    with pytest.raises(pulsar.ProducerFenced):
        client.create_producer(topic + "-shared", access_mode=Mode.Exclusive)
    shared.close()


def test_exclusive_with_fencing_fences_the_holder(client, topic):
    consumer = client.subscribe(topic, "s", initial_position=pulsar.InitialPosition.Earliest)
    old = client.create_producer(topic, access_mode=Mode.Exclusive)
    old.send(b"before")
    new = client.create_producer(topic, access_mode=Mode.ExclusiveWithFencing)
    new.send(b"after")
    with pytest.raises(pulsar.ProducerFenced):
        old.send(b"fenced")
    assert [m.data() for m in receive_all(consumer, 2)] == [b"before", b"after"]
    # The fenced producer's mode cannot come back while the new one holds the topic.
    with pytest.raises(pulsar.ProducerFenced):
        client.create_producer(topic, access_mode=Mode.Exclusive)


def test_wait_for_exclusive_waits_its_turn(client, topic):
    holder = client.create_producer(topic, access_mode=Mode.Exclusive)
    got: dict[str, object] = {}

    def wait():
        got["producer"] = client.create_producer(topic, access_mode=Mode.WaitForExclusive)
        got["at"] = time.monotonic()

    t = threading.Thread(target=wait)
    t.start()
    time.sleep(1.0)  # negative check: the waiting producer must still be waiting a while later
    assert "producer" not in got, "WaitForExclusive must wait while the topic is held"
    released = time.monotonic()
    holder.close()
    t.join(timeout=10)
    assert "producer" in got and got["at"] >= released
    got["producer"].send(b"mine now")
    # Now it holds the topic exclusively.
    with pytest.raises(pulsar.ProducerFenced):
        client.create_producer(topic, access_mode=Mode.Exclusive)
