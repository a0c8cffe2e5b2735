//! The two-phase compactor (Pulsar's `AbstractTwoPhaseCompactor` / `PublishingOrderCompactor`),
//! without I/O: phase one [`KeyMap::observe`]s every entry up to the horizon and keeps, per key,
//! the id of its latest message; phase two [`KeyMap::rewrite`]s the same entries again and keeps
//! only the winners.
//!
//! * The key is the message's `partition_key` only (Pulsar's `extractKeyAndSize`).
//! * A keyed message is a tombstone, removing its key from the compacted view, when it is a null
//!   value (`null_value`, set by every official client for a null value) or its size is 0.
//!   Its size is Pulsar's: the metadata's `uncompressed_size` when present, else the bytes of the
//!   whole stored message, never 0 (`extractKeyAndSize` measures the headers and payload). So a
//!   null value of the Java and Go clients (empty, `uncompressed_size` 0) deletes its key, while an
//!   empty payload of the C++-based clients, which leave `uncompressed_size` out, is a value.
//! * Messages without a key are dropped unless `topicCompactionRetainNullKey`.
//! * Server-only markers are dropped.
//! * Batches are looked at message by message (a compressed batch is decompressed first, as
//!   Pulsar's `RawBatchConverter` does); a batch whose members all lose is dropped, one whose
//!   members all win is kept unchanged, and otherwise it is rebuilt with only the winning
//!   members, compressed again with its own codec. A compressed batch that does not decode is
//!   kept whole (and logged): the compactor never drops what it cannot read.

use std::collections::HashMap;

use bytes::{BufMut, Bytes, BytesMut};
use prost::Message as _;
use pulsar_rs_ledger::{Entry, Position};
use pulsar_rs_proto::pb;

/// One message of an entry: its batch index (−1 if not batched), key and payload size.
struct Member {
    index: i32,
    key: Option<String>,
    size: usize,
    /// The member's single-message metadata and payload (batches only).
    parts: Option<(pb::SingleMessageMetadata, Bytes)>,
}

/// What an entry holds, for the compactor.
enum Parsed {
    /// A marker, or bytes that do not parse: never part of the compacted view.
    Skip,
    /// A compressed batch that does not decode (with its message count): kept whole.
    Opaque(u64),
    /// Its messages.
    Messages(Box<pb::MessageMetadata>, Vec<Member>),
}

/// The members of a batch (proto's decoder), or `None` when it does not decode.
fn split_batch(md: &pb::MessageMetadata, payload: Bytes) -> Option<Vec<Member>> {
    let members =
        pulsar_rs_proto::split_batch(payload, md.num_messages_in_batch.unwrap_or(1)).ok()?;
    Some(
        members
            .into_iter()
            .zip(0..)
            .map(|(m, index)| Member {
                index,
                key: m.metadata.partition_key.clone(),
                size: m.body.len(),
                parts: Some((m.metadata, m.body)),
            })
            .collect(),
    )
}

fn parse(e: &Entry) -> Parsed {
    let Ok((md, payload)) = pulsar_rs_proto::parse_stored_entry(&e.data) else {
        return Parsed::Skip;
    };
    if md.marker_type.is_some() {
        return Parsed::Skip;
    }
    if md.num_messages_in_batch.is_none() {
        // A null value (`send(None)`, `value(null)`) deletes its key whatever sizes it carries.
        let size = if md.null_value == Some(true) {
            0
        } else {
            md.uncompressed_size.map_or(e.data.len(), |s| s as usize)
        };
        let key = md.partition_key.clone();
        return Parsed::Messages(
            Box::new(md),
            vec![Member {
                index: -1,
                key,
                size,
                parts: None,
            }],
        );
    }
    let codec = md.compression.unwrap_or(0);
    let payload = if codec == pb::CompressionType::None as i32 {
        payload
    } else {
        let size = md.uncompressed_size.map_or(0, |s| s as usize);
        match pulsar_rs_proto::compression::decompress(codec, &payload, size) {
            Ok(raw) => raw,
            Err(error) => {
                tracing::warn!(position = %e.position, %error, "compaction keeps an undecodable compressed batch whole");
                return Parsed::Opaque(
                    u64::try_from(md.num_messages_in_batch.unwrap_or(1)).unwrap_or(1),
                );
            }
        }
    };
    match split_batch(&md, payload) {
        Some(members) => Parsed::Messages(Box::new(md), members),
        None => Parsed::Skip,
    }
}

