"""Tiered storage with the official Python client and a real S3 endpoint (S3Proxy): closed
ledgers offloaded in Apache Pulsar's object format by the admin call and by the namespace's
threshold, shown offloaded by ``internalStats``, their local copy deleted after the lag and read
back from the bucket (readers, a subscription's backlog across the boundary, a seek by time, a
compacted topic) across restarts; the bucket unreachable during a read, and the broker SIGKILLed
during an offload, lose nothing.

Each broker is a ``pulsar-rs standalone`` process (restarted on its data directory), with
``managedLedgerMaxEntriesPerLedger`` small so that a few thousand messages span many ledgers.
"""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pulsar
import pytest

from fixtures.s3proxy import S3Proxy
from pulsar_rs import Admin
from pulsar_rs.export import snapshot_tables
from pulsar_rs.testing.process import PulsarRsBroker

NS = "public/default"
OBJECT = re.compile(r"^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})-ledger-(\d+)(-index)?$")


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Proxy]:
    with S3Proxy() as proxy:
        yield proxy


def conf(s3: S3Proxy, bucket: str, **extra: object) -> dict[str, object]:
    s3.create_bucket(bucket)
    return {
        "managedLedgerMaxEntriesPerLedger": 1000,
        "managedLedgerMinLedgerRolloverTimeMinutes": 0,
        "defaultRetentionTimeInMinutes": -1,
        "defaultRetentionSizeInMB": -1,
        "brokerDeduplicationEnabled": False,
        "managedLedgerOffloadDriver": "S3",
        "managedLedgerOffloadBucket": bucket,
        "managedLedgerOffloadServiceEndpoint": s3.endpoint,
        **extra,
    }


def rest(broker: PulsarRsBroker, method: str, path: str, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(
        f"{broker.http}{path}", data=data, method=method, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=60) as r:
        raw = r.read()
    return json.loads(raw) if raw else None


def refused(broker: PulsarRsBroker, method: str, path: str, body: Any = None) -> int:
    """The HTTP status of a call that must fail (its response closed)."""
    try:
        rest(broker, method, path, body)
    except urllib.error.HTTPError as e:
        e.close()
        return e.code
    raise AssertionError(f"{method} {path} succeeded")


def topic_path(topic: str) -> str:
    return "/admin/v2/persistent/" + topic.removeprefix("persistent://")


def client(broker: PulsarRsBroker) -> pulsar.Client:
    return pulsar.Client(
        broker.url, operation_timeout_seconds=60, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error)
    )


def produce(c: pulsar.Client, topic: str, n: int, start: int = 0, key: str | None = None) -> None:
    producer = c.create_producer(topic, batching_enabled=False, block_if_queue_full=True, max_pending_messages=2000)
    for i in range(start, start + n):
        if key is None:
            producer.send_async(b"m-%05d" % i, None)
        else:
            producer.send_async(b"m-%05d" % i, None, partition_key=f"k{i % 10}")
    producer.flush()
    producer.close()


def offload_all(broker: PulsarRsBroker, topic: str) -> dict[str, Any]:
    """``PUT .../offload`` up to the current ledger, then polls the status until it settles."""
    stats = rest(broker, "GET", f"{topic_path(topic)}/internalStats")
    current = stats["ledgers"][-1]["ledgerId"]
    rest(broker, "PUT", f"{topic_path(topic)}/offload", {"ledgerId": current, "entryId": 0, "partitionIndex": -1})
    return settled(broker, topic)


def settled(broker: PulsarRsBroker, topic: str) -> dict[str, Any]:
    """``GET .../offload`` once the running offload is over."""
    deadline = time.monotonic() + 120
    while True:
        status = rest(broker, "GET", f"{topic_path(topic)}/offload")
        if status["status"] != "RUNNING" or time.monotonic() > deadline:
            return status
        time.sleep(0.2)  # poll: the offload runs on the broker's own thread


