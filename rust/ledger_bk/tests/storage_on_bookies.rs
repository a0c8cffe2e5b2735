//! The broker's own `Storage` and `ManagedLedger` on a `SeamBacking` of real ZooKeeper and three
//! Apache BookKeeper bookies (E=3, Qw=2, Qa=2): appends roll over across ledgers and read back
//! through the bookies; cursors are Pulsar's `ManagedCursorInfo`; a second "broker" opening the
//! topic recovers every acknowledged entry and fences the first, whose next append fails;
//! trimming deletes consumed ledgers from the bookies; and Pulsar's own classes (MlTool) parse
//! what was written. Skipped (with a message) without the Pulsar distribution or a JDK.

#[path = "../../bookkeeper/tests/common/mod.rs"]
mod common;
#[path = "mltool/mod.rs"]
mod mltool;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use common::{skip_unless_ready, tagged, Cluster, SERIAL};
use mltool::mltool;
use pulsar_rs_ledger::seam::LedgerStorage;
use pulsar_rs_ledger::{LedgerConfig, LedgerError, Position, Storage, StorageConfig, SystemClock};
use pulsar_rs_ledger_bk::BkSettings;

fn settings(cluster: &Cluster) -> BkSettings {
    let mut s = BkSettings::new(&format!("zk:{}", cluster.zk_servers()));
    s.ensemble_size = 3;
    s.write_quorum = 2;
    s.ack_quorum = 2;
    s
}

/// A "broker": its own data directory, BookKeeper client and ZooKeeper session.
fn broker(cluster: &Cluster, dir: &Path) -> Arc<Storage> {
    let backing = pulsar_rs_ledger_bk::backing(&settings(cluster)).unwrap();
    Storage::open_on_backing(
        dir,
        StorageConfig::default(),
        Arc::new(backing),
        Arc::new(SystemClock),
        false,
    )
    .unwrap()
}

fn ledger_config(per_ledger: u64) -> LedgerConfig {
    LedgerConfig {
        max_entries_per_ledger: per_ledger,
        min_rollover_time: Duration::ZERO,
        ..LedgerConfig::default()
    }
}

fn payload(i: usize) -> Bytes {
    Bytes::from(format!("broker-entry-{i}"))
}

/// ZooKeeper and three writable bookies (one test at a time), a runtime for direct client calls
/// and a directory for the brokers' data; `None` (the test skips) without the distribution.
fn three_bookies() -> Option<(
    std::sync::MutexGuard<'static, ()>,
    Cluster,
    tokio::runtime::Runtime,
    tempfile::TempDir,
)> {
    let home = skip_unless_ready()?;
    let serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let cluster = Cluster::start(&home, 3);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(cluster.wait_writable(3));
    Some((serial, cluster, rt, tempfile::tempdir().unwrap()))
}

