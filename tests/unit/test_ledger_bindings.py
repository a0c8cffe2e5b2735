"""The storage layer through the Python bindings: pulsar_rs.ManagedLedger, Cursor, Position."""

from __future__ import annotations

import pickle
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import pulsar_rs
from pulsar_rs import (
    ClosedError,
    CorruptEntryError,
    Cursor,
    InvalidConfigError,
    InvalidPositionError,
    ManagedLedger,
    Position,
    PulsarRsError,
)

# Small ledgers, rolled over as soon as they are full.
SMALL: dict[str, Any] = {"managedLedgerMaxEntriesPerLedger": 10, "managedLedgerMinLedgerRolloverTimeMinutes": 0}


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def payloads(cursor: Cursor, n: int = 1_000_000) -> list[bytes]:
    return [data for _, data in cursor.read_entries(n)]


def read_all(cursor: Cursor) -> list[tuple[Position, bytes]]:
    out: list[tuple[Position, bytes]] = []
    while batch := cursor.read_entries(7):
        out.extend(batch)
    return out


# --- Position -----------------------------------------------------------------------------


def test_position_is_a_small_ordered_value() -> None:
    p = Position(3, 7)
    assert (p.ledger_id, p.entry_id) == (3, 7)
    assert p.to_tuple() == (3, 7) == tuple(p)
    ledger_id, entry_id = p
    assert (ledger_id, entry_id) == (3, 7)
    assert Position.from_tuple((3, 7)) == p
    assert repr(p) == "Position(ledger_id=3, entry_id=7)"
    assert str(p) == "3:7"
    assert p.next() == Position(3, 8)
    assert sorted([Position(2, 0), Position(1, 9), Position(1, 2), Position.EARLIEST]) == [
        Position.EARLIEST,
        Position(1, 2),
        Position(1, 9),
        Position(2, 0),
    ]
    assert Position(1, 9) < Position(2, 0) <= Position(2, 0) < Position.LATEST
    assert Position(1, 2) != Position(2, 1)
    assert Position(1, 2) != (1, 2)
    assert len({Position(1, 2), Position(1, 2), Position(2, 1)}) == 2
    assert pickle.loads(pickle.dumps(p)) == p
    with pytest.raises(AttributeError):
        p.ledger_id = 4  # type: ignore[misc]


# --- appends and reads ----------------------------------------------------------------------


def test_append_read_round_trip(tmp_path: Path) -> None:
    data = [b"", b"x", bytes(range(256)), b"\x00" * 100_000, b"last"]
    with ManagedLedger(tmp_path, "tenant/ns/topic") as ml:
        assert ml.name == "tenant/ns/topic"
        assert ml.path == tmp_path
        assert ml.durable
        cursor = ml.open_cursor("sub", earliest=True)
        assert cursor.read_entries(10) == []
        positions = [ml.add_entry(d) for d in data]
        assert positions == sorted(positions)
        assert len(set(positions)) == len(positions)
        assert ml.last_confirmed == positions[-1]
        assert cursor.read_entries(100) == list(zip(positions, data, strict=True))
        assert cursor.read_entries(100) == []
        more = ml.add_entries([b"a", b"b", b"c"])
        assert more == sorted(more) and more[0] > positions[-1]
        assert payloads(cursor) == [b"a", b"b", b"c"]
        reader = ml.open_reader(Position.EARLIEST)
        assert not reader.durable
        assert payloads(reader) == [*data, b"a", b"b", b"c"]
        from_third = ml.open_reader(positions[2], inclusive=True)
        assert payloads(from_third)[0] == data[2]
        after_third = ml.open_reader(positions[2])
        assert payloads(after_third)[0] == data[3]
        latest = ml.open_reader(Position.LATEST)
        assert latest.read_entries(10) == []
        tail = ml.add_entry(b"tail")
        assert latest.read_entries(10) == [(tail, b"tail")]
        stats = ml.stats()
        assert stats["number_of_entries"] == len(data) + 4
        assert stats["total_size"] == sum(map(len, data)) + 3 + 4
        assert stats["last_confirmed"] == tail
        with pytest.raises(TypeError):
            ml.add_entry("not bytes")  # type: ignore[arg-type]
    assert ml.closed
    with pytest.raises(ClosedError):
        ml.add_entry(b"after close")
    with pytest.raises(PulsarRsError):
        cursor.read_entries(1)


