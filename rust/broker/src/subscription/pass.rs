//! One dispatch pass of a persistent subscription (seed 000's `readMoreEntries` and its read
//! callback), decided under the subscription's lock and carried out without it:
//! * wait, when no consumer can take messages, the subscription is blocked on unacked messages
//!   (`maxUnackedMessagesPerSubscription`, resumed at half), a Failover change is in its delay,
//!   or the Key_Shared look-ahead is full;
//! * serve the replay set first (redeliveries, entries nobody could take, Key_Shared entries
//!   waiting for their key, delayed entries that became due) — unless nothing in it could be
//!   delivered last time and nothing changed since (for Key_Shared, re-tried at most every
//!   `keySharedUnblockingIntervalMs`);
//! * otherwise read from the cursor (the task in [`super::task`] parks the read at the end of
//!   the topic);
//! * hand the entries to the subscription's [`Dispatcher`].

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use pulsar_rs_ledger::Entry;

use super::{compacted_read, State, Subscription};
use crate::dispatch::env::{Env, Outcome};
use crate::dispatch::single_active::SingleActiveConsumer;
use crate::dispatch::Dispatcher;
use crate::error::BrokerError;

/// What the dispatcher does next.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Plan {
    /// Nothing to do until woken (or until the deadline).
    Wait(Option<Instant>),
    /// Deliver up to this many entries from the replay set.
    Replay(usize),
    /// Read up to this many entries from the cursor; stop waiting at the deadline.
    Read(usize, Option<Instant>),
}

/// A replay pass in which nothing could be delivered.
#[derive(Clone, Copy)]
pub(super) struct Stall {
    /// [`Subscription::changes`] when it happened.
    pub(super) changes: u64,
    /// When it happened.
    pub(super) at: Instant,
}

impl Subscription {
    fn delay_slack_ms(&self) -> i64 {
        if self.config.delayed_delivery_deliver_at_time_strict {
            0
        } else {
            i64::try_from(self.config.delayed_delivery_tick_time_millis).unwrap_or(0)
        }
    }

    /// The subscription clock's time in ms, as the delayed tracker counts it.
    fn clock_ms(&self) -> i64 {
        i64::try_from(self.now_ms()).unwrap_or(i64::MAX)
    }

    /// Moves delayed entries that are due into the replay set.
    pub(super) fn release_due_delayed(&self) {
        let due = {
            let mut d = self.delayed.lock();
            if d.is_empty() {
                return;
            }
            d.take_due(self.clock_ms() + self.delay_slack_ms())
        };
        if due.is_empty() {
            return;
        }
        let mut st = self.state.lock();
        if let Some(replay) = st.dispatcher.as_mut().and_then(Dispatcher::replay_mut) {
            for p in due {
                replay.insert(p, None);
            }
        }
        drop(st);
        // Relaxed: a change counter read by this same task.
        self.changes.fetch_add(1, Ordering::Relaxed);
    }

    /// When the next delayed entry is due.
    fn delayed_deadline(&self) -> Option<Instant> {
        let d = self.delayed.lock();
        d.next_due_in(self.clock_ms())
            .map(|wait| pulsar_rs_clock::monotonic() + wait)
    }

    /// How many entries a Key_Shared replay set may hold before reading stops (Pulsar's
    /// `keySharedLookAheadMsgInReplayThresholdPerConsumer` × consumers, at most
    /// `...PerSubscription`).
    pub(super) fn key_shared_look_ahead(&self, consumers: usize) -> usize {
        let per_consumer =
            self.config
                .key_shared_look_ahead_msg_in_replay_threshold_per_consumer as usize;
        let per_sub = self
            .config
            .key_shared_look_ahead_msg_in_replay_threshold_per_subscription
            as usize;
        per_consumer.saturating_mul(consumers).min(per_sub)
    }

