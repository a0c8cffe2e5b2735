"""Differential: who receives what, in which order, with which redelivery counts and errors."""

from __future__ import annotations

import time
from typing import Any

import pulsar
import pytest

from raw_protocol import send_null_values

from .diffkit import Target, compare, error_name

KINDS = ["persistent", "non-persistent"]


def _drain(consumer: Any, timeout_ms: int = 1500, ack: bool = True) -> list[str]:
    """Everything delivered to ``consumer`` until a receive times out (data as text)."""
    out = []
    while True:
        try:
            m = consumer.receive(timeout_millis=timeout_ms)
        except pulsar.Timeout:
            return out
        out.append(m.data().decode())
        if ack:
            consumer.acknowledge(m)


def _keyed(consumer: Any, timeout_ms: int = 1500) -> dict[str, list[str]]:
    """key -> values delivered to ``consumer`` (acked), in delivery order."""
    got: dict[str, list[str]] = {}
    while True:
        try:
            m = consumer.receive(timeout_millis=timeout_ms)
        except pulsar.Timeout:
            return got
        got.setdefault(m.partition_key(), []).append(m.data().decode())
        consumer.acknowledge(m)


def test_exclusive_refuses_a_second_consumer(pair: tuple[Target, Target]) -> None:
    def scenario(t: Target) -> list[str]:
        c = t.client()
        topic = t.topic("excl")
        c.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Exclusive)
        out = []
        for kind in (pulsar.ConsumerType.Exclusive, pulsar.ConsumerType.Shared, pulsar.ConsumerType.Failover):
            try:
                c.subscribe(topic, "s", consumer_type=kind)
                out.append("accepted")
            except pulsar.PulsarException as e:
                out.append(error_name(e))
        return out

    compare(pair, scenario)


@pytest.mark.parametrize("kind", KINDS)
def test_failover_active_consumer(pair: tuple[Target, Target], kind: str) -> None:
    """Two Failover consumers on a non-partitioned topic: which one Pulsar makes active."""

    def scenario(t: Target) -> dict[str, list[str]]:
        c = t.client()
        topic = t.topic("failover", kind)
        consumers = {}
        for name in ("consumer-b", "consumer-a"):
            consumers[name] = c.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Failover, consumer_name=name)
        time.sleep(0.5)  # the active-consumer change is pushed to the clients asynchronously
        p = c.create_producer(topic, batching_enabled=False)
        for i in range(10):
            p.send(f"m{i}".encode())
        return {name: _drain(cons) for name, cons in consumers.items()}

    compare(pair, scenario)


@pytest.mark.parametrize("kind", KINDS)
def test_key_shared_auto_split_routes_keys_like_pulsar(pair: tuple[Target, Target], kind: str) -> None:
    """Three AUTO_SPLIT consumers joined in order: which consumer each of 60 keys lands on."""

    def scenario(t: Target) -> dict[str, dict[str, list[str]]]:
        c = t.client()
        topic = t.topic("ks-auto", kind)
        consumers = {
            name: c.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.KeyShared, consumer_name=name)
            for name in ("c1", "c2", "c3")
        }
        p = c.create_producer(topic, batching_enabled=False)
        for i in range(60):
            p.send(f"v{i}".encode(), partition_key=f"key-{i}")
        return {name: _keyed(cons) for name, cons in consumers.items()}

    compare(pair, scenario)


@pytest.mark.parametrize("kind", KINDS)
def test_key_shared_sticky_ranges(pair: tuple[Target, Target], kind: str) -> None:
    def scenario(t: Target) -> dict[str, dict[str, list[str]]]:
        c = t.client()
        topic = t.topic("ks-sticky", kind)
        consumers = {}
        for name, rng in (("low", (0, 32767)), ("high", (32768, 65535))):
            policy = pulsar.ConsumerKeySharedPolicy(key_shared_mode=pulsar.KeySharedMode.Sticky, sticky_ranges=[rng])
            consumers[name] = c.subscribe(
                topic, "s", consumer_type=pulsar.ConsumerType.KeyShared, consumer_name=name, key_shared_policy=policy
            )
        p = c.create_producer(topic, batching_enabled=False)
        for i in range(40):
            p.send(f"v{i}".encode(), partition_key=f"key-{i}")
        return {name: _keyed(cons) for name, cons in consumers.items()}

    compare(pair, scenario)