def test_non_durable_mode(tmp_path: Path) -> None:
    with ManagedLedger(tmp_path, journalSyncData=False) as ml:
        assert not ml.durable
        positions = ml.add_entries([b"%d" % i for i in range(1000)])
        assert len(positions) == 1000
        assert payloads(ml.open_reader(Position.EARLIEST))[-1] == b"999"
        assert ml.journal_stats()["durable"] is False


def test_rollover_by_entry_count(tmp_path: Path) -> None:
    with ManagedLedger(tmp_path, **SMALL) as ml:
        cursor = ml.open_cursor("sub", earliest=True)
        positions = [ml.add_entry(b"e%02d" % i) for i in range(35)]
        ledgers = ml.ledgers()
        assert [lg["entries"] for lg in ledgers] == [10, 10, 10, 5]
        assert [lg["size"] for lg in ledgers] == [30, 30, 30, 15]
        assert all(lg["closed_ms"] is not None for lg in ledgers[:-1])
        assert ledgers[-1]["closed_ms"] is None
        ids = [lg["ledger_id"] for lg in ledgers]
        assert ids == sorted(ids)
        assert [p.ledger_id for p in positions] == [i for i in ids for _ in range(10)][:35]
        assert [p.entry_id for p in positions] == [i % 10 for i in range(35)]
        assert ml.stats()["ledger_count"] == 4
        assert ml.stats()["current_ledger_id"] == ids[-1]
        # Reads cross ledger boundaries transparently.
        got = read_all(cursor)
        assert [p for p, _ in got] == positions
        # Consumed ledgers are trimmed (retention 0), the current one never is.
        cursor.mark_delete(positions[24])
        ml.trim()
        assert [lg["ledger_id"] for lg in ml.ledgers()] == ids[2:]
        cursor.skip_all()
        ml.trim()
        assert [lg["ledger_id"] for lg in ml.ledgers()] == ids[3:]


def test_retention_keeps_consumed_ledgers(tmp_path: Path) -> None:
    with ManagedLedger(tmp_path, defaultRetentionTimeInMinutes=-1, defaultRetentionSizeInMB=-1, **SMALL) as ml:
        cursor = ml.open_cursor("sub", earliest=True)
        ml.add_entries([b"x"] * 30)
        cursor.skip_all()
        ml.trim()
        assert len(ml.ledgers()) == 3


# --- cursors --------------------------------------------------------------------------------


def test_cursor_acks_with_holes_and_mark_delete_advance(tmp_path: Path) -> None:
    with ManagedLedger(tmp_path) as ml:
        cursor = ml.open_cursor("sub", earliest=True)
        p = ml.add_entries([b"m%d" % i for i in range(10)])
        start = cursor.mark_delete_position
        assert start < p[0]
        assert cursor.backlog == 10
        cursor.delete([p[2], p[3], p[5]])
        assert cursor.acked_ranges() == [(p[2], p[3]), (p[5], p[5])]
        assert cursor.mark_delete_position == start
        assert cursor.backlog == 7
        assert cursor.is_acked(p[3]) and not cursor.is_acked(p[4])
        # Closing the first hole moves mark-delete over the contiguous acknowledged prefix.
        cursor.delete([p[0], p[1]])
        assert cursor.mark_delete_position == p[3]
        assert cursor.acked_ranges() == [(p[5], p[5])]
        cursor.delete(p[4])  # a single position works too
        assert cursor.mark_delete_position == p[5]
        assert cursor.acked_ranges() == []
        cursor.delete([p[8].to_tuple()])  # and tuples
        assert cursor.acked_ranges() == [(p[8], p[8])]
        # Only unacknowledged entries are read.
        assert payloads(cursor) == [b"m6", b"m7", b"m9"]
        cursor.mark_delete(p[7])
        assert cursor.mark_delete_position == p[8]
        assert cursor.backlog == 1
        cursor.rewind()
        assert payloads(cursor) == [b"m9"]
        with pytest.raises(InvalidPositionError) as err:
            cursor.mark_delete(Position(p[9].ledger_id, p[9].entry_id + 5))
        assert isinstance(err.value, ValueError)
        cursor.set_property("answer", 42)
        assert cursor.properties == {"answer": 42}


