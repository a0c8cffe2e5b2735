//! The load generator (`perf`) and the machine-limit probes of pulsar_rs: what its benchmarks run.
//!
//! * [`client`]: a minimal Pulsar protocol client on Tokio (CONNECT, PRODUCER, SEND, SUBSCRIBE,
//!   FLOW, ACK) built on `pulsar_rs_proto`, enough for a load generator. It speaks to any
//!   Pulsar-compatible broker (pulsar_rs, pulsar-lite) connected directly, without lookups.
//! * [`perf`]: the load generator (`pulsar-rs-perf`, and `pulsar-rs perf` in the Python package).
//! * [`stats`]: HdrHistogram summaries as JSON.
//! * [`batch`]: building and parsing batch payloads (`SingleMessageMetadata` + message bytes) and
//!   the timestamp the load generator puts at the front of every message.
//! * [`wake`]: what a sleep and a wake-up cost in CPU time (`pulsar-rs-probe wake`).
//! * [`round_trip`]: the floor under a durable publish with one message in flight: loopback,
//!   `fdatasync`, and both in one request / answer (`pulsar-rs-probe round-trip`).
//!
//! The binaries are `pulsar-rs-perf` (load generator) and `pulsar-rs-probe` (machine limits:
//! loopback TCP throughput, `write`/`fdatasync` bandwidth and latency, the cost of a wake-up, the
//! durable round trip's floor).

pub mod batch;
pub mod client;
pub mod perf;
pub mod round_trip;
pub mod stats;
pub mod wake;