@pytest.mark.parametrize("kind", KINDS)
def test_key_shared_conflicting_policy_is_refused(pair: tuple[Target, Target], kind: str) -> None:
    def scenario(t: Target) -> list[str]:
        c = t.client()
        topic = t.topic("ks-conflict", kind)
        c.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.KeyShared)
        out = []
        sticky = pulsar.ConsumerKeySharedPolicy(key_shared_mode=pulsar.KeySharedMode.Sticky, sticky_ranges=[(0, 99)])
        ooo = pulsar.ConsumerKeySharedPolicy(allow_out_of_order_delivery=True)
        for policy in (sticky, ooo):
            try:
                c.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.KeyShared, key_shared_policy=policy)
                out.append("accepted")
            except pulsar.PulsarException as e:
                out.append(error_name(e))
        return out

    compare(pair, scenario)


def test_redelivery_counts(pair: tuple[Target, Target]) -> None:
    """Nack, ack timeout and a consumer closing: the redelivery count each delivery carries."""

    def scenario(t: Target) -> list[Any]:
        c = t.client()
        topic = t.topic("redeliver")
        cons = c.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Shared, negative_ack_redelivery_delay_ms=100)
        p = c.create_producer(topic, batching_enabled=False)
        p.send(b"a")
        out: list[Any] = []
        m = cons.receive(timeout_millis=5000)
        out.append((m.data(), m.redelivery_count()))
        cons.negative_acknowledge(m)
        m = cons.receive(timeout_millis=5000)
        out.append((m.data(), m.redelivery_count()))
        cons.close()  # unacked: back to the subscription
        again = c.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Shared)
        m = again.receive(timeout_millis=5000)
        out.append((m.data(), m.redelivery_count()))
        again.redeliver_unacknowledged_messages()
        m = again.receive(timeout_millis=5000)
        out.append((m.data(), m.redelivery_count()))
        again.acknowledge(m)
        return out

    compare(pair, scenario)


def test_dead_letter_after_max_redeliveries(pair: tuple[Target, Target]) -> None:
    def scenario(t: Target) -> list[Any]:
        c = t.client()
        topic = t.topic("dlq")
        dlq_topic = t.topic("dlq-dead")
        dlq = c.subscribe(dlq_topic, "inspect", initial_position=pulsar.InitialPosition.Earliest)
        cons = c.subscribe(
            topic,
            "s",
            consumer_type=pulsar.ConsumerType.Shared,
            negative_ack_redelivery_delay_ms=100,
            dead_letter_policy=pulsar.ConsumerDeadLetterPolicy(max_redeliver_count=2, dead_letter_topic=dlq_topic),
        )
        p = c.create_producer(topic, batching_enabled=False)
        p.send(b"poison", properties={"k": "v"})
        seen = []
        for _ in range(3):
            m = cons.receive(timeout_millis=5000)
            seen.append(m.redelivery_count())
            cons.negative_acknowledge(m)
        dead = dlq.receive(timeout_millis=10000)
        props = dead.properties()
        return [seen, dead.data(), props.get("k"), sorted(props)]

    compare(pair, scenario)


def test_seek_and_readers(pair: tuple[Target, Target]) -> None:
    def scenario(t: Target) -> list[Any]:
        c = t.client()
        topic = t.topic("seek")
        cons = c.subscribe(topic, "s")
        p = c.create_producer(topic, batching_enabled=False)
        ids = [p.send(f"m{i}".encode()) for i in range(6)]
        out: list[Any] = [_drain(cons, 800)]
        cons.seek(ids[2])
        out.append(_drain(cons, 800))
        cons.seek(0)  # by publish time: everything
        out.append(_drain(cons, 800))
        for start, inclusive in ((pulsar.MessageId.earliest, False), (ids[3], False), (ids[3], True)):
            r = c.create_reader(topic, start, start_message_id_inclusive=inclusive)
            got = []
            while r.has_message_available():
                got.append(r.read_next(timeout_millis=3000).data().decode())
            out.append(got)
            r.close()
        latest = c.create_reader(topic, pulsar.MessageId.latest)
        out.append(latest.has_message_available())
        return out

    compare(pair, scenario)


