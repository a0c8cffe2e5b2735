"""HTTP service URLs and advertised listeners with the official ``pulsar-client``.

A client built on ``http://127.0.0.1:<adminport>`` looks topics up over REST
(``/lookup/v2/topic/...``, ``.../partitions?checkAllowAutoCreation=true``,
``/admin/v2/namespaces/{t}/{ns}/topics``) and then produces and consumes over the binary protocol:
plain, partitioned and pattern subscriptions. ``advertisedListeners`` answer lookups by the
client's ``listener_name``; an unknown listener is refused as Pulsar refuses it.
"""

from __future__ import annotations

import json
import re
import socket
import urllib.error
import urllib.request

import pulsar
import pytest

from conftest import OP_TIMEOUT_S
from raw_protocol import CONNECT, CONNECTED, LOOKUP, LOOKUP_RESPONSE, Raw, base, fb, fv, simple_frame

pytestmark = pytest.mark.timeout(90)

LOOKUP_FAILED, SERVICE_NOT_READY = 2, 6


def http_client(url: str, **kw) -> pulsar.Client:
    return pulsar.Client(
        url, operation_timeout_seconds=OP_TIMEOUT_S, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error), **kw
    )


def get(url: str, headers=None) -> tuple[int, object]:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def test_rest_lookup_answer(pulsar_broker):
    status, body = get(f"{pulsar_broker.admin_url}/lookup/v2/topic/persistent/public/default/t1")
    assert status == 200
    assert body["brokerUrl"] == pulsar_broker.service_url
    assert "brokerUrlTls" in body and body["httpUrl"].startswith("http://")
    status, body = get(f"{pulsar_broker.admin_url}/lookup/v2/topic/persistent/public/default/t1?listenerName=nope")
    assert status == 503 and "the broker do not have nope listener" in body["reason"]


def test_produce_consume_over_http_service_url(pulsar_broker, topic):
    client = http_client(pulsar_broker.admin_url)
    try:
        consumer = client.subscribe(topic, "s")
        producer = client.create_producer(topic)
        for i in range(10):
            producer.send(f"m{i}".encode())
        got = [consumer.receive(timeout_millis=5000).data() for _ in range(10)]
        assert got == [f"m{i}".encode() for i in range(10)]
    finally:
        client.close()


def test_partitioned_topic_over_http(pulsar_broker, topic):
    local = topic.removeprefix("persistent://")
    req = urllib.request.Request(
        f"{pulsar_broker.admin_url}/admin/v2/persistent/{local}/partitions", data=b"3", method="PUT"
    )
    req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=10) as r:
        assert r.status in (200, 204)
    client = http_client(pulsar_broker.admin_url)
    try:
        consumer = client.subscribe(topic, "s")
        producer = client.create_producer(
            topic, message_routing_mode=pulsar.PartitionsRoutingMode.RoundRobinDistribution
        )
        for i in range(9):
            producer.send(f"m{i}".encode())
        got = {consumer.receive(timeout_millis=5000).data() for _ in range(9)}
        assert got == {f"m{i}".encode() for i in range(9)}
        partitions = {client.get_topic_partitions(topic)[i] for i in range(3)}
        assert len(partitions) == 3
    finally:
        client.close()


def test_pattern_subscription_over_http(pulsar_broker, topic):
    binary = http_client(pulsar_broker.service_url)
    client = http_client(pulsar_broker.admin_url)
    try:
        for suffix in ("a", "b"):
            binary.create_producer(f"{topic}-{suffix}").send(b"init")
        status, names = get(f"{pulsar_broker.admin_url}/admin/v2/namespaces/public/default/topics?mode=PERSISTENT")
        assert status == 200 and f"{topic}-a" in names
        consumer = client.subscribe(
            re.compile(re.escape(topic) + "-.*"),
            "s",
            initial_position=pulsar.InitialPosition.Earliest,
            pattern_auto_discovery_period=1,
        )
        got = sorted(consumer.receive(timeout_millis=5000).topic_name() for _ in range(2))
        assert got == [f"{topic}-a", f"{topic}-b"]
    finally:
        client.close()
        binary.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def listener_broker(pulsar_broker_factory):
    port = free_port()
    return pulsar_broker_factory(
        port=port,
        # "internal" points at nothing listening: a client given it could not produce.
        advertisedListeners=f"internal:pulsar://127.0.0.1:1,external:pulsar://localhost:{port}",
        internalListenerName="internal",
    )


@pytest.mark.slow  # about 10 s here (README, 'Tests')
def test_lookup_answers_the_clients_listener(listener_broker, topic):
    client = http_client(listener_broker.service_url, listener_name="external")
    try:
        client.create_producer(topic).send(b"via external")
    finally:
        client.close()
    # Without a listener name the internal one is given, which is not reachable here.
    plain = http_client(listener_broker.service_url)
    try:
        with pytest.raises(pulsar.PulsarException):
            plain.create_producer(topic)
    finally:
        plain.close()


def test_unknown_listener_is_refused(listener_broker, topic):
    # As Pulsar: LOOKUP_RESPONSE Failed, ServiceNotReady, "the broker do not have nope listener".
    raw = Raw(listener_broker.service_url)
    try:
        raw.send(simple_frame(base(CONNECT, fb(1, "raw-test") + fv(4, 20))))
        assert raw.recv()[0] == CONNECTED
        lookup = fb(1, topic) + fv(2, 7) + fb(7, "nope")
        raw.send(simple_frame(base(LOOKUP, lookup)))
        ty, body = raw.recv()
        assert ty == LOOKUP_RESPONSE
        assert body[3] == [LOOKUP_FAILED] and body[4] == [7] and body[6] == [SERVICE_NOT_READY]
        assert body[7] == [b"the broker do not have nope listener"]
    finally:
        raw.close()
    # The C++ client treats ServiceNotReady as retryable, so it gives up at its operation timeout.
    client = pulsar.Client(
        listener_broker.service_url,
        listener_name="nope",
        operation_timeout_seconds=3,
        logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error),
    )
    try:
        with pytest.raises(pulsar.Timeout):
            client.create_producer(topic)
    finally:
        client.close()


def test_rest_lookup_by_listener(listener_broker):
    base = f"{listener_broker.admin_url}/lookup/v2/topic/persistent/public/default/x"
    assert get(base)[1]["brokerUrl"] == "pulsar://127.0.0.1:1"
    assert get(base + "?listenerName=external")[1]["brokerUrl"].startswith("pulsar://localhost:")
    assert get(base, {"X-Pulsar-ListenerName": "external"})[1]["brokerUrl"].startswith("pulsar://localhost:")


def test_bad_listener_settings(pulsar_broker_factory):
    import pulsar_rs

    with pytest.raises(pulsar_rs.InvalidConfigError, match="advertisedListeners"):
        pulsar_broker_factory(advertisedListeners="internal")
    with pytest.raises(pulsar_rs.InvalidConfigError, match="internalListenerName"):
        pulsar_broker_factory(advertisedListeners="a:pulsar://h:1", internalListenerName="b")
