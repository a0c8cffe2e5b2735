"""pulsar-rs with its topics on Apache BookKeeper: real ZooKeeper and four bookies from the pinned
Apache Pulsar distribution, the official Python client, E=3 Qw=2 Qa=2 (README, "Run on BookKeeper").

* A topic outlives its broker *and its broker's disk*: a bookie is SIGKILLed while producing (the
  ledger's ensemble changes, publishing goes on), then the broker is SIGKILLed; a new broker with an
  empty data directory serves every receipted message from the bookies, with the subscription's
  acknowledgements.
* A broker frozen past its metadata-store session loses the topic to the other broker, which
  fences its ledger: the sends it held while frozen cannot land there; whoever held the topic
  when, every receipted message is in the log (the brokers form one cluster; tests/cluster has
  the rest of it).
* The ``persistence`` policy (namespace, then topic) chooses E/Qw/Qa of each new ledger, a
  rollover included, as BookKeeper's own shell reads them from the ledgers' metadata.
* Apache Pulsar 4.0.8 on the same ZooKeeper and bookies serves a topic pulsar-rs wrote, with the
  subscription where pulsar-rs left it, and pulsar-rs serves a topic Apache Pulsar wrote: the same
  entries, ledger lists and cursors, in Pulsar's formats.
* An export of the store (``pulsar-rs export --metadata-store-url``) while pulsar-rs, and while
  Apache Pulsar, write a topic reads its entries and cursors from the bookies (Pulsar's cursor
  ledger too) and fences nothing: both brokers go on with the same ledgers; the Spark jobs'
  backlog over that snapshot is the cursor's.
* A seek by time on the bookies, across a closed ledger and the one being written.
* Compaction on the bookies in Pulsar's format: a new owner, Apache Pulsar and pulsar-rs serve
  each other's compacted views.
* Expiry by age, a backlog quota and retention's trimming on the bookies.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pulsar
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository's tools/
from tools.pulsar_reference import PulsarReferenceError, available

from pulsar_rs import Admin
from pulsar_rs.testing.bookkeeper import PULSAR_CLUSTER, BookKeeperCluster
from pulsar_rs.testing.process import PulsarRsBroker, wait_for_cluster

if (why := available()) is not None:
    pytest.skip(f"no BookKeeper here: {why}", allow_module_level=True)


@pytest.fixture(scope="module")
def bookies() -> Iterator[BookKeeperCluster]:
    try:
        cluster = BookKeeperCluster(bookies=4).start()
    except PulsarReferenceError as e:
        pytest.fail(str(e))
    yield cluster
    cluster.cleanup()


def start_broker(tmp: Path, bk: BookKeeperCluster, name: str) -> tuple[PulsarRsBroker, str]:
    """``pulsar-rs standalone`` on the bookies, with a data directory of its own; (broker, URL)."""
    conf = {
        "metadataStoreUrl": bk.metadata_store_url,
        "clusterName": PULSAR_CLUSTER,  # the cluster Apache Pulsar's brokers here join
        "managedLedgerDefaultEnsembleSize": 3,
        "managedLedgerDefaultWriteQuorum": 2,
        "managedLedgerDefaultAckQuorum": 2,
        "managedLedgerMaxEntriesPerLedger": 40,
        "managedLedgerMinLedgerRolloverTimeMinutes": 0,
        "brokerDeduplicationEnabled": False,
        # The brokers form one cluster on this ZooKeeper: a killed broker's bundles go to the
        # others when its session expires (ZooKeeperServerMain's shortest: 6 s).
        "metadataStoreSessionTimeoutMillis": 6000,
    }
    try:
        b = PulsarRsBroker(tmp, name, conf)
    except PulsarReferenceError as e:
        pytest.fail(str(e))
    return b, b.url


@contextlib.contextmanager
def serving(tmp: Path, bk: BookKeeperCluster, name: str, topic: str) -> Iterator[tuple[Admin, pulsar.Client]]:
    """A broker on the bookies that owns ``topic`` (a lookup placed its bundle there), its admin
    client and a client, all closed afterwards."""
    broker, url = start_broker(tmp, bk, name)
    with broker:
        wait_for_cluster([broker], PULSAR_CLUSTER)
        owner_url(broker, topic)
        c = client(url)
        try:
            yield Admin(broker.http), c
        finally:
            c.close()


def owner_url(via: PulsarRsBroker, topic: str) -> str:
    """The broker URL a REST lookup through ``via`` ends at (its 307s followed)."""
    local = topic.removeprefix("persistent://")
    with urllib.request.urlopen(f"{via.http}/lookup/v2/topic/persistent/{local}", timeout=30) as r:
        return json.loads(r.read())["brokerUrl"]


def client(url: str) -> pulsar.Client:
    return pulsar.Client(
        url,
        operation_timeout_seconds=30,
        connection_timeout_ms=3000,
        logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error),
    )


def drain(c: pulsar.Client, topic: str, sub: str, expect: int) -> list[bytes]:
    consumer = c.subscribe(topic, sub, initial_position=pulsar.InitialPosition.Earliest)
    got: list[bytes] = []
    try:
        while True:
            try:
                m = consumer.receive(timeout_millis=5000 if len(got) >= expect else 20000)
            except pulsar.Timeout:
                return got
            got.append(m.data())
            consumer.acknowledge(m)
    finally:
        consumer.close()


def test_topic_outlives_a_bookie_its_broker_and_its_disk(tmp_path, bookies):
    topic = "persistent://public/default/outlives-its-broker"
    a, url = start_broker(tmp_path, bookies, "a")
    receipted: list[bytes] = []
    lock = threading.Lock()
    try:
        ca = client(url)
        ca.subscribe(topic, "sub").close()  # the durable subscription exists before the crash
        producer = ca.create_producer(topic, batching_enabled=False, send_timeout_millis=5000, block_if_queue_full=True)

        def sent(i: int):
            def done(res, _msg_id) -> None:
                if res == pulsar.Result.Ok:
                    with lock:
                        receipted.append(b"m-%05d" % i)

            return done

        for i in range(150):
            producer.send(b"m-%05d" % i)  # synchronous: receipted once this returns
            receipted.append(b"m-%05d" % i)
        # A bookie of the current ensemble dies: the ledger's ensemble changes, publishing goes on.
        victim = next(iter(bookies.bookies))
        bookies.kill_bookie(victim)
        for i in range(150, 300):
            producer.send(b"m-%05d" % i)
            receipted.append(b"m-%05d" % i)
        # Then the broker dies with sends in flight.
        for i in range(300, 600):
            producer.send_async(b"m-%05d" % i, sent(i))
        time.sleep(0.05)  # let some of them reach the bookies (not a wait for a condition)
        a.kill()
        # The producer may be reconnecting to the killed broker, so its CLOSE_PRODUCER cannot be
        # sent (NotConnected: CI of c9d96c1 saw this). Its only service URL is the dead broker's,
        # so nothing more reaches the bookies through it either way.
        with contextlib.suppress(pulsar.NotConnected):
            ca.close()  # fails the sends still pending; their callbacks saw no receipt
    finally:
        a.kill()
    with lock:
        acked = set(receipted)
    assert len(acked) >= 300

    # A new broker with an empty data directory: everything comes from ZooKeeper and the bookies.
    b, url_b = start_broker(tmp_path, bookies, "b")
    try:
        wait_for_cluster([b], PULSAR_CLUSTER)  # a's registration lapses with its session
        cb = client(url_b)
        got = drain(cb, topic, "sub", len(acked))
        cb.close()
    finally:
        b.kill()
    lost = acked - set(got)
    assert not lost, f"{len(lost)} receipted messages lost, e.g. {sorted(lost)[:5]}"
    assert got == sorted(got), "stored in send order"
    assert len(got) == len(set(got)), "no duplicates"
    bookies.start_bookie(99)


def test_a_broker_that_lost_its_session_cannot_write_after_the_new_owner_fenced_it(tmp_path, bookies):
    """Pulsar's `ZkSessionExpireTest`: the owner is frozen (SIGSTOP) past its session timeout, so
    the other broker takes the bundle and opens the topic, fencing the old owner's ledger on the
    bookies. The old owner wakes with sends in its socket: they cannot land in the fenced
    ledger; it gives the topic up, its client looks it up again and resends to the new owner."""
    a, url_a = start_broker(tmp_path, bookies, "a2")
    with a, start_broker(tmp_path, bookies, "b2")[0] as b:
        url_b = b.url
        # The first test's brokers were killed: wait until their sessions have expired (they
        # stay registered, and may stay leader, until then) so lookups end at a live broker.
        wait_for_cluster([a, b], PULSAR_CLUSTER)
        # A topic whose bundle a owns (the leader places a new bundle on the less loaded broker).
        names = (f"persistent://public/default/fenced-owner-{i}" for i in range(64))
        topic = next(t for t in names if owner_url(a, t) == url_a)
        receipted = _freeze_the_owner_while_the_other_takes_over(tmp_path, topic, a, url_a, url_b)
    # Whoever owned the topic when: a broker with an empty data directory serves every receipt.
    c_proc, url_c = start_broker(tmp_path, bookies, "c2")
    try:
        wait_for_cluster([c_proc], PULSAR_CLUSTER)
        cc = client(url_c)
        got = drain(cc, topic, "check", len(receipted))
        cc.close()
    finally:
        c_proc.kill()
    lost = set(receipted) - set(got)
    assert not lost, f"receipted and lost: {sorted(lost)}"
    assert len(got) == len(set(got)), f"duplicates: {got}"
    assert got[:50] == [b"a-%03d" % i for i in range(50)]


def _freeze_the_owner_while_the_other_takes_over(
    tmp_path: Path, topic: str, a: PulsarRsBroker, url_a: str, url_b: str
) -> list[bytes]:
    """Produces to ``a``, freezes it with sends in flight, lets the broker at ``url_b`` take the
    topic over; the messages receipted (by either broker)."""
    ca = cb = None
    receipted: list[bytes] = []
    lock = threading.Lock()
    try:
        ca = client(url_a)
        # A durable subscription keeps the entries (retention 0 trims what no cursor needs).
        ca.subscribe(topic, "check").close()
        pa = ca.create_producer(topic, batching_enabled=False, send_timeout_millis=60000)
        for i in range(50):
            pa.send(b"a-%03d" % i)
            receipted.append(b"a-%03d" % i)
        a.signal(signal.SIGSTOP)
        settled = threading.Semaphore(0)
        try:
            # Sent to the frozen owner: they wait in its socket.
            def late(i: int):
                def done(res, _msg_id) -> None:
                    if res == pulsar.Result.Ok:
                        with lock:
                            receipted.append(b"late-%d" % i)
                    settled.release()

                return done

            for i in range(5):
                pa.send_async(b"late-%d" % i, late(i))
            # Past a's session the bundle is free: b takes it, recovering (fencing) a's ledger.
            cb = client(url_b)
            deadline = time.monotonic() + 60
            while True:
                try:
                    cb.create_producer(topic, batching_enabled=False).send(b"b-000")
                    break
                except pulsar.PulsarException:
                    if time.monotonic() > deadline:
                        raise
            receipted.append(b"b-000")
        finally:
            a.signal(signal.SIGCONT)
        for _ in range(5):
            assert settled.acquire(timeout=90), "every late send settles (receipt or error)"
        log = (tmp_path / "a2.log").read_text()
        assert "metadata store session lost" in log or "another owner fenced the topic" in log, log[-3000:]
    finally:
        for c in (ca, cb):
            with contextlib.suppress(Exception):
                c.close()
    return receipted


def test_apache_pulsar_and_pulsar_rs_serve_each_others_topics(tmp_path, bookies):
    ours, theirs = "persistent://public/default/written-by-pulsar-rs", "persistent://public/default/written-by-pulsar"
    sent = [b"rs-%02d" % i for i in range(30)]
    r, url = start_broker(tmp_path, bookies, "r")
    try:
        c = client(url)
        consumer = c.subscribe(ours, "s")
        producer = c.create_producer(ours, batching_enabled=False)
        for m in sent:
            producer.send(m)
        for _ in range(10):
            consumer.acknowledge(consumer.receive(timeout_millis=10000))
        c.close()
        r.stop()  # an orderly stop writes the cursor and closes the ledger
        assert r.proc.returncode == 0
    finally:
        r.kill()

    pulsar_broker = bookies.start_pulsar_broker()
    try:
        c = client(pulsar_broker.service_url)
        c.subscribe(ours, "fresh", initial_position=pulsar.InitialPosition.Earliest).close()
        assert drain(c, ours, "s", 20) == sent[10:], "Apache Pulsar resumes our subscription where we left it"
        assert drain(c, ours, "fresh", 30) == sent, "and serves every entry we wrote"
        c.subscribe(theirs, "s2").close()
        producer = c.create_producer(theirs, batching_enabled=False)
        for i in range(20):
            producer.send(b"java-%02d" % i)
        consumer = c.subscribe(theirs, "s2")
        for _ in range(5):
            consumer.acknowledge(consumer.receive(timeout_millis=10000))
        exported_while_pulsar_writes(bookies, pulsar_broker, theirs, producer, consumer)
        c.close()
    finally:
        pulsar_broker.stop(graceful=True)

    r2, url2 = start_broker(tmp_path, bookies, "r2")
    try:
        c = client(url2)
        expected = [b"java-%02d" % i for i in range(21)]
        # Made before s2 is drained: with retention 0, ledgers every cursor consumed are trimmed.
        c.subscribe(theirs, "fresh", initial_position=pulsar.InitialPosition.Earliest).close()
        assert drain(c, theirs, "s2", 15) == expected[6:], "we resume Apache Pulsar's subscription"
        assert drain(c, theirs, "fresh", 21) == expected, "and serve every entry it wrote"
        c.close()
    finally:
        r2.kill()


def pulsar_internal_stats(broker, topic: str) -> dict:
    local = topic.removeprefix("persistent://")
    with urllib.request.urlopen(f"{broker.admin_url}/admin/v2/persistent/{local}/internalStats", timeout=30) as r:
        return json.loads(r.read())


def exported_while_pulsar_writes(bookies, pulsar_broker, topic: str, producer, consumer) -> None:
    """A read-only export of the store while Apache Pulsar serves ``topic`` (20 sent, 5 of them
    acknowledged on ``s2``): Pulsar's entries and subscription are read, and nothing of Pulsar's
    is fenced: it goes on writing its ledger and its subscription's cursor ledger."""
    deadline = time.monotonic() + 30
    while True:  # Pulsar writes its acknowledgements to a cursor ledger it makes on the first one
        before = pulsar_internal_stats(pulsar_broker, topic)
        if before["cursors"]["s2"]["cursorLedgerLastEntry"] >= 0 or time.monotonic() > deadline:
            break
        time.sleep(0.5)  # poll: Apache Pulsar (a Java process) writes the cursor ledger
    assert before["cursors"]["s2"]["cursorLedger"] >= 0, before["cursors"]
    entries = export_rows(bookies.metadata_store_url, "entries", topic)
    assert 19 <= len(entries) <= 20 and {e["ledger_id"] for e in entries} == {before["ledgers"][-1]["ledgerId"]}
    subs = {r["subscription"]: r for r in export_rows(bookies.metadata_store_url, "subscriptions", topic)}
    # (Pulsar keeps a replicator's cursor, pulsar.repl.<cluster>, beside the subscription.)
    assert "s2" in subs and 0 <= subs["s2"]["mark_delete_entry"] <= 4, subs  # read from the cursor ledger
    time.sleep(1.2)  # past Pulsar's mark-delete rate limit (1/s): the next ack is written at once
    producer.send(b"java-20")
    consumer.acknowledge(consumer.receive(timeout_millis=10000))
    deadline = time.monotonic() + 20
    while True:
        after = pulsar_internal_stats(pulsar_broker, topic)
        cursor, was = after["cursors"]["s2"], before["cursors"]["s2"]
        wrote = cursor["cursorLedgerLastEntry"] > was["cursorLedgerLastEntry"]
        if wrote or time.monotonic() > deadline:
            break
        time.sleep(0.5)  # poll: Apache Pulsar (a Java process) writes the cursor entry
    assert after["ledgers"][-1]["ledgerId"] == before["ledgers"][-1]["ledgerId"], (before["ledgers"], after["ledgers"])
    assert after["currentLedgerEntries"] == 21, after
    assert cursor["cursorLedger"] == was["cursorLedger"] and wrote, (was, cursor)


