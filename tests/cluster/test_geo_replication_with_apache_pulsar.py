"""Geo-replication between an Apache Pulsar 4.0.8 cluster (its standalone) and a pulsar-rs cluster,
both ways: Pulsar's replicator publishes into pulsar-rs (its producer `pulsar.repl.apache-->rs`,
its lookups and schema calls answered here), and ours into Pulsar; each side's consumers get the
other's messages once, in order, with their keys and properties, and nothing goes back to where it
came from; and replicated subscriptions move both ways. Each cluster has its own metadata, set up
through its own admin API as an operator does; one pair serves the module's tests.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pulsar
import pytest
from test_geo_replication import call, ok, receive_all

from cluster_util import wait_for

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository's tools/
from tools.pulsar_reference import PulsarStandalone, available

from pulsar_rs.testing.process import PulsarRsBroker

if (why := available()) is not None:
    pytest.skip(f"no Apache Pulsar here: {why}", allow_module_level=True)

TOPIC = "persistent://geo/ns/mixed"
#: Messages a replicated subscription acknowledges before its consumer fails over.
ACKED = 600


@dataclass
class Pair:
    """An Apache Pulsar standalone (cluster ``apache``) and a pulsar-rs broker (cluster ``rs``)
    replicating ``geo/ns`` to each other, with a client on each."""

    java: PulsarStandalone
    rs: PulsarRsBroker
    cj: pulsar.Client
    cr: pulsar.Client


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    """One pair for the module's tests (each uses its own topics): each cluster set up through
    its own admin API, as an operator does."""
    with PulsarStandalone({"clusterName": "apache"}) as java:
        rs = PulsarRsBroker(tmp_path_factory.mktemp("rs"), "rs", {"clusterName": "rs"})
        try:
            sides = ((java.admin_url, "rs", rs.http, rs.url), (rs.http, "apache", java.admin_url, java.service_url))
            for admin, other, other_http, other_url in sides:
                ok(
                    "PUT",
                    f"{admin}/admin/v2/clusters/{other}",
                    {"serviceUrl": other_http, "brokerServiceUrl": other_url},
                )
                ok("PUT", f"{admin}/admin/v2/tenants/geo", {"adminRoles": [], "allowedClusters": ["apache", "rs"]})
                ok("PUT", f"{admin}/admin/v2/namespaces/geo/ns")
                ok("POST", f"{admin}/admin/v2/namespaces/geo/ns/replication", ["apache", "rs"])
                assert sorted(ok("GET", f"{admin}/admin/v2/namespaces/geo/ns/replication")) == ["apache", "rs"]  # type: ignore[arg-type]
            cj, cr = pulsar.Client(java.service_url), pulsar.Client(rs.url)
            try:
                yield Pair(java, rs, cj, cr)
            finally:
                cj.close()
                cr.close()
        finally:
            rs.kill()


def test_apache_pulsar_and_pulsar_rs_replicate_to_each_other(pair: Pair):
    java, rs, cj, cr = pair.java, pair.rs, pair.cj, pair.cr
    at_java = cj.subscribe(TOPIC, "s", initial_position=pulsar.InitialPosition.Earliest)
    at_rs = cr.subscribe(TOPIC, "s", initial_position=pulsar.InitialPosition.Earliest)
    n = 300
    for client, origin in ((cj, "apache"), (cr, "rs")):
        p = client.create_producer(TOPIC, producer_name=f"p-{origin}", batching_enabled=False)
        for i in range(n):
            p.send_async(f"{origin}-{i:04d}".encode(), None, partition_key=f"k{i}", properties={"i": str(i)})
        p.flush()
        p.close()
    for consumer, where in ((at_java, "apache"), (at_rs, "rs")):
        got = receive_all(consumer, 2 * n)
        bodies = [m.data().decode() for m in got]
        assert len(bodies) == len(set(bodies)) == 2 * n, f"{where}: {len(bodies)}, {len(set(bodies))} distinct"
        for origin in ("apache", "rs"):
            mine = [m for m in got if m.data().decode().startswith(origin)]
            assert [m.data().decode() for m in mine] == [f"{origin}-{i:04d}" for i in range(n)], where
            assert [m.partition_key() for m in mine] == [f"k{i}" for i in range(n)], where
            assert [m.properties()["i"] for m in mine] == [str(i) for i in range(n)], where
        consumer.close()
    # Pulsar's view of our replicator and ours of Pulsar's, in each side's stats.
    local = TOPIC.removeprefix("persistent://")
    for admin, remote in ((java.admin_url, "rs"), (rs.http, "apache")):
        wait_for(
            f"{remote}'s replication caught up",
            lambda admin=admin, remote=remote: (
                call("GET", f"{admin}/admin/v2/persistent/{local}/stats")[1]["replication"]  # type: ignore[index]
                .get(remote, {})
                .get("replicationBacklog")
                == 0
            ),
        )


def failover_position(
    publish_at: pulsar.Client, ack_at: pulsar.Client, resume_at: pulsar.Client, sub: str, resume_stats: str
) -> int:
    """Publishes 800 messages at 100 msg/s into ``publish_at``'s cluster while a replicated
    subscription of ``ack_at``'s cluster consumes them, acknowledges the first 600 there, waits
    for the other cluster's subscription to be moved (``resume_stats``: its topic stats URL), and
    returns the index of the first message a consumer of ``resume_at``'s cluster gets (checking
    it gets every message from there on)."""
    topic = f"{TOPIC}-{sub}"
    consumer = ack_at.subscribe(
        topic, sub, initial_position=pulsar.InitialPosition.Earliest, replicate_subscription_state_enabled=True
    )
    p = publish_at.create_producer(topic, batching_enabled=False)
    n, acked = 800, ACKED
    for i in range(n):
        p.send(b"m-%04d" % i)
        time.sleep(0.01)  # paced: snapshots (every second) fall between the messages
    for i in range(acked):
        m = consumer.receive(timeout_millis=30000)
        assert m.data() == b"m-%04d" % i
        consumer.acknowledge(m)
    stats_url = f"{resume_stats}/admin/v2/persistent/{topic.removeprefix('persistent://')}/stats"
    wait_for(
        f"{sub} moved in the other cluster",
        lambda: (
            (s := call("GET", stats_url)[1]["subscriptions"].get(sub)) is not None  # type: ignore[index]
            and s["msgBacklog"] < n
        ),
        timeout=60,
    )
    consumer.close()
    resumed = [m.data() for m in receive_all(resume_at.subscribe(topic, sub), 1, idle_ms=3000)]
    first = int(resumed[0].removeprefix(b"m-"))
    print(f"{sub}: resumed at message {first}, acknowledged {acked}")
    assert resumed == [b"m-%04d" % i for i in range(first, n)], "nothing lost or reordered"
    assert first <= acked, f"resumed at {first}: only acknowledged messages may be skipped"
    return first


def test_replicated_subscriptions_between_apache_pulsar_and_pulsar_rs(pair: Pair):
    """Replicated subscriptions both ways: Pulsar's snapshot requests answered by pulsar-rs and its
    UPDATE applied here; pulsar-rs's requests answered by Pulsar and our UPDATE applied by Pulsar.
    Either way the other cluster's subscription resumes about a snapshot interval (1 s, at 100
    msg/s) before where it was acknowledged (measured: 53 and 44 messages; the bound, 400, leaves
    room for a loaded machine; without snapshots it would resume at 0)."""
    # Acknowledged in Apache Pulsar, resumed in pulsar-rs.
    first = failover_position(pair.cj, pair.cj, pair.cr, "from-apache", pair.rs.http)
    assert ACKED - first <= 400, f"pulsar-rs resumed {ACKED - first} messages before the ack"
    # Acknowledged in pulsar-rs, resumed in Apache Pulsar.
    first = failover_position(pair.cr, pair.cr, pair.cj, "from-rs", pair.java.admin_url)
    assert ACKED - first <= 400, f"Apache Pulsar resumed {ACKED - first} messages before the ack"


def connected(admin: str, topic: str, remote: str) -> bool:
    """Whether ``topic``'s replicator to ``remote`` is connected, in its stats at ``admin``."""
    _, stats = call("GET", f"{admin}/admin/v2/persistent/{topic.removeprefix('persistent://')}/stats")
    return stats["replication"].get(remote, {}).get("connected") is True  # type: ignore[index]


