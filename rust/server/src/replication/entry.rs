//! What a replicator does with each entry it reads (Pulsar's
//! `GeoPersistentReplicator.replicateEntries`): entries that must not go to the remote cluster
//! are acknowledged and skipped (transaction markers, messages that came from another cluster,
//! a `replicate_to` list without the remote); a replicated-subscription marker the remote
//! cluster sent here is handed to the topic (Pulsar's `checkReplicatedSubscriptionMarker`:
//! the replicator back to a cluster reads that cluster's markers); the others go with
//! `replicated_from` set to this cluster, their payload (still compressed, batches intact) and
//! every other metadata field (producer name, sequence id, publish and event time, keys,
//! properties, schema version) as stored. This cluster's own replicated-subscription markers
//! go too (a SNAPSHOT's `replicate_to` keeps it home). Each message (not a marker) carries its
//! position here in the property `__MSG_PROP_REPL_SOURCE_POSITION` (`"<ledgerId>:<entryId>"`,
//! as Pulsar 4.0.4+'s replicator adds it), which a remote that negotiated it deduplicates on;
//! a non-persistent topic's messages have no position and carry none (Pulsar's
//! `NonPersistentReplicator`).

use bytes::Bytes;
use pulsar_rs_broker::replicated_subscriptions::markers;
use pulsar_rs_broker::topic::repl_source::SourcePosition;
use pulsar_rs_ledger::Position;
use pulsar_rs_proto::pb::{MarkerType, MessageMetadata};
use pulsar_rs_proto::{parse_stored_entry, MAGIC_BROKER_ENTRY_METADATA};

