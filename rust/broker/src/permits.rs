//! Lock-free permit counters: the FLOW credit of a consumer and the total of a subscription.
//!
//! Permits count messages. They may go negative when a batch entry carries more messages than
//! the consumer had left (Pulsar does the same), so the counter is signed.

use std::sync::atomic::{AtomicI64, Ordering};

/// A signed permit counter shared between the connection (adds on FLOW) and the dispatcher
/// (takes when sending).
#[derive(Debug, Default)]
pub struct PermitCounter {
    /// Available permits. Relaxed ordering throughout: the value is self-contained, and the
    /// dispatcher is woken through a `Notify`, which provides the happens-before edge.
    value: AtomicI64,
}

impl PermitCounter {
    /// A counter starting at zero.
    #[must_use]
    pub const fn new() -> Self {
        PermitCounter {
            value: AtomicI64::new(0),
        }
    }

    /// Adds `n` permits; returns the new value.
    pub fn add(&self, n: i64) -> i64 {
        self.value.fetch_add(n, Ordering::Relaxed) + n
    }

    /// Charges `n` permits unconditionally (may go negative); returns the new value.
    pub fn charge(&self, n: i64) -> i64 {
        self.value.fetch_sub(n, Ordering::Relaxed) - n
    }

    /// Takes up to `max` permits if any are available; returns how many were taken.
    pub fn try_take(&self, max: i64) -> i64 {
        let mut cur = self.value.load(Ordering::Relaxed);
        loop {
            if cur <= 0 || max <= 0 {
                return 0;
            }
            let take = cur.min(max);
            match self.value.compare_exchange_weak(
                cur,
                cur - take,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return take,
                Err(now) => cur = now,
            }
        }
    }

    /// Current value.
    #[must_use]
    pub fn get(&self) -> i64 {
        self.value.load(Ordering::Relaxed)
    }

    /// Sets the value (used when a consumer's permits are discarded).
    pub fn set(&self, v: i64) {
        self.value.store(v, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn concurrent_adds_and_takes_balance() {
        let c = Arc::new(PermitCounter::new());
        let mut handles = Vec::new();
        for _ in 0..4 {
            let c = Arc::clone(&c);
            handles.push(std::thread::spawn(move || {
                for _ in 0..100_000 {
                    c.add(3);
                }
            }));
        }
        let taken = Arc::new(AtomicI64::new(0));
        for _ in 0..4 {
            let (c, t) = (Arc::clone(&c), Arc::clone(&taken));
            handles.push(std::thread::spawn(move || {
                for _ in 0..200_000 {
                    t.fetch_add(c.try_take(2), Ordering::Relaxed);
                }
            }));
        }
        for h in handles {
            h.join().unwrap();
        }
        assert!(c.get() >= 0, "try_take never overdraws");
        assert_eq!(c.get() + taken.load(Ordering::Relaxed), 1_200_000);
        assert_eq!(c.charge(c.get() + 5), -5, "charge may go negative");
    }
}
