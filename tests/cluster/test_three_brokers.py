"""Three pulsar-rs brokers as one Pulsar cluster: real ZooKeeper and bookies from the pinned Apache
Pulsar distribution, the official Python client (README, "Run a three-broker cluster").

The tests Pulsar itself uses for this (`AdminApiMultiBrokersTest`, `BrokerServiceLookupTest`,
`MultiBrokerLeaderElectionTest`), run against our brokers:

* exactly one leader, known to every broker; every broker registered;
* a lookup through any broker lands on one owner per topic, and the topics spread over brokers;
* the redirect chain: a broker that does not lead sends a lookup of an unowned bundle to the
  leader (not authoritative), the leader places it and sends the client on (authoritative), and
  that broker takes it;
* a partitioned topic spread over the brokers delivers every message once;
* SIGKILL the broker owning some partitions while producing: after its session expires the
  others take its bundles (fencing its ledgers on the bookies), the clients reconnect, nothing
  receipted is lost, and deduplication delivers nothing twice;
* a broker frozen past its session timeout (SIGSTOP, the process alive) loses its bundles to
  the others; when it wakes it gives them up and joins again.
"""

from __future__ import annotations

import contextlib
import json
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pulsar
import pytest

import raw_protocol as rp
from pulsar_rs import Admin, AdminError

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository's tools/
from tools.pulsar_reference import available, ensure_distribution

from cluster_util import (
    SESSION_MS,
    client,
    cluster_broker,
    drain,
    get,
    lookup,
    partition_owners,
    produce_all,
    takeover,
    three_bookies,
    wait_for,
)
from pulsar_rs.testing.bookkeeper import BookKeeperCluster
from pulsar_rs.testing.process import PulsarRsBroker, wait_for_cluster

if (why := available()) is not None:
    pytest.skip(f"no BookKeeper here: {why}", allow_module_level=True)


def start_broker(tmp: Path, bk: BookKeeperCluster, name: str) -> PulsarRsBroker:
    """One pulsar-rs broker of the cluster on the shared ZooKeeper and bookies."""
    return cluster_broker(tmp, bk, name, brokerDeduplicationEnabled=True)


def bundle_range(broker: PulsarRsBroker, topic: str) -> str:
    """``pulsar-admin topics bundle-range``: the bare range of the topic's bundle."""
    local = topic.removeprefix("persistent://")
    with urllib.request.urlopen(f"{broker.http}/lookup/v2/topic/persistent/{local}/bundle", timeout=30) as r:
        return r.read().decode()


@pytest.fixture(scope="module")
def bookies() -> Iterator[BookKeeperCluster]:
    yield from three_bookies()


@pytest.fixture
def brokers(tmp_path: Path, bookies: BookKeeperCluster) -> Iterator[list[PulsarRsBroker]]:
    started: list[PulsarRsBroker] = []
    try:
        for name in ("b0", "b1", "b2"):
            started.append(start_broker(tmp_path, bookies, name))
        # A broker an earlier test killed stays registered until its session expires.
        wait_for_cluster(started)
        yield started
    finally:
        for b in started:
            b.stop()


