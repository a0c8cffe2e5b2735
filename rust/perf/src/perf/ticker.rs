//! The per-second line of a perf run: messages/s, MB/s and latency percentiles of the last
//! second, for publishing and consuming (as `pulsar-perf` prints them).

use std::fmt::Write;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::stats::new_histogram;

use super::{lock, rate, Args, Progress};

/// `p50 .. max` of `h` in milliseconds, or `-` when empty.
fn percentiles(h: &Histogram<u64>) -> String {
    if h.is_empty() {
        return "-".to_owned();
    }
    #[allow(clippy::cast_precision_loss)]
    let ms = |us: u64| us as f64 / 1000.0;
    format!(
        "p50 {:.2} p95 {:.2} p99 {:.2} p99.9 {:.2} max {:.2}",
        ms(h.value_at_quantile(0.5)),
        ms(h.value_at_quantile(0.95)),
        ms(h.value_at_quantile(0.99)),
        ms(h.value_at_quantile(0.999)),
        ms(h.max())
    )
}

/// One line: the figures of one interval.
#[must_use]
#[allow(clippy::too_many_arguments, clippy::cast_precision_loss)]
pub fn line(
    args: &Args,
    elapsed: Duration,
    interval: Duration,
    published: u64,
    publish_latency: &Histogram<u64>,
    received: u64,
    received_bytes: u64,
    e2e_latency: &Histogram<u64>,
) -> String {
    let mut s = format!("{:>5.0}s", elapsed.as_secs_f64());
    if args.producers > 0 {
        let r = rate(published, interval);
        let _ = write!(
            s,
            "  publish {r:>10.1} msg/s {:>7.2} MB/s  latency ms {}",
            r * args.size as f64 / 1e6,
            percentiles(publish_latency)
        );
    }
    if args.consumers > 0 {
        let _ = write!(
            s,
            "  consume {:>10.1} msg/s {:>7.2} MB/s  e2e ms {}",
            rate(received, interval),
            rate(received_bytes, interval) / 1e6,
            percentiles(e2e_latency)
        );
    }
    s
}

/// Calls `on_line` once a second from `start` until aborted.
pub(super) async fn tick_lines(
    args: Arc<Args>,
    progress: Arc<Progress>,
    start: Instant,
    on_line: Arc<dyn Fn(&str) + Send + Sync>,
) {
    let every = Duration::from_secs(1);
    let mut tick = tokio::time::interval_at((start + every).into(), every);
    let (mut last, mut published, mut received, mut bytes) = (start, 0u64, 0u64, 0u64);
    loop {
        tick.tick().await;
        let now = pulsar_rs_clock::monotonic();
        // Relaxed: statistics.
        let p = progress.published.load(Ordering::Relaxed);
        let r = progress.received.load(Ordering::Relaxed);
        let b = progress.received_bytes.load(Ordering::Relaxed);
        let pub_h = std::mem::replace(&mut *lock(&progress.publish_latency), new_histogram());
        let e2e_h = std::mem::replace(&mut *lock(&progress.e2e_latency), new_histogram());
        on_line(&line(
            &args,
            now - start,
            now - last,
            p - published,
            &pub_h,
            r - received,
            b - bytes,
            &e2e_h,
        ));
        (last, published, received, bytes) = (now, p, r, b);
    }
}
