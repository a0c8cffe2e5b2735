"""PIP-447 (Pulsar 4.2): custom labels on topic metrics. With
``exposeCustomTopicMetricLabelsEnabled``, a persistent topic's properties whose keys are allowed
(the namespace's ``allowedTopicPropertyKeysForMetrics`` policy when it names some, else the
broker's ``allowedTopicPropertyKeysForMetrics``) label every ``/metrics`` sample of the topic; a
partition carries its partitioned topic's. The policy is set through ``pulsar_rs.Admin``, the
``pulsar-rs admin`` CLI and the REST path; without the key no sample has them.
"""

from __future__ import annotations

import re
import subprocess
import sys

from conftest import admin, new_client
from pulsar_rs import Admin

NS = "public/default"
V2 = "/admin/v2/persistent/public/default"
T = "persistent://public/default/"
ENABLED = {"exposeCustomTopicMetricLabelsEnabled": True, "allowedTopicPropertyKeysForMetrics": "sla_tier,app_owner"}


def _labels(broker, family: str = "pulsar_storage_size") -> dict[str, dict[str, str]]:
    """The labels of ``family``'s samples, by topic."""
    status, text = admin(broker.admin_url, "GET", "/metrics")
    assert status == 200
    out: dict[str, dict[str, str]] = {}
    for m in re.finditer(rf"^{family}\{{([^}}]*)\}} \S+$", str(text), re.M):
        labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(1)))
        out[labels["topic"]] = labels
    return out


def _topics(broker) -> None:
    """``gold`` (sla_tier, app_owner and a key no one allows) and ``plat`` (2 partitions,
    sla_tier), loaded by a producer each."""
    url = broker.admin_url
    gold = {"sla_tier": "gold", "app_owner": "team-a", "secret": "x"}
    assert admin(url, "PUT", f"{V2}/gold", gold)[0] == 204
    plat = {"partitions": 2, "properties": {"sla_tier": "platinum"}}
    assert admin(url, "PUT", f"{V2}/plat/partitions", plat)[0] == 204
    client = new_client(broker.service_url)
    try:
        client.create_producer(T + "gold").send(b"g")
        client.create_producer(T + "plat").send(b"p")
    finally:
        client.close()


def _cli(broker, *args: str) -> str:
    cmd = [sys.executable, "-m", "pulsar_rs.cli", "admin", "--admin-url", broker.admin_url, *args]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_allowed_topic_properties_label_the_topic_metrics(pulsar_broker_factory):
    broker = pulsar_broker_factory(**ENABLED)
    _topics(broker)
    labels = _labels(broker)
    gold = labels[T + "gold"]
    assert (gold["sla_tier"], gold["app_owner"]) == ("gold", "team-a"), gold
    assert "secret" not in gold, "a key no one allows is no label"
    for p in (T + "plat-partition-0", T + "plat-partition-1"):
        assert labels[p]["sla_tier"] == "platinum", labels[p]
        assert "app_owner" not in labels[p]
    # Every topic family carries them, the subscription ones too.
    assert _labels(broker, "pulsar_msg_backlog")[T + "gold"]["sla_tier"] == "gold"

    # The namespace's keys replace the broker's: set by the Python client.
    a = Admin(broker.admin_url)
    assert a.namespaces.get_allowed_topic_property_keys_for_metrics(NS) == []
    a.namespaces.set_allowed_topic_property_keys_for_metrics(NS, ["secret"])
    assert a.namespaces.get_allowed_topic_property_keys_for_metrics(NS) == ["secret"]
    assert a.namespaces.policies(NS)["allowed_topic_properties_for_metrics"] == ["secret"]
    gold = _labels(broker)[T + "gold"]
    assert gold["secret"] == "x" and "sla_tier" not in gold, gold

    # The CLI, then removal: the broker's keys again.
    _cli(broker, "namespaces", "set-allowed-topic-properties-for-metrics", NS, "-k", "app_owner")
    # One key a line, as the CLI prints lists.
    assert _cli(broker, "namespaces", "get-allowed-topic-properties-for-metrics", NS).split() == ["app_owner"]
    gold = _labels(broker)[T + "gold"]
    assert gold["app_owner"] == "team-a" and "sla_tier" not in gold, gold
    _cli(broker, "namespaces", "remove-allowed-topic-properties-for-metrics", NS)
    assert admin(broker.admin_url, "GET", f"/admin/v2/namespaces/{NS}/allowedTopicPropertyKeysForMetrics") == (200, [])
    assert _labels(broker)[T + "gold"]["sla_tier"] == "gold"


def test_without_the_key_no_topic_has_custom_labels(pulsar_broker_factory):
    broker = pulsar_broker_factory(allowedTopicPropertyKeysForMetrics="sla_tier,app_owner")
    _topics(broker)
    gold = _labels(broker)[T + "gold"]
    assert set(gold) == {"cluster", "namespace", "topic"}, gold


def test_a_bad_key_list_is_refused(pulsar_broker_factory):
    broker = pulsar_broker_factory(**ENABLED)
    path = f"/admin/v2/namespaces/{NS}/allowedTopicPropertyKeysForMetrics"
    assert admin(broker.admin_url, "POST", path, [""])[0] == 412
    assert admin(broker.admin_url, "POST", path, {"k": 1})[0] == 400
