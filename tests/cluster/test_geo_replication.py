"""Geo-replication between two pulsar-rs clusters, as a Pulsar operator sets it up with independent
metadata stores (each cluster registers the other, creates the tenant and the namespace, and lists
both clusters as its replication clusters): messages produced in either cluster reach the other
once, in order, with their keys, properties, event and publish times; the remote's replicator
producer is not a publisher there; while the remote is down its messages wait as the replication
cursor's backlog and drain when it returns; the admin calls refuse as Pulsar's do. The official
Python client on both sides.
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pulsar
import pytest

from cluster_util import wait_for
from pulsar_rs.testing.process import PulsarRsBroker
from token_util import SECRET_URL, TOKEN_PROVIDER, client_for, hs_token, http

TOPIC = "persistent://geo/ns/orders"


def call(method: str, url: str, body: object | None = None) -> tuple[int, object]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            raw = r.read()
            return r.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as e:
        with e:
            raw = e.read()
            return e.code, json.loads(raw) if raw else None


def ok(method: str, url: str, body: object | None = None) -> object:
    status, answer = call(method, url, body)
    assert status in (200, 204), f"{method} {url}: {status} {answer}"
    return answer


def start(tmp: Path, cluster: str) -> PulsarRsBroker:
    return PulsarRsBroker(tmp, cluster, {"clusterName": cluster, "brokerDeduplicationEnabled": False})


def register(at: PulsarRsBroker, cluster: str, of: PulsarRsBroker, create: bool = True) -> None:
    ok(
        "PUT" if create else "POST",
        f"{at.http}/admin/v2/clusters/{cluster}",
        {"serviceUrl": of.http, "brokerServiceUrl": of.url},
    )


def set_up(a: PulsarRsBroker, b: PulsarRsBroker) -> None:
    """What an operator does on each cluster of a pair with independent stores."""
    for here, other, other_name in ((a, b, "west"), (b, a, "east")):
        register(here, other_name, other)
        ok("PUT", f"{here.http}/admin/v2/tenants/geo", {"adminRoles": [], "allowedClusters": ["east", "west"]})
        ok("PUT", f"{here.http}/admin/v2/namespaces/geo/ns")
        if here is a:
            ok("POST", f"{here.http}/admin/v2/namespaces/geo/ns/replication", ["east", "west"])
        else:  # the CLI, as pulsar-admin's `namespaces set-clusters`
            cli = [sys.executable, "-m", "pulsar_rs.cli", "admin", "--admin-url", here.http, "namespaces"]
            subprocess.run([*cli, "set-clusters", "geo/ns", "--clusters", "east,west"], check=True, timeout=60)
            shown = subprocess.run(
                [*cli, "get-clusters", "geo/ns"], check=True, timeout=60, capture_output=True, text=True
            )
            assert "east" in shown.stdout and "west" in shown.stdout, shown.stdout
        assert ok("GET", f"{here.http}/admin/v2/namespaces/geo/ns/replication") == ["east", "west"]


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[PulsarRsBroker, PulsarRsBroker]]:
    a, b = start(tmp_path, "east"), start(tmp_path, "west")
    try:
        set_up(a, b)
        yield a, b
    finally:
        a.kill()
        b.kill()


def stats(broker: PulsarRsBroker) -> dict:
    return ok("GET", f"{broker.http}/admin/v2/persistent/{TOPIC.removeprefix('persistent://')}/stats")  # type: ignore[return-value]


def receive_all(consumer: pulsar.Consumer, expect: int, idle_ms: int = 3000) -> list[pulsar.Message]:
    got: list[pulsar.Message] = []
    while True:
        try:
            m = consumer.receive(timeout_millis=idle_ms if len(got) >= expect else 30000)
        except pulsar.Timeout:
            return got
        got.append(m)
        consumer.acknowledge(m)


def test_each_clusters_messages_reach_the_other_once_in_order_as_published(pair):
    a, b = pair
    ca, cb = pulsar.Client(a.url), pulsar.Client(b.url)
    try:
        # The subscriptions first: the topic loads (and starts replicating) on both sides.
        sub_a = ca.subscribe(TOPIC, "s", initial_position=pulsar.InitialPosition.Earliest)
        sub_b = cb.subscribe(TOPIC, "s", initial_position=pulsar.InitialPosition.Earliest)
        n = 1000
        for client, origin in ((ca, "east"), (cb, "west")):
            p = client.create_producer(TOPIC, producer_name=f"p-{origin}", batching_enabled=(origin == "west"))
            for i in range(n):
                p.send_async(
                    f"{origin}-{i:04d}".encode(),
                    None,
                    partition_key=f"k{i % 7}",
                    properties={"origin": origin, "i": str(i)},
                    event_timestamp=1_700_000_000_000 + i,
                )
            p.flush()
            p.close()
        at_a = receive_all(sub_a, 2 * n)
        at_b = receive_all(sub_b, 2 * n)
        for got, where in ((at_a, "east"), (at_b, "west")):
            bodies = [m.data().decode() for m in got]
            assert len(bodies) == len(set(bodies)) == 2 * n, (
                f"{where}: {len(bodies)} messages, {len(set(bodies))} distinct"
            )
            for origin in ("east", "west"):
                mine = [x for x in bodies if x.startswith(origin)]
                assert mine == [f"{origin}-{i:04d}" for i in range(n)], f"{origin}'s order at {where}"
        # What travelled kept its metadata: key, properties, event time, producer and publish time.
        seen_at_a = {m.data(): m for m in at_a}
        for m in at_b:
            if m.properties()["origin"] != "east":
                continue
            i = int(m.properties()["i"])
            assert m.partition_key() == f"k{i % 7}"
            assert m.event_timestamp() == 1_700_000_000_000 + i
            assert m.publish_timestamp() == seen_at_a[m.data()].publish_timestamp()
        # The replicators are connected and caught up; the remote one is not a publisher here.
        for here, remote in ((a, "west"), (b, "east")):
            s = wait_for(
                f"{here.name}'s replicator to {remote} caught up",
                lambda here=here, remote=remote: (
                    (st := stats(here))["replication"].get(remote, {}).get("replicationBacklog") == 0 and st
                ),
            )
            r = s["replication"][remote]
            assert r["connected"] is True, r
            assert r["msgOutCount"] >= n, r
            assert r["inboundConnection"], r
            assert all(not p["producerName"].startswith("pulsar.repl.") for p in s["publishers"]), s["publishers"]
            assert "pulsar.repl." + remote not in s["subscriptions"], list(s["subscriptions"])
            with urllib.request.urlopen(f"{here.http}/metrics", timeout=30) as r:
                metrics = r.read().decode()
            for family, value in (("pulsar_replication_backlog", "0"), ("pulsar_replication_connected_count", "1")):
                sample = next(ln for ln in metrics.splitlines() if ln.startswith(family + "{") and "orders" in ln)
                assert f'remote_cluster="{remote}"' in sample and sample.endswith(" " + value), sample
    finally:
        ca.close()
        cb.close()


def test_a_partitioned_topic_is_replicated_partition_by_partition(pair):
    """Created on one cluster only: its partitioned metadata reaches the other with the first
    replicator, and each partition's messages land in the same partition there."""
    a, b = pair
    topic = "persistent://geo/ns/parted"
    ok("PUT", f"{a.http}/admin/v2/persistent/geo/ns/parted/partitions", 3)
    ca, cb = pulsar.Client(a.url), pulsar.Client(b.url)
    try:
        p = ca.create_producer(topic, batching_enabled=False)
        wait_for(
            "the partitioned topic on west",
            lambda: (
                (call("GET", f"{b.http}/admin/v2/persistent/geo/ns/parted/partitions")[1] or {}).get("partitions") == 3
            ),
        )
        consumer = cb.subscribe(topic, "s", initial_position=pulsar.InitialPosition.Earliest)
        sent = {}
        for i in range(90):
            msg_id = p.send(b"m-%03d" % i, partition_key=f"k{i}")
            sent[b"m-%03d" % i] = msg_id.partition()
        got = receive_all(consumer, 90)
        assert sorted(m.data() for m in got) == sorted(sent), "each message once"
        for m in got:
            partition = int(m.topic_name().rsplit("-partition-", 1)[1])
            assert partition == sent[m.data()], f"{m.data()!r} landed in another partition"
    finally:
        ca.close()
        cb.close()


