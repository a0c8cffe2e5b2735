//! Crash recovery: a child process appends in durable mode and prints each acknowledged position;
//! the parent SIGKILLs it mid-write, reopens the directory and checks every acknowledged entry.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use bytes::Bytes;
use pulsar_rs_ledger::{LedgerConfig, Position, Storage, StorageConfig};

const CHILD_ENV: &str = "PULSAR_RS_CRASH_CHILD_DIR";

fn payload(topic: usize, i: u64) -> Vec<u8> {
    let mut v = format!("topic-{topic}-entry-{i}-").into_bytes();
    v.resize(200 + (i as usize % 300), b'a' + (i % 26) as u8);
    v
}

fn cfg() -> LedgerConfig {
    LedgerConfig {
        max_entries_per_ledger: 500,
        min_rollover_time: Duration::ZERO,
        ..LedgerConfig::default()
    }
}

/// The child: four topics appending concurrently forever, reporting acknowledged positions.
/// Not a test of its own: `sigkill_during_durable_appends_loses_nothing_acknowledged` runs it (as
/// an ignored test, `--ignored --exact`) in a child process and kills it.
#[tokio::test]
#[ignore = "child process of sigkill_during_durable_appends_loses_nothing_acknowledged"]
async fn crash_child() {
    let dir = std::env::var(CHILD_ENV).expect("the parent test sets PULSAR_RS_CRASH_CHILD_DIR");
    let s = Storage::open(&dir, StorageConfig::default()).unwrap();
    let mut tasks = Vec::new();
    for t in 0..4usize {
        let ml = s.open_ledger(&format!("crash/t{t}"), cfg()).unwrap();
        // A subscription from the start keeps every ledger from being trimmed as consumed.
        ml.open_cursor_at("keep", true).unwrap();
        tasks.push(tokio::spawn(async move {
            for i in 0u64.. {
                let p = ml.add_entry(Bytes::from(payload(t, i))).await.unwrap();
                println!("ACK {t} {i} {} {}", p.ledger_id, p.entry_id);
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}

#[test]
fn sigkill_during_durable_appends_loses_nothing_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    for round in 0..3 {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "crash_child",
                "--exact",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut acked = Vec::new();
        let reader = BufReader::new(child.stdout.take().unwrap());
        for line in reader.lines() {
            let line = line.unwrap();
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.first() != Some(&"ACK") {
                continue;
            }
            let (t, i, l, e): (usize, u64, i64, i64) = (
                f[1].parse().unwrap(),
                f[2].parse().unwrap(),
                f[3].parse().unwrap(),
                f[4].parse().unwrap(),
            );
            acked.push((t, i, Position::new(l, e)));
            if acked.len() >= 3000 {
                break;
            }
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        assert!(acked.len() >= 3000, "round {round}: child died early");
        let s = Storage::open(dir.path(), StorageConfig::default()).unwrap();
        for t in 0..4usize {
            let ml = s.open_ledger(&format!("crash/t{t}"), cfg()).unwrap();
            for (_, i, p) in acked.iter().filter(|(tt, _, _)| *tt == t) {
                let got = ml.read_entries(*p, 1, u64::MAX, *p).unwrap();
                assert_eq!(
                    got.len(),
                    1,
                    "round {round}: acknowledged {p} of topic {t} is missing"
                );
                assert_eq!(
                    got[0].data,
                    Bytes::from(payload(t, *i)),
                    "round {round}: {p} has the wrong bytes"
                );
            }
        }
        s.close().unwrap();
    }
}
