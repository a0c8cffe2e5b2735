"""Clusters, tenants and namespaces as Pulsar's admin objects (`/admin/v2/...`, its JSON and
status codes), what a first start creates, topics refused in a namespace that does not exist
(official client), and data directories of the previous layout still working."""

from __future__ import annotations

import shutil

import pulsar
import pytest

from conftest import admin
from pulsar_rs import Broker
from pulsar_rs._native import META_DIR, METADATA_PREFIXES


def test_first_start_creates_what_standalone_creates(pulsar_broker):
    url = pulsar_broker.admin_url
    assert admin(url, "GET", "/admin/v2/clusters") == (200, ["standalone"])
    status, data = admin(url, "GET", "/admin/v2/clusters/standalone")
    assert status == 200 and data["brokerServiceUrl"] == pulsar_broker.service_url
    assert admin(url, "GET", "/admin/v2/tenants") == (200, ["public", "pulsar"])
    assert admin(url, "GET", "/admin/v2/tenants/public") == (
        200,
        {"adminRoles": [], "allowedClusters": ["standalone"]},
    )
    assert admin(url, "GET", "/admin/v2/namespaces/public") == (200, ["public/default"])
    assert admin(url, "GET", "/admin/v2/namespaces/pulsar") == (200, ["pulsar/system"])


def test_cluster_crud_and_status_codes(pulsar_broker):
    url = pulsar_broker.admin_url
    body = {"serviceUrl": "http://other:8080", "brokerServiceUrl": "pulsar://other:6650"}
    assert admin(url, "PUT", "/admin/v2/clusters/other", body)[0] == 200  # ClustersBase: Response.ok()
    assert admin(url, "PUT", "/admin/v2/clusters/other", body)[0] == 409
    assert admin(url, "PUT", "/admin/v2/clusters/bad%20name", body)[0] == 412
    # What was given, with Pulsar's ClusterData defaults beside it (as 4.0.8 answers).
    status, got = admin(url, "GET", "/admin/v2/clusters/other")
    assert status == 200 and got == {**got, **body} and got["brokerClientTlsTrustStoreType"] == "JKS"
    assert admin(url, "POST", "/admin/v2/clusters/other", {"serviceUrl": "http://x:1"})[0] == 200
    got = admin(url, "GET", "/admin/v2/clusters/other")[1]
    assert got["serviceUrl"] == "http://x:1" and "brokerServiceUrl" not in got
    assert admin(url, "POST", "/admin/v2/clusters/nope", body)[0] == 404
    assert admin(url, "GET", "/admin/v2/clusters/nope")[0] == 404
    # A cluster a tenant lists is deleted all the same (Pulsar's isClusterUsed counts only v1
    # namespaces tenant/cluster/ns; checked with pulsar-admin against 4.0.8).
    tenant = {"adminRoles": [], "allowedClusters": ["other"]}
    assert admin(url, "PUT", "/admin/v2/tenants/t-other", tenant)[0] == 204
    assert admin(url, "DELETE", "/admin/v2/clusters/other")[0] == 204
    assert admin(url, "DELETE", "/admin/v2/tenants/t-other")[0] == 204
    assert admin(url, "DELETE", "/admin/v2/clusters/other")[0] == 404


def test_tenant_crud_and_status_codes(pulsar_broker):
    url = pulsar_broker.admin_url
    info = {"adminRoles": ["alice"], "allowedClusters": ["standalone"]}
    assert admin(url, "PUT", "/admin/v2/tenants/acme", info)[0] == 204
    status, body = admin(url, "PUT", "/admin/v2/tenants/acme", info)
    assert status == 409 and body["reason"] == "Tenant already exist"
    assert admin(url, "PUT", "/admin/v2/tenants/x", {"allowedClusters": []})[0] == 412
    assert admin(url, "PUT", "/admin/v2/tenants/x", {"allowedClusters": ["mars"]})[0] == 412
    assert admin(url, "GET", "/admin/v2/tenants/acme") == (200, info)
    info2 = {"adminRoles": ["bob"], "allowedClusters": ["standalone"]}
    assert admin(url, "POST", "/admin/v2/tenants/acme", info2)[0] == 204
    assert admin(url, "GET", "/admin/v2/tenants/acme") == (200, info2)
    assert admin(url, "POST", "/admin/v2/tenants/nope", info2)[0] == 404
    assert "acme" in admin(url, "GET", "/admin/v2/tenants")[1]
    assert admin(url, "PUT", "/admin/v2/namespaces/acme/ns1")[0] == 204
    status, body = admin(url, "DELETE", "/admin/v2/tenants/acme")
    assert status == 409 and body["reason"] == "The tenant still has active namespaces"
    assert admin(url, "DELETE", "/admin/v2/namespaces/acme/ns1")[0] == 204
    assert admin(url, "DELETE", "/admin/v2/tenants/acme")[0] == 204
    assert admin(url, "GET", "/admin/v2/tenants/acme")[0] == 404
    assert admin(url, "DELETE", "/admin/v2/tenants/acme")[0] == 404


