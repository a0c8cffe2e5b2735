//! Dispatch cost per message, as the number of consumers or keys grows.
//!
//! A real managed ledger in a temporary directory holds 100 000 entries (100-byte payloads, each
//! with a partition key). A [`Subscription`] made with [`Subscription::new`] (no dispatcher
//! task) is driven by [`Subscription::dispatch_once`]: plan, read from the cursor, route, deliver
//! into in-memory [`ConsumerSink`]s; every delivered message is then acknowledged and its permit
//! returned, so the measured loop is the steady state of dispatch + ack. When the cursor reaches
//! the end it is reset to the start.
//!
//! * `dispatch_shared/consumers/{1,10,100}`: Shared round-robin (goal: flat from 1 to 100).
//! * `dispatch_key_shared/keys/{100,100000}`: Key_Shared, 10 consumers, AUTO_SPLIT consistent
//!   hashing (goal: flat from 100 to 100 000 distinct keys).
//! * `dispatch_key_shared_consumers/{1,10,100}`: Key_Shared with 100 000 keys.
//!
//! Run: `cargo bench -p pulsar-rs-broker --bench dispatch`.

use std::sync::Arc;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput};
use parking_lot::Mutex;
use pulsar_rs_broker::{
    BrokerConfig, Consumer, ConsumerEvent, ConsumerSink, SubType, Subscription,
};
use pulsar_rs_ledger::{LedgerConfig, ManagedLedger, Position, Storage, StorageConfig};
use pulsar_rs_proto::MessageMetadata;

const ENTRIES: usize = 100_000;

/// Collects delivered positions per consumer id.
#[derive(Default)]
struct Sink {
    delivered: Mutex<Vec<(u64, Position)>>,
}

impl ConsumerSink for Sink {
    fn send(&self, event: ConsumerEvent) -> bool {
        if let ConsumerEvent::Message {
            consumer_id,
            position,
            ..
        } = event
        {
            self.delivered.lock().push((consumer_id, position));
        }
        true
    }
}

fn fill(keys: usize) -> (tempfile::TempDir, Arc<Storage>, Arc<ManagedLedger>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let storage = Storage::open(
        dir.path(),
        StorageConfig {
            journal_sync_data: false,
            cache_eviction_time_threshold: Duration::from_secs(3600),
            ..StorageConfig::default()
        },
    )
    .expect("storage");
    let ml = storage
        .open_ledger(&format!("keys{keys}"), LedgerConfig::default())
        .expect("ledger");
    let payload = vec![0x42u8; 100];
    for i in 0..ENTRIES {
        let md = MessageMetadata {
            producer_name: "bench".into(),
            sequence_id: i as u64,
            publish_time: 1,
            partition_key: Some(format!("key-{}", i % keys)),
            ..Default::default()
        };
        let data = pulsar_rs_proto::frame::build_stored_entry(&md, &payload);
        ml.start_add(data, 0).expect("append");
    }
    (dir, storage, ml)
}

struct Rig {
    sub: Subscription,
    sink: Arc<Sink>,
    consumers: Vec<Arc<Consumer>>,
}

fn rig(ml: &Arc<ManagedLedger>, sub_type: SubType, consumers: usize) -> Rig {
    let config = Arc::new(BrokerConfig::default());
    let cursor = ml.open_non_durable_cursor("bench", Position::EARLIEST);
    let sub = Subscription::new(
        "bench",
        "persistent://public/default/bench",
        -1,
        cursor,
        false,
        config,
    );
    let sink = Arc::new(Sink::default());
    let consumers: Vec<Arc<Consumer>> = (0..consumers)
        .map(|i| {
            let c = Consumer::new(
                i as u64,
                format!("consumer-{i}"),
                0,
                sub_type,
                "bench".into(),
                Arc::clone(&sink) as Arc<dyn ConsumerSink>,
                Arc::new(pulsar_rs_clock::SystemClock),
            );
            sub.add_consumer(Arc::clone(&c), None)
                .expect("add consumer");
            sub.flow(&c, 1000);
            c
        })
        .collect();
    Rig {
        sub,
        sink,
        consumers,
    }
}

/// Dispatches (and acknowledges) at least `n` messages; returns the time taken.
fn run(r: &Rig, n: u64) -> Duration {
    let start = pulsar_rs_clock::monotonic();
    let mut done = 0u64;
    let mut batch: Vec<(u64, Position)> = Vec::new();
    while done < n {
        let out = r.sub.dispatch_once().expect("dispatch");
        if out.entries == 0 {
            let first = r.sub.cursor.ledger().first_position();
            r.sub.cursor.reset(first.next());
            continue;
        }
        done += out.messages;
        std::mem::swap(&mut batch, &mut r.sink.delivered.lock());
        batch.sort_unstable_by_key(|(id, _)| *id);
        for chunk in batch.chunk_by(|a, b| a.0 == b.0) {
            let c = &r.consumers[chunk[0].0 as usize];
            let ids: Vec<(Position, Option<Vec<i64>>)> =
                chunk.iter().map(|(_, p)| (*p, None)).collect();
            r.sub.ack_individual(c, &ids);
            r.sub.flow(c, u32::try_from(ids.len()).unwrap_or(u32::MAX));
        }
        batch.clear();
    }
    start.elapsed()
}

fn bench(c: &mut Criterion) {
    let (_d1, _s1, few) = fill(100);
    let (_d2, _s2, many) = fill(ENTRIES);

    let mut g = c.benchmark_group("dispatch_shared");
    g.throughput(Throughput::Elements(1));
    for n in [1usize, 10, 100] {
        let r = rig(&many, SubType::Shared, n);
        g.bench_with_input(BenchmarkId::new("consumers", n), &n, |b, _| {
            b.iter_custom(|iters| run(&r, iters));
        });
    }
    g.finish();

    let mut g = c.benchmark_group("dispatch_key_shared");
    g.throughput(Throughput::Elements(1));
    for (keys, ml) in [(100usize, &few), (ENTRIES, &many)] {
        let r = rig(ml, SubType::KeyShared, 10);
        g.bench_with_input(BenchmarkId::new("keys", keys), &keys, |b, _| {
            b.iter_custom(|iters| run(&r, iters));
        });
    }
    g.finish();

    let mut g = c.benchmark_group("dispatch_key_shared_consumers");
    g.throughput(Throughput::Elements(1));
    for n in [1usize, 10, 100] {
        let r = rig(&many, SubType::KeyShared, n);
        g.bench_with_input(BenchmarkId::new("consumers", n), &n, |b, _| {
            b.iter_custom(|iters| run(&r, iters));
        });
    }
    g.finish();
}

fn main() {
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(20)
        .configure_from_args();
    bench(&mut c);
    c.final_summary();
}
