"""Key_Shared dispatch with the official client: AUTO_SPLIT (consistent hashing) and STICKY
ranges, per-key order while consumers join and leave (draining hashes), batches routed by their
key, and ConsumerAssignError for overlapping ranges."""

from __future__ import annotations

import threading
import time
from collections import defaultdict

import pulsar
import pytest

from conftest import receive_all
from dispatch_util import key_slot

pytestmark = pytest.mark.timeout(180)

KEY_SHARED = pulsar.ConsumerType.KeyShared
EARLIEST = pulsar.InitialPosition.Earliest


class Recorder:
    """Message listener that records (key, seq, time) per consumer and acks."""

    def __init__(self, delay: float = 0.0):
        self.lock = threading.Lock()
        self.by_consumer: dict[str, list[tuple[str, int, float]]] = defaultdict(list)
        self.delay = delay

    def listener(self, name: str):
        def on_message(consumer, msg):
            key = msg.partition_key()
            seq = int(msg.data().decode().split(":")[1])
            with self.lock:
                self.by_consumer[name].append((key, seq, time.monotonic()))
            if self.delay:
                time.sleep(self.delay)  # a listener's processing time, so consumers join while messages are in flight
            consumer.acknowledge(msg)

        return on_message

    def total(self) -> int:
        with self.lock:
            return sum(len(v) for v in self.by_consumer.values())

    def wait_for(self, n: int, timeout: float = 60) -> None:
        end = time.monotonic() + timeout
        while self.total() < n and time.monotonic() < end:
            time.sleep(0.05)  # poll: deliveries reach the listeners asynchronously


def send_keyed(producer, keys, per_key, start=0):
    failed: list[object] = []

    def cb(res, _msg_id):
        if res != pulsar.Result.Ok:
            failed.append(res)

    for i in range(start, start + per_key):
        for k in keys:
            producer.send_async(f"{k}:{i}".encode(), cb, partition_key=k)
    producer.flush()
    assert not failed, f"sends failed: {failed[:3]}"


def test_each_key_goes_to_one_consumer(client, topic):
    consumers = [
        client.subscribe(topic, "sub", consumer_type=KEY_SHARED, consumer_name=f"c{i}", initial_position=EARLIEST)
        for i in range(3)
    ]
    producer = client.create_producer(topic, batching_enabled=False)
    keys = [f"key-{i}" for i in range(30)]
    send_keyed(producer, keys, 10)
    owner: dict[str, int] = {}
    total = 0
    for idx, c in enumerate(consumers):
        for m in receive_all(c, 300, timeout_ms=1500):
            k = m.partition_key()
            assert owner.setdefault(k, idx) == idx, f"key {k} went to two consumers"
            total += 1
    assert total == 300
    assert len(set(owner.values())) == 3, "100 ring points per consumer spread 30 keys over all three"


def test_order_kept_while_consumers_join_mid_stream(client, topic):
    rec = Recorder(delay=0.001)
    keys = [f"k{i}" for i in range(20)]
    per_key = 150
    subscribe = lambda name: client.subscribe(  # noqa: E731
        topic,
        "sub",
        consumer_type=KEY_SHARED,
        consumer_name=name,
        initial_position=EARLIEST,
        receiver_queue_size=50,
        message_listener=rec.listener(name),
    )
    consumers = [subscribe("c1")]
    producer = client.create_producer(topic, batching_enabled=False)
    send_keyed(producer, keys, 50)
    consumers.append(subscribe("c2"))
    send_keyed(producer, keys, 50, start=50)
    consumers.append(subscribe("c3"))
    send_keyed(producer, keys, 50, start=100)
    rec.wait_for(len(keys) * per_key)
    time.sleep(0.5)  # negative check: let any duplicate delivery arrive before counting
    with rec.lock:
        records = {n: list(v) for n, v in rec.by_consumer.items()}
    # Every message exactly once.
    delivered = sorted((k, s) for v in records.values() for k, s, _ in v)
    assert delivered == sorted((k, s) for k in keys for s in range(per_key))
    # Per consumer, each key's sequence strictly increases.
    for name, v in records.items():
        last: dict[str, int] = {}
        for k, s, _ in v:
            assert s > last.get(k, -1), f"{name}: {k} went back from {last[k]} to {s}"
            last[k] = s
    # Across consumers too: by receive time, each key's sequence increases.
    timeline = sorted((t, k, s) for v in records.values() for k, s, t in v)
    last = {}
    for _, k, s in timeline:
        assert s > last.get(k, -1), f"{k}: {s} received after {last[k]}"
        last[k] = s
    assert all(records.get(n) for n in ("c1", "c2", "c3")), {n: len(v) for n, v in records.items()}


def test_consumer_leaving_hands_its_keys_over_in_order(client, topic):
    keys = [f"k{i}" for i in range(10)]
    a = client.subscribe(topic, "sub", consumer_type=KEY_SHARED, consumer_name="a", initial_position=EARLIEST)
    b = client.subscribe(topic, "sub", consumer_type=KEY_SHARED, consumer_name="b", initial_position=EARLIEST)
    producer = client.create_producer(topic, batching_enabled=False)
    send_keyed(producer, keys, 20)
    # b takes a few messages and leaves without acknowledging them.
    from_b = receive_all(b, 3, timeout_ms=2000, ack=False)
    assert from_b, "b owns some keys"
    b.close()
    got = receive_all(a, 200, timeout_ms=2000)
    pairs = [(m.partition_key(), int(m.data().decode().split(":")[1])) for m in got]
    assert sorted(pairs) == sorted((k, s) for k in keys for s in range(20))
    last: dict[str, int] = {}
    for k, s in pairs:
        assert s > last.get(k, -1)
        last[k] = s
    # Replayed after b's close with redelivery count 0, as Pulsar 4.x (apache/pulsar#17060).
    assert all(m.redelivery_count() == 0 for m in got)


