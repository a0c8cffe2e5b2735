"""Names that need quoting in a URL reach the broker as the names they are: a cluster, tenant,
namespace, topic or subscription name holding ``/``, ``%`` or a space is refused with the
broker's own answer for that name (404 or 412 with Pulsar's reason), never sent as another path.
tests/unit/test_admin_paths.py checks the paths themselves."""

from __future__ import annotations

import pytest

from pulsar_rs import Admin, AdminError


def _refused(call) -> AdminError:
    with pytest.raises(AdminError) as e:
        call()
    return e.value


def test_odd_names_round_trip_to_the_broker(pulsar_broker):
    admin = Admin(pulsar_broker.admin_url)
    e = _refused(lambda: admin.clusters.get("no such/cluster"))
    assert (e.status, e.reason) == (404, "Cluster does not exist")
    e = _refused(lambda: admin.tenants.get("a b%"))
    assert (e.status, e.reason) == (404, "Tenant does not exist")
    e = _refused(lambda: admin.namespaces.list("a/b"))
    assert (e.status, e.reason) == (404, "Tenant does not exist")
    e = _refused(lambda: admin.tenants.create("bad name%", allowed_clusters=[]))
    assert (e.status, e.reason) == (412, "Tenant name is not valid")
    e = _refused(lambda: admin.namespaces.policies("public/x y"))
    assert (e.status, e.reason) == (404, "Namespace does not exist")
    # A name that looks quoted already is sent as itself (x%2Fy, not x/y).
    e = _refused(lambda: admin.topics.stats("persistent://public/default/x%2Fy"))
    assert (e.status, e.reason) == (404, "Topic persistent://public/default/x%2Fy not found")
    admin.topics.create("persistent://public/default/quoted")
    e = _refused(lambda: admin.topics.unsubscribe("persistent://public/default/quoted", "s/1%"))
    assert (e.status, e.reason) == (404, "Subscription s/1% not found for topic persistent://public/default/quoted")
