//! Times the Rust half of an offline export (read-only open + every table built, no Parquet):
//! `cargo run --release -p pulsar-rs-export --example offline_export -- DATA_DIR`. For profiling
//! `pulsar-rs export` without the Python side (benches/RESULTS.md, recovery at scale).

use std::path::PathBuf;

use pulsar_rs_broker::{BrokerConfig, BrokerService};

fn main() {
    let dir = PathBuf::from(
        std::env::args()
            .nth(1)
            .expect("usage: offline_export DATA_DIR"),
    );
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let _guard = runtime.enter();
    let t0 = pulsar_rs_clock::monotonic();
    let service = BrokerService::open_read_only(BrokerConfig::default(), &dir).expect("open");
    let opened = t0.elapsed();
    let tables = pulsar_rs_export::snapshot(&service).expect("export");
    let built = t0.elapsed();
    service.close().expect("close");
    let rows: Vec<String> = tables
        .iter()
        .map(|t| format!("{}={}", t.name, t.num_rows()))
        .collect();
    println!(
        "open {:.3} s, tables {:.3} s, {}",
        opened.as_secs_f64(),
        (built - opened).as_secs_f64(),
        rows.join(" ")
    );
}
