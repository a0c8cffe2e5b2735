"""Interop with the official ``pulsar-client``: subscriptions, readers, seek, acks, initial
positions, subscription types."""

from __future__ import annotations

import time

import pulsar
import pytest

from conftest import admin, assert_no_more, receive_all
from dispatch_util import failover_active

pytestmark = pytest.mark.timeout(120)

EARLIEST = pulsar.InitialPosition.Earliest


def produce(client, topic, n, prefix="m", batching=False):
    producer = client.create_producer(topic, batching_enabled=batching)
    ids = [producer.send(f"{prefix}{i}".encode()) for i in range(n)]
    producer.close()
    return ids


def datas(msgs):
    return [m.data() for m in msgs]


def names(prefix, rng):
    return [f"{prefix}{i}".encode() for i in rng]


def sub_stats(broker, topic):
    short = topic.rsplit("/", 1)[1]
    status, stats = admin(broker.admin_url, "GET", f"/admin/v2/persistent/public/default/{short}/stats")
    assert status == 200, stats
    return stats["subscriptions"]


# ---------------------------------------------------------------- readers


def test_reader_from_earliest(client, topic):
    produce(client, topic, 20)
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    got = [reader.read_next(timeout_millis=5000) for _ in range(20)]
    assert datas(got) == names("m", range(20))
    with pytest.raises(pulsar.Timeout):
        reader.read_next(timeout_millis=300)


def test_reader_from_latest_sees_only_new(client, topic):
    produce(client, topic, 10, prefix="old")
    reader = client.create_reader(topic, pulsar.MessageId.latest)
    with pytest.raises(pulsar.Timeout):
        reader.read_next(timeout_millis=300)
    produce(client, topic, 5, prefix="new")
    got = [reader.read_next(timeout_millis=5000) for _ in range(5)]
    assert datas(got) == names("new", range(5))


def test_reader_from_message_id_exclusive_and_inclusive(client, topic):
    ids = produce(client, topic, 10)
    reader = client.create_reader(topic, ids[4])
    assert reader.read_next(timeout_millis=5000).data() == b"m5"
    reader.close()
    reader = client.create_reader(topic, ids[4], start_message_id_inclusive=True)
    assert reader.read_next(timeout_millis=5000).data() == b"m4"


def test_reader_from_id_inside_a_batch(client, topic):
    producer = client.create_producer(topic, batching_enabled=True, batching_max_publish_delay_ms=50)
    for i in range(10):
        producer.send_async(f"m{i}".encode(), None)
    producer.flush()
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    all_msgs = [reader.read_next(timeout_millis=5000) for _ in range(10)]
    assert datas(all_msgs) == names("m", range(10))
    mid = all_msgs[3].message_id()
    assert mid.batch_index() == 3, "messages should have been batched"
    reader2 = client.create_reader(topic, mid)
    got = [reader2.read_next(timeout_millis=5000) for _ in range(6)]
    assert datas(got) == names("m", range(4, 10))


def test_has_message_available(client, topic):
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    assert reader.has_message_available() is False
    produce(client, topic, 3)
    assert reader.has_message_available() is True
    for _ in range(3):
        reader.read_next(timeout_millis=5000)
    assert reader.has_message_available() is False
    produce(client, topic, 1, prefix="x")
    assert reader.has_message_available() is True
    assert reader.read_next(timeout_millis=5000).data() == b"x0"
    assert reader.has_message_available() is False


def test_has_message_available_with_batches(client, topic):
    producer = client.create_producer(topic, batching_enabled=True, batching_max_publish_delay_ms=50)
    for i in range(5):
        producer.send_async(f"b{i}".encode(), None)
    producer.flush()
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    for i in range(5):
        assert reader.has_message_available() is True
        assert reader.read_next(timeout_millis=5000).data() == f"b{i}".encode()
    assert reader.has_message_available() is False


def test_get_last_message_id(client, topic):
    consumer = client.subscribe(topic, "sub")
    ids = produce(client, topic, 3)
    last = consumer.get_last_message_id()
    assert (last.ledger_id(), last.entry_id()) == (ids[-1].ledger_id(), ids[-1].entry_id())


# ---------------------------------------------------------------- seek


