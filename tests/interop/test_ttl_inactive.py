"""Message TTL and inactive-topic deletion, as Pulsar's broker does them, observed with the
official client and the admin REST API.

TTL: Pulsar runs its expiry check every ``messageExpiryCheckIntervalInMinutes`` (minutes only);
its own tests call ``BrokerService.checkMessageExpiry()`` directly (``BrokerTestBase
.runMessageExpiryCheck``), which ``Broker.check_message_expiry()`` is here. A policy change also
runs the check (Pulsar's ``applyUpdatedTopicPolicies``), and so do the admin ``expireMessages``
calls. Inactive topics use Pulsar's second-granular keys (``brokerDeleteInactiveTopics
FrequencySeconds`` / ``MaxInactiveDurationSeconds``): one test runs the real schedule; the others
call ``Broker.check_gc()`` (Pulsar's ``BrokerService.checkGC``) as Pulsar's own tests do.

Nothing here sleeps for time to pass: every broker runs on a :class:`pulsar_rs.ManualClock` (the
real time plus the test's advances), and a test advances it past a TTL or an inactivity limit.
"""

from __future__ import annotations

import time

import pulsar
import pytest

from conftest import admin, new_client
from pulsar_rs import Admin, AdminError, ManualClock

NS = "/admin/v2/namespaces/public/default"

#: Brokers whose inactive-topic check runs every second, deleting after one idle second: the
#: real schedule.
FAST_GC = {
    "brokerDeleteInactiveTopicsFrequencySeconds": 1,
    "brokerDeleteInactiveTopicsMaxInactiveDurationSeconds": 1,
}

#: Brokers that delete a topic idle for a minute of their clock; the schedule (hourly) never runs
#: in a test, which calls ``check_gc`` after advancing the clock.
IDLE_MINUTE = {
    "brokerDeleteInactiveTopicsFrequencySeconds": 3600,
    "brokerDeleteInactiveTopicsMaxInactiveDurationSeconds": 60,
}


@pytest.fixture
def clock() -> ManualClock:
    """The brokers' clock: the real time plus the advances the test makes."""
    return ManualClock()


@pytest.fixture
def pulsar_broker(pulsar_broker_factory, clock):
    """A broker on the test's clock (replaces the plugin's fixture in this module)."""
    return pulsar_broker_factory(clock=clock)


def _path(topic: str) -> str:
    return "/admin/v2/" + topic.replace("://", "/", 1)


def _sub_stats(url: str, topic: str, sub: str) -> dict:
    status, stats = admin(url, "GET", _path(topic) + "/stats")
    assert status == 200, stats
    return stats["subscriptions"][sub]


def _backlogged(client, topic: str, sub: str, n: int, batch: bool = False) -> None:
    """Creates durable subscription `sub` and leaves `n` messages in its backlog."""
    client.subscribe(topic, sub).close()
    producer = client.create_producer(topic, batching_enabled=batch, batching_max_messages=n)
    for i in range(n):
        producer.send_async(f"old-{i}".encode(), None)
    producer.flush()
    producer.close()


def _topics(url: str) -> list[str]:
    status, names = admin(url, "GET", "/admin/v2/persistent/public/default")
    assert status == 200, names
    return names


