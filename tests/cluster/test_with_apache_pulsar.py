"""One cluster of an Apache Pulsar 4.0 broker and a pulsar-rs broker, on the same ZooKeeper and
bookies (issue 34, item 4): Apache Pulsar's `initialize-cluster-metadata` and its broker first
(so it leads and places bundles with its own modular load manager), then pulsar-rs joining. Every
test runs twice: with the cluster's metadata on that ZooKeeper, and on etcd (Pulsar's
`EtcdMetadataStore` beside pulsar-rs's; BookKeeper's own metadata stays on ZooKeeper).

* Each broker lists both, names the same leader, and a lookup through either lands on one owner;
  messages flow through both.
* A bundle unloaded with `destinationBroker` (pulsar-admin's `namespaces unload --bundle ..
  --destinationBroker ..`) moves from the broker the Java leader placed it on to the other one
  and back; each serves the topic's backlog and its subscription where the other left them.
"""

from __future__ import annotations

import json
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pulsar
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository's tools/
from tools.pulsar_reference import PulsarReferenceError, available
from tools.pulsar_reference.etcd import Etcd, etcd_missing

from pulsar_rs.testing.bookkeeper import BookKeeperCluster, PulsarBroker
from pulsar_rs.testing.process import PulsarRsBroker

if (why := available()) is not None:
    pytest.skip(f"no Apache Pulsar here: {why}", allow_module_level=True)

CLUSTER = "test"


class Mixed:
    """The Java broker and the pulsar-rs broker of one cluster."""

    def __init__(self, bk: BookKeeperCluster, tmp: Path, store: str) -> None:
        """``store``: the cluster's ``metadataStoreUrl`` (the ZooKeeper's, or an etcd's)."""
        self.java: PulsarBroker = bk.start_pulsar_broker(cluster=CLUSTER, metadata_store_url=store)
        self.rs = PulsarRsBroker(
            tmp,
            "rs",
            {
                "metadataStoreUrl": store,
                "bookkeeperMetadataServiceUri": bk.bookkeeper_uri,
                "clusterName": CLUSTER,
                "metadataStoreSessionTimeoutMillis": 6000,
                "managedLedgerDefaultEnsembleSize": 2,
                "managedLedgerDefaultWriteQuorum": 2,
                "managedLedgerDefaultAckQuorum": 2,
            },
        )
        self.rs_url, self.rs_http, self.rs_id = self.rs.url, self.rs.http, self.rs.broker_id
        self.java_id = self.java.admin_url.removeprefix("http://")

    def client(self) -> pulsar.Client:
        hosts = f"{self.java.service_url.removeprefix('pulsar://')},{self.rs_url.removeprefix('pulsar://')}"
        return pulsar.Client(
            f"pulsar://{hosts}", operation_timeout_seconds=30, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error)
        )

    def stop(self) -> None:
        self.rs.stop()


def http(method: str, url: str) -> tuple[int, object, str | None]:
    """(status, JSON body or text, Location); redirects are not followed."""

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *_args, **_kwargs):
            return None

    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(urllib.request.Request(url, method=method), timeout=60) as r:
            raw = r.read().decode()
            status, location = r.status, None
    except urllib.error.HTTPError as e:
        with e:
            raw, status, location = e.read().decode(), e.code, e.headers.get("Location")
    try:
        return status, json.loads(raw) if raw else None, location
    except json.JSONDecodeError:
        return status, raw, location


def send(method: str, url: str, body: object) -> tuple[int, object]:
    """A JSON request as pulsar-admin sends it; (status, JSON body or text). 307s are followed."""
    for _ in range(5):
        req = urllib.request.Request(
            url, data=json.dumps(body).encode(), method=method, headers={"Content-Type": "application/json"}
        )

        class NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *_args, **_kwargs):
                return None

        try:
            with urllib.request.build_opener(NoRedirect).open(req, timeout=60) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            with e:
                if e.code == 307 and e.headers.get("Location"):
                    url = e.headers["Location"]
                    continue
                return e.code, e.read().decode()
    pytest.fail(f"more than 5 redirects for {url}")


def follow(method: str, url: str) -> tuple[int, object, list[str]]:
    """Follows 307s as pulsar-admin does (the method kept); (status, body, the hops taken)."""
    hops = []
    for _ in range(5):
        status, body, location = http(method, url)
        if status != 307:
            return status, body, hops
        assert location is not None
        hops.append(location)
        url = location
    pytest.fail(f"more than 5 redirects: {hops}")