def test_new_consumer_is_not_starved_by_a_slow_one(client, topic):
    """A consumer that never acknowledges holds back only the keys it holds unacked messages of;
    a newcomer gets every other key it owns at once (Pulsar's stuck-subscription bugs, fixed by
    draining hashes), and the held keys as soon as they are acknowledged."""
    old_keys = [f"k{i}" for i in range(40)]
    new_keys = [f"n{i}" for i in range(40)]
    slow = client.subscribe(topic, "sub", consumer_type=KEY_SHARED, consumer_name="slow", initial_position=EARLIEST)
    producer = client.create_producer(topic, batching_enabled=False)
    send_keyed(producer, old_keys, 5)
    held = receive_all(slow, 200, timeout_ms=1000, ack=False)
    assert len(held) == 200
    fresh = client.subscribe(topic, "sub", consumer_type=KEY_SHARED, consumer_name="fresh", initial_position=EARLIEST)
    send_keyed(producer, old_keys, 5, start=5)
    send_keyed(producer, new_keys, 5)
    got = receive_all(fresh, 400, timeout_ms=1500)
    assert got, "fresh owns some of the new keys and gets them while slow holds the old ones"
    assert {m.partition_key() for m in got} <= set(new_keys), "moved old keys wait for slow"
    for m in held:
        slow.acknowledge(m)
    got += receive_all(fresh, 400, timeout_ms=2000)
    assert set(old_keys) & {m.partition_key() for m in got}, "moved keys flow once acknowledged"
    later = receive_all(slow, 400, timeout_ms=1000)
    pairs = sorted((m.partition_key(), m.data()) for m in got + later)
    expected = [(k, f"{k}:{s}".encode()) for k in old_keys for s in range(5, 10)]
    expected += [(k, f"{k}:{s}".encode()) for k in new_keys for s in range(5)]
    assert pairs == sorted(expected)


def test_batches_route_by_key(client, topic):
    consumers = [
        client.subscribe(topic, "sub", consumer_type=KEY_SHARED, consumer_name=f"c{i}", initial_position=EARLIEST)
        for i in range(3)
    ]
    producer = client.create_producer(
        topic,
        batching_enabled=True,
        batching_type=pulsar.BatchingType.KeyBased,
        batching_max_publish_delay_ms=20,
    )
    keys = [f"key-{i}" for i in range(12)]
    send_keyed(producer, keys, 20)
    owner: dict[str, int] = {}
    total = 0
    batched = 0
    for idx, c in enumerate(consumers):
        for m in receive_all(c, 240, timeout_ms=1500):
            assert owner.setdefault(m.partition_key(), idx) == idx
            batched += m.message_id().batch_index() >= 0
            total += 1
    assert total == 240
    assert batched > 0, "messages were batched"


def test_sticky_ranges_route_by_slot(client, topic):
    low = client.subscribe(
        topic,
        "sub",
        consumer_type=KEY_SHARED,
        consumer_name="low",
        initial_position=EARLIEST,
        key_shared_policy=pulsar.ConsumerKeySharedPolicy(
            key_shared_mode=pulsar.KeySharedMode.Sticky, sticky_ranges=[(0, 32767)]
        ),
    )
    high = client.subscribe(
        topic,
        "sub",
        consumer_type=KEY_SHARED,
        consumer_name="high",
        initial_position=EARLIEST,
        key_shared_policy=pulsar.ConsumerKeySharedPolicy(
            key_shared_mode=pulsar.KeySharedMode.Sticky, sticky_ranges=[(32768, 65535)]
        ),
    )
    producer = client.create_producer(topic, batching_enabled=False)
    keys = [f"key-{i}" for i in range(20)]
    send_keyed(producer, keys, 3)
    for c, lo, hi in ((low, 0, 32767), (high, 32768, 65535)):
        for m in receive_all(c, 60, timeout_ms=1500):
            assert lo <= key_slot(m.partition_key()) <= hi


def test_sticky_overlap_is_a_consumer_assign_error(client, topic):
    client.subscribe(
        topic,
        "sub",
        consumer_type=KEY_SHARED,
        key_shared_policy=pulsar.ConsumerKeySharedPolicy(
            key_shared_mode=pulsar.KeySharedMode.Sticky, sticky_ranges=[(0, 1000)]
        ),
    )
    with pytest.raises(pulsar.PulsarException) as e:
        client.subscribe(
            topic,
            "sub",
            consumer_type=KEY_SHARED,
            key_shared_policy=pulsar.ConsumerKeySharedPolicy(
                key_shared_mode=pulsar.KeySharedMode.Sticky, sticky_ranges=[(900, 2000)]
            ),
        )
    assert "ConsumerAssign" in type(e.value).__name__ or "ConsumerAssign" in str(e.value)
    # A disjoint range is accepted.
    client.subscribe(
        topic,
        "sub",
        consumer_type=KEY_SHARED,
        key_shared_policy=pulsar.ConsumerKeySharedPolicy(
            key_shared_mode=pulsar.KeySharedMode.Sticky, sticky_ranges=[(1001, 2000)]
        ),
    )
