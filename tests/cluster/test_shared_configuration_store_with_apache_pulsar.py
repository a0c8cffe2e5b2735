"""An Apache Pulsar 4.0.8 cluster and a pulsar-rs cluster sharing one configuration (global)
metadata store on ZooKeeper, each with its own ZooKeeper as its local store and its own bookie:
the records each writes where Pulsar keeps them are the ones the other reads. The pulsar-rs
broker registers its cluster there, Pulsar's `initialize-cluster-metadata` registers Pulsar's;
a tenant, a namespace replicated to both and a policy created through Pulsar's admin API are
applied by pulsar-rs, messages replicate both ways, and a policy changed through pulsar-rs is
seen by Pulsar.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pulsar
import pytest
from test_geo_replication import call, ok, receive_all

from cluster_util import SESSION_MS, wait_for

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository's tools/
from tools.pulsar_reference import PulsarReferenceError, available

from pulsar_rs.testing.bookkeeper import BookKeeperCluster, PulsarBroker
from pulsar_rs.testing.process import PulsarRsBroker

if (why := available()) is not None:
    pytest.skip(f"no Apache Pulsar here: {why}", allow_module_level=True)

NS = "geo/mixed"
TOPIC = f"persistent://{NS}/orders"


@dataclass
class Mixed:
    java: PulsarBroker
    rs: PulsarRsBroker


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mixed]:
    stores: list[BookKeeperCluster] = []
    rs: PulsarRsBroker | None = None
    try:
        try:
            configuration = BookKeeperCluster(bookies=0).start()
            stores.append(configuration)
            rs_local = BookKeeperCluster(bookies=1).start()
            stores.append(rs_local)
            java_local = BookKeeperCluster(bookies=1).start()
            stores.append(java_local)
        except PulsarReferenceError as e:
            pytest.fail(str(e))
        # pulsar-rs first: its broker writes its cluster's records; Pulsar's set-up then adds its
        # cluster to the shared tenants and namespaces, as it does on an existing store.
        rs = PulsarRsBroker(
            tmp_path_factory.mktemp("rs"),
            "rs",
            {
                "clusterName": "rs",
                "metadataStoreUrl": rs_local.metadata_store_url,
                "configurationMetadataStoreUrl": configuration.metadata_store_url,
                "metadataStoreSessionTimeoutMillis": SESSION_MS,
                "managedLedgerDefaultEnsembleSize": 1,
                "managedLedgerDefaultWriteQuorum": 1,
                "managedLedgerDefaultAckQuorum": 1,
                "brokerDeduplicationEnabled": False,
            },
        )
        try:
            java = java_local.start_pulsar_broker(
                cluster="apache",
                ensemble=(1, 1, 1),
                configuration_store_url=configuration.metadata_store_url,
            )
        except PulsarReferenceError as e:
            pytest.fail(str(e))
        yield Mixed(java, rs)
    finally:
        if rs is not None:
            rs.stop()
        for s in reversed(stores):
            s.cleanup()


def test_pulsar_and_pulsar_rs_share_the_configuration_store(mixed: Mixed):
    java, rs = mixed.java, mixed.rs
    # Each knows the other's cluster from the shared store, with no registration.
    for admin in (java.admin_url, rs.http):
        wait_for(
            f"{admin} to know both clusters",
            lambda admin=admin: {"apache", "rs"} <= set(call("GET", f"{admin}/admin/v2/clusters")[1] or []),  # type: ignore[arg-type]
        )
    assert ok("GET", f"{java.admin_url}/admin/v2/clusters/rs")["brokerServiceUrl"] == rs.url  # type: ignore[index]
    # Through Pulsar's admin, once.
    ok("PUT", f"{java.admin_url}/admin/v2/tenants/geo", {"adminRoles": [], "allowedClusters": ["apache", "rs"]})
    ok("PUT", f"{java.admin_url}/admin/v2/namespaces/{NS}")
    ok("POST", f"{java.admin_url}/admin/v2/namespaces/{NS}/replication", ["apache", "rs"])
    ok("POST", f"{java.admin_url}/admin/v2/namespaces/{NS}/messageTTL", 3600)
    wait_for(
        "Pulsar's namespace with its replication clusters on pulsar-rs",
        lambda: (
            (s := call("GET", f"{rs.http}/admin/v2/namespaces/{NS}/replication"))[0] == 200
            and sorted(s[1]) == ["apache", "rs"]
        ),  # type: ignore[arg-type]
    )
    wait_for(
        "Pulsar's TTL on pulsar-rs",
        lambda: call("GET", f"{rs.http}/admin/v2/namespaces/{NS}/messageTTL") == (200, 3600),
    )
    cj, cr = pulsar.Client(java.service_url), pulsar.Client(rs.url)
    try:
        at_java = cj.subscribe(TOPIC, "s", initial_position=pulsar.InitialPosition.Earliest)
        at_rs = cr.subscribe(TOPIC, "s", initial_position=pulsar.InitialPosition.Earliest)
        n = 50
        for client, origin in ((cj, "apache"), (cr, "rs")):
            p = client.create_producer(TOPIC, producer_name=f"p-{origin}", batching_enabled=False)
            for i in range(n):
                p.send(f"{origin}-{i}".encode())
            p.close()
        for consumer, where in ((at_java, "apache"), (at_rs, "rs")):
            got = [m.data().decode() for m in receive_all(consumer, 2 * n)]
            for origin in ("apache", "rs"):
                assert [g for g in got if g.startswith(origin)] == [f"{origin}-{i}" for i in range(n)], where
    finally:
        cj.close()
        cr.close()
    # A change through pulsar-rs, seen by Pulsar.
    ok("POST", f"{rs.http}/admin/v2/namespaces/{NS}/messageTTL", 600)
    wait_for(
        "the TTL changed through pulsar-rs, on Pulsar",
        lambda: call("GET", f"{java.admin_url}/admin/v2/namespaces/{NS}/messageTTL") == (200, 600),
    )