def owner(base: str, topic: str, expect: str | None = None) -> str:
    """The `brokerUrl` a lookup through `base` answers for `topic`.

    Right after an unload, Apache Pulsar may still hold the old owner's lock, marked disabled,
    in its metadata cache (the delete reaches it by a watch a moment later) and answers
    500 "Namespace bundle ... is being unloaded" (NamespaceService.findBrokerServiceUrl), or,
    when another broker unloaded it and the watch has not arrived yet, the old owner itself.
    Pulsar's clients retry a lookup in the first case and are sent on by the old owner in the
    second; this one, given the owner it `expect`s, asks again until that one is named, for a
    bounded time, and returns the last answer (a bundle placed elsewhere stays elsewhere, so
    the caller's comparison still fails)."""
    deadline = time.monotonic() + 30
    while True:
        status, body, _ = follow("GET", f"{base}/lookup/v2/topic/persistent/{topic}")
        transient = status == 500 and "being unloaded" in str(body)
        stale = expect is not None and status == 200 and isinstance(body, dict) and body["brokerUrl"] != expect
        if not (transient or stale) or time.monotonic() > deadline:
            break
        if stale:
            print(f"{base} still names {body['brokerUrl']} for {topic}; asking again")
        time.sleep(0.2)  # poll: the broker's metadata cache follows ZooKeeper's watch
    assert status == 200 and isinstance(body, dict), body
    return body["brokerUrl"]


@pytest.fixture(scope="module", params=["zookeeper", "etcd"])
def mixed(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mixed]:
    if request.param == "etcd" and (why := etcd_missing()) is not None:
        pytest.skip(f"no etcd here: {why}")
    try:
        bk = BookKeeperCluster(bookies=2).start()
    except PulsarReferenceError as e:
        pytest.fail(str(e))
    etcd, m = None, None
    try:
        store = bk.metadata_store_url
        if request.param == "etcd":
            etcd = Etcd().start()
            store = etcd.metadata_store_url
        m = Mixed(bk, tmp_path_factory.mktemp("mixed"), store)
        yield m
    except PulsarReferenceError as e:
        pytest.fail(str(e))
    finally:
        if m is not None:
            m.stop()
        bk.cleanup()
        if etcd is not None:
            etcd.cleanup()


def test_either_broker_answers_for_the_whole_cluster(mixed):
    both = sorted([mixed.java_id, mixed.rs_id])
    for base in (mixed.java.admin_url, mixed.rs_http):
        # Each broker's list follows ZooKeeper through a watch: the Java broker names a broker
        # that has just joined a moment later (CI once asked within 0.2 s of the join).
        deadline = time.monotonic() + 30
        while True:
            status, listed, _ = http("GET", f"{base}/admin/v2/brokers/{CLUSTER}")
            if (status == 200 and sorted(listed) == both) or time.monotonic() > deadline:
                break
            time.sleep(0.2)  # poll: Apache Pulsar's broker list follows a ZooKeeper watch
        assert status == 200 and sorted(listed) == both, (base, listed)
        status, leader, _ = http("GET", f"{base}/admin/v2/brokers/leaderBroker")
        assert status == 200 and leader["brokerId"] == mixed.java_id, (base, leader)
    owners = {}
    for i in range(16):
        topic = f"public/default/mixed-{i}"
        seen = {owner(base, topic) for base in (mixed.java.admin_url, mixed.rs_http)}
        assert len(seen) == 1, f"{topic}: {seen}"
        owners[topic] = seen.pop()
    # Where the Java leader places each bundle is its load manager's choice (its scores of the
    # two brokers' load reports); whichever it chose, both brokers name that one owner.
    assert set(owners.values()) <= {mixed.java.service_url, mixed.rs_url}, owners
    print(f"placed by the Java leader: {sum(o == mixed.rs_url for o in owners.values())} of 16 on pulsar-rs")
    c = mixed.client()
    try:
        for topic in owners:
            consumer = c.subscribe(f"persistent://{topic}", "s")
            c.create_producer(f"persistent://{topic}").send(topic.encode())
            assert consumer.receive(timeout_millis=20000).data() == topic.encode()
            consumer.close()
    finally:
        c.close()


