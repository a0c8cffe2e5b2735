"""Transactions in a cluster of three pulsar-rs brokers on real ZooKeeper and bookies (issue 35,
item 6): a coordinator is served by the broker that owns its assign partition's bundle, END_TXN
reaches the topics other brokers own over the binary protocol (END_TXN_ON_PARTITION /
END_TXN_ON_SUBSCRIPTION to each owner, Pulsar's ``TransactionBufferClient``), and when the
coordinator's broker dies another one replays its log from the bookies and finishes what was
open.

The transactional client is ``tests/txn_wire.py`` (the official Python client has none), each of
its connections opened at the broker a lookup names, as a client's are; readers are the official
client's. The Java client's whole ``TransactionTest`` runs on the same cluster in
``test_java_transaction_suite_on_three_brokers``.
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pulsar
import pytest

import txn_wire as tw

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository's tools/
from tools.pulsar_reference import available

from cluster_util import by_url, client, cluster_broker, get, lookup, read_all, three_bookies, topics_owned, wait_for
from pulsar_rs import Admin
from pulsar_rs.testing.bookkeeper import BookKeeperCluster
from pulsar_rs.testing.process import PulsarRsBroker, wait_for_cluster
from token_util import SECRET_URL, TOKEN_PROVIDER, hs_token

if (why := available()) is not None:
    pytest.skip(f"no BookKeeper here: {why}", allow_module_level=True)

pytestmark = [pytest.mark.slow]

TC0 = f"{tw.ASSIGN_TOPIC}-partition-0"


@pytest.fixture(scope="module")
def bookies() -> Iterator[BookKeeperCluster]:
    yield from three_bookies()


@pytest.fixture
def brokers(tmp_path: Path, bookies: BookKeeperCluster) -> Iterator[list[PulsarRsBroker]]:
    started: list[PulsarRsBroker] = []
    try:
        for name in ("t0", "t1", "t2"):
            started.append(cluster_broker(tmp_path, bookies, name, transactionCoordinatorEnabled=True))
        wait_for_cluster(started)
        yield started
    finally:
        for b in started:
            b.stop()


def coordinator(brokers: list[PulsarRsBroker], via: PulsarRsBroker) -> tuple[PulsarRsBroker, tw.TxnWire]:
    """The broker serving TC 0 (found by lookup through ``via``) and a connection to it with the
    coordinator connected, as the Java client's handler makes it."""
    owner = by_url(brokers, lookup(via, TC0))
    conn = tw.TxnWire(owner.url)
    assert conn.partitions(tw.ASSIGN_TOPIC) >= 1
    conn.connect_coordinator(0)
    return owner, conn


def test_commit_and_abort_reach_the_topics_other_brokers_own(brokers):
    tc_broker, tc = coordinator(brokers, brokers[0])
    others = [b for b in brokers if b is not tc_broker]
    # Only the assign partition's owner serves the coordinator (Pulsar's checkTopicNsOwnership):
    # another broker loading it would fence the owner's log.
    with tw.TxnWire(others[0].url) as elsewhere, pytest.raises(tw.TxnError) as refused:
        elsewhere.connect_coordinator(0)
    assert refused.value.code == "ServiceNotReady", refused.value
    # One topic on the coordinator's broker, one on each other broker.
    topics = topics_owned(brokers, "xtc", [tc_broker.url, others[0].url, others[1].url])
    conns = {b.url: tw.TxnWire(b.url) for b in brokers}
    c = client(brokers)
    try:
        for pid, t in enumerate(topics):
            conns[lookup(brokers[0], t)].producer(t, pid)
        committed, aborted = tc.new_txn(), tc.new_txn()
        for txn, tag in ((committed, b"c"), (aborted, b"a")):
            for pid, t in enumerate(topics):
                tc.add_partition(txn, t)
                conns[lookup(brokers[0], t)].send(pid, tag + b"-%d" % pid, txn)
        # Open: nothing visible anywhere.
        for t in topics:
            assert read_all(c, t, 0, 1500) == [], t
        tc.end_txn(committed, commit=True)
        # The abort is an operator's (`transactions abort-transaction`) through a broker that
        # does not serve the coordinator: the call reaches the coordinator's owner.
        Admin(others[1].http).transactions.abort_transaction(*aborted)
        for pid, t in enumerate(topics):
            assert read_all(c, t, 1) == [b"c-%d" % pid], f"{t}: the committed message only"
        for b in brokers:  # `transactions coordinators-list` through any broker
            listed = Admin(b.http).transactions.coordinators()
            assert listed[0] == {"id": 0, "brokerServiceUrl": tc_broker.url}, (b.name, listed)
        # Both transactions are finished at the coordinator: a second commit finds none.
        with pytest.raises(tw.TxnError) as e:
            tc.end_txn(committed, commit=True)
        assert e.value.code == "TransactionNotFound"
    finally:
        c.close()
        tc.close()
        for conn in conns.values():
            conn.close()


