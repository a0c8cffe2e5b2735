//! A range of a topic's stored entries as the messages a consumer would see: a batch's members
//! each on their own (compressed batches decompressed), a chunked message's chunks joined into
//! one message (with the last chunk's id, as Pulsar's `ChunkMessageIdImpl`), markers and the
//! messages of aborted transactions left out.
//!
//! A chunked message still missing chunks at the end of the range holds the range back: the
//! range ends before its first chunk, so the next commit reads it whole.

use std::collections::HashMap;

use bytes::{Bytes, BytesMut};
use pulsar_rs_broker::{entry_info, EntryInfo};
use pulsar_rs_ledger::{Entry, Position};
use pulsar_rs_proto::pb::{KeyValue, MessageMetadata};

/// One message, as a row.
#[derive(Clone, Debug, PartialEq)]
pub struct MessageRow {
    /// Its entry (the last chunk's for a chunked message).
    pub position: Position,
    /// Its index in its batch (-1 outside a batch).
    pub batch_index: i32,
    /// Publish time (ms).
    pub publish_time_ms: i64,
    /// Event time (ms), if set.
    pub event_time_ms: Option<i64>,
    /// `partition_key`.
    pub key: Option<String>,
    /// The ordering key.
    pub ordering_key: Option<Bytes>,
    /// Properties, in the producer's order.
    pub properties: Vec<(String, String)>,
    /// The producer's name.
    pub producer_name: String,
    /// The sequence id.
    pub sequence_id: i64,
    /// The schema version number (Pulsar's 8-byte big-endian version), if any.
    pub schema_version: Option<i64>,
    /// The payload (None for a message produced with a null value).
    pub value: Option<Bytes>,
}

/// A decoded range.
#[derive(Debug, Default)]
pub struct Decoded {
    /// The messages, in position order.
    pub rows: Vec<MessageRow>,
    /// The last position these rows account for (every entry up to it is decoded or skipped).
    pub through: Option<Position>,
    /// Entries whose bytes did not parse (skipped; logged by the caller).
    pub unreadable: u64,
}

fn properties(kv: &[KeyValue]) -> Vec<(String, String)> {
    kv.iter()
        .map(|p| (p.key.clone(), p.value.clone()))
        .collect()
}

fn schema_version(md: &MessageMetadata) -> Option<i64> {
    let v = md.schema_version.as_ref()?;
    let bytes: [u8; 8] = v.as_ref().try_into().ok()?;
    Some(i64::from_be_bytes(bytes))
}

/// A chunked message being joined.
struct Pending {
    first: Position,
    next_chunk: i32,
    bytes: BytesMut,
}

/// The message key a chunk belongs to (producer and uuid, as Pulsar's consumers join them).
fn chunk_key(md: &MessageMetadata) -> Option<(String, String)> {
    md.num_chunks_from_msg
        .filter(|&n| n > 1)
        .and(md.uuid.clone())
        .map(|u| (md.producer_name.clone(), u))
}

/// Decodes `entries` (consecutive, oldest first); `hides` says whether an entry is never
/// delivered (a marker, an aborted transaction's message).
#[must_use]
pub fn decode(entries: &[Entry], hides: &dyn Fn(&EntryInfo) -> bool) -> Decoded {
    let mut out = Decoded::default();
    let mut pending: HashMap<(String, String), Pending> = HashMap::new();
    let mut rows_at: Vec<(Position, usize)> = Vec::new();
    for e in entries {
        out.through = Some(e.position);
        let info = entry_info(&e.data);
        if info.marker.is_some() || hides(&info) {
            continue;
        }
        let Ok((md, payload)) = pulsar_rs_proto::parse_stored_entry(&e.data) else {
            out.unreadable += 1;
            continue;
        };
        rows_at.push((e.position, out.rows.len()));
        if let Some(key) = chunk_key(&md) {
            let chunk = md.chunk_id.unwrap_or(0);
            let last = md.num_chunks_from_msg.unwrap_or(1) - 1;
            if chunk == 0 {
                pending.insert(
                    key.clone(),
                    Pending {
                        first: e.position,
                        next_chunk: 0,
                        bytes: BytesMut::new(),
                    },
                );
            }
            // A chunk out of order (a producer's resend after a reconnect) restarts nothing:
            // Pulsar's consumer drops the message; so does the table.
            let Some(p) = pending.get_mut(&key).filter(|p| p.next_chunk == chunk) else {
                pending.remove(&key);
                continue;
            };
            p.bytes.extend_from_slice(&payload);
            p.next_chunk += 1;
            if chunk < last {
                continue;
            }
            let whole = pending
                .remove(&key)
                .map(|p| p.bytes.freeze())
                .unwrap_or_default();
            push_message(&mut out, e.position, &md, whole);
            continue;
        }
        push_message(&mut out, e.position, &md, payload);
    }
    // Chunked messages still incomplete: the range ends before the first of them.
    if let Some(first) = pending.values().map(|p| p.first).min() {
        let cut = rows_at
            .iter()
            .find(|(p, _)| *p >= first)
            .map_or(out.rows.len(), |(_, i)| *i);
        out.rows.truncate(cut);
        out.through = entries
            .iter()
            .map(|e| e.position)
            .take_while(|p| *p < first)
            .last();
    }
    out
}