def test_one_leader_every_broker_registered_lookups_converge(brokers):
    ids = sorted(b.broker_id for b in brokers)
    for b in brokers:
        listed = Admin(b.http).brokers.list("standalone")
        assert sorted(listed) == ids, listed
    leaders = {json.dumps(Admin(b.http).brokers.leader_broker(), sort_keys=True) for b in brokers}
    assert len(leaders) == 1, leaders
    leader = json.loads(leaders.pop())
    assert leader["brokerId"] in ids
    status, bundles, _ = get(f"{brokers[0].http}/admin/v2/namespaces/public/default/bundles")
    assert status == 200 and bundles["numBundles"] == 16, bundles

    topics = [f"persistent://public/default/converge-{i}" for i in range(16)]
    owners = {}
    for t in topics:
        seen = {lookup(b, t) for b in brokers}
        assert len(seen) == 1, f"{t}: lookups through the brokers disagree: {seen}"
        owners[t] = seen.pop()
    urls = {b.url for b in brokers}
    assert set(owners.values()) <= urls
    assert len(set(owners.values())) >= 2, f"16 topics all on one broker: {owners}"
    # Each owner lists the bundles it holds; no bundle has two owners.
    held: dict[str, str] = {}
    for b in brokers:
        status, owned, _ = get(f"{b.http}/admin/v2/brokers/standalone/{b.broker_id}/ownedNamespaces")
        assert status == 200
        for bundle in owned:
            assert bundle not in held, f"{bundle} owned by {held[bundle]} and {b.name}"
            held[bundle] = b.name
    for t, url in owners.items():
        rng = bundle_range(brokers[0], t)
        owner = next(b for b in brokers if b.url == url)
        assert held.get(f"public/default/{rng}") == owner.name, (t, rng, held)
    # The web console's cluster view through any broker: every broker, the leader, and the
    # bundles each holds (the others' from their load reports, written when ownership changes).
    by_name = {b.broker_id: b.name for b in brokers}
    for via in brokers:

        def view(via=via) -> dict | None:
            status, doc, _ = get(f"{via.http}/console/api/cluster")
            assert status == 200 and isinstance(doc, dict), doc
            got = {by_name[b["brokerId"]]: set(b["bundles"]) for b in doc["brokers"]}
            want = {n: {k for k, v in held.items() if v == n} for n in by_name.values()}
            return doc if got == want else None

        doc = wait_for(f"{via.name}'s cluster view", view, timeout=30)
        assert doc["leader"] == leader["brokerId"]
        assert [b["brokerId"] for b in doc["brokers"] if b["self"]] == [via.broker_id]
        assert [b["brokerId"] for b in doc["brokers"] if b["leader"]] == [leader["brokerId"]]


def test_redirect_chain_with_authoritative(brokers):
    leader_id = Admin(brokers[0].http).brokers.leader_broker()["brokerId"]
    leader = next(b for b in brokers if b.broker_id == leader_id)
    follower = next(b for b in brokers if b is not leader)
    # A topic whose bundle nobody owns yet.
    for i in range(1000):
        topic = f"public/default/chain-{i}"
        rng = bundle_range(leader, topic)
        if all(
            f"public/default/{rng}" not in get(f"{b.http}/admin/v2/brokers/standalone/{b.broker_id}/ownedNamespaces")[1]
            for b in brokers
        ):
            break
    else:
        pytest.fail("every bundle owned already")
    path = f"/lookup/v2/topic/persistent/{topic}"
    status, _, location = get(f"{follower.http}{path}", follow=False)
    assert status == 307, "a follower sends an unowned bundle's lookup to the leader"
    assert location == f"{leader.http}{path}?authoritative=false", location
    status, body, location = get(location, follow=False)
    if status == 307:
        # The leader placed it on another broker: that broker must take it, no more asking.
        assert location is not None and location.endswith(f"{path}?authoritative=true"), location
        target = next(b for b in brokers if location.startswith(b.http))
        assert target is not leader
        status, body, _ = get(location, follow=False)
        assert status == 200 and body["brokerUrl"] == target.url, body
    else:
        assert status == 200 and body["brokerUrl"] == leader.url, body
    owner_url = body["brokerUrl"]
    # Everyone agrees now, and a non-owner refuses producers of the topic (redo the lookup).
    assert {lookup(b, f"persistent://{topic}") for b in brokers} == {owner_url}
    non_owner = next(b for b in brokers if b.url != owner_url)
    raw = rp.Raw(non_owner.url)
    try:
        raw.connect()
        raw.send(rp.simple_frame(rp.base(rp.PRODUCER, rp.fb(1, f"persistent://{topic}") + rp.fv(2, 1) + rp.fv(3, 1))))
        ty, body = raw.recv()
        assert ty == rp.ERROR and body[2] == [6], (ty, body)  # ServiceNotReady
        assert b"not served by this instance" in body[3][0]
    finally:
        raw.close()
    c = client(brokers)
    try:
        p = c.create_producer(f"persistent://{topic}")
        p.send(b"x")
    finally:
        c.close()


def test_a_non_persistent_topic_is_served_by_its_bundles_owner(brokers):
    """Non-persistent topics are owned per bundle as persistent ones (Pulsar hashes the full
    name): a non-owner refuses their producers and consumers, the client's lookup finds the
    owner, and messages flow there."""
    topic = "non-persistent://public/default/np-owned"
    status, body, _ = get(f"{brokers[0].http}/lookup/v2/topic/non-persistent/public/default/np-owned")
    assert status == 200 and isinstance(body, dict), body
    owner_url = body["brokerUrl"]
    non_owner = next(b for b in brokers if b.url != owner_url)
    raw = rp.Raw(non_owner.url)
    try:
        raw.connect()
        raw.send(rp.simple_frame(rp.base(rp.PRODUCER, rp.fb(1, topic) + rp.fv(2, 1) + rp.fv(3, 1))))
        ty, reply = raw.recv()
        assert ty == rp.ERROR and reply[2] == [6], (ty, reply)  # ServiceNotReady
    finally:
        raw.close()
    c = client(brokers)
    try:
        consumer = c.subscribe(topic, "s")
        producer = c.create_producer(topic)
        producer.send(b"np")
        assert consumer.receive(timeout_millis=10_000).data() == b"np"
    finally:
        c.close()


