"""Limits a hostile or careless client meets (issue 37), beyond what the differential tests compare
with Apache Pulsar (tests/differential/test_diff_limits.py): the same-address limits, and admin work
bounded by what exists rather than by a declared partition count.

The partition-count request below once made the broker create and load every declared partition
(memory grew by about 15 MB/s until it was stopped); now only the first ``EAGER_PARTITIONS`` exist up
front and the rest are created on first use, so the request, the stats and the topic list answer
within their deadlines (partitioned stats and internal stats, as Pulsar's, cover the partitions
that exist) and the process stays within a fixed memory budget.
"""

from __future__ import annotations

import json
import os
import time
import urllib.request

import pulsar
import pytest

from conftest import admin
from pulsar_rs import Admin

#: `EAGER_PARTITIONS` in rust/broker/src/service/topic_quota.rs.
EAGER_PARTITIONS = 1024
#: How long a read of the huge topic may take (the issue's client gave up after 20 s).
DEADLINE_S = 20


def _rss_mb() -> float:
    """Resident memory of this process (the broker runs in it), MB."""
    with open(f"/proc/{os.getpid()}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def _get(url: str, timeout: float) -> tuple[int, object, float]:
    t0 = time.monotonic()
    with urllib.request.urlopen(url, timeout=timeout) as r:
        body = json.loads(r.read())
        return r.status, body, time.monotonic() - t0


@pytest.mark.slow  # about 11 s here (README, 'Tests')
def test_a_billion_declared_partitions_cost_what_exists(pulsar_broker) -> None:
    url = pulsar_broker.admin_url
    base = "/admin/v2/persistent/public/default/huge"
    before = _rss_mb()
    t0 = time.monotonic()
    status, body = admin(url, "PUT", f"{base}/partitions", 1_000_000_000)
    assert status == 204, (status, body)
    created_s = time.monotonic() - t0
    after_create = _rss_mb()

    # The reads answer within the deadline the client gave up at (20 s)...
    status, stats, stats_s = _get(url + f"{base}/partitioned-stats", timeout=DEADLINE_S)
    assert status == 200
    assert stats["metadata"]["partitions"] == 1_000_000_000
    # Per-partition stats for the partitions that exist: the eager ones.
    assert len(stats["partitions"]) == EAGER_PARTITIONS

    status, internal, internal_s = _get(url + f"{base}/partitioned-internalStats", timeout=DEADLINE_S)
    assert status == 200
    assert internal["metadata"]["partitions"] == 1_000_000_000
    assert len(internal["partitions"]) == EAGER_PARTITIONS

    status, names, list_s = _get(url + "/admin/v2/persistent/public/default", timeout=DEADLINE_S)
    assert status == 200
    assert len(names) == EAGER_PARTITIONS, len(names)
    status, names, _ = _get(url + "/admin/v2/namespaces/public/default/topics", timeout=DEADLINE_S)
    assert len(names) == EAGER_PARTITIONS, len(names)
    # ... and asking again does not grow the broker: its memory stays flat across reads.
    for _ in range(3):
        _get(url + f"{base}/partitioned-stats", timeout=DEADLINE_S)
        _get(url + f"{base}/partitioned-internalStats", timeout=DEADLINE_S)
    reads_grown = _rss_mb() - after_create
    assert reads_grown < 100, f"RSS grew by {reads_grown:.0f} MB over the reads"

    # A partition past the eager ones is created by its first producer and then counted.
    c = pulsar.Client(pulsar_broker.service_url)
    try:
        far = "persistent://public/default/huge-partition-999999999"
        c.create_producer(far).send(b"far")
        status, stats, _ = _get(url + f"{base}/partitioned-stats", timeout=DEADLINE_S)
        assert len(stats["partitions"]) == EAGER_PARTITIONS + 1
        assert stats["msgInCounter"] == 1
    finally:
        c.close()
    grown = _rss_mb() - before
    print(
        f"create {created_s:.1f} s, stats {stats_s:.1f} s, internal stats {internal_s:.1f} s, "
        f"list {list_s:.1f} s, RSS +{grown:.0f} MB (+{reads_grown:.0f} MB over the reads)"
    )
    # The budget: 1 024 loaded partitions. Loading all the declared ones grew by gigabytes.
    assert grown < 600, f"RSS grew by {grown:.0f} MB"

    status, body = admin(url, "DELETE", f"{base}/partitions")
    assert status == 204, (status, body)
    assert admin(url, "GET", "/admin/v2/persistent/public/default")[1] == []


@pytest.mark.parametrize("kind", ["producers", "consumers"])
def test_same_address_limits(pulsar_broker_factory, kind: str) -> None:
    key = f"maxSameAddress{kind.capitalize()}PerTopic"
    b = pulsar_broker_factory(**{key: 2})
    c = pulsar.Client(b.service_url, operation_timeout_seconds=5)
    topic = f"persistent://public/default/same-address-{kind}"
    try:

        def make():
            if kind == "producers":
                return c.create_producer(topic)
            return c.subscribe(topic, f"s{time.monotonic_ns()}", consumer_type=pulsar.ConsumerType.Shared)

        first = [make(), make()]  # every client here comes from 127.0.0.1
        expected = pulsar.ProducerBusy if kind == "producers" else pulsar.ConsumerBusy
        with pytest.raises(expected):
            make()
        first[0].close()
        make().close()  # room again
    finally:
        c.close()


def test_limit_settings_are_checked(pulsar_broker_factory) -> None:
    from pulsar_rs import InvalidConfigError

    with pytest.raises(InvalidConfigError, match="maxProducersPerTopic"):
        pulsar_broker_factory(maxProducersPerTopic=-1)


@pytest.mark.slow
def test_a_producer_that_never_reads_its_receipts_is_paused(pulsar_broker) -> None:
    """A client flooding SENDs without reading one receipt: the broker stops reading it once about
    1 MiB of answers wait (``crate::outbound``), so its socket stops taking data and the broker's
    memory stays flat (before, it read on and grew by about 4 MB/s)."""
    import threading

    import raw_protocol as rp

    topic = "persistent://public/default/unread-receipts"
    raw = rp.Raw(pulsar_broker.service_url)
    raw.connect()
    raw.create_producer(topic)
    raw.sock.settimeout(0.5)
    sent, stop = [0], threading.Event()

    def flood() -> None:
        while not stop.is_set():
            try:
                raw.send(rp.send_frame(1, sent[0], b"z" * 1024))
                sent[0] += 1
            except TimeoutError:
                continue
            except OSError:
                return

    before = _rss_mb()
    t = threading.Thread(target=flood, daemon=True)
    t.start()
    try:
        time.sleep(6)  # measures the flood over real time (the broker's reads stop)
        at_6s = sent[0]
        time.sleep(4)  # negative check: no more SENDs read in 4 more seconds of real time
        at_10s = sent[0]
        grown = _rss_mb() - before
    finally:
        stop.set()
        t.join()
        raw.close()
    assert at_10s == at_6s, f"the broker kept reading: {at_6s} SENDs after 6 s, {at_10s} after 10 s"
    assert grown < 100, f"RSS grew by {grown:.0f} MB"
    # The broker still serves others.
    c = pulsar.Client(pulsar_broker.service_url)
    try:
        c.create_producer(topic + "-other").send(b"ok")
    finally:
        c.close()


def test_partitioned_internal_stats(pulsar_broker) -> None:
    """Pulsar's ``PartitionedTopicInternalStats``: the metadata and each partition's internal stats;
    404 with Pulsar's message for a topic that is not partitioned."""
    url = pulsar_broker.admin_url
    base = "/admin/v2/persistent/public/default"
    assert admin(url, "PUT", f"{base}/parted/partitions", 3)[0] == 204
    c = pulsar.Client(pulsar_broker.service_url)
    try:
        c.create_producer("persistent://public/default/parted-partition-1").send(b"one")
    finally:
        c.close()
    body = Admin(url).topics.partitioned_internal_stats("persistent://public/default/parted")
    assert body["metadata"]["partitions"] == 3
    names = [f"persistent://public/default/parted-partition-{i}" for i in range(3)]
    assert sorted(body["partitions"]) == names
    assert [body["partitions"][n]["entriesAddedCounter"] for n in names] == [0, 1, 0]
    assert body["partitions"][names[1]].keys() >= {"ledgers", "cursors", "lastConfirmedEntry"}
    assert admin(url, "PUT", f"{base}/plain")[0] == 204
    assert admin(url, "GET", f"{base}/plain/partitioned-internalStats") == (
        404,
        {"reason": "Partitioned Topic persistent://public/default/plain not found"},
    )
