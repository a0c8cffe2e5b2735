"""Admin REST behaviours the Go admin client's suite relies on, as Apache Pulsar answers them:
schema uploads with ``"properties": null``, revoking a role on the subscription named
``subscription``, peeking on a subscription that does not exist yet (Pulsar creates it), the
stats options ``excludePublishers``/``excludeConsumers``, ``messageid/{timestamp}`` and PIP-431's
``topicCreationTimeStamp``/``lastPublishTimeStamp``."""

from __future__ import annotations

import time
import urllib.request

import pulsar

import pulsar_rs
from conftest import admin, new_client

NS = "/admin/v2/persistent/public/default"


def test_schema_upload_with_null_properties(pulsar_broker):
    url = pulsar_broker.admin_url
    path = "/admin/v2/schemas/public/default/null-props/schema"
    # What the Go client sends for an unset map (Jackson reads null as none).
    status, body = admin(url, "POST", path, {"type": "STRING", "schema": "", "properties": None})
    assert status == 200, body
    status, body = admin(url, "GET", path)
    assert status == 200, body
    assert body["type"] == "STRING"
    assert body["properties"] == {}
    status, body = admin(url, "GET", "/admin/v2/schemas/public/default/null-props/schemas")
    assert status == 200, body
    assert len(body["getSchemaResponses"]) == 1


def test_revoke_on_the_subscription_named_subscription(pulsar_broker):
    url = pulsar_broker.admin_url
    base = "/admin/v2/namespaces/public/default/permissions"
    status, body = admin(url, "POST", f"{base}/subscription/subscription", ["user", "other"])
    assert status in (200, 204), body
    status, body = admin(url, "GET", f"{base}/subscription")
    assert sorted(body["subscription"]) == ["other", "user"]
    # Pulsar's `DELETE permissions/{subscription}/{role}` for the subscription `subscription`.
    status, body = admin(url, "DELETE", f"{base}/subscription/user")
    assert status in (200, 204), body
    status, body = admin(url, "GET", f"{base}/subscription")
    assert body["subscription"] == ["other"]


def test_peek_creates_a_missing_subscription_at_the_earliest(pulsar_broker):
    url = pulsar_broker.admin_url
    topic = "persistent://public/default/peek-missing-sub"
    client = new_client(pulsar_broker.service_url)
    try:
        producer = client.create_producer(topic, batching_enabled=False)
        for i in range(3):
            producer.send(f"m{i}".encode(), properties={"k": str(i)})
        status, body = admin(url, "GET", f"{NS}/peek-missing-sub/subscription/fresh/position/1")
        assert status == 200, body
        with urllib.request.urlopen(url + f"{NS}/peek-missing-sub/subscription/fresh/position/2") as r:
            assert r.read() == b"m1"
            assert r.headers["X-Pulsar-PROPERTY-k"] == "1"
        status, subs = admin(url, "GET", f"{NS}/peek-missing-sub/subscriptions")
        assert status == 200
        assert "fresh" in subs
        status, stats = admin(url, "GET", f"{NS}/peek-missing-sub/stats")
        assert stats["subscriptions"]["fresh"]["msgBacklog"] == 3
        assert stats["subscriptions"]["fresh"]["isDurable"] is True
    finally:
        client.close()


def test_stats_exclude_publishers_and_consumers(pulsar_broker):
    url = pulsar_broker.admin_url
    status, body = admin(url, "PUT", f"{NS}/excl-p/partitions", 2)
    assert status in (200, 204), body
    client = new_client(pulsar_broker.service_url)
    try:
        for short in ("excl", "excl-p"):
            topic = f"persistent://public/default/{short}"
            client.subscribe(topic, "s")
            producer = client.create_producer(topic)
            producer.send(b"x")
        _, full = admin(url, "GET", f"{NS}/excl/stats")
        assert len(full["publishers"]) == 1
        assert len(full["subscriptions"]["s"]["consumers"]) == 1
        _, cut = admin(url, "GET", f"{NS}/excl/stats?excludePublishers=true&excludeConsumers=true")
        assert cut["publishers"] == []
        assert cut["subscriptions"]["s"]["consumers"] == []
        _, half = admin(url, "GET", f"{NS}/excl/stats?excludeConsumers=true")
        assert len(half["publishers"]) == 1
        _, parted = admin(
            url,
            "GET",
            f"{NS}/excl-p/partitioned-stats?perPartition=true&excludePublishers=true&excludeConsumers=true",
        )
        assert parted["publishers"] == []
        assert parted["subscriptions"]["s"]["consumers"] == []
        assert len(parted["partitions"]) == 2
        for p in parted["partitions"].values():
            assert p["publishers"] == []
            assert p["subscriptions"]["s"]["consumers"] == []
        _, whole = admin(url, "GET", f"{NS}/excl-p/partitioned-stats?perPartition=true")
        assert len(whole["publishers"]) == 2
    finally:
        client.close()


