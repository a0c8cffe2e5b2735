//! A memory semaphore that callers wait on in turn (Pulsar's `AsyncSemaphoreImpl`, PIP-442):
//! bytes are taken before the memory is used and given back when the [`MemoryPermit`] is
//! dropped; a caller that cannot have its bytes waits in line (first come, first served, a
//! large request at the head holding back smaller ones behind it, as Pulsar's queue), at most
//! `queue` callers wait at once (more are refused at once) and each waits at most `timeout`.
//! A limit of 0 takes nothing and never waits. A caller that goes away (its connection closed)
//! leaves the line.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Why bytes were not given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// `queue` callers were already waiting.
    QueueFull {
        /// The setting's name (without its `PermitsAcquireQueueSize` suffix).
        key: &'static str,
        /// How many may wait.
        queue: usize,
    },
    /// The bytes did not come within the timeout.
    Timeout {
        /// The setting's name.
        key: &'static str,
        /// The timeout.
        millis: u64,
    },
    /// More bytes than the whole limit.
    TooLarge {
        /// The setting's name.
        key: &'static str,
        /// Bytes asked.
        asked: u64,
        /// The limit in bytes.
        limit: u64,
    },
}

impl Refusal {
    /// What the client is told.
    #[must_use]
    pub fn reason(&self) -> String {
        match self {
            Refusal::QueueFull { key, queue } => {
                format!("{queue} requests already wait for memory ({key}PermitsAcquireQueueSize)")
            }
            Refusal::Timeout { key, millis } => {
                format!("no memory within {millis} ms ({key}PermitsAcquireTimeoutMillis)")
            }
            Refusal::TooLarge { key, asked, limit } => {
                format!("{asked} bytes asked, more than the {limit} bytes of {key}MB")
            }
        }
    }
}

/// Bytes taken from a [`MemorySemaphore`]; given back when dropped.
#[derive(Debug, Default)]
pub struct MemoryPermit {
    /// The bytes held (none when the semaphore has no limit or nothing was asked).
    held: Option<OwnedSemaphorePermit>,
}

impl MemoryPermit {
    /// Bytes held.
    #[must_use]
    pub fn bytes(&self) -> u64 {
        self.held.as_ref().map_or(0, |p| p.num_permits() as u64)
    }

    fn add(&mut self, more: MemoryPermit) {
        match (&mut self.held, more.held) {
            (Some(held), Some(more)) => held.merge(more),
            (held @ None, more) => *held = more,
            (Some(_), None) => {}
        }
    }
}

/// Takes a waiting caller out of the count when its wait ends (bytes given, refused or
/// abandoned).
struct Waiting<'a>(&'a AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        // Relaxed: a gauge and a bound checked by fetch_add below; no data is published.
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// One memory limit (heap or direct in Pulsar's terms).
pub struct MemorySemaphore {
    /// The setting's name, for refusals (`maxTopicListInFlightHeapMemSize`); immutable.
    key: &'static str,
    /// The bytes; tokio's semaphore hands them out in request order. Shared with the permits.
    bytes: Arc<Semaphore>,
    /// The limit in bytes, 0 = none; immutable.
    limit: u64,
    /// Callers that may wait at once; immutable.
    queue: usize,
    /// How long a caller waits at most; immutable.
    timeout: Duration,
    /// Callers waiting now; each caller counts itself in and out.
    waiting: AtomicUsize,
    /// Waits that timed out (metric); counted by the callers.
    timeouts: AtomicU64,
    /// Waits that ended with the bytes (metric); counted by the callers.
    waits: AtomicU64,
    /// Their total time in microseconds (metric); counted by the callers.
    waited_micros: AtomicU64,
}

impl MemorySemaphore {
    /// A limit of `limit_mb` MB (0 = none; at most 4 GiB - 1 bytes are counted), `queue`
    /// waiting callers and `timeout_ms` per wait.
    #[must_use]
    pub fn new(key: &'static str, limit_mb: u32, timeout_ms: u64, queue: u32) -> Self {
        // tokio takes at most u32::MAX permits at a time: the limit is held under it.
        let limit = (u64::from(limit_mb) << 20).min(u64::from(u32::MAX));
        MemorySemaphore {
            key,
            bytes: Arc::new(Semaphore::new(usize::try_from(limit).unwrap_or(usize::MAX))),
            limit,
            queue: queue as usize,
            timeout: Duration::from_millis(timeout_ms),
            waiting: AtomicUsize::new(0),
            timeouts: AtomicU64::new(0),
            waits: AtomicU64::new(0),
            waited_micros: AtomicU64::new(0),
        }
    }

