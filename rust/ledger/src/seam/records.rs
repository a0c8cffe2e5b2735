//! The managed ledger's and cursors' state in Pulsar's records ([`super::formats`]), for a
//! [`crate::ManagedLedger`] kept on a [`super::SeamBacking`]: its ledger list as Pulsar's
//! `ManagedLedgerInfo` and each durable cursor as `ManagedCursorInfo` (mark-delete, individually
//! deleted ranges, batch-index deletion sets, properties), so a Pulsar broker reads what we wrote.

use std::collections::BTreeMap;

use prost::Message;

use super::formats::{
    KeyValue, LedgerInfo as PbLedgerInfo, LongListMap, LongProperty, ManagedCursorInfo,
    ManagedLedgerInfo, MessageRange, NestedPositionInfo, OffloadContext as PbOffloadContext,
    OffloadDriverMetadata, PositionInfo,
};
use crate::{AckSet, CursorSnapshot, LedgerError, LedgerInfo, OffloadContext, Position, Result};

/// `BatchedEntryDeletionIndexInfo`: an entry's batch indexes still unacknowledged (a bit set as
/// `long`s, as Java's `BitSet.toLongArray`).
#[derive(Clone, PartialEq, Eq, prost::Message)]
struct BatchedEntryDeletionIndexInfo {
    #[prost(message, required, tag = "1")]
    position: NestedPositionInfo,
    #[prost(int64, repeated, packed = "false", tag = "2")]
    delete_set: Vec<i64>,
}

fn nested(p: Position) -> NestedPositionInfo {
    NestedPositionInfo {
        ledger_id: p.ledger_id,
        entry_id: p.entry_id,
    }
}

/// Pulsar's `OffloadContext` of a ledger's offload record.
#[must_use]
#[allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap)]
pub fn encode_offload_context(c: &OffloadContext) -> PbOffloadContext {
    PbOffloadContext {
        uid_msb: Some((c.uid >> 64) as u64 as i64),
        uid_lsb: Some(c.uid as u64 as i64),
        complete: Some(c.complete),
        bookkeeper_deleted: Some(c.bookkeeper_deleted),
        timestamp: Some(c.timestamp_ms as i64),
        driver_metadata: Some(OffloadDriverMetadata {
            name: c.driver_name.clone(),
            properties: c
                .driver_metadata
                .iter()
                .map(|(k, v)| KeyValue {
                    key: k.clone(),
                    value: v.clone(),
                })
                .collect(),
        }),
        offload_segment: Vec::new(),
    }
}

/// A ledger's offload record as Pulsar or we wrote it; `None` without a uid (nothing was
/// prepared).
#[must_use]
#[allow(clippy::cast_sign_loss)]
pub fn decode_offload_context(c: &PbOffloadContext) -> Option<OffloadContext> {
    let (msb, lsb) = (c.uid_msb?, c.uid_lsb?);
    let dm = c.driver_metadata.clone();
    Some(OffloadContext {
        uid: (u128::from(msb as u64) << 64) | u128::from(lsb as u64),
        complete: c.complete.unwrap_or(false),
        bookkeeper_deleted: c.bookkeeper_deleted.unwrap_or(false),
        timestamp_ms: c.timestamp.unwrap_or(0).max(0) as u64,
        driver_name: dm.as_ref().map(|d| d.name.clone()).unwrap_or_default(),
        driver_metadata: dm
            .map(|d| {
                d.properties
                    .into_iter()
                    .map(|kv| (kv.key, kv.value))
                    .collect()
            })
            .unwrap_or_default(),
    })
}

fn corrupt(path: &str, e: &prost::DecodeError) -> LedgerError {
    LedgerError::CorruptMetadata {
        key: path.to_owned(),
        reason: e.to_string(),
    }
}

