"""PIP-452 (Pulsar 4.2): a namespace's topics listed with properties, through the admin API
(``GET /admin/v2/persistent/{tenant}/{ns}?properties=k1=v1,k2=v2``, ``pulsar_rs.Admin``,
``pulsar-rs admin topics list -p``) and GET_TOPICS_OF_NAMESPACE's ``properties`` (field 6, what
the Java client's pattern consumer forwards). Topics are created by the official
``pulsar-client`` (no properties) and through the admin API with properties.

With ``pulsarResourcesExtendedClassName=pulsar_rs.TopicPropertiesListing`` (and
``enableBrokerTopicListWatcher=false``, as PIP-452 requires) only the topics whose properties hold
every pair are listed, a partitioned topic's partitions with its properties; with Pulsar's default
the properties are ignored; watchers are neither offered nor served without
``enableBrokerTopicListWatcher``.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import admin, new_client
from pulsar_rs import Admin, AdminError, Broker, InvalidConfigError
from raw_protocol import Raw, base, fb, fv, parse, simple_frame

NS = "public/default"
V2 = "/admin/v2/persistent/public/default"
BY_PROPERTIES = {
    "pulsarResourcesExtendedClassName": "pulsar_rs.TopicPropertiesListing",
    "enableBrokerTopicListWatcher": False,
}
CONNECT, CONNECTED = 2, 3
GET_TOPICS_OF_NAMESPACE, GET_TOPICS_OF_NAMESPACE_RESPONSE = 32, 33
WATCH_TOPIC_LIST, ERROR = 64, 14


def _topics(broker) -> dict[str, list[str]]:
    """Creates the topics: ``prod`` (2 partitions) and ``prod-single`` with env=prod, region=eu;
    ``test`` with env=test, region=eu; ``plain`` by a producer of the official client."""
    url = broker.admin_url
    prod = {"env": "prod", "region": "eu"}
    assert admin(url, "PUT", f"{V2}/prod/partitions", {"partitions": 2, "properties": prod})[0] == 204
    assert admin(url, "PUT", f"{V2}/prod-single", prod)[0] == 204
    assert admin(url, "PUT", f"{V2}/test", {"env": "test", "region": "eu"})[0] == 204
    client = new_client(broker.service_url)
    try:
        client.create_producer("persistent://public/default/plain").send(b"x")
        # The partitions exist once a producer has loaded them.
        client.create_producer("persistent://public/default/prod").send(b"y")
    finally:
        client.close()
    t = "persistent://public/default/"
    return {
        "prod": sorted([t + "prod-partition-0", t + "prod-partition-1", t + "prod-single"]),
        "eu": sorted([t + "prod-partition-0", t + "prod-partition-1", t + "prod-single", t + "test"]),
        "all": sorted([t + "plain", t + "prod-partition-0", t + "prod-partition-1", t + "prod-single", t + "test"]),
    }


def _binary_list(broker, properties: dict[str, str]) -> list[str]:
    """GET_TOPICS_OF_NAMESPACE with ``properties`` (repeated KeyValue, field 6) on a raw v21 connection."""
    raw = Raw(broker.service_url)
    try:
        raw.send(simple_frame(base(CONNECT, fb(1, "raw-test") + fv(4, 21))))
        assert raw.recv()[0] == CONNECTED
        kvs = b"".join(fb(6, fb(1, k) + fb(2, v)) for k, v in properties.items())
        raw.send(simple_frame(base(GET_TOPICS_OF_NAMESPACE, fv(1, 7) + fb(2, NS) + kvs)))
        ty, body = raw.recv()
        assert ty == GET_TOPICS_OF_NAMESPACE_RESPONSE, (ty, body)
        return sorted(t.decode() for t in body.get(2, []))
    finally:
        raw.close()


def test_topics_are_listed_by_their_properties(pulsar_broker_factory):
    broker = pulsar_broker_factory(**BY_PROPERTIES)
    want = _topics(broker)
    a = Admin(broker.admin_url)
    assert sorted(a.topics.list(NS, {"env": "prod"})) == want["prod"]
    assert sorted(a.topics.list(NS, {"env": "prod", "region": "eu"})) == want["prod"]
    assert sorted(a.topics.list(NS, {"region": "eu"})) == want["eu"]
    assert a.topics.list(NS, {"env": "prod", "region": "us"}) == []
    assert sorted(a.topics.list(NS)) == want["all"]
    # The REST path as pulsar-admin sends it (URL-encoded), and a malformed pair refused.
    status, body = admin(broker.admin_url, "GET", f"{V2}?properties=env%3Dtest%2Cregion%3Deu")
    assert (status, body) == (200, ["persistent://public/default/test"])
    with pytest.raises(AdminError) as e:
        a.topics.list(NS, {"": "x"})
    assert e.value.status == 400
    # A topic's properties changed later list it by the new ones.
    assert admin(broker.admin_url, "PUT", f"{V2}/plain/properties", {"env": "prod"})[0] == 204
    assert "persistent://public/default/plain" in a.topics.list(NS, {"env": "prod"})
    # The binary protocol's list (a Java pattern consumer's) filters the same way.
    assert _binary_list(broker, {"env": "test"}) == ["persistent://public/default/test"]
    assert _binary_list(broker, {}) == want["all"]


def test_the_cli_lists_by_properties(pulsar_broker_factory):
    broker = pulsar_broker_factory(**BY_PROPERTIES)
    want = _topics(broker)
    cmd = [sys.executable, "-m", "pulsar_rs.cli", "admin", "--admin-url", broker.admin_url]
    p = subprocess.run(
        [*cmd, "topics", "list", NS, "-p", "env=prod,region=eu"], capture_output=True, text=True, timeout=30
    )
    assert p.returncode == 0, p.stderr
    assert sorted(p.stdout.split()) == want["prod"]  # one topic a line, as pulsar-admin


def test_pulsars_default_ignores_the_properties(pulsar_broker):
    want = _topics(pulsar_broker)
    assert sorted(Admin(pulsar_broker.admin_url).topics.list(NS, {"env": "prod"})) == want["all"]
    assert _binary_list(pulsar_broker, {"env": "prod"}) == want["all"]


def test_watchers_are_off_without_enable_broker_topic_list_watcher(pulsar_broker_factory):
    broker = pulsar_broker_factory(**BY_PROPERTIES)
    raw = Raw(broker.service_url)
    try:
        raw.send(simple_frame(base(CONNECT, fb(1, "raw-test") + fv(4, 21))))
        ty, connected = raw.recv()
        assert ty == CONNECTED
        flags = parse(connected[4][0]) if 4 in connected else {}
        assert flags.get(4, [0]) == [0]  # supports_topic_watchers not offered
        raw.send(
            simple_frame(
                base(WATCH_TOPIC_LIST, fv(1, 1) + fv(2, 5) + fb(3, NS) + fb(4, "persistent://public/default/.*"))
            )
        )
        ty, body = raw.recv()
        assert ty == ERROR, (ty, body)
        assert b"enableBrokerTopicListWatcher" in body[3][0]
    finally:
        raw.close()


def test_a_listing_by_properties_with_watchers_on_is_refused_at_start():
    with pytest.raises(InvalidConfigError, match="enableBrokerTopicListWatcher"):
        Broker(pulsarResourcesExtendedClassName="pulsar_rs.TopicPropertiesListing")
    with pytest.raises(InvalidConfigError, match="pulsarResourcesExtendedClassName"):
        Broker(pulsarResourcesExtendedClassName="com.example.Listing")
