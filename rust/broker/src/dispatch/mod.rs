//! The dispatcher (seed 000): one task per subscription.
//!
//! Each pass decides a [`Plan`] under the subscription's lock and carries it out without it:
//! * wait, when no consumer can take messages, the subscription is blocked on unacked messages
//!   (`maxUnackedMessagesPerSubscription`, resumed at half), a Failover change is in its delay,
//!   or the Key_Shared look-ahead is full;
//! * serve the replay set first (redeliveries, entries nobody could take, Key_Shared entries
//!   waiting for their key, delayed entries that became due) — unless nothing in it could be
//!   delivered last time and nothing changed since (for Key_Shared, re-tried at most every
//!   `keySharedUnblockingIntervalMs`);
//! * otherwise read from the cursor: at most one read in flight, of min(permits, read batch,
//!   `dispatcherMaxReadSizeBytes`) entries, parked at the end of the topic until a publish; the
//!   read batch starts at `dispatcherMaxReadBatchSize`, drops to `dispatcherMinReadBatchSize`
//!   after a read error and doubles after each good read.
//!
//! Entries are then handed out ([`Subscription::dispatch`]): to the active consumer for
//! Exclusive/Failover, round-robin by priority level for Shared ([`shared`]), to the owner of the
//! key's slot for Key_Shared ([`key_shared`]). Permits are charged in messages (a batch entry
//! holds several). Shared/Key_Shared entries with a future `deliver_at_time` go to the
//! [`delayed`] tracker. What cannot be delivered now goes to the replay set.

pub mod delayed;
pub mod failover;
pub mod key_shared;
pub mod shared;

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use pulsar_rs_ledger::{Entry, Position};

use crate::consumer::SubType;
use crate::subscription::{entry_info, Subscription};
use crate::BrokerError;

use self::delayed::now_ms;
use self::key_shared::slot_of;

/// What the dispatcher does next.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Plan {
    /// Nothing to do until woken (or until the deadline).
    Wait(Option<Instant>),
    /// Deliver up to this many entries from the replay set.
    Replay(usize),
    /// Read up to this many entries from the cursor; stop waiting at the deadline.
    Read(usize, Option<Instant>),
}

/// A replay pass in which nothing could be delivered.
#[derive(Clone, Copy)]
pub(crate) struct Stall {
    /// [`Subscription::changes`] when it happened.
    changes: u64,
    /// When it happened.
    at: Instant,
}

/// What one dispatch pass did.
#[derive(Default, Debug, Clone, Copy)]
pub struct Outcome {
    /// Messages sent.
    pub messages: u64,
    /// Bytes sent.
    pub bytes: u64,
    /// Entries sent.
    pub entries: usize,
    /// Entries put (back) into the replay set.
    pub requeued: usize,
}

impl Subscription {
    fn delay_slack_ms(&self) -> i64 {
        if self.config.delayed_delivery_deliver_at_time_strict {
            0
        } else {
            i64::try_from(self.config.delayed_delivery_tick_time_millis).unwrap_or(0)
        }
    }

    /// Moves delayed entries that are due into the replay set.
    fn release_due_delayed(&self) {
        let due = {
            let mut d = self.delayed.lock();
            if d.is_empty() {
                return;
            }
            d.take_due(now_ms() + self.delay_slack_ms())
        };
        if due.is_empty() {
            return;
        }
        let mut replay = self.replay.lock();
        for p in due {
            replay.insert(p, None);
        }
        drop(replay);
        // Relaxed: a change counter read by this same task.
        self.changes.fetch_add(1, Ordering::Relaxed);
    }

    /// When the next delayed entry is due.
    fn delayed_deadline(&self) -> Option<Instant> {
        let d = self.delayed.lock();
        d.next_due_in(now_ms(), self.delay_slack_ms())
            .map(|wait| Instant::now() + wait)
    }