def test_seek_by_message_id(client, topic):
    ids = produce(client, topic, 20)
    consumer = client.subscribe(topic, "sub", initial_position=EARLIEST)
    assert datas(receive_all(consumer, 20)) == names("m", range(20))
    # The broker resets the cursor to the id; the C++ client then drops the id itself (exclusive).
    consumer.seek(ids[5])
    assert datas(receive_all(consumer, 14)) == names("m", range(6, 20))
    assert_no_more(consumer)
    # Seek to earliest replays everything even though it was acknowledged.
    consumer.seek(pulsar.MessageId.earliest)
    assert datas(receive_all(consumer, 20)) == names("m", range(20))
    assert_no_more(consumer)


def test_seek_by_message_id_inclusive(client, topic):
    ids = produce(client, topic, 10)
    consumer = client.subscribe(topic, "sub", initial_position=EARLIEST, start_message_id_inclusive=True)
    assert len(receive_all(consumer, 10)) == 10
    consumer.seek(ids[3])
    assert datas(receive_all(consumer, 7)) == names("m", range(3, 10))
    assert_no_more(consumer)


def test_seek_backwards_without_ack_then_forward(client, topic):
    ids = produce(client, topic, 10)
    consumer = client.subscribe(topic, "sub", initial_position=EARLIEST)
    assert len(receive_all(consumer, 10, ack=False)) == 10
    consumer.seek(ids[7])
    assert datas(receive_all(consumer, 2)) == [b"m8", b"m9"]
    assert_no_more(consumer)
    consumer.close()
    # The seek moved the subscription (mark-delete just before m7): a reconnect does not bring
    # m0..m6 back, but m7 itself, which the client skipped without acknowledging, is redelivered.
    consumer = client.subscribe(topic, "sub", initial_position=EARLIEST)
    assert datas(receive_all(consumer, 1)) == [b"m7"]
    assert_no_more(consumer)


def test_seek_by_publish_time(client, topic):
    producer = client.create_producer(topic)
    for i in range(5):
        producer.send(f"early{i}".encode())
    time.sleep(0.05)  # the client stamps publish times with the real clock: a real gap
    boundary_ms = int(time.time() * 1000)
    time.sleep(0.05)  # the client stamps publish times with the real clock: a real gap
    for i in range(5):
        producer.send(f"late{i}".encode())
    consumer = client.subscribe(topic, "sub", initial_position=EARLIEST)
    all_msgs = receive_all(consumer, 10)
    assert len(all_msgs) == 10
    assert all_msgs[4].publish_timestamp() < boundary_ms <= all_msgs[5].publish_timestamp()
    consumer.seek(boundary_ms)
    assert datas(receive_all(consumer, 5)) == names("late", range(5))
    assert_no_more(consumer)
    consumer.seek(0)
    assert len(receive_all(consumer, 10)) == 10


def test_reader_seek(client, topic):
    ids = produce(client, topic, 10)
    reader = client.create_reader(topic, pulsar.MessageId.latest)
    reader.seek(ids[2])
    got = [reader.read_next(timeout_millis=5000) for _ in range(7)]
    with pytest.raises(pulsar.Timeout):
        reader.read_next(timeout_millis=300)
    # A reader's seek to an id is exclusive of that id unless inclusive is set.
    assert datas(got) == names("m", range(3, 10))


# ---------------------------------------------------------------- subscription lifecycle


def test_unsubscribe_deletes_subscription(pulsar_broker, client, topic):
    consumer = client.subscribe(topic, "gone")
    produce(client, topic, 5, prefix="old")
    assert "gone" in sub_stats(pulsar_broker, topic)
    consumer.unsubscribe()
    assert "gone" not in sub_stats(pulsar_broker, topic)
    # A new subscription of that name starts fresh (Latest): the old backlog is not there.
    consumer = client.subscribe(topic, "gone")
    produce(client, topic, 1, prefix="new")
    assert datas(receive_all(consumer, 2, timeout_ms=1000)) == [b"new0"]


def test_unsubscribe_with_other_consumers_is_refused(client, topic):
    c1 = client.subscribe(topic, "shared", consumer_type=pulsar.ConsumerType.Shared)
    c2 = client.subscribe(topic, "shared", consumer_type=pulsar.ConsumerType.Shared)
    with pytest.raises(pulsar.PulsarException):
        c1.unsubscribe()
    c2.close()
    c1.unsubscribe()