def test_namespace_crud_and_policies_document(pulsar_broker, client):
    url = pulsar_broker.admin_url
    assert admin(url, "PUT", "/admin/v2/namespaces/nobody/ns")[0] == 404  # tenant missing
    body = {
        "retention_policies": {"retentionTimeInMinutes": 60, "retentionSizeInMB": 10},
        "deduplicationEnabled": True,
        "message_ttl_in_seconds": 3600,
    }
    assert admin(url, "PUT", "/admin/v2/namespaces/public/ns1", body)[0] == 204
    status, reply = admin(url, "PUT", "/admin/v2/namespaces/public/ns1", body)
    assert status == 409 and reply["reason"] == "Namespace already exists"
    status, doc = admin(url, "GET", "/admin/v2/namespaces/public/ns1")
    assert status == 200
    assert doc["retention_policies"] == body["retention_policies"]
    assert doc["deduplicationEnabled"] is True and doc["message_ttl_in_seconds"] == 3600
    for field in ("auth_policies", "backlog_quota_map", "publishMaxMessageRate", "bundles"):
        assert field in doc, field
    # The namespace policy endpoints read and write the same document.
    rate = {"publishThrottlingRateInMsg": 50, "publishThrottlingRateInByte": -1}
    assert admin(url, "POST", "/admin/v2/namespaces/public/ns1/publishRate", rate)[0] == 204
    doc = admin(url, "GET", "/admin/v2/namespaces/public/ns1")[1]
    assert doc["publishMaxMessageRate"] == {"standalone": rate}
    assert admin(url, "GET", "/admin/v2/namespaces/public/ns1/retention")[1] == body["retention_policies"]
    assert admin(url, "GET", "/admin/v2/namespaces/public/missing/retention")[0] == 404
    assert "public/ns1" in admin(url, "GET", "/admin/v2/namespaces/public")[1]
    # Not empty while it holds a topic.
    producer = client.create_producer("persistent://public/ns1/t")
    producer.send(b"x")
    producer.close()
    status, reply = admin(url, "DELETE", "/admin/v2/namespaces/public/ns1")
    assert status == 409 and reply["reason"] == "Cannot delete non empty namespace"
    assert admin(url, "DELETE", "/admin/v2/persistent/public/ns1/t")[0] == 204
    assert admin(url, "DELETE", "/admin/v2/namespaces/public/ns1")[0] == 204
    assert admin(url, "GET", "/admin/v2/namespaces/public/ns1")[0] == 404
    assert admin(url, "DELETE", "/admin/v2/namespaces/public/ns1")[0] == 404


def test_topic_in_missing_namespace_is_refused(pulsar_broker, client):
    with pytest.raises(pulsar.TopicNotFound):
        client.create_producer("persistent://public/nowhere/t")
    with pytest.raises(pulsar.TopicNotFound):
        client.subscribe("persistent://nobody/ns/t", "s")
    url = pulsar_broker.admin_url
    assert admin(url, "PUT", "/admin/v2/persistent/public/nowhere/t")[0] == 404
    assert admin(url, "PUT", "/admin/v2/persistent/public/nowhere/p/partitions", 2)[0] == 404
    # Its topic list is 404 too, as Pulsar's Namespaces.getTopics (the Go client's HTTP lookup
    # expects an error: TestNamespaceTopicsNamespaceDoesNotExitWebURL).
    assert admin(url, "GET", "/admin/v2/namespaces/public/nowhere/topics")[0] == 404
    # Once created, the namespace takes topics.
    assert admin(url, "PUT", "/admin/v2/namespaces/public/nowhere")[0] == 204
    assert admin(url, "GET", "/admin/v2/namespaces/public/nowhere/topics") == (200, [])
    client.create_producer("persistent://public/nowhere/t").send(b"ok")


def test_data_dir_of_the_previous_layout_keeps_working(tmp_path, client_factory):
    data = tmp_path / "data"
    b = Broker(data_dir=str(data))
    try:
        url = b.admin_url
        assert admin(url, "PUT", "/admin/v2/tenants/legacy", {"allowedClusters": ["standalone"]})[0] == 204
        assert admin(url, "PUT", "/admin/v2/namespaces/legacy/ns")[0] == 204
        c = client_factory(b.service_url)
        c.create_producer("persistent://legacy/ns/t").send(b"kept")
        c.close()
    finally:
        b.stop()
    # The previous version wrote no cluster, tenant or namespace records.
    for record in ("clusters", "tenants", "namespace_policies"):
        shutil.rmtree(data / META_DIR / METADATA_PREFIXES[record])
    b = Broker(data_dir=str(data))
    try:
        url = b.admin_url
        assert "legacy" in admin(url, "GET", "/admin/v2/tenants")[1]
        assert admin(url, "GET", "/admin/v2/namespaces/legacy") == (200, ["legacy/ns"])
        assert admin(url, "GET", "/admin/v2/namespaces/public") == (200, ["public/default"])
        c = client_factory(b.service_url)
        consumer = c.subscribe("persistent://legacy/ns/t", "s", initial_position=pulsar.InitialPosition.Earliest)
        assert consumer.receive(timeout_millis=5000).data() == b"kept"
    finally:
        b.stop()