def test_partitioned_topic_spread_over_brokers_delivers_every_message_once(brokers):
    topic = "persistent://public/default/spread"
    local = topic.removeprefix("persistent://")
    req = urllib.request.Request(f"{brokers[1].http}/admin/v2/persistent/{local}/partitions", data=b"8", method="PUT")
    req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=30) as r:
        assert r.status == 204
    # Any broker answers the partition count from the store.
    for b in brokers:
        assert get(f"{b.http}/admin/v2/persistent/{local}/partitions")[1]["partitions"] == 8
    c = client(brokers)
    try:
        c.subscribe(topic, "all").close()
        sent = produce_all(c, topic, 400)
        got = drain(c, topic, "all", len(sent))
    finally:
        c.close()
    assert sorted(got) == sent, f"{len(got)} received of {len(sent)}; duplicates {len(got) - len(set(got))}"
    owners = partition_owners(brokers, topic, 8)
    assert len(set(owners.values())) >= 2, f"8 partitions all on one broker: {owners}"
    # Grown through another broker (`topics update-partitioned-topic`): the store's count is
    # every broker's, and the new partitions take messages.
    Admin(brokers[2].http).topics.update_partitioned_topic(topic, 10)
    for b in brokers:
        assert Admin(b.http).topics.get_partitioned_topic_metadata(topic)["partitions"] == 10, b.name
    c = client(brokers)
    try:
        c.create_producer(f"{topic}-partition-9").send(b"the tenth partition's")
    finally:
        c.close()
    assert Admin(brokers[0].http).topics.stats(f"{topic}-partition-9")["msgInCounter"] == 1


def test_owner_killed_mid_stream_nothing_receipted_is_lost(brokers):
    run = takeover(brokers, "persistent://public/default/takeover", 6)
    print(run.summary())
    run.check(brokers)


def test_frozen_broker_loses_its_bundles_and_rejoins(brokers):
    topic = "persistent://public/default/frozen"
    c = client(brokers)
    try:
        c.subscribe(topic, "s").close()
        p = c.create_producer(topic, batching_enabled=False, send_timeout_millis=60000)
        p.send(b"before")
        owner_url = lookup(brokers[0], topic)
        frozen = next(b for b in brokers if b.url == owner_url)
        others = [b for b in brokers if b is not frozen]
        frozen.signal(signal.SIGSTOP)
        try:
            # Past the session timeout the others see it gone and a lookup moves the bundle.
            wait_for(
                "the frozen broker's registration to expire",
                lambda: frozen.broker_id not in get(f"{others[0].http}/admin/v2/brokers/standalone")[1],
                timeout=SESSION_MS / 1000 * 5,
            )
            new_owner = lookup(others[0], topic)
            assert new_owner != owner_url
            p.send(b"while-frozen")  # the client moves to the new owner
        finally:
            frozen.signal(signal.SIGCONT)
        # Awake, it notices its session is gone, gives its bundles up and joins again.
        wait_for("the woken broker to release its bundles", lambda: "session lost" in frozen.log(), timeout=60)
        wait_for(
            "the woken broker to register again",
            lambda: frozen.broker_id in get(f"{others[0].http}/admin/v2/brokers/standalone")[1],
            timeout=60,
        )
        assert lookup(frozen, topic) == new_owner, "the moved bundle stays with its new owner"
        p.send(b"after")
        got = drain(c, topic, "s", 3)
    finally:
        with contextlib.suppress(Exception):
            c.close()
    assert got == [b"before", b"while-frozen", b"after"], got


