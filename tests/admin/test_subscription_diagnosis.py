"""``GET .../subscription/{sub}/diagnosis`` ("why is this subscription not delivering?"),
``Admin.topics.diagnose_subscription`` and ``pulsar-rs admin topics diagnose-subscription``: each
stuck case built on purpose with the official Python client (or the raw wire for a transaction),
and the diagnosis names it: no consumer, a full receiver queue, the unacked-message limit, a
Key_Shared consumer that never acknowledges while its hashes moved to another (PIP-379's draining
hashes), a subscription dispatch rate, a delayed message, an open transaction; a caught-up
subscription names nothing.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pulsar
import pytest

from pulsar_rs import Admin, AdminError, Broker
from txn_wire import TxnWire


def diagnose(admin: Admin, topic: str, sub: str) -> dict[str, Any]:
    """The diagnosis of a non-partitioned topic's subscription."""
    found = admin.topics.diagnose_subscription(topic, sub)
    assert list(found) == [topic], found
    return found[topic]


def reasons(d: dict[str, Any]) -> list[str]:
    return [b["reason"] for b in d["blockers"]]


def wait_for(
    admin: Admin, topic: str, sub: str, ok: Callable[[dict[str, Any]], bool], timeout: float = 15.0
) -> dict[str, Any]:
    """Polls the diagnosis until ``ok`` holds (the client's FLOW and the dispatcher run on their own)."""
    deadline = time.monotonic() + timeout
    while True:
        d = diagnose(admin, topic, sub)
        if ok(d) or time.monotonic() > deadline:
            return d
        time.sleep(0.1)  # the consumer's client and the broker's dispatcher move on their own


def blocker(d: dict[str, Any], reason: str) -> dict[str, Any]:
    found = [b for b in d["blockers"] if b["reason"] == reason]
    assert found, d
    return found[0]


def test_no_consumer_and_the_oldest_unacknowledged_message(pulsar_broker, client_factory, topic) -> None:
    admin = Admin(pulsar_broker.admin_url)
    client = client_factory(pulsar_broker.service_url)
    client.subscribe(topic, "s", consumer_name="gone").close()
    producer = client.create_producer(topic)
    first = producer.send(b"m0")
    producer.send(b"m1")
    d = diagnose(admin, topic, "s")
    assert reasons(d) == ["NO_CONSUMERS"], d
    assert d["waitingForDelivery"] and d["msgBacklog"] == 2 and d["consumers"] == []
    oldest = d["oldestUnackedMessage"]
    assert oldest["messageId"] == f"{first.ledger_id()}:{first.entry_id()}", oldest
    assert oldest["publishTime"] > 0 and 0 <= oldest["ageMs"] < 60_000, oldest
    with pytest.raises(AdminError) as e:
        admin.topics.diagnose_subscription(topic, "no-such-sub")
    assert e.value.status == 404


def test_a_caught_up_subscription_names_nothing(pulsar_broker, client_factory, topic) -> None:
    admin = Admin(pulsar_broker.admin_url)
    client = client_factory(pulsar_broker.service_url)
    consumer = client.subscribe(topic, "s", consumer_name="c")
    client.create_producer(topic).send(b"m")
    consumer.acknowledge(consumer.receive(timeout_millis=10_000))
    d = wait_for(admin, topic, "s", lambda d: d["msgBacklog"] == 0)
    assert d["blockers"] == [] and not d["waitingForDelivery"], d
    assert d["oldestUnackedMessage"] is None and d["type"] == "Exclusive"
    assert d["consumers"][0]["consumerName"] == "c" and d["consumers"][0]["active"] is True


def test_a_full_receiver_queue_is_named(pulsar_broker, client_factory, topic) -> None:
    admin = Admin(pulsar_broker.admin_url)
    client = client_factory(pulsar_broker.service_url)
    client.subscribe(topic, "s", consumer_name="slow", receiver_queue_size=5, consumer_type=pulsar.ConsumerType.Shared)
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(30):
        producer.send(b"m%d" % i)
    d = wait_for(admin, topic, "s", lambda d: "NO_PERMITS" in reasons(d))
    assert blocker(d, "NO_PERMITS") == {"reason": "NO_PERMITS", "consumer": "slow"}, d
    assert d["consumers"][0]["availablePermits"] == 0 and d["waitingForDelivery"], d


