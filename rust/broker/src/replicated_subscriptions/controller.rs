//! A topic's snapshots of where every replicating cluster stands (Pulsar's
//! `ReplicatedSubscriptionsController` and `ReplicatedSubscriptionsSnapshotBuilder`), as a
//! state machine: the caller writes the marker entries it returns and feeds it the markers
//! its replicators read from the other clusters.
//!
//! * [`Controller::tick`], every `replicatedSubscriptionsSnapshotFrequencyMillis` while the
//!   topic has a replicated subscription: drops snapshots unanswered for
//!   `replicatedSubscriptionsSnapshotTimeoutSeconds`; starts one (a REQUEST) when data was
//!   published since the last completed one started and every replicator is connected, but
//!   not while the first one is still unanswered.
//! * [`Controller::on_request`]: another cluster asks; the answer is this cluster's position
//!   of the request (it follows everything that cluster replicated here before asking).
//! * [`Controller::on_response`]: with every remote's answer the snapshot completes (a
//!   SNAPSHOT marker at the last answer's position); with more than one remote, a second round
//!   is asked first, as Pulsar's, so that what a third cluster sent via the others is counted.

use std::collections::hash_map::RandomState;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::{BuildHasher, Hasher};

use bytes::Bytes;
use pulsar_rs_ledger::Position;
use pulsar_rs_proto::pb::{
    ReplicatedSubscriptionsSnapshotRequest, ReplicatedSubscriptionsSnapshotResponse,
};

use super::markers;

/// A snapshot being built.
#[derive(Debug)]
struct Pending {
    /// When its first request was written (ms).
    started_ms: u64,
    /// The remote clusters asked.
    remotes: BTreeSet<String>,
    /// Those that have not answered this round.
    missing: BTreeSet<String>,
    /// Each remote's first answer.
    responses: BTreeMap<String, Position>,
    /// Whether a second round is needed (more than one remote).
    two_rounds: bool,
    /// Whether the first round is complete (the second was asked).
    first_round_done: bool,
}

/// Completed snapshots: how many, and their durations summed (ms).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotTimes {
    /// Snapshots completed.
    pub count: u64,
    /// Milliseconds from each one's first request to its completion, summed.
    pub sum_ms: u64,
}

/// One topic's snapshots in progress.
#[derive(Debug)]
pub struct Controller {
    /// This cluster's name.
    local: String,
    /// `replicatedSubscriptionsSnapshotTimeoutSeconds`, in ms.
    timeout_ms: u64,
    /// Snapshots asked and not complete, by id.
    pending: HashMap<String, Pending>,
    /// When the last completed snapshot started (ms, 0 = none yet).
    last_completed_start_ms: u64,
    /// Snapshots dropped unanswered (Pulsar's `timedout_snapshots`).
    timed_out: u64,
    /// Snapshots completed, and the milliseconds each took from its first request, summed
    /// (Pulsar's `pulsar_replicated_subscriptions_snapshot_ms` summary).
    completed: SnapshotTimes,
    /// Makes the snapshot ids (random per process).
    ids: RandomState,
    /// Counts the ids made.
    made: u64,
}

impl Controller {
    /// A controller for cluster `local` with the broker's snapshot timeout.
    #[must_use]
    pub fn new(local: &str, timeout_ms: u64) -> Self {
        Controller {
            local: local.to_owned(),
            timeout_ms,
            pending: HashMap::new(),
            last_completed_start_ms: 0,
            timed_out: 0,
            completed: SnapshotTimes::default(),
            ids: RandomState::new(),
            made: 0,
        }
    }

    /// A UUID-shaped id, random per process and unique within it.
    fn next_id(&mut self, now_ms: u64) -> String {
        self.made += 1;
        let half = |salt: u64| {
            let mut h = self.ids.build_hasher();
            h.write_u64(now_ms);
            h.write_u64(self.made);
            h.write_u64(salt);
            h.finish()
        };
        let (a, b) = (half(1), half(2));
        format!(
            "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
            a >> 32,
            (a >> 16) & 0xffff,
            a & 0xffff,
            b >> 48,
            b & 0xffff_ffff_ffff
        )
    }

