"""Redelivery and unacked limits with the official client: REDELIVER with and without ids,
a closed consumer's pending messages, redelivery counts, negative acks, ack timeout, the
client's dead-letter policy, and maxUnackedMessagesPerConsumer / PerSubscription blocking."""

from __future__ import annotations

import time

import pulsar
import pytest

from conftest import assert_no_more, receive_all
from dispatch_util import sub_stats, wait_for_backlog

pytestmark = pytest.mark.timeout(120)

SHARED = pulsar.ConsumerType.Shared
KEY_SHARED = pulsar.ConsumerType.KeyShared
EARLIEST = pulsar.InitialPosition.Earliest


def drain(consumers, idle_s: float = 2.0) -> list:
    """Receives and acks from several consumers in turn until none got anything for idle_s."""
    out = []
    last = time.monotonic()
    while time.monotonic() - last < idle_s:
        for c in consumers:
            try:
                m = c.receive(timeout_millis=50)
            except pulsar.Timeout:
                continue
            c.acknowledge(m)
            out.append(m)
            last = time.monotonic()
    return out


def produce(client, topic, n, prefix="m", key=None):
    p = client.create_producer(topic, batching_enabled=False)
    for i in range(n):
        if key is None:
            p.send(f"{prefix}{i}".encode())
        else:
            p.send(f"{prefix}{i}".encode(), partition_key=key(i))
    p.close()


@pytest.mark.parametrize("sub_type", [SHARED, KEY_SHARED], ids=["shared", "key_shared"])
def test_negative_ack_redelivers_with_counts(client, topic, sub_type):
    c = client.subscribe(
        topic, "sub", consumer_type=sub_type, initial_position=EARLIEST, negative_ack_redelivery_delay_ms=100
    )
    produce(client, topic, 5, key=lambda i: f"k{i % 2}")
    counts: dict[bytes, list[int]] = {}
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and (len(counts) < 5 or any(len(v) < 3 for v in counts.values())):
        m = c.receive(timeout_millis=5000)
        counts.setdefault(m.data(), []).append(m.redelivery_count())
        if len(counts[m.data()]) < 3:
            c.negative_acknowledge(m)
        else:
            c.acknowledge(m)
    assert counts == {f"m{i}".encode(): [0, 1, 2] for i in range(5)}
    assert_no_more(c)


@pytest.mark.slow  # about 11 s here (README, 'Tests')
def test_ack_timeout_redelivers(client, topic):
    c = client.subscribe(
        topic, "sub", consumer_type=SHARED, initial_position=EARLIEST, unacked_messages_timeout_ms=10000
    )
    produce(client, topic, 3)
    first = receive_all(c, 3, ack=False)
    assert [m.redelivery_count() for m in first] == [0, 0, 0]
    again = receive_all(c, 3, timeout_ms=25000)
    assert sorted(m.data() for m in again) == [b"m0", b"m1", b"m2"]
    assert all(m.redelivery_count() == 1 for m in again)


def test_dead_letter_queue_after_max_redeliveries(client, topic):
    dlq = f"{topic}-DLQ"
    dlq_consumer = client.subscribe(dlq, "dlq-sub", initial_position=EARLIEST)
    c = client.subscribe(
        topic,
        "sub",
        consumer_type=SHARED,
        initial_position=EARLIEST,
        negative_ack_redelivery_delay_ms=100,
        dead_letter_policy=pulsar.ConsumerDeadLetterPolicy(max_redeliver_count=2, dead_letter_topic=dlq),
    )
    produce(client, topic, 3)
    seen = []
    while True:
        try:
            m = c.receive(timeout_millis=3000)
        except pulsar.Timeout:
            break
        seen.append((m.data(), m.redelivery_count()))
        c.negative_acknowledge(m)
    for i in range(3):
        assert [r for d, r in seen if d == f"m{i}".encode()] == [0, 1, 2]
    dead = receive_all(dlq_consumer, 3, timeout_ms=5000)
    assert sorted(m.data() for m in dead) == [b"m0", b"m1", b"m2"]


def test_redeliver_without_ids_replays_only_that_consumers_pending(client, topic):
    a = client.subscribe(topic, "sub", consumer_type=SHARED, consumer_name="a", receiver_queue_size=5)
    b = client.subscribe(topic, "sub", consumer_type=SHARED, consumer_name="b", receiver_queue_size=5)
    produce(client, topic, 10)
    time.sleep(0.5)  # deliveries are asynchronous: let both receiver queues fill
    from_a = receive_all(a, 5, ack=False)
    from_b = receive_all(b, 5, ack=False)
    assert len(from_a) == 5 and len(from_b) == 5
    a.redeliver_unacknowledged_messages()
    # Only a's pending messages come back (to whichever consumer has permits), counted once.
    again = drain([a, b])
    assert sorted(m.data() for m in again) == sorted(m.data() for m in from_a)
    assert all(m.redelivery_count() == 1 for m in again)