def test_the_unacked_limit_is_named(pulsar_broker_factory, client_factory, topic) -> None:
    broker = pulsar_broker_factory(maxUnackedMessagesPerConsumer=10)
    admin = Admin(broker.admin_url)
    client = client_factory(broker.service_url)
    consumer = client.subscribe(topic, "s", consumer_name="never-acks", consumer_type=pulsar.ConsumerType.Shared)
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(30):
        producer.send(b"m%d" % i)
    for _ in range(10):
        consumer.receive(timeout_millis=10_000)
    d = wait_for(admin, topic, "s", lambda d: "CONSUMER_UNACKED_LIMIT" in reasons(d))
    b = blocker(d, "CONSUMER_UNACKED_LIMIT")
    assert (b["consumer"], b["unackedMessages"], b["limit"]) == ("never-acks", 10, 10), d
    assert d["consumers"][0]["blockedConsumerOnUnackedMsgs"] is True


def test_a_key_shared_consumer_that_never_acks_holds_its_moved_hashes(pulsar_broker, client_factory, topic) -> None:
    """c1 takes every key and acknowledges nothing; c2 joins and gets about half of the hashes.
    New messages of a moved hash wait for c1's acknowledgements (PIP-379): the diagnosis names the
    hash, its key, the owner c2, the holder c1 and the message c1 holds."""
    admin = Admin(pulsar_broker.admin_url)
    client = client_factory(pulsar_broker.service_url)
    key_shared = pulsar.ConsumerType.KeyShared
    c1 = client.subscribe(topic, "s", consumer_name="c1", consumer_type=key_shared)
    producer = client.create_producer(topic, batching_enabled=False)
    keys = [f"key-{i}" for i in range(40)]
    sent: dict[str, str] = {}
    for k in keys:
        mid = producer.send(k.encode(), partition_key=k)
        sent[f"{mid.ledger_id()}:{mid.entry_id()}"] = k
    for _ in keys:
        c1.receive(timeout_millis=10_000)
    c2 = client.subscribe(topic, "s", consumer_name="c2", consumer_type=key_shared)
    for k in keys:
        producer.send(k.encode(), partition_key=k)
    d = wait_for(admin, topic, "s", lambda d: "KEY_HELD_BY_OTHER_CONSUMER" in reasons(d))
    held = [b for b in d["blockers"] if b["reason"] == "KEY_HELD_BY_OTHER_CONSUMER"]
    assert held, d
    for b in held:
        assert (b["owner"], b["holder"]) == ("c2", "c1"), b
        assert sent[b["holderMessageId"]] == b["key"], (b, sent)
        assert b["key"] in keys and b["waiting"] >= 1 and 0 <= b["hash"] < 65536, b
    assert d["type"] == "Key_Shared" and d["messagesInReplay"] >= len(held), d
    # c1 acknowledges: the held hashes go to c2, and nothing is named any more.
    c2_got = 0
    for mid in list(sent):
        ledger, entry = (int(x) for x in mid.split(":"))
        c1.acknowledge(pulsar.MessageId(-1, ledger, entry, -1))
    while True:
        try:
            c2.acknowledge(c2.receive(timeout_millis=2000))
            c2_got += 1
        except pulsar.Timeout:
            break
    assert c2_got >= len(held)
    d = wait_for(admin, topic, "s", lambda d: "KEY_HELD_BY_OTHER_CONSUMER" not in reasons(d))
    assert "KEY_HELD_BY_OTHER_CONSUMER" not in reasons(d), d


def test_a_subscription_dispatch_rate_is_named(pulsar_broker, client_factory, topic) -> None:
    admin = Admin(pulsar_broker.admin_url)
    client = client_factory(pulsar_broker.service_url)
    consumer = client.subscribe(topic, "s", consumer_name="c", consumer_type=pulsar.ConsumerType.Shared)
    admin.topics.set_dispatch_rate(topic, msg_rate=2, subscription=True)
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(40):
        producer.send(b"m%d" % i)
    consumer.receive(timeout_millis=10_000)
    d = wait_for(admin, topic, "s", lambda d: "DISPATCH_RATE_LIMIT" in reasons(d))
    b = blocker(d, "DISPATCH_RATE_LIMIT")
    assert (b["scope"], b["dispatchThrottlingRateInMsg"]) == ("subscription", 2.0), b
    assert b["waitMs"] > 0, b


def test_a_delayed_message_is_named(pulsar_broker, client_factory, topic) -> None:
    admin = Admin(pulsar_broker.admin_url)
    client = client_factory(pulsar_broker.service_url)
    client.subscribe(topic, "s", consumer_name="c", consumer_type=pulsar.ConsumerType.Shared)
    before = int(time.time() * 1000)
    client.create_producer(topic).send(b"later", deliver_after=timedelta(hours=1))
    d = wait_for(admin, topic, "s", lambda d: "DELAYED_DELIVERY" in reasons(d))
    b = blocker(d, "DELAYED_DELIVERY")
    assert b["messages"] == 1, b
    assert before + 3_590_000 <= b["nextDeliveryAt"] <= int(time.time() * 1000) + 3_600_000, b


