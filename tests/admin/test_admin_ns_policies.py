"""Namespace policies with their own paths in Pulsar's `Namespaces` resource
(`subscriptionExpirationTime`, the offload settings, `properties`, `autoTopicCreation`,
`persistence/bookieAffinity`), the active broker list and the dynamic configuration: Pulsar's
paths, bodies, status codes and messages, and the one of them the broker applies (topic
auto-creation)."""

from __future__ import annotations

import json
import urllib.request
from urllib.parse import quote

import pulsar
import pytest

from conftest import admin, new_client

NS = "/admin/v2/namespaces/public/default"


def reason(body) -> str:
    return body["reason"] if isinstance(body, dict) else str(body)


def test_subscription_expiration_time(pulsar_broker):
    url = pulsar_broker.admin_url
    path = f"{NS}/subscriptionExpirationTime"
    assert admin(url, "GET", path) == (204, None)  # unset: Pulsar's null Integer
    assert admin(url, "POST", path, 60)[0] == 204
    assert admin(url, "GET", path) == (200, 60)
    assert admin(url, "GET", NS)[1]["subscription_expiration_time_minutes"] == 60
    status, body = admin(url, "POST", path, -60)
    assert (status, reason(body)) == (412, "Invalid value for subscription expiration time")
    assert admin(url, "DELETE", path)[0] == 204
    assert admin(url, "GET", path) == (204, None)
    status, body = admin(url, "GET", "/admin/v2/namespaces/public/nope/subscriptionExpirationTime")
    assert (status, reason(body)) == (404, "Namespace does not exist")


def test_offload_settings_are_stored(pulsar_broker):
    url = pulsar_broker.admin_url
    assert admin(url, "GET", f"{NS}/offloadThreshold") == (200, -1)
    assert admin(url, "GET", f"{NS}/offloadThresholdInSeconds") == (200, -1)
    assert admin(url, "PUT", f"{NS}/offloadThresholdInSeconds", 60)[0] == 204
    assert admin(url, "GET", f"{NS}/offloadThresholdInSeconds") == (200, 60)
    status, body = admin(url, "PUT", f"{NS}/offloadThresholdInSeconds", -60)
    assert (status, reason(body)) == (412, "Invalid value for offloadThresholdInSecond")
    assert admin(url, "PUT", f"{NS}/offloadThreshold", 1024)[0] == 204
    assert admin(url, "GET", f"{NS}/offloadThreshold") == (200, 1024)
    lag = f"{NS}/offloadDeletionLagMs"
    assert admin(url, "GET", lag) == (204, None)
    assert admin(url, "PUT", lag, 0)[0] == 204
    assert admin(url, "GET", lag) == (200, 0)
    assert admin(url, "PUT", lag, 1000)[0] == 204
    doc = admin(url, "GET", NS)[1]
    assert (doc["offload_threshold"], doc["offload_threshold_in_seconds"], doc["offload_deletion_lag_ms"]) == (
        1024,
        60,
        1000,
    )
    assert admin(url, "DELETE", lag)[0] == 204
    assert admin(url, "GET", lag) == (204, None)


def test_properties(pulsar_broker):
    url = pulsar_broker.admin_url
    assert admin(url, "GET", f"{NS}/properties") == (200, {})
    assert admin(url, "PUT", f"{NS}/properties", {"a": "1"})[0] == 204
    assert admin(url, "PUT", f"{NS}/properties", {"b": "2"})[0] == 204  # added to, not replaced
    assert admin(url, "GET", f"{NS}/properties") == (200, {"a": "1", "b": "2"})
    assert admin(url, "PUT", f"{NS}/property/c/3")[0] == 204
    assert admin(url, "GET", f"{NS}/property/c") == (200, "3")
    assert admin(url, "DELETE", f"{NS}/property/a")[0] == 204
    assert admin(url, "GET", f"{NS}/property/a") == (204, None)
    assert admin(url, "GET", NS)[1]["properties"] == {"b": "2", "c": "3"}
    assert admin(url, "DELETE", f"{NS}/properties")[0] == 204
    assert admin(url, "GET", f"{NS}/properties") == (200, {})


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        (
            {"allowAutoTopicCreation": True, "topicType": "partitioned"},
            "[defaultNumPartitions] cannot be null when the type is partitioned.",
        ),
        (
            {"allowAutoTopicCreation": True, "topicType": "partitioned", "defaultNumPartitions": -1},
            "[defaultNumPartitions] cannot be less than 1 for partition type.",
        ),
        (
            {"allowAutoTopicCreation": True, "topicType": "non-partitioned", "defaultNumPartitions": 3},
            "[defaultNumPartitions] is not allowed to be set when the type is non-partition.",
        ),
    ],
)
def test_auto_topic_creation_refuses_what_pulsar_refuses(pulsar_broker, body, detail):
    status, answer = admin(pulsar_broker.admin_url, "POST", f"{NS}/autoTopicCreation", body)
    assert (status, reason(answer)) == (
        412,
        f"Invalid configuration for autoTopicCreationOverride. the detail is {detail}",
    )


