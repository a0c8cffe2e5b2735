"""PIP-470 (Pulsar 5.0): inactive topics closed without being deleted
(``brokerCloseInactiveTopicsEnabled``, off by default; only with
``brokerDeleteInactiveTopicsEnabled=false`` and ``delete_when_no_subscriptions``). A topic without
producers or subscriptions for ``maxInactiveDurationSeconds`` of the broker's
:class:`pulsar_rs.ManualClock` is unloaded by the broker's own schedule (every second of real
time): its metric series go, it stays listed, and the official client reads its messages back
afterwards; a topic with a subscription stays loaded; a ``deleteWhileInactive`` namespace policy
does not turn the closing into a deletion.
"""

from __future__ import annotations

import time

import pulsar
import pytest

from conftest import admin, new_client
from pulsar_rs import Broker, InvalidConfigError, ManualClock

CLOSE_AFTER_A_MINUTE = {
    "brokerCloseInactiveTopicsEnabled": True,
    "brokerDeleteInactiveTopicsEnabled": False,
    "brokerDeleteInactiveTopicsFrequencySeconds": 1,
    "brokerDeleteInactiveTopicsMaxInactiveDurationSeconds": 60,
}


def _loaded(broker, topic: str) -> bool:
    """Whether the topic is loaded: its series are in ``/metrics`` (a closed topic has none)."""
    status, text = admin(broker.admin_url, "GET", "/metrics")
    assert status == 200
    return f'topic="{topic}"' in text


def _until_closed(broker, topic: str, timeout: float = 6.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _loaded(broker, topic):
            return True
        time.sleep(0.2)  # polls the broker's own once-a-second schedule, on the real clock
    return False


def _listed(broker, topic: str) -> bool:
    status, names = admin(broker.admin_url, "GET", "/admin/v2/persistent/public/default")
    assert status == 200, names
    return topic in names


def test_an_idle_topic_is_closed_and_keeps_its_data(pulsar_broker_factory, topic):
    clock = ManualClock()
    broker = pulsar_broker_factory(clock=clock, **CLOSE_AFTER_A_MINUTE)
    # A namespace policy asking for deletion: closing wins, nothing is deleted.
    policy = {
        "inactiveTopicDeleteMode": "delete_when_no_subscriptions",
        "maxInactiveDurationSeconds": 60,
        "deleteWhileInactive": True,
    }
    assert (
        admin(broker.admin_url, "POST", "/admin/v2/namespaces/public/default/inactiveTopicPolicies", policy)[0] == 204
    )
    client = new_client(broker.service_url)
    idle, kept = topic + "-idle", topic + "-kept"
    try:
        p = client.create_producer(idle)
        p.send(b"kept through the close")
        p.close()
        consumer = client.subscribe(kept, "s")
        client.create_producer(kept).send(b"y")
        assert _loaded(broker, idle) and _loaded(broker, kept)
        time.sleep(1.5)  # a schedule's round within the minute of the broker's clock: nothing closes
        assert _loaded(broker, idle), "a topic idle for less than a minute was closed"
        clock.advance(61)
        assert _until_closed(broker, idle), "the idle topic was not closed"
        assert _loaded(broker, kept), "a topic with a subscription was closed"
        assert _listed(broker, idle), "the closed topic was deleted"
        # The next consumer loads it again, with its message.
        reader = client.subscribe(idle, "after", initial_position=pulsar.InitialPosition.Earliest)
        assert reader.receive(timeout_millis=5000).data() == b"kept through the close"
        consumer.close()
    finally:
        client.close()


def test_the_keys_as_pulsar_checks_them():
    with pytest.raises(InvalidConfigError, match="mutually exclusive"):
        Broker(brokerCloseInactiveTopicsEnabled=True)  # deletion is on by default
    with pytest.raises(InvalidConfigError, match="only supports brokerDeleteInactiveTopicsMode"):
        Broker(
            brokerCloseInactiveTopicsEnabled=True,
            brokerDeleteInactiveTopicsEnabled=False,
            brokerDeleteInactiveTopicsMode="delete_when_subscriptions_caught_up",
        )
