"""A namespace's ``replicatorDispatchRate`` (geo-replication's rate to each remote cluster) as
Pulsar keeps it: this cluster's entry of the per-cluster map in the namespace's ``Policies``
document (``policies.replicatorDispatchRate.put(clusterName, rate)``), set, read and removed
through REST, ``pulsar_rs.Admin`` and ``pulsar-rs admin``, another cluster's entry (a shared
configuration store) left alone. That it paces the replicator, below the topic's own:
tests/cluster/test_geo_replication.py; Pulsar 4.0.8's answers: tests/differential."""

from __future__ import annotations

import json
import subprocess
import sys

from pulsar_rs import Admin

RATE = {"dispatchThrottlingRateInMsg": 100, "dispatchThrottlingRateInByte": 2048, "ratePeriodInSecond": 1}
ELSEWHERE = {"dispatchThrottlingRateInMsg": 7, "dispatchThrottlingRateInByte": -1, "ratePeriodInSecond": 1}


def test_the_namespace_rate_is_this_clusters_entry_and_leaves_the_others(pulsar_broker) -> None:
    a = Admin(pulsar_broker.admin_url)
    cluster = a.clusters.list()[0]
    ns = "public/replicator-rate"
    a.namespaces.create(ns, {"replicatorDispatchRate": {"elsewhere": ELSEWHERE}})
    assert a.namespaces.get_replicator_dispatch_rate(ns) is None, "elsewhere's entry is not this cluster's"
    a.namespaces.set_replicator_dispatch_rate(ns, 100, 2048, 1)
    got = a.namespaces.get_replicator_dispatch_rate(ns)
    assert got is not None and {k: got[k] for k in RATE} == RATE, got
    document = a.namespaces.policies(ns)["replicatorDispatchRate"]
    assert set(document) == {cluster, "elsewhere"}, document
    assert document[cluster] == got
    assert {k: document["elsewhere"][k] for k in ELSEWHERE} == ELSEWHERE
    a.namespaces.remove_replicator_dispatch_rate(ns)
    assert a.namespaces.get_replicator_dispatch_rate(ns) is None
    assert set(a.namespaces.policies(ns)["replicatorDispatchRate"]) == {"elsewhere"}


def test_the_cli_commands_at_both_levels(pulsar_broker) -> None:
    def cli(*args: str) -> str:
        cmd = [sys.executable, "-m", "pulsar_rs.cli", "admin", "--admin-url", pulsar_broker.admin_url, "--json", *args]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False)
        assert p.returncode == 0, (args, p.stdout, p.stderr)
        return p.stdout

    topic = "persistent://public/default/replicator-rate"
    Admin(pulsar_broker.admin_url).topics.create(topic)
    for group, target in (("namespaces", "public/default"), ("topics", topic)):
        cli(group, "set-replicator-dispatch-rate", target, "-md", "50", "-bd", "4096", "-dt", "2")
        shown = json.loads(cli(group, "get-replicator-dispatch-rate", target))
        assert (shown["dispatchThrottlingRateInMsg"], shown["dispatchThrottlingRateInByte"]) == (50, 4096), shown
        assert shown["ratePeriodInSecond"] == 2
        cli(group, "remove-replicator-dispatch-rate", target)
        assert json.loads(cli(group, "get-replicator-dispatch-rate", target)) is None