def test_deduplication_drops_repeated_sequence_ids(pair: tuple[Target, Target]) -> None:
    def scenario(t: Target) -> list[Any]:
        status, _ = t.rest("POST", f"/admin/v2/namespaces/{t.namespace}/deduplication", True)
        c = t.client()
        topic = t.topic("dedup")
        cons = c.subscribe(topic, "s")
        p = c.create_producer(topic, producer_name="dedup-p", batching_enabled=False)
        out: list[Any] = [status, p.last_sequence_id()]
        for i in (0, 1, 2):
            p.send(f"m{i}".encode(), sequence_id=i)
        p.close()
        p = c.create_producer(topic, producer_name="dedup-p", batching_enabled=False)
        out.append(p.last_sequence_id())
        for i in (1, 2, 3):
            p.send(f"again{i}".encode(), sequence_id=i)
        out.append(_drain(cons))
        return out

    compare(pair, scenario)


def test_compaction_keeps_the_latest_value_per_key(pair: tuple[Target, Target]) -> None:
    def scenario(t: Target) -> list[Any]:
        c = t.client()
        topic = t.topic("compact")
        path = f"/admin/v2/persistent/{topic.split('://')[1]}/compaction"
        p = c.create_producer(topic, batching_enabled=False)
        for key, value in (("k1", "a"), ("k2", "b"), ("k1", "c"), ("k3", "d"), ("k3", ""), ("k4", "e")):
            p.send(value.encode(), partition_key=key)
        # A null value as the Java and Go clients send it (uncompressed_size 0): a tombstone.
        send_null_values(t.service_url, topic, ["k4"])
        out: list[Any] = [t.rest("PUT", path)[0]]
        deadline = time.monotonic() + 30
        status: Any = None
        while time.monotonic() < deadline:
            status = t.rest("GET", path)[1]
            if status.get("status") in ("SUCCESS", "ERROR"):
                break
            time.sleep(0.2)  # compaction runs in the broker; its status is polled over REST
        out.append(status.get("status"))
        r = c.create_reader(topic, pulsar.MessageId.earliest, is_read_compacted=True)
        got = []
        while r.has_message_available():
            m = r.read_next(timeout_millis=3000)
            got.append((m.partition_key(), m.data().decode()))
        out.append(got)
        # The compaction cursor, as `topics subscriptions` and `topics stats` show it.
        base = f"/admin/v2/persistent/{topic.split('://')[1]}"
        # The open reader's subscription is listed too, under a random name.
        status, names = t.rest("GET", f"{base}/subscriptions")
        out.append((status, sorted("reader-*" if n.startswith("reader-") else n for n in names)))
        sub = t.rest("GET", f"{base}/stats")[1]["subscriptions"]["__compaction"]
        shown = ("type", "msgBacklog", "consumers", "isDurable", "unackedMessages", "msgDelayed")
        out.append({k: sub[k] for k in shown})
        out.append(sorted(sub))
        return out

    compare(pair, scenario)


def test_schema_compatibility(pair: tuple[Target, Target]) -> None:
    class V1(pulsar.schema.Record):
        name = pulsar.schema.String()

    class V2(pulsar.schema.Record):
        name = pulsar.schema.String()
        age = pulsar.schema.Integer(required=True)

    def scenario(t: Target) -> list[str]:
        c = t.client()
        topic = t.topic("schema")
        out = []
        for schema in (
            pulsar.schema.JsonSchema(V1),
            pulsar.schema.StringSchema(),
            pulsar.schema.AvroSchema(V1),
            pulsar.schema.JsonSchema(V2),
        ):
            try:
                c.create_producer(topic, schema=schema).close()
                out.append("accepted")
            except pulsar.PulsarException as e:
                out.append(error_name(e))
        return out

    compare(pair, scenario)