    /// The timer: drops the snapshots older than the timeout, then returns the REQUEST to
    /// write when a new one starts: data published (`last_data_ms`) since the last completed
    /// one started, `remotes` non-empty and every one of them connected.
    pub fn tick(
        &mut self,
        now_ms: u64,
        last_data_ms: u64,
        remotes: &[String],
        all_connected: bool,
    ) -> Option<Bytes> {
        let timeout = self.timeout_ms;
        let before = self.pending.len();
        self.pending
            .retain(|_, p| now_ms < p.started_ms.saturating_add(timeout));
        self.timed_out += (before - self.pending.len()) as u64;
        if self.last_completed_start_ms == 0 && !self.pending.is_empty() {
            // Until one completes, one at a time (a cluster that never answers costs one
            // request per timeout, not one per tick).
            return None;
        }
        if last_data_ms == 0 || last_data_ms < self.last_completed_start_ms {
            return None;
        }
        if remotes.is_empty() || !all_connected {
            return None;
        }
        let id = self.next_id(now_ms);
        let set: BTreeSet<String> = remotes.iter().cloned().collect();
        self.pending.insert(
            id.clone(),
            Pending {
                started_ms: now_ms,
                two_rounds: set.len() > 1,
                missing: set.clone(),
                remotes: set,
                responses: BTreeMap::new(),
                first_round_done: false,
            },
        );
        Some(markers::request(&id, &self.local, now_ms))
    }

    /// Another cluster's REQUEST, read at `at` in this cluster's ledger: the RESPONSE to write.
    #[must_use]
    pub fn on_request(
        &self,
        at: Position,
        request: &ReplicatedSubscriptionsSnapshotRequest,
        now_ms: u64,
    ) -> Option<Bytes> {
        let source = request.source_cluster.as_deref()?;
        (source != self.local)
            .then(|| markers::response(&request.snapshot_id, source, &self.local, at, now_ms))
    }

    /// A remote's RESPONSE, read at `at` in this cluster's ledger: the marker to write next (a
    /// second round's REQUEST, or the completed SNAPSHOT), if any. An answer to a snapshot no
    /// longer pending (completed, timed out, of another process) is ignored.
    pub fn on_response(
        &mut self,
        at: Position,
        response: &ReplicatedSubscriptionsSnapshotResponse,
        now_ms: u64,
    ) -> Option<Bytes> {
        let id = response.snapshot_id.as_str();
        let cluster = response.cluster.as_ref()?;
        let p = self.pending.get_mut(id)?;
        if !p.remotes.contains(&cluster.cluster) {
            return None;
        }
        p.responses
            .entry(cluster.cluster.clone())
            .or_insert_with(|| markers::position(&cluster.message_id));
        p.missing.remove(&cluster.cluster);
        if !p.missing.is_empty() {
            return None;
        }
        if p.two_rounds && !p.first_round_done {
            p.first_round_done = true;
            p.missing = p.remotes.clone();
            return Some(markers::request(id, &self.local, now_ms));
        }
        let done = self.pending.remove(id)?;
        self.last_completed_start_ms = done.started_ms;
        self.completed.count += 1;
        self.completed.sum_ms += now_ms.saturating_sub(done.started_ms);
        let others: Vec<(String, Position)> = done.responses.into_iter().collect();
        Some(markers::snapshot(id, &self.local, at, &others, now_ms))
    }

    /// Snapshots asked and not complete.
    #[must_use]
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Snapshots dropped unanswered since the topic loaded.
    #[must_use]
    pub fn timed_out(&self) -> u64 {
        self.timed_out
    }

    /// Snapshots completed since the topic loaded, and how long they took.
    #[must_use]
    pub fn completed(&self) -> SnapshotTimes {
        self.completed
    }
}

#[cfg(test)]
mod tests {
    use super::super::markers::{decode, Marker};
    use super::*;

    fn read(entry: &Bytes) -> Marker {
        let (md, payload) = pulsar_rs_proto::parse_stored_entry(entry).unwrap();
        decode(md.marker_type.unwrap(), &payload).unwrap()
    }