def test_a_bundle_split_through_any_broker_is_the_clusters(brokers):
    """`namespaces split-bundle` sent to a broker that does not own the bundle goes to its owner
    (307), which keeps both halves: its producers stay connected, every broker reads the new
    boundaries (its `Policies` watch) and lookups through each land on that owner."""
    ns = "public/default"
    topics = [f"persistent://{ns}/split-{i}" for i in range(24)]
    ranges = {t: bundle_range(brokers[0], t) for t in topics}
    crowded = max(sorted(set(ranges.values())), key=lambda r: list(ranges.values()).count(r))
    inside = [t for t in topics if ranges[t] == crowded]
    assert len(inside) >= 2, ranges
    owner_url = lookup(brokers[0], inside[0])
    owner = next(b for b in brokers if b.url == owner_url)
    other = next(b for b in brokers if b is not owner)
    c = client(brokers)
    try:
        producers = [c.create_producer(t, batching_enabled=False) for t in inside]
        for p in producers:
            p.send(b"before")

        def since() -> list[object]:
            stats = [get(f"{owner.http}/admin/v2/{t.replace('://', '/')}/stats")[1] for t in inside]
            return [s["publishers"][0]["connectedSince"] for s in stats]

        before = since()
        count = len(Admin(other.http).namespaces.bundles(ns)["boundaries"])
        Admin(other.http).namespaces.split_bundle(ns, crowded, split_algorithm_name="topic_count_equally_divide")
        for b in brokers:
            wait_for(
                f"{b.name} reading the split",
                lambda b=b: len(Admin(b.http).namespaces.bundles(ns)["boundaries"]) == count + 1,
            )
        halves = {bundle_range(brokers[0], t) for t in inside}
        assert len(halves) == 2 and crowded not in halves, halves
        for t in inside:
            assert {lookup(b, t) for b in brokers} == {owner_url}, t
        owned = get(f"{owner.http}/admin/v2/brokers/standalone/{owner.broker_id}/ownedNamespaces")[1]
        assert all(f"{ns}/{h}" in owned for h in halves) and f"{ns}/{crowded}" not in owned, owned
        for p in producers:
            p.send(b"after")
        assert since() == before, "the split closed no producer"
        got = drain(c, inside[0], "read", 2)
        assert got == [b"before", b"after"], got
    finally:
        c.close()


def test_a_namespace_created_through_one_broker_is_served_by_all(brokers):
    """Tenants and namespaces created through one broker are written to the store (with
    `defaultNumberOfNamespaceBundles` bundles); whichever broker a bundle lands on serves it."""
    admin = Admin(brokers[2].http)
    admin.tenants.create("acme", allowed_clusters=["standalone"])
    admin.namespaces.create("acme/orders")
    for b in brokers:
        bundles = Admin(b.http).namespaces.bundles("acme/orders")
        assert bundles["numBundles"] == 4
        # The namespace's Policies document shows the same bundles (pulsar-admin namespaces
        # policies), not one bundle.
        assert Admin(b.http).namespaces.policies("acme/orders")["bundles"] == bundles, b.name
    topics = [f"persistent://acme/orders/t-{i}" for i in range(8)]
    owners = {t: {lookup(b, t) for b in brokers} for t in topics}
    assert all(len(o) == 1 for o in owners.values()), owners
    assert len({o.pop() for o in owners.values()}) >= 2, "the namespace's bundles spread"
    c = client(brokers)
    try:
        for t in topics:
            consumer = c.subscribe(t, "s")
            c.create_producer(t).send(t.encode())
            assert consumer.receive(timeout_millis=20000).data() == t.encode()
            consumer.close()
    finally:
        c.close()


def policy(broker: PulsarRsBroker, ns: str, name: str) -> object:
    """A namespace policy as ``broker`` answers it; ``"missing"`` while it does not know the
    namespace yet (its watch of the store has not brought it)."""
    try:
        return Admin(broker.http).namespaces.get_policy(ns, name)
    except AdminError as e:
        if e.status == 404:
            return "missing"
        raise


