"""PIP-492 (Pulsar 5.0): ``pulsar_subscription_storage_backlog_age_seconds``, the age of each
durable subscription's oldest unacknowledged message, behind
``exposeSubscriptionBacklogAgeInPrometheus`` (off by default, as Pulsar's). The value is kept by
the periodic backlog quota check (here every second of real time) and aged at ``/metrics`` on the
broker's :class:`pulsar_rs.ManualClock`; a subscription without backlog, a reader, or a broker
without the key has no sample. Messages are published and consumed with the official client.
"""

from __future__ import annotations

import re
import time

import pulsar

from conftest import admin, new_client
from pulsar_rs import ManualClock

FAMILY = "pulsar_subscription_storage_backlog_age_seconds"
CHECKED_EVERY_SECOND = {"exposeSubscriptionBacklogAgeInPrometheus": True, "backlogQuotaCheckIntervalInSeconds": 1}


def _samples(broker) -> dict[str, float]:
    """The family's samples by subscription label."""
    status, text = admin(broker.admin_url, "GET", "/metrics")
    assert status == 200
    return {
        m.group(1): float(m.group(2))
        for m in re.finditer(rf'^{FAMILY}\{{[^}}]*subscription="([^"]*)"[^}}]*\}} (\S+)$', text, re.M)
    }


def _until(broker, condition, timeout: float = 10.0) -> dict[str, float]:
    """The samples once ``condition`` holds on them (the check runs every second)."""
    deadline = time.monotonic() + timeout
    while True:
        s = _samples(broker)
        if condition(s) or time.monotonic() > deadline:
            return s
        time.sleep(0.2)  # waits for the broker's own once-a-second check, on the real clock


def test_each_durable_subscription_with_backlog_has_its_age(pulsar_broker_factory, topic):
    clock = ManualClock()
    broker = pulsar_broker_factory(clock=clock, **CHECKED_EVERY_SECOND)
    client = new_client(broker.service_url)
    try:
        lagging = client.subscribe(topic, "lagging")
        caught_up = client.subscribe(topic, "caught-up")
        reader = client.create_reader(topic, pulsar.MessageId.earliest)
        producer = client.create_producer(topic, batching_enabled=False)
        for i in range(3):
            producer.send(f"m{i}".encode())
        for _ in range(3):
            caught_up.acknowledge(caught_up.receive(timeout_millis=5000))
        reader.read_next(timeout_millis=5000)
        # Neither the caught-up subscription (once its acks are in) nor the reader has a sample.
        s = _until(broker, lambda s: set(s) == {"lagging"})
        assert set(s) == {"lagging"}, s
        assert s["lagging"] < 60
        clock.advance(600)
        assert _samples(broker)["lagging"] >= 600  # aged on the broker's clock at /metrics
        for _ in range(3):
            lagging.acknowledge(lagging.receive(timeout_millis=5000))
        assert _until(broker, lambda s: not s) == {}, "a subscription without backlog keeps no age"
    finally:
        client.close()


def test_off_by_default(pulsar_broker, topic):
    client = new_client(pulsar_broker.service_url)
    try:
        client.subscribe(topic, "lagging")
        client.create_producer(topic).send(b"x")
        assert FAMILY not in admin(pulsar_broker.admin_url, "GET", "/metrics")[1]
    finally:
        client.close()