#[test]
fn broker_storage_on_bookies_hands_over_without_loss() {
    let Some((_serial, cluster, rt, dirs)) = three_bookies() else {
        return;
    };
    let name = "public/default/persistent/broker on bookies";

    // Broker A: 23 entries, 10 per ledger; a cursor acknowledges the first 12 and one more.
    let a = broker(&cluster, &dirs.path().join("a"));
    let ml_a = a.open_ledger(name, ledger_config(10)).unwrap();
    let cursor_a = ml_a.open_cursor("sub-1").unwrap();
    let positions: Vec<Position> = (0..23)
        .map(|i| ml_a.add_entry_blocking(payload(i)).unwrap())
        .collect();
    assert!(
        ml_a.ledgers().len() >= 3,
        "rolled over: {:?}",
        ml_a.ledgers()
    );
    let reader = ml_a.open_non_durable_cursor("reader", Position::EARLIEST);
    let read: Vec<(Position, Bytes)> = reader
        .read_entries(100)
        .unwrap()
        .into_iter()
        .chain(reader.read_entries(100).unwrap())
        .chain(reader.read_entries(100).unwrap())
        .map(|e| (e.position, e.data))
        .collect();
    assert_eq!(
        read.iter().map(|r| r.0).collect::<Vec<_>>(),
        positions,
        "every entry reads back"
    );
    assert_eq!(read[22].1, payload(22));
    cursor_a.mark_delete(positions[11]).unwrap();
    cursor_a.delete(&[positions[14]]);
    cursor_a.flush().unwrap();
    // Entries of closed ledgers, read from the bookies (the cache dropped).
    let first = ml_a
        .read_entries(positions[0], 5, u64::MAX, Position::LATEST)
        .unwrap();
    assert_eq!(first[4].data, payload(4));

    // Broker B opens the topic: the recovery open fences A's ledger, the list is rewritten.
    let b = broker(&cluster, &dirs.path().join("b"));
    let ml_b = b.open_ledger(name, ledger_config(10)).unwrap();
    let err = ml_a.add_entry_blocking(payload(99)).unwrap_err();
    assert!(
        matches!(err, LedgerError::Fenced { .. } | LedgerError::Closed { .. }),
        "A's append after the hand-over must fail: {err:?}"
    );
    let err = ml_a.add_entry_blocking(payload(100)).unwrap_err();
    assert!(
        matches!(err, LedgerError::Fenced { .. }),
        "A is fenced for good: {err:?}"
    );
    let reader_b = ml_b.open_non_durable_cursor("reader", Position::EARLIEST);
    let mut seen = Vec::new();
    loop {
        let got = reader_b.read_entries(100).unwrap();
        if got.is_empty() {
            break;
        }
        seen.extend(got.into_iter().map(|e| (e.position, e.data)));
    }
    // A ledger sub-1 had consumed whole (ledger 0: its mark-delete position is past it) may be
    // trimmed already, by A's background trim after the mark-delete, as Pulsar's would be (the
    // non-durable reader holds nothing); seen under load, 2026-12-07. Nothing else may be missing.
    let kept: Vec<i64> = ml_b.ledgers().iter().map(|l| l.ledger_id).collect();
    let (served, trimmed): (Vec<_>, Vec<_>) = read
        .iter()
        .cloned()
        .partition(|(p, _)| kept.contains(&p.ledger_id));
    assert!(
        trimmed.iter().all(|(p, _)| *p <= positions[11]),
        "only entries sub-1 acknowledged may be gone: {trimmed:?}"
    );
    assert_eq!(
        seen, served,
        "B serves every entry A acknowledged, nothing else"
    );
    let cursor_b = ml_b.open_cursor("sub-1").unwrap();
    assert_eq!(cursor_b.mark_delete_position(), positions[11]);
    assert!(cursor_b.is_acked(positions[14]));
    assert!(!cursor_b.is_acked(positions[13]));
    let p = ml_b.add_entry_blocking(payload(23)).unwrap();
    assert!(p > positions[22]);
    // A's cursor record is stale now: its write loses the compare-and-set.
    cursor_a.mark_delete(positions[12]).unwrap();
    assert!(matches!(cursor_a.flush(), Err(LedgerError::Fenced { .. })));

    // Trimming: every entry consumed, retention 0: the closed ledgers leave the list and the
    // bookies.
    let before: Vec<i64> = ml_b.ledgers().iter().map(|l| l.ledger_id).collect();
    cursor_b.mark_delete(p).unwrap();
    cursor_b.flush().unwrap();
    ml_b.trim_consumed_ledgers().unwrap();
    let after: Vec<i64> = ml_b.ledgers().iter().map(|l| l.ledger_id).collect();
    assert!(after.len() < before.len(), "{before:?} -> {after:?}");
    let gone = before[0];
    let deleted = rt.block_on(async {
        let (ledgers, _) = pulsar_rs_ledger_bk::connect(&settings(&cluster))
            .await
            .unwrap();
        for _ in 0..50 {
            if ledgers.open_ledger(gone, false).await.is_err() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        false
    });
    assert!(deleted, "trimmed ledger {gone} deleted from BookKeeper");
    drop(ml_a);
    // A's stale cursor cannot be written back on close either.
    let closed = a.close();
    assert!(
        matches!(closed, Ok(()) | Err(LedgerError::Fenced { .. })),
        "{closed:?}"
    );
    ml_b.close().unwrap();

    // Pulsar's own MLDataFormats parse the records B left.
    let out = mltool(
        &cluster,
        &[
            "cursor",
            &cluster.zk_servers(),
            &name.replace(' ', "+"),
            "sub-1",
        ],
    );
    assert_eq!(tagged(&out, "CURSORLEDGER "), vec!["-1"], "{out}");
    assert_eq!(
        tagged(&out, "MARKDELETE "),
        vec![format!("{}:{}", p.ledger_id, p.entry_id)],
        "{out}"
    );
    b.close().unwrap();
}

/// A read-only storage (the export's) opens a managed ledger another broker is writing without
/// fencing anything: it reads the entries up to the last add confirmed and the cursors, and the
/// writer goes on appending to the same ledger. A cursor record naming a cursor ledger with no
/// entry (its broker died right after making it) rolls back to the record's own position, as
/// Pulsar's cursor recovery does.
#[test]
fn a_read_only_storage_reads_a_live_managed_ledger_without_fencing_it() {
    use prost::Message;
    use pulsar_rs_ledger::seam::formats::ManagedCursorInfo;
    use pulsar_rs_ledger::seam::{cursor_path, VersionedStore};

    let Some((_serial, cluster, rt, dirs)) = three_bookies() else {
        return;
    };
    let name = "public/default/persistent/read only";

    let writer = broker(&cluster, &dirs.path().join("w"));
    let ml = writer.open_ledger(name, ledger_config(100)).unwrap();
    let cursor = ml.open_cursor("sub").unwrap();
    let positions: Vec<Position> = (0..6)
        .map(|i| ml.add_entry_blocking(payload(i)).unwrap())
        .collect();
    cursor.mark_delete(positions[2]).unwrap();
    cursor.flush().unwrap();
    // A second cursor whose record points at an empty cursor ledger, as Pulsar leaves one.
    let empty_cursor_ledger = rt.block_on(async {
        let (ledgers, store) = pulsar_rs_ledger_bk::connect(&settings(&cluster))
            .await
            .unwrap();
        let l = ledgers.create_ledger(name, None).await.unwrap();
        let info = ManagedCursorInfo {
            cursors_ledger_id: l.id(),
            mark_delete_ledger_id: Some(positions[1].ledger_id),
            mark_delete_entry_id: Some(positions[1].entry_id),
            ..ManagedCursorInfo::default()
        };
        let path = cursor_path(name, "sub-2");
        store.put(&path, info.encode_to_vec(), None).await.unwrap();
        l
    });
    let current = ml.ledgers().last().unwrap().ledger_id;

    let backing = pulsar_rs_ledger_bk::backing(&settings(&cluster)).unwrap();
    let reader = Storage::open_on_backing(
        dirs.path().join("r"),
        StorageConfig::default(),
        Arc::new(backing),
        Arc::new(SystemClock),
        true,
    )
    .unwrap();
    let ml_r = reader.open_ledger(name, ledger_config(100)).unwrap();
    let seen: Vec<Position> = ml_r
        .open_non_durable_cursor("reader", Position::EARLIEST)
        .read_entries(100)
        .unwrap()
        .into_iter()
        .map(|e| e.position)
        .collect();
    // Up to the last add confirmed: the writer's last add is confirmed by its next one.
    assert!(
        seen.len() >= 5 && seen[..] == positions[..seen.len()],
        "{seen:?} of {positions:?}"
    );
    assert_eq!(
        ml_r.open_cursor("sub").unwrap().mark_delete_position(),
        positions[2]
    );
    assert_eq!(
        ml_r.open_cursor("sub-2").unwrap().mark_delete_position(),
        positions[1],
        "an empty cursor ledger rolls back to the record's position"
    );
    reader.close().unwrap();

    // Nothing was fenced: the writer appends to the same ledger and moves its cursor on.
    let next = ml.add_entry_blocking(payload(6)).unwrap();
    assert_eq!(next.ledger_id, current, "still the same ledger: {next:?}");
    cursor.mark_delete(positions[5]).unwrap();
    cursor.flush().unwrap();
    drop(empty_cursor_ledger);
    writer.close().unwrap();
}