/// Key → id of its latest message, built by phase one.
#[derive(Default)]
pub struct KeyMap {
    /// Key → (entry, batch index) of the latest value.
    latest: HashMap<String, (Position, i32)>,
    /// Keep messages without a key (`topicCompactionRetainNullKey`).
    retain_null_key: bool,
    /// Messages seen by phase one.
    pub messages_read: u64,
    /// Messages phase two kept.
    pub messages_kept: u64,
}

impl KeyMap {
    /// An empty map.
    #[must_use]
    pub fn new(retain_null_key: bool) -> Self {
        KeyMap {
            latest: HashMap::new(),
            retain_null_key,
            messages_read: 0,
            messages_kept: 0,
        }
    }

    /// Keys that have a value.
    #[must_use]
    pub fn keys(&self) -> usize {
        self.latest.len()
    }

    /// Phase one: records the messages of one entry (entries are given in position order).
    pub fn observe(&mut self, e: &Entry) {
        let Parsed::Messages(_, members) = parse(e) else {
            return;
        };
        for m in members {
            self.messages_read += 1;
            let Some(key) = m.key else { continue };
            if m.size == 0 {
                self.latest.remove(&key);
            } else {
                self.latest.insert(key, (e.position, m.index));
            }
        }
    }

    fn wins(&self, position: Position, m: &Member) -> bool {
        match &m.key {
            Some(k) => self.latest.get(k) == Some(&(position, m.index)),
            None => self.retain_null_key && m.size > 0,
        }
    }

