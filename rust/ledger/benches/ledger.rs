//! Managed-ledger micro-benchmarks, with the physical limits measured in the same run.
//!
//! * `append_nondurable`: 100-byte appends, `journalSyncData=false`, one thread (goal ≥ 1 M/s).
//!   Every 10 000 entries a fresh managed ledger is opened (see `append_depth` for why).
//! * `append_depth`: the cost of one append into a ledger that already holds 1 000 / 100 000
//!   entries (shows any per-append work that grows with the ledger).
//! * `durable_64_writers`: durable group-commit appends from 64 concurrent writers on 64 topics,
//!   100 B and 1 KiB entries, against `physical`: `write()+fdatasync` and plain `write()` of the
//!   same bytes per round (64 entries), in the same directory (goal ≥ 50 % of write+fdatasync).
//! * `cache_hit_read`: `read_entries` of 100 cached entries on one thread (goal ≥ 5 M entries/s).
//! * `cursor_ack_holes`: individual acks of every other entry (each creates a hole).
//! * `holes_1m`: encode/decode of a cursor snapshot with 1 000 000 scattered holes; then a
//!   one-shot run acks 1 M scattered entries of a real ledger, persists the cursor, reopens the
//!   data directory and recovers it, printing times and bytes as a `ONESHOT {json}` line.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use criterion::{BenchmarkId, Criterion, Throughput};
use pulsar_rs_ledger::{
    AckSet, CursorSnapshot, LedgerConfig, ManagedLedger, Position, Storage, StorageConfig,
};

fn nondurable() -> StorageConfig {
    StorageConfig {
        journal_sync_data: false,
        ..StorageConfig::default()
    }
}

/// Small ledgers that roll over immediately: bounds per-ledger costs in long fills.
fn small_ledgers() -> LedgerConfig {
    LedgerConfig {
        max_entries_per_ledger: 10_000,
        min_rollover_time: Duration::ZERO,
        ..LedgerConfig::default()
    }
}

fn append(ml: &Arc<ManagedLedger>, data: &Bytes) -> Position {
    ml.start_add(data.clone(), 0).expect("append").0
}

fn bench_append_nondurable(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let storage = Storage::open(dir.path(), nondurable()).expect("storage");
    let data = Bytes::from(vec![0x42u8; 100]);
    let mut g = c.benchmark_group("append_nondurable");
    g.throughput(Throughput::Elements(1));
    let mut n = 0u64;
    g.bench_function("100b", |b| {
        b.iter_custom(|iters| {
            let mut elapsed = Duration::ZERO;
            let mut left = iters;
            while left > 0 {
                n += 1;
                let ml = storage
                    .open_ledger(&format!("t{n}"), LedgerConfig::default())
                    .expect("ledger");
                let k = left.min(10_000);
                let t = pulsar_rs_clock::monotonic();
                for _ in 0..k {
                    append(&ml, &data);
                }
                elapsed += t.elapsed();
                left -= k;
                ml.close().expect("close");
            }
            elapsed
        });
    });
    g.finish();
    storage.close().expect("close");
}

fn bench_append_depth(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let storage = Storage::open(dir.path(), nondurable()).expect("storage");
    let data = Bytes::from(vec![0x42u8; 100]);
    let mut g = c.benchmark_group("append_depth");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(2));
    g.warm_up_time(Duration::from_millis(500));
    g.throughput(Throughput::Elements(1));
    for depth in [1_000u64, 100_000] {
        let ml = storage
            .open_ledger(&format!("depth{depth}"), LedgerConfig::default())
            .expect("ledger");
        for _ in 0..depth {
            append(&ml, &data);
        }
        g.bench_with_input(BenchmarkId::from_parameter(depth), &depth, |b, _| {
            b.iter(|| append(&ml, &data));
        });
    }
    g.finish();
    storage.close().expect("close");
}

/// `write()+fdatasync` (or plain `write()`) of `chunk` bytes per iteration, appending.
fn physical_round(dir: &Path, chunk: usize, sync: bool, iters: u64) -> Duration {
    let path = dir.join(format!("physical-{chunk}-{sync}.dat"));
    let mut f = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(&path)
        .expect("scratch file");
    let buf = vec![0x5au8; chunk];
    let t = pulsar_rs_clock::monotonic();
    for _ in 0..iters {
        f.write_all(&buf).expect("write");
        if sync {
            f.sync_data().expect("fdatasync");
        }
    }
    let e = t.elapsed();
    drop(f);
    let _ = std::fs::remove_file(path);
    e
}

