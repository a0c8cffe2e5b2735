//! Rates and backlog over the last minutes, kept in memory by the broker for the console's
//! charts: a background task samples every loaded topic every [`SAMPLE_EVERY`] and appends to a
//! per-topic ring buffer holding [`WINDOW`] of points (plus one series of broker-wide totals).
//!
//! Memory is bounded: at most [`MAX_TOPICS`] topics get their own series (the rest count only in
//! the totals), each point is 32 bytes, so the worst case is about 1000 × 300 × 32 B ≈ 10 MB.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde::Serialize;
use tokio::sync::watch;

use super::stats::TopicRow;
use crate::context::ServerContext;

/// Sampling period of the background task.
pub const SAMPLE_EVERY: Duration = Duration::from_secs(2);
/// How far back the history reaches.
pub const WINDOW: Duration = Duration::from_secs(600);
/// Most topics with a series of their own.
pub const MAX_TOPICS: usize = 1000;

/// Points kept per series.
const KEEP: usize = (WINDOW.as_secs() / SAMPLE_EVERY.as_secs()) as usize;

/// One sample of one topic (or of the whole broker).
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Point {
    /// Sampling time, milliseconds since the Unix epoch.
    pub t: u64,
    /// Messages published per second.
    pub rate_in: f32,
    /// Messages dispatched per second (all subscriptions).
    pub rate_out: f32,
    /// Bytes published per second.
    pub throughput_in: f32,
    /// Bytes dispatched per second.
    pub throughput_out: f32,
    /// Messages in backlog, summed over subscriptions.
    pub backlog: f32,
    /// Bytes stored.
    pub storage: f32,
}

impl Point {
    /// The point of a topic's current figures at time `t`.
    #[must_use]
    #[allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]
    pub fn of(t: u64, r: &TopicRow) -> Point {
        Point {
            t,
            rate_in: r.msg_rate_in as f32,
            rate_out: r.msg_rate_out as f32,
            throughput_in: r.msg_throughput_in as f32,
            throughput_out: r.msg_throughput_out as f32,
            backlog: r.msg_backlog as f32,
            storage: r.storage_size as f32,
        }
    }

    /// Adds `o`'s figures to this point (the time is kept).
    fn add(&mut self, o: &Point) {
        self.rate_in += o.rate_in;
        self.rate_out += o.rate_out;
        self.throughput_in += o.throughput_in;
        self.throughput_out += o.throughput_out;
        self.backlog += o.backlog;
        self.storage += o.storage;
    }
}

#[derive(Default)]
struct Series {
    /// Topic name → its ring buffer (oldest first).
    topics: HashMap<String, VecDeque<Point>>,
    /// Broker-wide totals (oldest first).
    broker: VecDeque<Point>,
}

/// The in-memory history of one broker.
#[derive(Default)]
pub struct History {
    /// Written by the sampler once per round, read by console requests; both hold it only to copy
    /// points in or out (no I/O, no `.await` under it).
    series: Mutex<Series>,
}

fn push(buf: &mut VecDeque<Point>, p: Point) {
    if buf.len() == KEEP {
        buf.pop_front();
    }
    buf.push_back(p);
}

impl History {
    /// Records one sampling round taken at `t`: a point per topic and the broker totals.
    /// Series of topics absent for a whole window are dropped.
    pub fn record(&self, t: u64, rows: &[TopicRow]) {
        let mut total = Point {
            t,
            ..Point::default()
        };
        let mut s = self.series.lock();
        for r in rows {
            let p = Point::of(t, r);
            total.add(&p);
            let n = s.topics.len();
            match s.topics.get_mut(&r.name) {
                Some(buf) => push(buf, p),
                None if n < MAX_TOPICS => {
                    s.topics.insert(r.name.clone(), VecDeque::from([p]));
                }
                None => {}
            }
        }
        let oldest = t.saturating_sub(u64::try_from(WINDOW.as_millis()).unwrap_or(u64::MAX));
        s.topics
            .retain(|_, buf| buf.back().is_some_and(|p| p.t >= oldest));
        push(&mut s.broker, total);
    }

