"""Topic-level policies with Pulsar's paths and ``TopicPolicies`` bodies (the Go admin client's
``TestSubscribeRate``, ``TestTopics_DelayedDelivery``, ...): each is unset (``null``) until set,
answers what was set, and is unset again after DELETE. Those the broker applies (unacked limits
per consumer and per subscription, delayed delivery) are shown taking effect (the replication
clusters and the replicator dispatch rate in tests/cluster/test_geo_replication.py); the others
(subscribe rate, deduplication snapshot interval, offload policies, auto subscription creation)
are kept and answered only (docs/admin.md).
Topic properties: set at creation, merged by PUT, one key removed by DELETE ``?key=``.
"""

from __future__ import annotations

import datetime
import time

import pulsar
import pytest

from conftest import admin, new_client

V2 = "/admin/v2/persistent"


def _rest(topic: str) -> str:
    return V2 + "/" + topic.removeprefix("persistent://")


def _create(url: str, topic: str) -> None:
    status, _ = admin(url, "PUT", _rest(topic))
    assert status == 204


STORED = [
    (
        "subscribeRate",
        {"subscribeThrottlingRatePerConsumer": 10, "ratePeriodInSecond": 60},
        {"subscribeThrottlingRatePerConsumer": 10, "ratePeriodInSecond": 60},
    ),
    ("deduplicationSnapshotInterval", 1000, 1000),
    (
        "replicatorDispatchRate",
        {
            "dispatchThrottlingRateInMsg": 500,
            "dispatchThrottlingRateInByte": 524288,
            "ratePeriodInSecond": 60,
            "relativeToPublishRate": True,
        },
        {
            "dispatchThrottlingRateInMsg": 500,
            "dispatchThrottlingRateInByte": 524288,
            "ratePeriodInSecond": 60,
            "relativeToPublishRate": True,
        },
    ),
    (
        "offloadPolicies",
        {"managedLedgerOffloadDriver": "aws-s3", "s3ManagedLedgerOffloadBucket": "b"},
        {"managedLedgerOffloadDriver": "aws-s3", "s3ManagedLedgerOffloadBucket": "b"},
    ),
    ("autoSubscriptionCreation", {"allowAutoSubscriptionCreation": True}, {"allowAutoSubscriptionCreation": True}),
    ("replication", ["standalone"], ["standalone"]),
    ("maxUnackedMessagesOnConsumer", 1000, 1000),
    ("maxUnackedMessagesOnSubscription", 0, 0),
    (
        "delayedDelivery",
        {"active": True, "tickTime": 1000, "maxDeliveryDelayInMillis": 60000},
        {"active": True, "tickTime": 1000, "maxDeliveryDelayInMillis": 60000},
    ),
]


@pytest.mark.parametrize(("path", "body", "shown"), STORED, ids=[s[0] for s in STORED])
def test_topic_policy_set_get_remove(pulsar_broker, topic: str, path: str, body, shown) -> None:
    url = pulsar_broker.admin_url
    _create(url, topic)
    assert admin(url, "GET", f"{_rest(topic)}/{path}") == (200, None)
    assert admin(url, "POST", f"{_rest(topic)}/{path}", body)[0] == 204
    assert admin(url, "GET", f"{_rest(topic)}/{path}") == (200, shown)
    assert admin(url, "DELETE", f"{_rest(topic)}/{path}")[0] == 204
    assert admin(url, "GET", f"{_rest(topic)}/{path}") == (200, None)


def test_topic_policy_refusals(pulsar_broker, topic: str) -> None:
    url = pulsar_broker.admin_url
    # A topic that does not exist: 404, as every topic policy.
    assert admin(url, "GET", f"{_rest(topic)}/subscribeRate")[0] == 404
    _create(url, topic)
    assert admin(url, "POST", f"{_rest(topic)}/maxUnackedMessagesOnConsumer", -1) == (
        412,
        {"reason": "maxUnackedNum must be 0 or more"},
    )
    assert admin(url, "POST", f"{_rest(topic)}/replication", [])[0] == 412
    assert admin(url, "POST", f"{_rest(topic)}/replication", ["global"])[0] == 412
    # As Pulsar (tests/differential/test_diff_geo_replication.py): a cluster not registered is 403.
    assert admin(url, "POST", f"{_rest(topic)}/replication", ["no-such-cluster"])[0] == 403
    # Topic-level only: the namespace paths are not these.
    assert admin(url, "GET", "/admin/v2/namespaces/public/default/maxUnackedMessagesOnConsumer")[0] == 404


def test_max_unacked_applied(pulsar_broker, topic: str) -> None:
    url = pulsar_broker.admin_url
    _create(url, topic)
    path = f"{_rest(topic)}/maxUnackedMessagesOnConsumer"
    # applied=true: the broker's maxUnackedMessagesPerConsumer while the topic sets nothing.
    assert admin(url, "GET", f"{path}?applied=true") == (200, 50000)
    assert admin(url, "GET", f"{path}?applied=false") == (200, None)
    assert admin(url, "POST", path, 7)[0] == 204
    assert admin(url, "GET", f"{path}?applied=true") == (200, 7)
    sub_path = f"{_rest(topic)}/maxUnackedMessagesOnSubscription?applied=true"
    assert admin(url, "GET", sub_path) == (200, 200000)