def test_a_replication_backlog_expires_as_pulsars(pair):
    """The admin ``expireMessages`` on a replicator's cursor (``pulsar.repl.<cluster>``), as
    Pulsar's ``PersistentReplicator.expireMessages``: with the remote down, a small backlog whose
    oldest message has not expired is left (409, not issued); once it has, what waited for that
    cluster is dropped and counted under ``replication`` in the stats."""
    a, b = pair
    path = f"{a.http}/admin/v2/persistent/geo/ns/expiring"
    ca = pulsar.Client(a.url)
    try:
        p = ca.create_producer("persistent://geo/ns/expiring", batching_enabled=False)
        b.kill()
        for i in range(20):
            p.send(b"m-%02d" % i)
        west = lambda: ok("GET", f"{path}/stats")["replication"]["west"]  # noqa: E731
        wait_for("the backlog towards west", lambda: west()["replicationBacklog"] == 20)
        status, answer = call("POST", f"{path}/subscription/pulsar.repl.west/expireMessages/3600")
        assert status == 409 and "not issued" in str(answer), (status, answer)
        assert call("POST", f"{path}/subscription/pulsar.repl.north/expireMessages/1")[0] == 404
        time.sleep(1.5)  # a TTL of 1 s, on the broker's real clock: the messages must age
        ok("POST", f"{path}/subscription/pulsar.repl.west/expireMessages/1")
        stats = west()
        assert stats["replicationBacklog"] == 0 and stats["msgExpiredCount"] == 20, stats
    finally:
        ca.close()