def test_closed_consumer_pending_go_to_others_uncounted(client, topic):
    """As Pulsar 4.x (apache/pulsar#17060): a closed consumer's unacked messages are replayed to
    the others with redelivery count 0; only a redelivery the client asks for counts."""
    a = client.subscribe(
        topic,
        "sub",
        consumer_type=SHARED,
        consumer_name="a",
        receiver_queue_size=4,
        negative_ack_redelivery_delay_ms=100,
    )
    produce(client, topic, 8)
    held = receive_all(a, 4, ack=False)
    assert len(held) == 4
    # m0 is negatively acked first: that redelivery counts, and the count survives the close.
    a.negative_acknowledge(held[0])
    while True:
        m = a.receive(timeout_millis=5000)
        if m.data() == b"m0":
            assert m.redelivery_count() == 1
            break
    b = client.subscribe(topic, "sub", consumer_type=SHARED, consumer_name="b")
    a.close()
    got = receive_all(b, 8)
    assert sorted(m.data() for m in got) == sorted(f"m{i}".encode() for i in range(8))
    counts = {m.data(): m.redelivery_count() for m in got}
    assert counts.pop(b"m0") == 1, "the close adds nothing to the count"
    assert set(counts.values()) == {0}


def test_closed_consumer_pending_replayed_with_count_zero(client, topic):
    a = client.subscribe(topic, "sub", consumer_type=SHARED, consumer_name="a", receiver_queue_size=4)
    produce(client, topic, 6)
    held = receive_all(a, 4, ack=False)
    assert len(held) == 4
    b = client.subscribe(topic, "sub", consumer_type=SHARED, consumer_name="b")
    a.close()
    got = receive_all(b, 6)
    assert sorted(m.data() for m in got) == sorted(f"m{i}".encode() for i in range(6))
    assert [m.redelivery_count() for m in got] == [0] * 6


def test_key_shared_replacement_gets_new_messages_of_a_replayed_key_at_once(client, topic):
    """Key_Shared (PIP-379): a's unacked messages of a key are replayed to b (count 0), and b
    gets the key's new messages right after them, without acknowledging the replayed ones."""
    a = client.subscribe(topic, "sub", consumer_type=KEY_SHARED, consumer_name="a", initial_position=EARLIEST)
    produce(client, topic, 3, prefix="old", key=lambda i: "k")
    held = receive_all(a, 3, ack=False)
    assert [m.data() for m in held] == [b"old0", b"old1", b"old2"]
    b = client.subscribe(topic, "sub", consumer_type=KEY_SHARED, consumer_name="b", initial_position=EARLIEST)
    a.close()
    produce(client, topic, 2, prefix="new", key=lambda i: "k")
    got = receive_all(b, 5, ack=False)
    assert [m.data() for m in got] == [b"old0", b"old1", b"old2", b"new0", b"new1"]
    assert [m.redelivery_count() for m in got] == [0] * 5
    assert_no_more(b)


@pytest.mark.slow  # about 6 s here (README, 'Tests')
def test_consumer_blocked_at_max_unacked_and_unblocked_at_half(pulsar_broker_factory, client_factory, topic):
    broker = pulsar_broker_factory(maxUnackedMessagesPerConsumer=10)
    client = client_factory(broker.service_url)
    c = client.subscribe(topic, "sub", consumer_type=SHARED, initial_position=EARLIEST, receiver_queue_size=100)
    produce(client, topic, 30)
    first = receive_all(c, 30, timeout_ms=1000, ack=False)
    assert len(first) == 10
    stats = sub_stats(broker, topic, "sub")
    assert stats["consumers"][0]["blockedConsumerOnUnackedMsgs"] is True
    assert stats["consumers"][0]["unackedMessages"] == 10
    for m in first[:4]:
        c.acknowledge(m)
    assert receive_all(c, 30, timeout_ms=1000, ack=False) == [], "6 unacked > 10/2: still blocked"
    c.acknowledge(first[4])
    more = receive_all(c, 30, timeout_ms=1500, ack=False)
    assert len(more) == 5, "unblocked at half, blocked again at the limit"
    for m in first[5:] + more:
        c.acknowledge(m)
    rest = receive_all(c, 30, timeout_ms=1500)
    assert len(rest) == 15
    wait_for_backlog(broker, topic, "sub", 0)
    assert sub_stats(broker, topic, "sub")["consumers"][0]["blockedConsumerOnUnackedMsgs"] is False


def test_subscription_blocked_at_max_unacked(pulsar_broker_factory, client_factory, topic):
    broker = pulsar_broker_factory(maxUnackedMessagesPerSubscription=10)
    client = client_factory(broker.service_url)
    a = client.subscribe(topic, "sub", consumer_type=SHARED, consumer_name="a", initial_position=EARLIEST)
    b = client.subscribe(topic, "sub", consumer_type=SHARED, consumer_name="b", initial_position=EARLIEST)
    produce(client, topic, 40)
    got_a = receive_all(a, 40, timeout_ms=1000, ack=False)
    got_b = receive_all(b, 40, timeout_ms=500, ack=False)
    assert len(got_a) + len(got_b) == 10
    stats = sub_stats(broker, topic, "sub")
    assert stats["blockedSubscriptionOnUnackedMsgs"] is True
    assert stats["unackedMessages"] == 10
    for m, c in [(m, a) for m in got_a] + [(m, b) for m in got_b]:
        c.acknowledge(m)
    more = drain([a, b])
    total = len(got_a) + len(got_b) + len(more)
    assert total == 40, total