def test_cursor_state_persists_across_reopen(tmp_path: Path) -> None:
    with ManagedLedger(tmp_path, **SMALL) as ml:
        cursor = ml.open_cursor("sub", earliest=True)
        p = ml.add_entries([b"n%02d" % i for i in range(40)])
        assert len(read_all(cursor)) == 40
        cursor.mark_delete(p[4])
        acked = [p[i] for i in (6, 7, 8, 15, 21, 22, 33, 39)]
        cursor.delete(acked)
        cursor.set_property("k", 7)
        ranges = cursor.acked_ranges()
        mdp = cursor.mark_delete_position
        backlog = cursor.backlog
        assert backlog == 40 - 5 - len(acked)
    with ManagedLedger(tmp_path, **SMALL) as ml:
        assert ml.cursor_names() == ["sub"]
        assert ml.last_confirmed == p[-1]
        cursor = ml.open_cursor("sub")
        assert cursor.mark_delete_position == mdp
        assert cursor.acked_ranges() == ranges
        assert cursor.backlog == backlog
        assert cursor.properties == {"k": 7}
        got = read_all(cursor)
        expected = [i for i in range(5, 40) if p[i] not in acked]
        assert [pos for pos, _ in got] == [p[i] for i in expected]
        assert [data for _, data in got] == [b"n%02d" % i for i in expected]
        # Appends continue after the recovered tail.
        assert ml.add_entry(b"new") > p[-1]


def test_backlog_and_estimated_size(tmp_path: Path) -> None:
    with ManagedLedger(tmp_path, **SMALL) as ml:
        cursor = ml.open_cursor("sub", earliest=True)
        p = ml.add_entries([bytes(100)] * 30)
        assert cursor.backlog == 30
        assert cursor.estimated_backlog_size == 3000
        # Mark-delete in the middle of the second ledger: first ledger gone, 5 entries x 100 of
        # the second one consumed.
        cursor.mark_delete(p[14])
        assert cursor.backlog == 15
        assert cursor.estimated_backlog_size == 1500
        cursor.delete([p[20], p[21]])  # holes do not change the size estimate, only the count
        assert cursor.backlog == 13
        cursor.skip(3)
        assert cursor.mark_delete_position == p[17]
        assert cursor.backlog == 10
        cursor.skip(3)  # skips over the acknowledged 20 and 21
        assert cursor.mark_delete_position == p[22]
        assert cursor.backlog == 7
        cursor.skip_all()
        assert cursor.backlog == 0
        assert cursor.estimated_backlog_size == 0
        assert cursor.read_entries(10) == []


def test_reset_and_reset_by_time(tmp_path: Path) -> None:
    with ManagedLedger(tmp_path, **SMALL) as ml:
        cursor = ml.open_cursor("sub", earliest=True)
        first = ml.add_entries([b"old%d" % i for i in range(15)])
        time.sleep(0.02)  # ManagedLedger stamps entries with the machine clock: a real gap
        boundary = now_ms()
        time.sleep(0.02)  # ManagedLedger stamps entries with the machine clock: a real gap
        second = ml.add_entries([b"new%d" % i for i in range(15)])
        read_all(cursor)
        cursor.skip_all()
        assert cursor.reset_by_time(boundary) == second[0]
        assert cursor.mark_delete_position < second[0]
        assert cursor.read_position == second[0]
        assert cursor.backlog == 15
        assert payloads(cursor, 3) == [b"new0", b"new1", b"new2"]
        assert cursor.reset_by_time(0) == first[0]
        assert cursor.backlog == 30
        assert cursor.reset_by_time(now_ms() + 60_000) > second[-1]
        assert cursor.backlog == 0
        cursor.reset(first[12])
        assert payloads(cursor, 1) == [b"old12"]
        assert cursor.backlog == 18