def np_stats(broker: PulsarRsBroker, local: str) -> dict:
    return ok("GET", f"{broker.http}/admin/v2/non-persistent/geo/ns/{local}/stats")  # type: ignore[return-value]


def test_a_non_persistent_topics_messages_reach_the_other_cluster_once(pair):
    """Pulsar's ``NonPersistentReplicator``: each message published while the replicator is
    connected reaches the consumers attached in the other cluster, once, with its key and
    properties; nothing comes back (the other cluster's replicator leaves replicated messages
    alone); the replicator is in ``replication`` of the stats, not a publisher there."""
    a, b = pair
    topic = "non-persistent://geo/ns/ticks"
    ca, cb = pulsar.Client(a.url), pulsar.Client(b.url)
    try:
        # Nothing is stored: only consumers attached when a message arrives get it, on both sides.
        sub_a = ca.subscribe(topic, "s")
        sub_b = cb.subscribe(topic, "s")
        p = ca.create_producer(topic, producer_name="p-east", batching_enabled=False)
        for here, there in ((a, "west"), (b, "east")):
            wait_for(
                f"the replicator towards {there} connected",
                lambda here=here, there=there: np_stats(here, "ticks")["replication"].get(there, {}).get("connected"),
            )
        n = 200
        for i in range(n):
            p.send(f"np-{i:03d}".encode(), properties={"i": str(i)}, partition_key=f"k{i % 7}")
        got_b = receive_all(sub_b, n)
        assert [m.data() for m in got_b] == [f"np-{i:03d}".encode() for i in range(n)]
        assert [m.properties()["i"] for m in got_b] == [str(i) for i in range(n)]
        assert [m.partition_key() for m in got_b] == [f"k{i % 7}" for i in range(n)]
        assert len(receive_all(sub_a, n)) == n, "a message came back from west"
        east = np_stats(a, "ticks")["replication"]["west"]
        assert east["msgOutCount"] == n and east["replicationBacklog"] == 0, east
        assert [x["producerName"] for x in np_stats(b, "ticks")["publishers"]] == []
        assert [x["producerName"] for x in np_stats(a, "ticks")["publishers"]] == ["p-east"]
    finally:
        ca.close()
        cb.close()


