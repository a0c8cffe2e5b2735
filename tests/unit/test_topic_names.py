"""Topic names on one table, as Apache Pulsar's ``TopicName`` reads them: a short name ``x`` is
``persistent://public/default/x``, ``tenant/ns/x`` is persistent, and a full name needs
``persistent://`` or ``non-persistent://`` with exactly tenant/namespace/local. The broker's parser
(``_native.parse_topic_name``, Rust's ``TopicName::parse``) and the admin client's
``_topic_path`` must give the same answer for each name."""

from __future__ import annotations

import pytest

from pulsar_rs import InvalidNameError
from pulsar_rs._native import parse_topic_name
from pulsar_rs.admin.paths import topic_path as _topic_path

# name -> (domain, tenant, namespace, local), or None when Pulsar refuses the name.
NAMES: dict[str, tuple[str, str, str, str] | None] = {
    # Short names.
    "x": ("persistent", "public", "default", "x"),
    "x-partition-3": ("persistent", "public", "default", "x-partition-3"),
    "acme/orders/x": ("persistent", "acme", "orders", "x"),
    "acme/orders/x-partition-0": ("persistent", "acme", "orders", "x-partition-0"),
    # Full names.
    "persistent://acme/orders/x": ("persistent", "acme", "orders", "x"),
    "persistent://acme/orders/x-partition-12": ("persistent", "acme", "orders", "x-partition-12"),
    "non-persistent://acme/orders/x": ("non-persistent", "acme", "orders", "x"),
    "non-persistent://acme/orders/x-partition-1": ("non-persistent", "acme", "orders", "x-partition-1"),
    "persistent://public/default/a b": ("persistent", "public", "default", "a b"),
    # A full name is never short: no public/default filled in after a domain.
    "persistent://x": None,
    "non-persistent://x": None,
    "persistent://acme/orders": None,
    "non-persistent://acme/x": None,
    # Short names have one part or three.
    "acme/x": None,
    "a/b/c/d": None,
    # Exactly tenant/namespace/local (no v1 cluster segment).
    "persistent://acme/cluster/orders/x": None,
    # Unknown domain, empty parts.
    "foo://acme/orders/x": None,
    "": None,
    "persistent://acme//x": None,
    "persistent://acme/orders/": None,
    "/x": None,
}


@pytest.mark.parametrize("name", list(NAMES))
def test_broker_and_admin_client_read_a_name_alike(name: str) -> None:
    expected = NAMES[name]
    if expected is None:
        with pytest.raises(InvalidNameError):
            parse_topic_name(name)
        with pytest.raises(ValueError):
            _topic_path(name)
        return
    assert parse_topic_name(name) == expected
    domain, tenant, ns, local = expected
    assert _topic_path(name) == f"{domain}/{tenant}/{ns}/{local.replace(' ', '%20')}"