def test_namespace_policies_set_through_one_broker_apply_on_every_broker(brokers, tmp_path, bookies):
    """A namespace's policies are the cluster's, as in Pulsar (`/admin/policies/{tenant}/{ns}`
    in the metadata store): set through one broker, every broker answers them and the broker
    owning a topic applies them; changes of different policies through different brokers both
    survive; removing one through a third broker removes it everywhere."""
    ns = f"acme/limits-{time.monotonic_ns() % 10**9}"
    with contextlib.suppress(AdminError):  # an earlier test of this module may have made it
        Admin(brokers[1].http).tenants.create("acme", allowed_clusters=["standalone"])
    Admin(brokers[1].http).namespaces.create(ns)
    topic = f"persistent://{ns}/limited"
    owner = next(b for b in brokers if b.url == lookup(brokers[0], topic))
    setter = next(b for b in brokers if b is not owner)
    other = next(b for b in brokers if b is not owner and b is not setter)
    Admin(setter.http).namespaces.set_max_producers_per_topic(ns, 1)
    Admin(other.http).namespaces.set_retention(ns, 60, 10)
    retention = {"retentionTimeInMinutes": 60, "retentionSizeInMB": 10}
    for b in brokers:
        wait_for(
            f"{b.name} answering the policies",
            lambda b=b: policy(b, ns, "maxProducersPerTopic") == 1 and policy(b, ns, "retention") == retention,
        )
    c = client(brokers)
    try:
        first = c.create_producer(topic)
        # The owner applies a limit set through another broker (Pulsar: ProducerBusy).
        with pytest.raises(pulsar.ProducerBusy):
            c.create_producer(topic)
        Admin(other.http).namespaces.remove_max_producers_per_topic(ns)
        for b in brokers:
            wait_for(f"{b.name} forgetting the limit", lambda b=b: policy(b, ns, "maxProducersPerTopic") is None)
        # Retention set through the third broker is still there after the other changes.
        assert policy(owner, ns, "retention") == retention
        second = c.create_producer(topic)
        first.close()
        second.close()
    finally:
        c.close()
    # A tenant's admin roles changed through one broker are the cluster's too.
    roles = {"adminRoles": ["ops", "sre"], "allowedClusters": ["standalone"]}
    Admin(setter.http).request("POST", "/admin/v2/tenants/acme", roles)
    for b in brokers:
        wait_for(
            f"{b.name} answering the tenant",
            lambda b=b: Admin(b.http).request("GET", "/admin/v2/tenants/acme") == roles,
        )
    # A broker that joins later reads the cluster's policies at start.
    late = start_broker(tmp_path, bookies, "late")
    try:
        wait_for("the late broker reading the policies", lambda: policy(late, ns, "retention") == retention)
        assert policy(late, ns, "maxProducersPerTopic") is None
    finally:
        late.stop()


def test_topic_admin_calls_through_any_broker_are_answered_by_the_owner(brokers):
    """Pulsar's `validateTopicOwnership`: a topic's admin calls sent to a broker that does not own
    it are answered 307 to the owner (the same path, ``authoritative=true``), so stats and
    writes through any broker act on the one topic; a partitioned topic's stats, through any
    broker, gather every partition from its owner (Pulsar's `AdminApiMultiBrokersTest`)."""
    topic = "persistent://public/default/admin-anywhere"
    local = topic.removeprefix("persistent://")
    parted = "persistent://public/default/admin-anywhere-parted"
    c = client(brokers)
    try:
        p = c.create_producer(topic, batching_enabled=False)
        for i in range(5):
            p.send(b"x-%d" % i)
        c.subscribe(topic, "s").close()
        owner = next(b for b in brokers if b.url == lookup(brokers[0], topic))
        others = [b for b in brokers if b is not owner]
        status, _, location = get(f"{others[0].http}/admin/v2/persistent/{local}/stats", follow=False)
        assert status == 307, status
        assert location is not None and location.startswith(f"{owner.http}/admin/v2/persistent/{local}/stats?")
        assert "authoritative=true" in location
        for b in brokers:
            st = Admin(b.http).topics.stats(topic)
            assert st["msgInCounter"] == 5 and len(st["publishers"]) == 1, (b.name, st)
        # A write through another broker acts on the owner's topic.
        Admin(others[1].http).topics.create_subscription(topic, "made-elsewhere", "earliest")
        assert Admin(owner.http).topics.stats(topic)["subscriptions"]["made-elsewhere"]["msgBacklog"] == 5

        Admin(brokers[2].http).topics.create(parted, partitions=6)
        sent = produce_all(c, parted, 60)
        owners = partition_owners(brokers, parted, 6)
        assert len(set(owners.values())) >= 2, f"6 partitions all on one broker: {owners}"
        for b in brokers:
            ps = Admin(b.http).topics.partitioned_stats(parted)
            assert ps["msgInCounter"] == len(sent), (b.name, ps["msgInCounter"])
            assert sorted(ps["partitions"]) == sorted(f"{parted}-partition-{i}" for i in range(6))
            internal = Admin(b.http).topics.partitioned_internal_stats(parted)
            entries = sum(d["numberOfEntries"] for d in internal["partitions"].values())
            assert len(internal["partitions"]) == 6 and entries == len(sent), (b.name, entries)
    finally:
        c.close()