@pytest.mark.parametrize("level", ["topic", "namespace"])
def test_a_replicator_dispatch_rate_paces_what_it_sends(pair, level):
    """The topic's `replicatorDispatchRate`, or its namespace's (this cluster's entry of the
    namespace's per-cluster map), at 100 msg/s: 300 messages published at once reach the other
    cluster over about two seconds or more (unpaced: a hundredth of one), all of them, in order."""
    a, b = pair
    path = {"topic": "persistent/geo/ns/paced", "namespace": "namespaces/geo/ns"}[level]
    topic = "persistent://geo/ns/paced"
    ca, cb = pulsar.Client(a.url), pulsar.Client(b.url)
    try:
        consumer = cb.subscribe(topic, "s", initial_position=pulsar.InitialPosition.Earliest)
        p = ca.create_producer(topic, batching_enabled=False)
        rate = {"dispatchThrottlingRateInMsg": 100, "dispatchThrottlingRateInByte": -1, "ratePeriodInSecond": 1}
        ok("POST", f"{a.http}/admin/v2/{path}/replicatorDispatchRate", rate)
        time.sleep(1.5)  # the policy reaches the replicator with its next read
        start = time.monotonic()
        for i in range(300):
            p.send_async(b"m-%03d" % i, None)
        p.flush()
        got: list[bytes] = []
        while len(got) < 300:  # timed to the last arrival
            m = consumer.receive(timeout_millis=30000)
            got.append(m.data())
            consumer.acknowledge(m)
        took = time.monotonic() - start
        assert got == [b"m-%03d" % i for i in range(300)]
        assert took >= 1.5, f"300 messages at 100 msg/s replicated in {took:.2f} s"
    finally:
        ca.close()
        cb.close()


def test_the_backlog_waits_while_the_remote_is_down_and_drains_when_it_returns(pair, tmp_path):
    a, b = pair
    ca = pulsar.Client(a.url)
    cb = pulsar.Client(b.url)
    try:
        cb.subscribe(TOPIC, "s", initial_position=pulsar.InitialPosition.Earliest).close()
        p = ca.create_producer(TOPIC, batching_enabled=False)
        p.send(b"before")
        wait_for("the first message replicated", lambda: stats(a)["replication"]["west"]["replicationBacklog"] == 0)
        cb.close()
        b.stop()
        n = 300
        for i in range(n):
            p.send_async(b"while-down-%04d" % i, None)
        p.flush()
        s = wait_for(
            "the backlog kept for west",
            lambda: (st := stats(a)["replication"]["west"])["replicationBacklog"] == n and st,
        )
        assert s["connected"] is False, s
        # The console's replication view shows the same backlog, its peer not connected.
        peers = {p["name"]: p for p in ok("GET", f"{a.http}/console/api/replication")["peers"]}  # type: ignore[index]
        assert (peers["west"]["replicationBacklog"], peers["west"]["connected"]) == (n, 0), peers
        # West comes back (its data directory kept, new ports): the operator updates its record.
        b2 = PulsarRsBroker(tmp_path, "west", {"clusterName": "west", "brokerDeduplicationEnabled": False})
        try:
            register(a, "west", b2, create=False)
            register(b2, "east", a, create=False)
            wait_for(
                "the backlog drained to west",
                lambda: stats(a)["replication"]["west"]["replicationBacklog"] == 0,
                timeout=120,
            )
            view = ok("GET", f"{a.http}/console/api/replication")
            assert [(r["remote"], r["replicationBacklog"], r["connected"]) for r in view["topics"]] == [  # type: ignore[index]
                ("west", 0, True)
            ], view
            cb = pulsar.Client(b2.url)
            got = [m.data() for m in receive_all(cb.subscribe(TOPIC, "s"), n + 1)]
            assert got == [b"before", *[b"while-down-%04d" % i for i in range(n)]]
        finally:
            cb.close()
            b2.kill()
    finally:
        ca.close()


