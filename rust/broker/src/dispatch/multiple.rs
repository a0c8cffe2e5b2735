//! The multiple-consumers dispatcher of Shared subscriptions (Pulsar's
//! `PersistentDispatcherMultipleConsumers`, seed 000): entries go round-robin by priority level
//! ([`RoundRobin`]) to consumers with permits; what nobody can take goes to the replay set, which
//! is served before new entries are read.

use pulsar_rs_ledger::Entry;

use super::consumers::ConsumerList;
use super::replay::ReplaySet;
use super::round_robin::RoundRobin;
use super::{Env, Outcome};
use crate::subscription::entry_info;

/// Routing state of a Shared subscription; guarded by the subscription's state lock.
#[derive(Default)]
pub(crate) struct MultipleConsumers {
    /// Round-robin position.
    rr: RoundRobin,
    /// Entries to deliver before reading new ones.
    pub(crate) replay: ReplaySet,
}

impl MultipleConsumers {
    /// Consumers joined or left: forget the cached best priority level.
    pub(crate) fn consumers_changed(&mut self) {
        self.rr.refresh();
    }

    /// Hands entries out round-robin; `replayed` entries carry their redelivery count.
    pub(crate) fn dispatch(
        &mut self,
        consumers: &ConsumerList,
        env: &Env<'_>,
        entries: Vec<Entry>,
        replayed: bool,
    ) -> Outcome {
        let mut out = Outcome::default();
        for entry in entries {
            let pos = entry.position;
            if env.cursor.is_acked(pos) {
                continue;
            }
            let info = entry_info(&entry.data);
            if env.defer(pos, &info) {
                continue;
            }
            let target = self.rr.pick(consumers.all(), env.rr_chunk);
            let len = entry.data.len() as u64;
            let count = env.redelivery_count(pos, replayed);
            let sent = target.is_some_and(|c| env.deliver(&c, pos, &info, count, entry.data));
            if sent {
                out.record(info.messages, len);
            } else {
                self.replay.insert(pos, None);
                out.requeued += 1;
            }
        }
        out
    }
}