def test_exclusive_second_consumer_is_busy(client, topic):
    first = client.subscribe(topic, "excl", consumer_type=pulsar.ConsumerType.Exclusive)
    with pytest.raises(pulsar.ConsumerBusy):
        client.subscribe(topic, "excl", consumer_type=pulsar.ConsumerType.Exclusive)
    with pytest.raises(pulsar.ConsumerBusy):
        client.subscribe(topic, "excl", consumer_type=pulsar.ConsumerType.Shared)
    # The first consumer is unaffected, and after it closes the name is free again.
    produce(client, topic, 1)
    assert datas(receive_all(first, 1)) == [b"m0"]
    first.close()
    again = client.subscribe(topic, "excl", consumer_type=pulsar.ConsumerType.Exclusive)
    again.close()


def test_shared_spreads_across_consumers(client, topic):
    consumers = [
        client.subscribe(topic, "shared", consumer_type=pulsar.ConsumerType.Shared, receiver_queue_size=10)
        for _ in range(3)
    ]
    n = 300
    produce(client, topic, n)
    got: dict[int, list[bytes]] = {i: [] for i in range(3)}
    idle_rounds = 0
    while sum(len(v) for v in got.values()) < n and idle_rounds < 20:
        progressed = False
        for i, c in enumerate(consumers):
            try:
                m = c.receive(timeout_millis=100)
            except pulsar.Timeout:
                continue
            got[i].append(m.data())
            c.acknowledge(m)
            progressed = True
        idle_rounds = 0 if progressed else idle_rounds + 1
    everything = [d for v in got.values() for d in v]
    assert sorted(everything) == sorted(names("m", range(n)))
    assert len(set(everything)) == n
    for i in range(3):
        assert len(got[i]) >= n // 10, f"consumer {i} got only {len(got[i])}: no spread"


def test_shared_closed_consumer_unacked_go_to_others(client, topic):
    c1 = client.subscribe(topic, "shared", consumer_type=pulsar.ConsumerType.Shared)
    produce(client, topic, 10)
    got1 = receive_all(c1, 10, ack=False)
    assert len(got1) == 10
    c2 = client.subscribe(topic, "shared", consumer_type=pulsar.ConsumerType.Shared)
    c1.close()
    got2 = receive_all(c2, 10)
    assert sorted(datas(got2)) == sorted(names("m", range(10)))
    # Pulsar 4.x (apache/pulsar#17060): a close is not counted as a redelivery.
    assert all(m.redelivery_count() == 0 for m in got2)


def test_failover_second_consumer_takes_over(client, topic):
    a = client.subscribe(topic, "fo", consumer_type=pulsar.ConsumerType.Failover, consumer_name="a")
    b = client.subscribe(topic, "fo", consumer_type=pulsar.ConsumerType.Failover, consumer_name="b")
    # Non-partitioned topic: the active consumer comes from a hash ring of the names (as Pulsar).
    c1, c2 = (a, b) if failover_active(["a", "b"], topic) == "a" else (b, a)
    produce(client, topic, 5)
    assert datas(receive_all(c1, 5)) == names("m", range(5))
    assert_no_more(c2)
    c1.close()
    produce(client, topic, 3, prefix="n")
    assert datas(receive_all(c2, 3)) == names("n", range(3))


# ---------------------------------------------------------------- acks and redelivery


def test_cumulative_ack_then_resume(client, topic):
    produce(client, topic, 20)
    consumer = client.subscribe(topic, "cum", initial_position=EARLIEST)
    got = receive_all(consumer, 10, ack=False)
    assert datas(got) == names("m", range(10))
    consumer.acknowledge_cumulative(got[-1])
    consumer.close()
    consumer = client.subscribe(topic, "cum", initial_position=EARLIEST)
    assert datas(receive_all(consumer, 10, ack=False)) == names("m", range(10, 20))
    assert_no_more(consumer)