def test_each_replicator_is_deduplicated_by_source_position_on_the_other_side(pair: Pair):
    """Both brokers negotiate Pulsar 4.0.4's dedup by source position with each other's replicator.
    In a namespace that only the receiving side deduplicates, two source producers named alike
    publish one after the other from sequence id 0: deduplicated by the messages' own producer and
    sequence id, the second's would be dropped; by source position each arrives once (and every
    replicated message carries its `__MSG_PROP_REPL_SOURCE_POSITION`)."""
    java, rs = (pair.cj, pair.java.admin_url), (pair.cr, pair.rs.http)
    for (source, source_admin), (target, target_admin), where in ((java, rs, "rs"), (rs, java, "apache")):
        ns = f"geo/dedup-at-{where}"
        for admin in (pair.java.admin_url, pair.rs.http):
            ok("PUT", f"{admin}/admin/v2/namespaces/{ns}")
            ok("POST", f"{admin}/admin/v2/namespaces/{ns}/replication", ["apache", "rs"])
        ok("POST", f"{target_admin}/admin/v2/namespaces/{ns}/deduplication", True)
        topic = f"persistent://{ns}/t"
        consumer = target.subscribe(topic, "s", initial_position=pulsar.InitialPosition.Earliest)
        # The source topic loaded and its replicator connected before anything is published.
        source.subscribe(topic, "s").close()
        wait_for(f"the replicator to {where} connected", lambda a=source_admin, t=topic, w=where: connected(a, t, w))
        sent = []
        for turn in range(2):
            p = source.create_producer(topic, producer_name="same", batching_enabled=False)
            for seq in range(5):
                body = b"turn-%d-%d" % (turn, seq)
                p.send(body, sequence_id=seq)
                sent.append(body)
            p.close()
        msgs = receive_all(consumer, len(sent))
        assert [m.data() for m in msgs] == sent, f"at {where}"
        positions = [m.properties().get("__MSG_PROP_REPL_SOURCE_POSITION") for m in msgs]
        assert all(positions) and len(set(positions)) == len(sent), (where, positions)
        consumer.close()
