//! Power cuts at thousands of points, on the simulated file system ([`SimFs`]).
//!
//! A seeded workload (many topics, rollovers, journal segment rotation and removal, trimming,
//! cursor acks and persistence, cursor and topic deletes, retention changes, injected write
//! failures) runs against a `Storage` on a [`SimFs`]; the file system is frozen after the k-th
//! mutating call, loses power (unsynced data and directory entries dropped, a random prefix
//! kept, the last write possibly torn), and the directory is reopened. Checked after each cut:
//! * the storage opens (metadata consistent) and lists exactly the topics known to exist;
//! * every entry acknowledged as durable and not yet consumed reads back intact;
//! * nothing corrupt or foreign is served, and no append that failed ever shows up;
//! * no persisted cursor is lost or moves back past what was persisted;
//! * the directory keeps working: new appends are acknowledged and read back.
//!
//! `cargo test` runs a fast subset. The long run (documented in `benches/RESULTS.md`):
//! `PULSAR_RS_POWER_CUTS=5000 cargo test --release -p pulsar-rs-ledger --test power_cut`.

// The model's bookkeeping reads more plainly with tuples, and the cursor-map branch does I/O
// between the lookup and the insert (the entry API would hold a borrow across it).
#![allow(clippy::type_complexity, clippy::map_entry)]

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use pulsar_rs_ledger::{
    Cursor, LedgerConfig, ManagedLedger, ManualClock, Position, Storage, StorageConfig,
};
use pulsar_rs_ledger_testkit::simfs::{Cut, Op, SimFs};

const DIR: &str = "/data";

fn storage_config() -> StorageConfig {
    StorageConfig {
        journal_sync_data: true,
        journal_max_segment_bytes: 4096,
        cursor_flush_interval: Duration::from_secs(3600),
        ..StorageConfig::default()
    }
}

