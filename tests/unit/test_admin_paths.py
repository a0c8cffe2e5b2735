"""The admin client's URL paths, without a broker: every cluster, tenant, namespace, topic,
subscription and role name goes into the path percent-quoted as one segment, so that a name
holding ``/``, ``%``, ``?``, ``#`` or a space is sent as the name it is."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from pulsar_rs.admin import Admin
from pulsar_rs.admin.paths import ns_path, segment, topic_path

ODD = "a b/c%d?e#f"
QUOTED = "a%20b%2Fc%25d%3Fe%23f"
# A topic's local name cannot hold "/" (it would be another level of the name).
ODD_LOCAL = "x y%z?q#r"
LOCAL_QUOTED = "x%20y%25z%3Fq%23r"
TOPIC = "persistent://public/default/t"


class _Recording(Admin):
    """Records each call's method and path instead of sending it."""

    def __init__(self) -> None:
        super().__init__("http://127.0.0.1:9")
        self.calls: list[tuple[str, str]] = []

    def request_raw(
        self, method: str, path: str, body: Any = None, raw: bytes | None = None
    ) -> tuple[dict[str, str], bytes]:
        self.calls.append((method, path))
        return {}, b""


def test_segment_quotes_everything_but_unreserved():
    assert segment(ODD) == QUOTED
    assert segment("plain-name_1.x~") == "plain-name_1.x~"


def test_topic_and_namespace_paths_quote_each_part():
    assert topic_path(f"persistent://t/ns/{ODD_LOCAL}") == f"persistent/t/ns/{LOCAL_QUOTED}"
    with pytest.raises(ValueError):  # Pulsar's tenant and namespace names: [A-Za-z0-9-_.=:]
        topic_path(f"persistent://t n/ns%/{ODD_LOCAL}")
    assert topic_path("x y") == "persistent/public/default/x%20y"
    assert ns_path("my tenant/n%s") == "my%20tenant/n%25s"
    with pytest.raises(ValueError):
        topic_path("persistent://t/ns/x/y")
    with pytest.raises(ValueError):
        ns_path("tenant/ns/extra")


CALLS: list[tuple[Callable[[Admin], object], str, str]] = [
    (lambda a: a.clusters.get(ODD), "GET", f"/admin/v2/clusters/{QUOTED}"),
    (lambda a: a.clusters.create(ODD, {"serviceUrl": "http://x"}), "PUT", f"/admin/v2/clusters/{QUOTED}"),
    (lambda a: a.clusters.update(ODD, {"serviceUrl": "http://x"}), "POST", f"/admin/v2/clusters/{QUOTED}"),
    (lambda a: a.clusters.delete(ODD), "DELETE", f"/admin/v2/clusters/{QUOTED}"),
    (lambda a: a.brokers.list(ODD), "GET", f"/admin/v2/brokers/{QUOTED}"),
    (lambda a: a.tenants.get(ODD), "GET", f"/admin/v2/tenants/{QUOTED}"),
    (lambda a: a.tenants.create(ODD, allowed_clusters=[]), "PUT", f"/admin/v2/tenants/{QUOTED}"),
    (lambda a: a.tenants.update(ODD, allowed_clusters=[]), "POST", f"/admin/v2/tenants/{QUOTED}"),
    (lambda a: a.tenants.delete(ODD), "DELETE", f"/admin/v2/tenants/{QUOTED}"),
    (lambda a: a.namespaces.list(ODD), "GET", f"/admin/v2/namespaces/{QUOTED}"),
    (lambda a: a.namespaces.create("t t/n%"), "PUT", "/admin/v2/namespaces/t%20t/n%25"),
    (
        lambda a: a.namespaces.grant_permission("t/n", ODD, ["produce"]),
        "POST",
        f"/admin/v2/namespaces/t/n/permissions/{QUOTED}",
    ),
    (lambda a: a.namespaces.revoke_permission("t/n", ODD), "DELETE", f"/admin/v2/namespaces/t/n/permissions/{QUOTED}"),
    (
        lambda a: a.namespaces.revoke_subscription_permission("t/n", ODD, ODD),
        "DELETE",
        f"/admin/v2/namespaces/t/n/permissions/{QUOTED}/{QUOTED}",
    ),
    (lambda a: a.namespaces.unload("t/n", bundle="0x0_0x1"), "PUT", "/admin/v2/namespaces/t/n/0x0_0x1/unload"),
    (lambda a: a.topics.list("t t/n"), "GET", "/admin/v2/persistent/t%20t/n"),
    (
        lambda a: a.topics.stats(f"persistent://t/n/{ODD_LOCAL}"),
        "GET",
        f"/admin/v2/persistent/t/n/{LOCAL_QUOTED}/stats",
    ),
    (
        lambda a: a.topics.skip(TOPIC, ODD, 2),
        "POST",
        f"/admin/v2/persistent/public/default/t/subscription/{QUOTED}/skip/2",
    ),
    (
        lambda a: a.topics.unsubscribe(TOPIC, ODD),
        "DELETE",
        f"/admin/v2/persistent/public/default/t/subscription/{QUOTED}",
    ),
    (
        lambda a: a.topics.grant_permission(TOPIC, ODD, ["consume"]),
        "POST",
        f"/admin/v2/persistent/public/default/t/permissions/{QUOTED}",
    ),
    (
        lambda a: a.topics.revoke_permission(TOPIC, ODD),
        "DELETE",
        f"/admin/v2/persistent/public/default/t/permissions/{QUOTED}",
    ),
    (lambda a: a.topics.lookup(f"t/n/{ODD_LOCAL}"), "GET", f"/lookup/v2/topic/persistent/t/n/{LOCAL_QUOTED}"),
    (lambda a: a.schemas.get(f"t/n/{ODD_LOCAL}"), "GET", f"/admin/v2/schemas/t/n/{LOCAL_QUOTED}/schema"),
    (
        lambda a: a.transactions.pending_ack_stats(f"t/n/{ODD_LOCAL}", ODD),
        "GET",
        f"/admin/v3/transactions/pendingAckStats/t/n/{LOCAL_QUOTED}/{QUOTED}",
    ),
]


@pytest.mark.parametrize(("call", "method", "path"), CALLS, ids=[p for _, _, p in CALLS])
def test_each_name_is_one_quoted_segment(call, method, path):
    admin = _Recording()
    call(admin)
    assert admin.calls == [(method, path)]
