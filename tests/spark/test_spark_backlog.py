"""PySpark backlog analytics (spark/) against real snapshots of a real broker.

A ``pulsar_rs.Broker`` gets traffic from the official ``pulsar-client`` (several topics, ack holes,
batches, several ledgers); its state is exported live and offline with ``pulsar_rs.export``; the
Spark jobs run on a real local session (``local[2]``) and their backlog figures must equal the
broker's own: the exported ``subscriptions`` table and the admin REST ``msgBacklog``. Synthetic
snapshots (written in the same layout) cover time-to-breach between two snapshots and the edges.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pulsar
import pytest

import pulsar_rs
from conftest import admin, new_client

pytest.importorskip("pyarrow")
pytest.importorskip("pyspark")
export = pytest.importorskip("pulsar_rs.export")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "spark"))

from pulsar_rs_spark import cli, synthetic  # noqa: E402
from pyspark.sql import SparkSession  # noqa: E402

pytestmark = [
    pytest.mark.spark,
    pytest.mark.timeout(300),
    # PySpark 4.1 (the Spark Iceberg's runtime targets, pyproject.toml) leaves the socket of a
    # finished result-serving connection to the garbage collector.
    pytest.mark.filterwarnings("ignore:Exception ignored in. <socket.socket:pytest.PytestUnraisableExceptionWarning"),
]

NS = "persistent://public/default/"


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    if not (shutil.which("java") or os.environ.get("JAVA_HOME")):
        pytest.skip("PySpark needs a Java runtime")
    session = (
        SparkSession.builder.master("local[2]")
        .appName("pulsar_rs spark tests")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "1g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def by_sub(rows: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r["topic"], r["subscription"]): r for r in rows}


def admin_backlog(broker: pulsar_rs.Broker, topic: str) -> dict[str, int]:
    status, stats = admin(broker.admin_url, "GET", f"/admin/v2/persistent/public/default/{topic}/stats")
    assert status == 200, stats
    assert isinstance(stats, dict)
    return {name: s["msgBacklog"] for name, s in stats["subscriptions"].items()}


def wait_backlog(broker: pulsar_rs.Broker, topic: str, expected: dict[str, int], timeout_s: float = 10) -> None:
    """Acks are fire-and-forget in the client: wait until the broker has applied them."""
    deadline = time.monotonic() + timeout_s
    while (got := admin_backlog(broker, topic)) != expected and time.monotonic() < deadline:
        time.sleep(0.05)  # poll: acks are fire-and-forget in the client
    assert got == expected


# --- the real broker ------------------------------------------------------------------------------


class Traffic:
    """What the test sent and acknowledged, to check the Spark figures against."""

    def __init__(self) -> None:
        self.unacked: dict[tuple[str, str], list[pulsar.Message]] = {}
        self.expected_backlog: dict[str, dict[str, int]] = {}


def produce_and_consume(client: pulsar.Client, broker: pulsar_rs.Broker) -> Traffic:
    """Three topics: ``keys`` (keyed, two subscriptions, ack holes over several ledgers),
    ``batched`` (batch entries, half acknowledged in whole batches), ``idle`` (nothing consumed)."""
    tr = Traffic()
    earliest = pulsar.InitialPosition.Earliest

    # keys: 60 keyed messages, one per entry; s-holes acks all but 9 of them, s-none acks nothing.
    holes = client.subscribe(
        NS + "keys", "s-holes", consumer_type=pulsar.ConsumerType.Shared, initial_position=earliest
    )
    client.subscribe(NS + "keys", "s-none", initial_position=earliest).close()
    p = client.create_producer(NS + "keys", batching_enabled=False)
    for i in range(60):
        # key-0 is hot: every other message.
        p.send(f"k{i}".encode(), partition_key="key-0" if i % 2 == 0 else f"key-{i % 5}")
    skip = {0, 7, 8, 20, 21, 22, 23, 24, 41}
    for i in range(60):
        m = holes.receive(timeout_millis=5000)
        if i in skip:
            tr.unacked.setdefault((NS + "keys", "s-holes"), []).append(m)
        else:
            holes.acknowledge(m)
    tr.expected_backlog["keys"] = {"s-holes": len(skip), "s-none": 60}
    tr.holes_consumer = holes  # type: ignore[attr-defined]  # kept open: a live export lists it

    # batched: 10 batches of 20 messages; acknowledging the first 100 messages acks 5 entries.
    bc = client.subscribe(NS + "batched", "s-half", initial_position=earliest)
    bp = client.create_producer(
        NS + "batched", batching_enabled=True, batching_max_messages=20, batching_max_publish_delay_ms=1000
    )
    for b in range(10):
        for i in range(20):
            bp.send_async(f"b{b}-{i}".encode(), None)
        bp.flush()
    for i in range(200):
        m = bc.receive(timeout_millis=5000)
        if i < 100:
            bc.acknowledge(m)
    tr.expected_backlog["batched"] = {"s-half": 5}

    # idle: 25 messages, a subscription that never reads.
    client.subscribe(NS + "idle", "s-idle", initial_position=earliest).close()
    ip = client.create_producer(NS + "idle", batching_enabled=False)
    for i in range(25):
        ip.send(f"i{i}".encode())
    tr.expected_backlog["idle"] = {"s-idle": 25}
    tr.idle_producer = ip  # type: ignore[attr-defined]

    for topic, expected in tr.expected_backlog.items():
        wait_backlog(broker, topic, expected)
    return tr


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A broker with traffic, two live snapshots (more data in ``idle`` in the second) and one
    offline snapshot of the stopped broker's data directory."""
    base = tmp_path_factory.mktemp("spark-live")
    broker = pulsar_rs.Broker(
        data_dir=base / "data", managedLedgerMaxEntriesPerLedger=8, managedLedgerMinLedgerRolloverTimeMinutes=0
    )
    client: pulsar.Client | None = new_client(broker.service_url)
    try:
        assert client is not None
        tr = produce_and_consume(client, broker)
        out = base / "snapshots"
        first = json.loads(export.write_snapshot(broker, out, broker_id="b1").read_text())
        stats1 = {t: admin_backlog(broker, t) for t in tr.expected_backlog}
        time.sleep(0.05)  # the exporter stamps snapshot_ms with the real time: keep the two apart
        for i in range(40):
            tr.idle_producer.send(f"more-{i}".encode())  # type: ignore[attr-defined]
        tr.expected_backlog["idle"] = {"s-idle": 65}
        wait_backlog(broker, "idle", tr.expected_backlog["idle"])
        second = json.loads(export.write_snapshot(broker, out, broker_id="b1").read_text())
        stats2 = {t: admin_backlog(broker, t) for t in tr.expected_backlog}
        tables = export.snapshot_tables(broker)
        client.close()
        client = None
        broker.stop()
        offline_out = base / "offline"
        offline = json.loads(export.write_snapshot(base / "data", offline_out, broker_id="b1").read_text())
        yield {
            "traffic": tr,
            "out": out,
            "offline_out": offline_out,
            "snapshots": (first["snapshot_ms"], second["snapshot_ms"]),
            "offline_ms": offline["snapshot_ms"],
            "admin": (stats1, stats2),
            "tables": tables,
        }
    finally:
        if client is not None:
            client.close()
        broker.cleanup()


