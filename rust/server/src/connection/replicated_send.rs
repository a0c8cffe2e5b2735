//! A SEND from another cluster's replicator (`<prefix>.<from>--><to>`): what it is deduplicated
//! on and how its receipt reads, as Pulsar's broker does it.
//!
//! * Without `supports_repl_dedup_by_lid_and_eid` in the connection's CONNECT ("V1"): on the
//!   replicated message's own producer name and sequence ids (the replicator numbers its SENDs
//!   its own way); receipts as for any producer.
//! * With it ("V2", Pulsar 4.0.4+): on the source position the replicator put in the message's
//!   `__MSG_PROP_REPL_SOURCE_POSITION` property, per replicator producer; the receipt's
//!   `sequence_id`/`highest_sequence_id` carry that source ledger/entry id (the replicator
//!   matches receipts on them), and a replicated-subscription marker's receipt has
//!   `highest_sequence_id` = `i64::MIN` (its own sequence id in `sequence_id`).

use pulsar_rs_broker::replicated_subscriptions::markers;
use pulsar_rs_broker::topic::dedup::{DedupBy, SendIds};
use pulsar_rs_broker::topic::repl_source::{SourcePosition, MARKER_RECEIPT};
use pulsar_rs_proto::pb::{CommandSend, MessageMetadata};

/// How one SEND is deduplicated and answered.
pub(super) struct Classified {
    /// The metadata of a message another cluster replicated here (`replicated_from` set).
    original: Option<MessageMetadata>,
    /// A server marker (the SEND's `marker`, or a `marker_type`): never deduplicated.
    pub(super) marker: bool,
    /// What deduplication keys it on.
    by: DedupBy,
    /// The receipt's `(sequence_id, highest_sequence_id)` when they are not the SEND's.
    pub(super) receipt_ids: Option<(u64, Option<u64>)>,
}

impl Classified {
    /// A SEND of a producer that is not a replicator.
    pub(super) fn local() -> Self {
        Classified {
            original: None,
            marker: false,
            by: DedupBy::SequenceId,
            receipt_ids: None,
        }
    }

    /// A SEND `s` of a replicator, its full metadata `md` (if it parsed); `by_source_position`:
    /// the connection negotiated V2.
    pub(super) fn replicator(
        s: &CommandSend,
        md: Option<MessageMetadata>,
        by_source_position: bool,
    ) -> Self {
        let marker_type = md.as_ref().and_then(|m| m.marker_type);
        let marker = s.marker == Some(true) || marker_type.is_some();
        let original = md.filter(|m| m.replicated_from.is_some());
        let mut c = Classified {
            original,
            marker,
            by: DedupBy::SequenceId,
            receipt_ids: None,
        };
        if !by_source_position {
            return c;
        }
        if marker {
            if marker_type.is_some_and(markers::is_replicated_subscription_marker) {
                c.receipt_ids = Some((s.sequence_id, Some(MARKER_RECEIPT)));
            }
            return c;
        }
        let source = c.original.as_ref().and_then(SourcePosition::of);
        c.by = DedupBy::SourcePosition(source);
        c.receipt_ids = source.map(|at| {
            (
                u64::try_from(at.ledger_id).unwrap_or_default(),
                Some(u64::try_from(at.entry_id).unwrap_or_default()),
            )
        });
        c
    }

    /// The ids deduplication sees, for producer `name`'s SEND `s`.
    pub(super) fn ids<'a>(
        &'a self,
        name: &'a str,
        s: &CommandSend,
        non_last_chunk: bool,
    ) -> SendIds<'a> {
        match (&self.original, self.by) {
            // V1: the replicated message's own producer and sequence ids.
            (Some(md), DedupBy::SequenceId) => SendIds {
                producer: &md.producer_name,
                sequence_id: md.sequence_id,
                highest_sequence_id: md.highest_sequence_id,
                non_last_chunk,
                marker: self.marker,
                by: DedupBy::SequenceId,
            },
            _ => SendIds {
                producer: name,
                sequence_id: s.sequence_id,
                highest_sequence_id: s.highest_sequence_id,
                non_last_chunk,
                marker: self.marker,
                by: self.by,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pulsar_rs_broker::topic::repl_source::SOURCE_POSITION_PROPERTY;
    use pulsar_rs_proto::pb::KeyValue;

    const REPL: &str = "pulsar.repl.east-->west";

    fn send(seq: u64) -> CommandSend {
        CommandSend {
            producer_id: 1,
            sequence_id: seq,
            ..Default::default()
        }
    }

    fn replicated(position: Option<&str>) -> MessageMetadata {
        MessageMetadata {
            producer_name: "p".into(),
            sequence_id: 3,
            replicated_from: Some("east".into()),
            properties: position
                .map(|v| KeyValue {
                    key: SOURCE_POSITION_PROPERTY.into(),
                    value: v.into(),
                })
                .into_iter()
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn v1_keys_on_the_original_producer_and_answers_as_usual() {
        let s = send(9);
        let c = Classified::replicator(&s, Some(replicated(Some("4:5"))), false);
        let ids = c.ids(REPL, &s, false);
        assert_eq!((ids.producer, ids.sequence_id), ("p", 3));
        assert_eq!(ids.by, DedupBy::SequenceId);
        assert_eq!(c.receipt_ids, None);
    }

    #[test]
    fn v2_keys_on_the_source_position_and_answers_with_it() {
        let s = send(9);
        let c = Classified::replicator(&s, Some(replicated(Some("4:5"))), true);
        let ids = c.ids(REPL, &s, false);
        assert_eq!(ids.producer, REPL);
        assert_eq!(
            ids.by,
            DedupBy::SourcePosition(Some(SourcePosition {
                ledger_id: 4,
                entry_id: 5
            }))
        );
        assert_eq!(c.receipt_ids, Some((4, Some(5))));
        // Without a well-formed property: deduplication answers "unknown".
        let c = Classified::replicator(&s, Some(replicated(Some("x"))), true);
        assert_eq!(c.ids(REPL, &s, false).by, DedupBy::SourcePosition(None));
        assert_eq!(c.receipt_ids, None);
    }

    #[test]
    fn v2_marker_receipts_carry_min_and_the_send_sequence() {
        let mut s = send(9);
        s.marker = Some(true);
        let md = MessageMetadata {
            marker_type: Some(10),
            ..replicated(None)
        };
        let c = Classified::replicator(&s, Some(md), true);
        assert!(c.marker);
        assert_eq!(c.ids(REPL, &s, false).by, DedupBy::SequenceId);
        assert_eq!(c.receipt_ids, Some((9, Some(MARKER_RECEIPT))));
    }
}
