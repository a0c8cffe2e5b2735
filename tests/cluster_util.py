"""What the cluster tests (tests/cluster) share: a broker of a cluster on ZooKeeper and bookies,
HTTP calls that may or may not follow a 307, the lookup as a client sees it, a client naming every
broker, draining a subscription, and the takeover scenario (SIGKILL the owner of some partitions
mid-stream, then count what was receipted, read back, lost and delivered twice), run on ZooKeeper
and on etcd alike."""

from __future__ import annotations

import json
import ssl
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pulsar
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository's tools/
from tools.pulsar_reference import PulsarReferenceError

from pulsar_rs.testing.bookkeeper import BookKeeperCluster
from pulsar_rs.testing.process import PulsarRsBroker

#: ZooKeeperServerMain's tickTime is 3 s, so its shortest session is 6 s.
SESSION_MS = 6000


def three_bookies() -> Iterator[BookKeeperCluster]:
    """The body of a module's ``bookies`` fixture: three bookies and their ZooKeeper from the
    pinned Apache Pulsar distribution, removed after the module."""
    try:
        cluster = BookKeeperCluster(bookies=3).start()
    except PulsarReferenceError as e:
        pytest.fail(str(e))
    yield cluster
    cluster.cleanup()


def cluster_broker(tmp: Path, bk: BookKeeperCluster, name: str, **conf: object) -> PulsarRsBroker:
    """One pulsar-rs broker of a cluster on ``bk``'s ZooKeeper and bookies (6 s sessions, ensembles
    of 2), with ``conf`` on top."""
    try:
        return PulsarRsBroker(
            tmp,
            name,
            {
                "metadataStoreUrl": bk.metadata_store_url,
                "metadataStoreSessionTimeoutMillis": SESSION_MS,
                "managedLedgerDefaultEnsembleSize": 2,
                "managedLedgerDefaultWriteQuorum": 2,
                "managedLedgerDefaultAckQuorum": 2,
                **conf,
            },
        )
    except PulsarReferenceError as e:
        pytest.fail(str(e))


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


def get(
    url: str, follow: bool = True, token: str | None = None, context: ssl.SSLContext | None = None
) -> tuple[int, dict | list | str, str | None]:
    """(status, JSON body, Location) of a GET; with ``follow``, 307s are followed; ``token`` is
    sent as a Bearer header (kept across redirects); ``context``: HTTPS with its CAs and client
    certificate."""
    handlers: list[urllib.request.BaseHandler] = [urllib.request.HTTPSHandler(context=context)] if context else []
    if not follow:
        handlers.append(NoRedirect())
    opener = urllib.request.build_opener(*handlers)
    req = urllib.request.Request(url)
    if token is not None:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with opener.open(req, timeout=30) as r:
            return r.status, json.loads(r.read() or b"null"), None
    except urllib.error.HTTPError as e:
        with e:
            body = e.read()
            return e.code, json.loads(body) if body else None, e.headers.get("Location")


def lookup(broker: PulsarRsBroker, topic: str, token: str | None = None) -> str:
    """The broker URL an HTTP lookup through ``broker`` ends at (307s followed)."""
    local = topic.removeprefix("persistent://")
    status, body, _ = get(f"{broker.http}/lookup/v2/topic/persistent/{local}", token=token)
    assert status == 200, body
    assert isinstance(body, dict)
    return body["brokerUrl"]


def by_url(brokers: list[PulsarRsBroker], url: str) -> PulsarRsBroker:
    return next(b for b in brokers if b.url == url)


def topics_owned(brokers: list[PulsarRsBroker], prefix: str, owners: list[str], token: str | None = None) -> list[str]:
    """One new topic per entry of ``owners`` (service URLs), each owned by that broker."""
    found: list[str] = []
    for want in owners:
        for i in range(200):
            t = f"persistent://public/default/{prefix}-{want.rsplit(':', 1)[1]}-{i}"
            if t not in found and lookup(brokers[i % len(brokers)], t, token) == want:
                found.append(t)
                break
        else:
            pytest.fail(f"no topic of 200 landed on {want}")
    return found


def read_all(c: pulsar.Client, topic: str, expect: int, wait_ms: int = 5000) -> list[bytes]:
    reader = c.create_reader(topic, pulsar.MessageId.earliest)
    got: list[bytes] = []
    try:
        while True:
            try:
                got.append(reader.read_next(timeout_millis=wait_ms if len(got) < expect else 1500).data())
            except pulsar.Timeout:
                return got
    finally:
        reader.close()


def client(brokers: list[PulsarRsBroker]) -> pulsar.Client:
    """A client whose service URL names every broker (lookups go to any live one)."""
    hosts = ",".join(b.url.removeprefix("pulsar://") for b in brokers)
    return pulsar.Client(
        f"pulsar://{hosts}",
        operation_timeout_seconds=45,
        connection_timeout_ms=3000,
        logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error),
    )


def wait_for(what: str, cond, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.2)  # poll: broker processes converging through ZooKeeper