    /// Takes `n` bytes, waiting in line for them.
    ///
    /// # Errors
    /// [`Refusal`]: the line is full, the wait timed out, or `n` is over the whole limit.
    pub async fn acquire(&self, n: u64) -> Result<MemoryPermit, Refusal> {
        if self.limit == 0 || n == 0 {
            return Ok(MemoryPermit::default());
        }
        if n > self.limit {
            return Err(Refusal::TooLarge {
                key: self.key,
                asked: n,
                limit: self.limit,
            });
        }
        let n32 = u32::try_from(n).unwrap_or(u32::MAX);
        if let Ok(p) = Arc::clone(&self.bytes).try_acquire_many_owned(n32) {
            return Ok(MemoryPermit { held: Some(p) });
        }
        // Relaxed: the count is its own bound; nothing else is published through it.
        if self.waiting.fetch_add(1, Ordering::Relaxed) >= self.queue {
            self.waiting.fetch_sub(1, Ordering::Relaxed);
            return Err(Refusal::QueueFull {
                key: self.key,
                queue: self.queue,
            });
        }
        let _waiting = Waiting(&self.waiting);
        let started = pulsar_rs_clock::monotonic();
        let got = tokio::time::timeout(
            self.timeout,
            Arc::clone(&self.bytes).acquire_many_owned(n32),
        )
        .await;
        match got {
            Ok(Ok(p)) => {
                let micros = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
                // Relaxed: metric counters.
                self.waits.fetch_add(1, Ordering::Relaxed);
                self.waited_micros.fetch_add(micros, Ordering::Relaxed);
                Ok(MemoryPermit { held: Some(p) })
            }
            // The semaphore is never closed: only a timeout ends a wait without the bytes.
            Ok(Err(_)) | Err(_) => {
                // Relaxed: metric counter.
                self.timeouts.fetch_add(1, Ordering::Relaxed);
                Err(Refusal::Timeout {
                    key: self.key,
                    millis: u64::try_from(self.timeout.as_millis()).unwrap_or(u64::MAX),
                })
            }
        }
    }

