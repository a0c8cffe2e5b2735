"""The objects standalone creates by itself (cluster ``standalone``, tenant ``public``, namespace
``public/default``) yield to a user's own creation of them, as against Pulsar, where
``PulsarStandalone`` writes them only after the web service answers and only when missing: the
set-up every official client's CI runs right after start (``clusters create standalone``,
``tenants create public -r anonymous``, ``namespaces create public/default`` + grants, under
``set -e``) succeeds, and its tenant admins and grants are the ones in force. Once a default was
changed or created by a user it is an ordinary record: a second create answers 409."""

from __future__ import annotations

import pytest

from token_util import ADMIN, client_for, http, round_trip, token_authz_settings

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def broker(pulsar_broker_factory):
    return pulsar_broker_factory(**token_authz_settings("anonymous"))


def test_user_setup_replaces_the_standalone_defaults(broker):
    v2 = f"{broker.admin_url}/admin/v2"
    # Before the set-up: public is administered by the superusers only.
    superusers_only = {"adminRoles": ["admin"], "allowedClusters": ["standalone"]}
    assert http("GET", f"{v2}/tenants/public", ADMIN) == (200, superusers_only)
    assert http("PUT", f"{v2}/persistent/public/default/early/partitions", None, 2)[0] == 401
    cluster = {"serviceUrl": "http://localhost:1/", "brokerServiceUrl": "pulsar://localhost:2/"}
    assert http("PUT", f"{v2}/clusters/standalone", ADMIN, cluster)[0] in (200, 204)
    assert http("GET", f"{v2}/clusters/standalone", ADMIN)[1]["serviceUrl"] == "http://localhost:1/"
    tenant = {"adminRoles": ["anonymous"], "allowedClusters": ["standalone"]}
    assert http("PUT", f"{v2}/tenants/public", ADMIN, tenant)[0] == 204
    grants = {"auth_policies": {"namespace_auth": {"anonymous": ["produce", "consume"]}}}
    assert http("PUT", f"{v2}/namespaces/public/default", ADMIN, grants)[0] == 204
    assert http("GET", f"{v2}/namespaces/public/default", ADMIN)[1]["auth_policies"]["namespace_auth"] == {
        "anonymous": ["consume", "produce"]
    }
    # The user's records are in force: anonymous administers public, as the set-up asked.
    assert http("PUT", f"{v2}/persistent/public/default/early/partitions", None, 2)[0] == 204
    c = client_for(broker.service_url)
    try:
        round_trip(c, "persistent://public/default/early")
    finally:
        c.close()
    # ... and they are ordinary records now: creating them again conflicts, as in Pulsar.
    assert http("PUT", f"{v2}/clusters/standalone", ADMIN, cluster)[0] == 409
    assert http("PUT", f"{v2}/tenants/public", ADMIN, tenant)[0] == 409
    assert http("PUT", f"{v2}/namespaces/public/default", ADMIN, grants)[0] == 409


def test_a_changed_default_is_not_replaced(broker):
    v2 = f"{broker.admin_url}/admin/v2"
    # An update of the tenant, a grant on the namespace: they are the user's now.
    body = {"adminRoles": ["ops"], "allowedClusters": ["standalone"]}
    assert http("POST", f"{v2}/tenants/public", ADMIN, body)[0] == 204
    again = {"adminRoles": ["x"], "allowedClusters": ["standalone"]}
    assert http("PUT", f"{v2}/tenants/public", ADMIN, again)[0] == 409
    assert http("GET", f"{v2}/tenants/public", ADMIN)[1]["adminRoles"] == ["ops"]
    assert http("POST", f"{v2}/namespaces/public/default/permissions/bob", ADMIN, ["consume"])[0] == 204
    assert http("PUT", f"{v2}/namespaces/public/default", ADMIN, {})[0] == 409
    assert http("GET", f"{v2}/namespaces/public/default/permissions", ADMIN) == (200, {"bob": ["consume"]})


def test_defaults_survive_a_restart_as_defaults(pulsar_broker_factory, tmp_path):
    conf = dict(data_dir=tmp_path / "data", **token_authz_settings("anonymous"))
    b = pulsar_broker_factory(**conf)
    b.stop()
    b = pulsar_broker_factory(**conf)
    v2 = f"{b.admin_url}/admin/v2"
    tenant = {"adminRoles": ["anonymous"], "allowedClusters": ["standalone"]}
    assert http("PUT", f"{v2}/tenants/public", ADMIN, tenant)[0] == 204
    assert http("PUT", f"{v2}/tenants/public", ADMIN, tenant)[0] == 409
