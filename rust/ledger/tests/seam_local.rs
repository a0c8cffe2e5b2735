//! The seam's managed ledger on the local journal: appends, reads across rollovers, a second owner
//! fencing the first, cursors across reopen, and everything across a restart of the storage.

use std::sync::Arc;

use bytes::Bytes;
use pulsar_rs_ledger::seam::{LedgerStorage, VersionedStore};
use pulsar_rs_ledger::{LedgerError, Position, Storage, StorageConfig, SystemClock};
use pulsar_rs_ledger_testkit::{SeamLedgerConfig, SeamManagedLedger};

const NAME: &str = "public/default/persistent/seam-topic";

async fn open(
    storage: &Storage,
    per_ledger: u64,
) -> pulsar_rs_ledger::Result<Arc<SeamManagedLedger>> {
    SeamManagedLedger::open(
        NAME,
        storage.seam_ledgers() as Arc<dyn LedgerStorage>,
        storage.seam_store() as Arc<dyn VersionedStore>,
        Arc::new(SystemClock),
        SeamLedgerConfig {
            max_entries_per_ledger: per_ledger,
        },
    )
    .await
}

async fn read_all(ml: &SeamManagedLedger) -> Vec<(Position, Bytes)> {
    let mut out = Vec::new();
    let mut from = Position::new(-1, -1);
    loop {
        let got = ml.read_entries(from, 2).await.unwrap();
        let Some(last) = got.last() else { break };
        from = ml.next_position(last.position);
        out.extend(got.into_iter().map(|e| (e.position, e.data)));
    }
    out
}

