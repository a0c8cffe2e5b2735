"""Pulsar's count and size limits (issue 37) met by the official client, set at each of Pulsar's
three levels: the broker setting (``broker.conf`` keys), the namespace policy and the topic policy
(set with :class:`pulsar_rs.Admin`), the topic's winning over the namespace's, the namespace's
over the broker's, 0 meaning unlimited. Refusals are Pulsar's: ``ProducerBusy`` for producers,
``ConsumerBusy`` for consumers, ``NotAllowedError`` for subscriptions and oversized messages, and
for topics past ``maxTopicsPerNamespace`` 409 (REST), 412 (partitioned) or a refused
auto-creation; partition counts past ``maxNumPartitionsPerPartitionedTopic`` get 406 / 422.

tests/differential/test_diff_limits.py compares the same answers with Apache Pulsar's; these run
without it, in the quick loop.
"""

from __future__ import annotations

import time

import pulsar
import pytest

import raw_protocol as rp
from conftest import admin, new_client
from pulsar_rs import Admin, AdminError
from txn_wire import TxnError, TxnWire


def _sub(c: pulsar.Client, topic: str, name: str, kind=pulsar.ConsumerType.Shared) -> pulsar.Consumer:
    return c.subscribe(topic, name, consumer_type=kind)


def test_max_producers_per_topic_at_each_level(pulsar_broker_factory, topic: str) -> None:
    b = pulsar_broker_factory(maxProducersPerTopic=1)
    a = Admin(b.admin_url)
    c = new_client(b.service_url)
    try:
        first = c.create_producer(topic)
        with pytest.raises(pulsar.ProducerBusy):
            c.create_producer(topic)
        # The namespace policy wins over the broker setting...
        a.namespaces.set_max_producers_per_topic("public/default", 2)
        assert a.namespaces.get_max_producers_per_topic("public/default") == 2
        second = c.create_producer(topic)
        with pytest.raises(pulsar.ProducerBusy):
            c.create_producer(topic)
        # ... and the topic policy over the namespace's; 0 is unlimited.
        a.topics.set_max_producers(topic, 0)
        assert a.topics.get_max_producers(topic) == 0
        more = [c.create_producer(topic) for _ in range(3)]
        a.topics.set_max_producers(topic, 5)
        with pytest.raises(pulsar.ProducerBusy):
            c.create_producer(topic)
        for p in [first, second, *more]:
            p.close()
        # Removing both policies leaves the broker's 1.
        a.topics.remove_max_producers(topic)
        a.namespaces.remove_max_producers_per_topic("public/default")
        assert a.topics.get_max_producers(topic) is None
        assert a.namespaces.get_max_producers_per_topic("public/default") is None
        last = c.create_producer(topic)
        with pytest.raises(pulsar.ProducerBusy):
            c.create_producer(topic)
        last.close()
    finally:
        c.close()


def test_max_consumers_per_topic(pulsar_broker, topic: str) -> None:
    a = Admin(pulsar_broker.admin_url)
    a.namespaces.set_max_consumers_per_topic("public/default", 2)
    c = new_client(pulsar_broker.service_url)
    try:
        # Two consumers on two subscriptions: the topic is full whatever the subscription.
        _sub(c, topic, "s1")
        _sub(c, topic, "s2")
        with pytest.raises(pulsar.ConsumerBusy):
            _sub(c, topic, "s3")
        a.topics.set_max_consumers(topic, 3)
        _sub(c, topic, "s3")
        with pytest.raises(pulsar.ConsumerBusy):
            _sub(c, topic, "s1")
    finally:
        c.close()
        a.namespaces.remove_max_consumers_per_topic("public/default")


def test_max_consumers_per_subscription(pulsar_broker_factory, topic: str) -> None:
    b = pulsar_broker_factory(maxConsumersPerSubscription=2)
    a = Admin(b.admin_url)
    c = new_client(b.service_url)
    try:
        _sub(c, topic, "s")
        _sub(c, topic, "s")
        with pytest.raises(pulsar.ConsumerBusy):
            _sub(c, topic, "s")
        _sub(c, topic, "other")  # another subscription has its own count
        a.topics.set_max_consumers_per_subscription(topic, 1)
        with pytest.raises(pulsar.ConsumerBusy):
            _sub(c, topic, "other")
        a.topics.set_max_consumers_per_subscription(topic, 0)
        _sub(c, topic, "s")
    finally:
        c.close()


