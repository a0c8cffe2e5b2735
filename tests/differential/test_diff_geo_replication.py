"""Differential: geo-replication as an operator configures it, on one cluster of each kind (the other
cluster registered, unreachable): a namespace's replication clusters and their refusals, the
replication cursor a topic opens and drops, clearing its backlog by its name, and the shape of the
`replication` section of its stats."""

from __future__ import annotations

import time
from typing import Any

from .diffkit import Target, compare


def _wait(cond: Any, timeout: float = 30) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.2)  # poll: both brokers start and stop replicators asynchronously
    return False


def test_replication_clusters_refusals_cursor_and_stats(pair: tuple[Target, Target]) -> None:
    def scenario(t: Target) -> list[Any]:
        stem = t.namespace.split("/")[1]
        tenant, far, other = f"{stem}-t", f"{stem}-far", f"{stem}-other"
        cluster = {"serviceUrl": "http://127.0.0.1:9", "brokerServiceUrl": "pulsar://127.0.0.1:9"}
        out: list[Any] = [t.rest("PUT", f"/admin/v2/clusters/{c}", cluster)[0] for c in (far, other)]
        info = {"adminRoles": [], "allowedClusters": ["standalone", far]}
        out.append(t.rest("PUT", f"/admin/v2/tenants/{tenant}", info)[0])
        ns = f"{tenant}/ns"
        out.append(t.rest("PUT", f"/admin/v2/namespaces/{ns}")[0])
        url = f"/admin/v2/namespaces/{ns}/replication"
        out.append(t.rest("GET", url))
        for body in ([], ["standalone", "global"], ["standalone", "nowhere"], ["standalone", other]):
            out.append(t.rest("POST", url, body))
        out.append(t.rest("POST", url, ["standalone", far])[0])
        out.append(sorted(t.rest("GET", url)[1]))
        topic = f"persistent://{ns}/t"
        t.client().create_producer(topic).close()
        internal = f"/admin/v2/persistent/{ns}/t/internalStats"
        cursor = f"pulsar.repl.{far}"
        out.append(_wait(lambda: cursor in t.rest("GET", internal)[1]["cursors"]))
        stats = t.rest("GET", f"/admin/v2/persistent/{ns}/t/stats")[1]
        out.append(sorted(stats["replication"]))
        out.append(sorted(stats["replication"][far]))
        out.append(stats["replication"][far]["connected"])
        out.append(cursor in stats["subscriptions"])
        # The subscription calls reach the replication cursor by its name (Pulsar's replicator).
        t.client().create_producer(topic).send(b"held for the far cluster")
        clear = f"/admin/v2/persistent/{ns}/t/subscription/{cursor}/skip_all"
        out.append(t.rest("POST", clear)[0])
        backlog = f"/admin/v2/persistent/{ns}/t/stats"
        out.append(_wait(lambda: t.rest("GET", backlog)[1]["replication"][far]["replicationBacklog"] == 0))
        out.append(t.rest("POST", url, ["standalone"])[0])
        out.append(_wait(lambda: cursor not in t.rest("GET", internal)[1]["cursors"]))
        t.rest("DELETE", f"/admin/v2/persistent/{ns}/t")
        t.rest("DELETE", f"/admin/v2/namespaces/{ns}")
        t.rest("DELETE", f"/admin/v2/tenants/{tenant}")
        for c in (far, other):  # the session's brokers serve other scenarios
            t.rest("DELETE", f"/admin/v2/clusters/{c}")
        return out

    compare(pair, scenario)


def test_clusters_a_tenant_or_topic_names_must_exist(pair: tuple[Target, Target]) -> None:
    def scenario(t: Target) -> list[Any]:
        stem = t.namespace.split("/")[1]
        out: list[Any] = [
            t.rest("PUT", f"/admin/v2/tenants/{stem}-x", {"adminRoles": [], "allowedClusters": ["nowhere"]})
        ]
        out.append(t.rest("PUT", f"/admin/v2/tenants/{stem}-y", {"adminRoles": [], "allowedClusters": ["global"]})[0])
        topic = f"/admin/v2/persistent/{t.namespace}/t"
        t.client().create_producer(f"persistent://{t.namespace}/t").close()
        out.append(t.rest("POST", f"{topic}/replication", ["standalone", "nowhere"]))
        out.append(t.rest("POST", f"{topic}/replication", []))
        out.append(t.rest("POST", f"{topic}/replication", ["standalone"])[0])
        out.append(t.rest("GET", f"{topic}/replication"))
        for tenant in (f"{stem}-x", f"{stem}-y"):
            t.rest("DELETE", f"/admin/v2/tenants/{tenant}")
        return out

    compare(pair, scenario)


def test_replicator_dispatch_rate_at_both_levels(pair: tuple[Target, Target]) -> None:
    """The namespace's rate (this cluster's entry of the `Policies` document's map) and the
    topic's: unset, set, read, in the document, removed; a body that is not a rate refused."""

    def scenario(t: Target) -> list[Any]:
        rate = {"dispatchThrottlingRateInMsg": 100, "dispatchThrottlingRateInByte": 2048, "ratePeriodInSecond": 1}
        out: list[Any] = []
        t.client().create_producer(t.topic("paced")).close()
        for base in (f"/admin/v2/namespaces/{t.namespace}", f"/admin/v2/persistent/{t.namespace}/paced"):
            url = f"{base}/replicatorDispatchRate"
            out.append(t.rest("GET", url))
            out.append(t.rest("POST", url, rate)[0])
            out.append(t.rest("GET", url))
            out.append(t.rest("POST", url, "fast")[0])
            if base.startswith("/admin/v2/namespaces"):
                out.append(t.rest("GET", base)[1]["replicatorDispatchRate"])
            out.append(t.rest("DELETE", url)[0])
            out.append(t.rest("GET", url))
            if base.startswith("/admin/v2/namespaces"):
                out.append(t.rest("GET", base)[1]["replicatorDispatchRate"])
        return out

    compare(pair, scenario)
