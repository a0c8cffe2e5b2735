//! Fills a data directory for the recovery benchmark (`benches/recovery_scale.py`): `TOPICS`
//! topics `public/default/persistent/rec-NNNNN`, each with a durable subscription `sub` at the
//! first entry and `ENTRIES` entries of `SIZE` bytes, appended round-robin so every journal
//! segment interleaves many topics (as live traffic does). Entries are Pulsar stored entries
//! (metadata + payload), so the official client reads them. Non-durable journal (speed).
//!
//! `cargo run --release -p pulsar-rs-broker --example fill_topics -- DIR TOPICS ENTRIES SIZE [--crash]`
//!
//! With `--crash` the process exits without closing the storage (no final checkpoint), so a
//! restart scans what was written since the housekeeper's last checkpoint.

use std::sync::Arc;

use pulsar_rs_ledger::{LedgerConfig, ManagedLedger, Storage, StorageConfig};
use pulsar_rs_proto::{build_stored_entry, MessageMetadata};

fn arg(args: &[String], i: usize, what: &str) -> u64 {
    args.get(i)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("argument {i} ({what}) missing or not a number"))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = args
        .get(1)
        .expect("usage: fill_topics DIR TOPICS ENTRIES SIZE [--crash]");
    let topics = arg(&args, 2, "TOPICS");
    let entries = arg(&args, 3, "ENTRIES");
    let size = usize::try_from(arg(&args, 4, "SIZE")).expect("SIZE");
    let crash = args.iter().any(|a| a == "--crash");
    let t0 = pulsar_rs_clock::monotonic();
    let storage = Storage::open(
        dir,
        StorageConfig {
            journal_sync_data: false,
            ..StorageConfig::default()
        },
    )
    .expect("open");
    let config = LedgerConfig::default();
    // Creating a topic and its subscription writes metadata with fsyncs: many threads at once.
    let open = |t: u64| {
        let ml = storage
            .open_ledger(
                &format!("public/default/persistent/rec-{t:05}"),
                config.clone(),
            )
            .expect("open ledger");
        ml.open_cursor_at("sub", true).expect("cursor");
        ml
    };
    let threads = 64;
    let mut mls: Vec<(u64, Arc<ManagedLedger>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|k| {
                let open = &open;
                s.spawn(move || {
                    (0..topics)
                        .filter(|t| t % threads == k)
                        .map(|t| (t, open(t)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("opener"))
            .collect()
    });
    mls.sort_by_key(|(t, _)| *t);
    let mls: Vec<Arc<ManagedLedger>> = mls.into_iter().map(|(_, ml)| ml).collect();
    println!(
        "created {topics} topics in {:.1} s",
        t0.elapsed().as_secs_f64()
    );
    let mut payload = vec![b'x'; size];
    for e in 0..entries {
        for (t, ml) in mls.iter().enumerate() {
            let tag = format!("rec-{t:05}-{e:08}-");
            let n = tag.len().min(size);
            payload[..n].copy_from_slice(&tag.as_bytes()[..n]);
            let md = MessageMetadata {
                producer_name: "fill".into(),
                sequence_id: e,
                publish_time: 1_700_000_000_000 + e,
                ..MessageMetadata::default()
            };
            ml.start_add(build_stored_entry(&md, &payload), 0)
                .expect("append");
        }
    }
    std::thread::scope(|s| {
        for chunk in mls.chunks(mls.len().div_ceil(threads as usize).max(1)) {
            s.spawn(move || {
                for ml in chunk {
                    for c in ml.cursors() {
                        c.flush().expect("persist cursor");
                    }
                }
            });
        }
    });
    if crash {
        storage.housekeeping().expect("housekeeping");
        println!(
            "filled {topics} topics x {entries} x {size} B in {:.1} s (no close)",
            t0.elapsed().as_secs_f64()
        );
        std::process::exit(0);
    }
    storage.close().expect("close");
    println!(
        "filled {topics} topics x {entries} x {size} B in {:.1} s",
        t0.elapsed().as_secs_f64()
    );
}
