//! A full disk: appends fail cleanly (never acknowledged), reads keep working, appends resume once
//! space is freed, and every acknowledged entry survives a restart.
//!
//! The data directory lives on a 4 MiB tmpfs the test mounts itself (root is required, as on the
//! CI machines; set `PULSAR_RS_SKIP_MOUNT_TESTS=1` to skip where mounting is impossible).

use std::process::Command;
use std::time::Duration;

use bytes::Bytes;
use pulsar_rs_ledger::{LedgerConfig, LedgerError, Position, Storage, StorageConfig};

struct Tmpfs(std::path::PathBuf);

impl Tmpfs {
    fn mount(size: &str) -> Option<(tempfile::TempDir, Tmpfs)> {
        let dir = tempfile::tempdir().unwrap();
        let mnt = dir.path().join("mnt");
        std::fs::create_dir(&mnt).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&mnt)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            assert!(
                std::env::var_os("PULSAR_RS_SKIP_MOUNT_TESTS").is_some(),
                "cannot mount a tmpfs (needs root); set PULSAR_RS_SKIP_MOUNT_TESTS=1 to skip"
            );
            return None;
        }
        Some((dir, Tmpfs(mnt)))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[tokio::test]
async fn appends_fail_cleanly_on_a_full_disk_and_resume_after() {
    let Some((_guard, fs)) = Tmpfs::mount("4m") else {
        return;
    };
    let data = fs.0.join("data");
    let cfg = LedgerConfig {
        max_entries_per_ledger: 200,
        min_rollover_time: Duration::ZERO,
        ..LedgerConfig::default()
    };
    // Ballast we delete later to free space.
    std::fs::write(fs.0.join("ballast"), vec![7u8; 1 << 20]).unwrap();
    let mut acked: Vec<(Position, Bytes)> = Vec::new();
    {
        let s = Storage::open(&data, StorageConfig::default()).unwrap();
        let ml = s.open_ledger("disk/full", cfg.clone()).unwrap();
        ml.open_cursor_at("keep", true).unwrap();
        let mut failures = 0;
        for i in 0u32..20_000 {
            let payload = Bytes::from(vec![(i % 251) as u8; 1000]);
            match ml.add_entry(payload.clone()).await {
                Ok(p) => acked.push((p, payload)),
                Err(LedgerError::NoSpace { .. }) => {
                    failures += 1;
                    if failures >= 5 {
                        break;
                    }
                }
                Err(e) => panic!("unexpected error on a full disk: {e}"),
            }
        }
        assert!(
            failures >= 5,
            "the disk never filled up ({} entries written)",
            acked.len()
        );
        assert!(acked.len() > 100);
        // Reads still work while the disk is full.
        let (p0, d0) = &acked[0];
        assert_eq!(&ml.read_entries(*p0, 1, u64::MAX, *p0).unwrap()[0].data, d0);
        // Free space: appends resume.
        std::fs::remove_file(fs.0.join("ballast")).unwrap();
        let mut resumed = false;
        for _ in 0..50 {
            let payload = Bytes::from_static(b"after the disk was freed");
            if let Ok(p) = ml.add_entry(payload.clone()).await {
                acked.push((p, payload));
                resumed = true;
                break;
            }
        }
        assert!(resumed, "appends did not resume after space was freed");
        s.close().unwrap();
    }
    let s = Storage::open(&data, StorageConfig::default()).unwrap();
    let ml = s.open_ledger("disk/full", cfg).unwrap();
    for (p, d) in &acked {
        let got = ml.read_entries(*p, 1, u64::MAX, *p).unwrap();
        assert_eq!(got.len(), 1, "acknowledged entry {p} lost");
        assert_eq!(&got[0].data, d, "acknowledged entry {p} changed");
    }
    s.close().unwrap();
}
