"""Tiered storage between pulsar-rs and Apache Pulsar 4.0.8: one ZooKeeper with three bookies and
one S3Proxy bucket for both brokers.

* pulsar-rs offloads a topic's closed ledgers (its own bookie copies deleted after a lag of 0) and
  stops; Apache Pulsar, with its own jcloud offloader (driver ``S3``) on the same bucket, reads the
  topic from the earliest message: every message, in order, and the offloaded ledgers can only come
  from the bucket. Its ``internalStats`` shows them ``offloaded``.
* Apache Pulsar offloads a topic's closed ledgers (its bookie copies deleted by its trim) and stops;
  pulsar-rs reads the topic from the earliest message, opening those ledgers from the bucket.
"""

from __future__ import annotations

import json
import re
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pulsar
import pytest

from fixtures.pulsar_offloaders import OFFLOADER_ENV, offloader_settings
from fixtures.s3proxy import S3Proxy

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository's tools/
from tools.pulsar_reference import PulsarReferenceError, available

from pulsar_rs.testing.bookkeeper import PULSAR_CLUSTER, BookKeeperCluster
from pulsar_rs.testing.process import PulsarRsBroker

if (why := available()) is not None:
    pytest.skip(f"no Apache Pulsar distribution here: {why}", allow_module_level=True)

BUCKET = "interop-offload"
ENTRIES_PER_LEDGER = 50
N = 320  # over 6 full ledgers and a part of a 7th


@pytest.fixture(scope="module")
def bookies() -> Iterator[BookKeeperCluster]:
    try:
        cluster = BookKeeperCluster(bookies=3).start()
    except PulsarReferenceError as e:
        pytest.fail(str(e))
    try:
        yield cluster
    finally:
        cluster.cleanup()


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Proxy]:
    with S3Proxy(bucket=BUCKET) as proxy:
        yield proxy


def rs_conf(bk: BookKeeperCluster, s3: S3Proxy) -> dict[str, object]:
    """pulsar-rs on the bookies, offloading to the shared bucket; nothing trimmed."""
    return {
        "metadataStoreUrl": bk.metadata_store_url,
        "clusterName": PULSAR_CLUSTER,  # the cluster Apache Pulsar's brokers here join
        "managedLedgerDefaultEnsembleSize": 3,
        "managedLedgerDefaultWriteQuorum": 2,
        "managedLedgerDefaultAckQuorum": 2,
        "managedLedgerMaxEntriesPerLedger": ENTRIES_PER_LEDGER,
        "managedLedgerMinLedgerRolloverTimeMinutes": 0,
        "defaultRetentionTimeInMinutes": -1,
        "defaultRetentionSizeInMB": -1,
        "brokerDeduplicationEnabled": False,
        "metadataStoreSessionTimeoutMillis": 6000,
        "managedLedgerOffloadDriver": "S3",
        "managedLedgerOffloadBucket": s3.bucket,
        "managedLedgerOffloadServiceEndpoint": s3.endpoint,
        "managedLedgerOffloadDeletionLagMs": 0,
    }


def pulsar_conf(s3: S3Proxy, work: Path) -> dict[str, object]:
    """Apache Pulsar's keys over its broker.conf: its jcloud offloader on the shared bucket, small
    ledgers, the bookie copy deleted by the next trim (every 2 s) after an offload, nothing trimmed
    for retention."""
    return {
        **offloader_settings(s3.endpoint, s3.bucket, work / "pulsar-nar"),
        "managedLedgerMaxEntriesPerLedger": ENTRIES_PER_LEDGER,
        "managedLedgerMinLedgerRolloverTimeMinutes": 0,
        "managedLedgerOffloadDeletionLagMs": 0,
        "retentionCheckIntervalInSeconds": 2,
        "defaultRetentionTimeInMinutes": -1,
        "defaultRetentionSizeInMB": -1,
        "brokerDeduplicationEnabled": False,
    }