# --- settings -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("noSuchSetting", 1),
        ("journalSyncData", 1),
        ("journalSyncData", "yes"),
        ("journalMaxSizeMB", 0.001),
        ("journalMaxGroupWaitMSec", 5000),
        ("journalBufferedWritesThreshold", 0),
        ("journalAdaptiveGroupWaitMicros", 2_000_000),
        ("journalAdaptiveGroupWaitMicros", -1),
        ("journalPreAllocSizeMB", 2048),
        ("journalPreAllocSizeMB", -1),
        ("managedLedgerCacheSizeMB", -1),
        ("managedLedgerCacheSizeMB", "64"),
        ("managedLedgerCacheEvictionWatermark", 1.5),
        ("managedLedgerCacheEvictionWatermark", 0),
        ("managedLedgerCacheEvictionTimeThresholdMillis", -5),
        ("managedLedgerMaxEntriesPerLedger", 0),
        ("managedLedgerMaxEntriesPerLedger", 2.5),
        ("managedLedgerMaxEntriesPerLedger", True),
        ("managedLedgerMaxSizePerLedgerMbytes", 0),
        ("managedLedgerMinLedgerRolloverTimeMinutes", float("nan")),
        ("managedLedgerMaxLedgerRolloverTimeMinutes", None),
        ("defaultRetentionTimeInMinutes", -2),
        ("defaultRetentionSizeInMB", -0.5),
    ],
)
def test_invalid_settings_name_the_key(tmp_path: Path, key: str, value: Any) -> None:
    with pytest.raises(InvalidConfigError, match=key) as err:
        settings: dict[str, Any] = {key: value}
        ManagedLedger(tmp_path, **settings)
    assert err.value.key == key
    assert isinstance(err.value, ValueError)
    assert isinstance(err.value, PulsarRsError)


def test_min_rollover_above_max_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidConfigError, match="managedLedgerMinLedgerRolloverTimeMinutes"):
        ManagedLedger(
            tmp_path, managedLedgerMinLedgerRolloverTimeMinutes=10, managedLedgerMaxLedgerRolloverTimeMinutes=5
        )


def test_every_documented_setting_is_accepted(tmp_path: Path) -> None:
    assert len(ManagedLedger.SETTINGS) == len(set(ManagedLedger.SETTINGS)) >= 15
    with ManagedLedger(
        tmp_path,
        journalSyncData=True,
        journalMaxSizeMB=1,
        journalMaxGroupWaitMSec=0,
        journalBufferedWritesThreshold=65536,
        journalAdaptiveGroupWaitMicros=250,
        journalPreAllocSizeMB=0.25,
        journalDirectWrites=False,
        managedLedgerCacheSizeMB=0.5,
        managedLedgerCacheEvictionWatermark=0.8,
        managedLedgerCacheEvictionTimeThresholdMillis=500,
        managedLedgerCacheEvictionIntervalMs=5,
        managedLedgerMaxEntriesPerLedger=100,
        managedLedgerMaxSizePerLedgerMbytes=0.01,
        managedLedgerMinLedgerRolloverTimeMinutes=0,
        managedLedgerMaxLedgerRolloverTimeMinutes=0.5,
        defaultRetentionTimeInMinutes=0.1,
        defaultRetentionSizeInMB=-1,
    ) as ml:
        # 0.01 MB per ledger: 1 KiB entries roll over every ~10 entries.
        ml.add_entries([bytes(1024)] * 25)
        assert len(ml.ledgers()) >= 2


def test_invalid_names(tmp_path: Path) -> None:
    with pytest.raises(pulsar_rs.InvalidNameError):
        ManagedLedger(tmp_path, "")
    with ManagedLedger(tmp_path) as ml, pytest.raises(pulsar_rs.InvalidNameError) as err:
        ml.open_cursor("bad\nname")
    assert err.value.name == "bad\nname"


# --- corruption -----------------------------------------------------------------------------


