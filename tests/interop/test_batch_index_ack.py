"""PIP-391 (Pulsar 4.1): batch-index acknowledgement on by default, and
``acknowledgmentAtBatchIndexLevelEnabled`` still choosing. With the official client acking some
messages of a batch (``batch_index_ack_enabled``), a new consumer of the subscription gets only
the others; with the key false (Pulsar 4.0's default) the broker ignores those acks and the
whole batch comes back."""

from __future__ import annotations

import time

import pulsar
import pytest

from conftest import assert_no_more, receive_all

pytestmark = pytest.mark.timeout(120)

SHARED = pulsar.ConsumerType.Shared
EARLIEST = pulsar.InitialPosition.Earliest
BATCH = 10


def _ack_half_of_a_batch_then_resubscribe(broker, client, topic: str) -> list[bytes]:
    """Sends one batch of ``BATCH`` messages, acks its even messages from one consumer, closes
    it, and returns what a new consumer of the same subscription receives."""
    c = client.subscribe(topic, "sub", consumer_type=SHARED, initial_position=EARLIEST, batch_index_ack_enabled=True)
    p = client.create_producer(
        topic, batching_enabled=True, batching_max_messages=BATCH, batching_max_publish_delay_ms=1000
    )
    for i in range(BATCH):
        p.send_async(f"m{i}".encode(), None)
    p.flush()
    got = receive_all(c, BATCH, ack=False)
    assert len(got) == BATCH
    ids = {m.message_id().entry_id() for m in got}
    assert len(ids) == 1, f"the messages should share one entry (one batch), got entries {ids}"
    for m in got:
        if int(m.data()[1:]) % 2 == 0:
            c.acknowledge(m)
    time.sleep(0.5)  # the client's ack grouping (100 ms) sends the acks
    c.close()
    again = client.subscribe(
        topic, "sub", consumer_type=SHARED, initial_position=EARLIEST, batch_index_ack_enabled=True
    )
    out = [m.data() for m in receive_all(again, BATCH, timeout_ms=3000)]
    assert_no_more(again)
    return out


def test_batch_index_acks_are_kept_by_default(pulsar_broker_factory, client_factory, topic):
    broker = pulsar_broker_factory()
    client = client_factory(broker.service_url)
    got = _ack_half_of_a_batch_then_resubscribe(broker, client, topic)
    assert sorted(got) == sorted(f"m{i}".encode() for i in range(1, BATCH, 2))


def test_the_key_false_is_pulsar_4_0s_whole_batch(pulsar_broker_factory, client_factory, topic):
    broker = pulsar_broker_factory(acknowledgmentAtBatchIndexLevelEnabled=False)
    client = client_factory(broker.service_url)
    got = _ack_half_of_a_batch_then_resubscribe(broker, client, topic)
    assert sorted(got) == sorted(f"m{i}".encode() for i in range(BATCH))