/// A managed ledger's list and properties as Pulsar writes them. A closed ledger carries its
/// entries, size and close time; the open one only its id (and timestamp 0), as Pulsar's
/// `ManagedLedgerImpl` records a ledger it just created. A terminated managed ledger carries
/// the position it was terminated at (`terminatedPosition`).
#[must_use]
pub fn encode_ledger_list(
    ledgers: &[LedgerInfo],
    properties: &BTreeMap<String, String>,
    terminated: Option<Position>,
) -> Vec<u8> {
    #[allow(clippy::cast_possible_wrap)]
    let ledger_info = ledgers
        .iter()
        .map(|l| match l.closed_ms {
            Some(closed) => PbLedgerInfo {
                ledger_id: l.ledger_id,
                entries: Some(l.entries as i64),
                size: Some(l.size as i64),
                timestamp: Some(closed as i64),
                offload_context: l.offload.as_ref().map(encode_offload_context),
            },
            None => PbLedgerInfo {
                ledger_id: l.ledger_id,
                entries: None,
                size: None,
                timestamp: Some(0),
                offload_context: None,
            },
        })
        .collect();
    ManagedLedgerInfo {
        ledger_info,
        terminated_position: terminated.map(nested),
        properties: properties
            .iter()
            .map(|(k, v)| KeyValue {
                key: k.clone(),
                value: v.clone(),
            })
            .collect(),
    }
    .encode_to_vec()
}

/// A ledger list as read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerList {
    /// Every ledger, oldest first.
    pub ledgers: Vec<LedgerInfo>,
    /// The managed ledger's properties.
    pub properties: BTreeMap<String, String>,
    /// Where the managed ledger was terminated, if it was.
    pub terminated: Option<Position>,
}

/// Reads a ledger list Pulsar or we wrote. A ledger without an entry count is open (its writer
/// may still be adding): `closed_ms` is `None`, and the caller recovers it.
///
/// # Errors
/// [`LedgerError::CorruptMetadata`] naming `path`.
pub fn decode_ledger_list(path: &str, raw: &[u8], now_ms: u64) -> Result<LedgerList> {
    let info = ManagedLedgerInfo::decode(raw).map_err(|e| corrupt(path, &e))?;
    #[allow(clippy::cast_sign_loss)]
    let ledgers = info
        .ledger_info
        .into_iter()
        .map(|l| LedgerInfo {
            ledger_id: l.ledger_id,
            entries: l.entries.unwrap_or(0).max(0) as u64,
            size: l.size.unwrap_or(0).max(0) as u64,
            created_ms: now_ms,
            closed_ms: l.entries.map(|_| l.timestamp.unwrap_or(0).max(0) as u64),
            offload: l.offload_context.as_ref().and_then(decode_offload_context),
        })
        .collect();
    let properties = info
        .properties
        .into_iter()
        .map(|kv| (kv.key, kv.value))
        .collect();
    let terminated = info
        .terminated_position
        .map(|p| Position::new(p.ledger_id, p.entry_id));
    Ok(LedgerList {
        ledgers,
        properties,
        terminated,
    })
}

/// A durable cursor's state as Pulsar's `ManagedCursorInfo`, kept in the record itself
/// (`cursorsLedgerId = -1`, as Pulsar leaves it after a clean close) rather than in a cursor
/// ledger. Every acknowledged range is written (Pulsar stops at
/// `managedLedgerMaxUnackedRangesToPersist`).
#[must_use]
pub fn encode_cursor(s: &CursorSnapshot, now_ms: u64) -> Vec<u8> {
    #[allow(clippy::cast_possible_wrap)]
    ManagedCursorInfo {
        cursors_ledger_id: -1,
        mark_delete_ledger_id: Some(s.mark_delete.ledger_id),
        mark_delete_entry_id: Some(s.mark_delete.entry_id),
        individual_deleted_messages: s
            .acked
            .iter()
            .map(|(ledger, first, last)| MessageRange {
                lower_endpoint: nested(Position::new(ledger, first - 1)),
                upper_endpoint: nested(Position::new(ledger, last)),
            })
            .collect(),
        properties: s
            .properties
            .iter()
            .map(|(name, value)| LongProperty {
                name: name.clone(),
                value: *value,
            })
            .collect(),
        last_active: Some(now_ms as i64),
        batched_entry_deletion_index_info: s
            .batch_acks
            .iter()
            .map(|(p, words)| {
                BatchedEntryDeletionIndexInfo {
                    position: nested(*p),
                    delete_set: words.iter().map(|w| *w as i64).collect(),
                }
                .encode_to_vec()
            })
            .collect(),
        cursor_properties: Vec::new(),
    }
    .encode_to_vec()
}