def test_persistence_policies_choose_the_quorums_of_each_new_ledger(tmp_path, bookies):
    """The broker's defaults are E=3 Qw=2 Qa=2; a namespace policy of 3/3/2 applies to the
    topic's first ledger, a topic policy of 2/2/1 set while it is loaded to the ledger its
    rollover (40 entries) creates, and every message is still there."""
    topic = "persistent://public/default/quorums"
    broker, url = start_broker(tmp_path, bookies, "quorums")
    with broker:
        wait_for_cluster([broker], PULSAR_CLUSTER)
        admin = Admin(broker.http)
        admin.namespaces.set_persistence("public/default", 3, 3, 2)
        assert admin.namespaces.get_policy("public/default", "persistence")["bookkeeperWriteQuorum"] == 3
        owner_url(broker, topic)  # the lookup places the bundle here
        c = client(url)
        try:
            # A subscription holds the backlog, so no ledger is trimmed on the rollover.
            c.subscribe(topic, "all").close()
            p = c.create_producer(topic, batching_enabled=False)
            for i in range(10):
                p.send(f"m{i}".encode())
            first = admin.topics.internal_stats(topic)["ledgers"][-1]["ledgerId"]
            admin.topics.set_persistence(topic, 2, 2, 1)
            for i in range(10, 50):
                p.send(f"m{i}".encode())
            ledgers = [entry["ledgerId"] for entry in admin.topics.internal_stats(topic)["ledgers"]]
            p.close()
            assert ledgers[0] == first and len(ledgers) >= 2, ledgers
            assert bookies.ledger_quorums(first) == (3, 3, 2)
            assert bookies.ledger_quorums(ledgers[-1]) == (2, 2, 1)
            assert drain(c, topic, "all", 50) == [f"m{i}".encode() for i in range(50)]
        finally:
            c.close()