def test_transactional_acks_on_another_brokers_topic(brokers):
    tc_broker, tc = coordinator(brokers, brokers[0])
    other = next(b for b in brokers if b is not tc_broker)
    (topic,) = topics_owned(brokers, "xack", [other.url])
    c = client(brokers)
    p = c.create_producer(topic, batching_enabled=False)
    for i in range(2):
        p.send(b"m%d" % i)
    p.close()
    consumer = tw.TxnWire(other.url)
    try:
        consumer.subscribe(topic, "s", 1, shared=True)
        consumer.flow(1, 10)
        first, second = consumer.receive(10), consumer.receive(10)
        assert first and second and {first.payload, second.payload} == {b"m0", b"m1"}
        kept, dropped = tc.new_txn(), tc.new_txn()
        tc.add_subscription(kept, topic, "s")
        tc.add_subscription(dropped, topic, "s")
        consumer.ack_txn(1, kept, [first.position])
        consumer.ack_txn(1, dropped, [second.position])
        tc.end_txn(kept, commit=True)
        tc.end_txn(dropped, commit=False)
        # The aborted ack gives its message back (redelivered); the committed one is gone.
        again = consumer.receive(10)
        assert again is not None and again.payload == second.payload
        assert consumer.receive(2) is None
    finally:
        consumer.close()
        tc.close()
        c.close()
    status = pulsar_stats(brokers[0], topic)
    assert status["subscriptions"]["s"]["msgBacklog"] == 1, status


def pulsar_stats(via: PulsarRsBroker, topic: str) -> dict:
    local = topic.removeprefix("persistent://")
    code, body, _ = get(f"{via.http}/admin/v2/persistent/{local}/stats")
    assert code == 200 and isinstance(body, dict), body
    return body


def test_a_dead_coordinators_transactions_are_finished_by_its_successor(brokers):
    tc_broker, tc = coordinator(brokers, brokers[0])
    others = [b for b in brokers if b is not tc_broker]
    topics = topics_owned(brokers, "xkill", [others[0].url, others[1].url])
    conns = {b.url: tw.TxnWire(b.url) for b in others}
    txn = tc.new_txn(ttl_ms=300_000)
    doomed = tc.new_txn(ttl_ms=300_000)
    for pid, t in enumerate(topics):
        tc.add_partition(txn, t)
        tc.add_partition(doomed, t)
        owner = conns[lookup(others[0], t)]
        owner.producer(t, pid)
        owner.send(pid, b"kept-%d" % pid, txn)
        owner.send(pid, b"gone-%d" % pid, doomed)
    tc.close()
    tc_broker.kill()
    killed = time.monotonic()
    # The survivors expire its session, and a lookup places TC 0 on one of them, which replays
    # the coordinator's log from the bookies.
    wait_for("a survivor owns TC 0", lambda: lookup(others[0], TC0) in {b.url for b in others}, timeout=90)
    successor, tc2 = coordinator(others, others[0])
    moved_after = time.monotonic() - killed
    c = client(others)
    try:
        tc2.end_txn(txn, commit=True)
        tc2.end_txn(doomed, commit=False)
        for pid, t in enumerate(topics):
            assert read_all(c, t, 1) == [b"kept-%d" % pid], t
        # The successor hands out new transactions after the dead one's (its sequence replayed).
        assert tc2.new_txn()[1] > doomed[1]
    finally:
        c.close()
        tc2.close()
        for conn in conns.values():
            conn.close()
    print(f"coordinator takeover: {successor.name} served TC 0 {moved_after:.1f} s after the kill")