def test_calls_on_a_partitioned_topic_reach_every_partition_whoever_owns_it(brokers):
    """Calls on a partitioned topic's name that act on each partition (its subscriptions, its
    deletion), sent to any broker, reach every partition: the broker asked sends each the same
    call on the partition's name to the partition's owner (Pulsar's admin client does) and acts
    on its own."""
    topic = "persistent://public/default/fanned"
    Admin(brokers[0].http).topics.create(topic, partitions=6)
    c = client(brokers)
    try:
        sent = produce_all(c, topic, 60)
    finally:
        c.close()
    owners = partition_owners(brokers, topic, 6)
    assert len(set(owners.values())) >= 2, f"6 partitions all on one broker: {owners}"

    def backlogs(sub: str) -> dict[str, int]:
        st = Admin(brokers[2].http).topics.partitioned_stats(topic)
        return {
            p: d["subscriptions"][sub]["msgBacklog"] for p, d in st["partitions"].items() if sub in d["subscriptions"]
        }

    Admin(brokers[1].http).topics.create_subscription(topic, "fan", "earliest")
    assert len(backlogs("fan")) == 6, "the subscription is on every partition"
    assert sum(backlogs("fan").values()) == len(sent)
    for b in brokers:
        assert Admin(b.http).topics.subscriptions(topic) == ["fan"], b.name
    Admin(brokers[2].http).topics.clear_backlog(topic, "fan")
    assert set(backlogs("fan").values()) == {0}, backlogs("fan")
    Admin(brokers[0].http).topics.unsubscribe(topic, "fan")
    assert backlogs("fan") == {}, "unsubscribed on every partition"
    with pytest.raises(AdminError) as e:
        Admin(brokers[1].http).topics.unsubscribe(topic, "fan")
    assert e.value.status == 404

    # A consumer on a partition another broker owns refuses the delete asked of this one, in
    # Pulsar's words, and nothing is deleted.
    remote = next(i for i, url in owners.items() if url != brokers[1].url)
    c = client(brokers)
    try:
        c.subscribe(f"{topic}-partition-{remote}", "busy")
        with pytest.raises(AdminError) as e:
            Admin(brokers[1].http).topics.delete(topic, partitioned=True)
        assert (e.value.status, e.value.reason) == (412, "Topic has active producers/subscriptions")
        assert get(f"{brokers[1].http}/admin/v2/persistent/public/default/fanned/partitions")[1]["partitions"] == 6
        # A consumer on a partition the asked broker owns itself: refused before the store's
        # record is touched, so every broker still knows the topic.
        asked = next(b for b in brokers if b.url == owners[0])
        c.subscribe(f"{topic}-partition-0", "busy-here")
        with pytest.raises(AdminError) as e:
            Admin(asked.http).topics.delete(topic, partitioned=True)
        assert (e.value.status, e.value.reason) == (412, "Topic has active producers/subscriptions")
        for b in brokers:
            assert get(f"{b.http}/admin/v2/persistent/public/default/fanned/partitions")[1]["partitions"] == 6

        # An unload asked of a broker that owns neither partition reaches their owners: the
        # consumers on both are closed and reconnect.
        def since(p: int, sub: str) -> str | None:
            st = Admin(brokers[0].http).topics.stats(f"{topic}-partition-{p}")
            consumers = st["subscriptions"].get(sub, {}).get("consumers", [])
            return consumers[0]["connectedSince"] if consumers else None

        before = {(remote, "busy"): since(remote, "busy"), (0, "busy-here"): since(0, "busy-here")}
        assert None not in before.values(), before
        via = next(b for b in brokers if b.url not in (owners[0], owners[remote]))
        Admin(via.http).topics.unload(topic)
        deadline = time.monotonic() + 30
        while any(since(p, sub) in (None, was) for (p, sub), was in before.items()):
            assert time.monotonic() < deadline, f"the unload did not reach every partition's owner: {before}"
            time.sleep(0.2)  # poll: the unload reaches the owners and the clients reconnect
    finally:
        c.close()
    Admin(brokers[1].http).topics.delete(topic, partitioned=True)
    for b in brokers:
        listed = Admin(b.http).topics.list("public/default")
        assert not [t for t in listed if t.startswith(topic)], (b.name, listed)
        status, body, _ = get(f"{b.http}/admin/v2/persistent/public/default/fanned/partitions")
        # Not partitioned any more: 404 (no such topic), as Apache Pulsar answers.
        assert status == 404 or (status == 200 and body["partitions"] == 0), (b.name, status, body)


