"""``pulsar_rs.Admin`` and ``pulsar-rs admin`` against a running broker: tenants, namespaces,
topics and their stats, permissions with a token, and refusals surfacing with the broker's
status and reason."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from pulsar_rs import Admin, AdminError
from pulsar_rs.cli import main


def test_admin_class_round_trip(pulsar_broker, client):
    admin = Admin(pulsar_broker.admin_url)
    assert admin.clusters.list() == ["standalone"]
    admin.tenants.create("acme", admin_roles=["ops"])
    assert admin.tenants.get("acme") == {"adminRoles": ["ops"], "allowedClusters": ["standalone"]}
    assert "acme" in admin.tenants.list()
    admin.namespaces.create("acme/orders", {"message_ttl_in_seconds": 60})
    assert admin.namespaces.list("acme") == ["acme/orders"]
    assert admin.namespaces.policies("acme/orders")["message_ttl_in_seconds"] == 60
    admin.topics.create("persistent://acme/orders/t")
    admin.topics.create("persistent://acme/orders/p", partitions=3)
    assert admin.topics.list_partitioned("acme/orders") == ["persistent://acme/orders/p"]
    producer = client.create_producer("persistent://acme/orders/t")
    producer.send(b"x")
    assert admin.topics.stats("persistent://acme/orders/t")["msgInCounter"] == 1
    assert "persistent://acme/orders/t" in admin.topics.list("acme/orders")
    with pytest.raises(AdminError) as e:
        admin.namespaces.delete("acme/orders")
    assert e.value.status == 409 and e.value.reason == "Cannot delete non empty namespace"
    with pytest.raises(AdminError) as e:  # its producer is connected (Pulsar's TopicBusy)
        admin.topics.delete("persistent://acme/orders/t")
    assert e.value.status == 412 and e.value.reason == "Topic has 1 connected producers/consumers"
    producer.close()
    admin.topics.delete("persistent://acme/orders/t")
    admin.topics.delete("persistent://acme/orders/p", partitioned=True)
    admin.namespaces.delete("acme/orders")
    admin.tenants.delete("acme")
    with pytest.raises(AdminError) as e:
        admin.tenants.get("acme")
    assert e.value.status == 404


def test_cli_tree(pulsar_broker, capsys):
    url = ["admin", "--admin-url", pulsar_broker.admin_url]
    assert main([*url, "tenants", "create", "shop", "--admin-roles", "a,b"]) == 0
    assert main([*url, "tenants", "list"]) == 0
    assert capsys.readouterr().out.split() == ["public", "pulsar", "shop"]
    assert main([*url, "namespaces", "create", "shop/ns"]) == 0
    assert main([*url, "namespaces", "list", "shop"]) == 0
    assert capsys.readouterr().out.split() == ["shop/ns"]
    assert main([*url, "namespaces", "grant-permission", "shop/ns", "--role", "r", "--actions", "produce"]) == 0
    assert main([*url, "--json", "namespaces", "policies", "shop/ns"]) == 0
    assert json.loads(capsys.readouterr().out)["auth_policies"]["namespace_auth"] == {"r": ["produce"]}
    assert main([*url, "namespaces", "policies", "shop/ns"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert ["auth_policies.namespace_auth.r", "produce"] in rows
    assert main([*url, "topics", "create", "persistent://shop/ns/t"]) == 0
    assert main([*url, "--json", "topics", "list", "shop/ns"]) == 0
    assert json.loads(capsys.readouterr().out) == ["persistent://shop/ns/t"]
    assert main([*url, "--json", "topics", "stats", "persistent://shop/ns/t"]) == 0
    assert json.loads(capsys.readouterr().out)["msgInCounter"] == 0
    # Refusals: the broker's status and reason, exit status 1.
    assert main([*url, "tenants", "delete", "shop"]) == 1
    assert "409 The tenant still has active namespaces" in capsys.readouterr().err
    assert main([*url, "namespaces", "delete", "shop/missing"]) == 1
    assert "404" in capsys.readouterr().err


def test_cli_script_with_token(pulsar_broker_factory):
    jwt = pytest.importorskip("jwt")
    from token_util import SECRET, SECRET_URL, TOKEN_PROVIDER

    b = pulsar_broker_factory(
        authenticationEnabled=True,
        authenticationProviders=TOKEN_PROVIDER,
        tokenSecretKey=SECRET_URL,
        authorizationEnabled=True,
        superUserRoles="admin",
    )
    admin_token = jwt.encode({"sub": "admin"}, SECRET, algorithm="HS256")
    cmd = [sys.executable, "-m", "pulsar_rs.cli", "admin", "--admin-url", b.admin_url]
    refused = subprocess.run([*cmd, "tenants", "list"], capture_output=True, text=True, timeout=30)
    assert refused.returncode == 1 and "401" in refused.stderr
    ok = subprocess.run(
        [*cmd, "--auth-params", f"token:{admin_token}", "tenants", "list"], capture_output=True, text=True, timeout=30
    )
    assert ok.returncode == 0 and ok.stdout.split() == ["public", "pulsar"]
    assert Admin(b.admin_url, token=admin_token).namespaces.list("public") == ["public/default"]