fn bench_durable(c: &mut Criterion) {
    const WRITERS: usize = 64;
    // Same file system as the journal (the system temp dir), one per run.
    let dir = tempfile::tempdir().expect("tempdir");
    let storage = Storage::open(dir.path().join("data"), StorageConfig::default()).expect("open");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let ledgers: Vec<Arc<ManagedLedger>> = (0..WRITERS)
        .map(|i| {
            storage
                .open_ledger(&format!("durable-{i}"), small_ledgers())
                .expect("ledger")
        })
        .collect();

    let mut g = c.benchmark_group("durable_64_writers");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(3));
    g.warm_up_time(Duration::from_millis(500));
    for size in [100usize, 1024] {
        let data = Bytes::from(vec![0x42u8; size]);
        g.throughput(Throughput::Bytes(size as u64));
        g.bench_with_input(BenchmarkId::new("append", size), &size, |b, _| {
            b.iter_custom(|iters| {
                let per = iters.div_ceil(WRITERS as u64);
                rt.block_on(async {
                    let t = pulsar_rs_clock::monotonic();
                    let tasks: Vec<_> = ledgers
                        .iter()
                        .map(|ml| {
                            let (ml, data) = (Arc::clone(ml), data.clone());
                            tokio::spawn(async move {
                                for _ in 0..per {
                                    ml.add_entry(data.clone()).await.expect("durable append");
                                }
                            })
                        })
                        .collect();
                    for t in tasks {
                        t.await.expect("writer");
                    }
                    // Scale to the requested iteration count.
                    t.elapsed()
                        .mul_f64(iters as f64 / (per * WRITERS as u64) as f64)
                })
            });
        });
    }
    g.finish();

    let mut g = c.benchmark_group("physical");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(3));
    g.warm_up_time(Duration::from_millis(500));
    for size in [100usize, 1024] {
        // One group-commit round of 64 entries (journal record headers not counted).
        let chunk = WRITERS * size;
        g.throughput(Throughput::Bytes(chunk as u64));
        g.bench_with_input(
            BenchmarkId::new("write_fdatasync_64_entries", size),
            &chunk,
            |b, &chunk| b.iter_custom(|iters| physical_round(dir.path(), chunk, true, iters)),
        );
        g.bench_with_input(
            BenchmarkId::new("write_64_entries", size),
            &chunk,
            |b, &chunk| b.iter_custom(|iters| physical_round(dir.path(), chunk, false, iters)),
        );
    }
    g.finish();
    drop(ledgers);
    storage.close().expect("close");
}

fn bench_cache_hits(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let storage = Storage::open(dir.path(), nondurable()).expect("storage");
    let ml = storage
        .open_ledger("cached", LedgerConfig::default())
        .expect("ledger");
    // An active cursor makes appends go into the cache.
    let _cursor = ml.open_cursor("sub").expect("cursor");
    let data = Bytes::from(vec![0x42u8; 100]);
    let first = append(&ml, &data);
    for _ in 1..10_000 {
        append(&ml, &data);
    }
    let last = ml.last_confirmed();
    let mut g = c.benchmark_group("cache_hit_read");
    g.throughput(Throughput::Elements(100));
    let mut offset = 0i64;
    g.bench_function("100_entries", |b| {
        b.iter(|| {
            let from = Position::new(first.ledger_id, first.entry_id + offset);
            offset = (offset + 100) % 9_900;
            let e = ml.read_entries(from, 100, u64::MAX, last).expect("read");
            assert_eq!(e.len(), 100);
            e
        });
    });
    g.finish();
    let stats = storage.cache_stats();
    eprintln!("cache stats after cache_hit_read: {stats:?}");
    storage.close().expect("close");
}

fn bench_acks(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let storage = Storage::open(dir.path(), nondurable()).expect("storage");
    let ml = storage
        .open_ledger("acks", small_ledgers())
        .expect("ledger");
    let data = Bytes::from_static(b"0123456789");
    let positions: Vec<Position> = (0..200_000).map(|_| append(&ml, &data)).collect();
    let mut g = c.benchmark_group("cursor_ack_holes");
    g.throughput(Throughput::Elements(1));
    let mut n = 0u64;
    g.bench_function("individual_ack_every_other", |b| {
        b.iter_custom(|iters| {
            let mut elapsed = Duration::ZERO;
            let mut left = iters;
            while left > 0 {
                n += 1;
                let cursor = ml.open_non_durable_cursor(&format!("c{n}"), Position::EARLIEST);
                let k = left.min(100_000);
                let t = pulsar_rs_clock::monotonic();
                for i in 0..k as usize {
                    cursor.delete(&positions[2 * i + 1..2 * i + 2]);
                }
                elapsed += t.elapsed();
                left -= k;
                ml.delete_cursor(cursor.name()).ok();
            }
            elapsed
        });
    });
    g.finish();
    storage.close().expect("close");
}