def test_cumulative_ack_on_batches_then_resume(client, topic):
    producer = client.create_producer(
        topic, batching_enabled=True, batching_max_messages=10, batching_max_publish_delay_ms=100
    )
    for i in range(40):
        producer.send_async(f"m{i}".encode(), None)
    producer.flush()
    consumer = client.subscribe(topic, "cum", initial_position=EARLIEST)
    got = receive_all(consumer, 20, ack=False)
    assert datas(got) == names("m", range(20))
    # Cumulatively ack the last message of a complete batch (the next message is in another entry).
    entry = [(m.message_id().ledger_id(), m.message_id().entry_id()) for m in got]
    assert len(set(entry)) > 1 and max(m.message_id().batch_index() for m in got) > 0
    last_full = max(i for i in range(len(got) - 1) if entry[i] != entry[i + 1])
    consumer.acknowledge_cumulative(got[last_full])
    consumer.close()
    consumer = client.subscribe(topic, "cum", initial_position=EARLIEST)
    assert datas(receive_all(consumer, 40 - last_full - 1)) == names("m", range(last_full + 1, 40))
    assert_no_more(consumer)


def test_ack_holes_then_reconnect_only_holes_come_back(pulsar_broker, client, topic):
    produce(client, topic, 30)
    consumer = client.subscribe(topic, "holes", consumer_type=pulsar.ConsumerType.Shared, initial_position=EARLIEST)
    got = receive_all(consumer, 30, ack=False)
    assert len(got) == 30
    holes = {m.data() for i, m in enumerate(got) if i % 3 == 1}
    for i, m in enumerate(got):
        if i % 3 != 1:
            consumer.acknowledge(m)
    consumer.close()  # flushes the grouped acks
    consumer = client.subscribe(topic, "holes", consumer_type=pulsar.ConsumerType.Shared, initial_position=EARLIEST)
    back = receive_all(consumer, len(holes))
    assert {m.data() for m in back} == holes
    assert_no_more(consumer)
    consumer.close()
    assert sub_stats(pulsar_broker, topic)["holes"]["msgBacklog"] == 0


def test_exclusive_ack_holes_then_reconnect(client, topic):
    produce(client, topic, 10)
    consumer = client.subscribe(topic, "holes-x", initial_position=EARLIEST)
    got = receive_all(consumer, 10, ack=False)
    for m in got:
        if m.data() not in (b"m0", b"m7"):
            consumer.acknowledge(m)
    consumer.close()
    consumer = client.subscribe(topic, "holes-x", initial_position=EARLIEST)
    assert datas(receive_all(consumer, 2)) == [b"m0", b"m7"]
    assert_no_more(consumer)


def test_negative_ack_redelivers_with_count(client, topic):
    consumer = client.subscribe(
        topic, "nack", consumer_type=pulsar.ConsumerType.Shared, negative_ack_redelivery_delay_ms=100
    )
    produce(client, topic, 3)
    got = receive_all(consumer, 3, ack=False)
    consumer.acknowledge(got[0])
    consumer.acknowledge(got[2])
    consumer.negative_acknowledge(got[1])
    again = consumer.receive(timeout_millis=5000)
    assert again.data() == b"m1"
    assert again.redelivery_count() == 1
    consumer.acknowledge(again)
    assert_no_more(consumer)


def test_redeliver_unacknowledged_exclusive(client, topic):
    consumer = client.subscribe(topic, "redeliver")
    produce(client, topic, 4)
    got = receive_all(consumer, 4, ack=False)
    consumer.acknowledge(got[0])
    time.sleep(0.3)  # let the grouped ack reach the broker
    consumer.redeliver_unacknowledged_messages()
    assert datas(receive_all(consumer, 3)) == names("m", range(1, 4))


# ---------------------------------------------------------------- initial positions


def test_initial_positions(client, topic):
    produce(client, topic, 5, prefix="before")
    latest = client.subscribe(topic, "latest", initial_position=pulsar.InitialPosition.Latest)
    earliest = client.subscribe(topic, "earliest", initial_position=EARLIEST)
    produce(client, topic, 2, prefix="after")
    assert datas(receive_all(latest, 2)) == names("after", range(2))
    assert_no_more(latest)
    assert datas(receive_all(earliest, 7)) == names("before", range(5)) + names("after", range(2))
    # An existing subscription keeps its position whatever initial position a reconnect asks for.
    latest.close()
    produce(client, topic, 1, prefix="later")
    again = client.subscribe(topic, "latest", initial_position=EARLIEST)
    assert datas(receive_all(again, 1)) == [b"later0"]
    assert_no_more(again)
