"""Two pulsar-rs clusters that share one configuration (global) metadata store, as Pulsar's
`configurationMetadataStoreUrl` sets them up: each cluster (one broker) has its own ZooKeeper as
its local store (ownership, registrations, ledgers) and its own bookie, and both use a third
ZooKeeper for the cluster records, tenants, namespace policies and partitioned topics. Nothing is
registered on the second cluster: each broker writes its own cluster record there, and a tenant,
a namespace replicated to both and a policy created through one cluster's admin API are seen and
applied by the other; messages replicate both ways; a policy change through either is seen by
the other. The store's layout is Pulsar's: the shared records are in the configuration store only,
the bundles' ownership and the brokers in each cluster's own.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pulsar
import pytest
from test_geo_replication import call, ok, receive_all

from cluster_util import SESSION_MS, wait_for

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository's tools/
from tools.pulsar_reference import PulsarReferenceError

from pulsar_rs.testing.bookkeeper import BookKeeperCluster
from pulsar_rs.testing.process import PulsarRsBroker

NS = "geo/shared"
TOPIC = f"persistent://{NS}/orders"


@dataclass
class Shared:
    """The configuration store, and each cluster's own store (with its bookie) and broker."""

    configuration: BookKeeperCluster
    local: dict[str, BookKeeperCluster]
    brokers: dict[str, PulsarRsBroker]


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shared]:
    stores: list[BookKeeperCluster] = []
    brokers: dict[str, PulsarRsBroker] = {}
    try:
        try:
            configuration = BookKeeperCluster(bookies=0).start()
            stores.append(configuration)
            local = {}
            for name in ("east", "west"):
                local[name] = BookKeeperCluster(bookies=1).start()
                stores.append(local[name])
        except PulsarReferenceError as e:
            pytest.fail(str(e))
        for name in ("east", "west"):
            brokers[name] = PulsarRsBroker(
                tmp_path_factory.mktemp(name),
                name,
                {
                    "clusterName": name,
                    "metadataStoreUrl": local[name].metadata_store_url,
                    "configurationMetadataStoreUrl": configuration.metadata_store_url,
                    "metadataStoreSessionTimeoutMillis": SESSION_MS,
                    "managedLedgerDefaultEnsembleSize": 1,
                    "managedLedgerDefaultWriteQuorum": 1,
                    "managedLedgerDefaultAckQuorum": 1,
                    "brokerDeduplicationEnabled": False,
                },
            )
        yield Shared(configuration, local, brokers)
    finally:
        for b in brokers.values():
            b.stop()
        for s in stores:
            s.stop()
            s.cleanup()


def zk_get(store: BookKeeperCluster, path: str) -> str | None:
    """A znode's data as ZooKeeper's own shell reads it (`None`: no such node)."""
    java = ["java", "-Xmx64m", "-cp", f"{store.home}/lib/*", "org.apache.zookeeper.ZooKeeperMain"]
    out = subprocess.run(
        [*java, "-server", store.zk_servers, "get", path], capture_output=True, timeout=60, check=False
    )
    text = out.stdout.decode(errors="replace") + out.stderr.decode(errors="replace")
    if "NoNode" in text or "Node does not exist" in text:
        return None
    return text


def known_clusters(b: PulsarRsBroker) -> list[str]:
    status, body = call("GET", f"{b.http}/admin/v2/clusters")
    return body if status == 200 and isinstance(body, list) else []


def test_each_cluster_registers_itself_in_the_shared_store_and_knows_the_other(shared):
    east, west = shared.brokers["east"], shared.brokers["west"]
    for b in (east, west):
        wait_for(f"{b.http} to know both clusters", lambda b=b: {"east", "west"} <= set(known_clusters(b)))
    # West's record as east knows it: the URLs west's broker wrote for itself.
    data = ok("GET", f"{east.http}/admin/v2/clusters/west")
    assert data["serviceUrl"] == west.http and data["brokerServiceUrl"] == west.url


def test_what_one_cluster_creates_the_other_applies_messages_go_both_ways_and_the_layout_is_pulsars(shared):
    east, west = shared.brokers["east"], shared.brokers["west"]
    for b in (east, west):
        wait_for(f"{b.http} to know both clusters", lambda b=b: {"east", "west"} <= set(known_clusters(b)))
    # Everything through east's admin, once.
    ok("PUT", f"{east.http}/admin/v2/tenants/geo", {"adminRoles": [], "allowedClusters": ["east", "west"]})
    ok("PUT", f"{east.http}/admin/v2/namespaces/{NS}")
    ok("POST", f"{east.http}/admin/v2/namespaces/{NS}/replication", ["east", "west"])
    ok("POST", f"{east.http}/admin/v2/namespaces/{NS}/messageTTL", 3600)

    # West sees the tenant, the namespace, its replication clusters and its policy.
    def tenant_on_west():
        status, body = call("GET", f"{west.http}/admin/v2/tenants/geo")
        return status == 200 and sorted(body["allowedClusters"]) == ["east", "west"]

    wait_for("the tenant on west", tenant_on_west)

    def replication_on_west():
        status, body = call("GET", f"{west.http}/admin/v2/namespaces/{NS}/replication")
        return status == 200 and sorted(body) == ["east", "west"]

    wait_for("the namespace's replication clusters on west", replication_on_west)
    wait_for(
        "the namespace's TTL on west",
        lambda: call("GET", f"{west.http}/admin/v2/namespaces/{NS}/messageTTL") == (200, 3600),
    )

    # Messages both ways.
    ce, cw = pulsar.Client(east.url), pulsar.Client(west.url)
    try:
        sub_e = ce.subscribe(TOPIC, "s", initial_position=pulsar.InitialPosition.Earliest)
        sub_w = cw.subscribe(TOPIC, "s", initial_position=pulsar.InitialPosition.Earliest)
        n = 50
        for client, origin in ((ce, "east"), (cw, "west")):
            p = client.create_producer(TOPIC, producer_name=f"p-{origin}")
            for i in range(n):
                p.send(f"{origin}-{i}".encode())
            p.close()
        for sub in (sub_e, sub_w):
            got = [m.data().decode() for m in receive_all(sub, 2 * n)]
            for origin in ("east", "west"):
                mine = [g for g in got if g.startswith(origin)]
                assert mine == [f"{origin}-{i}" for i in range(n)], (origin, got)
    finally:
        ce.close()
        cw.close()

    # A change through west is seen by east.
    ok("POST", f"{west.http}/admin/v2/namespaces/{NS}/messageTTL", 600)
    wait_for(
        "the TTL changed through west, on east",
        lambda: call("GET", f"{east.http}/admin/v2/namespaces/{NS}/messageTTL") == (200, 600),
    )

    # The layout is Pulsar's: the shared records only in the configuration store; each
    # cluster's brokers and bundle ownership only in its own.
    cfg, local = shared.configuration, shared.local
    for name in ("east", "west"):
        assert zk_get(cfg, f"/admin/clusters/{name}") is not None
        assert zk_get(local[name], f"/admin/clusters/{name}") is None
        assert zk_get(local[name], "/loadbalance/brokers") is not None
        assert zk_get(cfg, "/loadbalance/brokers") is None
    wait_for("the shared namespace in the configuration store", lambda: zk_get(cfg, f"/admin/policies/{NS}"))
    assert zk_get(cfg, "/admin/policies/geo") is not None
    for name in ("east", "west"):
        assert zk_get(local[name], f"/admin/policies/{NS}") is None
        assert zk_get(local[name], f"/namespace/{NS}") is not None
    assert zk_get(cfg, "/namespace") is None