def eventually(what: str, cond) -> None:
    """Waits up to 30 s for ``cond()``: a broker sees another's change through its watch."""
    deadline = time.monotonic() + 30
    while not cond():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.2)  # poll: the other broker sees the change through its ZooKeeper watch


def test_namespace_policies_are_shared_with_apache_pulsar_both_ways(mixed):
    """Pulsar keeps a namespace's policies in its `Policies` document at
    `/admin/policies/{tenant}/{ns}`: a policy set through the Java broker is answered (and
    applied) by pulsar-rs, one set through pulsar-rs by the Java broker, and neither write loses
    the other's fields; the Java broker still reads the whole document."""
    java, rs = mixed.java.admin_url, mixed.rs_http
    ns = "public/shared-policies"
    status, body = send("PUT", f"{java}/admin/v2/namespaces/{ns}", {})
    assert status in (204, 409), body
    retention = {"retentionTimeInMinutes": 30, "retentionSizeInMB": 5}
    status, body = send("POST", f"{java}/admin/v2/namespaces/{ns}/retention", retention)
    assert status == 204, body

    def answered(base: str, policy: str) -> object:
        status, body, _ = http("GET", f"{base}/admin/v2/namespaces/{ns}/{policy}")
        return body if status == 200 else ("status", status, body)

    eventually("pulsar-rs answering the Java broker's retention", lambda: answered(rs, "retention") == retention)
    for policy, value in (("messageTTL", 120), ("maxProducersPerTopic", 1)):
        status, body = send("POST", f"{rs}/admin/v2/namespaces/{ns}/{policy}", value)
        assert status == 204, body
    eventually("the Java broker answering pulsar-rs's TTL", lambda: answered(java, "messageTTL") == 120)
    eventually("the Java broker answering pulsar-rs's limit", lambda: answered(java, "maxProducersPerTopic") == 1)
    assert answered(java, "retention") == retention
    status, doc, _ = http("GET", f"{java}/admin/v2/namespaces/{ns}")
    assert status == 200 and isinstance(doc, dict), doc
    assert doc["message_ttl_in_seconds"] == 120 and doc["retention_policies"] == retention, doc
    # Removed through pulsar-rs: gone for the Java broker too.
    status, _, _ = http("DELETE", f"{rs}/admin/v2/namespaces/{ns}/messageTTL")
    assert status == 204
    eventually("the Java broker forgetting the TTL", lambda: answered(java, "messageTTL") in (None, ""))


def test_tenants_are_shared_with_apache_pulsar_both_ways(mixed):
    """Pulsar keeps a tenant's `TenantInfo` at `/admin/policies/{tenant}`: one created through the
    Java broker is answered by pulsar-rs; its admin roles changed through pulsar-rs are answered
    by the Java broker; deleted through pulsar-rs, it is gone for the Java broker."""
    java, rs = mixed.java.admin_url, mixed.rs_http
    tenant = "shared-tenant"
    info = {"adminRoles": ["ops"], "allowedClusters": [CLUSTER]}
    status, body = send("PUT", f"{java}/admin/v2/tenants/{tenant}", info)
    assert status == 204, body

    def answered(base: str) -> object:
        status, body, _ = http("GET", f"{base}/admin/v2/tenants/{tenant}")
        return body if status == 200 else status

    eventually("pulsar-rs answering the Java broker's tenant", lambda: answered(rs) == info)
    changed = {"adminRoles": ["dev", "ops"], "allowedClusters": [CLUSTER]}
    status, body = send("POST", f"{rs}/admin/v2/tenants/{tenant}", changed)
    assert status == 204, body
    eventually(
        "the Java broker answering pulsar-rs's change",
        lambda: isinstance(a := answered(java), dict) and sorted(a["adminRoles"]) == ["dev", "ops"],
    )
    status, _, _ = http("DELETE", f"{rs}/admin/v2/tenants/{tenant}")
    assert status == 204
    eventually("the Java broker forgetting the tenant", lambda: answered(java) == 404)


def drain(c: pulsar.Client, topic: str, sub: str) -> list[bytes]:
    consumer = c.subscribe(topic, sub)
    got = []
    try:
        while True:
            try:
                m = consumer.receive(timeout_millis=5000)
            except pulsar.Timeout:
                return got
            got.append(m.data())
            consumer.acknowledge(m)
    finally:
        consumer.close()