@pytest.fixture(scope="module")
def live_result(
    live: dict[str, Any], spark: SparkSession, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[cli.RunResult]:
    out = tmp_path_factory.mktemp("spark-results")
    res = cli.run(spark, str(live["out"]), str(out), snapshot="latest", quota_bytes=100_000, top_n=3)
    yield res
    res.unpersist()


def test_live_backlog_equals_broker_stats(live: dict[str, Any], live_result: cli.RunResult) -> None:
    rows = by_sub(live_result.rows("backlog"))
    stats2 = live["admin"][1]
    assert live_result.selected == [("b1", live["snapshots"][1])]
    assert {(t.removeprefix(NS), s) for t, s in rows} == {(t, s) for t, subs in stats2.items() for s in subs}
    for (topic, sub), r in rows.items():
        short = topic.removeprefix(NS)
        # Spark (entries + subscriptions + ack_ranges) = exporter (cursor) = admin REST msgBacklog.
        assert r["backlog_entries"] == r["broker_backlog_entries"] == stats2[short][sub], (topic, sub)
        assert r["matches_broker"] is True
        assert r["oldest_unacked_publish_ms"] == r["broker_oldest_unacked_publish_ms"], (topic, sub)
        assert r["snapshot_ms"] - r["oldest_unacked_publish_ms"] == r["oldest_unacked_age_ms"]

    holes = rows[NS + "keys", "s-holes"]
    unacked = live["traffic"].unacked[NS + "keys", "s-holes"]
    assert holes["backlog_messages"] == len(unacked) == 9
    assert holes["oldest_unacked_publish_ms"] == unacked[0].publish_timestamp()
    # Holes {0}, {7, 8}, {20..24}, {41}: four acknowledged ranges follow them (per ledger).
    assert holes["ack_ranges"] >= 3
    assert holes["acked_entries"] == 60 - 9
    assert holes["ack_ranges_per_1k_backlog"] == pytest.approx(holes["ack_ranges"] * 1000 / 9)
    assert holes["backlog_bytes"] < rows[NS + "keys", "s-none"]["backlog_bytes"]

    batched = rows[NS + "batched", "s-half"]
    assert batched["backlog_entries"] == 5
    assert batched["backlog_messages"] == 100  # a batch entry holds 20 messages
    assert rows[NS + "idle", "s-idle"]["backlog_messages"] == 65


def test_offline_snapshot_gives_the_same_backlog(live: dict[str, Any], spark: SparkSession) -> None:
    res = cli.run(spark, str(live["offline_out"]), None, snapshot=str(live["offline_ms"]), html=False)
    try:
        rows = by_sub(res.rows("backlog"))
        stats2 = live["admin"][1]
        for (topic, sub), r in rows.items():
            assert r["backlog_entries"] == r["broker_backlog_entries"] == stats2[topic.removeprefix(NS)][sub]
        assert res.rows("consumer_lag") == []  # offline exports have no consumers
    finally:
        res.unpersist()


def test_first_snapshot_and_all_snapshots(live: dict[str, Any], spark: SparkSession) -> None:
    first, second = live["snapshots"]
    res = cli.run(spark, str(live["out"]), None, snapshot="all", html=False, jobs_wanted=["backlog"])
    try:
        rows = res.rows("backlog")
        assert {r["snapshot_ms"] for r in rows} == {first, second}
        for r in rows:
            stats = live["admin"][0 if r["snapshot_ms"] == first else 1]
            assert r["backlog_entries"] == stats[r["topic"].removeprefix(NS)][r["subscription"]]
            assert r["matches_broker"]
            if r["snapshot_ms"] == first:
                assert r["inflow_bytes_per_s"] is None and r["time_to_breach_s"] is None
    finally:
        res.unpersist()


def test_live_time_to_breach_from_two_snapshots(live: dict[str, Any], live_result: cli.RunResult) -> None:
    import pyarrow.parquet as pq

    first, second = live["snapshots"]
    sizes = {}
    for ms in (first, second):
        path = live["out"] / "topics" / "broker=b1" / f"snapshot_ms={ms}"
        sizes[ms] = {r["topic"]: r["size_bytes"] for r in pq.read_table(path).to_pylist()}
    topics = {r["topic"]: r for r in live_result.rows("topic_quota")}
    idle = topics[NS + "idle"]
    assert idle["previous_snapshot_ms"] == first
    grown = sizes[second][NS + "idle"] - sizes[first][NS + "idle"]
    assert grown > 0
    rate = idle["inflow_bytes_per_s"]
    assert rate == pytest.approx(grown * 1000 / (second - first))
    assert idle["quota_limit_bytes"] == 100_000
    assert idle["quota_headroom_bytes"] == 100_000 - idle["topic_backlog_bytes"]
    assert idle["time_to_breach_s"] == pytest.approx(idle["quota_headroom_bytes"] / rate)
    # keys and batched got nothing between the snapshots: no inflow, no time to breach.
    for name in ("keys", "batched"):
        assert topics[NS + name]["inflow_bytes_per_s"] == 0
        assert topics[NS + name]["time_to_breach_s"] is None


def test_hot_keys_and_consumers(live: dict[str, Any], live_result: cli.RunResult) -> None:
    hot = [r for r in live_result.rows("hot_keys") if r["topic"] == NS + "keys"]
    assert [r["rank"] for r in sorted(hot, key=lambda r: r["rank"])] == [1, 2, 3]
    top = min(hot, key=lambda r: r["rank"])
    # s-none owes all 60 (36 of them key-0: even i and i % 5 == 0); s-holes owes 0, 8, 20, 22, 24.
    assert top["key"] == "key-0"
    assert top["backlog_messages"] == 36 + 5
    assert top["subscriptions"] == 2
    assert top["key_hash"] == synthetic.key_hash("key-0")
    consumers = [r for r in live_result.rows("consumer_lag") if r["subscription"] == "s-holes"]
    assert len(consumers) == 1
    assert consumers[0]["unacked_messages"] == 9
    assert consumers[0]["subscription_backlog_entries"] == 9
    lag = {r["subscription"]: r for r in live_result.rows("lag_percentiles")}
    assert lag["s-none"]["p50_backlog_entries"] == 60
    assert lag["s-idle"]["max_backlog_entries"] == 65


def test_report_and_parquet_outputs(live_result: cli.RunResult) -> None:
    import pyarrow.parquet as pq

    assert live_result.report_path is not None
    page = Path(live_result.report_path).read_text()
    for name in ("keys", "batched", "idle"):
        assert NS + name in page
    assert page.count("<svg") >= 4
    assert "s-holes" in page and "key-0" in page
    for name, path in live_result.outputs.items():
        assert pq.read_table(path).num_rows > 0 or name == "consumer_lag", name


# --- synthetic snapshots --------------------------------------------------------------------------


def _topic(name: str, size: int, quota: int = -1, entries: int = 0) -> dict[str, Any]:
    return {
        "topic": NS + name,
        "partition": -1,
        "entries": entries,
        "size_bytes": size,
        "ledgers": 1,
        "last_confirmed_ledger": 0,
        "last_confirmed_entry": entries - 1,
        "subscriptions": 1,
        "producers": 0,
        "msg_rate_in": 0.0,
        "backlog_quota_limit_bytes": quota,
        "backlog_quota_limit_seconds": -1,
        "compacted_ledger_id": None,
        "compaction_horizon_ledger": None,
        "compaction_horizon_entry": None,
        "compacted_entries": 0,
    }


def _sub(topic: str, md: tuple[int, int], backlog: int, name: str = "s") -> dict[str, Any]:
    return {
        "topic": NS + topic,
        "subscription": name,
        "durable": True,
        "type": None,
        "mark_delete_ledger": md[0],
        "mark_delete_entry": md[1],
        "read_ledger": md[0],
        "read_entry": md[1] + 1,
        "backlog_entries": backlog,
        "backlog_size_bytes": 0,
        "acked_entries": 0,
        "ack_ranges": 0,
        "oldest_unacked_publish_ms": None,
        "consumers": 0,
        "unacked_messages": 0,
    }


def _entries(topic: str, ledgers: dict[int, int], size: int = 100, t0: int = 0) -> list[dict[str, Any]]:
    rows = []
    for ledger, n in ledgers.items():
        for e in range(n):
            rows.append(
                {
                    "topic": NS + topic,
                    "ledger_id": ledger,
                    "entry_id": e,
                    "publish_time_ms": t0 + ledger * 1000 + e,
                    "size_bytes": size,
                    "messages": 1,
                    "key": None,
                    "key_hash": None,
                }
            )
    return rows


def test_time_to_breach_between_two_synthetic_snapshots(spark: SparkSession, tmp_path: Path) -> None:
    t1, t2 = 1_000_000, 1_010_000  # 10 s apart
    # grows: 1000 -> 3000 bytes stored (200 B/s); backlog = 20 entries x 100 B; topic quota 10 000.
    # default: no topic quota (the --quota-bytes default applies), grows 500 B/s, backlog 2000 B.
    # shrinks: stored bytes fall (trimmed): no time to breach. late: only in the second snapshot.
    # over: backlog already above its quota: time to breach 0.
    synthetic.write_tables(
        tmp_path,
        {
            "topics": [
                _topic("grows", 1000, 10_000),
                _topic("default", 0),
                _topic("shrinks", 9000, 50_000),
                _topic("over", 1000, 500),
            ],
        },
        broker="b",
        snapshot_ms=t1,
    )
    synthetic.write_tables(
        tmp_path,
        {
            "topics": [
                _topic("grows", 3000, 10_000, 30),
                _topic("default", 5000, -1, 20),
                _topic("shrinks", 3000, 50_000, 10),
                _topic("late", 100, 1_000, 1),
                _topic("over", 2000, 500, 20),
            ],
            "entries": _entries("grows", {0: 30})
            + _entries("default", {0: 20})
            + _entries("shrinks", {0: 10})
            + _entries("late", {0: 1})
            + _entries("over", {0: 20}),
            "subscriptions": [
                _sub("grows", (0, 9), 20),
                _sub("default", (0, -1), 20),
                _sub("shrinks", (0, 4), 5),
                _sub("late", (0, -1), 1),
                _sub("over", (0, -1), 20),
            ],
        },
        broker="b",
        snapshot_ms=t2,
    )
    res = cli.run(spark, str(tmp_path), None, snapshot="latest", quota_bytes=12_000, html=False)
    try:
        topics = {r["topic"].removeprefix(NS): r for r in res.rows("topic_quota")}
        assert set(topics) == {"grows", "default", "shrinks", "late", "over"}
        g = topics["grows"]
        assert (g["inflow_bytes_per_s"], g["quota_limit_bytes"], g["topic_backlog_bytes"]) == (200.0, 10_000, 2000)
        assert g["quota_headroom_bytes"] == 8000
        assert g["time_to_breach_s"] == pytest.approx(40.0)
        d = topics["default"]
        assert (d["inflow_bytes_per_s"], d["quota_limit_bytes"], d["quota_headroom_bytes"]) == (500.0, 12_000, 10_000)
        assert d["time_to_breach_s"] == pytest.approx(20.0)
        assert topics["shrinks"]["inflow_bytes_per_s"] == -600.0
        assert topics["shrinks"]["time_to_breach_s"] is None
        assert topics["late"]["inflow_bytes_per_s"] is None and topics["late"]["time_to_breach_s"] is None
        assert topics["over"]["quota_headroom_bytes"] == 500 - 2000
        assert topics["over"]["time_to_breach_s"] == 0.0
        subs = {r["topic"].removeprefix(NS): r for r in res.rows("backlog")}
        assert subs["grows"]["time_to_breach_s"] == pytest.approx(40.0)
        assert all(r["matches_broker"] for r in subs.values())
        # The first snapshot alone: no previous one, so no inflow.
        first = cli.run(spark, str(tmp_path), None, snapshot=str(t1), html=False, jobs_wanted=["backlog"])
        assert all(r["time_to_breach_s"] is None for r in first.rows("topic_quota"))
        first.unpersist()
    finally:
        res.unpersist()


def test_backlog_across_ledgers_with_holes_and_a_mismatch(spark: SparkSession, tmp_path: Path) -> None:
    """Mark-delete inside ledger 3, ranges in ledgers 3 and 5, a trimmed ledger 1; the cursor's
    figure for one subscription is deliberately wrong and must be flagged."""
    ranges = synthetic.ack_ranges_of([(3, 6), (3, 7), (5, 0), (5, 1), (5, 2), (5, 9)])
    synthetic.write_tables(
        tmp_path,
        {
            "topics": [_topic("t", 10_000, entries=30)],
            "entries": _entries("t", {3: 10, 5: 10, 6: 10}, t0=5000),
            "subscriptions": [_sub("t", (3, 4), 30 - 5 - 6, "good"), _sub("t", (3, 4), 7, "wrong")],
            "ack_ranges": [
                {
                    "topic": NS + "t",
                    "subscription": sub,
                    "start_ledger": a,
                    "start_entry": b,
                    "end_ledger": c,
                    "end_entry": d,
                    "entries": n,
                }
                for sub in ("good", "wrong")
                for a, b, c, d, n in ranges
            ],
        },
        broker="7",  # a numeric broker id stays a string
        snapshot_ms=100_000,
    )
    res = cli.run(spark, str(tmp_path), None, html=False)
    try:
        rows = {r["subscription"]: r for r in res.rows("backlog")}
        good = rows["good"]
        assert good["broker"] == "7"
        assert good["backlog_entries"] == 19 and good["matches_broker"] is True
        assert (good["ack_ranges"], good["acked_entries"]) == (3, 6)
        assert good["oldest_unacked_publish_ms"] == 5000 + 3000 + 5  # entry (3, 5)
        assert good["oldest_unacked_age_ms"] == 100_000 - 8005
        assert good["backlog_bytes"] == 1900
        assert rows["wrong"]["matches_broker"] is False
    finally:
        res.unpersist()


def test_generated_snapshot_is_consistent_and_cli_runs(spark: SparkSession, tmp_path: Path) -> None:
    """The benchmark's generator agrees with the Spark job, and the command line works in-process."""
    counts = synthetic.generate(tmp_path / "in", topics=30, entries=6000, keys=20, entries_per_ledger=70, seed=3)
    assert counts["entries"] == 6000 and counts["subscriptions"] == 60
    assert cli.main(["--input", str(tmp_path / "in"), "--output", str(tmp_path / "out"), "--top-keys", "2"]) == 0
    assert SparkSession.getActiveSession() is not None  # main() left the test's session running
    backlog = spark.read.parquet(str(tmp_path / "out" / "backlog"))
    assert backlog.count() == 60
    assert backlog.where("NOT matches_broker").count() == 0
    hot = spark.read.parquet(str(tmp_path / "out" / "hot_keys"))
    assert hot.count() == 60  # 2 keys per topic
    assert (tmp_path / "out" / "report.html").stat().st_size > 1000


def test_trends_rank_the_topic_whose_time_to_breach_shrinks_fastest(spark: SparkSession, tmp_path: Path) -> None:
    """Four snapshots 10 s apart: ``accel`` doubles its inflow each period, ``steady`` keeps it,
    ``noquota`` has no limit; backlog = stored bytes (one never-reading subscription)."""
    sizes = {"accel": [0, 1000, 3000, 7000], "steady": [0, 1000, 2000, 3000], "noquota": [0, 5000, 10000, 15000]}
    quota = {"accel": 100_000, "steady": 100_000, "noquota": -1}
    snaps = [1_000_000 + 10_000 * i for i in range(4)]
    for i, ms in enumerate(snaps):
        subs = []
        for name, sz in sizes.items():
            sub = _sub(name, (0, -1), sz[i] // 100)
            sub["backlog_size_bytes"] = sz[i]
            subs.append(sub)
        topics = [_topic(name, sz[i], quota[name], sz[i] // 100) for name, sz in sizes.items()]
        synthetic.write_tables(tmp_path / "in", {"topics": topics, "subscriptions": subs}, broker="b", snapshot_ms=ms)
    out = tmp_path / "out"
    res = cli.run(spark, str(tmp_path / "in"), str(out), jobs_wanted=["trends"])
    try:
        series = {(r["topic"].removeprefix(NS), r["snapshot_ms"]): r for r in res.rows("trend_topics")}
        assert len(series) == 12
        assert series[("accel", snaps[3])]["inflow_bytes_per_s"] == 400.0
        assert series[("accel", snaps[3])]["backlog_growth_bytes_per_s"] == 400.0
        assert series[("accel", snaps[3])]["time_to_breach_s"] == pytest.approx(93_000 / 400)
        assert series[("steady", snaps[1])]["time_to_breach_s"] == pytest.approx(990.0)
        assert series[("accel", snaps[0])]["time_to_breach_s"] is None  # no previous snapshot
        summary = {r["topic"].removeprefix(NS): r for r in res.rows("trend_summary")}
        a, s, n = summary["accel"], summary["steady"], summary["noquota"]
        assert (a["ttb_shrink_rank"], s["ttb_shrink_rank"], n["ttb_shrink_rank"]) == (1, 2, None)
        assert a["ttb_slope"] == pytest.approx((232.5 - 990.0) / 20)
        assert s["ttb_slope"] == pytest.approx(-1.0)
        assert (a["first_time_to_breach_s"], a["last_time_to_breach_s"]) == (pytest.approx(990.0), pytest.approx(232.5))
        assert (a["snapshots"], a["ttb_points"], a["first_backlog_bytes"], a["last_backlog_bytes"]) == (4, 3, 0, 7000)
        assert n["backlog_slope_bytes_per_s"] == pytest.approx(500.0)
        for chart in ("trend_backlog", "trend_inflow", "trend_time_to_breach"):
            svg = (out / f"{chart}.svg").read_text()
            assert svg.startswith("<svg") and svg.count("<polyline") == 2, chart  # accel and steady
        page = (out / "report.html").read_text()
        assert "Trends over 4 snapshots" in page and page.index("/accel</td>") < page.index("/steady</td>")
    finally:
        res.unpersist()
