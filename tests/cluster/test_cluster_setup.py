"""A new cluster set up by pulsar-rs as Apache Pulsar sets one up (issue 34): ``pulsar-rs
initialize-cluster-metadata`` beside Pulsar 4.0.8's own ``pulsar initialize-cluster-metadata``, with
the same flags, each on a ZooKeeper chroot of its own, read back with an independent ZooKeeper client
(kazoo); an Apache Pulsar broker serving a cluster pulsar-rs set up; and ``pulsar-rs broker`` started
on Pulsar's own shipped ``conf/broker.conf``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pulsar
import pytest
from kazoo.client import KazooClient

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tools.pulsar_reference import PulsarReferenceError, available
from tools.pulsar_reference.etcd import Etcd, etcd_missing

from pulsar_rs.testing.bookkeeper import BookKeeperCluster
from pulsar_rs.testing.process import PulsarRsBroker

pytestmark = pytest.mark.slow

#: What Pulsar's set-up writes that pulsar-rs's does not, and why: the DistributedLog namespace of
#: Pulsar Functions and BookKeeper's stream storage (table service) metadata; pulsar-rs runs neither.
NOT_WRITTEN = {
    "/pulsar",
    "/pulsar/functions",
    "/stream",
    "/stream/assignment",
    "/stream/metadata",
    "/stream/servers",
    "/stream/servers/available",
    "/stream/storage",
}


@pytest.fixture(scope="module")
def bookies() -> Iterator[BookKeeperCluster]:
    reason = available()
    if reason:
        pytest.skip(f"Apache Pulsar's distribution unavailable: {reason}")
    try:
        cluster = BookKeeperCluster(bookies=2).start()
    except PulsarReferenceError as e:
        pytest.fail(str(e))
    yield cluster
    cluster.cleanup()


@pytest.fixture
def zk(bookies: BookKeeperCluster) -> Iterator[KazooClient]:
    client = KazooClient(hosts=bookies.zk_servers)
    client.start(timeout=30)
    yield client
    client.stop()
    client.close()  # its wake-up socket pair too: left to the collector, it warns in a later test


def tree(zk: KazooClient, root: str) -> dict[str, bytes]:
    """Every node below ``root`` (paths relative to it) with its data."""
    out: dict[str, bytes] = {}

    def walk(path: str) -> None:
        data, _ = zk.get(path)
        out[path.removeprefix(root) or "/"] = data
        for child in zk.get_children(path):
            walk(f"{path.rstrip('/')}/{child}")

    walk(root)
    return out


def pulsars_setup(bk: BookKeeperCluster, *flags: str) -> None:
    p = subprocess.run(
        [str(bk.home / "bin" / "pulsar"), "initialize-cluster-metadata", *flags],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "PULSAR_MEM": "-Xmx256m"},
        check=False,
    )
    assert p.returncode == 0 and "setup correctly" in p.stdout, p.stdout[-3000:] + p.stderr[-3000:]


def ours(*flags: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    p = subprocess.run(
        [sys.executable, "-m", "pulsar_rs.cli", "initialize-cluster-metadata", *flags],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (p.returncode == 0) == ok, f"rc={p.returncode}\n{p.stdout}{p.stderr}"
    return p


def flags(bk: BookKeeperCluster, chroot: str, cluster: str, *more: str) -> list[str]:
    store = f"zk:{bk.zk_servers}" + (f"/{chroot}" if chroot else "")
    return [
        "-c", cluster, "-md", store, "-cms", store, "-uw", "http://127.0.0.1:8080",
        "-ub", "pulsar://127.0.0.1:6650", *more,
    ]  # fmt: skip


def assert_same_records(zk: KazooClient, theirs: str, mine: str) -> None:
    a, b = tree(zk, f"/{theirs}"), tree(zk, f"/{mine}")
    assert set(a) - set(b) == NOT_WRITTEN, "the records Pulsar's set-up writes and pulsar-rs's does not"
    assert set(b) <= set(a), f"written by pulsar-rs only: {sorted(set(b) - set(a))}"
    for path in sorted(b):
        if path == "/ledgers/INSTANCEID":  # a random UUID in both
            assert uuid.UUID(a[path].decode()) and uuid.UUID(b[path].decode())
            continue
        if a[path][:1] in (b"{", b"["):
            assert json.loads(b[path]) == json.loads(a[path]), f"{path}:\n{b[path]!r}\n{a[path]!r}"
        else:
            assert b[path] == a[path], f"{path}: {b[path]!r} != {a[path]!r}"


def test_the_records_are_pulsars_and_a_second_cluster_joins_them_as_pulsars_do(bookies, zk):
    pulsars_setup(bookies, *flags(bookies, "theirs", "east"))
    ours(*flags(bookies, "mine", "east"))
    assert_same_records(zk, "theirs", "mine")
    before = tree(zk, "/mine")
    out = ours(*flags(bookies, "mine", "east")).stdout
    assert tree(zk, "/mine") == before, "run again, nothing changes"
    assert "formatted" not in out, "BookKeeper's metadata is formatted once"

    # A second cluster on the same stores, with more coordinators and bundles: the tenants and
    # namespaces list both clusters, the coordinators' topic grows, /ledgers is left alone.
    more = ["-bn", "8", "--initial-num-transaction-coordinators", "20"]
    pulsars_setup(
        bookies, *flags(bookies, "theirs", "west", *more, "--existing-bk-metadata-service-uri", bookies.bookkeeper_uri)
    )
    ours(*flags(bookies, "mine", "west", *more, "--existing-bk-metadata-service-uri", bookies.bookkeeper_uri))
    assert_same_records(zk, "theirs", "mine")
    public = json.loads(zk.get("/mine/admin/policies/public")[0])
    assert public["allowedClusters"] == ["east", "west"]
    assign = "/mine/admin/partitioned-topics/pulsar/system/persistent/transaction_coordinator_assign"
    assert json.loads(zk.get(assign)[0]) == {"partitions": 20, "deleted": False}


def test_on_etcd_the_records_are_pulsars_too(bookies):
    """The same set-up with both stores on etcd (Pulsar's ``EtcdMetadataStore``; BookKeeper's
    metadata stays on the ZooKeeper named by ``--existing-bk-metadata-service-uri``): Pulsar's on
    one etcd, ours on another, every key and document alike."""
    if (why := etcd_missing()) is not None:
        pytest.skip(f"no etcd here: {why}")
    with Etcd() as theirs, Etcd() as mine:

        def on(etcd: Etcd, cluster: str, *more: str) -> list[str]:
            store = etcd.metadata_store_url
            return [
                "-c", cluster, "-md", store, "-cms", store, "-uw", "http://127.0.0.1:8080",
                "-ub", "pulsar://127.0.0.1:6650", "--existing-bk-metadata-service-uri", bookies.bookkeeper_uri, *more,
            ]  # fmt: skip

        pulsars_setup(bookies, *on(theirs, "east"))
        ours(*on(mine, "east"))
        a, b = theirs.records(), mine.records()
        for key in ("/admin/clusters/east", "/admin/policies/public/default", "/admin/policies/pulsar"):
            assert key in a, sorted(a)
        print(f"Pulsar's set-up on etcd: {len(a)} keys: {sorted(a)}")
        assert set(b) == set(a), f"only Pulsar's: {sorted(set(a) - set(b))}, only ours: {sorted(set(b) - set(a))}"
        for key in sorted(b):
            if a[key][:1] in (b"{", b"["):
                assert json.loads(b[key]) == json.loads(a[key]), f"{key}:\n{b[key]}\n{a[key]}"
            else:
                assert b[key] == a[key], f"{key}: {b[key]!r} != {a[key]!r}"
        ours(*on(mine, "east"))
        assert mine.records() == b, "run again, nothing changes"
        # Without an existing BookKeeper: refused (pulsar-rs formats it on ZooKeeper only).
        store = mine.metadata_store_url
        refused = ours("-c", "x", "-md", store, "-cms", store, "-uw", "http://127.0.0.1:8080", ok=False)
        assert "--existing-bk-metadata-service-uri" in refused.stderr, refused.stderr


def test_bad_flags_and_an_unreachable_store_are_refused_as_pulsar_refuses_them(bookies):
    store = f"zk:{bookies.zk_servers}/refused"
    base = ["-c", "c", "-uw", "http://127.0.0.1:8080"]
    assert "(--metadata-store)" in ours(*base, "-cms", store, ok=False).stderr
    assert "(--configuration-metadata-store)" in ours(*base, "-md", store, ok=False).stderr
    both = ours(*base, "-md", store, "-cms", store, "-cs", store, ok=False).stderr
    assert "supersedes the deprecated" in both
    tc = ours(*base, "-md", store, "-cms", store, "--initial-num-transaction-coordinators", "0", ok=False)
    assert "Number of transaction coordinators must greater than 0" in tc.stderr
    assert "only ZooKeeper" in ours(*base, "-md", "rocksdb:/tmp/x", "-cms", store, ok=False).stderr
    dead = "zk:127.0.0.1:1"
    p = ours(*base, "-md", dead, "-cms", dead, "--zookeeper-session-timeout-ms", "2000", ok=False)
    assert "metadata store" in p.stderr and "127.0.0.1:1" in p.stderr, p.stderr


def test_apache_pulsar_serves_a_cluster_pulsar_rs_set_up_and_so_does_pulsar_rs_broker_on_pulsars_broker_conf(
    bookies, zk, tmp_path
):
    # The bookies' /ledgers exists already (formatted at their start): leave it, as a user would.
    ours(*flags(bookies, "", "shared", "--existing-bk-metadata-service-uri", bookies.bookkeeper_uri))
    java = bookies.start_pulsar_broker(cluster="shared", initialise=False)
    topic = "persistent://public/default/set-up-by-pulsar-rs"
    c = pulsar.Client(java.service_url, operation_timeout_seconds=60)
    try:
        consumer = c.subscribe(topic, "s")
        c.create_producer(topic).send(b"through the Java broker")
        assert consumer.receive(timeout_millis=30000).data() == b"through the Java broker"
    finally:
        c.close()

    # pulsar-rs's `broker` command on the broker.conf Apache Pulsar 4.0.8 ships, with the keys a
    # user sets for this cluster after it.
    shipped = (bookies.home / "conf" / "broker.conf").read_text()
    conf = {
        "metadataStoreUrl": bookies.metadata_store_url,
        "clusterName": "shared",
        "bindAddress": "127.0.0.1",
        "advertisedAddress": "127.0.0.1",
        "managedLedgerDefaultEnsembleSize": 2,
        "managedLedgerDefaultWriteQuorum": 2,
        "managedLedgerDefaultAckQuorum": 2,
        "metadataStoreSessionTimeoutMillis": 6000,
    }
    with PulsarRsBroker(tmp_path, "rs", conf, command="broker", prelude=shipped) as rs:
        registered = zk.get_children("/loadbalance/brokers")
        assert rs.broker_id in registered, registered
        c = pulsar.Client(rs.url, operation_timeout_seconds=60)
        try:
            # The topic the Java broker wrote: its backlog, through whichever broker owns it now.
            consumer = c.subscribe(topic, "s2", initial_position=pulsar.InitialPosition.Earliest)
            assert consumer.receive(timeout_millis=30000).data() == b"through the Java broker"
        finally:
            c.close()
        rs.stop()


def test_broker_refuses_a_config_without_a_cluster(tmp_path):
    conf = tmp_path / "alone.conf"
    conf.write_text("clusterName=x\n")
    p = subprocess.run(
        [sys.executable, "-m", "pulsar_rs.cli", "broker", "--config", str(conf), "--data-dir", str(tmp_path / "d")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert p.returncode == 2 and "metadataStoreUrl must name the cluster's ZooKeeper" in p.stderr, p.stderr
