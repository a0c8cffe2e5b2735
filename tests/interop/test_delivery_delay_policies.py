"""PIP-437 (Pulsar 4.2): the ``maxDelayedDeliveryTime`` and ``fixedDelayedDeliveryTime``
policies (seconds) on a namespace and a topic. A SEND asking for a longer delay than the maximum
is refused with ``NotAllowedError`` (checked on a raw connection: the C++ client answers any
SEND_ERROR but a checksum one by reconnecting and sending the message again) and counted in
``/metrics``; a fixed delay replaces whatever delay the producer asked for (the official client
receives the message that much later, on Shared)."""

from __future__ import annotations

import time
import urllib.request
from datetime import timedelta

import pulsar
import pytest

import raw_protocol as rp
from conftest import receive_all
from pulsar_rs import Admin, AdminError

pytestmark = pytest.mark.timeout(120)

NS = "public/default"
STRICT = {"delayedDeliveryTickTimeMillis": 100, "delayedDeliveryDeliverAtTimeStrict": True}


def _send_delayed(service_url: str, topic: str, delays_ms: list[int]) -> list[tuple]:
    """One SEND per delay (from the moment it is sent), and the broker's answer to each."""
    frames = (
        rp.send_frame(1, seq, b"x", deliver_at_time=int(time.time() * 1000) + delay)
        for seq, delay in enumerate(delays_ms)
    )
    return rp.send_answers(service_url, topic, frames)


def _rejected_metric(admin_url: str, topic: str) -> float | None:
    with urllib.request.urlopen(f"{admin_url}/metrics", timeout=10) as r:
        text = r.read().decode()
    for line in text.splitlines():
        if line.startswith("pulsar_broker_topic_messages_delayed_rejected_total{") and f'topic="{topic}"' in line:
            return float(line.rsplit(" ", 1)[1])
    return None


def test_the_maximum_refuses_longer_delays_topic_over_namespace(pulsar_broker, topic: str) -> None:
    a = Admin(pulsar_broker.admin_url)
    a.namespaces.set_max_delivery_delay(NS, 5)
    assert a.namespaces.get_max_delivery_delay(NS) == 5
    refused = (
        "error",
        rp.SERVER_ERROR_NOT_ALLOWED,
        "Exceeds max allowed delivery delay of 5000 milliseconds",
    )
    assert _send_delayed(pulsar_broker.service_url, topic, [1_000, 60_000]) == [("receipt",), refused]
    assert _rejected_metric(pulsar_broker.admin_url, topic) == 1
    # The topic's own maximum wins over the namespace's.
    a.topics.set_max_delivery_delay(topic, 120)
    assert a.topics.get_max_delivery_delay(topic) == 120
    assert a.topics.get_policy(topic, "maxDelayedDeliveryTime?applied=true") == 120
    assert _send_delayed(pulsar_broker.service_url, topic, [60_000]) == [("receipt",)]
    a.topics.set_max_delivery_delay(topic, 1)
    assert _send_delayed(pulsar_broker.service_url, topic, [5_000])[0][0] == "error"
    # Removed at both levels: no limit (the broker's delayedDeliveryMaxDelayInMillis is 0).
    a.topics.remove_max_delivery_delay(topic)
    a.namespaces.remove_max_delivery_delay(NS)
    assert a.topics.get_max_delivery_delay(topic) is None
    assert a.namespaces.get_max_delivery_delay(NS) is None
    assert _send_delayed(pulsar_broker.service_url, topic, [3_600_000]) == [("receipt",)]
    assert _rejected_metric(pulsar_broker.admin_url, topic) == 2


def test_the_broker_key_is_the_last_tier(pulsar_broker_factory, topic: str) -> None:
    broker = pulsar_broker_factory(delayedDeliveryMaxDelayInMillis=2_000)
    answers = _send_delayed(broker.service_url, topic, [1_000, 10_000])
    assert answers[0] == ("receipt",)
    assert answers[1][1:] == (rp.SERVER_ERROR_NOT_ALLOWED, "Exceeds max allowed delivery delay of 2000 milliseconds")
    Admin(broker.admin_url).namespaces.set_max_delivery_delay(NS, 60)
    assert _send_delayed(broker.service_url, topic, [10_000]) == [("receipt",)]


def test_a_negative_value_is_refused(pulsar_broker, topic: str) -> None:
    a = Admin(pulsar_broker.admin_url)
    with pytest.raises(AdminError) as refused:
        a.namespaces.set_fixed_delivery_delay(NS, -1)
    assert refused.value.status == 412
    with pytest.raises(AdminError) as refused:
        a.topics.set_max_delivery_delay("persistent://public/default/some-topic", -5)
    assert refused.value.status in (404, 412)


def test_the_fixed_delay_replaces_the_producers(pulsar_broker_factory, client_factory, topic: str) -> None:
    broker = pulsar_broker_factory(**STRICT)
    a = Admin(broker.admin_url)
    a.namespaces.set_fixed_delivery_delay(NS, 2)
    client = client_factory(broker.service_url)
    c = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared)
    p = client.create_producer(topic, batching_enabled=False)
    sent = time.time()
    p.send(b"asked-none")
    p.send(b"asked-an-hour", deliver_after=timedelta(hours=1))
    with pytest.raises(pulsar.Timeout):
        c.receive(timeout_millis=1500)
    got = receive_all(c, 2, timeout_ms=3000)
    elapsed = time.time() - sent
    assert sorted(m.data() for m in got) == [b"asked-an-hour", b"asked-none"]
    assert 1.9 <= elapsed < 4.0, elapsed
    # The topic's 0 turns the namespace's fixed delay off for this topic.
    a.topics.set_fixed_delivery_delay(topic, 0)
    assert a.topics.get_policy(topic, "fixedDelayedDeliveryTime?applied=true") == 0
    p.send(b"now")
    assert c.receive(timeout_millis=1500).data() == b"now"