def test_an_open_transaction_is_named_until_it_commits(tmp_path, client_factory) -> None:
    topic = "persistent://public/default/diagnosis-txn"
    with Broker(data_dir=str(tmp_path), transactionCoordinatorEnabled=True) as b:
        admin = Admin(b.admin_url)
        client = client_factory(b.service_url)
        consumer = client.subscribe(topic, "s", consumer_name="c", consumer_type=pulsar.ConsumerType.Shared)
        with TxnWire(b.service_url) as w:
            w.connect_coordinator(0)
            w.producer(topic, 1)
            txn = w.new_txn()
            w.add_partition(txn, topic)
            w.send(1, b"in-txn", txn)
            d = diagnose(admin, topic, "s")
            open_txn = blocker(d, "OPEN_TRANSACTION")
            assert open_txn["transaction"] == f"({txn[0]},{txn[1]})", open_txn
            ledger, entry = (int(x) for x in open_txn["messageId"].split(":"))
            assert open_txn["maxReadPosition"] == f"{ledger}:{entry - 1}", open_txn
            w.end_txn(txn, commit=True)
        assert consumer.receive(timeout_millis=10_000).data() == b"in-txn"
        assert "OPEN_TRANSACTION" not in reasons(diagnose(admin, topic, "s"))


def test_the_cli_prints_the_diagnosis(pulsar_broker, client_factory, topic) -> None:
    client = client_factory(pulsar_broker.service_url)
    client.subscribe(topic, "s").close()
    client.create_producer(topic).send(b"m")
    cmd = [sys.executable, "-m", "pulsar_rs.cli", "admin", "--admin-url", pulsar_broker.admin_url]
    verb = ["topics", "diagnose-subscription", topic, "-s", "s"]
    p = subprocess.run([*cmd, *verb], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    rows = dict(line.split(None, 1) for line in p.stdout.splitlines())
    assert rows[f"{topic}.blockers.0.reason"].strip() == "NO_CONSUMERS", p.stdout
    p = subprocess.run([*cmd, "--json", *verb], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    assert reasons(json.loads(p.stdout)[topic]) == ["NO_CONSUMERS"], p.stdout


def test_unacknowledged_messages_with_their_redelivery_counts(pulsar_broker, client_factory, topic) -> None:
    admin = Admin(pulsar_broker.admin_url)
    client = client_factory(pulsar_broker.service_url)
    consumer = client.subscribe(topic, "s", consumer_name="c", consumer_type=pulsar.ConsumerType.Shared)
    producer = client.create_producer(topic, batching_enabled=False)
    sent = []
    for i in range(3):
        mid = producer.send(b"m%d" % i)
        sent.append(f"{mid.ledger_id()}:{mid.entry_id()}")
    for _ in sent:
        consumer.receive(timeout_millis=10_000)

    def listed(limit: int | None = None) -> dict[str, Any]:
        found = admin.topics.unacked_messages(topic, "s", limit)
        assert list(found) == [topic], found
        return found[topic]

    u = listed()
    assert u["consumers"] == [
        {"consumerName": "c", "entries": [{"messageId": m, "messages": 1, "redeliveryCount": 0} for m in sent]}
    ], u
    assert u["waitingForRedelivery"] == [] and u["truncated"] is False
    consumer.redeliver_unacknowledged_messages()
    deadline = time.monotonic() + 15
    while True:
        u = listed()
        entries = u["consumers"][0]["entries"] + u["waitingForRedelivery"]
        if [e["redeliveryCount"] for e in entries] == [1, 1, 1] or time.monotonic() > deadline:
            break
        time.sleep(0.1)  # the redelivery goes out on the dispatcher's next pass
    assert sorted(e["messageId"] for e in entries) == sorted(sent), u
    assert [e["redeliveryCount"] for e in entries] == [1, 1, 1], u
    assert listed(limit=2)["truncated"] is True
    cmd = [sys.executable, "-m", "pulsar_rs.cli", "admin", "--admin-url", pulsar_broker.admin_url, "--json"]
    verb = ["topics", "unacked-messages", topic, "-s", "s", "-n", "1"]
    p = subprocess.run([*cmd, *verb], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    assert len(json.loads(p.stdout)[topic]["consumers"][0]["entries"]) == 1, p.stdout