def test_a_held_ack_outlives_the_broker_that_took_it(brokers):
    """A transactional ack is logged in the subscription's pending-ack ledger on the bookies
    (Pulsar's ``MLPendingAckStore``): the topic's owner dies with the ack held, the broker that
    takes the topic replays the log, and the commit applies the ack there."""
    tc_broker, tc = coordinator(brokers, brokers[0])
    victim = next(b for b in brokers if b is not tc_broker)
    survivors = [b for b in brokers if b is not victim]
    (topic,) = topics_owned(brokers, "xheld", [victim.url])
    c = client(brokers)
    p = c.create_producer(topic, batching_enabled=False)
    for i in range(2):
        p.send(b"m%d" % i)
    p.close()
    c.close()
    consumer = tw.TxnWire(victim.url)
    consumer.subscribe(topic, "s", 1, shared=True)
    consumer.flow(1, 10)
    first, second = consumer.receive(10), consumer.receive(10)
    assert first and second
    txn = tc.new_txn(ttl_ms=300_000)
    tc.add_subscription(txn, topic, "s")
    consumer.ack_txn(1, txn, [first.position])
    victim.kill()
    consumer.close()
    wait_for("a survivor owns the topic", lambda: lookup(survivors[0], topic) in {b.url for b in survivors}, timeout=90)
    try:
        tc.end_txn(txn, commit=True)
    finally:
        tc.close()
    stats = pulsar_stats(survivors[0], topic)
    assert stats["subscriptions"]["s"]["msgBacklog"] == 1, stats
    c = client(survivors)
    try:
        again = c.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Shared)
        assert again.receive(timeout_millis=10_000).data() == second.payload
        with pytest.raises(pulsar.Timeout):
            again.receive(timeout_millis=2000)
    finally:
        c.close()
    local = topic.rsplit("/", 1)[1]
    internal = get(f"{survivors[0].http}/admin/v3/transactions/pendingAckInternalStats/public/default/{local}/s")
    assert internal[0] == 200, internal
    assert internal[1]["pendingAckLogStats"]["managedLedgerName"].endswith("-s__transaction_pending_ack"), internal


def test_java_transaction_suite_on_three_brokers(brokers, tmp_path):
    """The Java client's own ``TransactionTest`` (tests/java) with its client on the cluster:
    its topics spread over the three brokers' bundles and its coordinator on one of them."""
    for tool in ("mvn", "java"):
        if shutil.which(tool) is None:
            pytest.skip(f"`{tool}` is not installed")
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "java"))
    from test_java_client import JAVA_DIR, read_reports, run_maven

    project = tmp_path / "java"
    shutil.copytree(JAVA_DIR, project, ignore=shutil.ignore_patterns("target", "__pycache__", "*.py"))
    b = brokers[0]
    result = run_maven(project, b.url, b.http, b.url, b.http, only="TransactionTest")
    s = read_reports(project / "target" / "surefire-reports")
    print(f"java TransactionTest on three brokers: {s.passed} passed, {s.failures + s.errors} failed of {s.tests}")
    assert not s.failed, "failing Java tests:\n" + "\n".join(s.failed)
    assert s.tests >= 10 and s.passed == s.tests - s.skipped, s
    assert result.returncode == 0, result.stdout[-5000:]


def test_brokers_end_transactions_on_each_other_with_their_own_credentials(tmp_path, bookies):
    """Authentication and authorization on: the coordinator's broker reaches the topic's owner
    with ``brokerClientAuthenticationPlugin`` / ``brokerClientAuthenticationParameters`` (a token
    of the ``broker`` role, a superuser), which END_TXN_ON_PARTITION requires there."""
    admin = hs_token("admin")
    conf = {
        "transactionCoordinatorEnabled": True,
        "authenticationEnabled": True,
        "authenticationProviders": TOKEN_PROVIDER,
        "tokenSecretKey": SECRET_URL,
        "authorizationEnabled": True,
        "superUserRoles": "admin,broker",
        "brokerClientAuthenticationPlugin": "org.apache.pulsar.client.impl.auth.AuthenticationToken",
        "brokerClientAuthenticationParameters": f"token:{hs_token('broker')}",
    }
    started: list[PulsarRsBroker] = []
    try:
        for name in ("s0", "s1"):
            started.append(cluster_broker(tmp_path, bookies, name, **conf))
        wait_for_cluster(started, token=admin)
        tc_broker = by_url(started, lookup(started[0], TC0, admin))
        other = next(b for b in started if b is not tc_broker)
        (topic,) = topics_owned(started, "auth", [other.url], admin)
        with tw.TxnWire(tc_broker.url, token=admin) as tc, tw.TxnWire(other.url, token=admin) as prod:
            tc.connect_coordinator(0)
            prod.producer(topic, 0)
            txn = tc.new_txn()
            tc.add_partition(txn, topic)
            prod.send(0, b"sealed", txn)
            # The commit marker is written on `other` over the coordinator broker's connection.
            tc.end_txn(txn, commit=True)
        c = pulsar.Client(other.url, authentication=pulsar.AuthenticationToken(admin))
        try:
            assert read_all(c, topic, 1) == [b"sealed"]
        finally:
            c.close()
    finally:
        for b in started:
            b.stop()
