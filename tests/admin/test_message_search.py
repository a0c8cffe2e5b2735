"""Message search (``GET .../searchMessages``, ``Admin.topics.search_messages``,
``pulsar-rs admin topics search-messages``): by key, by properties, by publish-time range, each
message of a (compressed) batch on its own, bounded by ``limit`` and ``maxEntries`` and continued
from ``lastScanned``; refusals for a partitioned topic and a malformed query."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pulsar
import pytest

from pulsar_rs import Admin, AdminError


def ids(found: dict) -> list[str]:
    return [m["messageId"] for m in found["messages"]]


def test_search_by_key_properties_time_and_batches(pulsar_broker, client_factory, topic) -> None:
    admin = Admin(pulsar_broker.admin_url)
    client = client_factory(pulsar_broker.service_url)
    plain = client.create_producer(topic, batching_enabled=False, producer_name="plain")
    sent: dict[str, tuple[str, dict[str, str]]] = {}
    middle: list[str] = []
    t_mid_from = t_mid_to = 0
    for i in range(60):
        if i == 20:
            time.sleep(0.05)  # the publish-time range below needs a gap on the client's clock
            t_mid_from = int(time.time() * 1000)
        props = {"i": str(i), "parity": "even" if i % 2 == 0 else "odd"}
        mid = plain.send(f"m{i}".encode(), partition_key=f"k{i % 6}", properties=props)
        id_ = f"{mid.ledger_id()}:{mid.entry_id()}"
        sent[id_] = (f"k{i % 6}", props)
        if 20 <= i < 40:
            middle.append(id_)
        if i == 39:
            t_mid_to = int(time.time() * 1000)
            time.sleep(0.05)  # the gap after the range
    batched = client.create_producer(
        topic,
        producer_name="batched",
        batching_enabled=True,
        batching_max_messages=25,
        batching_max_publish_delay_ms=1000,
        compression_type=pulsar.CompressionType.LZ4,
    )
    for i in range(25):
        batched.send_async(f"b{i}".encode(), None, partition_key="in-batch", properties={"i": str(100 + i)})
    batched.flush()

    by_key = admin.topics.search_messages(topic, key="k3")
    assert ids(by_key) == [i for i, (k, _) in sent.items() if k == "k3"], by_key
    assert by_key["complete"] is True and by_key["entriesScanned"] == 61, by_key
    m = by_key["messages"][0]
    assert (m["key"], m["producerName"], m["batchIndex"], m["properties"]["i"]) == ("k3", "plain", -1, "3"), m
    assert m["publishTime"] > 0 and m["payloadSize"] == 2

    both = admin.topics.search_messages(topic, properties={"parity": "even", "i": "4"})
    assert [m["properties"] for m in both["messages"]] == [{"i": "4", "parity": "even"}], both

    in_batch = admin.topics.search_messages(topic, key="in-batch")
    assert [m["batchIndex"] for m in in_batch["messages"]] == list(range(25)), in_batch
    assert len({m["messageId"] for m in in_batch["messages"]}) == 1
    seventh = in_batch["messages"][7]
    assert seventh["properties"] == {"i": "107"} and seventh["producerName"] == "batched", seventh
    one = admin.topics.search_messages(topic, properties={"i": "112"})
    assert [(m["key"], m["batchIndex"]) for m in one["messages"]] == [("in-batch", 12)], one

    in_range = admin.topics.search_messages(topic, from_publish_time=t_mid_from, to_publish_time=t_mid_to)
    assert ids(in_range) == middle, (in_range, middle)

    # Bounded: the limit, then maxEntries, then the rest from where it stopped.
    assert len(admin.topics.search_messages(topic, limit=5)["messages"]) == 5
    first = admin.topics.search_messages(topic, key="k0", max_entries=30)
    assert first["complete"] is False and first["entriesScanned"] == 30, first
    assert ids(first) == [i for i, (k, _) in list(sent.items())[:30] if k == "k0"]
    ledger, entry = (int(x) for x in first["lastScanned"].split(":"))
    rest = admin.topics.search_messages(topic, key="k0", from_message_id=f"{ledger}:{entry + 1}")
    assert ids(first) + ids(rest) == [i for i, (k, _) in sent.items() if k == "k0"], rest
    assert rest["complete"] is True

    cmd = [sys.executable, "-m", "pulsar_rs.cli", "admin", "--admin-url", pulsar_broker.admin_url, "--json"]
    cmd += ["topics", "search-messages", topic, "-k", "k5", "-p", "parity=odd", "--from-time", "1h"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    assert ids(json.loads(p.stdout)) == [i for i, (k, _) in sent.items() if k == "k5"], p.stdout


def test_search_refusals(pulsar_broker, client_factory, topic) -> None:
    admin = Admin(pulsar_broker.admin_url)
    client_factory(pulsar_broker.service_url).create_producer(topic).send(b"x")
    for bad in ({"properties": {"k": "v"}, "from_message_id": "nope"}, {"from_publish_time": 2, "to_publish_time": 1}):
        with pytest.raises(AdminError) as e:
            admin.topics.search_messages(topic, **bad)
        assert e.value.status == 400, bad
    admin.topics.create_partitioned_topic(topic + "-parts", 2)
    with pytest.raises(AdminError) as e:
        admin.topics.search_messages(topic + "-parts")
    assert e.value.status == 405
    with pytest.raises(AdminError) as e:
        admin.topics.search_messages(topic + "-missing")
    assert e.value.status == 404