def test_corrupt_journal_entry_is_a_clear_error(tmp_path: Path) -> None:
    marker = b"entry-%04d|" + b"#" * 200
    with ManagedLedger(tmp_path) as ml:
        positions = ml.add_entries([marker % i for i in range(100)])
    segments = sorted((tmp_path / "journal").glob("*.log"))
    assert segments
    segment = segments[-1]
    raw = bytearray(segment.read_bytes())
    at = raw.index(b"entry-0050|") + 20  # inside the payload of entry 50, mid-segment
    assert 0 < at < len(raw) - 1000
    raw[at] ^= 0xFF
    segment.write_bytes(bytes(raw))

    with ManagedLedger(tmp_path) as ml:
        # Recovery keeps everything after the damaged record: it is corruption, not a torn tail.
        assert ml.last_confirmed == positions[-1]
        reader = ml.open_reader(Position.EARLIEST)
        good = []
        with pytest.raises(CorruptEntryError) as err:
            while batch := reader.read_entries(10):
                good.extend(batch)
        assert [p for p, _ in good] == positions[: len(good)]
        assert len(good) <= 50
        assert err.value.ledger_id == positions[50].ledger_id
        assert err.value.offset > 0
        assert f"ledger {positions[50].ledger_id}" in str(err.value)
        # Entries after the damaged one are still served.
        after = ml.open_reader(positions[50])
        assert payloads(after, 5)[0] == marker % 51


# --- threads and the GIL --------------------------------------------------------------------


def test_gil_is_released_during_blocking_calls(tmp_path: Path) -> None:
    writers, per_writer = 4, 150
    stop = threading.Event()
    ticks = 0

    def ticker() -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            time.sleep(0)  # yield the GIL: counts how often this thread gets to run

    with ManagedLedger(tmp_path, journalSyncData=True) as ml:
        results: list[list[Position]] = [[] for _ in range(writers)]
        errors: list[BaseException] = []

        def write(i: int) -> None:
            try:
                for j in range(per_writer):
                    results[i].append(ml.add_entry(b"w%d-%d" % (i, j)))
            except BaseException as e:  # pragma: no cover - reported below
                errors.append(e)

        tick_thread = threading.Thread(target=ticker)
        tick_thread.start()
        threads = [threading.Thread(target=write, args=(i,)) for i in range(writers)]
        rounds_before = ml.journal_stats()["rounds"]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        rounds = ml.journal_stats()["rounds"] - rounds_before

        # One long call on this thread: the ticker must keep running while it is inside Rust.
        big = [bytes(1024)] * 20_000
        before = ticks
        ml.add_entries(big)
        during = ticks - before
        stop.set()
        tick_thread.join()

        assert not errors
        positions = [p for r in results for p in r]
        assert len(set(positions)) == writers * per_writer
        for r in results:
            assert r == sorted(r)
        assert ml.stats()["number_of_entries"] == writers * per_writer + len(big)
        # Writers waited for fsync concurrently, so they shared rounds (group commit).
        assert rounds < writers * per_writer
        assert during > 0, "the GIL was held for the whole add_entries call"


@pytest.mark.parametrize("direct", [True, False])
def test_entries_of_every_size_survive_reopen_with_and_without_direct_writes(tmp_path: Path, direct: bool) -> None:
    # Sizes that start and end mid-block and span blocks: a direct round rewrites the block it
    # shares with the previous one, which must keep that round's bytes.
    sizes = [1, 100, 4095, 4096, 4097, 9000, 70_000, 3, 1 << 20, 17]
    payloads = [bytes((i * 37 + k) % 251 for k in range(n)) for i, n in enumerate(sizes)]
    with ManagedLedger(tmp_path, journalDirectWrites=direct, managedLedgerCacheSizeMB=0) as ml:
        cursor = ml.open_cursor("sub", earliest=True)
        positions = [ml.add_entry(p) for p in payloads]
        assert [data for _, data in read_all(cursor)] == payloads
    with ManagedLedger(tmp_path, journalDirectWrites=direct, managedLedgerCacheSizeMB=0) as ml:
        assert ml.last_confirmed == positions[-1]
        got = read_all(ml.open_cursor("sub"))
        assert [data for _, data in got] == payloads