def wait_for_log(broker: PulsarRsBroker, text: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while text not in broker.log():
        assert time.monotonic() < deadline, f"{text!r} not logged:\n{broker.log()[-3000:]}"
        time.sleep(0.2)  # poll: the broker's housekeeping runs every second


def read_all(c: pulsar.Client, topic: str, expect: int, compacted: bool = False) -> list[pulsar.Message]:
    reader = c.create_reader(topic, pulsar.MessageId.earliest, is_read_compacted=compacted)
    got = []
    try:
        while len(got) < expect:
            try:
                got.append(reader.read_next(timeout_millis=30000))
            except pulsar.Timeout:
                break
    finally:
        reader.close()
    return got


def objects(s3: S3Proxy, bucket: str) -> dict[int, set[str]]:
    """The bucket's objects by ledger id: each a set of the kinds present (data, index)."""
    by_ledger: dict[int, set[str]] = {}
    for key in (p.name for p in (s3.basedir / bucket).glob("*") if p.is_file()):
        m = OBJECT.match(key)
        if m:
            by_ledger.setdefault(int(m.group(2)), set()).add("index" if m.group(3) else "data")
    return by_ledger


def test_twenty_thousand_messages_are_read_back_from_the_bucket_after_the_lag_and_a_restart(
    tmp_path: Path, s3: S3Proxy
) -> None:
    topic = "persistent://public/default/tiered"
    settings = conf(s3, "tiered-main", managedLedgerOffloadDeletionLagMs=0)
    n = 20_000
    with PulsarRsBroker(tmp_path, "b", settings) as broker:
        c = client(broker)
        backlog = c.subscribe(topic, "backlog")
        produce(c, topic, n)
        for _ in range(5000):  # the subscription's backlog starts inside the offloaded ledgers
            backlog.acknowledge(backlog.receive(timeout_millis=30000))
        backlog.close()
        assert rest(broker, "GET", f"{topic_path(topic)}/offload")["status"] == "NOT_RUN"
        status = offload_all(broker, topic)
        stats = rest(broker, "GET", f"{topic_path(topic)}/internalStats")
        ledgers = stats["ledgers"]
        assert len(ledgers) >= 20
        assert status == {
            "status": "SUCCESS",
            "lastError": "",
            "firstUnoffloadedMessage": {
                "ledgerId": ledgers[-1]["ledgerId"],
                "entryId": 0,
                "partitionIndex": -1,
                "batchIndex": -1,
                "batchSize": 0,
            },
        }
        assert [x["offloaded"] for x in ledgers] == [True] * (len(ledgers) - 1) + [False]
        stored = objects(s3, "tiered-main")
        assert stored == {x["ledgerId"]: {"data", "index"} for x in ledgers[:-1]}, stored
        topic_stats = rest(broker, "GET", f"{topic_path(topic)}/stats")
        assert topic_stats["offloadedStorageSize"] == sum(x["size"] for x in ledgers[:-1])
        assert topic_stats["lastOffloadLedgerId"] == ledgers[-2]["ledgerId"]
        # The lag is 0: the next housekeeping deletes the journal's copies.
        wait_for_log(broker, "deleted offloaded ledgers' own copies")
        c.close()
        broker.stop()

    with PulsarRsBroker(tmp_path, "b", settings) as broker:
        c = client(broker)
        got = read_all(c, topic, n)
        assert [m.data() for m in got] == [b"m-%05d" % i for i in range(n)]
        assert "opened ledger from the offload driver" in broker.log()
        backlog = c.subscribe(topic, "backlog")
        rest_of_backlog = [backlog.receive(timeout_millis=30000).data() for _ in range(n - 5000)]
        assert rest_of_backlog == [b"m-%05d" % i for i in range(5000, n)]
        # A seek by time lands in offloaded data: on the first message published at or after it.
        times = [m.publish_timestamp() for m in got]
        target = next(i for i in range(7500, n) if times[i] > times[i - 1])
        backlog.seek(times[target])
        first = backlog.receive(timeout_millis=30000)
        assert first.data() == b"m-%05d" % target, (first.data(), target)
        c.close()


def test_the_bucket_down_during_a_read_delays_it_and_loses_nothing(tmp_path: Path) -> None:
    topic = "persistent://public/default/outage"
    n = 3000
    with S3Proxy() as s3:
        settings = conf(s3, "tiered-outage", managedLedgerOffloadDeletionLagMs=0, managedLedgerMaxEntriesPerLedger=500)
        with PulsarRsBroker(tmp_path, "o", settings) as broker:
            c = client(broker)
            produce(c, topic, n)
            assert offload_all(broker, topic)["status"] == "SUCCESS"
            wait_for_log(broker, "deleted offloaded ledgers' own copies")
            c.close()
            broker.stop()
        # An offline export reads the offloaded ledgers with the broker's tiered-storage keys.
        entries = snapshot_tables(tmp_path / "o-data", config=tmp_path / "o.conf")["entries"]
        assert entries.num_rows == n
        s3.stop()
        with PulsarRsBroker(tmp_path, "o", settings) as broker:
            c = client(broker)
            reader = c.create_reader(topic, pulsar.MessageId.earliest)
            with pytest.raises(pulsar.Timeout):
                reader.read_next(timeout_millis=5000)  # nothing readable, nothing skipped
            assert "tiered storage" in broker.log()
            s3.start()
            got = [reader.read_next(timeout_millis=60000).data() for _ in range(n)]
            assert got == [b"m-%05d" % i for i in range(n)]
            c.close()


def test_the_namespace_threshold_offloads_closed_ledgers_on_its_own(tmp_path: Path, s3: S3Proxy) -> None:
    topic = "persistent://public/default/auto"
    settings = conf(s3, "tiered-auto", managedLedgerMaxEntriesPerLedger=500)
    with PulsarRsBroker(tmp_path, "a", settings) as broker:
        # The broker's keys name the store; the namespace's threshold turns offloading on.
        rest(broker, "PUT", f"/admin/v2/namespaces/{NS}/offloadThreshold", 0)
        assert rest(broker, "GET", f"/admin/v2/namespaces/{NS}/offloadThreshold") == 0
        c = client(broker)
        produce(c, topic, 2600)
        deadline = time.monotonic() + 60
        while True:
            ledgers = rest(broker, "GET", f"{topic_path(topic)}/internalStats")["ledgers"]
            if [x["offloaded"] for x in ledgers] == [True] * 5 + [False] or time.monotonic() > deadline:
                break
            time.sleep(0.5)  # poll: auto-offload runs after rollovers and at housekeeping
        assert [x["offloaded"] for x in ledgers] == [True] * 5 + [False], ledgers
        assert sorted(objects(s3, "tiered-auto")) == [x["ledgerId"] for x in ledgers[:-1]]
        # Policies are checked as Pulsar's admin checks them.
        policies = f"/admin/v2/namespaces/{NS}/offloadPolicies"
        assert refused(broker, "POST", policies, {"managedLedgerOffloadDriver": "S3"}) == 412
        c.close()


def test_a_compacted_topic_is_served_across_the_offload_boundary(tmp_path: Path, s3: S3Proxy) -> None:
    topic = "persistent://public/default/compacted"
    settings = conf(s3, "tiered-compacted", managedLedgerOffloadDeletionLagMs=0, managedLedgerMaxEntriesPerLedger=300)
    with PulsarRsBroker(tmp_path, "c", settings) as broker:
        c = client(broker)
        c.subscribe(topic, "keep").close()
        produce(c, topic, 1000, key="k")
        rest(broker, "PUT", f"{topic_path(topic)}/compaction")
        deadline = time.monotonic() + 60
        while rest(broker, "GET", f"{topic_path(topic)}/compaction")["status"] == "RUNNING":
            assert time.monotonic() < deadline
            time.sleep(0.2)  # poll: compaction runs in the background
        produce(c, topic, 1000, start=1000, key="k")  # after the horizon: read from the ledgers
        assert offload_all(broker, topic)["status"] == "SUCCESS"
        wait_for_log(broker, "deleted offloaded ledgers' own copies")
        c.close()
        broker.stop()
    with PulsarRsBroker(tmp_path, "c", settings) as broker:
        c = client(broker)
        got = read_all(c, topic, 2000, compacted=True)
        latest = {m.partition_key(): m.data() for m in got}
        assert latest == {f"k{k}": b"m-%05d" % (1990 + k) for k in range(10)}
        assert len(got) == 10 + 1000  # the compacted view, then every message after its horizon
        c.close()


def test_sigkill_during_an_offload_leaves_no_half_recorded_offload(tmp_path: Path) -> None:
    topic = "persistent://public/default/killed"
    n = 2000
    with S3Proxy() as s3:
        settings = conf(s3, "tiered-killed", managedLedgerMaxEntriesPerLedger=500)
        with PulsarRsBroker(tmp_path, "k", settings) as broker:
            c = client(broker)
            produce(c, topic, n)
            c.close()
            s3.stop()  # the upload now retries: the offload stays RUNNING
            stats = rest(broker, "GET", f"{topic_path(topic)}/internalStats")
            current = stats["ledgers"][-1]["ledgerId"]
            rest(broker, "PUT", f"{topic_path(topic)}/offload", {"ledgerId": current, "entryId": 0})
            assert rest(broker, "GET", f"{topic_path(topic)}/offload")["status"] == "RUNNING"
            assert refused(broker, "PUT", f"{topic_path(topic)}/offload", {"ledgerId": current, "entryId": 0}) == 409
            broker.kill()
        s3.start()
        with PulsarRsBroker(tmp_path, "k", settings) as broker:
            ledgers = rest(broker, "GET", f"{topic_path(topic)}/internalStats")["ledgers"]
            assert not any(x["offloaded"] for x in ledgers), ledgers
            c = client(broker)
            assert [m.data() for m in read_all(c, topic, n)] == [b"m-%05d" % i for i in range(n)]
            # Pulsar 4.1's offload by size (PIP-416): all but the newest 0 bytes.
            assert Admin(broker.http).topics.offload_by_size(topic, 0) == (ledgers[-1]["ledgerId"], 0)
            assert settled(broker, topic)["status"] == "SUCCESS"
            ledgers = rest(broker, "GET", f"{topic_path(topic)}/internalStats")["ledgers"]
            # Only the completed attempt's objects are in the bucket: one data and one index object
            # per offloaded ledger, none of the killed attempt's.
            keys = [p.name for p in (s3.basedir / "tiered-killed").glob("*") if p.is_file()]
            assert sorted(objects(s3, "tiered-killed")) == [x["ledgerId"] for x in ledgers[:-1]]
            assert len([k for k in keys if OBJECT.match(k)]) == 2 * (len(ledgers) - 1), keys
            c.close()


def test_bad_offload_settings_stop_the_broker_with_the_key_named(tmp_path: Path) -> None:
    from pulsar_rs.testing.process import PulsarReferenceError

    with pytest.raises(PulsarReferenceError) as bad:
        PulsarRsBroker(tmp_path, "bad", {"managedLedgerOffloadDriver": "ftp"})
    assert "ftp" in str(bad.value) and "not supported" in str(bad.value), bad.value
    with pytest.raises(PulsarReferenceError) as missing:
        PulsarRsBroker(tmp_path, "bad2", {"managedLedgerOffloadDriver": "S3", "managedLedgerOffloadBucket": "b"})
    assert "endpoint" in str(missing.value).lower(), missing.value