def test_max_subscriptions_per_topic(pulsar_broker, topic: str) -> None:
    a = Admin(pulsar_broker.admin_url)
    a.namespaces.set_max_subscriptions_per_topic("public/default", 1)
    c = new_client(pulsar_broker.service_url)
    try:
        one = _sub(c, topic, "s1")
        with pytest.raises(pulsar.NotAllowedError):
            _sub(c, topic, "s2")
        # A consumer joining the existing subscription is no new subscription.
        _sub(c, topic, "s1")
        one.close()
        a.topics.set_max_subscriptions_per_topic(topic, 2)
        _sub(c, topic, "s2")
        with pytest.raises(pulsar.NotAllowedError):
            _sub(c, topic, "s3")
        # A reader is a (non-durable) subscription too, as in Pulsar's getNonDurableSubscription.
        with pytest.raises(pulsar.NotAllowedError):
            c.create_reader(topic, pulsar.MessageId.earliest)
        a.topics.set_max_subscriptions_per_topic(topic, 3)
        c.create_reader(topic, pulsar.MessageId.earliest).close()
    finally:
        c.close()
        a.namespaces.remove_max_subscriptions_per_topic("public/default")


def _send_answers(service_url: str, topic: str, sizes: list[int]) -> list[tuple]:
    """One SEND of each payload size, and the broker's answer to each."""
    frames = (rp.send_frame(1, seq, b"x" * size) for seq, size in enumerate(sizes))
    return rp.send_answers(service_url, topic, frames)


def test_topic_max_message_size(pulsar_broker, topic: str) -> None:
    a = Admin(pulsar_broker.admin_url)
    a.topics.create(topic)
    a.topics.set_max_message_size(topic, 2048)
    assert a.topics.get_max_message_size(topic) == 2048
    answers = _send_answers(pulsar_broker.service_url, topic, [1024, 4096])
    # ServerError.NotAllowedError = 22 (PulsarApi.proto), Pulsar's message.
    assert answers == [("receipt",), ("error", 22, "Exceed maximum message size")], answers
    # Above the broker's maxMessageSize (5 MiB here) is refused, as Pulsar refuses it.
    with pytest.raises(AdminError) as e:
        a.topics.set_max_message_size(topic, 6 * 1024 * 1024)
    assert e.value.status == 412, e.value
    a.topics.remove_max_message_size(topic)
    assert _send_answers(pulsar_broker.service_url, topic, [4096]) == [("receipt",)]


def test_max_topics_per_namespace(pulsar_broker) -> None:
    url = pulsar_broker.admin_url
    a = Admin(url)
    a.namespaces.create("public/limited")
    a.namespaces.set_max_topics_per_namespace("public/limited", 3)
    assert a.namespaces.get_max_topics_per_namespace("public/limited") == 3
    base = "/admin/v2/persistent/public/limited"
    assert admin(url, "PUT", f"{base}/one")[0] == 204
    assert admin(url, "PUT", f"{base}/parted/partitions", 2)[0] == 204
    # one, parted-partition-0 and -1: the namespace is full.
    full = "Exceed maximum number of topics in namespace."
    assert admin(url, "PUT", f"{base}/two") == (409, {"reason": full})
    assert admin(url, "PUT", f"{base}/parted2/partitions", 1) == (412, {"reason": full})
    c = new_client(pulsar_broker.service_url)
    try:
        with pytest.raises(pulsar.NotAllowedError):  # auto-creation refused
            c.create_producer("persistent://public/limited/auto")
        c.create_producer("persistent://public/limited/one").close()  # existing topics still serve
    finally:
        c.close()
    assert sorted(admin(url, "GET", base)[1]) == [
        "persistent://public/limited/one",
        "persistent://public/limited/parted-partition-0",
        "persistent://public/limited/parted-partition-1",
    ]
    # Deleting one makes room; a namespace policy of 0 is unlimited.
    assert admin(url, "DELETE", f"{base}/one")[0] == 204
    assert admin(url, "PUT", f"{base}/two")[0] == 204
    a.namespaces.set_max_topics_per_namespace("public/limited", 0)
    assert admin(url, "PUT", f"{base}/three")[0] == 204


def test_max_topics_per_namespace_broker_setting(pulsar_broker_factory) -> None:
    b = pulsar_broker_factory(maxTopicsPerNamespace=1)
    base = "/admin/v2/persistent/public/default"
    assert admin(b.admin_url, "PUT", f"{base}/first")[0] == 204
    assert admin(b.admin_url, "PUT", f"{base}/second")[0] == 409
    # The namespace policy wins over the broker setting.
    Admin(b.admin_url).namespaces.set_max_topics_per_namespace("public/default", 2)
    assert admin(b.admin_url, "PUT", f"{base}/second")[0] == 204


def test_max_num_partitions_per_partitioned_topic(pulsar_broker_factory) -> None:
    b = pulsar_broker_factory(maxNumPartitionsPerPartitionedTopic=16)
    base = "/admin/v2/persistent/public/default"
    t0 = time.monotonic()
    assert admin(b.admin_url, "PUT", f"{base}/huge/partitions", 1_000_000_000) == (
        406,
        {"reason": "Number of partitions should be less than or equal to 16"},
    )
    assert time.monotonic() - t0 < 5
    assert admin(b.admin_url, "GET", f"{base}/huge/partitions")[0] == 404  # nothing was created
    assert admin(b.admin_url, "PUT", f"{base}/fits/partitions", 16)[0] == 204
    assert admin(b.admin_url, "PUT", f"{base}/grows/partitions", 4)[0] == 204
    assert admin(b.admin_url, "POST", f"{base}/grows/partitions", 17) == (
        422,
        {"reason": "Desired partitions 17 can't be greater than the maximum partitions per topic 16."},
    )
    assert admin(b.admin_url, "POST", f"{base}/grows/partitions", 16)[0] == 204