fn ledger_config() -> LedgerConfig {
    LedgerConfig {
        max_entries_per_ledger: 4,
        min_rollover_time: Duration::ZERO,
        ..LedgerConfig::default()
    }
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn payload(topic: usize, seq: u64) -> Vec<u8> {
    let mut v = format!("{topic}|{seq}|").into_bytes();
    v.resize(20 + (seq as usize * 37) % 300, b'a' + (seq % 26) as u8);
    v
}

fn parse(data: &[u8]) -> Option<(usize, u64)> {
    let s = std::str::from_utf8(data.get(..data.len().min(40))?).ok()?;
    let mut it = s.split('|');
    let t = it.next()?.parse().ok()?;
    let q = it.next()?.parse().ok()?;
    (payload(t, q) == data).then_some((t, q))
}

#[derive(Default)]
struct CursorModel {
    /// Mark-delete and individual acks as of the last successful flush (None: never persisted).
    persisted: Option<(Position, Vec<(Position, Position)>)>,
    /// An operation on it failed mid-way: its state is unknown.
    uncertain: bool,
}

#[derive(Default)]
struct TopicModel {
    name: String,
    ml: Option<Arc<ManagedLedger>>,
    cursors: BTreeMap<String, (Option<Arc<Cursor>>, CursorModel)>,
    /// Acknowledged appends: position → sequence number.
    acked: BTreeMap<Position, u64>,
    /// Appends that failed while the file system was still up: they must never appear.
    failed: HashSet<u64>,
    /// Creation acknowledged.
    exists: bool,
    /// Deletion acknowledged.
    deleted: bool,
    /// A create or delete failed mid-way.
    uncertain: bool,
    /// Mark-delete of the slowest cursor when the power went (entries after it must survive).
    slowest_at_cut: Option<Position>,
}

struct Outcome {
    ops: u64,
    topics: Vec<TopicModel>,
}

/// Runs the seeded workload until done or until the file system is frozen.
fn workload(fs: &SimFs, seed: u64, steps: usize, faults: bool) -> Outcome {
    let mut rng = Rng(seed);
    let clock = Arc::new(ManualClock::new(1_000_000));
    let storage = match Storage::open_on(
        Arc::new(fs.clone()),
        DIR,
        storage_config(),
        clock.clone(),
        false,
    ) {
        Ok(s) => s,
        Err(e) => {
            assert!(fs.crashed(), "open failed without a crash: {e}");
            return Outcome {
                ops: fs.ops(),
                topics: Vec::new(),
            };
        }
    };
    let mut topics: Vec<TopicModel> = Vec::new();
    let mut seq = 0u64;
    for step in 0..steps {
        if fs.crashed() {
            break;
        }
        clock.advance_ms(7);
        let live: Vec<usize> = (0..topics.len())
            .filter(|&t| topics[t].exists && !topics[t].deleted && !topics[t].uncertain)
            .collect();
        let roll = rng.below(100);
        if live.is_empty() || (roll < 4 && topics.len() < 6) {
            let t = topics.len();
            let name = format!("tenant/ns/persistent/topic-{t}");
            let mut m = TopicModel {
                name: name.clone(),
                ..TopicModel::default()
            };
            match storage.open_ledger(&name, ledger_config()) {
                Ok(ml) => {
                    m.exists = true;
                    match ml.open_cursor_at("keep", true) {
                        Ok(c) => {
                            let cm = CursorModel {
                                persisted: Some((c.mark_delete_position(), Vec::new())),
                                ..CursorModel::default()
                            };
                            m.cursors.insert("keep".into(), (Some(c), cm));
                        }
                        Err(_) => m.uncertain = true,
                    }
                    m.ml = Some(ml);
                }
                Err(_) => m.uncertain = true,
            }
            topics.push(m);
            continue;
        }
        let t = live[rng.below(live.len())];
        let m = &mut topics[t];
        let ml = Arc::clone(m.ml.as_ref().expect("live topic is open"));
        match roll {
            0..=54 => {
                seq += 1;
                if faults && rng.below(40) == 0 {
                    fs.fail_next(Op::SyncData, "journal", std::io::ErrorKind::Other);
                }
                match ml.add_entry_blocking(Bytes::from(payload(t, seq))) {
                    Ok(p) => {
                        m.acked.insert(p, seq);
                    }
                    Err(_) if !fs.crashed() => {
                        m.failed.insert(seq);
                    }
                    Err(_) => {}
                }
            }
            55..=69 => {
                // Acknowledge: cumulatively up to some acked entry, or a few individually.
                let names: Vec<String> = m.cursors.keys().cloned().collect();
                let name = &names[rng.below(names.len())];
                let Some(c) = m.cursors[name].0.clone() else {
                    continue;
                };
                let positions: Vec<Position> = m
                    .acked
                    .keys()
                    .copied()
                    .filter(|p| *p > c.mark_delete_position())
                    .collect();
                if positions.is_empty() {
                    continue;
                }
                if rng.below(2) == 0 {
                    let _ = c.mark_delete(positions[rng.below(positions.len())]);
                } else {
                    let pick: Vec<Position> = (0..3)
                        .map(|_| positions[rng.below(positions.len())])
                        .collect();
                    c.delete(&pick);
                }
            }
            70..=79 => {
                let names: Vec<String> = m.cursors.keys().cloned().collect();
                let name = names[rng.below(names.len())].clone();
                if let (Some(c), cm) = m.cursors.get_mut(&name).expect("listed") {
                    let snap = (c.mark_delete_position(), c.acked_ranges());
                    match c.flush() {
                        Ok(()) => cm.persisted = Some(snap),
                        Err(_) => cm.uncertain |= fs.crashed(),
                    }
                }
            }
            80..=84 => {
                let snaps: Vec<(String, Position, Vec<(Position, Position)>)> = m
                    .cursors
                    .iter()
                    .filter_map(|(n, (c, _))| {
                        let c = c.as_ref()?;
                        Some((n.clone(), c.mark_delete_position(), c.acked_ranges()))
                    })
                    .collect();
                if ml.housekeeping().is_ok() {
                    for (n, mdp, acks) in snaps {
                        if let Some((_, cm)) = m.cursors.get_mut(&n) {
                            cm.persisted = Some((mdp, acks));
                        }
                    }
                }
            }
            85..=89 => {
                let r = match rng.below(3) {
                    0 => (0, 0),
                    1 => (-1, -1),
                    _ => (0, 2000),
                };
                ml.set_retention(r.0, r.1);
            }
            90..=93 => {
                let name = format!("sub-{}", rng.below(3));
                if m.cursors.contains_key(&name) {
                    if name != "keep" {
                        let ok = ml.delete_cursor(&name).is_ok();
                        if ok {
                            m.cursors.remove(&name);
                        } else if let Some((_, cm)) = m.cursors.get_mut(&name) {
                            cm.uncertain = true;
                        }
                    }
                } else {
                    match ml.open_cursor_at(&name, rng.below(2) == 0) {
                        Ok(c) => {
                            let cm = CursorModel {
                                persisted: Some((c.mark_delete_position(), c.acked_ranges())),
                                ..CursorModel::default()
                            };
                            m.cursors.insert(name, (Some(c), cm));
                        }
                        Err(_) => {
                            m.cursors.insert(
                                name,
                                (
                                    None,
                                    CursorModel {
                                        uncertain: true,
                                        ..CursorModel::default()
                                    },
                                ),
                            );
                        }
                    }
                }
            }
            94..=95 if step % 5 == 0 => match ml.delete() {
                Ok(()) => {
                    m.deleted = true;
                    m.ml = None;
                }
                Err(_) => m.uncertain = true,
            },
            _ => {
                let _ = storage.housekeeping();
            }
        }
    }
    for m in &mut topics {
        m.slowest_at_cut = m
            .cursors
            .values()
            .filter_map(|(c, _)| c.as_ref().map(|c| c.mark_delete_position()))
            .min();
        m.ml = None;
        for (c, _) in m.cursors.values_mut() {
            *c = None;
        }
    }
    let ops = fs.ops();
    // Dropped without close: a crash, not a shutdown.
    drop(storage);
    Outcome { ops, topics }
}

/// Reopens after the cut and checks every invariant; returns the first violation.
/// Returns how many journal segments the reopen read through their checkpointed index.
fn verify(fs: &SimFs, out: &Outcome) -> Result<usize, String> {
    let storage = Storage::open_on(
        Arc::new(fs.clone()),
        DIR,
        storage_config(),
        Arc::new(ManualClock::new(9_000_000)),
        false,
    )
    .map_err(|e| format!("reopen failed: {e}"))?;
    let names: HashSet<String> = storage
        .ledger_names()
        .map_err(|e| format!("listing: {e}"))?
        .into_iter()
        .collect();
    for (t, m) in out.topics.iter().enumerate() {
        if m.uncertain {
            continue;
        }
        if m.deleted {
            if names.contains(&m.name) {
                return Err(format!("deleted topic {} came back", m.name));
            }
            continue;
        }
        if !m.exists {
            continue;
        }
        if !names.contains(&m.name) {
            return Err(format!("topic {} lost", m.name));
        }
        let ml = storage
            .open_ledger(&m.name, ledger_config())
            .map_err(|e| format!("opening {}: {e}", m.name))?;
        let persisted: HashSet<String> = ml
            .persisted_cursor_names()
            .map_err(|e| e.to_string())?
            .into_iter()
            .collect();
        for (name, (_, cm)) in &m.cursors {
            let Some((mdp, acks)) = &cm.persisted else {
                continue;
            };
            if cm.uncertain {
                continue;
            }
            if !persisted.contains(name) {
                return Err(format!("{}: persisted cursor {name} lost", m.name));
            }
            let c = ml.open_cursor(name).map_err(|e| e.to_string())?;
            if c.mark_delete_position() < *mdp {
                return Err(format!(
                    "{}: cursor {name} moved back from {mdp} to {}",
                    m.name,
                    c.mark_delete_position()
                ));
            }
            for (from, to) in acks {
                if !c.is_acked(*from) || !c.is_acked(*to) {
                    return Err(format!(
                        "{}: cursor {name} forgot persisted acks [{from}, {to}] (now at {} with {:?}; persisted {mdp}; ledgers {:?})",
                        m.name,
                        c.mark_delete_position(),
                        c.acked_ranges(),
                        ml.ledgers().iter().map(|l| (l.ledger_id, l.entries)).collect::<Vec<_>>()
                    ));
                }
            }
        }
        // Every acknowledged entry after the slowest cursor reads back intact.
        let floor = m.slowest_at_cut.unwrap_or(Position::EARLIEST);
        for (p, q) in m.acked.range(floor.next()..) {
            let got = ml
                .read_entries(*p, 1, u64::MAX, *p)
                .map_err(|e| format!("{}: acknowledged {p} unreadable: {e}", m.name))?;
            if got.len() != 1 || got[0].position != *p || got[0].data != payload(t, *q) {
                return Err(format!("{}: acknowledged {p} lost or wrong", m.name));
            }
        }
        // Everything served is an entry this topic appended, never a failed one.
        let by_seq: BTreeMap<u64, Position> = m.acked.iter().map(|(p, q)| (*q, *p)).collect();
        let mut from = ml.first_position().next();
        loop {
            let batch = ml
                .read_entries(from, 50, u64::MAX, Position::LATEST)
                .map_err(|e| format!("{}: read at {from} failed: {e}", m.name))?;
            let Some(last) = batch.last().map(|e| e.position) else {
                break;
            };
            for e in &batch {
                if e.data.as_ref() == b"after" {
                    continue; // appended by an earlier verification pass
                }
                let Some((tt, q)) = parse(&e.data) else {
                    return Err(format!(
                        "{}: corrupt entry served at {}",
                        m.name, e.position
                    ));
                };
                if tt != t || m.failed.contains(&q) {
                    return Err(format!(
                        "{}: entry {} is a failed or foreign append ({tt}, {q})",
                        m.name, e.position
                    ));
                }
                if by_seq.get(&q).is_some_and(|p| *p != e.position) {
                    return Err(format!("{}: entry {q} moved to {}", m.name, e.position));
                }
            }
            from = ml.next_valid_position(last);
        }
        // Still usable.
        let p = ml
            .add_entry_blocking(Bytes::from_static(b"after"))
            .map_err(|e| format!("{}: append after recovery: {e}", m.name))?;
        let got = ml
            .read_entries(p, 1, u64::MAX, p)
            .map_err(|e| e.to_string())?;
        if got.len() != 1 || got[0].data.as_ref() != b"after" {
            return Err(format!("{}: append after recovery not readable", m.name));
        }
    }
    let indexed = storage.journal_segments_indexed_at_open();
    storage.close().map_err(|e| format!("close: {e}"))?;
    Ok(indexed)
}

/// Runs `cuts` cut points spread over the workloads of `seeds`; returns the violations found.
fn run(
    seeds: std::ops::Range<u64>,
    cuts_per_seed: u64,
    steps: usize,
    broken: Option<(bool, bool)>,
) -> (Vec<String>, usize) {
    let mut failures = Vec::new();
    let mut indexed = 0;
    for seed in seeds {
        let total = workload(&SimFs::new(), seed, steps, true).ops;
        for i in 0..cuts_per_seed {
            let at = 1
                + (total * i) / cuts_per_seed
                + (seed * 7 + i * 13) % (total / cuts_per_seed).max(1);
            let fs = SimFs::new();
            if let Some((data, dir)) = broken {
                fs.break_syncs(data, dir);
            }
            fs.crash_after(at);
            let out = workload(&fs, seed, steps, true);
            fs.power_cut(Cut::Random(seed * 1_000_003 + i));
            // The first reopen scans what the cut left unindexed (and indexes it); the second
            // must find exactly the same through the checkpointed index.
            for pass in ["scan", "index"] {
                match verify(&fs, &out) {
                    Ok(n) => indexed += n,
                    Err(e) => {
                        failures.push(format!(
                            "seed {seed}, cut after op {at}/{total}, {pass} pass: {e}"
                        ));
                        break;
                    }
                }
            }
        }
    }
    (failures, indexed)
}

#[test]
fn acknowledged_data_survives_power_cuts_at_every_point() {
    let cuts: u64 = std::env::var("PULSAR_RS_POWER_CUTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(400);
    let seeds = 8;
    let (failures, indexed) = run(0..seeds, cuts.div_ceil(seeds), 400, None);
    assert!(
        failures.is_empty(),
        "{} violations:\n{}",
        failures.len(),
        failures[..failures.len().min(20)].join("\n")
    );
    // The workload checkpoints the journal index in its housekeeping steps, so cuts land in
    // index writes too; and the second reopen of every cut reads through the index.
    assert!(indexed > 0, "no reopen used the checkpointed journal index");
}

#[test]
fn the_simulation_catches_a_missing_fdatasync() {
    let (failures, _) = run(100..103, 30, 300, Some((true, false)));
    assert!(!failures.is_empty(), "a no-op fdatasync went unnoticed");
}

#[test]
fn the_simulation_catches_a_missing_directory_sync() {
    let (failures, _) = run(200..203, 30, 300, Some((false, true)));
    assert!(
        !failures.is_empty(),
        "a no-op directory sync went unnoticed"
    );
}

#[test]
fn a_failed_write_never_surfaces_after_a_crash() {
    // fdatasync fails (EIO) after the record reached the page cache; then the power goes with
    // the page cache written back. The failed append must not reappear. Without preallocation:
    // the idle flusher's zero-fill steps would take the injected failure instead.
    let storage_config = || StorageConfig {
        journal_prealloc_bytes: 0,
        ..storage_config()
    };
    for seed in 0..40 {
        let fs = SimFs::new();
        let s = Storage::open_on(
            Arc::new(fs.clone()),
            DIR,
            storage_config(),
            Arc::new(ManualClock::new(1)),
            false,
        )
        .unwrap();
        let ml = s.open_ledger("t/phantom", ledger_config()).unwrap();
        ml.open_cursor_at("keep", true).unwrap();
        let ok = ml.add_entry_blocking(Bytes::from_static(b"good")).unwrap();
        fs.fail_next(Op::SyncData, "journal", std::io::ErrorKind::Other);
        assert!(ml
            .add_entry_blocking(Bytes::from_static(b"phantom"))
            .is_err());
        // Cut before anything else is written: the ledger is still open in the metadata, so
        // only the journal itself can keep the failed record out.
        drop(ml);
        drop(s);
        fs.power_cut(Cut::Random(seed));
        let s = Storage::open_on(
            Arc::new(fs.clone()),
            DIR,
            storage_config(),
            Arc::new(ManualClock::new(2)),
            false,
        )
        .unwrap();
        let ml = s.open_ledger("t/phantom", ledger_config()).unwrap();
        let mut seen = Vec::new();
        let mut from = ml.first_position().next();
        loop {
            let b = ml
                .read_entries(from, 10, u64::MAX, Position::LATEST)
                .unwrap();
            let Some(last) = b.last().map(|e| e.position) else {
                break;
            };
            seen.extend(b.into_iter().map(|e| e.data));
            from = ml.next_valid_position(last);
        }
        assert!(
            !seen.iter().any(|d| d.as_ref() == b"phantom"),
            "seed {seed}: the failed append surfaced: {seen:?}"
        );
        assert_eq!(
            ml.read_entries(ok, 1, u64::MAX, ok).unwrap()[0]
                .data
                .as_ref(),
            b"good"
        );
        let later = ml.add_entry_blocking(Bytes::from_static(b"later")).unwrap();
        assert_eq!(
            ml.read_entries(later, 1, u64::MAX, later).unwrap()[0]
                .data
                .as_ref(),
            b"later"
        );
        s.close().unwrap();
    }
}

#[test]
fn unsynced_metadata_renames_roll_back_cleanly() {
    // A metadata write cut between its rename and the directory sync leaves the old value or
    // the new one, never a mix, and never a temporary file as a key.
    let fs = SimFs::new();
    let meta =
        pulsar_rs_ledger::FileMetaStore::open_with(Arc::new(fs.clone()), Path::new("/m"), false)
            .unwrap();
    use pulsar_rs_ledger::MetaStore;
    meta.put("k/sub.1", b"one").unwrap();
    meta.put("k/sub.2", b"two").unwrap();
    for seed in 0..50 {
        fs.crash_after(3 + seed % 4);
        let _ = meta.put("k/sub.1", format!("new-{seed}").as_bytes());
        fs.power_cut(Cut::Random(seed));
        let meta = pulsar_rs_ledger::FileMetaStore::open_with(
            Arc::new(fs.clone()),
            Path::new("/m"),
            false,
        )
        .unwrap();
        let v = meta.get("k/sub.1").unwrap().unwrap();
        assert!(v == b"one" || v.starts_with(b"new-"), "{v:?}");
        assert_eq!(meta.get("k/sub.2").unwrap().unwrap(), b"two");
        assert_eq!(
            meta.list("k").unwrap(),
            vec!["k/sub.1".to_string(), "k/sub.2".to_string()]
        );
    }
}