def test_a_bundle_moves_between_apache_pulsar_and_pulsar_rs_both_ways(mixed):
    java = (mixed.java.admin_url, mixed.java_id, mixed.java.service_url)
    rs = (mixed.rs_http, mixed.rs_id, mixed.rs_url)
    topic = "public/default/move-0"
    full = f"persistent://{topic}"
    c = mixed.client()
    try:
        consumer = c.subscribe(full, "s")
        producer = c.create_producer(full, batching_enabled=False)
        for k in range(20):
            producer.send(b"first-%02d" % k)
        for _ in range(5):
            consumer.acknowledge(consumer.receive(timeout_millis=20000))
    finally:
        c.close()
    status, rng, _ = http("GET", f"{java[0]}/lookup/v2/topic/persistent/{topic}/bundle")
    assert status == 200 and isinstance(rng, str) and rng.startswith("0x"), rng
    # Whichever broker the Java leader placed it on, it moves to the other and back.
    first, second = (java, rs) if owner(java[0], topic) == java[2] else (rs, java)
    expected = [b"first-%02d" % k for k in range(5, 20)]
    for step, (src, dst) in enumerate(((first, second), (second, first))):
        # `pulsar-admin namespaces unload public/default --bundle <range> --destinationBroker <id>`
        # sent to the current owner: a pulsar-rs owner, not leading, sends it to the Java leader,
        # which records the destination and sends it back to the owner to unload.
        url = f"{src[0]}/admin/v2/namespaces/public/default/{rng}/unload?destinationBroker={dst[1]}"
        status, body, hops = follow("PUT", url)
        assert status == 204, body
        if src is rs:
            assert hops and hops[0].startswith(java[0]), hops
        assert owner(java[0], topic, dst[2]) == dst[2], f"step {step}: the bundle went to {dst[1]}"
        assert owner(rs[0], topic, dst[2]) == dst[2]
        c = mixed.client()
        try:
            assert drain(c, full, "s") == expected, f"step {step}: the backlog, from where the cursor was"
            producer = c.create_producer(full, batching_enabled=False)
            expected = [b"step%d-%02d" % (step, k) for k in range(10)]
            for m in expected:
                producer.send(m)
        finally:
            c.close()
    c = mixed.client()
    try:
        assert drain(c, full, "s") == expected
    finally:
        c.close()


def test_a_bundle_split_by_either_broker_is_read_by_the_other(mixed):
    """`namespaces split-bundle` through the Java broker, then through pulsar-rs: each split is
    written where Pulsar keeps it (`LocalPolicies` and `Policies.bundles`), so the other broker
    answers the new boundaries and looks up the topics of the halves to one owner."""
    java, rs = mixed.java.admin_url, mixed.rs_http
    ns = "public/split-shared"
    status, body = send("PUT", f"{java}/admin/v2/namespaces/{ns}", {"bundles": {"numBundles": 2}})
    assert status in (204, 409), body

    def boundaries(base: str) -> object:
        status, body, _ = http("GET", f"{base}/admin/v2/namespaces/{ns}/bundles")
        return body["boundaries"] if status == 200 and isinstance(body, dict) else (status, body)

    eventually("pulsar-rs reading the namespace", lambda: boundaries(rs) == ["0x00000000", "0x80000000", "0xffffffff"])
    for via, first, expected in (
        (java, "0x00000000_0x80000000", ["0x00000000", "0x40000000", "0x80000000", "0xffffffff"]),
        (rs, "0x80000000_0xffffffff", ["0x00000000", "0x40000000", "0x80000000", "0xbfffffff", "0xffffffff"]),
    ):
        # Whoever owns the bundle splits it (an unowned one is placed first): 307s followed.
        status, body, _ = follow("PUT", f"{via}/admin/v2/namespaces/{ns}/{first}/split?unload=false")
        assert status == 204, body
        for base in (java, rs):
            eventually(
                f"{base} answering the split through {via}",
                lambda base=base, expected=expected: boundaries(base) == expected,
            )
    for i in range(8):
        topic = f"{ns}/after-split-{i}"
        assert len({owner(base, topic) for base in (java, rs)}) == 1, topic
