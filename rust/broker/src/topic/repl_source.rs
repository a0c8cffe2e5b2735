//! Deduplication of replicated messages by their source position (Pulsar 4.0.4+, "repl dedup by
//! lid and eid"): a replicator that negotiated `supports_repl_dedup_by_lid_and_eid` tags each
//! entry it sends with the position it has in the source topic (the message property
//! [`SOURCE_POSITION_PROPERTY`], `"<ledgerId>:<entryId>"`), and the receiving broker keeps per
//! replicator producer the highest source position pushed and persisted, instead of the
//! original producer's sequence ids (which collide when two source producers share a name).
//!
//! This module holds the vocabulary: the position, its property, the names of the replicator
//! producers and the keys under which the watermarks are stored in the `pulsar.dedup` cursor's
//! properties (`<producer>_LID`, `<producer>_EID`, as Pulsar stores them).

use std::collections::HashMap;

use pulsar_rs_proto::pb::{KeyValue, MessageMetadata};

/// The message property carrying a replicated entry's position in the source topic (Pulsar's
/// `MSG_PROP_REPL_SOURCE_POSITION`).
pub const SOURCE_POSITION_PROPERTY: &str = "__MSG_PROP_REPL_SOURCE_POSITION";

/// The `highest_sequence_id` of the receipt for a replicated-subscription marker a replicator
/// sent, when receipts name source positions (Java's `Long.MIN_VALUE`).
pub const MARKER_RECEIPT: u64 = 1 << 63;

/// Suffix of the snapshot key holding a replicator producer's source ledger id.
const LEDGER_SUFFIX: &str = "_LID";
/// Suffix of the snapshot key holding a replicator producer's source entry id.
const ENTRY_SUFFIX: &str = "_EID";

/// A position in the source cluster's topic; ordered by ledger, then entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SourcePosition {
    /// The source entry's ledger id.
    pub ledger_id: i64,
    /// The source entry's id in its ledger.
    pub entry_id: i64,
}

impl SourcePosition {
    /// The property value, `"<ledgerId>:<entryId>"`.
    #[must_use]
    pub fn to_property(self) -> String {
        format!("{}:{}", self.ledger_id, self.entry_id)
    }

    /// Parses a property value; `None` unless it is two non-negative integers around a `:`.
    #[must_use]
    pub fn parse(value: &str) -> Option<SourcePosition> {
        let (ledger, entry) = value.split_once(':')?;
        let ledger_id: i64 = ledger.parse().ok()?;
        let entry_id: i64 = entry.parse().ok()?;
        (ledger_id >= 0 && entry_id >= 0).then_some(SourcePosition {
            ledger_id,
            entry_id,
        })
    }

    /// The position a message's metadata carries (its first [`SOURCE_POSITION_PROPERTY`]), if
    /// any and well formed.
    #[must_use]
    pub fn of(md: &MessageMetadata) -> Option<SourcePosition> {
        md.properties
            .iter()
            .find(|kv| kv.key == SOURCE_POSITION_PROPERTY)
            .and_then(|kv| Self::parse(&kv.value))
    }

    /// Sets the message's [`SOURCE_POSITION_PROPERTY`] to this position (replacing any).
    pub fn set_on(self, md: &mut MessageMetadata) {
        md.properties
            .retain(|kv| kv.key != SOURCE_POSITION_PROPERTY);
        md.properties.push(KeyValue {
            key: SOURCE_POSITION_PROPERTY.to_owned(),
            value: self.to_property(),
        });
    }
}

/// The name of the replicator producer `<prefix>.<from>--><to>` (Pulsar's
/// `getReplicatorName` + `-->` + the remote cluster).
#[must_use]
pub fn replicator_producer_name(prefix: &str, from: &str, to: &str) -> String {
    format!("{prefix}.{from}-->{to}")
}

/// The snapshot properties holding `producer`'s watermark `at`.
#[must_use]
pub fn snapshot_keys(producer: &str, at: SourcePosition) -> [(String, i64); 2] {
    [
        (format!("{producer}{LEDGER_SUFFIX}"), at.ledger_id),
        (format!("{producer}{ENTRY_SUFFIX}"), at.entry_id),
    ]
}

/// Splits a `pulsar.dedup` snapshot into the sequence-id map and the source-position watermarks
/// (keys of replicator producers, `<prefix>.…`, ending in `_LID`/`_EID`; a watermark missing
/// one of its halves is dropped).
#[must_use]
pub fn split_snapshot(
    props: impl IntoIterator<Item = (String, i64)>,
    prefix: &str,
) -> (HashMap<String, i64>, HashMap<String, SourcePosition>) {
    let mut sequences = HashMap::new();
    let mut halves: HashMap<String, (Option<i64>, Option<i64>)> = HashMap::new();
    let replicator = format!("{prefix}.");
    for (key, value) in props {
        if key.starts_with(&replicator) {
            if let Some(name) = key.strip_suffix(LEDGER_SUFFIX) {
                halves.entry(name.to_owned()).or_default().0 = Some(value);
                continue;
            }
            if let Some(name) = key.strip_suffix(ENTRY_SUFFIX) {
                halves.entry(name.to_owned()).or_default().1 = Some(value);
                continue;
            }
        }
        sequences.insert(key, value);
    }
    let positions = halves
        .into_iter()
        .filter_map(|(name, h)| match h {
            (Some(ledger_id), Some(entry_id)) => Some((
                name,
                SourcePosition {
                    ledger_id,
                    entry_id,
                },
            )),
            _ => None,
        })
        .collect();
    (sequences, positions)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_only_two_non_negative_integers() {
        let p = SourcePosition::parse("12:34").unwrap();
        assert_eq!((p.ledger_id, p.entry_id), (12, 34));
        assert_eq!(p.to_property(), "12:34");
        for bad in [
            "", "12", "12:", ":3", "1:2:3", "-1:2", "1:-2", "a:b", "1: 2",
        ] {
            assert_eq!(SourcePosition::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn orders_by_ledger_then_entry() {
        let at = |l, e| SourcePosition {
            ledger_id: l,
            entry_id: e,
        };
        assert!(at(1, 99) < at(2, 0));
        assert!(at(2, 0) < at(2, 1));
    }

    #[test]
    fn the_property_is_set_once() {
        let mut md = MessageMetadata::default();
        md.properties.push(KeyValue {
            key: SOURCE_POSITION_PROPERTY.into(),
            value: "9:9".into(),
        });
        let at = SourcePosition {
            ledger_id: 3,
            entry_id: 4,
        };
        at.set_on(&mut md);
        assert_eq!(md.properties.len(), 1);
        assert_eq!(SourcePosition::of(&md), Some(at));
    }

    #[test]
    fn snapshots_split_back_into_both_maps() {
        let name = replicator_producer_name("pulsar.repl", "east", "west");
        let at = SourcePosition {
            ledger_id: 7,
            entry_id: 8,
        };
        let mut props: Vec<(String, i64)> = snapshot_keys(&name, at).into();
        props.push(("p".into(), 5));
        // A normal producer whose name merely ends like a key stays a producer.
        props.push(("my_LID".into(), 1));
        // Half a watermark is no watermark.
        props.push(("pulsar.repl.north-->west_LID".into(), 1));
        let (seqs, positions) = split_snapshot(props, "pulsar.repl");
        assert_eq!(seqs.len(), 2);
        assert_eq!(seqs["p"], 5);
        assert_eq!(seqs["my_LID"], 1);
        assert_eq!(positions.len(), 1);
        assert_eq!(positions[&name], at);
    }
}