def test_negative_limits_are_refused(pulsar_broker, topic: str) -> None:
    a = Admin(pulsar_broker.admin_url)
    a.topics.create(topic)
    for call in (
        lambda: a.namespaces.set_max_producers_per_topic("public/default", -1),
        lambda: a.namespaces.set_max_topics_per_namespace("public/default", -1),
        lambda: a.topics.set_max_consumers_per_subscription(topic, -1),
    ):
        with pytest.raises(AdminError) as e:
            call()
        assert e.value.status == 412, e.value


def test_the_subscription_type_is_checked_before_its_consumer_count(pulsar_broker_factory, topic: str) -> None:
    """As Pulsar's dispatchers: a second Exclusive consumer, or one of another type, is refused for
    that reason (``ConsumerBusy``) before ``maxConsumersPerSubscription`` is looked at."""
    b = pulsar_broker_factory(maxConsumersPerSubscription=1)
    with TxnWire(b.service_url) as w:
        w.subscribe(topic, "x", 1, shared=False)
        for consumer_id, shared, reason in (
            (2, False, "Exclusive consumer is already connected"),
            (3, True, "Subscription is of different type"),
        ):
            with pytest.raises(TxnError) as e:
                w.subscribe(topic, "x", consumer_id, shared=shared)
            assert e.value.code == "ConsumerBusy" and reason in str(e.value), e.value
        w.subscribe(topic, "y", 4, shared=True)
        with pytest.raises(TxnError, match="Subscription reached max consumers limit") as e:
            w.subscribe(topic, "y", 5, shared=True)
        assert e.value.code == "ConsumerBusy"


def test_limits_in_a_namespace_policies_document(pulsar_broker, client_factory) -> None:
    """A namespace created with a ``Policies`` body carrying limits applies them at once and shows
    them in the document and on their own paths; a negative one is shown as given and read as
    unset (Pulsar's ``normalizeValue``), so the broker's setting applies."""
    url = pulsar_broker.admin_url
    body = {"max_producers_per_topic": 1, "max_topics_per_namespace": 5, "max_consumers_per_topic": -1}
    assert admin(url, "PUT", "/admin/v2/namespaces/public/withlimits", body)[0] == 204
    a = Admin(url)
    assert a.namespaces.get_max_producers_per_topic("public/withlimits") == 1
    assert a.namespaces.get_max_topics_per_namespace("public/withlimits") == 5
    assert a.namespaces.get_max_consumers_per_topic("public/withlimits") == -1
    doc = a.namespaces.policies("public/withlimits")
    assert doc["max_producers_per_topic"] == 1 and doc["max_topics_per_namespace"] == 5
    assert doc["max_consumers_per_topic"] == -1
    assert "max_subscriptions_per_topic" not in doc  # an unset limit is left out, as Pulsar's
    c = client_factory(pulsar_broker.service_url)
    topic = "persistent://public/withlimits/t"
    c.create_producer(topic)
    with pytest.raises(pulsar.ProducerBusy):
        c.create_producer(topic)
    for s in ("a", "b", "c"):  # -1 consumers per topic: unlimited (the broker's 0)
        c.subscribe(topic, s)
    # Another change keeps the -1 as it is.
    a.namespaces.set_max_subscriptions_per_topic("public/withlimits", 2)
    assert a.namespaces.get_max_consumers_per_topic("public/withlimits") == -1
    assert a.namespaces.policies("public/withlimits")["max_subscriptions_per_topic"] == 2


def test_system_topics_have_no_count_limits(pulsar_broker_factory, client_factory) -> None:
    """Topics of Pulsar's system namespace ``pulsar/system`` are system topics, which Pulsar holds to
    none of the count limits (``AbstractTopic.isSystemTopic``); other namespaces keep them."""
    b = pulsar_broker_factory(maxProducersPerTopic=1, maxSubscriptionsPerTopic=1, maxTopicsPerNamespace=1)
    c = client_factory(b.service_url)
    system = "persistent://pulsar/system/limits-exempt"
    c.create_producer(system)
    c.create_producer(system)
    _sub(c, system, "a")
    _sub(c, system, "b")
    assert admin(b.admin_url, "PUT", "/admin/v2/persistent/pulsar/system/another")[0] == 204
    plain = "persistent://public/default/limited"
    c.create_producer(plain)
    with pytest.raises(pulsar.ProducerBusy):
        c.create_producer(plain)
    assert admin(b.admin_url, "PUT", "/admin/v2/persistent/public/default/another")[0] == 409
