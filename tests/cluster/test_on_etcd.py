"""Three pulsar-rs brokers as one Pulsar cluster with its metadata on **etcd**
(``metadataStoreUrl=etcd:http://...``, as Pulsar's ``EtcdMetadataStore`` reads it) and its topics
on real bookies, whose own metadata stays on ZooKeeper (``bookkeeperMetadataServiceUri``; the
BookKeeper client of pulsar-rs reads ledger metadata from ZooKeeper only). Real etcd (Debian's
``etcd-server``), real ZooKeeper and bookies (the pinned Apache Pulsar distribution), the official
Python client.

* every broker registered under ``/loadbalance/brokers`` and one leader, as etcd keys; lookups
  through any broker land on one owner; ownership, policies and the managed ledgers' records
  (``/managed-ledgers/...``) are etcd keys, none of them in ZooKeeper;
* SIGKILL the broker owning some partitions while producing: once its lease expires the others
  take its bundles (fencing its ledgers on the bookies), the clients reconnect, nothing receipted
  is lost and deduplication delivers nothing twice.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from pulsar_rs import PulsarRsError

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository's tools/
from tools.pulsar_reference import PulsarReferenceError, available
from tools.pulsar_reference.etcd import Etcd, etcd_missing

from cluster_util import client, drain, lookup, produce_all, takeover
from pulsar_rs.testing.bookkeeper import BookKeeperCluster
from pulsar_rs.testing.process import PulsarRsBroker, wait_for_cluster

if (why := available()) is not None:
    pytest.skip(f"no BookKeeper here: {why}", allow_module_level=True)
if (why := etcd_missing()) is not None:
    pytest.skip(f"no etcd here: {why}", allow_module_level=True)

#: The lease's TTL (whole seconds, as Pulsar grants it from metadataStoreSessionTimeoutMillis).
SESSION_MS = 6000


@pytest.fixture(scope="module")
def stores() -> Iterator[tuple[BookKeeperCluster, Etcd]]:
    try:
        bk = BookKeeperCluster(bookies=2).start()
    except PulsarReferenceError as e:
        pytest.fail(str(e))
    try:
        etcd = Etcd().start()
    except PulsarReferenceError as e:
        bk.cleanup()
        pytest.fail(str(e))
    yield bk, etcd
    etcd.cleanup()
    bk.cleanup()


@pytest.fixture
def brokers(tmp_path: Path, stores: tuple[BookKeeperCluster, Etcd]) -> Iterator[list[PulsarRsBroker]]:
    bk, etcd = stores
    started: list[PulsarRsBroker] = []
    try:
        for name in ("e0", "e1", "e2"):
            started.append(
                PulsarRsBroker(
                    tmp_path,
                    name,
                    {
                        "metadataStoreUrl": etcd.metadata_store_url,
                        "bookkeeperMetadataServiceUri": bk.bookkeeper_uri,
                        "metadataStoreSessionTimeoutMillis": SESSION_MS,
                        "managedLedgerDefaultEnsembleSize": 2,
                        "managedLedgerDefaultWriteQuorum": 2,
                        "managedLedgerDefaultAckQuorum": 2,
                        "brokerDeduplicationEnabled": True,
                    },
                )
            )
        # A broker an earlier test killed stays registered until its lease expires.
        wait_for_cluster(started)
        yield started
    except PulsarReferenceError as e:
        pytest.fail(str(e))
    finally:
        for b in started:
            b.stop()


def test_a_cluster_on_etcd_keeps_pulsars_records_there_and_serves_from_every_broker(brokers, stores, tmp_path):
    bk, etcd = stores
    keys = etcd.list_keys()
    for b in brokers:
        assert f"/loadbalance/brokers/{b.broker_id}" in keys, keys
        report = json.loads(etcd.value(f"/loadbalance/brokers/{b.broker_id}") or b"{}")
        assert report["pulsarServiceUrl"] == b.url, report
    leader = json.loads(etcd.value("/loadbalance/leader") or b"{}")
    assert leader["brokerId"] in {b.broker_id for b in brokers}, leader
    assert "/admin/policies/public/default" in keys, keys

    # Lookups through every broker land on one owner per topic; the topics spread.
    topics = [f"persistent://public/default/etcd-{i}" for i in range(12)]
    owners = {}
    for t in topics:
        seen = {lookup(b, t) for b in brokers}
        assert len(seen) == 1, (t, seen)
        owners[t] = seen.pop()
    assert len(set(owners.values())) >= 2, owners
    # Each owned bundle is an ephemeral ownership key in etcd.
    owned = etcd.list_keys("/namespace/public/default/")
    assert owned, etcd.list_keys()

    # Messages through the cluster; the managed ledgers' records are etcd keys, not znodes.
    c = client(brokers)
    try:
        sent = produce_all(c, topics[0], 50)
        got = drain(c, topics[0], "s", len(sent))
    finally:
        c.close()
    assert sorted(got) == sorted(sent)
    ml = etcd.list_keys("/managed-ledgers/public/default/persistent/")
    assert "/managed-ledgers/public/default/persistent/etcd-0" in ml, ml
    assert "/managed-ledgers/public/default/persistent/etcd-0/s" in ml, ml
    # The cluster exported from etcd and the bookies (read-only), the CLI's way too. A reader of
    # a ledger still open sees the entries up to the last add confirmed the bookies carry (a
    # pipelined burst carries a stale one): one more send moves it past the burst.
    from pulsar_rs.export import snapshot_tables

    c = client(brokers)
    try:
        c.create_producer(topics[0]).send(b"tail")
    finally:
        c.close()
    tables = snapshot_tables(etcd.metadata_store_url, bookkeeper_metadata_service_uri=bk.bookkeeper_uri)
    entries = [r for r in tables["entries"].to_pylist() if r["topic"] == topics[0]]
    assert len(entries) >= len(sent), len(entries)
    subs = {r["subscription"] for r in tables["subscriptions"].to_pylist() if r["topic"] == topics[0]}
    assert subs == {"s"}, subs
    with pytest.raises(PulsarRsError, match="ZooKeeper"):
        snapshot_tables(etcd.metadata_store_url)
    out = subprocess.run(
        [
            sys.executable, "-m", "pulsar_rs.cli", "export", "--metadata-store-url", etcd.metadata_store_url,
            "--bookkeeper-metadata-service-uri", bk.bookkeeper_uri, "--out", str(tmp_path / "snap"),
        ],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["tables"]["entries"] >= len(sent), out.stdout
    zk = KazooClient(hosts=bk.zk_servers)
    zk.start()
    try:
        assert zk.exists("/ledgers/available"), "BookKeeper's own records stay on ZooKeeper"
        assert not zk.exists("/managed-ledgers"), zk.get_children("/")
        assert not zk.exists("/loadbalance"), zk.get_children("/")
    finally:
        zk.stop()
        zk.close()


def test_owner_killed_on_etcd_nothing_receipted_is_lost(brokers):
    run = takeover(brokers, "persistent://public/default/etcd-takeover", 6)
    print(run.summary())
    run.check(brokers)