def rest(base: str, method: str, path: str, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(
        f"{base}{path}", data=data, method=method, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=60) as r:
        raw = r.read()
    return json.loads(raw) if raw else None


def topic_path(topic: str) -> str:
    return "/admin/v2/persistent/" + topic.removeprefix("persistent://")


def client(url: str) -> pulsar.Client:
    return pulsar.Client(url, operation_timeout_seconds=60, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))


def produce(c: pulsar.Client, topic: str, prefix: bytes, n: int) -> list[bytes]:
    sent = [prefix + b"-%04d" % i for i in range(n)]
    producer = c.create_producer(topic, batching_enabled=False)
    for m in sent:
        producer.send(m)
    producer.close()
    return sent


def read_all(c: pulsar.Client, topic: str, expect: int) -> list[bytes]:
    reader = c.create_reader(topic, pulsar.MessageId.earliest)
    got: list[bytes] = []
    try:
        while len(got) < expect:
            try:
                got.append(reader.read_next(timeout_millis=60000).data())
            except pulsar.Timeout:
                break
    finally:
        reader.close()
    return got


def offload_all(base: str, topic: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``PUT .../offload`` up to the current ledger; polls the status until it settles: (status,
    the ledgers of ``internalStats`` then)."""
    current = rest(base, "GET", f"{topic_path(topic)}/internalStats")["ledgers"][-1]["ledgerId"]
    rest(base, "PUT", f"{topic_path(topic)}/offload", {"ledgerId": current, "entryId": 0, "partitionIndex": -1})
    deadline = time.monotonic() + 180
    while True:
        status = rest(base, "GET", f"{topic_path(topic)}/offload")
        if status["status"] not in ("RUNNING", "NOT_RUN") or time.monotonic() > deadline:
            break
        time.sleep(0.5)  # poll: the offload runs in the broker's background
    return status, rest(base, "GET", f"{topic_path(topic)}/internalStats")["ledgers"]


def wait_for(what: str, check, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.5)  # poll: a broker's background work (housekeeping, trim), no event to wait on


def bookie_ledgers(bk: BookKeeperCluster) -> set[int]:
    """The ledger ids BookKeeper's own shell lists."""
    out = bk._bookie_shell("listledgers")
    return {int(w) for line in out.splitlines() if "ledgerID:" in line for w in line.split("ledgerID:")[1].split()[:1]}


def plain(log: str) -> str:
    """A pulsar-rs log without its ANSI colours."""
    return re.sub(r"\x1b\[[0-9;]*m", "", log)


def deleted_by_pulsar_rs(broker: PulsarRsBroker) -> set[int]:
    """The ledgers whose bookie copies pulsar-rs logged deleted after their offload."""
    found: set[int] = set()
    for m in re.finditer(
        r"deleted offloaded ledgers' own copies after the deletion lag .*ledgers=\[([\d, ]*)\]", plain(broker.log())
    ):
        found.update(int(x) for x in m.group(1).split(",") if x.strip())
    return found


def objects(s3: S3Proxy) -> dict[int, set[str]]:
    """The bucket's objects by ledger id: the kinds present (data, index)."""
    found: dict[int, set[str]] = {}
    for key in s3.keys():  # noqa: SIM118 (S3Proxy.keys lists the bucket; it is no dict)
        if "-ledger-" in key:
            tail = key.rsplit("-ledger-", 1)[1]
            ledger, _, index = tail.partition("-")
            found.setdefault(int(ledger), set()).add("index" if index == "index" else "data")
    return found


def test_apache_pulsar_reads_what_pulsar_rs_offloaded(tmp_path: Path, bookies: BookKeeperCluster, s3: S3Proxy) -> None:
    topic = "persistent://public/default/offloaded-by-pulsar-rs"
    with PulsarRsBroker(tmp_path, "rs", rs_conf(bookies, s3)) as broker:
        c = client(broker.url)
        c.subscribe(topic, "keep").close()  # a durable cursor at the start: nothing consumed
        sent = produce(c, topic, b"rs", N)
        c.close()
        status, ledgers = offload_all(broker.http, topic)
        assert status["status"] == "SUCCESS", status
        assert len(ledgers) >= 6, ledgers
        offloaded = [x["ledgerId"] for x in ledgers[:-1]]
        assert [x["offloaded"] for x in ledgers] == [True] * len(offloaded) + [False], ledgers
        assert all(objects(s3).get(lid) == {"data", "index"} for lid in offloaded), objects(s3)
        # The lag is 0: its housekeeping (every second) deletes the bookie copies of the ledgers
        # offloaded so far, logging each batch.
        wait_for("pulsar-rs to delete its bookie copies", lambda: deleted_by_pulsar_rs(broker) == set(offloaded))
        left = bookie_ledgers(bookies)
        assert ledgers[-1]["ledgerId"] in left and not left & set(offloaded), (left, offloaded)
        broker.stop()
        assert broker.proc.returncode == 0, broker.log()[-3000:]

    pulsar_broker = bookies.start_pulsar_broker(settings=pulsar_conf(s3, tmp_path), env=OFFLOADER_ENV)
    try:
        c = client(pulsar_broker.service_url)
        got = read_all(c, topic, N)
        c.close()
        log = (pulsar_broker.dir / "broker.out").read_text(errors="replace")
        assert got == sent, f"{len(got)} of {N} read; broker.out:\n{log[-5000:]}"
        stats = rest(pulsar_broker.admin_url, "GET", f"{topic_path(topic)}/internalStats")
        by_id = {x["ledgerId"]: x for x in stats["ledgers"]}
        assert all(by_id[lid].get("offloaded") is True for lid in offloaded), stats["ledgers"]
        assert all(f"Opening ledger {lid} from offload driver S3" in log for lid in offloaded), log[-5000:]
    finally:
        pulsar_broker.stop(graceful=True)


def test_pulsar_rs_reads_what_apache_pulsar_offloaded(tmp_path: Path, bookies: BookKeeperCluster, s3: S3Proxy) -> None:
    topic = "persistent://public/default/offloaded-by-pulsar"
    pulsar_broker = bookies.start_pulsar_broker(settings=pulsar_conf(s3, tmp_path), env=OFFLOADER_ENV)
    try:
        c = client(pulsar_broker.service_url)
        c.subscribe(topic, "keep").close()
        sent = produce(c, topic, b"java", N)
        c.close()
        status, ledgers = offload_all(pulsar_broker.admin_url, topic)
        assert status["status"] == "SUCCESS", status
        assert len(ledgers) >= 6, ledgers
        offloaded = [x["ledgerId"] for x in ledgers[:-1]]
        assert [x["offloaded"] for x in ledgers] == [True] * len(offloaded) + [False], ledgers
        assert all(objects(s3).get(lid) == {"data", "index"} for lid in offloaded), objects(s3)

        def bookie_copies_gone() -> bool:
            log = (pulsar_broker.dir / "broker.out").read_text(errors="replace")
            if not all(f"Deleted and invalidated offloaded ledger {lid} from bookkeeper" in log for lid in offloaded):
                return False
            left = bookie_ledgers(bookies)
            assert ledgers[-1]["ledgerId"] in left, left  # the shell lists the ledgers we look for
            return not left & set(offloaded)

        # Its trim (every retentionCheckIntervalInSeconds) deletes them: the lag is 0.
        wait_for("Apache Pulsar to delete its bookie copies", bookie_copies_gone, timeout=90)
    finally:
        pulsar_broker.stop(graceful=True)

    with PulsarRsBroker(tmp_path, "rs2", rs_conf(bookies, s3)) as broker:
        c = client(broker.url)
        got = read_all(c, topic, N)
        c.close()
        log = plain(broker.log())
        assert got == sent, f"{len(got)} of {N} read; log:\n{log[-5000:]}"
        name = "public/default/persistent/offloaded-by-pulsar"
        for lid in offloaded:
            assert f"opened ledger from the offload driver ledger={name} ledger_id={lid} driver=S3" in log, log[-5000:]
        # pulsar-rs reads Pulsar's record of the offload: the same ledgers shown offloaded.
        by_id = {x["ledgerId"]: x for x in rest(broker.http, "GET", f"{topic_path(topic)}/internalStats")["ledgers"]}
        assert all(by_id[lid]["offloaded"] is True for lid in offloaded), by_id