/// The decision for one entry.
#[derive(Debug)]
pub enum Verdict {
    /// Acknowledged without sending, for the reason given.
    Skip(&'static str),
    /// A replicated-subscription marker the remote cluster sent here (REQUEST, RESPONSE or
    /// UPDATE): for the topic to act on, then acknowledged.
    Received {
        /// Its `marker_type`.
        marker_type: i32,
        /// Its payload (the marker message).
        payload: Bytes,
    },
    /// Sent as this metadata and payload.
    Send {
        /// The stored metadata with `replicated_from` set.
        metadata: Box<MessageMetadata>,
        /// The stored payload.
        payload: Bytes,
        /// Messages in the entry (a batch's count).
        num_messages: i32,
    },
}

/// The stored entry without its broker entry metadata section (`[0x0e02][u32 size][...]`),
/// which Pulsar's brokers put in front of entries when an interceptor asks for it.
fn without_broker_entry_metadata(entry: &Bytes) -> Option<Bytes> {
    if entry.len() >= 2 && u16::from_be_bytes([entry[0], entry[1]]) == MAGIC_BROKER_ENTRY_METADATA {
        let size = u32::from_be_bytes(entry.get(2..6)?.try_into().ok()?) as usize;
        return Some(entry.slice(6usize.checked_add(size)?.min(entry.len())..));
    }
    Some(entry.clone())
}

/// What to do with `entry` (as stored at `at`; `None` for a non-persistent topic's) on the way
/// from cluster `local` to cluster `remote`; `aborted(most, least)` says whether a transaction
/// was aborted (its messages stay home).
#[must_use]
pub fn verdict(
    entry: &Bytes,
    at: Option<Position>,
    local: &str,
    remote: &str,
    aborted: &dyn Fn(u64, u64) -> bool,
) -> Verdict {
    let Some(stored) = without_broker_entry_metadata(entry) else {
        return Verdict::Skip("undecodable");
    };
    let Ok((mut metadata, payload)) = parse_stored_entry(&stored) else {
        return Verdict::Skip("undecodable");
    };
    if let Some(marker_type) = metadata.marker_type {
        if !markers::is_replicated_subscription_marker(marker_type) {
            return Verdict::Skip("a transaction marker");
        }
        if let Some(from) = metadata.replicated_from.as_deref() {
            return if from == remote
                && marker_type != MarkerType::ReplicatedSubscriptionSnapshot as i32
            {
                Verdict::Received {
                    marker_type,
                    payload,
                }
            } else {
                Verdict::Skip("a marker from another cluster")
            };
        }
    }
    if metadata.replicated_from.is_some() {
        return Verdict::Skip("replicated from another cluster");
    }
    if !metadata.replicate_to.is_empty() && !metadata.replicate_to.iter().any(|c| c == remote) {
        return Verdict::Skip("replicate_to leaves this cluster out");
    }
    if let (Some(most), Some(least)) = (metadata.txnid_most_bits, metadata.txnid_least_bits) {
        if aborted(most, least) {
            return Verdict::Skip("an aborted transaction's");
        }
    }
    metadata.replicated_from = Some(local.to_owned());
    // The remote's transactions are not this one's (Pulsar clears them too).
    metadata.txnid_least_bits = None;
    metadata.txnid_most_bits = None;
    if let (None, Some(at)) = (metadata.marker_type, at) {
        SourcePosition {
            ledger_id: at.ledger_id,
            entry_id: at.entry_id,
        }
        .set_on(&mut metadata);
    }
    let num_messages = metadata.num_messages_in_batch.unwrap_or(1).max(1);
    Verdict::Send {
        metadata: Box::new(metadata),
        payload,
        num_messages,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pulsar_rs_proto::build_stored_entry;

    const NONE: fn(u64, u64) -> bool = |_, _| false;
    const AT: Position = Position::new(5, 6);

    #[test]
    fn an_aborted_transactions_messages_stay_home() {
        let e = stored(|m| {
            m.txnid_most_bits = Some(1);
            m.txnid_least_bits = Some(2);
        });
        assert!(matches!(
            verdict(&e, Some(AT), "west", "east", &|m, l| (m, l) == (1, 2)),
            Verdict::Skip(_)
        ));
        match verdict(&e, Some(AT), "west", "east", &NONE) {
            Verdict::Send { metadata, .. } => assert_eq!(metadata.txnid_most_bits, None),
            v => panic!("{v:?}"),
        }
    }

    #[test]
    fn a_non_persistent_message_goes_without_a_source_position() {
        match verdict(&stored(|_| {}), None, "west", "east", &NONE) {
            Verdict::Send { metadata, .. } => {
                assert_eq!(metadata.replicated_from.as_deref(), Some("west"));
                assert_eq!(SourcePosition::of(&metadata), None);
            }
            v => panic!("{v:?}"),
        }
        // And one that came from another cluster stays (no loop in an active-active pair).
        let from_east = stored(|m| m.replicated_from = Some("east".into()));
        assert!(matches!(
            verdict(&from_east, None, "west", "east", &NONE),
            Verdict::Skip(_)
        ));
    }

    fn stored(f: impl FnOnce(&mut MessageMetadata)) -> Bytes {
        let mut md = MessageMetadata {
            producer_name: "p".into(),
            sequence_id: 7,
            publish_time: 1_700_000_000_000,
            partition_key: Some("k".into()),
            ..Default::default()
        };
        f(&mut md);
        build_stored_entry(&md, b"payload")
    }

    #[test]
    fn sends_with_replicated_from_and_everything_else_kept() {
        match verdict(&stored(|_| {}), Some(AT), "west", "east", &NONE) {
            Verdict::Send {
                metadata,
                payload,
                num_messages,
            } => {
                assert_eq!(metadata.replicated_from.as_deref(), Some("west"));
                assert_eq!(metadata.producer_name, "p");
                assert_eq!(metadata.sequence_id, 7);
                assert_eq!(metadata.publish_time, 1_700_000_000_000);
                assert_eq!(metadata.partition_key.as_deref(), Some("k"));
                assert_eq!(&payload[..], b"payload");
                assert_eq!(num_messages, 1);
                assert_eq!(
                    SourcePosition::of(&metadata),
                    Some(SourcePosition {
                        ledger_id: 5,
                        entry_id: 6
                    }),
                    "the source position travels"
                );
            }
            v => panic!("{v:?}"),
        }
    }

    #[test]
    fn never_sends_back_what_came_from_elsewhere() {
        let e = stored(|m| m.replicated_from = Some("east".into()));
        assert!(matches!(
            verdict(&e, Some(AT), "west", "east", &NONE),
            Verdict::Skip(_)
        ));
    }

    #[test]
    fn honours_replicate_to() {
        let only_north = stored(|m| m.replicate_to = vec!["north".into()]);
        assert!(matches!(
            verdict(&only_north, Some(AT), "west", "east", &NONE),
            Verdict::Skip(_)
        ));
        assert!(matches!(
            verdict(&only_north, Some(AT), "west", "north", &NONE),
            Verdict::Send { .. }
        ));
    }

    #[test]
    fn markers_go_out_come_in_or_stay() {
        let txn = stored(|m| m.marker_type = Some(21));
        assert!(matches!(
            verdict(&txn, Some(AT), "west", "east", &NONE),
            Verdict::Skip(_)
        ));
        let own = stored(|m| m.marker_type = Some(10));
        assert!(matches!(
            verdict(&own, Some(AT), "west", "east", &NONE),
            Verdict::Send { .. }
        ));
        let snapshot = stored(|m| {
            m.marker_type = Some(12);
            m.replicate_to = vec!["west".into()];
        });
        assert!(
            matches!(
                verdict(&snapshot, Some(AT), "west", "east", &NONE),
                Verdict::Skip(_)
            ),
            "a snapshot stays home"
        );
        let from_east = stored(|m| {
            m.marker_type = Some(13);
            m.replicated_from = Some("east".into());
        });
        assert!(matches!(
            verdict(&from_east, Some(AT), "west", "east", &NONE),
            Verdict::Received {
                marker_type: 13,
                ..
            }
        ));
        assert!(
            matches!(
                verdict(&from_east, Some(AT), "west", "north", &NONE),
                Verdict::Skip(_)
            ),
            "never a second hop"
        );
    }

    #[test]
    fn skips_garbage() {
        let garbage = Bytes::from_static(b"\x0e\x01\0\0\0\0junk");
        assert!(matches!(
            verdict(&garbage, Some(AT), "west", "east", &NONE),
            Verdict::Skip(_)
        ));
    }

    #[test]
    fn reads_past_broker_entry_metadata() {
        let inner = stored(|_| {});
        let mut e = vec![0x0e, 0x02, 0, 0, 0, 2, 0x08, 0x01];
        e.extend_from_slice(&inner);
        assert!(matches!(
            verdict(&Bytes::from(e), Some(AT), "west", "east", &NONE),
            Verdict::Send { .. }
        ));
    }
}