def export_rows(source: str, table: str, topic: str) -> list[dict]:
    """One table of a read-only export of the cluster on the bookies, the rows of one topic."""
    from pulsar_rs.export import snapshot_tables

    return [r for r in snapshot_tables(source)[table].to_pylist() if r["topic"] == topic]


def test_an_export_reads_a_live_topic_from_the_bookies_and_fences_nothing(tmp_path, bookies):
    """``pulsar-rs export --metadata-store-url zk:...`` (and ``snapshot_tables("zk:...")``) while a
    broker writes the topic: its entries come from the bookies (a closed ledger whole, the ledger
    being written up to its last add confirmed), with their keys and the subscription's
    acknowledgements; nothing is fenced: the broker goes on appending to the same ledger."""
    topic = "persistent://public/default/exported"
    with serving(tmp_path, bookies, "exporter", topic) as (admin, c):
        consumer = c.subscribe(topic, "s")
        producer = c.create_producer(topic, batching_enabled=False)
        for i in range(50):  # 40 in the first ledger (closed by the rollover), 10 in the next
            producer.send(f"m{i}".encode(), partition_key=f"k{i % 5}")
        for _ in range(20):
            consumer.acknowledge(consumer.receive(timeout_millis=10000))
        writing = admin.topics.internal_stats(topic)["ledgers"][-1]["ledgerId"]

        deadline = time.monotonic() + 30
        while True:  # the acknowledgements reach the store a moment after the acks
            subs = export_rows(bookies.metadata_store_url, "subscriptions", topic)
            if (subs and subs[0]["backlog_entries"] <= 30) or time.monotonic() > deadline:
                break
            time.sleep(0.5)  # poll: the client's acks and their cursor writes are asynchronous
        entries = export_rows(bookies.metadata_store_url, "entries", topic)
        assert 49 <= len(entries) <= 50, len(entries)  # the last one may be past the LAC
        assert [(e["key"], e["messages"]) for e in entries] == [(f"k{i % 5}", 1) for i in range(len(entries))]
        ledgers = sorted({e["ledger_id"] for e in entries})
        assert len(ledgers) == 2 and ledgers[1] == writing, (ledgers, writing)
        assert [e["entry_id"] for e in entries if e["ledger_id"] == ledgers[0]] == list(range(40))
        assert len(subs) == 1 and subs[0]["subscription"] == "s"
        assert (subs[0]["mark_delete_ledger"], subs[0]["mark_delete_entry"]) == (ledgers[0], 19), subs
        assert subs[0]["backlog_entries"] == len(entries) - 20, subs

        # The command line writes the same from the store, as Parquet for the Spark jobs.
        out = tmp_path / "snapshots"
        cli = [sys.executable, "-m", "pulsar_rs.cli", "export", "--metadata-store-url", bookies.metadata_store_url]
        done = subprocess.run([*cli, "--out", str(out)], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        manifest = json.loads(done.stdout)
        assert manifest["source"] == "bookkeeper" and manifest["tables"]["entries"] >= len(entries), manifest
        # The Spark jobs over it: the backlog they count from the entries and acknowledged
        # ranges read from the bookies is the one the cursor records.
        jobs = [sys.executable, "-m", "pulsar_rs_spark", "--master", "local[1]", "--driver-memory", "512m"]
        spark = subprocess.run(
            [*jobs, "--no-html", "--input", str(out), "--output", str(tmp_path / "results")],
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "spark")},
        )
        assert spark.returncode == 0, spark.stderr[-3000:]
        import pyarrow.parquet as pq

        backlog = [
            r
            for r in pq.read_table(tmp_path / "results" / "backlog").to_pylist()
            if r["topic"] == topic and r["subscription"] == "s"
        ]
        assert len(backlog) == 1 and backlog[0]["matches_broker"] is True, backlog
        assert backlog[0]["backlog_entries"] == len(entries) - 20, backlog
        bad = subprocess.run([*cli[:-1], "/tmp/zk", "--out", str(out)], capture_output=True, text=True, timeout=60)
        assert bad.returncode == 2 and "zk:host:port" in bad.stderr, bad.stderr

        # Not fenced: the broker appends to the ledger it was writing, it did not reopen the topic.
        for i in range(50, 60):
            producer.send(f"m{i}".encode(), partition_key=f"k{i % 5}")
        after = admin.topics.internal_stats(topic)
        assert after["ledgers"][-1]["ledgerId"] == writing, after["ledgers"]
        assert after["currentLedgerEntries"] == 20, after
        got = [consumer.receive(timeout_millis=10000).data() for _ in range(40)]
        assert got == [f"m{i}".encode() for i in range(20, 60)]