    /// Decides the next step; `cap` bounds the entries (read batch, rate limits).
    pub(crate) fn plan(&self, cap: usize, stall: Option<Stall>) -> Plan {
        let now = Instant::now();
        let mut st = self.state.lock();
        let Some(t) = st.sub_type else {
            return Plan::Wait(None);
        };
        if st.consumers.is_empty() {
            return Plan::Wait(None);
        }
        let cap = i64::try_from(cap.max(1)).unwrap_or(i64::MAX);
        if !t.is_multi() {
            if let Some(until) = st.hold_until {
                if now < until {
                    return Plan::Wait(Some(until));
                }
                // The Failover delay is over: the new active consumer gets all unacknowledged.
                st.hold_until = None;
                self.cursor.rewind();
            }
            let permits = st
                .active
                .and_then(|a| st.by_handle(a))
                .filter(|c| !c.is_closed() && c.is_writable())
                .map_or(0, |c| c.permits.get());
            return if permits > 0 {
                Plan::Read(usize::try_from(permits.min(cap)).unwrap_or(1), None)
            } else {
                Plan::Wait(None)
            };
        }
        let mut room = i64::MAX;
        let sub_limit = i64::from(self.config.max_unacked_messages_per_subscription);
        if self.durable && sub_limit > 0 {
            let unacked: i64 = st.consumers.iter().map(|c| c.unacked()).sum();
            // Relaxed: only this task writes the flag; readers use it as a gauge.
            let blocked = self.blocked_on_unacked.load(Ordering::Relaxed);
            if blocked && unacked > sub_limit / 2 {
                return Plan::Wait(None);
            }
            if unacked >= sub_limit {
                self.blocked_on_unacked.store(true, Ordering::Relaxed);
                return Plan::Wait(None);
            }
            if blocked {
                self.blocked_on_unacked.store(false, Ordering::Relaxed);
            }
            room = sub_limit - unacked;
        }
        let permits: i64 = st
            .consumers
            .iter()
            .filter(|c| c.can_take())
            .map(|c| c.permits.get())
            .sum();
        if permits <= 0 {
            return Plan::Wait(None);
        }
        let n = usize::try_from(permits.min(room).min(cap)).unwrap_or(1);
        let key_shared = t == SubType::KeyShared;
        let consumers = st.consumers.len();
        drop(st);
        let replay_len = self.replay.lock().len();
        let mut deadline = self.delayed_deadline();
        if replay_len > 0 {
            match stall {
                None => return Plan::Replay(n),
                // Relaxed: a change counter; see `Subscription::changes`.
                Some(s) if s.changes != self.changes.load(Ordering::Relaxed) => {
                    let interval = if key_shared {
                        Duration::from_millis(self.config.key_shared_unblocking_interval_ms)
                    } else {
                        Duration::ZERO
                    };
                    let retry = s.at + interval;
                    if now >= retry {
                        return Plan::Replay(n);
                    }
                    deadline = Some(deadline.map_or(retry, |d| d.min(retry)));
                }
                Some(_) => {}
            }
        }
        let look_ahead = if key_shared {
            let per_consumer = self
                .config
                .key_shared_look_ahead_msg_in_replay_threshold_per_consumer
                as usize;
            let per_sub = self
                .config
                .key_shared_look_ahead_msg_in_replay_threshold_per_subscription
                as usize;
            (per_consumer.saturating_mul(consumers)).min(per_sub)
        } else {
            usize::MAX
        };
        if replay_len < look_ahead {
            Plan::Read(n, deadline)
        } else {
            Plan::Wait(deadline)
        }
    }