    /// Makes `permit` hold `n` bytes: gives back what is over at once, or waits in line for
    /// what is missing (Pulsar's `update`, once a list's real size is known).
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire) for the missing bytes; `permit` is unchanged then.
    pub async fn resize(&self, permit: &mut MemoryPermit, n: u64) -> Result<(), Refusal> {
        if self.limit == 0 {
            return Ok(());
        }
        let held = permit.bytes();
        if n > held {
            if n > self.limit {
                return Err(Refusal::TooLarge {
                    key: self.key,
                    asked: n,
                    limit: self.limit,
                });
            }
            let more = self.acquire(n - held).await?;
            permit.add(more);
        } else if n < held {
            let over = usize::try_from(held - n).unwrap_or(usize::MAX);
            if let Some(p) = permit.held.as_mut() {
                drop(p.split(over));
            }
        }
        Ok(())
    }

    /// The limit in bytes (0 = none).
    #[must_use]
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Bytes held now.
    #[must_use]
    pub fn used(&self) -> u64 {
        if self.limit == 0 {
            return 0;
        }
        self.limit
            .saturating_sub(self.bytes.available_permits() as u64)
    }

    /// Callers waiting now.
    #[must_use]
    pub fn queued(&self) -> usize {
        // Relaxed: a gauge.
        self.waiting.load(Ordering::Relaxed)
    }

    /// Callers that may wait at once.
    #[must_use]
    pub fn queue_max(&self) -> usize {
        self.queue
    }

    /// Waits that timed out.
    #[must_use]
    pub fn timeouts(&self) -> u64 {
        // Relaxed: a metric read.
        self.timeouts.load(Ordering::Relaxed)
    }

    /// Waits that ended with the bytes, and their total time in milliseconds.
    #[must_use]
    #[allow(clippy::cast_precision_loss)]
    pub fn waits(&self) -> (u64, f64) {
        // Relaxed: metric reads (the two may be a wait apart).
        let n = self.waits.load(Ordering::Relaxed);
        let micros = self.waited_micros.load(Ordering::Relaxed);
        (n, micros as f64 / 1000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sem(limit_mb: u32, timeout_ms: u64, queue: u32) -> MemorySemaphore {
        MemorySemaphore::new(
            "maxTopicListInFlightHeapMemSize",
            limit_mb,
            timeout_ms,
            queue,
        )
    }

    const MB: u64 = 1 << 20;

    #[tokio::test]
    async fn bytes_are_given_back_when_the_permit_is_dropped() {
        let s = sem(1, 100, 10);
        let p = s.acquire(MB / 2).await.unwrap();
        assert_eq!(s.used(), MB / 2);
        drop(p);
        assert_eq!(s.used(), 0);
    }

    #[tokio::test]
    async fn a_wait_times_out_and_is_counted() {
        let s = sem(1, 50, 10);
        let _all = s.acquire(MB).await.unwrap();
        let r = s.acquire(1).await.unwrap_err();
        assert!(matches!(r, Refusal::Timeout { millis: 50, .. }), "{r:?}");
        assert_eq!(s.timeouts(), 1);
        assert_eq!(s.queued(), 0);
    }

    #[tokio::test]
    async fn a_full_line_refuses_at_once() {
        let s = Arc::new(sem(1, 10_000, 1));
        let all = s.acquire(MB).await.unwrap();
        let s2 = Arc::clone(&s);
        let waiter = tokio::spawn(async move { s2.acquire(10).await.map(|p| p.bytes()) });
        while s.queued() == 0 {
            tokio::task::yield_now().await;
        }
        let r = s.acquire(10).await.unwrap_err();
        assert_eq!(
            r,
            Refusal::QueueFull {
                key: "maxTopicListInFlightHeapMemSize",
                queue: 1
            }
        );
        drop(all);
        assert_eq!(waiter.await.unwrap(), Ok(10));
        assert_eq!(s.waits().0, 1);
    }

    #[tokio::test]
    async fn waiters_are_served_in_turn_a_large_one_first() {
        let s = Arc::new(sem(1, 10_000, 10));
        let held = s.acquire(MB).await.unwrap();
        let big = {
            let s = Arc::clone(&s);
            tokio::spawn(async move { s.acquire(MB).await.map(|p| p.bytes()) })
        };
        while s.queued() < 1 {
            tokio::task::yield_now().await;
        }
        let small = {
            let s = Arc::clone(&s);
            tokio::spawn(async move {
                let p = s.acquire(1).await;
                p.map(|p| p.bytes())
            })
        };
        while s.queued() < 2 {
            tokio::task::yield_now().await;
        }
        drop(held);
        assert_eq!(big.await.unwrap(), Ok(MB));
        assert_eq!(small.await.unwrap(), Ok(1));
    }

    #[tokio::test]
    async fn over_the_whole_limit_is_refused_and_no_limit_takes_nothing() {
        let s = sem(1, 100, 10);
        assert!(matches!(
            s.acquire(MB + 1).await,
            Err(Refusal::TooLarge { asked, limit, .. }) if asked == MB + 1 && limit == MB
        ));
        let none = sem(0, 100, 10);
        let p = none.acquire(u64::MAX).await.unwrap();
        assert_eq!((p.bytes(), none.used()), (0, 0));
    }

    #[tokio::test]
    async fn a_permit_grows_and_shrinks_to_a_lists_real_size() {
        let s = sem(1, 50, 10);
        let mut p = s.acquire(100).await.unwrap();
        s.resize(&mut p, 1000).await.unwrap();
        assert_eq!((p.bytes(), s.used()), (1000, 1000));
        s.resize(&mut p, 10).await.unwrap();
        assert_eq!((p.bytes(), s.used()), (10, 10));
        let other = s.acquire(MB - 10).await.unwrap();
        assert!(s.resize(&mut p, 20).await.is_err());
        assert_eq!(p.bytes(), 10);
        drop((p, other));
        assert_eq!(s.used(), 0);
        let mut empty = MemoryPermit::default();
        s.resize(&mut empty, 5).await.unwrap();
        assert_eq!(s.used(), 5);
    }
}
