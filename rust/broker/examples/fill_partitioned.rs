//! Fills a data directory for the big-namespace benchmark (`benches/big_namespace.py`): one
//! partitioned topic `persistent://public/default/big` with `PARTITIONS` partitions, every one
//! of them created (stored, as a first producer or Pulsar's `createMissedPartitions` leaves it),
//! with a durable subscription `sub`. Non-durable journal (speed).
//!
//! `cargo run --release -p pulsar-rs-broker --example fill_partitioned -- DIR PARTITIONS`

use pulsar_rs_broker::{BrokerConfig, BrokerService, TopicName};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(dir), Some(n)) = (args.get(1), args.get(2).and_then(|s| s.parse::<u32>().ok()))
    else {
        panic!("usage: fill_partitioned DIR PARTITIONS");
    };
    let t0 = pulsar_rs_clock::monotonic();
    // A subscription starts its dispatcher task on the runtime it is created in.
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let svc = BrokerService::open(
        BrokerConfig {
            journal_sync_data: false,
            ..BrokerConfig::default()
        },
        std::path::Path::new(dir),
    )
    .expect("open");
    let base = TopicName::parse("persistent://public/default/big").expect("name");
    svc.create_partitioned(&base, n)
        .expect("partitioned metadata");
    // Creating a topic and its subscription writes metadata: many threads at once.
    let threads = 32;
    std::thread::scope(|s| {
        for k in 0..threads {
            let (svc, base, rt) = (&svc, &base, runtime.handle());
            s.spawn(move || {
                let _in_runtime = rt.enter();
                for i in (0..n).filter(|i| i % threads == k) {
                    let t = svc.topic(&base.partition(i), true).expect("partition");
                    t.durable_subscription("sub", true, true)
                        .expect("subscription");
                }
            });
        }
    });
    svc.close().expect("close");
    println!(
        "created {n} partitions in {:.1} s",
        t0.elapsed().as_secs_f64()
    );
}
