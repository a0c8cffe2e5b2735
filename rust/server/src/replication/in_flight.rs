//! The entries a replicator's producer sent and the remote has not yet answered, and which of
//! them a SEND_RECEIPT settles.
//!
//! * A remote that does not deduplicate by source position ("V1", a broker older than Pulsar
//!   4.0.4): a receipt settles every send up to its `sequence_id`, the replicator's own.
//! * A remote that advertised `supports_repl_dedup_by_lid_and_eid` ("V2"): a receipt names the
//!   *source* position it answers (`sequence_id` = ledger id, `highest_sequence_id` = entry id),
//!   or, with `highest_sequence_id` = `i64::MIN`, a replicated-subscription marker by its
//!   sequence id; read as Pulsar's `GeoReplicationProducerImpl` reads them: a first send at or
//!   below the last acknowledged source position is settled (it was resent after a rewind), a
//!   receipt at or below it is ignored (an answer repeated after a reconnect), the first send's
//!   own position settles it, and anything else is unexpected (the replicator reconnects and
//!   resends from its cursor).

use std::collections::VecDeque;

use pulsar_rs_broker::topic::repl_source::MARKER_RECEIPT;
use pulsar_rs_ledger::Position;
use pulsar_rs_proto::pb::CommandSendReceipt;

/// One entry sent and not yet answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Sent {
    /// The SEND's sequence id (the replicator's own numbering).
    pub sequence_id: u64,
    /// The entry's position in the local (source) topic.
    pub position: Position,
    /// Messages in it (a batch's count).
    pub messages: u64,
    /// Its stored size.
    pub bytes: u64,
    /// A replicated-subscription marker.
    pub marker: bool,
}

/// The sends in flight on one producer, in SEND order; owned by the replicator's task.
pub(super) struct InFlight {
    /// Sent and not yet answered, in order.
    sent: VecDeque<Sent>,
    /// The remote deduplicates by source position (its receipts name source positions).
    by_source_position: bool,
    /// V2: the highest source position the remote acknowledged.
    last_persisted: Option<Position>,
    /// V2: the highest sequence id of an acknowledged marker.
    last_marker: Option<u64>,
}

impl InFlight {
    /// Nothing in flight; `by_source_position`: the remote advertised V2.
    pub(super) fn new(by_source_position: bool) -> Self {
        InFlight {
            sent: VecDeque::new(),
            by_source_position,
            last_persisted: None,
            last_marker: None,
        }
    }

    /// How many sends are unanswered.
    pub(super) fn len(&self) -> usize {
        self.sent.len()
    }

    /// Notes a send.
    pub(super) fn push(&mut self, sent: Sent) {
        self.sent.push_back(sent);
    }

    /// The sends `r` settles, in order.
    ///
    /// # Errors
    /// A V2 receipt that matches nothing in flight (the connection must be dropped).
    pub(super) fn receipt(&mut self, r: &CommandSendReceipt) -> Result<Vec<Sent>, String> {
        let mut settled = Vec::new();
        if !self.by_source_position {
            while self
                .sent
                .front()
                .is_some_and(|s| s.sequence_id <= r.sequence_id)
            {
                settled.extend(self.sent.pop_front());
            }
            return Ok(settled);
        }
        let Some(front) = self.sent.front().copied() else {
            // Nothing in flight: an answer to a send already settled.
            return Ok(settled);
        };
        let highest = r.highest_sequence_id.unwrap_or(0);
        if highest == MARKER_RECEIPT {
            if self.last_marker.is_some_and(|m| r.sequence_id <= m) {
                return Ok(settled);
            }
            if front.marker && front.sequence_id == r.sequence_id {
                self.last_marker = Some(r.sequence_id);
                settled.extend(self.sent.pop_front());
                return Ok(settled);
            }
            return Err(format!(
                "unexpected marker receipt {} (first in flight: {front:?})",
                r.sequence_id
            ));
        }
        let source = Position::new(
            i64::try_from(r.sequence_id).unwrap_or(i64::MAX),
            i64::try_from(highest).unwrap_or(i64::MAX),
        );
        while let Some(front) = self.sent.front().copied() {
            let persisted = |p: Position| self.last_persisted.is_some_and(|l| p <= l);
            if !front.marker && persisted(front.position) {
                // Resent after a rewind and already acknowledged: settled, and the receipt
                // is read again against the next send.
                settled.extend(self.sent.pop_front());
                continue;
            }
            if persisted(source) {
                // A repeated answer (the remote answered the same entry after a reconnect).
                return Ok(settled);
            }
            if !front.marker && front.position == source {
                self.last_persisted = Some(source);
                settled.extend(self.sent.pop_front());
                return Ok(settled);
            }
            return Err(format!(
                "unexpected receipt for source entry {source} (first in flight: {front:?})"
            ));
        }
        Ok(settled)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sent(seq: u64, entry: i64, marker: bool) -> Sent {
        Sent {
            sequence_id: seq,
            position: Position::new(3, entry),
            messages: 1,
            bytes: 1,
            marker,
        }
    }

    fn receipt(seq: u64, highest: Option<u64>) -> CommandSendReceipt {
        CommandSendReceipt {
            producer_id: 1,
            sequence_id: seq,
            highest_sequence_id: highest,
            ..Default::default()
        }
    }

    fn entries(v: &[Sent]) -> Vec<i64> {
        v.iter().map(|s| s.position.entry_id).collect()
    }

    #[test]
    fn v1_settles_up_to_the_sequence_id() {
        let mut f = InFlight::new(false);
        for i in 1..=3 {
            f.push(sent(i, i as i64, false));
        }
        assert_eq!(entries(&f.receipt(&receipt(2, None)).unwrap()), [1, 2]);
        assert_eq!(f.len(), 1);
    }

    #[test]
    fn v2_settles_by_source_position() {
        let mut f = InFlight::new(true);
        f.push(sent(1, 10, false));
        f.push(sent(2, 11, false));
        // A sequence id means nothing: the source position does.
        assert!(f.receipt(&receipt(2, None)).is_err());
        assert_eq!(entries(&f.receipt(&receipt(3, Some(10))).unwrap()), [10]);
        // Repeated answer for 3:10: ignored.
        assert!(f.receipt(&receipt(3, Some(10))).unwrap().is_empty());
        assert_eq!(entries(&f.receipt(&receipt(3, Some(11))).unwrap()), [11]);
        assert_eq!(f.len(), 0);
    }

    #[test]
    fn v2_settles_resends_below_what_was_acknowledged() {
        let mut f = InFlight::new(true);
        f.push(sent(1, 10, false));
        assert_eq!(f.receipt(&receipt(3, Some(10))).unwrap().len(), 1);
        // A rewind sends 10 again, then 11: the receipt for 11 settles both.
        f.push(sent(2, 10, false));
        f.push(sent(3, 11, false));
        assert_eq!(
            entries(&f.receipt(&receipt(3, Some(11))).unwrap()),
            [10, 11]
        );
    }

    #[test]
    fn v2_marker_receipts_match_the_markers_sequence_id() {
        let mut f = InFlight::new(true);
        f.push(sent(1, 10, true));
        f.push(sent(2, 11, false));
        assert!(f.receipt(&receipt(9, Some(MARKER_RECEIPT))).is_err());
        assert_eq!(
            entries(&f.receipt(&receipt(1, Some(MARKER_RECEIPT))).unwrap()),
            [10]
        );
        assert!(f
            .receipt(&receipt(1, Some(MARKER_RECEIPT)))
            .unwrap()
            .is_empty());
        assert_eq!(entries(&f.receipt(&receipt(3, Some(11))).unwrap()), [11]);
    }
}
