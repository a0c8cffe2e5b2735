//! The dispatcher task of a persistent subscription: runs [`Subscription`] dispatch passes
//! until the subscription closes, with at most one cursor read in flight, of min(permits, read
//! batch, `dispatcherMaxReadSizeBytes`) entries, parked at the end of the topic until a publish.
//! The read batch starts at `dispatcherMaxReadBatchSize`, drops to `dispatcherMinReadBatchSize`
//! after a read error and doubles after each good read; dispatch rate limiters are waited on
//! before a pass and charged after it. [`Subscription::start`] creates a subscription with its
//! task.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use pulsar_rs_ledger::Cursor;

use super::pass::{Plan, Stall};
use super::{compacted_read, Subscription};
use crate::config::BrokerConfig;
use crate::error::BrokerError;

impl Subscription {
    /// Creates the subscription and starts its dispatcher task on the current Tokio runtime.
    #[must_use]
    pub fn start(
        name: &str,
        topic: &str,
        partition: i32,
        cursor: Arc<Cursor>,
        durable: bool,
        config: Arc<BrokerConfig>,
    ) -> Arc<Self> {
        let sub = Arc::new(Self::new(name, topic, partition, cursor, durable, config));
        let weak = Arc::downgrade(&sub);
        // Woken by the journal flusher as entries become readable: one wake-up per completion
        // pass (see `wake_batch`).
        tokio::spawn(pulsar_rs_ledger::wake_batch::Batched::new(dispatch_loop(
            weak,
        )));
        sub
    }
}

/// Reads from the cursor on the blocking pool (a cache miss: the entries come from disk).
async fn read_from_disk(
    sub: Arc<Subscription>,
    n: usize,
    max_bytes: u64,
) -> Result<Vec<pulsar_rs_ledger::Entry>, BrokerError> {
    tokio::task::spawn_blocking(move || {
        sub.cursor
            .read_entries_bounded(n, max_bytes, sub.max_read_position())
            .map_err(BrokerError::from)
    })
    .await
    .unwrap_or_else(|e| Err(join_error(&e)))
}

/// A blocking read that panicked or was cancelled at shutdown.
fn join_error(e: &tokio::task::JoinError) -> BrokerError {
    BrokerError::Ledger(pulsar_rs_ledger::LedgerError::io(
        "reading entries for a dispatcher",
        std::io::Error::other(e.to_string()),
    ))
}

/// Waits for a wake-up or the deadline.
async fn wait(sub: &Subscription, deadline: Option<Instant>) {
    match deadline {
        Some(d) => {
            tokio::select! {
                () = tokio::time::sleep_until(d.into()) => {}
                () = sub.wake.notified() => {}
            }
        }
        None => sub.wake.notified().await,
    }
}