    /// Takes up to `n` replay positions that can be delivered now and reads their entries
    /// (those acknowledged meanwhile are dropped). Returns the entries and how many positions
    /// left the replay set.
    fn read_replay(&self, n: usize) -> Result<(Vec<Entry>, usize), BrokerError> {
        let positions = {
            let st = self.state.lock();
            let mut replay = self.replay.lock();
            match st.key_shared.as_ref() {
                Some(ks) if st.sub_type == Some(SubType::KeyShared) => {
                    replay.take_ready(n, |slot| {
                        let Some(owner) = ks.selector.owner(slot) else {
                            return false;
                        };
                        st.by_handle(owner).is_some_and(|c| c.can_take())
                            && (ks.allow_out_of_order
                                || ks.draining.holder(slot).is_none_or(|h| h == owner))
                    })
                }
                _ => replay.take_ready(n, |_| true),
            }
        };
        let taken = positions.len();
        let mut out = Vec::with_capacity(taken);
        let ml = self.cursor.ledger();
        for (p, _) in positions {
            if self.cursor.is_acked(p) {
                continue;
            }
            if let Some(e) = ml.read_entries(p, 1, u64::MAX, p)?.into_iter().next() {
                if e.position == p {
                    out.push(e);
                }
            }
        }
        Ok((out, taken))
    }

    /// Hands entries to consumers; what cannot be delivered now goes to the replay set
    /// (Shared/Key_Shared) or is read again (Exclusive/Failover).
    pub(crate) fn dispatch(&self, entries: Vec<Entry>, replayed: bool) -> Outcome {
        let mut out = Outcome::default();
        if entries.is_empty() {
            return out;
        }
        let limit = self.unacked_limit();
        let rr_chunk = self.config.dispatcher_max_round_robin_batch_size;
        let mut st = self.state.lock();
        let Some(t) = st.sub_type else {
            return out;
        };
        if !t.is_multi() {
            // During a Failover delay nothing goes out: the rewind at its end reads it again.
            if st.hold_until.is_some() {
                return out;
            }
            let target = st.active.and_then(|a| st.by_handle(a)).cloned();
            drop(st);
            for entry in entries {
                if self.cursor.is_acked(entry.position) {
                    continue;
                }
                let info = entry_info(&entry.data);
                let pos = entry.position;
                let ack_set = self.batch_ack_set(pos);
                let len = entry.data.len() as u64;
                let sent = target.as_ref().is_some_and(|c| {
                    c.deliver(
                        pos,
                        info.messages,
                        self.partition,
                        0,
                        ack_set,
                        entry.data,
                        limit,
                    )
                });
                if !sent {
                    // Read it again when a consumer can take it.
                    self.cursor.seek_read_position(pos);
                    break;
                }
                out.record(info.messages, len);
            }
            self.out.record(out.messages, out.bytes);
            return out;
        }
        let key_shared = t == SubType::KeyShared;
        let delayed_on = self.config.delayed_delivery_enabled;
        let cutoff = now_ms() + self.delay_slack_ms();
        let mut replay = self.replay.lock();
        let counts = self.redeliveries.lock();
        let mut blocked: HashSet<u16> = HashSet::new();
        for entry in entries {
            let pos = entry.position;
            if self.cursor.is_acked(pos) {
                continue;
            }
            let info = entry_info(&entry.data);
            if delayed_on {
                if let Some(at) = info.deliver_at {
                    if self.delayed.lock().add(pos, at, cutoff) {
                        continue;
                    }
                }
            }
            let (target, slot) = if key_shared {
                let slot = slot_of(info.key.as_deref());
                let target = st.key_shared.as_ref().and_then(|ks| {
                    let owner = ks.selector.owner(slot)?;
                    if !ks.allow_out_of_order {
                        // Order: a key with older entries waiting, or still held by another
                        // consumer (draining), waits too.
                        let waiting = if replayed {
                            blocked.contains(&slot)
                        } else {
                            replay.has_slot(slot)
                        };
                        if waiting || ks.draining.holder(slot).is_some_and(|h| h != owner) {
                            return None;
                        }
                    }
                    st.by_handle(owner).filter(|c| c.can_take()).cloned()
                });
                (target, Some(slot))
            } else {
                let crate::subscription::State { rr, consumers, .. } = &mut *st;
                (rr.pick(consumers, rr_chunk), None)
            };
            let len = entry.data.len() as u64;
            let sent = target.as_ref().is_some_and(|c| {
                let count = if replayed {
                    counts.get(&pos).copied().unwrap_or(0)
                } else {
                    0
                };
                let ack_set = self.batch_ack_set(pos);
                c.deliver(
                    pos,
                    info.messages,
                    self.partition,
                    count,
                    ack_set,
                    entry.data,
                    limit,
                )
            });
            if sent {
                out.record(info.messages, len);
                if let (Some(s), Some(c), Some(ks)) = (slot, &target, st.key_shared.as_mut()) {
                    ks.draining.delivered(pos, s, c.handle);
                }
            } else {
                replay.insert(pos, slot);
                out.requeued += 1;
                if let Some(s) = slot.filter(|_| replayed) {
                    blocked.insert(s);
                }
            }
        }
        drop(counts);
        drop(replay);
        drop(st);
        self.out.record(out.messages, out.bytes);
        out
    }