fn payload(i: usize) -> Bytes {
    Bytes::from(format!("entry-{i}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn appends_roll_over_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let storage = Storage::open(dir.path(), StorageConfig::default()).unwrap();
    let ml = open(&storage, 3).await.unwrap();
    let mut positions = Vec::new();
    for i in 0..7 {
        positions.push(ml.add_entry(payload(i)).await.unwrap());
    }
    assert_eq!(ml.ledger_ids().len(), 3, "3 entries per ledger: 3 ledgers");
    assert_eq!(ml.last_confirmed(), *positions.last().unwrap());
    let read = read_all(&ml).await;
    assert_eq!(read.iter().map(|r| r.0).collect::<Vec<_>>(), positions);
    assert_eq!(read[6].1, payload(6));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_owner_fences_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let storage = Storage::open(dir.path(), StorageConfig::default()).unwrap();
    let first = open(&storage, 100).await.unwrap();
    for i in 0..4 {
        first.add_entry(payload(i)).await.unwrap();
    }
    let second = open(&storage, 100).await.unwrap();
    let err = first.add_entry(payload(99)).await.unwrap_err();
    assert!(matches!(err, LedgerError::Fenced { .. }), "{err:?}");
    assert!(first.is_fenced());
    second.add_entry(payload(4)).await.unwrap();
    let read = read_all(&second).await;
    assert_eq!(
        read.len(),
        5,
        "the first owner's 4 entries and the second's"
    );
    assert_eq!(read[4].1, payload(4));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_owner_loses_the_ledger_list_compare_and_set() {
    let dir = tempfile::tempdir().unwrap();
    let storage = Storage::open(dir.path(), StorageConfig::default()).unwrap();
    // One entry per ledger: the next append must roll over and write the list.
    let ml = open(&storage, 1).await.unwrap();
    ml.add_entry(payload(0)).await.unwrap();
    // Another writer rewrites the list (same bytes, new version) without fencing any ledger.
    let store = storage.seam_store();
    let path = pulsar_rs_ledger::seam::managed_ledger_path(NAME);
    let (raw, v) = store.get(&path).await.unwrap().unwrap();
    store.put(&path, raw, Some(v)).await.unwrap();
    let err = ml.add_entry(payload(1)).await.unwrap_err();
    assert!(matches!(err, LedgerError::Fenced { .. }), "{err:?}");
    assert!(ml.is_fenced());
    assert!(matches!(
        ml.add_entry(payload(2)).await,
        Err(LedgerError::Fenced { .. })
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cursors_and_entries_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let positions = {
        let storage = Storage::open(dir.path(), StorageConfig::default()).unwrap();
        let ml = open(&storage, 4).await.unwrap();
        let c = ml.open_cursor("sub").await.unwrap();
        let mut positions = Vec::new();
        for i in 0..10 {
            positions.push(ml.add_entry(payload(i)).await.unwrap());
        }
        let got = c.read_entries(100).await.unwrap();
        assert_eq!(got.len(), 4, "one ledger per read");
        c.acknowledge(positions[0]);
        c.acknowledge(positions[1]);
        c.acknowledge(positions[5]);
        c.acknowledge(positions[6]);
        c.flush().await.unwrap();
        ml.close().await.unwrap();
        storage.close().unwrap();
        positions
    };
    let storage = Storage::open(dir.path(), StorageConfig::default()).unwrap();
    let ml = open(&storage, 4).await.unwrap();
    let read = read_all(&ml).await;
    assert_eq!(read.iter().map(|r| r.0).collect::<Vec<_>>(), positions);
    assert_eq!(ml.cursor_names().await.unwrap(), vec!["sub".to_string()]);
    let c = ml.open_cursor("sub").await.unwrap();
    assert_eq!(c.mark_delete_position(), positions[1]);
    assert_eq!(c.individually_deleted(), vec![positions[5], positions[6]]);
    let unread: Vec<Position> = c
        .read_entries(100)
        .await
        .unwrap()
        .iter()
        .map(|e| e.position)
        .collect();
    assert_eq!(unread, positions[2..4].to_vec());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumed_ledgers_are_trimmed_but_a_recorded_cursor_holds_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let storage = Storage::open(dir.path(), StorageConfig::default()).unwrap();
    let ml = open(&storage, 3).await.unwrap();
    let fast = ml.open_cursor("fast").await.unwrap();
    let slow = ml.open_cursor("slow").await.unwrap();
    let mut positions = Vec::new();
    for i in 0..10 {
        positions.push(ml.add_entry(payload(i)).await.unwrap());
    }
    let ids = ml.ledger_ids();
    assert_eq!(ids.len(), 4);
    for p in &positions {
        fast.acknowledge(*p);
    }
    // `slow` consumed the first ledger and one entry of the second.
    for p in &positions[..4] {
        slow.acknowledge(*p);
    }
    fast.flush().await.unwrap();
    slow.flush().await.unwrap();
    ml.close().await.unwrap();
    // A new owner that never opens `slow` must still respect it.
    let ml = open(&storage, 3).await.unwrap();
    let trimmed = ml.trim_consumed_ledgers().await.unwrap();
    assert_eq!(trimmed, vec![ids[0]]);
    assert_eq!(ml.ledger_ids()[0], ids[1]);
    let read = read_all(&ml).await;
    assert_eq!(read.first().unwrap().0, positions[3]);
    assert_eq!(read.len(), 7);
    let err = storage
        .seam_ledgers()
        .open_ledger(ids[0], false)
        .await
        .unwrap()
        .read(0, 0)
        .await;
    assert!(err.is_err(), "the trimmed ledger is gone from the journal");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pulsars_fields_in_the_list_are_kept_and_a_terminated_ledger_refuses_appends() {
    use prost::Message;
    use pulsar_rs_ledger::seam::formats::{KeyValue, ManagedLedgerInfo, NestedPositionInfo};
    let dir = tempfile::tempdir().unwrap();
    let storage = Storage::open(dir.path(), StorageConfig::default()).unwrap();
    let store = storage.seam_store();
    let path = pulsar_rs_ledger::seam::managed_ledger_path(NAME);
    // A list as Pulsar may leave it: properties, and the managed ledger terminated.
    let terminated = NestedPositionInfo {
        ledger_id: 7,
        entry_id: 3,
    };
    let theirs = ManagedLedgerInfo {
        ledger_info: vec![],
        terminated_position: Some(terminated),
        properties: vec![KeyValue {
            key: "k".into(),
            value: "v".into(),
        }],
    };
    store
        .put(&path, theirs.encode_to_vec(), None)
        .await
        .unwrap();
    let ml = open(&storage, 3).await.unwrap();
    let err = ml.add_entry(payload(0)).await.unwrap_err();
    assert!(matches!(err, LedgerError::Closed { .. }), "{err:?}");
    let (raw, _) = store.get(&path).await.unwrap().unwrap();
    let ours = ManagedLedgerInfo::decode(&raw[..]).unwrap();
    assert_eq!(ours.terminated_position, Some(terminated));
    assert_eq!(ours.properties, theirs.properties);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_managed_ledger_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let storage = Storage::open(dir.path(), StorageConfig::default()).unwrap();
    let ml = open(&storage, 2).await.unwrap();
    let c = ml.open_cursor("sub").await.unwrap();
    for i in 0..5 {
        ml.add_entry(payload(i)).await.unwrap();
    }
    c.flush().await.unwrap();
    let ids = ml.ledger_ids();
    ml.delete().await.unwrap();
    assert!(matches!(
        ml.add_entry(payload(9)).await,
        Err(LedgerError::Closed { .. })
    ));
    let store = storage.seam_store();
    let path = pulsar_rs_ledger::seam::managed_ledger_path(NAME);
    assert!(store.get(&path).await.unwrap().is_none());
    assert!(store.children(&path).await.unwrap().is_empty());
    for id in ids {
        let r = storage.seam_ledgers().open_ledger(id, false).await.unwrap();
        assert_eq!(r.last_entry_id(), Some(-1), "ledger {id} is gone");
    }
    // Opened again, it is a new, empty managed ledger.
    let again = open(&storage, 2).await.unwrap();
    assert!(read_all(&again).await.is_empty());
}