    /// Decides the next step; `cap` bounds the entries (read batch, rate limits).
    pub(super) fn plan(&self, cap: usize, stall: Option<Stall>) -> Plan {
        let now = pulsar_rs_clock::monotonic();
        let mut st = self.state.lock();
        let State {
            consumers,
            dispatcher,
            ..
        } = &mut *st;
        if consumers.is_empty() {
            return Plan::Wait(None);
        }
        let Some(dispatcher) = dispatcher.as_mut() else {
            return Plan::Wait(None);
        };
        let cap = i64::try_from(cap.max(1)).unwrap_or(i64::MAX);
        let key_shared = match dispatcher {
            Dispatcher::SingleActive(single) => {
                let now_ms = self.now_ms();
                match single.check_hold(consumers, now_ms) {
                    Err(until_ms) => {
                        let wait = Duration::from_millis(until_ms.saturating_sub(now_ms));
                        return Plan::Wait(Some(now + wait));
                    }
                    // The Failover delay is over: the new active consumer gets all unacknowledged.
                    Ok(true) => self.cursor.rewind(),
                    Ok(false) => {}
                }
                let permits = single.permits(consumers);
                return if permits > 0 {
                    Plan::Read(usize::try_from(permits.min(cap)).unwrap_or(1), None)
                } else {
                    Plan::Wait(None)
                };
            }
            Dispatcher::Multiple(_) => false,
            Dispatcher::StickyKey(_) => true,
        };
        let mut room = i64::MAX;
        let sub_limit = i64::from(self.subscription_unacked_limit());
        if self.durable && sub_limit > 0 {
            let unacked: i64 = consumers.all().iter().map(|c| c.unacked()).sum();
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
        let permits: i64 = consumers
            .all()
            .iter()
            .filter(|c| c.can_take())
            .map(|c| c.permits.get())
            .sum();
        if permits <= 0 {
            return Plan::Wait(None);
        }
        let n = usize::try_from(permits.min(room).min(cap)).unwrap_or(1);
        let consumer_count = consumers.len();
        let replay_len = dispatcher.replay().map_or(0, |r| r.len());
        drop(st);
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
            self.key_shared_look_ahead(consumer_count)
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
    pub(super) fn read_replay(&self, n: usize) -> Result<(Vec<Entry>, usize), BrokerError> {
        let positions = {
            let mut st = self.state.lock();
            let State {
                consumers,
                dispatcher,
                ..
            } = &mut *st;
            match dispatcher {
                Some(Dispatcher::StickyKey(k)) => k.take_ready(n, consumers),
                Some(Dispatcher::Multiple(m)) => m.replay.take_ready(n, |_| true),
                Some(Dispatcher::SingleActive(_)) | None => Vec::new(),
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

    /// Hands entries to the subscription's dispatcher.
    pub(super) fn dispatch(&self, entries: Vec<Entry>, replayed: bool) -> Outcome {
        let entries = self.filter_transactional(entries);
        if entries.is_empty() {
            return Outcome::default();
        }
        let unacked_limit = self.unacked_limit();
        let mut st = self.state.lock();
        let State {
            consumers,
            dispatcher,
            ..
        } = &mut *st;
        let mut env = Env {
            cursor: &self.cursor,
            partition: self.partition,
            unacked_limit,
            rr_chunk: self.config.dispatcher_max_round_robin_batch_size,
            redeliveries: None,
            delayed: None,
            pending_acks: self.txn_buffer.get().map(|_| &self.pending_acks),
        };
        let out = match dispatcher {
            None => return Outcome::default(),
            Some(Dispatcher::SingleActive(single)) => {
                // During a Failover delay nothing goes out: the rewind at its end reads it again.
                if single.is_holding() {
                    return Outcome::default();
                }
                let target = single.target(consumers);
                drop(st);
                SingleActiveConsumer::dispatch(target.as_ref(), &env, entries)
            }
            Some(multi) => {
                if self.delayed_delivery() {
                    env.delayed = Some((&self.delayed, self.clock_ms() + self.delay_slack_ms()));
                }
                let counts = self.redeliveries.lock();
                env.redeliveries = Some(&counts);
                let out = match multi {
                    Dispatcher::Multiple(m) => m.dispatch(consumers, &env, entries, replayed),
                    Dispatcher::StickyKey(k) => k.dispatch(consumers, &env, entries, replayed),
                    Dispatcher::SingleActive(_) => Outcome::default(),
                };
                drop(counts);
                drop(st);
                out
            }
        };
        self.out.record(out.messages, out.bytes);
        if out.messages > 0 {
            // Relaxed: a statistic for the admin API.
            self.stats
                .last_consumed_ms
                .store(self.now_ms(), std::sync::atomic::Ordering::Relaxed);
        }
        out
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
                if let Some(r) = compacted_read::read_blocking(self, n) {
                    return Ok(self.dispatch(r?, false));
                }
                let entries = self.cursor.read_entries_bounded(
                    n,
                    self.config.dispatcher_max_read_size_bytes,
                    self.max_read_position(),
                )?;
                Ok(self.dispatch(entries, false))
            }
        }
    }
}