/// Reads a cursor record: its own state, and the cursor ledger Pulsar keeps the newer state in
/// (`cursorsLedgerId >= 0`), whose last entry the caller reads; the record's own state is what
/// Pulsar rolls back to when that ledger holds no entry.
///
/// # Errors
/// [`LedgerError::CorruptMetadata`] naming `path`.
pub fn decode_cursor(path: &str, raw: &[u8]) -> Result<(CursorSnapshot, Option<i64>)> {
    let info = ManagedCursorInfo::decode(raw).map_err(|e| corrupt(path, &e))?;
    let cursor_ledger = (info.cursors_ledger_id >= 0).then_some(info.cursors_ledger_id);
    let mut s = CursorSnapshot {
        mark_delete: Position::new(
            info.mark_delete_ledger_id.unwrap_or(-1),
            info.mark_delete_entry_id.unwrap_or(-1),
        ),
        ..Default::default()
    };
    add_ranges(&mut s.acked, &info.individual_deleted_messages);
    s.properties = info
        .properties
        .into_iter()
        .map(|p| (p.name, p.value))
        .collect();
    for raw in &info.batched_entry_deletion_index_info {
        let b = BatchedEntryDeletionIndexInfo::decode(&raw[..]).map_err(|e| corrupt(path, &e))?;
        #[allow(clippy::cast_sign_loss)]
        s.batch_acks.insert(
            Position::new(b.position.ledger_id, b.position.entry_id),
            b.delete_set.iter().map(|w| *w as u64).collect(),
        );
    }
    Ok((s, cursor_ledger))
}

/// The cursor state Pulsar left in the last entry of a cursor ledger (`PositionInfo`).
///
/// # Errors
/// [`LedgerError::CorruptMetadata`] naming `path`.
pub fn decode_position_info(path: &str, raw: &[u8]) -> Result<CursorSnapshot> {
    let info = PositionInfo::decode(raw).map_err(|e| corrupt(path, &e))?;
    let mut s = CursorSnapshot {
        mark_delete: Position::new(info.ledger_id, info.entry_id),
        ..Default::default()
    };
    add_ranges(&mut s.acked, &info.individual_deleted_messages);
    add_long_arrays(&mut s.acked, &info.individual_deleted_message_ranges);
    Ok(s)
}

/// Pulsar's long-array acknowledgements (`managedLedgerPersistIndividualAckAsLongArray`, its
/// `OpenLongPairRangeSet.build`): bit `i` of a ledger's set is entry `i` acknowledged; each run
/// of set bits goes in as one range.
#[allow(clippy::cast_sign_loss, clippy::cast_possible_wrap)]
fn add_long_arrays(acked: &mut AckSet, maps: &[LongListMap]) {
    for m in maps {
        let mut run: Option<(i64, i64)> = None;
        let bits = m.values.iter().enumerate().flat_map(|(w, word)| {
            let word = *word as u64;
            (0..64usize)
                .filter(move |b| (word >> b) & 1 == 1)
                .map(move |b| (w * 64 + b) as i64)
        });
        for entry in bits {
            run = match run {
                Some((from, to)) if to + 1 == entry => Some((from, entry)),
                Some((from, to)) => {
                    acked.insert_range(m.key, from, to);
                    Some((entry, entry))
                }
                None => Some((entry, entry)),
            };
        }
        if let Some((from, to)) = run {
            acked.insert_range(m.key, from, to);
        }
    }
}