/// Decompresses `payload` and adds its message (or a batch's messages) at `position`.
fn push_message(out: &mut Decoded, position: Position, md: &MessageMetadata, payload: Bytes) {
    let payload = match md.compression.filter(|&c| c != 0) {
        Some(codec) => match pulsar_rs_proto::compression::decompress(
            codec,
            &payload,
            md.uncompressed_size.unwrap_or(0) as usize,
        ) {
            Ok(p) => p,
            Err(_) => {
                out.unreadable += 1;
                return;
            }
        },
        None => payload,
    };
    let base = MessageRow {
        position,
        batch_index: -1,
        publish_time_ms: i64::try_from(md.publish_time).unwrap_or(i64::MAX),
        event_time_ms: md
            .event_time
            .filter(|&t| t > 0)
            .and_then(|t| i64::try_from(t).ok()),
        key: md.partition_key.clone(),
        ordering_key: md.ordering_key.clone(),
        properties: properties(&md.properties),
        producer_name: md.producer_name.clone(),
        sequence_id: i64::try_from(md.sequence_id).unwrap_or(i64::MAX),
        schema_version: schema_version(md),
        value: (!md.null_value.unwrap_or(false)).then_some(payload.clone()),
    };
    let Some(count) = md.num_messages_in_batch else {
        out.rows.push(base);
        return;
    };
    let Ok(members) = pulsar_rs_proto::batch::split_batch(payload, count) else {
        out.unreadable += 1;
        return;
    };
    for (i, m) in members.into_iter().enumerate() {
        let s = m.metadata;
        if s.compacted_out.unwrap_or(false) {
            continue;
        }
        let index = i32::try_from(i).unwrap_or(i32::MAX);
        out.rows.push(MessageRow {
            batch_index: index,
            event_time_ms: s
                .event_time
                .filter(|&t| t > 0)
                .and_then(|t| i64::try_from(t).ok()),
            key: s.partition_key.clone(),
            ordering_key: s.ordering_key.clone(),
            properties: properties(&s.properties),
            sequence_id: s
                .sequence_id
                .and_then(|v| i64::try_from(v).ok())
                .unwrap_or_else(|| base.sequence_id.saturating_add(i64::from(index))),
            value: (!s.null_value.unwrap_or(false)).then_some(m.body),
            ..base.clone()
        });
    }
}

#[cfg(test)]
mod tests {
    use bytes::{BufMut, BytesMut};
    use prost::Message;
    use pulsar_rs_proto::pb::SingleMessageMetadata;

    use super::*;

    fn md(seq: u64) -> MessageMetadata {
        MessageMetadata {
            producer_name: "p".into(),
            sequence_id: seq,
            publish_time: 1_700_000_000_000 + seq,
            ..MessageMetadata::default()
        }
    }

    fn entry(e: i64, md: &MessageMetadata, payload: &[u8]) -> Entry {
        Entry {
            position: Position::new(3, e),
            data: pulsar_rs_proto::build_stored_entry(md, payload),
        }
    }

    fn chunk(e: i64, uuid: &str, id: i32, of: i32, body: &[u8]) -> Entry {
        let mut m = md(9);
        m.uuid = Some(uuid.into());
        m.chunk_id = Some(id);
        m.num_chunks_from_msg = Some(of);
        m.partition_key = Some("big".into());
        entry(e, &m, body)
    }

    #[test]
    fn a_batch_is_a_row_per_member_and_chunks_join() {
        let mut batch = BytesMut::new();
        for (i, key) in ["a", "b"].iter().enumerate() {
            let smm = SingleMessageMetadata {
                partition_key: Some((*key).into()),
                payload_size: 2,
                sequence_id: Some(10 + i as u64),
                ..SingleMessageMetadata::default()
            };
            let bytes = smm.encode_to_vec();
            batch.put_u32(u32::try_from(bytes.len()).unwrap());
            batch.put_slice(&bytes);
            batch.put_slice(format!("v{i}").as_bytes());
        }
        let mut bm = md(10);
        bm.num_messages_in_batch = Some(2);
        let entries = vec![
            entry(0, &bm, &batch),
            chunk(1, "u", 0, 2, b"hello "),
            entry(2, &md(11), b"plain"),
            chunk(3, "u", 1, 2, b"world"),
        ];
        let d = decode(&entries, &|_| false);
        let got: Vec<_> = d
            .rows
            .iter()
            .map(|r| {
                (
                    r.position.entry_id,
                    r.batch_index,
                    r.key.clone(),
                    r.value.clone(),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (0, 0, Some("a".into()), Some(Bytes::from_static(b"v0"))),
                (0, 1, Some("b".into()), Some(Bytes::from_static(b"v1"))),
                (2, -1, None, Some(Bytes::from_static(b"plain"))),
                (
                    3,
                    -1,
                    Some("big".into()),
                    Some(Bytes::from_static(b"hello world"))
                ),
            ]
        );
        assert_eq!(d.rows[1].sequence_id, 11);
        assert_eq!(d.through, Some(Position::new(3, 3)));
    }

    #[test]
    fn an_incomplete_chunked_message_holds_the_range_back() {
        let entries = vec![
            entry(0, &md(1), b"one"),
            chunk(1, "u", 0, 2, b"half"),
            entry(2, &md(2), b"two"),
        ];
        let d = decode(&entries, &|_| false);
        // The next commit starts at the first chunk: "two" is not committed twice.
        assert_eq!(d.rows.len(), 1);
        assert_eq!(d.through, Some(Position::new(3, 0)));
    }

    #[test]
    fn hidden_entries_are_skipped_but_passed() {
        let entries = vec![entry(0, &md(1), b"aborted"), entry(1, &md(2), b"kept")];
        let d = decode(&entries, &|info: &EntryInfo| {
            info.messages == 1 && info.key.is_none()
        });
        assert!(d.rows.is_empty());
        // The range is accounted for: the next commit starts after it.
        assert_eq!(d.through, Some(Position::new(3, 1)));
    }
}
