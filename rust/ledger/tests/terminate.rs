//! Terminating a managed ledger (Pulsar's topic termination), on the journal and on a seam
//! backing (Pulsar's records, here over the local seam): appends are refused from then on, the
//! position returned is the last entry, and a restart finds the ledger still terminated there.

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use pulsar_rs_ledger::seam::{LedgerStorage, SeamBacking, VersionedStore};
use pulsar_rs_ledger::{LedgerConfig, LedgerError, Position, Storage, StorageConfig, SystemClock};

const NAME: &str = "public/default/persistent/terminated";

/// The journal storage, or a storage whose managed ledgers live on a seam backing kept by
/// `base` (its local ledgers and versioned store, as BookKeeper and ZooKeeper would).
fn open(dir: &Path, base: Option<&Arc<Storage>>) -> Arc<Storage> {
    match base {
        None => Storage::open(dir, StorageConfig::default()).unwrap(),
        Some(base) => {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .unwrap();
            let backing = SeamBacking::new(
                base.seam_ledgers() as Arc<dyn LedgerStorage>,
                base.seam_store() as Arc<dyn VersionedStore>,
                runtime,
                "local seam".into(),
            );
            Storage::open_on_backing(
                dir,
                StorageConfig::default(),
                Arc::new(backing),
                Arc::new(SystemClock),
                false,
            )
            .unwrap()
        }
    }
}

fn terminate_then_restart(on_seam: bool) {
    let base_dir = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let base = on_seam.then(|| Storage::open(base_dir.path(), StorageConfig::default()).unwrap());
    let last = {
        let s = open(dir.path(), base.as_ref());
        let ml = s.open_ledger(NAME, LedgerConfig::default()).unwrap();
        let mut last = Position::EARLIEST;
        for i in 0..5 {
            last = ml.add_entry_blocking(Bytes::from(format!("m{i}"))).unwrap();
        }
        assert!(!ml.is_terminated());
        assert_eq!(
            ml.terminate().unwrap(),
            last,
            "terminated at the last entry"
        );
        assert_eq!(
            ml.terminate().unwrap(),
            last,
            "terminating again: the same position"
        );
        assert!(ml.is_terminated());
        let refused = ml.add_entry_blocking(Bytes::from_static(b"late"));
        assert!(
            matches!(refused, Err(LedgerError::Terminated { .. })),
            "{refused:?}"
        );
        assert_eq!(ml.last_confirmed(), last);
        ml.close().unwrap();
        last
    };
    let s = open(dir.path(), base.as_ref());
    let ml = s.open_ledger(NAME, LedgerConfig::default()).unwrap();
    assert_eq!(
        ml.terminated_position(),
        Some(last),
        "still terminated after a restart"
    );
    assert!(matches!(
        ml.add_entry_blocking(Bytes::from_static(b"after restart")),
        Err(LedgerError::Terminated { .. })
    ));
    let c = ml.open_cursor_at("sub", true).unwrap();
    let mut read = 0;
    loop {
        let got = c.read_entries(10).unwrap();
        if got.is_empty() {
            break;
        }
        read += got.len();
    }
    assert_eq!(read, 5, "every entry before the termination stays readable");
}

#[test]
fn a_terminated_journal_ledger_refuses_appends_across_a_restart() {
    terminate_then_restart(false);
}

#[test]
fn a_terminated_ledger_on_a_seam_backing_refuses_appends_across_a_restart() {
    terminate_then_restart(true);
}

#[test]
fn an_empty_ledger_terminates_before_its_first_entry() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path(), None);
    let ml = s.open_ledger(NAME, LedgerConfig::default()).unwrap();
    let at = ml.terminate().unwrap();
    assert_eq!(at.entry_id, -1, "Pulsar's (current ledger, -1): {at}");
    assert_eq!(at, ml.last_confirmed());
}