def test_a_seek_by_time_finds_the_first_message_published_at_or_after_it_on_the_bookies(tmp_path, bookies):
    """On the bookies an entry carries no append time of its own: a seek by time reads the
    publish times in the stored messages (as Pulsar's does), across a closed ledger and the one
    being written."""
    topic = "persistent://public/default/seek-by-time"
    broker, url = start_broker(tmp_path, bookies, "seeker")
    with broker:
        wait_for_cluster([broker], PULSAR_CLUSTER)
        owner_url(broker, topic)
        c = client(url)
        try:
            consumer = c.subscribe(topic, "s", initial_position=pulsar.InitialPosition.Earliest)
            producer = c.create_producer(topic, batching_enabled=False)
            for i in range(60):  # 40 in the first ledger, 20 in the second
                if i in (30, 45):
                    time.sleep(0.05)  # strictly later publish times from here on
                producer.send(f"m{i}".encode())
            received = [consumer.receive(timeout_millis=10000) for _ in range(60)]
            for m in received:
                consumer.acknowledge(m)
            for target in (45, 30):  # forwards into the second ledger, then back into the first
                consumer.seek(received[target].publish_timestamp())
                got = [consumer.receive(timeout_millis=10000).data() for _ in range(60 - target)]
                assert got == [f"m{i}".encode() for i in range(target, 60)], (target, got[:3])
        finally:
            c.close()