    fn batch_ack_set(&self, position: Position) -> Option<Vec<i64>> {
        self.cursor
            .batch_ack_set(position)
            .map(|w| w.iter().map(|x| *x as i64).collect())
    }

    /// One dispatcher pass without waiting: plan, read (replay or cursor, no parking), dispatch.
    /// For benchmarks and tests that drive a subscription made with [`Subscription::new`].
    ///
    /// # Errors
    /// Storage failures reading entries.
    pub fn dispatch_once(&self) -> Result<Outcome, BrokerError> {
        self.release_due_delayed();
        let cap = self.config.dispatcher_max_read_batch_size as usize;
        match self.plan(cap, None) {
            Plan::Wait(_) => Ok(Outcome::default()),
            Plan::Replay(n) => {
                let (entries, _) = self.read_replay(n)?;
                Ok(self.dispatch(entries, true))
            }
            Plan::Read(n, _) => {
                if let Some(r) = crate::compaction::view::read_blocking(self, n) {
                    return Ok(self.dispatch(r?, false));
                }
                let entries = self.cursor.read_entries_bounded(
                    n,
                    self.config.dispatcher_max_read_size_bytes,
                    Position::LATEST,
                )?;
                Ok(self.dispatch(entries, false))
            }
        }
    }
}

impl Outcome {
    fn record(&mut self, messages: u32, bytes: u64) {
        self.messages += u64::from(messages);
        self.bytes += bytes;
        self.entries += 1;
    }
}

/// Reads from the cursor on the blocking pool (a cache miss: the entries come from disk).
async fn read_from_disk(
    cursor: Arc<pulsar_rs_ledger::Cursor>,
    n: usize,
    max_bytes: u64,
) -> Result<Vec<Entry>, BrokerError> {
    tokio::task::spawn_blocking(move || {
        cursor
            .read_entries_bounded(n, max_bytes, Position::LATEST)
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
pub(crate) async fn dispatch_loop(weak: Weak<Subscription>) {
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
            wait(&sub, Some(Instant::now() + wait_time)).await;
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
        let result =
            match sub.plan(cap, stall) {
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
                        stall = (taken == 0 || (outcome.entries == 0 && outcome.requeued > 0))
                            .then(|| Stall {
                                changes,
                                at: Instant::now(),
                            });
                        outcome
                    })
                }
                // readCompacted consumers before the horizon read the compacted view.
                Plan::Read(n, deadline) => match crate::compaction::view::read(&sub, n).await {
                    Some(r) => r.map(|entries| sub.dispatch(entries, false)),
                    None => {
                        let cursor = Arc::clone(&sub.cursor);
                        let max_bytes = sub.config.dispatcher_max_read_size_bytes;
                        // Waiting and cache hits run here; cancelling them (wake-up, deadline)
                        // loses nothing, as nothing is taken across an await.
                        let read = async {
                            match deadline {
                                Some(d) => tokio::select! {
                                    r = cursor.wait_and_read_cached(n, max_bytes) => Some(r),
                                    () = tokio::time::sleep_until(d.into()) => None,
                                },
                                None => Some(cursor.wait_and_read_cached(n, max_bytes).await),
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
                            Some(Ok(None)) => read_from_disk(cursor, n, max_bytes)
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
