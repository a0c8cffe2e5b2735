"""Pattern (regex) subscriptions with the official ``pulsar-client`` (issue 12.6): topics created
after the consumer subscribed are found by the client's periodic GET_TOPICS_OF_NAMESPACE.

Why "not found after 4 s" with ``pattern_auto_discovery_period=1``: the Python wrapper
(pulsar-client 3.13, ``pulsar/__init__.py`` ``Client.subscribe``) type-checks that argument but
never calls ``ConsumerConfiguration.pattern_auto_discovery_period``, so the C++ default of 60 s
applies and the first poll comes a minute later. ``test_python_client_drops_the_discovery_period``
shows it; the other test sets the period on the C++ configuration (the same ``_pulsar`` objects the
wrapper uses) and the broker's answer is picked up within a period."""

from __future__ import annotations

import re
import time

import _pulsar
import pulsar
import pytest

pytestmark = pytest.mark.timeout(120)


def _receive(consumer, timeout_s=8.0):
    try:
        return consumer.receive(timeout_millis=int(timeout_s * 1000))
    except pulsar.Timeout:
        return None


def _pattern_consumer(client, pattern, sub):
    """A pattern consumer whose discovery period really is 1 s (see the module docstring)."""
    conf = _pulsar.ConsumerConfiguration()
    conf.consumer_type(pulsar.ConsumerType.Exclusive)
    conf.subscription_initial_position(pulsar.InitialPosition.Earliest)
    conf.pattern_auto_discovery_period(1)
    conf.schema(pulsar.schema.BytesSchema().schema_info())
    consumer = pulsar.Consumer()
    consumer._consumer = client._client.subscribe_pattern(pattern, sub, conf)
    consumer._client = client
    consumer._schema = pulsar.schema.BytesSchema()
    consumer._schema.attach_client(client._client)
    client._consumers.append(consumer)
    return consumer


def test_python_client_drops_the_discovery_period(client, monkeypatch):
    """The client-side cause: ``Client.subscribe`` never forwards the period."""
    calls = []
    real = _pulsar.ConsumerConfiguration

    class Recording(real):
        def pattern_auto_discovery_period(self, *args):
            calls.append(args)
            return super().pattern_auto_discovery_period(*args)

    monkeypatch.setattr(_pulsar, "ConsumerConfiguration", Recording)
    consumer = client.subscribe(
        re.compile("persistent://public/default/never-.*"), "s", pattern_auto_discovery_period=1
    )
    consumer.close()
    assert calls == [], "pulsar-client now forwards pattern_auto_discovery_period: drop the workaround"


def test_pattern_finds_topic_created_later(client, topic):
    base = topic.rsplit("/", 1)[1]
    first = f"persistent://public/default/{base}-a"
    client.create_producer(first).send(b"before")
    consumer = _pattern_consumer(client, f"persistent://public/default/{re.escape(base)}-.*", "pattern-sub")
    msg = _receive(consumer)
    assert msg is not None and msg.data() == b"before"
    consumer.acknowledge(msg)
    later = f"persistent://public/default/{base}-b"
    producer = client.create_producer(later)
    deadline = time.monotonic() + 15
    got = None
    while got is None and time.monotonic() < deadline:
        producer.send(b"after")
        got = _receive(consumer, 1.0)
    assert got is not None, "the topic created later was never subscribed"
    assert got.data() == b"after"
    assert got.topic_name() == later


@pytest.mark.slow  # about 9 s here (README, 'Tests')
def test_regex_modes_see_loaded_non_persistent_topics(client, topic):
    """GET_TOPICS_OF_NAMESPACE lists a namespace's topics by the consumer's regex mode as Pulsar's
    ``getListOfTopics`` does: ``AllTopics`` and ``NonPersistentOnly`` include the non-persistent
    topics loaded on the broker (they exist while used), ``PersistentOnly`` leaves them out."""
    base = topic.rsplit("/", 1)[1]
    p_topic = f"persistent://public/default/{base}-p"
    n_topic = f"non-persistent://public/default/{base}-n"
    producers = {t: client.create_producer(t) for t in (p_topic, n_topic, f"persistent://public/default/x-{base}")}
    pattern = re.compile(f"public/default/{re.escape(base)}-.*")
    modes = {
        "all": pulsar.RegexSubscriptionMode.AllTopics,
        "persistent": pulsar.RegexSubscriptionMode.PersistentOnly,
        "non-persistent": pulsar.RegexSubscriptionMode.NonPersistentOnly,
    }
    consumers = {k: client.subscribe(pattern, f"sub-{k}", regex_subscription_mode=m) for k, m in modes.items()}
    for t, p in producers.items():
        p.send(t.encode())
    expected = {"all": {p_topic, n_topic}, "persistent": {p_topic}, "non-persistent": {n_topic}}
    for k, consumer in consumers.items():
        got = set()
        while (msg := _receive(consumer, 3.0)) is not None:
            got.add(msg.topic_name())
            consumer.acknowledge(msg)
        assert got == expected[k], k
