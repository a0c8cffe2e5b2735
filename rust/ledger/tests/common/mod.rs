//! Shared by the integration tests: a gate on `fdatasync`, injected through the file-system
//! seam (`Vfs`), that holds the syncs of chosen paths until the test opens it.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};
use pulsar_rs_ledger::vfs::SyncHookFs;
use pulsar_rs_ledger::{Storage, StorageConfig, SystemClock};

/// One gate: `sync_data` of files whose path contains `pattern` waits while it is closed.
pub struct Gate {
    pattern: &'static str,
    /// Closed = `true`; with `entered` (how many syncs are waiting).
    state: Mutex<(bool, usize)>,
    cond: Condvar,
}

impl Gate {
    pub fn new(pattern: &'static str) -> Arc<Gate> {
        Arc::new(Gate {
            pattern,
            state: Mutex::new((false, 0)),
            cond: Condvar::new(),
        })
    }
    pub fn close(&self) {
        self.state.lock().0 = true;
    }
    pub fn open(&self) {
        self.state.lock().0 = false;
        self.cond.notify_all();
    }
    fn pass(&self, path: &Path) {
        if !path.to_string_lossy().contains(self.pattern) {
            return;
        }
        let mut st = self.state.lock();
        st.1 += 1;
        self.cond.notify_all();
        // Bounded so a broken test cannot hang the suite.
        let deadline = pulsar_rs_clock::monotonic() + Duration::from_secs(20);
        while st.0 && pulsar_rs_clock::monotonic() < deadline {
            self.cond.wait_until(&mut st, deadline);
        }
        st.1 -= 1;
    }
    pub fn wait_entered(&self) {
        let mut st = self.state.lock();
        while st.1 == 0 {
            assert!(
                !self
                    .cond
                    .wait_for(&mut st, Duration::from_secs(10))
                    .timed_out(),
                "nothing reached the gate for {}",
                self.pattern
            );
        }
    }
}

/// The real file system; every `fdatasync` passes the gates first.
pub fn gated_fs(gates: Vec<Arc<Gate>>) -> Arc<SyncHookFs<impl Fn(&Path) + Send + Sync + 'static>> {
    Arc::new(SyncHookFs::new(move |path: &Path| {
        for g in &gates {
            g.pass(path);
        }
    }))
}

/// Durable storage in `dir` on the real file system, its syncs passing `gates`.
pub fn gated_storage(dir: &Path, gates: Vec<Arc<Gate>>) -> Arc<Storage> {
    Storage::open_on(
        gated_fs(gates),
        dir,
        StorageConfig {
            journal_sync_data: true,
            ..StorageConfig::default()
        },
        Arc::new(SystemClock),
        false,
    )
    .unwrap()
}