def read_compacted(url: str, topic: str) -> list[str]:
    """Every message a compacted reader from the earliest position receives."""
    c = client(url)
    try:
        reader = c.create_reader(topic, pulsar.MessageId.earliest, is_read_compacted=True)
        got = []
        while True:
            try:
                got.append(reader.read_next(timeout_millis=3000).data().decode())
            except pulsar.Timeout:
                return got
    finally:
        c.close()


def compact(admin_url: str, topic: str) -> None:
    """Pulsar's ``PUT .../compaction``, then its status until it is done."""
    path = f"{admin_url}/admin/v2/persistent/{topic.removeprefix('persistent://')}/compaction"
    urllib.request.urlopen(urllib.request.Request(path, method="PUT"), timeout=30).close()
    deadline = time.monotonic() + 60
    while True:
        with urllib.request.urlopen(path, timeout=30) as r:
            status = json.loads(r.read())
        if status["status"] == "SUCCESS":
            return
        assert status["status"] in ("RUNNING", "NOT_RUN") and time.monotonic() < deadline, status
        time.sleep(0.5)  # poll: the broker (a separate process) compacts in the background


def produce_keyed(url: str, topic: str, values: range) -> None:
    c = client(url)
    try:
        p = c.create_producer(topic, batching_enabled=False)
        for i in values:
            p.send(f"k{i % 5}={i}".encode(), partition_key=f"k{i % 5}")
    finally:
        c.close()