/// Pulsar's open-closed ranges `(lower, upper]`, each within one ledger.
fn add_ranges(acked: &mut AckSet, ranges: &[MessageRange]) {
    for r in ranges {
        let (lo, hi) = (r.lower_endpoint, r.upper_endpoint);
        if lo.ledger_id == hi.ledger_id && hi.entry_id > lo.entry_id {
            acked.insert_range(lo.ledger_id, lo.entry_id + 1, hi.entry_id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ledger_list_round_trips_with_the_open_ledger_bare() {
        let ledgers = vec![
            LedgerInfo {
                ledger_id: 3,
                entries: 10,
                size: 1000,
                created_ms: 5,
                closed_ms: Some(77),
                offload: None,
            },
            LedgerInfo {
                ledger_id: 9,
                entries: 0,
                size: 0,
                created_ms: 5,
                closed_ms: None,
                offload: None,
            },
        ];
        let props: BTreeMap<String, String> = [("a".to_string(), "b".to_string())].into();
        let raw = encode_ledger_list(&ledgers, &props, None);
        let pb = ManagedLedgerInfo::decode(&raw[..]).unwrap();
        assert_eq!(
            pb.ledger_info[1].entries, None,
            "Pulsar's open ledger has no count"
        );
        assert_eq!(pb.terminated_position, None);
        let back = decode_ledger_list("/x", &raw, 5).unwrap();
        assert_eq!(back.ledgers, ledgers);
        assert_eq!(back.properties, props);
        assert_eq!(back.terminated, None);
        let raw = encode_ledger_list(&ledgers, &props, Some(Position::new(9, -1)));
        let pb = ManagedLedgerInfo::decode(&raw[..]).unwrap();
        assert_eq!(
            pb.terminated_position,
            Some(NestedPositionInfo {
                ledger_id: 9,
                entry_id: -1
            })
        );
        let back = decode_ledger_list("/x", &raw, 5).unwrap();
        assert_eq!(back.terminated, Some(Position::new(9, -1)));
    }

    #[test]
    fn a_cursor_ledger_entry_in_pulsar_4_1s_long_array_format_keeps_its_acks() {
        // `managedLedgerPersistIndividualAckAsLongArray=true`: ledger 7 with entries 4, 5, 7
        // and 64 acknowledged (bit i = entry i), nothing in the ranges field.
        let info = PositionInfo {
            ledger_id: 7,
            entry_id: 2,
            individual_deleted_messages: vec![],
            individual_deleted_message_ranges: vec![LongListMap {
                key: 7,
                values: vec![0b1011_0000, 1],
            }],
        };
        let s = decode_position_info("c", &info.encode_to_vec()).unwrap();
        assert_eq!(s.mark_delete, Position::new(7, 2));
        for e in [4, 5, 7, 64] {
            assert!(s.acked.contains(Position::new(7, e)), "entry {e}");
        }
        for e in [3, 6, 8, 63, 65] {
            assert!(!s.acked.contains(Position::new(7, e)), "entry {e}");
        }
    }

    #[test]
    fn cursor_round_trips_ranges_batches_and_properties() {
        let mut s = CursorSnapshot {
            mark_delete: Position::new(3, 4),
            ..Default::default()
        };
        s.acked.insert_range(3, 6, 8);
        s.acked.insert(Position::new(5, 0));
        s.batch_acks
            .insert(Position::new(3, 5), vec![0b1010, u64::MAX]);
        s.properties.insert("p".into(), -7);
        let raw = encode_cursor(&s, 1);
        let pb = ManagedCursorInfo::decode(&raw[..]).unwrap();
        assert_eq!(pb.cursors_ledger_id, -1);
        assert_eq!(
            (
                pb.individual_deleted_messages[0].lower_endpoint.entry_id,
                pb.individual_deleted_messages[0].upper_endpoint.entry_id
            ),
            (5, 8),
            "Pulsar's ranges are open-closed"
        );
        assert_eq!(decode_cursor("/c", &raw).unwrap(), (s, None));
        assert!(decode_cursor("/c", b"\xff\xff").is_err());
    }
}