def test_message_id_by_timestamp(pulsar_broker):
    url = pulsar_broker.admin_url
    client = new_client(pulsar_broker.service_url)
    try:
        producer = client.create_producer("persistent://public/default/by-time", batching_enabled=False)
        first = producer.send(b"a")
        time.sleep(0.05)  # a client-stamped time gap: `cut` falls strictly between the two publish times
        cut = int(time.time() * 1000)
        time.sleep(0.05)  # the same gap after `cut`
        second = producer.send(b"b")
        status, body = admin(url, "GET", f"{NS}/by-time/messageid/{cut - 60_000}")
        assert status == 200, body
        assert (body["ledgerId"], body["entryId"]) == (first.ledger_id(), first.entry_id())
        assert body["partitionIndex"] == -1
        status, body = admin(url, "GET", f"{NS}/by-time/messageid/{cut}")
        assert status == 200, body
        assert (body["ledgerId"], body["entryId"]) == (second.ledger_id(), second.entry_id())
        # On a partitioned topic it is refused (Pulsar asks for a partition).
        admin(url, "PUT", f"{NS}/by-time-p/partitions", 1)
        status, _ = admin(url, "GET", f"{NS}/by-time-p/messageid/{cut}")
        assert status == 405
        status, body = admin(url, "GET", f"{NS}/by-time-p-partition-0/messageid/0")
        assert status == 200, body
        assert body["partitionIndex"] == 0
        status, _ = admin(url, "GET", f"{NS}/no-such-topic/messageid/0")
        assert status == 404
    finally:
        client.close()


def test_creation_and_last_publish_timestamps(tmp_path):
    before = int(time.time() * 1000)
    with pulsar_rs.Broker(data_dir=tmp_path / "data") as broker:
        url = broker.admin_url
        status, body = admin(url, "PUT", f"{NS}/stamps", None)
        assert status in (200, 204), body
        admin(url, "PUT", f"{NS}/stamps-p/partitions", 2)
        _, stats = admin(url, "GET", f"{NS}/stamps/stats")
        created = stats["topicCreationTimeStamp"]
        assert before <= created <= int(time.time() * 1000)
        assert stats["lastPublishTimeStamp"] == 0
        _, parted = admin(url, "GET", f"{NS}/stamps-p/partitioned-stats")
        assert parted["topicCreationTimeStamp"] >= before
        assert parted["lastPublishTimeStamp"] == 0
        client = new_client(broker.service_url)
        producer = client.create_producer("persistent://public/default/stamps")
        producer.send(b"x")
        pp = client.create_producer("persistent://public/default/stamps-p")
        pp.send(b"y", partition_key="k")
        msg = client.create_reader("persistent://public/default/stamps", pulsar.MessageId.earliest).read_next(5000)
        _, stats = admin(url, "GET", f"{NS}/stamps/stats")
        assert stats["lastPublishTimeStamp"] == msg.publish_timestamp()
        _, parted = admin(url, "GET", f"{NS}/stamps-p/partitioned-stats")
        assert parted["lastPublishTimeStamp"] >= before
        client.close()
        broker.stop()
    # Both survive a restart: the creation time is recorded, the last publish time read back.
    with pulsar_rs.Broker(data_dir=tmp_path / "data") as broker:
        _, stats = admin(broker.admin_url, "GET", f"{NS}/stamps/stats")
        assert stats["topicCreationTimeStamp"] == created
        assert stats["lastPublishTimeStamp"] == msg.publish_timestamp()
        broker.stop()


def test_avg_messages_per_entry_is_zero_before_any_delivery(pulsar_broker):
    client = new_client(pulsar_broker.service_url)
    try:
        client.subscribe("persistent://public/default/avg-none", "s")
        _, stats = admin(pulsar_broker.admin_url, "GET", f"{NS}/avg-none/stats")
        (consumer,) = stats["subscriptions"]["s"]["consumers"]
        # Pulsar's Consumer starts its moving average at 0.
        assert consumer["avgMessagesPerEntry"] == 0
    finally:
        client.close()