def test_a_compacted_view_on_the_bookies_is_served_by_any_broker_apache_pulsar_included(tmp_path, bookies):
    """Compaction on the bookies writes Pulsar's compacted ledger (a BookKeeper ledger of
    ``RawMessage`` entries named by the ``__compaction`` cursor): a broker with an empty data
    directory serves the compacted view pulsar-rs made, Apache Pulsar serves it too, and pulsar-rs
    serves the view Apache Pulsar compacted. A compacted reader gets the latest value per key
    (all 30 or 35 messages would mean the view was not found)."""
    topic = "persistent://public/default/compacted-on-bookies"
    latest = [f"k{i % 5}={i}" for i in range(25, 30)]
    r, url = start_broker(tmp_path, bookies, "compactor")
    with r:
        wait_for_cluster([r], PULSAR_CLUSTER)
        produce_keyed(url, topic, range(30))
        compact(r.http, topic)
        assert read_compacted(url, topic) == latest
        r.stop()
    r2, url2 = start_broker(tmp_path, bookies, "compacted-reader")
    with r2:
        wait_for_cluster([r2], PULSAR_CLUSTER)
        assert read_compacted(url2, topic) == latest, "the compacted view is on the bookies"
        r2.stop()

    pulsar_broker = bookies.start_pulsar_broker()
    try:
        assert read_compacted(pulsar_broker.service_url, topic) == latest, "Apache Pulsar serves our view"
        produce_keyed(pulsar_broker.service_url, topic, range(30, 35))
        compact(pulsar_broker.admin_url, topic)
        theirs = [f"k{i % 5}={i}" for i in range(30, 35)]
        assert read_compacted(pulsar_broker.service_url, topic) == theirs
    finally:
        pulsar_broker.stop(graceful=True)
    r3, url3 = start_broker(tmp_path, bookies, "reads-pulsars-view")
    with r3:
        wait_for_cluster([r3], PULSAR_CLUSTER)
        assert read_compacted(url3, topic) == theirs, "we serve the view Apache Pulsar compacted"
        # Deleting the topic deletes its compacted ledger from BookKeeper, as Pulsar does.
        admin = Admin(r3.http)
        compacted = admin.topics.internal_stats(topic)["compactedLedger"]["ledgerId"]
        assert compacted >= 0
        admin.topics.delete(topic)
        deadline = time.monotonic() + 30
        while True:
            try:
                bookies.ledger_ensembles(compacted)
            except PulsarReferenceError:
                break  # no metadata left: deleted
            assert time.monotonic() < deadline, f"compacted ledger {compacted} still on BookKeeper"
            time.sleep(0.5)  # poll: the ledger is deleted from the bookies asynchronously