    /// Phase two: what of `e` goes into the compacted ledger, if anything.
    #[must_use]
    pub fn rewrite(&mut self, e: Entry) -> Option<Entry> {
        let (mut md, members) = match parse(&e) {
            Parsed::Skip => return None,
            Parsed::Opaque(n) => {
                self.messages_kept += n;
                return Some(e);
            }
            Parsed::Messages(md, members) => (md, members),
        };
        let total = members.len();
        let winners: Vec<Member> = members
            .into_iter()
            .filter(|m| self.wins(e.position, m))
            .collect();
        if winners.is_empty() {
            return None;
        }
        self.messages_kept += winners.len() as u64;
        if winners.len() == total {
            return Some(e);
        }
        let mut payload = BytesMut::new();
        for m in &winners {
            let Some((smm, body)) = &m.parts else {
                return Some(e);
            };
            let raw = smm.encode_to_vec();
            payload.put_u32(u32::try_from(raw.len()).unwrap_or(u32::MAX));
            payload.put_slice(&raw);
            payload.put_slice(body);
        }
        md.num_messages_in_batch = Some(i32::try_from(winners.len()).unwrap_or(i32::MAX));
        md.uncompressed_size = Some(u32::try_from(payload.len()).unwrap_or(u32::MAX));
        let codec = md.compression.unwrap_or(0);
        let body = match pulsar_rs_proto::compression::compress(codec, &payload) {
            Ok(b) => b,
            Err(error) => {
                // Only an unknown codec fails, and such a batch never decoded: keep it whole.
                tracing::warn!(position = %e.position, %error, "compaction keeps a batch whole");
                return Some(e);
            }
        };
        Some(Entry {
            position: e.position,
            data: pulsar_rs_proto::build_stored_entry(&md, &body),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A message as the Java and Go clients send it (`uncompressed_size` set: an empty value is a
    /// null value).
    fn message(l: i64, e: i64, key: Option<&str>, value: &[u8]) -> Entry {
        let md = pb::MessageMetadata {
            producer_name: "p".into(),
            sequence_id: u64::try_from(e).unwrap(),
            publish_time: 1,
            partition_key: key.map(str::to_owned),
            uncompressed_size: Some(u32::try_from(value.len()).unwrap()),
            ..Default::default()
        };
        Entry {
            position: Position::new(l, e),
            data: pulsar_rs_proto::build_stored_entry(&md, value),
        }
    }

    fn batch(l: i64, e: i64, members: &[(Option<&str>, &[u8])]) -> Entry {
        compressed_batch(l, e, members, pb::CompressionType::None)
    }

    fn compressed_batch(
        l: i64,
        e: i64,
        members: &[(Option<&str>, &[u8])],
        codec: pb::CompressionType,
    ) -> Entry {
        let mut payload = BytesMut::new();
        for (k, v) in members {
            let smm = pb::SingleMessageMetadata {
                partition_key: k.map(str::to_owned),
                payload_size: i32::try_from(v.len()).unwrap(),
                ..Default::default()
            };
            let raw = smm.encode_to_vec();
            payload.put_u32(u32::try_from(raw.len()).unwrap());
            payload.put_slice(&raw);
            payload.put_slice(v);
        }
        let compressed = codec != pb::CompressionType::None;
        let md = pb::MessageMetadata {
            producer_name: "p".into(),
            sequence_id: 0,
            publish_time: 1,
            num_messages_in_batch: Some(i32::try_from(members.len()).unwrap()),
            compression: compressed.then_some(codec as i32),
            uncompressed_size: compressed.then(|| u32::try_from(payload.len()).unwrap()),
            ..Default::default()
        };
        let body = pulsar_rs_proto::compression::compress(codec as i32, &payload).unwrap();
        Entry {
            position: Position::new(l, e),
            data: pulsar_rs_proto::build_stored_entry(&md, &body),
        }
    }

    /// The members (key, value) of a stored batch, decompressing it with its codec.
    fn members_of(e: &Entry) -> Vec<(Option<String>, Bytes)> {
        let (md, payload) = pulsar_rs_proto::parse_stored_entry(&e.data).unwrap();
        let raw = pulsar_rs_proto::compression::decompress(
            md.compression.unwrap_or(0),
            &payload,
            md.uncompressed_size.map_or(payload.len(), |s| s as usize),
        )
        .unwrap();
        split_batch(&md, raw)
            .unwrap()
            .into_iter()
            .map(|m| (m.key, m.parts.unwrap().1))
            .collect()
    }

    fn compact(entries: &[Entry], retain_null_key: bool) -> Vec<Entry> {
        let mut map = KeyMap::new(retain_null_key);
        for e in entries {
            map.observe(e);
        }
        entries
            .iter()
            .cloned()
            .filter_map(|e| map.rewrite(e))
            .collect()
    }

    fn value(e: &Entry) -> (Option<String>, Bytes) {
        let (md, payload) = pulsar_rs_proto::parse_stored_entry(&e.data).unwrap();
        (md.partition_key, payload)
    }

    #[test]
    fn last_value_per_key_wins_and_keeps_its_id() {
        let entries = vec![
            message(1, 0, Some("a"), b"a1"),
            message(1, 1, Some("b"), b"b1"),
            message(1, 2, Some("a"), b"a2"),
            message(1, 3, Some("c"), b"c1"),
        ];
        let out = compact(&entries, false);
        let got: Vec<(Position, Option<String>)> =
            out.iter().map(|e| (e.position, value(e).0)).collect();
        assert_eq!(
            got,
            vec![
                (Position::new(1, 1), Some("b".into())),
                (Position::new(1, 2), Some("a".into())),
                (Position::new(1, 3), Some("c".into())),
            ]
        );
        assert_eq!(&value(&out[1]).1[..], b"a2");
    }

    #[test]
    fn empty_value_is_a_tombstone() {
        let entries = vec![
            message(1, 0, Some("a"), b"a1"),
            message(1, 1, Some("b"), b"b1"),
            message(1, 2, Some("a"), b""),
        ];
        let out = compact(&entries, false);
        assert_eq!(out.len(), 1);
        assert_eq!(value(&out[0]).0.as_deref(), Some("b"));
        // A value after the tombstone brings the key back.
        let mut more = entries.clone();
        more.push(message(1, 3, Some("a"), b"a3"));
        let out = compact(&more, false);
        assert_eq!(out.len(), 2);
        assert_eq!(&value(&out[1]).1[..], b"a3");
    }

    /// The C++-based clients leave `uncompressed_size` out: their empty payload is a value, as
    /// Apache Pulsar 4.0 keeps it (seen with the Python client in tests/differential).
    #[test]
    fn empty_payload_without_uncompressed_size_is_a_value() {
        let mut cpp = message(1, 2, Some("a"), b"");
        let (mut md, _) = pulsar_rs_proto::parse_stored_entry(&cpp.data).unwrap();
        md.uncompressed_size = None;
        cpp.data = pulsar_rs_proto::build_stored_entry(&md, b"");
        let entries = vec![
            message(1, 0, Some("a"), b"a1"),
            message(1, 1, Some("b"), b"b1"),
            cpp,
        ];
        let out = compact(&entries, false);
        assert_eq!(out.len(), 2);
        assert_eq!(value(&out[1]).0.as_deref(), Some("a"));
        assert!(value(&out[1]).1.is_empty());
    }

    /// The C++-based clients' `send(None)`: `null_value` set, no `uncompressed_size`.
    #[test]
    fn a_null_value_is_a_tombstone() {
        let mut null = message(1, 2, Some("a"), b"");
        let (mut md, _) = pulsar_rs_proto::parse_stored_entry(&null.data).unwrap();
        md.uncompressed_size = None;
        md.null_value = Some(true);
        null.data = pulsar_rs_proto::build_stored_entry(&md, b"");
        let entries = vec![
            message(1, 0, Some("a"), b"a1"),
            message(1, 1, Some("b"), b"b1"),
            null,
        ];
        let out = compact(&entries, false);
        assert_eq!(out.len(), 1);
        assert_eq!(value(&out[0]).0.as_deref(), Some("b"));
    }

    #[test]
    fn messages_without_key_are_dropped_unless_retained() {
        let entries = vec![message(1, 0, None, b"x"), message(1, 1, Some("k"), b"v")];
        assert_eq!(compact(&entries, false).len(), 1);
        assert_eq!(compact(&entries, true).len(), 2);
    }

    #[test]
    fn batches_keep_only_winning_members() {
        let entries = vec![
            batch(1, 0, &[(Some("a"), b"a1"), (Some("b"), b"b1")]),
            batch(1, 1, &[(Some("a"), b"a2")]),
            batch(1, 2, &[(Some("c"), b"c1"), (Some("d"), b"d1")]),
        ];
        let out = compact(&entries, false);
        assert_eq!(out.len(), 3);
        let (md, payload) = pulsar_rs_proto::parse_stored_entry(&out[0].data).unwrap();
        assert_eq!(md.num_messages_in_batch, Some(1));
        let members = split_batch(&md, payload).unwrap();
        assert_eq!(members[0].key.as_deref(), Some("b"));
        // A batch whose members all win is kept byte for byte.
        assert_eq!(out[2].data, entries[2].data);
    }

    #[test]
    fn compressed_batches_are_looked_into_and_compressed_again() {
        use pb::CompressionType as C;
        for codec in [C::Lz4, C::Zlib, C::Zstd, C::Snappy] {
            let entries = vec![
                compressed_batch(1, 0, &[(Some("a"), b"a1"), (Some("b"), b"b1")], codec),
                compressed_batch(1, 1, &[(Some("a"), b"a2"), (Some("b"), b"")], codec),
                compressed_batch(1, 2, &[(Some("c"), b"c1")], codec),
            ];
            let out = compact(&entries, false);
            // Entry 0 lost both members (a overwritten, b deleted); entry 1 keeps a2 only.
            assert_eq!(out.len(), 2, "{codec:?}");
            assert_eq!(out[0].position, Position::new(1, 1));
            let (md, _) = pulsar_rs_proto::parse_stored_entry(&out[0].data).unwrap();
            assert_eq!(md.compression, Some(codec as i32), "{codec:?} codec kept");
            assert_eq!(md.num_messages_in_batch, Some(1));
            assert_eq!(
                members_of(&out[0]),
                vec![(Some("a".to_owned()), Bytes::from_static(b"a2"))],
                "{codec:?}"
            );
            assert_eq!(
                out[1].data, entries[2].data,
                "{codec:?}: all winners, unchanged"
            );
        }
    }

    #[test]
    fn an_undecodable_compressed_batch_is_kept_whole() {
        let mut e = compressed_batch(1, 0, &[(Some("a"), b"a1")], pb::CompressionType::Lz4);
        let (mut md, _) = pulsar_rs_proto::parse_stored_entry(&e.data).unwrap();
        md.uncompressed_size = Some(1_000_000);
        e.data = pulsar_rs_proto::build_stored_entry(&md, b"not lz4 at all");
        let later = message(1, 1, Some("a"), b"a2");
        let out = compact(&[e.clone(), later], false);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].data, e.data);
    }
}