def test_the_replicating_broker_killed_mid_stream_loses_and_duplicates_nothing(tmp_path):
    """East is SIGKILLed while it publishes and replicates; restarted on its data directory (new
    ports: west's record of it updated), its replicator resumes from the replication cursor as
    stored. West, deduplicating, ends with every message east receipted, each once, in order. (How
    a replicator's resend is deduplicated on the receiving side is shown deterministically on the
    wire: tests/interop/test_replicated_dedup.py.)"""
    a = start(tmp_path, "east")
    b = PulsarRsBroker(tmp_path, "west", {"clusterName": "west", "brokerDeduplicationEnabled": True})
    try:
        set_up(a, b)
        cb = pulsar.Client(b.url)
        consumer = cb.subscribe(TOPIC, "s", initial_position=pulsar.InitialPosition.Earliest)
        ca = pulsar.Client(a.url, operation_timeout_seconds=5)
        receipted: list[bytes] = []
        p = ca.create_producer(TOPIC, producer_name="p-east", batching_enabled=False, send_timeout_millis=5000)
        for i in range(3000):
            body = b"m-%05d" % i
            p.send_async(body, lambda res, _id, body=body: res == pulsar.Result.Ok and receipted.append(body))
            if i == 2000:
                wait_for("west receiving", lambda: stats(b)["msgInCounter"] > 500)
                a.kill()
                break
        # Closing a producer whose broker was just killed may answer NotConnected or time out: the
        # client is closed either way, and what the test checks is on west.
        with contextlib.suppress(pulsar.PulsarException):
            ca.close()
        a = PulsarRsBroker(tmp_path, "east", {"clusterName": "east", "brokerDeduplicationEnabled": False})
        register(b, "east", a, create=False)
        got = [m.data() for m in receive_all(consumer, len(receipted), idle_ms=10000)]
        assert len(got) == len(set(got)), f"{len(got) - len(set(got))} duplicates on west"
        missing = set(receipted) - set(got)
        assert not missing, f"{len(missing)} receipted messages never reached west"
        assert got == sorted(got), "east's order"
        cb.close()
    finally:
        a.kill()
        b.kill()


def test_source_producers_sharing_a_name_and_sequence_ids_all_reach_a_deduplicating_remote(tmp_path):
    """Two producers named alike publish on east one after the other, each from sequence id 0 (east
    does not deduplicate: apache/pulsar#20128's case). West deduplicates: by the messages' own
    producer name and sequence id (Pulsar before 4.0.4) it would drop the second producer's as
    duplicates of the first's; by source position (`__MSG_PROP_REPL_SOURCE_POSITION`, negotiated
    in CONNECT/CONNECTED) each arrives once."""
    a = start(tmp_path, "east")
    b = PulsarRsBroker(tmp_path, "west", {"clusterName": "west", "brokerDeduplicationEnabled": True})
    try:
        set_up(a, b)
        ca, cb = pulsar.Client(a.url), pulsar.Client(b.url)
        consumer = cb.subscribe(TOPIC, "s", initial_position=pulsar.InitialPosition.Earliest)
        sent = []
        for turn in range(2):
            p = ca.create_producer(TOPIC, producer_name="same", batching_enabled=False)
            for seq in range(5):
                body = b"turn-%d-%d" % (turn, seq)
                p.send(body, sequence_id=seq)
                sent.append(body)
            p.close()
        msgs = receive_all(consumer, len(sent))
        got = [m.data() for m in msgs]
        assert got == sent, f"west got {got}"
        positions = [m.properties().get("__MSG_PROP_REPL_SOURCE_POSITION") for m in msgs]
        assert all(positions) and len(set(positions)) == len(sent), positions
        ca.close()
        cb.close()
    finally:
        a.kill()
        b.kill()