def _wait_gone(url: str, topic: str, timeout: float = 6.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if topic not in _topics(url):
            return True
        time.sleep(0.2)  # polls the broker's own schedule, which runs on the real clock
    return False


# ---------------------------------------------------------------- message TTL


def test_message_ttl_policy_endpoints(pulsar_broker, client, topic):
    url = pulsar_broker.admin_url
    assert admin(url, "GET", NS + "/messageTTL") == (200, None)
    assert admin(url, "POST", NS + "/messageTTL", 120)[0] == 204
    assert admin(url, "GET", NS + "/messageTTL") == (200, 120)
    assert admin(url, "GET", NS)[1]["message_ttl_in_seconds"] == 120
    status, body = admin(url, "POST", NS + "/messageTTL", -1)
    assert status == 412 and "Invalid value for message TTL" in body["reason"]
    assert admin(url, "DELETE", NS + "/messageTTL")[0] == 204
    assert admin(url, "GET", NS + "/messageTTL") == (200, None)
    # Topic level: Pulsar's `?messageTTL=N` query parameter.
    client.create_producer(topic).close()
    assert admin(url, "POST", _path(topic) + "/messageTTL?messageTTL=30")[0] == 204
    assert admin(url, "GET", _path(topic) + "/messageTTL") == (200, 30)
    assert admin(url, "POST", _path(topic) + "/messageTTL?messageTTL=-5")[0] == 412
    assert admin(url, "DELETE", _path(topic) + "/messageTTL")[0] == 204
    assert admin(url, "GET", _path(topic) + "/messageTTL") == (200, None)


def test_namespace_ttl_expires_backlog_on_check(pulsar_broker, client, topic, clock):
    url = pulsar_broker.admin_url
    assert admin(url, "POST", NS + "/messageTTL", 1)[0] == 204
    _backlogged(client, topic, "s", 10)
    pulsar_broker.check_message_expiry()
    assert _sub_stats(url, topic, "s")["msgBacklog"] == 10  # not a second old on the clock
    clock.advance(1.2)
    pulsar_broker.check_message_expiry()
    stats = _sub_stats(url, topic, "s")
    assert stats["msgBacklog"] == 0
    assert stats["totalMsgExpired"] == 10
    assert stats["lastExpireTimestamp"] > 0
    # The expired messages are not delivered; a message sent afterwards is. (Without the TTL: the
    # clock is 1.2 s ahead of the client's, so any message now looks older than a second.)
    assert admin(url, "DELETE", NS + "/messageTTL")[0] == 204
    producer = client.create_producer(topic)
    producer.send(b"fresh")
    pulsar_broker.check_message_expiry()
    consumer = client.subscribe(topic, "s")
    msg = consumer.receive(timeout_millis=5000)
    assert msg.data() == b"fresh"
    consumer.acknowledge(msg)
    _, metrics = admin(url, "GET", "/metrics")
    assert "pulsar_subscription_total_msg_expired" in metrics


def test_policy_change_runs_expiry_check(pulsar_broker, client, topic, clock):
    url = pulsar_broker.admin_url
    _backlogged(client, topic, "s", 5)
    clock.advance(1.2)
    assert _sub_stats(url, topic, "s")["msgBacklog"] == 5
    # As Pulsar's applyUpdatedTopicPolicies: setting the TTL checks expiry at once.
    assert admin(url, "POST", _path(topic) + "/messageTTL?messageTTL=1")[0] == 204
    assert _sub_stats(url, topic, "s")["msgBacklog"] == 0


def test_topic_ttl_overrides_namespace_and_zero_disables(pulsar_broker, client, topic, clock):
    url = pulsar_broker.admin_url
    assert admin(url, "POST", NS + "/messageTTL", 1)[0] == 204
    _backlogged(client, topic, "s", 4)
    # The topic's 0 wins over the namespace's 1: messages never expire.
    assert admin(url, "POST", _path(topic) + "/messageTTL?messageTTL=0")[0] == 204
    clock.advance(1.2)
    pulsar_broker.check_message_expiry()
    assert _sub_stats(url, topic, "s")["msgBacklog"] == 4
    assert admin(url, "POST", _path(topic) + "/messageTTL?messageTTL=3600")[0] == 204
    pulsar_broker.check_message_expiry()
    assert _sub_stats(url, topic, "s")["msgBacklog"] == 4
    assert admin(url, "DELETE", _path(topic) + "/messageTTL")[0] == 204  # back to the namespace's 1
    assert _sub_stats(url, topic, "s")["msgBacklog"] == 0


def test_broker_default_ttl(pulsar_broker_factory, client_factory, topic, clock):
    broker = pulsar_broker_factory(clock=clock, ttlDurationDefaultInSeconds=1)
    client = client_factory(broker.service_url)
    _backlogged(client, topic, "s", 3)
    broker.check_message_expiry()
    assert _sub_stats(broker.admin_url, topic, "s")["msgBacklog"] == 3  # not a second old yet
    clock.advance(1.2)
    broker.check_message_expiry()
    assert _sub_stats(broker.admin_url, topic, "s")["msgBacklog"] == 0


def test_ttl_is_entry_granular_with_batches(pulsar_broker, client, topic, clock):
    url = pulsar_broker.admin_url
    assert admin(url, "POST", NS + "/messageTTL", 1)[0] == 204
    _backlogged(client, topic, "s", 10, batch=True)  # one entry of 10 messages
    assert _sub_stats(url, topic, "s")["msgBacklog"] == 1
    clock.advance(1.2)
    pulsar_broker.check_message_expiry()
    stats = _sub_stats(url, topic, "s")
    assert stats["msgBacklog"] == 0 and stats["totalMsgExpired"] == 1  # entries, as Pulsar counts
    # Sent after the expiry (without the TTL: see test_namespace_ttl_expires_backlog_on_check).
    assert admin(url, "DELETE", NS + "/messageTTL")[0] == 204
    producer = client.create_producer(topic, batching_enabled=True, batching_max_messages=10)
    for i in range(10):
        producer.send_async(f"new-{i}".encode(), None)
    producer.flush()
    consumer = client.subscribe(topic, "s")
    got = []
    while True:
        try:
            m = consumer.receive(timeout_millis=1000)
        except pulsar.Timeout:
            break
        got.append(m.data())
        consumer.acknowledge(m)
    assert got == [f"new-{i}".encode() for i in range(10)]


def test_expire_messages_admin_endpoints(pulsar_broker, client, topic, clock):
    url = pulsar_broker.admin_url
    _backlogged(client, topic, "a", 6)
    client.subscribe(topic, "b").close()
    client.subscribe(topic, "c").close()
    producer = client.create_producer(topic)
    for i in range(3):
        producer.send(f"{i}".encode())
    admin(url, "POST", _path(topic) + "/subscription/c/skip_all")
    clock.advance(1.2)
    # One subscription: issued, its backlog expires.
    assert admin(url, "POST", _path(topic) + "/subscription/a/expireMessages/1")[0] == 204
    assert _sub_stats(url, topic, "a")["msgBacklog"] == 0
    assert _sub_stats(url, topic, "b")["msgBacklog"] == 3
    # No backlog: Pulsar answers 409 "not issued".
    status, body = admin(url, "POST", _path(topic) + "/subscription/c/expireMessages/1")
    assert status == 409 and body["reason"].startswith("Expire message by timestamp not issued")
    assert admin(url, "POST", _path(topic) + "/subscription/zz/expireMessages/1")[0] == 404
    # All subscriptions: the ones with a backlog expire, the caught-up one is reported.
    status, body = admin(url, "POST", _path(topic) + "/all_subscription/expireMessages/1")
    assert status == 409, body
    assert _sub_stats(url, topic, "b")["msgBacklog"] == 0
    # A large TTL expires nothing.
    producer.send(b"x")
    assert admin(url, "POST", _path(topic) + "/all_subscription/expireMessages/3600")[0] == 204
    assert _sub_stats(url, topic, "b")["msgBacklog"] == 1


def test_expire_messages_to_a_message_id(pulsar_broker, client, topic):
    """Pulsar's expireMessages with a MessageId body (internalExpireMessagesByPosition): the
    subscription's mark-delete moves to that message (the one after it too with isExcluded, as
    Pulsar's position.getNext()); a batch index expires the messages before it."""
    url = pulsar_broker.admin_url
    for s in ("a", "b", "c"):
        client.subscribe(topic, s).close()
    producer = client.create_producer(topic, batching_enabled=False)
    ids = [producer.send(f"m{i}".encode()) for i in range(6)]
    body = {"ledgerId": ids[2].ledger_id(), "entryId": ids[2].entry_id()}
    assert admin(url, "POST", _path(topic) + "/subscription/a/expireMessages", body)[0] == 204
    assert _sub_stats(url, topic, "a")["msgBacklog"] == 3
    assert admin(url, "POST", _path(topic) + "/subscription/b/expireMessages", {**body, "isExcluded": True})[0] == 204
    assert _sub_stats(url, topic, "b")["msgBacklog"] == 2
    consumer = client.subscribe(topic, "a")
    assert consumer.receive(timeout_millis=3000).data() == b"m3"
    consumer.close()
    # The Python Admin and its errors: past the last message Pulsar does not issue it (409).
    api = Admin(url)
    api.topics.expire_messages(topic, "c", message_id=(ids[0].ledger_id(), ids[0].entry_id()))
    assert _sub_stats(url, topic, "c")["msgBacklog"] == 5
    with pytest.raises(AdminError) as e:
        api.topics.expire_messages(topic, "c", message_id=(ids[5].ledger_id(), ids[5].entry_id() + 5))
    assert e.value.status == 409
    assert _sub_stats(url, topic, "c")["msgBacklog"] == 5
    assert admin(url, "POST", _path(topic) + "/subscription/zz/expireMessages", body)[0] == 404
    assert admin(url, "POST", _path(topic) + "/subscription/c/expireMessages", {"entryId": 1})[0] == 400
    # A batch: index 2 of a 5-message batch expires messages 0 and 1 only.
    client.subscribe(topic, "d").close()
    batcher = client.create_producer(topic, batching_enabled=True, batching_max_messages=5)
    for i in range(5):
        batcher.send_async(f"b{i}".encode(), None)
    batcher.flush()
    consumer = client.subscribe(topic, "d")
    first = consumer.receive(timeout_millis=3000)
    consumer.close()
    batch = {"ledgerId": first.message_id().ledger_id(), "entryId": first.message_id().entry_id(), "batchIndex": 2}
    assert admin(url, "POST", _path(topic) + "/subscription/d/expireMessages", batch)[0] == 204
    consumer = client.subscribe(topic, "d")
    got = [consumer.receive(timeout_millis=3000).data() for _ in range(3)]
    assert got == [b"b2", b"b3", b"b4"]
    consumer.close()


# ----------------------------------------------------------- inactive topics


def test_inactive_topic_policies_endpoints(pulsar_broker, client, topic):
    url = pulsar_broker.admin_url
    policy = {
        "inactiveTopicDeleteMode": "delete_when_subscriptions_caught_up",
        "maxInactiveDurationSeconds": 30,
        "deleteWhileInactive": True,
    }
    assert admin(url, "POST", NS + "/inactiveTopicPolicies", policy)[0] == 204
    assert admin(url, "GET", NS + "/inactiveTopicPolicies") == (200, policy)
    assert admin(url, "GET", NS)[1]["inactive_topic_policies"] == policy
    bad = dict(policy, inactiveTopicDeleteMode="sometimes")
    assert admin(url, "POST", NS + "/inactiveTopicPolicies", bad)[0] == 400
    assert admin(url, "DELETE", NS + "/inactiveTopicPolicies")[0] == 204
    assert admin(url, "GET", NS + "/inactiveTopicPolicies") == (200, None)
    client.create_producer(topic).close()
    assert admin(url, "POST", _path(topic) + "/inactiveTopicPolicies", policy)[0] == 204
    assert admin(url, "GET", _path(topic) + "/inactiveTopicPolicies") == (200, policy)


def test_idle_topic_is_deleted_busy_ones_are_not(pulsar_broker_factory, client_factory, topic, clock):
    broker = pulsar_broker_factory(clock=clock, **IDLE_MINUTE)
    url = broker.admin_url
    client = client_factory(broker.service_url)
    idle, with_producer, with_sub = topic + "-idle", topic + "-prod", topic + "-sub"
    p = client.create_producer(idle)
    p.send(b"x")
    p.close()
    producer = client.create_producer(with_producer)
    producer.send(b"y")
    consumer = client.subscribe(with_sub, "s")
    client.create_producer(with_sub).close()
    assert broker.check_gc() == [], "a topic idle for less than a minute was deleted"
    clock.advance(61)
    assert broker.check_gc() == [idle], "only the idle topic without subscriptions goes"
    assert admin(url, "GET", _path(idle) + "/stats")[0] == 404
    names = _topics(url)
    assert with_producer in names, "a topic with a connected producer was deleted"
    assert with_sub in names, "a topic with a subscription was deleted"
    producer.send(b"still works")
    consumer.close()  # the durable subscription still keeps it (delete_when_no_subscriptions)
    clock.advance(61)
    assert broker.check_gc() == []
    assert with_sub in _topics(url)
    # The deleted topic can be used again (auto-creation) and starts empty.
    c2 = client.subscribe(idle, "fresh", initial_position=pulsar.InitialPosition.Earliest)
    try:
        c2.receive(timeout_millis=500)
        raise AssertionError("a deleted topic kept its data")
    except pulsar.Timeout:
        pass


def test_the_inactive_topic_schedule_runs_on_its_own(pulsar_broker_factory, client_factory, topic):
    """The real schedule (every second, one idle second) with the system clock: no check_gc."""
    broker = pulsar_broker_factory(**FAST_GC)
    client = client_factory(broker.service_url)
    client.create_producer(topic).close()
    assert _wait_gone(broker.admin_url, topic), "the periodic check did not delete an idle topic"


def test_caught_up_mode_deletes_topics_without_backlog(pulsar_broker_factory, client_factory, topic, clock):
    broker = pulsar_broker_factory(
        clock=clock, brokerDeleteInactiveTopicsMode="delete_when_subscriptions_caught_up", **IDLE_MINUTE
    )
    url = broker.admin_url
    client = client_factory(broker.service_url)
    backlog, caught_up = topic + "-backlog", topic + "-caught"
    _backlogged(client, backlog, "s", 2)
    client.subscribe(caught_up, "s").close()
    client.create_producer(caught_up).close()
    clock.advance(61)
    assert broker.check_gc() == [caught_up], "the caught-up topic (only) goes"
    assert backlog in _topics(url), "a topic whose subscription has a backlog was deleted"
    assert admin(url, "POST", _path(backlog) + "/subscription/s/skip_all")[0] == 204
    # That check found it active: it must now stay idle for a minute of its own.
    assert broker.check_gc() == []
    clock.advance(61)
    assert broker.check_gc() == [backlog], "the topic was not deleted once its subscription caught up"


def test_namespace_policy_and_retention_keep_topics(pulsar_broker_factory, client_factory, topic, clock):
    broker = pulsar_broker_factory(clock=clock, **IDLE_MINUTE)
    url = broker.admin_url
    client = client_factory(broker.service_url)
    off = {
        "inactiveTopicDeleteMode": "delete_when_no_subscriptions",
        "maxInactiveDurationSeconds": 1,
        "deleteWhileInactive": False,
    }
    kept, retained = topic + "-kept", topic + "-retained"
    client.create_producer(kept).close()
    assert admin(url, "POST", _path(kept) + "/inactiveTopicPolicies", off)[0] == 204
    client.create_producer(retained).close()
    retention = {"retentionTimeInMinutes": -1, "retentionSizeInMB": -1}
    assert admin(url, "POST", _path(retained) + "/retention", retention)[0] == 204
    clock.advance(61)
    assert broker.check_gc() == []
    names = _topics(url)
    assert kept in names, "deleteWhileInactive=false did not keep the topic"
    assert retained in names, "infinite retention did not keep the topic"
    assert admin(url, "DELETE", _path(kept) + "/inactiveTopicPolicies")[0] == 204
    assert broker.check_gc() == [kept]


def test_gc_disabled_by_broker_key(pulsar_broker_factory, client_factory, topic, clock):
    broker = pulsar_broker_factory(clock=clock, brokerDeleteInactiveTopicsEnabled=False, **IDLE_MINUTE)
    client = client_factory(broker.service_url)
    client.create_producer(topic).close()
    clock.advance(61)
    assert broker.check_gc() == []
    assert topic in _topics(broker.admin_url)


def test_partitioned_topic_metadata_deleted_with_its_partitions(pulsar_broker_factory, topic):
    broker = pulsar_broker_factory(brokerDeleteInactivePartitionedTopicMetadataEnabled=True, **FAST_GC)
    url = broker.admin_url
    assert admin(url, "PUT", _path(topic) + "/partitions", 2)[0] in (200, 204)
    client = new_client(broker.service_url)
    try:
        p = client.create_producer(topic)
        for i in range(4):
            p.send(f"{i}".encode(), partition_key=str(i))
        p.close()
    finally:
        client.close()
    deadline = time.monotonic() + 6
    while time.monotonic() < deadline:
        _, parted = admin(url, "GET", "/admin/v2/persistent/public/default/partitioned")
        if topic not in parted:
            break
        time.sleep(0.2)  # polls the broker's own schedule, which runs on the real clock
    assert topic not in parted, "partitioned metadata survived the deletion of every partition"
    assert not [t for t in _topics(url) if t.startswith(topic)]


def test_partitioned_metadata_kept_by_default(pulsar_broker_factory, topic, clock):
    broker = pulsar_broker_factory(clock=clock, **IDLE_MINUTE)
    url = broker.admin_url
    assert admin(url, "PUT", _path(topic) + "/partitions", 2)[0] in (200, 204)
    client = new_client(broker.service_url)
    try:
        client.create_producer(topic).close()
    finally:
        client.close()
    clock.advance(61)
    assert sorted(broker.check_gc()) == [topic + "-partition-0", topic + "-partition-1"]
    _, parted = admin(url, "GET", "/admin/v2/persistent/public/default/partitioned")
    assert topic in parted


def test_non_persistent_idle_topic_is_deleted(pulsar_broker_factory, client_factory, clock):
    broker = pulsar_broker_factory(clock=clock, **IDLE_MINUTE)
    url = broker.admin_url
    client = client_factory(broker.service_url)
    name = f"non-persistent://public/default/np-gc-{time.monotonic_ns()}"
    busy = name + "-busy"
    p = client.create_producer(name)
    p.send(b"x")
    p.close()
    consumer = client.subscribe(busy, "s")
    assert admin(url, "GET", _path(name) + "/stats")[0] == 200
    assert broker.check_gc() == []
    clock.advance(61)
    assert broker.check_gc() == [name]
    assert admin(url, "GET", _path(name) + "/stats")[0] == 404, "an idle non-persistent topic was not deleted"
    assert admin(url, "GET", _path(busy) + "/stats")[0] == 200, "a non-persistent topic with a consumer was deleted"
    consumer.close()