def test_producer_access_modes(pair: tuple[Target, Target]) -> None:
    mode = pulsar.ProducerAccessMode

    def scenario(t: Target) -> list[str]:
        c = t.client()
        out = []
        for first, second in (
            (mode.Exclusive, mode.Exclusive),
            (mode.Exclusive, mode.Shared),
            (mode.Shared, mode.Exclusive),
            (mode.Shared, mode.Shared),
        ):
            topic = t.topic(f"access-{first.name}-{second.name}")
            p1 = c.create_producer(topic, access_mode=first)
            try:
                c.create_producer(topic, access_mode=second).close()
                out.append("accepted")
            except pulsar.PulsarException as e:
                out.append(error_name(e))
            p1.close()
        return out

    compare(pair, scenario)


def test_chunked_message_round_trip(pair: tuple[Target, Target]) -> None:
    def scenario(t: Target) -> list[Any]:
        c = t.client()
        topic = t.topic("chunk")
        cons = c.subscribe(topic, "s")
        p = c.create_producer(topic, chunking_enabled=True, batching_enabled=False)
        payload = bytes(range(256)) * (12 * 4096)  # 12 MiB: three chunks at the 5 MB default
        p.send(payload)
        m = cons.receive(timeout_millis=20000)
        cons.acknowledge(m)
        # The client sends acknowledgements asynchronously: closing the consumer sends them and
        # waits for the broker, so the stats below are read after the broker has them (reading
        # at once raced the acknowledgement on either broker).
        cons.close()
        status, stats = t.rest("GET", f"/admin/v2/persistent/{topic.split('://')[1]}/stats")
        return [m.data() == payload, status, stats["msgInCounter"], stats["subscriptions"]["s"]["msgBacklog"]]

    compare(pair, scenario)


def test_backlog_quota_producer_exception(pair: tuple[Target, Target]) -> None:
    def scenario(t: Target) -> list[Any]:
        quota = {"limitSize": 10 * 1024, "policy": "producer_exception"}
        path = f"/admin/v2/namespaces/{t.namespace}/backlogQuota?backlogQuotaType=destination_storage"
        out: list[Any] = [t.rest("POST", path, quota)[0]]
        c = t.client()
        topic = t.topic("quota")
        c.subscribe(topic, "slow")
        p = c.create_producer(topic, batching_enabled=False)
        for _ in range(20):
            try:
                p.send(b"x" * 1024)
            except pulsar.PulsarException:
                # A check that runs while the sends go on (a loaded machine) already closes the
                # producer: what is compared is the next producer's answer.
                break
        p.close()
        time.sleep(3)  # both brokers check quotas every second (backlogQuotaCheckIntervalInSeconds=1)
        try:
            c.create_producer(topic).close()
            out.append("accepted")
        except pulsar.PulsarException as e:
            out.append(error_name(e))
        return out

    compare(pair, scenario)


def test_expire_messages_by_age(pair: tuple[Target, Target]) -> None:
    def scenario(t: Target) -> list[Any]:
        c = t.client()
        topic = t.topic("expire")
        c.subscribe(topic, "s")
        p = c.create_producer(topic, batching_enabled=False)
        for i in range(5):
            p.send(f"m{i}".encode())
        base = f"/admin/v2/persistent/{topic.split('://')[1]}"
        out: list[Any] = [t.rest("POST", f"{base}/subscription/s/expireMessages/3600")[0]]
        out.append(t.rest("GET", f"{base}/stats")[1]["subscriptions"]["s"]["msgBacklog"])
        # The messages must be older than 1 s by the client's publish stamps, on both brokers:
        # Apache Pulsar's clock cannot be moved (nor the client's).
        time.sleep(1.5)
        out.append(t.rest("POST", f"{base}/subscription/s/expireMessages/1")[0])
        time.sleep(0.5)  # Apache Pulsar expires asynchronously after answering: let the cursor move
        out.append(t.rest("GET", f"{base}/stats")[1]["subscriptions"]["s"]["msgBacklog"])
        return out

    compare(pair, scenario)


def test_non_persistent_drops_without_consumers(pair: tuple[Target, Target]) -> None:
    def scenario(t: Target) -> list[Any]:
        c = t.client()
        topic = t.topic("np", "non-persistent")
        p = c.create_producer(topic, batching_enabled=False)
        p.send(b"lost")
        cons = c.subscribe(topic, "s")
        p.send(b"kept")
        return _drain(cons)

    compare(pair, scenario)