def test_replication_clusters_are_refused_as_pulsar_refuses_them(tmp_path):
    with start(tmp_path, "east") as a:
        ok(
            "PUT",
            f"{a.http}/admin/v2/clusters/west",
            {"serviceUrl": "http://127.0.0.1:1", "brokerServiceUrl": "pulsar://127.0.0.1:1"},
        )
        ok(
            "PUT",
            f"{a.http}/admin/v2/clusters/north",
            {"serviceUrl": "http://127.0.0.1:2", "brokerServiceUrl": "pulsar://127.0.0.1:2"},
        )
        ok("PUT", f"{a.http}/admin/v2/tenants/geo", {"adminRoles": [], "allowedClusters": ["east", "west"]})
        ok("PUT", f"{a.http}/admin/v2/namespaces/geo/ns")
        url = f"{a.http}/admin/v2/namespaces/geo/ns/replication"
        assert ok("GET", url) == ["east"], "a namespace stays in its own cluster"
        assert call("POST", url, []) == (412, {"reason": "ClusterIds should not be null or empty"})
        assert call("POST", url, ["east", "global"]) == (
            412,
            {"reason": "Cannot specify global in the list of replication clusters"},
        )
        assert call("POST", url, ["east", "south"]) == (403, {"reason": "Invalid cluster id: south"})
        status, answer = call("POST", url, ["east", "north"])
        assert status == 403 and "not in the list of allowed clusters" in answer["reason"], answer  # type: ignore[index]
        assert ok("GET", url) == ["east"], "nothing refused was stored"
        # A namespace created with replication clusters: the same checks (Pulsar's validatePolicies).
        created = f"{a.http}/admin/v2/namespaces/geo/born-replicated"
        assert call("PUT", created, {"replication_clusters": ["east", "south"]}) == (
            403,
            {"reason": "Invalid cluster id: south"},
        )
        status, answer = call("PUT", created, {"replication_clusters": ["east", "north"]})
        assert status == 403 and "not in the list of allowed clusters" in answer["reason"], answer  # type: ignore[index]
        assert call("GET", created + "/replication")[0] == 404, "nothing refused was created"
        ok("PUT", created, {"replication_clusters": ["east", "west"]})
        assert ok("GET", created + "/replication") == ["east", "west"]
        # A topic of the namespace opens a cursor towards west once west is listed, and drops it after.
        c = pulsar.Client(a.url)
        try:
            c.create_producer(TOPIC).close()
            ok("POST", url, ["east", "west"])
            internal = f"{a.http}/admin/v2/persistent/{TOPIC.removeprefix('persistent://')}/internalStats"
            wait_for("the replication cursor", lambda: "pulsar.repl.west" in ok("GET", internal)["cursors"])  # type: ignore[index]
            ok("POST", url, ["east"])
            wait_for("the replication cursor gone", lambda: "pulsar.repl.west" not in ok("GET", internal)["cursors"])  # type: ignore[index]
        finally:
            c.close()


def test_the_pytest_plugins_geo_fixture_replicates(pulsar_geo_clusters):
    """`pulsar_geo_clusters` (the plugin's): east's message is received on west."""
    east, west = pulsar_geo_clusters.brokers["east"], pulsar_geo_clusters.brokers["west"]
    ce, cw = pulsar.Client(east.url), pulsar.Client(west.url)
    try:
        consumer = cw.subscribe("persistent://geo/ns/fixture", "s")
        ce.create_producer("persistent://geo/ns/fixture").send(b"from east")
        assert consumer.receive(timeout_millis=30000).data() == b"from east"
    finally:
        ce.close()
        cw.close()


def sub_stats(broker: PulsarRsBroker, sub: str) -> dict | None:
    return stats(broker)["subscriptions"].get(sub)