    /// The broker-wide series.
    #[must_use]
    pub fn broker(&self) -> Vec<Point> {
        self.series.lock().broker.iter().copied().collect()
    }

    /// The series of `topic`; for a partitioned topic (no series of its own), the sum of its
    /// partitions' series, point by sampling time.
    #[must_use]
    pub fn topic(&self, topic: &str) -> Vec<Point> {
        let s = self.series.lock();
        if let Some(buf) = s.topics.get(topic) {
            return buf.iter().copied().collect();
        }
        let prefix = format!("{topic}-partition-");
        let mut sum: BTreeMap<u64, Point> = BTreeMap::new();
        for (name, buf) in &s.topics {
            let is_partition = name
                .strip_prefix(&prefix)
                .is_some_and(|i| !i.is_empty() && i.bytes().all(|b| b.is_ascii_digit()));
            if is_partition {
                for p in buf {
                    sum.entry(p.t)
                        .or_insert(Point {
                            t: p.t,
                            ..Point::default()
                        })
                        .add(p);
                }
            }
        }
        sum.into_values().collect()
    }
}

/// The sampler: one round every [`SAMPLE_EVERY`] into `history` until shutdown.
pub async fn sample_loop(
    ctx: Arc<ServerContext>,
    history: Arc<History>,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut tick = tokio::time::interval(SAMPLE_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = shutdown.changed() => return,
        }
        let svc = Arc::clone(&ctx.service);
        // Off the async workers: cursor backlogs take locks and topics may be many.
        let rows = tokio::task::spawn_blocking(move || {
            svc.loaded_topics()
                .iter()
                .map(|t| TopicRow::of(t))
                .collect::<Vec<_>>()
        })
        .await
        .unwrap_or_default();
        history.record(ctx.service.clock().now_ms(), &rows);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, backlog: u64) -> TopicRow {
        TopicRow {
            name: name.to_owned(),
            msg_backlog: backlog,
            ..TopicRow::default()
        }
    }

    #[test]
    fn ring_keeps_the_last_window_and_sums_partitions() {
        let h = History::default();
        for i in 0..(KEEP as u64 + 5) {
            h.record(
                1_000_000 + i * 2000,
                &[
                    row("persistent://a/b/p-partition-0", i),
                    row("persistent://a/b/p-partition-1", 1),
                    row("persistent://a/b/t", 7),
                ],
            );
        }
        let t = h.topic("persistent://a/b/t");
        assert_eq!(t.len(), KEEP);
        assert_eq!(t[0].t, 1_000_000 + 5 * 2000);
        let p = h.topic("persistent://a/b/p");
        assert_eq!(p.len(), KEEP);
        assert_eq!(p.last().unwrap().backlog, (KEEP as f32 + 4.0) + 1.0);
        assert_eq!(
            h.broker().last().unwrap().backlog,
            (KEEP as f32 + 4.0) + 8.0
        );
        // "persistent://a/b/p-partition-" must not match another topic's prefix.
        assert!(h.topic("persistent://a/b/p-part").is_empty());
    }

    #[test]
    fn topics_gone_for_a_window_are_dropped() {
        let h = History::default();
        h.record(1_000, &[row("persistent://a/b/gone", 1)]);
        h.record(1_000 + WINDOW.as_millis() as u64 + 1, &[]);
        assert!(h.topic("persistent://a/b/gone").is_empty());
        assert_eq!(h.broker().len(), 2);
    }

    #[test]
    fn series_are_capped() {
        let h = History::default();
        let rows: Vec<TopicRow> = (0..MAX_TOPICS + 10)
            .map(|i| row(&format!("persistent://a/b/t{i}"), 1))
            .collect();
        h.record(1, &rows);
        assert_eq!(h.series.lock().topics.len(), MAX_TOPICS);
        assert_eq!(h.broker()[0].backlog, (MAX_TOPICS + 10) as f32);
    }
}
