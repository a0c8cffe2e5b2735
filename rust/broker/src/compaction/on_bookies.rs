//! The compacted ledger of a topic kept on BookKeeper, as Apache Pulsar's compactor writes it, so
//! that Pulsar's brokers and ours serve each other's compacted views.
//!
//! One BookKeeper ledger per run (CRC32 digest, empty password, the custom metadata of Pulsar's
//! `LedgerMetadataUtils.buildMetadataForCompactedLedger`), named by the `CompactedTopicLedger`
//! property of the `__compaction` cursor, whose mark-delete position is the horizon. Each entry is
//! one kept message in Pulsar's `RawMessage` form:
//!
//! ```text
//! u32 idSize | MessageIdData (idSize bytes) | u32 size | the topic's stored entry (size bytes)
//! ```
//!
//! (big-endian). Entries are in position order, so a read from a position is a binary search over
//! the positions, which are read once when the ledger is opened.

use std::sync::Arc;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use prost::Message;
use pulsar_rs_ledger::seam::{ReadLedger, SeamBacking};
use pulsar_rs_ledger::{Entry, LedgerError, Position};
use pulsar_rs_proto::MessageIdData;

use crate::error::BrokerError;

/// Entries read from the bookies per request when a ledger is indexed or scanned.
const READ_CHUNK: i64 = 256;

/// A compacted ledger on the bookies, open for reading.
pub struct BookieLedger {
    /// The ledger, open without recovery (it was closed by its writer); immutable.
    reader: Arc<dyn ReadLedger>,
    /// The client runtime the reads run on; shared.
    backing: Arc<SeamBacking>,
    /// The topic position of each entry, by entry id (in order).
    pub(super) positions: Vec<Position>,
}

impl std::fmt::Debug for BookieLedger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BookieLedger")
            .field("ledger_id", &self.reader.id())
            .field("entries", &self.positions.len())
            .finish_non_exhaustive()
    }
}

fn corrupt(ledger_id: i64, reason: impl Into<String>) -> BrokerError {
    BrokerError::Ledger(LedgerError::CorruptMetadata {
        key: format!("compacted ledger {ledger_id}"),
        reason: reason.into(),
    })
}

/// `RawMessage.serialize`: the message id, then the stored entry.
#[must_use]
pub fn encode_raw_message(position: Position, entry: &[u8]) -> Bytes {
    #[allow(clippy::cast_sign_loss)] // positions of stored entries are never negative
    let id = MessageIdData {
        ledger_id: position.ledger_id as u64,
        entry_id: position.entry_id as u64,
        ..MessageIdData::default()
    };
    let id_len = id.encoded_len();
    let mut b = BytesMut::with_capacity(8 + id_len + entry.len());
    b.put_u32(u32::try_from(id_len).unwrap_or(u32::MAX));
    id.encode(&mut b).unwrap_or_default(); // the buffer has room: it cannot fail
    b.put_u32(u32::try_from(entry.len()).unwrap_or(u32::MAX));
    b.put_slice(entry);
    b.freeze()
}

/// `RawMessage.deserializeFrom`: the message id and the stored entry.
///
/// # Errors
/// A malformed entry.
pub fn decode_raw_message(ledger_id: i64, mut raw: Bytes) -> Result<Entry, BrokerError> {
    let short = || corrupt(ledger_id, "truncated RawMessage");
    if raw.len() < 4 {
        return Err(short());
    }
    let id_len = raw.get_u32() as usize;
    if raw.len() < id_len + 4 {
        return Err(short());
    }
    let id = MessageIdData::decode(raw.split_to(id_len))
        .map_err(|e| corrupt(ledger_id, format!("message id: {e}")))?;
    let size = raw.get_u32() as usize;
    if raw.len() < size {
        return Err(short());
    }
    #[allow(clippy::cast_possible_wrap)] // the positions of a topic's entries fit in i64
    Ok(Entry {
        position: Position::new(id.ledger_id as i64, id.entry_id as i64),
        data: raw.split_to(size),
    })
}