def test_a_replicated_subscription_resumes_in_the_other_cluster_near_where_it_was(pair):
    """A subscription with ``replicateSubscriptionState`` acknowledged in east moves in west too:
    east asks west for snapshots of where it stands while east publishes (every second), and the
    acknowledgement's newest passed snapshot is sent to west as an UPDATE, which creates the
    subscription there (replicated) at west's position of that snapshot. A consumer failing over
    to west then gets every message east did not acknowledge (nothing lost) and at most what was
    published within about a snapshot interval before the acknowledgement again. No marker ever
    reaches a consumer."""
    a, b = pair
    ca, cb = pulsar.Client(a.url), pulsar.Client(b.url)
    try:
        consumer = ca.subscribe(
            TOPIC,
            "rs",
            initial_position=pulsar.InitialPosition.Earliest,
            replicate_subscription_state_enabled=True,
        )
        assert sub_stats(a, "rs")["isReplicated"] is True  # type: ignore[index]
        p = ca.create_producer(TOPIC, batching_enabled=False)
        rate, n, acked = 100, 1000, 600
        for i in range(n):
            p.send(b"m-%04d" % i)
            time.sleep(1 / rate)  # paced: snapshots (every second) fall between the messages
        got = []
        for _ in range(acked):
            m = consumer.receive(timeout_millis=30000)
            got.append(m.data())
            consumer.acknowledge(m)
        assert got == [b"m-%04d" % i for i in range(acked)]
        # The rest, not acknowledged.
        rest = []
        while True:
            try:
                rest.append(consumer.receive(timeout_millis=3000).data())
            except pulsar.Timeout:
                break
        assert rest == [b"m-%04d" % i for i in range(acked, n)], "every message once, no marker"
        # West's subscription appears (created by the update) and its backlog shrinks.
        wait_for(
            "west's subscription moved by an update",
            lambda: (s := sub_stats(b, "rs")) is not None and s["msgBacklog"] < n,
            timeout=30,
        )
        west = sub_stats(b, "rs")
        assert west["isReplicated"] is True, west  # type: ignore[index]
        status = ok(
            "GET",
            f"{b.http}/admin/v2/persistent/{TOPIC.removeprefix('persistent://')}/subscription/rs/replicatedSubscriptionStatus",
        )
        assert status == {TOPIC: True}, status
        consumer.close()
        failover = cb.subscribe(TOPIC, "rs", replicate_subscription_state_enabled=True)
        resumed = [m.data() for m in receive_all(failover, 1, idle_ms=3000)]
        first = int(resumed[0].removeprefix(b"m-"))
        print(f"west resumed at message {first}; east acknowledged {acked}")
        assert first <= acked, f"west resumed at {first}: acknowledged messages only may be skipped"
        # Snapshots every second at 100 msg/s: the snapshot passed lies at most about an
        # interval plus a round trip before the acknowledgement (measured: 30 messages); the
        # bound leaves room for a loaded machine. Without snapshots, west would start at 0.
        assert acked - first <= 4 * rate, f"west resumed at {first}, {acked - first} before the acknowledgement"
        assert resumed == [b"m-%04d" % i for i in range(first, n)], "nothing lost or reordered"
        # Pulsar's snapshot families, broker-wide (only their presence and form: a snapshot is
        # pending for milliseconds, and one times out after 30 s).
        with urllib.request.urlopen(f"{a.http}/metrics", timeout=30) as r:
            metrics = r.read().decode()
        for family in ("pending_snapshots", "timedout_snapshots"):
            assert re.search(rf'^pulsar_replicated_subscriptions_{family}{{cluster="east"}} \d+$', metrics, re.M), (
                family
            )
        # The snapshots that moved west's cursor completed on east, each timed.
        done = re.search(r'^pulsar_replicated_subscriptions_snapshot_ms_count\{cluster="east"\} (\d+)$', metrics, re.M)
        took = re.search(r'^pulsar_replicated_subscriptions_snapshot_ms_sum\{cluster="east"\} (\d+)', metrics, re.M)
        assert done and int(done.group(1)) >= 1 and took, metrics
    finally:
        ca.close()
        cb.close()