    fn remotes(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| (*s).to_owned()).collect()
    }

    fn answer(id: &str, cluster: &str, e: i64) -> ReplicatedSubscriptionsSnapshotResponse {
        let Marker::Response(r) = read(&markers::response(
            id,
            "east",
            cluster,
            Position::new(50, e),
            1,
        )) else {
            panic!()
        };
        r
    }

    #[test]
    fn one_remote_one_round() {
        let mut c = Controller::new("east", 30_000);
        assert!(
            c.tick(1000, 0, &remotes(&["west"]), true).is_none(),
            "nothing published yet"
        );
        assert!(
            c.tick(1000, 900, &remotes(&["west"]), false).is_none(),
            "a replicator down"
        );
        let Marker::Request(r) = read(&c.tick(1000, 900, &remotes(&["west"]), true).unwrap())
        else {
            panic!()
        };
        assert_eq!(r.source_cluster.as_deref(), Some("east"));
        assert!(
            c.tick(2000, 900, &remotes(&["west"]), true).is_none(),
            "one at a time until one completes"
        );
        let Marker::Snapshot(s) = read(
            &c.on_response(
                Position::new(7, 3),
                &answer(&r.snapshot_id, "west", 4),
                2100,
            )
            .unwrap(),
        ) else {
            panic!()
        };
        assert_eq!(
            markers::position(&s.local_message_id.unwrap()),
            Position::new(7, 3)
        );
        assert_eq!(
            s.clusters,
            markers::clusters(&[("west".into(), Position::new(50, 4))])
        );
        assert_eq!(c.pending(), 0);
        assert_eq!(
            c.completed(),
            SnapshotTimes {
                count: 1,
                sum_ms: 1100
            },
            "asked at 1000, complete at 2100"
        );
        assert!(
            c.tick(3000, 900, &remotes(&["west"]), true).is_none(),
            "no data since it started"
        );
        assert!(c.tick(3000, 1500, &remotes(&["west"]), true).is_some());
    }

    #[test]
    fn two_remotes_two_rounds_first_answers_kept() {
        let mut c = Controller::new("east", 30_000);
        let Marker::Request(r) = read(
            &c.tick(1000, 900, &remotes(&["west", "north"]), true)
                .unwrap(),
        ) else {
            panic!()
        };
        let id = r.snapshot_id;
        assert!(c
            .on_response(Position::new(7, 1), &answer(&id, "west", 1), 1)
            .is_none());
        assert!(matches!(
            read(
                &c.on_response(Position::new(7, 2), &answer(&id, "north", 2), 1)
                    .unwrap()
            ),
            Marker::Request(_)
        ));
        assert!(c
            .on_response(Position::new(7, 3), &answer(&id, "west", 10), 1)
            .is_none());
        let Marker::Snapshot(s) = read(
            &c.on_response(Position::new(7, 4), &answer(&id, "north", 20), 1)
                .unwrap(),
        ) else {
            panic!()
        };
        let first = [
            ("north".into(), Position::new(50, 2)),
            ("west".into(), Position::new(50, 1)),
        ];
        assert_eq!(
            s.clusters,
            markers::clusters(&first),
            "the first round's answers, by cluster name"
        );
        assert_eq!(
            markers::position(&s.local_message_id.unwrap()),
            Position::new(7, 4)
        );
    }

    #[test]
    fn unanswered_snapshots_time_out_and_late_answers_are_ignored() {
        let mut c = Controller::new("east", 30_000);
        let Marker::Request(r) = read(&c.tick(1000, 900, &remotes(&["west"]), true).unwrap())
        else {
            panic!()
        };
        assert!(c.tick(30_999, 900, &remotes(&["west"]), true).is_none());
        assert!(
            c.tick(31_000, 900, &remotes(&["west"]), true).is_some(),
            "the first dropped, a new one asked"
        );
        assert_eq!(c.timed_out(), 1);
        assert!(c
            .on_response(Position::new(7, 3), &answer(&r.snapshot_id, "west", 4), 1)
            .is_none());
    }

    #[test]
    fn answers_anothers_request_with_its_position_here() {
        let c = Controller::new("west", 30_000);
        let Marker::Request(r) = read(&markers::request("s9", "east", 1)) else {
            panic!()
        };
        let entry = c.on_request(Position::new(4, 2), &r, 5).unwrap();
        let (md, _) = pulsar_rs_proto::parse_stored_entry(&entry).unwrap();
        assert_eq!(md.replicate_to, vec!["east".to_owned()]);
        let Marker::Response(a) = read(&entry) else {
            panic!()
        };
        let cl = a.cluster.unwrap();
        assert_eq!(
            (a.snapshot_id.as_str(), cl.cluster.as_str()),
            ("s9", "west")
        );
        assert_eq!(markers::position(&cl.message_id), Position::new(4, 2));
        let own = markers::request("s9", "west", 1);
        let Marker::Request(own) = read(&own) else {
            panic!()
        };
        assert!(
            c.on_request(Position::new(4, 3), &own, 5).is_none(),
            "its own request is not answered"
        );
    }
}
