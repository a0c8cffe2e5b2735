//! `pulsar-rs-perf`: the load generator of [`pulsar_rs_perf::perf`] as a binary. Per-second
//! lines go to stderr; the summary is one JSON object on stdout (benches parse it).

use std::sync::Arc;

use clap::Parser;
use pulsar_rs_perf::perf::{run, Args};

fn main() {
    let args = Arc::new(Args::parse());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.threads.max(1))
        .enable_all()
        .build()
        .expect("tokio runtime");
    match rt.block_on(run(Arc::clone(&args), Arc::new(|l: &str| eprintln!("{l}")))) {
        Ok(v) => println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default()),
        Err(e) => {
            eprintln!("pulsar-rs-perf: {e}");
            std::process::exit(1);
        }
    }
}