/// Writes a compacted ledger of `entries` (in position order) for `topic` up to `horizon` and
/// closes it; returns its id, the ledger opened and its size in bytes. Blocking.
///
/// # Errors
/// Bookie or metadata failures (a ledger created and not finished is deleted).
pub fn write(
    backing: &Arc<SeamBacking>,
    topic: &str,
    horizon: Position,
    entries: Vec<Entry>,
) -> Result<(i64, BookieLedger, u64), BrokerError> {
    #[allow(clippy::cast_sign_loss)]
    let compacted_to = MessageIdData {
        ledger_id: horizon.ledger_id as u64,
        entry_id: horizon.entry_id as u64,
        ..MessageIdData::default()
    }
    .encode_to_vec();
    let ledgers = Arc::clone(&backing.ledgers);
    let topic = topic.to_owned();
    let positions: Vec<Position> = entries.iter().map(|e| e.position).collect();
    let (id, size) = backing.block(async move {
        let w = ledgers
            .create_compacted_ledger(&topic, compacted_to)
            .await?;
        let mut size = 0u64;
        let mut written = Ok(());
        // Appends are pipelined; their outcomes are checked in order.
        let mut pending = Vec::with_capacity(entries.len());
        for e in &entries {
            let raw = encode_raw_message(e.position, &e.data);
            size += raw.len() as u64;
            pending.push(w.append(raw));
        }
        for p in pending {
            if let Err(e) = p.await {
                written = Err(e);
                break;
            }
        }
        let closed = match written {
            Ok(()) => w.close().await,
            Err(e) => Err(e),
        };
        if let Err(e) = closed {
            let _ = ledgers.delete_ledger(w.id()).await;
            return Err(e);
        }
        Ok((w.id(), size))
    })?;
    let reader = open_reader(backing, id)?;
    Ok((
        id,
        BookieLedger {
            reader,
            backing: Arc::clone(backing),
            positions,
        },
        size,
    ))
}

fn open_reader(backing: &Arc<SeamBacking>, id: i64) -> Result<Arc<dyn ReadLedger>, BrokerError> {
    let ledgers = Arc::clone(&backing.ledgers);
    Ok(backing.block(async move { ledgers.open_ledger(id, false).await })?)
}

/// Opens compacted ledger `id` and reads the position of every entry (whoever wrote it, Pulsar
/// or us); returns it and its size in bytes. Blocking.
///
/// # Errors
/// A missing ledger, bookie failures, a malformed entry or entries out of order.
pub fn open(backing: &Arc<SeamBacking>, id: i64) -> Result<(BookieLedger, u64), BrokerError> {
    let reader = open_reader(backing, id)?;
    let last = reader.last_entry_id().unwrap_or(-1);
    let mut positions = Vec::new();
    let mut size = 0u64;
    let mut first = 0;
    while first <= last {
        let upto = (first + READ_CHUNK - 1).min(last);
        let r = Arc::clone(&reader);
        let chunk = backing.block(async move { r.read(first, upto).await })?;
        for raw in chunk {
            size += raw.len() as u64;
            let e = decode_raw_message(id, raw)?;
            if positions.last().is_some_and(|p| *p >= e.position) {
                return Err(corrupt(
                    id,
                    format!("entries out of order at {}", e.position),
                ));
            }
            positions.push(e.position);
        }
        first = upto + 1;
    }
    Ok((
        BookieLedger {
            reader,
            backing: Arc::clone(backing),
            positions,
        },
        size,
    ))
}

/// Deletes a compacted ledger a newer one replaced (in the background).
pub fn delete(backing: &Arc<SeamBacking>, id: i64) {
    let ledgers = Arc::clone(&backing.ledgers);
    backing.spawn(async move {
        if let Err(e) = ledgers.delete_ledger(id).await {
            tracing::warn!(ledger_id = id, error = %e, "deleting an old compacted ledger failed");
        }
    });
}

impl BookieLedger {
    /// Deletes this ledger from the bookies (in the background): a newer one replaced it.
    pub fn delete(&self) {
        delete(&self.backing, self.reader.id());
    }

    /// Reads up to `n` entries at or after `from`. Blocking.
    ///
    /// # Errors
    /// Bookie failures, a malformed entry.
    pub fn read_from(&self, from: Position, n: usize) -> Result<Vec<Entry>, BrokerError> {
        let start = self.positions.partition_point(|p| *p < from);
        let stop = self.positions.len().min(start.saturating_add(n));
        if start >= stop {
            return Ok(Vec::new());
        }
        let id = self.reader.id();
        let mut out = Vec::with_capacity(stop - start);
        let mut first = i64::try_from(start).unwrap_or(i64::MAX);
        let last = i64::try_from(stop).unwrap_or(i64::MAX) - 1;
        while first <= last {
            let upto = (first + READ_CHUNK - 1).min(last);
            let r = Arc::clone(&self.reader);
            let chunk = self
                .backing
                .block(async move { r.read(first, upto).await })?;
            for raw in chunk {
                out.push(decode_raw_message(id, raw)?);
            }
            first = upto + 1;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_raw_message_round_trips_in_pulsars_layout() {
        let raw = encode_raw_message(Position::new(12, 7), b"stored entry");
        // idSize, then MessageIdData {1: 12, 2: 7} (0x08 0x0c 0x10 0x07), then size and entry.
        assert_eq!(&raw[..12], &[0, 0, 0, 4, 0x08, 12, 0x10, 7, 0, 0, 0, 12]);
        let e = decode_raw_message(1, raw).unwrap();
        assert_eq!(e.position, Position::new(12, 7));
        assert_eq!(&e.data[..], b"stored entry");
        assert!(decode_raw_message(1, Bytes::from_static(&[0, 0, 0, 9, 8])).is_err());
    }
}
