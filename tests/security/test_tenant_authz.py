"""Authorization as Pulsar does it with tenants (official client + admin REST): a tenant's
``adminRoles`` administer their tenant and use its topics, namespace ``auth_policies`` given
in the namespace body grant like the permission endpoints do, those grants are part of the
namespace's Policies document, and ``anonymousUserRole`` can be a tenant admin."""

from __future__ import annotations

import pulsar
import pytest

from token_util import ADMIN, client_for, hs_token, http, round_trip, token_authz_settings

pytestmark = pytest.mark.timeout(120)

CAROL = hs_token("carol")
TENANT_ADMIN = hs_token("acme-admin")


@pytest.fixture
def clients():
    made: list[pulsar.Client] = []

    def make(url: str, token: str | None = None) -> pulsar.Client:
        made.append(client_for(url, token))
        return made[-1]

    yield make
    for c in made:
        c.close()


@pytest.fixture
def broker(pulsar_broker_factory):
    return pulsar_broker_factory(**token_authz_settings("anon"))


def make_tenant(broker, name: str, admins: list[str]) -> None:
    body = {"adminRoles": admins, "allowedClusters": ["standalone"]}
    assert http("PUT", f"{broker.admin_url}/admin/v2/tenants/{name}", ADMIN, body)[0] == 204


def test_tenant_admin_administers_only_their_tenant(broker, clients):
    make_tenant(broker, "acme", ["acme-admin"])
    ns_url = f"{broker.admin_url}/admin/v2/namespaces/acme/orders"
    # Tenants are a superuser's business.
    assert http("PUT", f"{broker.admin_url}/admin/v2/tenants/evil", TENANT_ADMIN, {})[0] == 401
    assert http("PUT", ns_url, CAROL)[0] == 401
    assert http("PUT", ns_url, TENANT_ADMIN)[0] == 204
    assert http("GET", f"{broker.admin_url}/admin/v2/namespaces/acme", TENANT_ADMIN) == (200, ["acme/orders"])
    assert http("PUT", f"{broker.admin_url}/admin/v2/namespaces/public/x", TENANT_ADMIN)[0] == 401
    # A tenant admin produces and consumes on the tenant's topics without a grant ...
    admin_client = clients(broker.service_url, TENANT_ADMIN)
    round_trip(admin_client, "persistent://acme/orders/t")
    # ... and nowhere else.
    with pytest.raises(pulsar.AuthorizationError):
        admin_client.create_producer("persistent://public/default/t")
    # It grants on its namespace; the grant lands in the Policies document.
    assert http("POST", f"{ns_url}/permissions/carol", TENANT_ADMIN, ["produce"])[0] == 204
    status, doc = http("GET", ns_url, TENANT_ADMIN)
    assert status == 200 and doc["auth_policies"]["namespace_auth"] == {"carol": ["produce"]}
    clients(broker.service_url, CAROL).create_producer("persistent://acme/orders/t").send(b"x")


def test_auth_policies_in_the_namespace_body(broker, clients):
    make_tenant(broker, "shop", [])
    body = {
        "auth_policies": {
            "namespace_auth": {"carol": ["consume"]},
            "destination_auth": {"persistent://shop/ns/in": {"carol": ["produce"]}},
        }
    }
    assert http("PUT", f"{broker.admin_url}/admin/v2/namespaces/shop/ns", ADMIN, body)[0] == 204
    carol = clients(broker.service_url, CAROL)
    carol.create_producer("persistent://shop/ns/in").send(b"x")
    with pytest.raises(pulsar.AuthorizationError):
        carol.create_producer("persistent://shop/ns/other")
    carol.subscribe("persistent://shop/ns/other", "s").close()
    status, perms = http("GET", f"{broker.admin_url}/admin/v2/namespaces/shop/ns/permissions", ADMIN)
    assert status == 200 and perms == {"carol": ["consume"]}
    bad = {"auth_policies": {"namespace_auth": {"carol": ["write"]}}}
    assert http("PUT", f"{broker.admin_url}/admin/v2/namespaces/shop/bad", ADMIN, bad)[0] == 400