def test_expiry_backlog_quota_and_retention_work_on_the_bookies(tmp_path, bookies):
    """The policies that read a topic's stored messages or sizes: expiry by age reads the publish
    times in the entries on the bookies (they carry no time of their own); a backlog quota counts
    the backlog held there; with retention 0 the ledgers every subscription consumed are trimmed
    from the list (and the bookies) once a rollover closes them (40 entries per ledger here)."""
    topic = "persistent://public/default/policies-on-bookies"
    with serving(tmp_path, bookies, "policies", topic) as (admin, c):
        c.subscribe(topic, "s").close()
        p = c.create_producer(topic, batching_enabled=False)
        for i in range(10):
            p.send(b"old-%02d" % i)
        time.sleep(2.5)  # the first ten are older than 2 s, the next ten are not
        for i in range(10):
            p.send(b"new-%02d" % i)
        admin.topics.expire_messages(topic, "s", seconds=2)
        assert admin.topics.stats(topic)["subscriptions"]["s"]["msgBacklog"] == 10
        consumer = c.subscribe(topic, "s")
        assert consumer.receive(timeout_millis=10000).data() == b"new-00", "expired by publish time"
        consumer.close()

        admin.topics.set_backlog_quota(topic, limit_size=5_000, policy="producer_exception")
        for _ in range(10):
            p.send(b"q" * 1000)
        with pytest.raises(pulsar.ProducerBlockedQuotaExceededException):
            c.create_producer(topic)
        admin.topics.remove_backlog_quota(topic)

        first = admin.topics.internal_stats(topic)["ledgers"][0]["ledgerId"]
        consumer = c.subscribe(topic, "s")
        while True:  # consume everything, then roll over with 40 more, consumed too
            try:
                consumer.acknowledge(consumer.receive(timeout_millis=3000))
            except pulsar.Timeout:
                break
        for i in range(40):
            p.send(b"r-%02d" % i)
        for _ in range(40):
            consumer.acknowledge(consumer.receive(timeout_millis=10000))
        consumer.close()  # the acknowledgements are sent and the cursor moves
        deadline = time.monotonic() + 30
        while (backlog := admin.topics.stats(topic)["subscriptions"]["s"]["msgBacklog"]) > 0:
            stats = admin.topics.internal_stats(topic)
            assert time.monotonic() < deadline, f"acknowledgements missing: backlog {backlog}, {stats['cursors']}"
            time.sleep(0.2)  # poll: the closed consumer's acknowledgements reach the cursor
        # The broker's housekeeping (every second here: managedLedgerDefaultMarkDeleteRateLimit) trims
        # the closed ledgers every cursor consumed, with no reload.
        deadline = time.monotonic() + 30
        while first in [led["ledgerId"] for led in admin.topics.internal_stats(topic)["ledgers"]]:
            stats = admin.topics.internal_stats(topic)
            assert time.monotonic() < deadline, f"{stats['ledgers']}\ncursors: {stats['cursors']}"
            time.sleep(0.5)  # poll: the housekeeping runs on its own schedule
        admin.topics.unload(topic)  # the reload closes the ledger that was open: consumed, it goes too
        deadline = time.monotonic() + 30
        while len((stats := admin.topics.internal_stats(topic))["ledgers"]) > 1:
            assert time.monotonic() < deadline, f"{stats['ledgers']}\ncursors: {stats['cursors']}"
            time.sleep(0.5)  # poll: the housekeeping runs on its own schedule
    deadline = time.monotonic() + 30
    while True:
        try:
            bookies.ledger_ensembles(first)
        except PulsarReferenceError:
            break  # no metadata left: deleted from BookKeeper
        assert time.monotonic() < deadline, f"trimmed ledger {first} still on BookKeeper"
        time.sleep(0.5)  # poll: the ledger is deleted from the bookies asynchronously