@pytest.mark.parametrize("partitions", [0, 3])
def test_topic_properties(pulsar_broker, topic: str, partitions: int) -> None:
    url = pulsar_broker.admin_url
    if partitions:
        status, _ = admin(
            url, "PUT", f"{_rest(topic)}/partitions", {"partitions": partitions, "properties": {"k1": "v1"}}
        )
    else:
        status, _ = admin(url, "PUT", _rest(topic), {"k1": "v1"})
    assert status == 204
    assert admin(url, "GET", f"{_rest(topic)}/properties") == (200, {"k1": "v1"})
    assert admin(url, "PUT", f"{_rest(topic)}/properties", {"k1": "v1b", "k2": "v2"})[0] == 204
    assert admin(url, "PUT", f"{_rest(topic)}/properties", {"k3": "v3"})[0] == 204
    assert admin(url, "GET", f"{_rest(topic)}/properties") == (200, {"k1": "v1b", "k2": "v2", "k3": "v3"})
    assert admin(url, "DELETE", f"{_rest(topic)}/properties?key=k1")[0] == 204
    assert admin(url, "GET", f"{_rest(topic)}/properties") == (200, {"k2": "v2", "k3": "v3"})


def test_topic_without_properties_has_the_empty_map(pulsar_broker, topic: str) -> None:
    _create(pulsar_broker.admin_url, topic)
    assert admin(pulsar_broker.admin_url, "GET", f"{_rest(topic)}/properties") == (200, {})


def test_schema_compatibility_strategy_applied(pulsar_broker) -> None:
    url = pulsar_broker.admin_url
    assert admin(url, "PUT", "/admin/v2/namespaces/public/scs")[0] == 204
    topic = "persistent://public/scs/t"
    _create(url, topic)
    path = f"{_rest(topic)}/schemaCompatibilityStrategy"
    assert admin(url, "PUT", "/admin/v2/namespaces/public/scs/schemaCompatibilityStrategy", "BACKWARD")[0] == 204
    # applied=true: the namespace's while the topic sets nothing; the topic's own is UNDEFINED.
    assert admin(url, "GET", f"{path}?applied=true") == (200, "BACKWARD")
    assert admin(url, "GET", f"{path}?applied=false") == (200, "UNDEFINED")
    assert admin(url, "PUT", path, "FORWARD")[0] == 204
    assert admin(url, "GET", f"{path}?applied=true") == (200, "FORWARD")
    assert admin(url, "DELETE", path)[0] == 204
    assert admin(url, "GET", f"{path}?applied=true") == (200, "BACKWARD")


def _received(consumer: pulsar.Consumer, timeout_ms: int = 1500) -> list:
    out = []
    while True:
        try:
            out.append(consumer.receive(timeout_millis=timeout_ms))
        except pulsar.Timeout:
            return out


@pytest.mark.parametrize("path", ["maxUnackedMessagesOnConsumer", "maxUnackedMessagesOnSubscription"])
def test_topic_unacked_limit_applies(pulsar_broker, topic: str, path: str) -> None:
    url = pulsar_broker.admin_url
    _create(url, topic)
    assert admin(url, "POST", f"{_rest(topic)}/{path}", 3)[0] == 204
    c = new_client(pulsar_broker.service_url)
    try:
        consumer = c.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Shared)
        producer = c.create_producer(topic, batching_enabled=False)
        for i in range(8):
            producer.send(f"m{i}".encode())
        # Nothing is acknowledged: dispatch stops at the topic's limit (the broker's is 50000 /
        # 200000).
        got = _received(consumer)
        assert len(got) == 3
        # Without the topic's policy the broker's limit is back: as Pulsar's, a blocked consumer
        # is unblocked by its next acknowledgment, and the rest comes.
        assert admin(url, "DELETE", f"{_rest(topic)}/{path}")[0] == 204
        consumer.acknowledge(got[0])
        assert len(_received(consumer, 3000)) == 5
    finally:
        c.close()


def test_topic_delayed_delivery_off_delivers_at_once(pulsar_broker, topic: str) -> None:
    url = pulsar_broker.admin_url
    _create(url, topic)
    c = new_client(pulsar_broker.service_url)
    try:
        consumer = c.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Shared)
        producer = c.create_producer(topic, batching_enabled=False)
        # On (the broker's default): a message delayed by 30 s is held.
        producer.send(b"held", deliver_after=datetime.timedelta(seconds=30))
        assert _received(consumer, 1000) == []
        # Off at the topic level: the next delayed message goes out at once.
        body = {"active": False, "tickTime": 1000, "maxDeliveryDelayInMillis": 0}
        assert admin(url, "POST", f"{_rest(topic)}/delayedDelivery", body)[0] == 204
        time.sleep(0.2)  # margin for the policy change to reach the topic's subscription before the send
        producer.send(b"now", deliver_after=datetime.timedelta(seconds=30))
        got = [m.data() for m in _received(consumer, 2000)]
        assert b"now" in got
    finally:
        c.close()


def test_topic_auto_subscription_creation_applies(pulsar_broker, topic: str) -> None:
    url = pulsar_broker.admin_url
    _create(url, topic)
    body = {"allowAutoSubscriptionCreation": False}
    assert admin(url, "POST", f"{_rest(topic)}/autoSubscriptionCreation", body)[0] == 204
    c = new_client(pulsar_broker.service_url)
    try:
        # Refused on this topic (the broker's allowAutoSubscriptionCreation is true) with
        # SubscriptionNotFound, which the C++ client retries until its operation timeout...
        with pytest.raises((pulsar.SubscriptionNotFound, pulsar.Timeout)):
            c.subscribe(topic, "new-sub")
        # ... and allowed again once the topic's override is removed.
        assert admin(url, "DELETE", f"{_rest(topic)}/autoSubscriptionCreation")[0] == 204
        c.subscribe(topic, "new-sub").close()
    finally:
        c.close()
