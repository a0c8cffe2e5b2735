//! Rate counters: lock-free totals with a rate computed over the last sampling window, and a
//! token bucket for rate limiting.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// Counts events and bytes; [`Meter::rates`] reports per-second rates over the last window.
#[derive(Debug)]
pub struct Meter {
    /// Events counted so far. Relaxed: monotonic statistics, nothing is published through them.
    count: AtomicU64,
    /// Bytes counted so far (same rule).
    bytes: AtomicU64,
    /// (window start, count at start, bytes at start, last rates). Locked only by readers of rates.
    window: Mutex<(Instant, u64, u64, f64, f64)>,
}

impl Default for Meter {
    fn default() -> Self {
        Meter {
            count: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            window: Mutex::new((Instant::now(), 0, 0, 0.0, 0.0)),
        }
    }
}

impl Meter {
    /// Records `n` events of `bytes` bytes in total.
    pub fn record(&self, n: u64, bytes: u64) {
        // Relaxed: independent monotonic counters.
        self.count.fetch_add(n, Ordering::Relaxed);
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Total events.
    #[must_use]
    pub fn total(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    /// Total bytes.
    #[must_use]
    pub fn total_bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// (events/s, bytes/s) over the window that ended at the latest sample; a new window starts
    /// when the current one is at least one second old.
    #[must_use]
    pub fn rates(&self) -> (f64, f64) {
        let mut w = self.window.lock();
        let elapsed = w.0.elapsed();
        if elapsed >= Duration::from_secs(1) {
            let (c, b) = (self.total(), self.total_bytes());
            let secs = elapsed.as_secs_f64();
            #[allow(clippy::cast_precision_loss)]
            {
                w.3 = (c - w.1) as f64 / secs;
                w.4 = (b - w.2) as f64 / secs;
            }
            *w = (Instant::now(), c, b, w.3, w.4);
        }
        (w.3, w.4)
    }
}

/// A token bucket refilled continuously at `rate` per second with capacity `rate` (one second of
/// burst), as in Pulsar's PIP-322. Tokens may go negative: a request already accepted is never
/// refused; the caller waits [`TokenBucket::wait_time`] before accepting more.
#[derive(Debug)]
pub struct TokenBucket {
    /// Tokens per second; immutable.
    rate: f64,
    /// Maximum tokens; immutable.
    capacity: f64,
    /// (tokens, last refill). A short critical section per call.
    state: Mutex<(f64, Instant)>,
}

impl TokenBucket {
    /// A bucket allowing `rate` tokens per second, starting full.
    #[must_use]
    pub fn new(rate: f64) -> Self {
        Self::with_capacity(rate, rate)
    }

    /// A bucket with an explicit burst capacity, starting full.
    #[must_use]
    pub fn with_capacity(rate: f64, capacity: f64) -> Self {
        TokenBucket {
            rate,
            capacity,
            state: Mutex::new((capacity, Instant::now())),
        }
    }

    /// The configured rate.
    #[must_use]
    pub fn rate(&self) -> f64 {
        self.rate
    }

    fn refill(&self, st: &mut (f64, Instant), now: Instant) {
        let dt = now.saturating_duration_since(st.1).as_secs_f64();
        st.0 = (st.0 + dt * self.rate).min(self.capacity);
        st.1 = now;
    }

    /// Consumes `n` tokens (possibly going negative); returns the tokens left.
    pub fn consume(&self, n: f64) -> f64 {
        let mut st = self.state.lock();
        self.refill(&mut st, Instant::now());
        st.0 -= n;
        st.0
    }

    /// Tokens available now.
    #[must_use]
    pub fn tokens(&self) -> f64 {
        let mut st = self.state.lock();
        self.refill(&mut st, Instant::now());
        st.0
    }

    /// How long until at least `n` tokens are available (zero if they are now).
    #[must_use]
    pub fn wait_time(&self, n: f64) -> Duration {
        let tokens = self.tokens();
        if tokens >= n || self.rate <= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64((n - tokens) / self.rate)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meter_counts_from_many_threads() {
        let m = std::sync::Arc::new(Meter::default());
        let hs: Vec<_> = (0..4)
            .map(|_| {
                let m = std::sync::Arc::clone(&m);
                std::thread::spawn(move || (0..10_000).for_each(|_| m.record(1, 10)))
            })
            .collect();
        hs.into_iter().for_each(|h| h.join().unwrap());
        assert_eq!(m.total(), 40_000);
        assert_eq!(m.total_bytes(), 400_000);
    }

    #[test]
    fn token_bucket_goes_negative_and_reports_wait() {
        let b = TokenBucket::new(100.0);
        assert!(
            b.consume(150.0) < 0.0,
            "an accepted request is never refused"
        );
        let w = b.wait_time(1.0);
        assert!(
            w > Duration::from_millis(400) && w <= Duration::from_millis(520),
            "{w:?}"
        );
    }
}

/// A message-rate and a byte-rate limit sharing one decision: how long the caller must pause.
#[derive(Debug)]
pub struct RateLimiter {
    /// Messages per second, if limited.
    msgs: Option<TokenBucket>,
    /// Bytes per second, if limited.
    bytes: Option<TokenBucket>,
}

/// Burst allowed by a [`RateLimiter`], as a fraction of one second of its rate: small, so that
/// the achieved rate over any few seconds stays within a few percent of the limit.
const BURST_FRACTION: f64 = 0.05;

impl RateLimiter {
    /// A limiter for `msgs_per_sec` and `bytes_per_sec` (0 = that dimension unlimited); `None`
    /// when both are unlimited.
    #[must_use]
    pub fn new(msgs_per_sec: f64, bytes_per_sec: f64) -> Option<Self> {
        let bucket = |r: f64| {
            (r > 0.0).then(|| TokenBucket::with_capacity(r, (r * BURST_FRACTION).max(1.0)))
        };
        let l = RateLimiter {
            msgs: bucket(msgs_per_sec),
            bytes: bucket(bytes_per_sec),
        };
        (l.msgs.is_some() || l.bytes.is_some()).then_some(l)
    }

    /// The configured (messages/s, bytes/s), 0 = unlimited.
    #[must_use]
    pub fn rates(&self) -> (f64, f64) {
        (
            self.msgs.as_ref().map_or(0.0, TokenBucket::rate),
            self.bytes.as_ref().map_or(0.0, TokenBucket::rate),
        )
    }

    /// Charges what was just accepted; returns how long to pause before accepting more.
    pub fn consume(&self, msgs: u64, bytes: u64) -> Duration {
        #[allow(clippy::cast_precision_loss)]
        let (m, b) = (msgs as f64, bytes as f64);
        let wait = |bucket: &Option<TokenBucket>, n: f64| {
            bucket.as_ref().map_or(Duration::ZERO, |t| {
                let left = t.consume(n);
                if left < 0.0 {
                    Duration::from_secs_f64(-left / t.rate())
                } else {
                    Duration::ZERO
                }
            })
        };
        wait(&self.msgs, m).max(wait(&self.bytes, b))
    }

    /// How many messages (and bytes) may go now without pausing; `None` = unlimited.
    #[must_use]
    pub fn available(&self) -> (Option<f64>, Option<f64>) {
        (
            self.msgs.as_ref().map(TokenBucket::tokens),
            self.bytes.as_ref().map(TokenBucket::tokens),
        )
    }

    /// How long until at least one message and one byte may go.
    #[must_use]
    pub fn wait_time(&self) -> Duration {
        let w = |b: &Option<TokenBucket>| b.as_ref().map_or(Duration::ZERO, |t| t.wait_time(1.0));
        w(&self.msgs).max(w(&self.bytes))
    }
}

#[cfg(test)]
mod limiter_tests {
    use super::*;

    #[test]
    fn pacing_by_consume_waits_converges_to_the_rate() {
        let l = RateLimiter::new(2000.0, 0.0).unwrap();
        let start = Instant::now();
        let mut sent = 0u64;
        while start.elapsed() < Duration::from_millis(500) {
            sent += 10;
            let w = l.consume(10, 1000);
            if !w.is_zero() {
                std::thread::sleep(w);
            }
        }
        #[allow(clippy::cast_precision_loss)]
        let rate = sent as f64 / start.elapsed().as_secs_f64();
        assert!(
            (1800.0..2300.0).contains(&rate),
            "achieved {rate} msg/s for a 2000 msg/s limit"
        );
        assert!(RateLimiter::new(0.0, 0.0).is_none());
    }
}
