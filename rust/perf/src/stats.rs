//! Latency histograms (microsecond resolution) and their JSON summaries.

use hdrhistogram::Histogram;
use serde_json::{json, Value};

/// A histogram of latencies in microseconds, 1 µs .. 1 hour, 3 significant digits.
#[must_use]
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid histogram bounds")
}

/// Records `count` samples of `micros` (clamped into the histogram's range).
pub fn record(h: &mut Histogram<u64>, micros: u64, count: u64) {
    let v = micros.clamp(1, h.high());
    // Cannot fail after clamping.
    let _ = h.record_n(v, count);
}

/// `{count, mean, p50, p95, p99, p999, max}` in milliseconds.
#[must_use]
pub fn summary_ms(h: &Histogram<u64>) -> Value {
    let ms = |us: u64| (us as f64) / 1000.0;
    if h.is_empty() {
        return json!({ "count": 0 });
    }
    json!({
        "count": h.len(),
        "mean": h.mean() / 1000.0,
        "p50": ms(h.value_at_quantile(0.50)),
        "p95": ms(h.value_at_quantile(0.95)),
        "p99": ms(h.value_at_quantile(0.99)),
        "p999": ms(h.value_at_quantile(0.999)),
        "max": ms(h.max()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_reports_percentiles_in_ms() {
        let mut h = new_histogram();
        for v in 1..=1000 {
            record(&mut h, v * 10, 1);
        }
        let s = summary_ms(&h);
        assert_eq!(s["count"], 1000);
        let p50 = s["p50"].as_f64().unwrap();
        assert!((4.9..5.1).contains(&p50), "{p50}");
        assert_eq!(summary_ms(&new_histogram())["count"], 0);
    }
}