fn scattered_snapshot(holes: i64) -> CursorSnapshot {
    let mut acked = AckSet::new();
    // 100 ledgers of 20 000 entries, every other entry acknowledged.
    for i in 0..holes {
        acked.insert(Position::new(1 + i / 10_000, 2 * (i % 10_000) + 1));
    }
    CursorSnapshot {
        mark_delete: Position::new(1, -1),
        acked,
        ..Default::default()
    }
}

fn bench_holes(c: &mut Criterion) {
    let snap = scattered_snapshot(1_000_000);
    let encoded = snap.encode();
    eprintln!(
        "holes_1m: snapshot with {} ranges encodes to {} bytes ({:.2} bytes/hole)",
        snap.acked.range_count(),
        encoded.len(),
        encoded.len() as f64 / 1e6
    );
    let mut g = c.benchmark_group("holes_1m");
    g.sample_size(10);
    g.throughput(Throughput::Elements(1_000_000));
    g.bench_function("encode", |b| b.iter(|| snap.encode()));
    g.bench_function("decode", |b| {
        b.iter(|| CursorSnapshot::decode("bench", &encoded).expect("decode"))
    });
    g.finish();
}

/// Acks 1 M scattered entries on a real durable ledger, persists, reopens, recovers.
fn one_shot_holes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = Bytes::from_static(b"0123456789");
    let (fill, ack, flush, bytes) = {
        let storage = Storage::open(dir.path(), nondurable()).expect("storage");
        let ml = storage
            .open_ledger("holes", small_ledgers())
            .expect("ledger");
        let cursor = ml.open_cursor("sub").expect("cursor");
        let t = pulsar_rs_clock::monotonic();
        let positions: Vec<Position> = (0..2_000_000).map(|_| append(&ml, &data)).collect();
        let fill = t.elapsed();
        let t = pulsar_rs_clock::monotonic();
        for p in positions.iter().skip(1).step_by(2) {
            cursor.delete(std::slice::from_ref(p));
        }
        let ack = t.elapsed();
        let bytes = cursor.snapshot().encode().len();
        let t = pulsar_rs_clock::monotonic();
        cursor.flush().expect("flush");
        let flush = t.elapsed();
        drop(cursor);
        storage.close().expect("close");
        (fill, ack, flush, bytes)
    };
    let t = pulsar_rs_clock::monotonic();
    let storage = Storage::open(dir.path(), nondurable()).expect("reopen");
    let ml = storage
        .open_ledger("holes", small_ledgers())
        .expect("ledger");
    let cursor = ml.open_cursor("sub").expect("cursor");
    let recover = t.elapsed();
    let recovered = cursor.snapshot().acked.entry_count();
    let backlog = cursor.backlog();
    storage.close().expect("close");
    println!(
        "ONESHOT {}",
        serde_json::json!({
            "bench": "persist_recover_1m_holes",
            "entries": 2_000_000,
            "holes_acked": 1_000_000,
            "fill_s": fill.as_secs_f64(),
            "ack_s": ack.as_secs_f64(),
            "encoded_bytes": bytes,
            "persist_s": flush.as_secs_f64(),
            "reopen_and_recover_s": recover.as_secs_f64(),
            "recovered_acked_entries": recovered,
            "backlog_after_recovery": backlog,
        })
    );
}

fn main() {
    let filter: Option<String> = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-') && a != "bench");
    let wants = |name: &str| filter.as_deref().is_none_or(|f| name.contains(f));
    let mut c = Criterion::default().configure_from_args();
    bench_append_nondurable(&mut c);
    bench_append_depth(&mut c);
    bench_durable(&mut c);
    bench_cache_hits(&mut c);
    bench_acks(&mut c);
    bench_holes(&mut c);
    if wants("holes_1m_oneshot") {
        one_shot_holes();
    }
    c.final_summary();
}