def produce_all(c: pulsar.Client, topic: str, n: int) -> list[bytes]:
    p = c.create_producer(topic, batching_enabled=False, send_timeout_millis=30000)
    sent = [b"m-%04d" % i for i in range(n)]
    for m in sent:
        p.send_async(m, None, partition_key=m.decode())
    p.flush()
    p.close()
    return sent


def drain(c: pulsar.Client, topic: str, sub: str, expect: int, idle_ms: int = 5000) -> list[bytes]:
    consumer = c.subscribe(topic, sub, initial_position=pulsar.InitialPosition.Earliest)
    got: list[bytes] = []
    try:
        while True:
            try:
                m = consumer.receive(timeout_millis=idle_ms if len(got) >= expect else 60000)
            except pulsar.Timeout:
                return got
            got.append(m.data())
            consumer.acknowledge(m)
    finally:
        consumer.close()


def partition_owners(brokers: list[PulsarRsBroker], topic: str, n: int) -> dict[int, str]:
    return {i: lookup(brokers[i % len(brokers)], f"{topic}-partition-{i}") for i in range(n)}


@dataclass
class Takeover:
    """What the takeover scenario measured."""

    sent: int
    acked: list[bytes]
    got: list[bytes]
    #: Partitions the killed broker owned.
    victim_parts: set[int]
    #: Per moved partition, seconds from the kill to its first receipt.
    first_after_kill: dict[int, float]
    victim: PulsarRsBroker

    def summary(self) -> str:
        reconnect = sorted(self.first_after_kill.values())
        return (
            f"takeover: sent {self.sent}, receipted {len(self.acked)}, read back {len(self.got)}, "
            f"lost {len(set(self.acked) - set(self.got))}, duplicates {len(self.got) - len(set(self.got))}, "
            f"victim partitions {sorted(self.victim_parts)}, "
            f"first receipt after the kill per moved partition (s): {[round(r, 1) for r in reconnect]}"
        )

    def check(self, brokers: list[PulsarRsBroker]) -> None:
        """Every moved partition took writes again, nothing receipted is lost, nothing comes twice
        (deduplication), and the survivors still run."""
        assert len(self.first_after_kill) == len(self.victim_parts), "every moved partition took writes again"
        assert not set(self.acked) - set(self.got), "receipted and lost"
        assert len(self.got) == len(set(self.got)), "deduplication: nothing twice"
        for b in brokers:
            if b is not self.victim:
                assert b.proc.poll() is None


def takeover(brokers: list[PulsarRsBroker], topic: str, n_parts: int) -> Takeover:
    """Produces to a new ``n_parts``-partition topic with receipts, SIGKILLs the broker owning the
    most partitions (not all), keeps producing until every moved partition takes writes again
    (or 90 s), then drains the subscription made first through the survivors."""
    local = topic.removeprefix("persistent://")
    req = urllib.request.Request(
        f"{brokers[0].http}/admin/v2/persistent/{local}/partitions", data=str(n_parts).encode(), method="PUT"
    )
    with urllib.request.urlopen(req, timeout=30) as r:
        assert r.status == 204
    c = client(brokers)
    receipted: list[bytes] = []
    first_after_kill: dict[int, float] = {}
    lock = threading.Lock()
    killed_at = 0.0
    try:
        c.subscribe(topic, "check").close()
        producer = c.create_producer(
            topic,
            batching_enabled=False,
            send_timeout_millis=60000,
            block_if_queue_full=True,
            producer_name="takeover-p",
        )
        owners = partition_owners(brokers, topic, n_parts)
        by_url = {b.url: b for b in brokers}
        # The victim: the broker owning the most partitions (not all: the others must serve too).
        counts = {u: list(owners.values()).count(u) for u in set(owners.values())}
        victim = by_url[max(counts, key=lambda u: counts[u])]
        victim_parts = {i for i, u in owners.items() if u == victim.url}
        assert len(victim_parts) < n_parts or len(brokers) == 1

        def done_cb(payload: bytes):
            def done(res, msg_id) -> None:
                if res == pulsar.Result.Ok:
                    with lock:
                        receipted.append(payload)
                        if killed_at and msg_id.partition() in victim_parts:
                            first_after_kill.setdefault(msg_id.partition(), time.monotonic() - killed_at)

            return done

        i = 0
        for _ in range(300):
            m = b"k-%05d" % i
            producer.send_async(m, done_cb(m), partition_key=m.decode())
            i += 1
        producer.flush()
        victim.kill()
        killed_at = time.monotonic()
        deadline = killed_at + 90
        while time.monotonic() < deadline and len(first_after_kill) < len(victim_parts):
            m = b"k-%05d" % i
            producer.send_async(m, done_cb(m), partition_key=m.decode())
            i += 1
            time.sleep(0.01)  # paces the sends until ZooKeeper (real time) expires the victim's session
        producer.flush()
        producer.close()
        survivors = [b for b in brokers if b is not victim]
        with lock:
            acked = list(receipted)
        got = drain(client(survivors), topic, "check", len(acked))
    finally:
        c.close()
    return Takeover(i, acked, got, victim_parts, first_after_kill, victim)