def test_auto_topic_creation_override_is_applied(pulsar_broker):
    url = pulsar_broker.admin_url
    path = f"{NS}/autoTopicCreation"
    assert admin(url, "GET", path) == (204, None)
    assert admin(url, "POST", path, {"allowAutoTopicCreation": False})[0] == 204
    assert admin(url, "GET", path) == (200, {"allowAutoTopicCreation": False})
    client = new_client(pulsar_broker.service_url)
    try:
        with pytest.raises(pulsar.PulsarException):
            client.create_producer("persistent://public/default/auto-off")
        override = {"allowAutoTopicCreation": True, "topicType": "partitioned", "defaultNumPartitions": 3}
        assert admin(url, "POST", path, override)[0] == 204
        assert admin(url, "GET", path) == (200, override)
        client.create_producer("persistent://public/default/auto-partitioned").close()
        partitions = admin(url, "GET", "/admin/v2/persistent/public/default/auto-partitioned/partitions")[1]
        assert partitions["partitions"] == 3
        assert admin(url, "DELETE", path)[0] == 204
        assert admin(url, "GET", path) == (204, None)
        # Back to the broker's default: non-partitioned topics created on use.
        client.create_producer("persistent://public/default/auto-default").close()
        partitions = admin(url, "GET", "/admin/v2/persistent/public/default/auto-default/partitions")[1]
        assert partitions["partitions"] == 0
    finally:
        client.close()


def test_bookie_affinity_group_is_stored(pulsar_broker):
    url = pulsar_broker.admin_url
    path = f"{NS}/persistence/bookieAffinity"
    assert admin(url, "GET", path) == (204, None)
    group = {"bookkeeperAffinityGroupPrimary": "primary", "bookkeeperAffinityGroupSecondary": "secondary"}
    assert admin(url, "POST", path, group)[0] == 204
    assert admin(url, "GET", path) == (200, group)
    assert "bookieAffinityGroup" not in admin(url, "GET", NS)[1]  # Pulsar's local policies
    assert admin(url, "DELETE", path)[0] == 204
    assert admin(url, "GET", path) == (204, None)


def test_unset_persistence_is_an_empty_body(pulsar_broker):
    """As Apache Pulsar 4.0.8 answers it (checked against it): 200 and no body at all, not `null`
    (the Go admin client reads `null` as an empty policy; tests/differential compares the status)."""
    url = pulsar_broker.admin_url
    with urllib.request.urlopen(f"{url}{NS}/persistence", timeout=10) as r:
        assert (r.status, r.read()) == (200, b"")
    body = {"bookkeeperEnsemble": 1, "bookkeeperWriteQuorum": 1, "bookkeeperAckQuorum": 1}
    assert admin(url, "POST", f"{NS}/persistence", body)[0] == 204
    assert admin(url, "GET", f"{NS}/persistence")[1]["bookkeeperEnsemble"] == 1


def test_active_brokers(pulsar_broker):
    url = pulsar_broker.admin_url
    brokers = admin(url, "GET", "/admin/v2/brokers")
    assert brokers == admin(url, "GET", "/admin/v2/brokers/standalone")
    assert brokers[0] == 200 and len(brokers[1]) == 1


def test_dynamic_configuration_is_stored_for_dynamic_keys_only(pulsar_broker):
    url = pulsar_broker.admin_url
    status, names = admin(url, "GET", "/admin/v2/brokers/configuration")
    assert status == 200 and "allowAutoSubscriptionCreation" in names
    assert "clusterName" not in names  # not dynamic in Pulsar
    assert admin(url, "GET", "/admin/v2/brokers/configuration/values") == (200, {})
    status, body = admin(url, "POST", "/admin/v2/brokers/configuration/clusterName/other")
    assert (status, reason(body)) == (412, "Can't update non-dynamic configuration")
    value = '{"key/123":"https://example.com/"}'
    quoted = quote(value, safe="")
    assert admin(url, "POST", f"/admin/v2/brokers/configuration/allowAutoSubscriptionCreation/{quoted}")[0] == 200
    assert admin(url, "GET", "/admin/v2/brokers/configuration/values") == (
        200,
        {"allowAutoSubscriptionCreation": value},
    )
    # Stored, not applied: the running settings are the ones the broker started with.
    runtime = admin(url, "GET", "/admin/v2/brokers/configuration/runtime")[1]
    assert runtime["allowAutoSubscriptionCreation"] == "true"
    assert admin(url, "DELETE", "/admin/v2/brokers/configuration/allowAutoSubscriptionCreation")[0] == 204
    assert admin(url, "GET", "/admin/v2/brokers/configuration/values") == (200, {})


def test_missing_tenant_is_404_before_the_role_check(pulsar_broker_factory):
    pytest.importorskip("jwt")
    from token_util import hs_token, http, token_authz_settings

    b = pulsar_broker_factory(**token_authz_settings("anonymous"))
    user = hs_token("someone")
    url = b.admin_url + "/admin/v2/namespaces/{}/default/schemaCompatibilityStrategy"
    status, body = http("PUT", url.format("nope"), user, "FULL")
    assert (status, reason_of(body)) == (404, "Tenant does not exist")
    # An existing tenant the role does not administer: refused.
    assert http("PUT", url.format("public"), user, "FULL")[0] == 401


def reason_of(raw) -> str:
    return reason(raw if isinstance(raw, dict) else json.loads(raw))