def test_anonymous_role_as_tenant_admin(broker, clients):
    make_tenant(broker, "open", ["anon"])
    # No credentials: the anonymous role, which administers "open" only.
    assert http("PUT", f"{broker.admin_url}/admin/v2/namespaces/open/ns")[0] == 204
    assert http("PUT", f"{broker.admin_url}/admin/v2/namespaces/public/ns")[0] == 401
    assert http("GET", f"{broker.admin_url}/admin/v2/tenants")[0] == 401
    round_trip(clients(broker.service_url), "persistent://open/ns/t")
    with pytest.raises(pulsar.AuthorizationError):
        clients(broker.service_url).create_producer("persistent://public/default/t")


def test_missing_tenant_is_topic_not_found_for_every_role(broker, clients):
    """Pulsar authorizes a lookup with ``validateTenantAdminAccess`` first; its 404 for a tenant that
    does not exist is answered TopicNotFound ("Tenant or namespace or topic does not exist"), to a
    role without any grant as to a superuser, while an existing tenant's namespace without a grant
    for the role stays an AuthorizationError."""
    for token in (None, CAROL, ADMIN):
        with pytest.raises(pulsar.TopicNotFound):
            clients(broker.service_url, token).create_producer("persistent://no-such-tenant/ns/t")
    make_tenant(broker, "closed", ["acme-admin"])
    with pytest.raises(pulsar.AuthorizationError):
        clients(broker.service_url).create_producer("persistent://closed/ns/t")


def test_subscription_roles_and_prefix_mode(broker, clients):
    """Pulsar's ``canConsume`` with a subscription: roles listed for a subscription
    (``auth_policies.subscription_auth_roles``) are the only ones that may use it, and under
    ``subscriptionAuthMode`` ``Prefix`` a subscription name must start with the role; tenant
    admins and superusers are exempt."""
    make_tenant(broker, "bank", ["acme-admin"])
    ns = f"{broker.admin_url}/admin/v2/namespaces/bank/ledger"
    assert http("PUT", ns, ADMIN)[0] == 204
    for role in ("carol", "dave"):
        assert http("POST", f"{ns}/permissions/{role}", ADMIN, ["consume"])[0] == 204
    assert http("POST", f"{ns}/permissions/subscription/audit", ADMIN, ["dave"])[0] == 204
    assert http("GET", f"{ns}/permissions/subscription", ADMIN) == (200, {"audit": ["dave"]})
    assert http("GET", ns, ADMIN)[1]["auth_policies"]["subscription_auth_roles"] == {"audit": ["dave"]}
    topic = "persistent://bank/ledger/t"
    carol, dave = clients(broker.service_url, CAROL), clients(broker.service_url, hs_token("dave"))
    with pytest.raises(pulsar.AuthorizationError):
        carol.subscribe(topic, "audit")
    dave.subscribe(topic, "audit").close()
    carol.subscribe(topic, "reports").close()  # no roles listed for it: the consume grant is enough
    clients(broker.service_url, TENANT_ADMIN).subscribe(topic, "audit").close()
    # Revoking dave's entry empties the list: the subscription is open to consumers again.
    assert http("DELETE", f"{ns}/permissions/audit/dave", ADMIN)[0] == 204
    carol.subscribe(topic, "audit").close()

    assert http("GET", f"{ns}/subscriptionAuthMode", ADMIN) == (200, b'"None"')
    assert http("POST", f"{ns}/subscriptionAuthMode", ADMIN, "Prefix")[0] == 204
    assert http("GET", ns, ADMIN)[1]["subscription_auth_mode"] == "Prefix"
    with pytest.raises(pulsar.AuthorizationError):
        carol.subscribe(topic, "reports")
    carol.subscribe(topic, "carol-reports").close()
    clients(broker.service_url, ADMIN).subscribe(topic, "anything").close()
    assert http("POST", f"{ns}/subscriptionAuthMode", ADMIN, "Sideways")[0] == 400