def test_a_partitioned_topic_terminated_through_any_broker_is_terminated_by_each_owner(brokers):
    """``topics partitioned-terminate`` asked of one broker reaches every partition's owner (as
    Pulsar's broker asks each through its admin client): each partition ends at its last message,
    and every broker's view of it says so."""
    topic = "persistent://public/default/ended"
    Admin(brokers[0].http).topics.create(topic, partitions=6)
    c = client(brokers)
    try:
        produce_all(c, topic, 30)
    finally:
        c.close()
    owners = partition_owners(brokers, topic, 6)
    assert len(set(owners.values())) >= 2, f"6 partitions all on one broker: {owners}"
    ids = Admin(brokers[1].http).topics.terminate_partitioned(topic)
    assert sorted(ids) == [str(i) for i in range(6)], ids
    for i in range(6):
        part = f"{topic}-partition-{i}"
        for b in brokers:  # each answered by the partition's owner (307 followed)
            assert Admin(b.http).topics.internal_stats(part)["state"] == "Terminated", (b.name, part)
        last = Admin(brokers[2].http).topics.last_message_id(part)
        assert (last["ledgerId"], last["entryId"]) == (ids[str(i)]["ledgerId"], ids[str(i)]["entryId"]), i
        assert ids[str(i)]["entryId"] >= 0, f"partition {i} took messages: {ids[str(i)]}"
    # Through a broker no client nor call has brought the topic to: the store's count decides.
    fresh = "persistent://public/default/ended-unseen"
    Admin(brokers[0].http).topics.create(fresh, partitions=2)
    ids = Admin(brokers[2].http).topics.terminate_partitioned(fresh)
    assert sorted(ids) == ["0", "1"], ids


def test_a_namespaces_topics_are_the_clusters_through_any_broker(brokers):
    """A namespace's topic list, and so a pattern subscription, through any broker names the
    topics every broker serves (Pulsar lists the managed ledgers in the metadata store)."""
    topics = [f"persistent://public/default/pat-{i}" for i in range(8)]
    c = client(brokers)
    try:
        for t in topics:
            c.create_producer(t).send(t.encode())
    finally:
        c.close()
    owners = {lookup(brokers[0], t) for t in topics}
    assert len(owners) >= 2, f"8 topics all on one broker: {owners}"
    for b in brokers:
        listed = Admin(b.http).topics.list("public/default")
        assert set(topics) <= set(listed), (b.name, sorted(set(topics) - set(listed)))
    # A pattern consumer whose client knows one broker: the namespace's topics come from it.
    one = pulsar.Client(
        brokers[1].url, operation_timeout_seconds=45, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error)
    )
    try:
        consumer = one.subscribe(
            re.compile("persistent://public/default/pat-.*"),
            "pattern",
            initial_position=pulsar.InitialPosition.Earliest,
        )
        got = set()
        while len(got) < len(topics):
            got.add(consumer.receive(timeout_millis=30000).data().decode())
        assert got == set(topics)
    finally:
        one.close()


def test_apache_pulsars_own_pulsar_admin_through_a_broker_that_does_not_own_the_topic(brokers):
    """Apache Pulsar 4.0.8's ``bin/pulsar-admin`` (a JVM per call) pointed at a broker that does not
    own the topic: it follows the 307 to the owner, as against an Apache Pulsar cluster."""
    topic = "persistent://public/default/java-admin"
    c = client(brokers)
    try:
        produce_all(c, topic, 3)
    finally:
        c.close()
    other = next(b for b in brokers if b.url != lookup(brokers[0], topic))
    admin = ensure_distribution() / "bin" / "pulsar-admin"

    def run(*args: str) -> str:
        p = subprocess.run([str(admin), "--admin-url", other.http, *args], capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, f"pulsar-admin {' '.join(args)}: rc={p.returncode}\n{p.stdout}{p.stderr}"
        return p.stdout

    assert json.loads(run("topics", "stats", topic))["msgInCounter"] == 3
    run("topics", "create-subscription", "-s", "through-another", topic)
    assert "through-another" in run("topics", "subscriptions", topic).split()