def test_replicated_subscription_status_is_set_and_read_as_pulsars(pair):
    a, _ = pair
    c = pulsar.Client(a.url)
    try:
        c.subscribe(TOPIC, "plain").close()
        url = f"{a.http}/admin/v2/persistent/{TOPIC.removeprefix('persistent://')}/subscription"
        assert ok("GET", f"{url}/plain/replicatedSubscriptionStatus") == {TOPIC: False}
        assert call("POST", f"{url}/plain/replicatedSubscriptionStatus", True) == (204, None)
        assert ok("GET", f"{url}/plain/replicatedSubscriptionStatus") == {TOPIC: True}
        assert sub_stats(a, "plain")["isReplicated"] is True  # type: ignore[index]
        assert call("POST", f"{url}/plain/replicatedSubscriptionStatus", False) == (204, None)
        assert ok("GET", f"{url}/plain/replicatedSubscriptionStatus") == {TOPIC: False}
        status, _ = call("POST", f"{url}/missing/replicatedSubscriptionStatus", True)
        assert status == 404
    finally:
        c.close()


def test_the_cluster_records_credentials_reach_a_remote_that_requires_them(tmp_path):
    """West requires a token; east has no broker-client credentials of its own. Registered on
    east without credentials, west refuses east's replicator and the message waits on east's
    replication cursor; once west's record on east carries `authenticationPlugin` and
    `authenticationParameters` (Pulsar's `ClusterData` fields, read as Pulsar's
    `getReplicationClient` reads them: before this broker's `brokerClientAuthentication*`), the
    replicator's next attempt authenticates with them and everything arrives, in order."""
    admin_token = hs_token("admin")
    a = start(tmp_path, "east")
    west_conf = {
        "clusterName": "west",
        "brokerDeduplicationEnabled": False,
        "authenticationEnabled": True,
        "authenticationProviders": TOKEN_PROVIDER,
        "tokenSecretKey": SECRET_URL,
        "authorizationEnabled": True,
        "superUserRoles": "admin",
    }
    b = PulsarRsBroker(tmp_path, "west", west_conf)
    cb = client_for(b.url, admin_token)
    ca = pulsar.Client(a.url)
    try:

        def on_b(method: str, path: str, body: object | None = None) -> None:
            status, answer = http(method, f"{b.http}{path}", admin_token, body)
            assert status in (200, 204), (method, path, status, answer)

        tenant = {"adminRoles": [], "allowedClusters": ["east", "west"]}
        on_b("PUT", "/admin/v2/clusters/east", {"serviceUrl": a.http, "brokerServiceUrl": a.url})
        on_b("PUT", "/admin/v2/tenants/geo", tenant)
        on_b("PUT", "/admin/v2/namespaces/geo/ns")
        on_b("POST", "/admin/v2/namespaces/geo/ns/replication", ["east", "west"])
        register(a, "west", b)
        ok("PUT", f"{a.http}/admin/v2/tenants/geo", tenant)
        ok("PUT", f"{a.http}/admin/v2/namespaces/geo/ns")
        ok("POST", f"{a.http}/admin/v2/namespaces/geo/ns/replication", ["east", "west"])
        consumer = cb.subscribe(TOPIC, "s", initial_position=pulsar.InitialPosition.Earliest)
        producer = ca.create_producer(TOPIC, batching_enabled=False)
        producer.send(b"before")
        time.sleep(3)  # several attempts, each refused by west
        west = stats(a)["replication"]["west"]
        assert not west["connected"] and west["replicationBacklog"] == 1, west
        record = {
            "serviceUrl": b.http,
            "brokerServiceUrl": b.url,
            "authenticationPlugin": "org.apache.pulsar.client.impl.auth.AuthenticationToken",
            "authenticationParameters": f"token:{admin_token}",
        }
        ok("POST", f"{a.http}/admin/v2/clusters/west", record)
        producer.send(b"after")
        got = [consumer.receive(timeout_millis=60000).data() for _ in range(2)]
        assert got == [b"before", b"after"]
    finally:
        ca.close()
        cb.close()
        a.kill()
        b.kill()