/// The dispatcher task of one subscription; ends when it is closed or dropped.
async fn dispatch_loop(weak: Weak<Subscription>) {
    let mut backoff = Duration::from_millis(100);
    let mut stall: Option<Stall> = None;
    let mut read_batch: usize = 0;
    // Messages per dispatched entry (batches), smoothed; sizes reads under a dispatch rate limit.
    let mut avg_per_entry: Option<f64> = None;
    loop {
        let Some(sub) = weak.upgrade() else { return };
        if sub.is_closed() {
            return;
        }
        let (max_batch, min_batch) = (
            sub.config.dispatcher_max_read_batch_size as usize,
            sub.config.dispatcher_min_read_batch_size as usize,
        );
        if read_batch == 0 {
            read_batch = max_batch;
        }
        sub.release_due_delayed();
        // Dispatch rate limits: wait for tokens, then read no more messages than they allow.
        let limiters = sub.dispatch_limiters();
        let wait_time = limiters
            .iter()
            .map(|l| l.wait_time())
            .max()
            .unwrap_or_default();
        if !wait_time.is_zero() {
            sub.note_dispatch_throttled();
            wait(&sub, Some(pulsar_rs_clock::monotonic() + wait_time)).await;
            continue;
        }
        let mut cap = read_batch;
        for l in &limiters {
            if let (Some(m), _) = l.available() {
                // Tokens count messages, reads count entries: divide by the messages per entry
                // seen so far. Until that is known, read one entry, so a batch-heavy topic
                // cannot overshoot the limit by a whole read batch of batches.
                let allowed = avg_per_entry.map_or(1.0, |avg| (m / avg).floor());
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                let allowed = allowed.max(1.0) as usize;
                cap = cap.min(allowed);
            }
        }
        let result = match sub.plan(cap, stall) {
            Plan::Wait(deadline) => {
                wait(&sub, deadline).await;
                continue;
            }
            Plan::Replay(n) => {
                // Relaxed: a change counter; see `Subscription::changes`.
                let changes = sub.changes.load(Ordering::Relaxed);
                // Replayed entries may need the disk: read on the blocking pool.
                let s = Arc::clone(&sub);
                let read = tokio::task::spawn_blocking(move || s.read_replay(n))
                    .await
                    .unwrap_or_else(|e| Err(join_error(&e)));
                read.map(|(entries, taken)| {
                    let outcome = sub.dispatch(entries, true);
                    stall =
                        (taken == 0 || (outcome.entries == 0 && outcome.requeued > 0)).then(|| {
                            Stall {
                                changes,
                                at: pulsar_rs_clock::monotonic(),
                            }
                        });
                    outcome
                })
            }
            // readCompacted consumers before the horizon read the compacted view.
            Plan::Read(n, deadline) => match compacted_read::read(&sub, n).await {
                Some(r) => r.map(|entries| sub.dispatch(entries, false)),
                None => {
                    let cursor = Arc::clone(&sub.cursor);
                    let max_bytes = sub.config.dispatcher_max_read_size_bytes;
                    // The transaction buffer's max read position; a commit or abort that
                    // moves it pokes the subscription.
                    let bound = || sub.max_read_position();
                    // Waiting and cache hits run here; cancelling them (wake-up, deadline)
                    // loses nothing, as nothing is taken across an await.
                    let read = async {
                        match deadline {
                            Some(d) => tokio::select! {
                                r = cursor.wait_and_read_cached_until(n, max_bytes, &bound) => Some(r),
                                () = tokio::time::sleep_until(d.into()) => None,
                            },
                            None => Some(
                                cursor
                                    .wait_and_read_cached_until(n, max_bytes, &bound)
                                    .await,
                            ),
                        }
                    };
                    let outcome = tokio::select! {
                        r = read => r,
                        () = sub.wake.notified() => None,
                    };
                    match outcome {
                        None => continue,
                        Some(Ok(Some(entries))) => Ok(sub.dispatch(entries, false)),
                        // A cache miss: the pread runs on the blocking pool. It is awaited
                        // outside any select, so it is never abandoned after taking entries,
                        // and this is still the only read in flight: deliveries keep their order.
                        Some(Ok(None)) => read_from_disk(Arc::clone(&sub), n, max_bytes)
                            .await
                            .map(|entries| sub.dispatch(entries, false)),
                        Some(Err(e)) => Err(BrokerError::from(e)),
                    }
                }
            },
        };
        // A pass can complete without ever waiting (entries cached, consumers with permits):
        // yield so one busy subscription cannot starve connections and other dispatchers.
        tokio::task::yield_now().await;
        match result {
            Ok(outcome) => {
                backoff = Duration::from_millis(100);
                read_batch = (read_batch * 2).min(max_batch);
                for l in &limiters {
                    l.consume(outcome.messages, outcome.bytes);
                }
                if outcome.entries > 0 {
                    #[allow(clippy::cast_precision_loss)]
                    let sample = outcome.messages as f64 / outcome.entries as f64;
                    avg_per_entry = Some(avg_per_entry.map_or(sample, |a| 0.7 * a + 0.3 * sample));
                }
            }
            Err(e) => {
                if sub.is_closed() {
                    return;
                }
                tracing::warn!(topic = %sub.topic, subscription = %sub.name, error = %e, "dispatcher read failed; backing off");
                read_batch = min_batch;
                drop(sub);
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(60));
            }
        }
    }
}
