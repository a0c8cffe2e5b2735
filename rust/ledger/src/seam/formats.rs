//! Pulsar's managed-ledger metadata records (`MLDataFormats.proto`, proto2), so that what a
//! managed ledger on the seam writes is read by Pulsar's brokers and tools and the other way round:
//!
//! * [`ManagedLedgerInfo`]: the topic's ledger list, at `/managed-ledgers/{name}`;
//! * [`ManagedCursorInfo`]: one cursor's mark-delete position and individually deleted ranges, at
//!   `/managed-ledgers/{name}/{cursor}`;
//! * [`PositionInfo`]: a cursor's state as Pulsar appends it to the cursor's own ledger.
//!
//! Field numbers and types follow the proto file (checked against the classes of Pulsar 4.0.8).
//! Fields this crate does not interpret but must not drop when it rewrites a record Pulsar wrote
//! (streaming-offload segments, batch deletion indexes, cursor properties) are kept as their raw
//! bytes.

/// `NestedPositionInfo`: a ledger id and an entry id.
#[derive(Clone, Copy, PartialEq, Eq, prost::Message)]
pub struct NestedPositionInfo {
    #[prost(int64, required, tag = "1")]
    pub ledger_id: i64,
    #[prost(int64, required, tag = "2")]
    pub entry_id: i64,
}

/// `MessageRange`: acknowledged entries after `lower_endpoint` up to `upper_endpoint` (Pulsar keeps
/// individually deleted messages as open-closed ranges).
#[derive(Clone, Copy, PartialEq, Eq, prost::Message)]
pub struct MessageRange {
    #[prost(message, required, tag = "1")]
    pub lower_endpoint: NestedPositionInfo,
    #[prost(message, required, tag = "2")]
    pub upper_endpoint: NestedPositionInfo,
}

/// `LongProperty`: a named number kept with a cursor position.
#[derive(Clone, PartialEq, Eq, prost::Message)]
pub struct LongProperty {
    #[prost(string, required, tag = "1")]
    pub name: String,
    #[prost(int64, required, tag = "2")]
    pub value: i64,
}

/// `ManagedLedgerInfo.LedgerInfo`: one ledger of the list. `entries`/`size` are set once the
/// ledger is closed; `timestamp` is its close time (ms), 0 while open.
#[derive(Clone, PartialEq, Eq, prost::Message)]
pub struct LedgerInfo {
    #[prost(int64, required, tag = "1")]
    pub ledger_id: i64,
    #[prost(int64, optional, tag = "2")]
    pub entries: Option<i64>,
    #[prost(int64, optional, tag = "3")]
    pub size: Option<i64>,
    #[prost(int64, optional, tag = "4")]
    pub timestamp: Option<i64>,
    /// Where the ledger was offloaded to (tiered storage), if it was.
    #[prost(message, optional, tag = "5")]
    pub offload_context: Option<OffloadContext>,
}

/// `OffloadDriverMetadata`: the offload driver's name and what it recorded (bucket, region,
/// endpoint).
#[derive(Clone, PartialEq, Eq, prost::Message)]
pub struct OffloadDriverMetadata {
    #[prost(string, required, tag = "1")]
    pub name: String,
    #[prost(message, repeated, tag = "2")]
    pub properties: Vec<KeyValue>,
}

/// `OffloadContext`: one ledger's offload. The uid is a Java `UUID` as its two halves; the
/// timestamp is when the offload completed (ms). `offloadSegment` (written only by Pulsar's
/// streaming offloader, which its broker never calls) is kept as raw bytes.
#[derive(Clone, PartialEq, Eq, prost::Message)]
pub struct OffloadContext {
    #[prost(int64, optional, tag = "1")]
    pub uid_msb: Option<i64>,
    #[prost(int64, optional, tag = "2")]
    pub uid_lsb: Option<i64>,
    #[prost(bool, optional, tag = "3")]
    pub complete: Option<bool>,
    #[prost(bool, optional, tag = "4")]
    pub bookkeeper_deleted: Option<bool>,
    #[prost(int64, optional, tag = "5")]
    pub timestamp: Option<i64>,
    #[prost(message, optional, tag = "6")]
    pub driver_metadata: Option<OffloadDriverMetadata>,
    #[prost(bytes = "vec", repeated, tag = "7")]
    pub offload_segment: Vec<Vec<u8>>,
}

/// `KeyValue`: a managed ledger's property.
#[derive(Clone, PartialEq, Eq, prost::Message)]
pub struct KeyValue {
    #[prost(string, required, tag = "1")]
    pub key: String,
    #[prost(string, required, tag = "2")]
    pub value: String,
}

/// `ManagedLedgerInfo`: the ledger list of a managed ledger, oldest first.
#[derive(Clone, PartialEq, Eq, prost::Message)]
pub struct ManagedLedgerInfo {
    #[prost(message, repeated, tag = "1")]
    pub ledger_info: Vec<LedgerInfo>,
    /// Set once the managed ledger is terminated: its last entry.
    #[prost(message, optional, tag = "2")]
    pub terminated_position: Option<NestedPositionInfo>,
    /// The managed ledger's properties.
    #[prost(message, repeated, tag = "3")]
    pub properties: Vec<KeyValue>,
}

/// `ManagedCursorInfo`. `cursors_ledger_id == -1` says the mark-delete position is the one in
/// this record (as Pulsar writes it on a clean close), not in a cursor ledger.
#[derive(Clone, PartialEq, Eq, prost::Message)]
pub struct ManagedCursorInfo {
    #[prost(int64, required, tag = "1")]
    pub cursors_ledger_id: i64,
    #[prost(int64, optional, tag = "2")]
    pub mark_delete_ledger_id: Option<i64>,
    #[prost(int64, optional, tag = "3")]
    pub mark_delete_entry_id: Option<i64>,
    #[prost(message, repeated, tag = "4")]
    pub individual_deleted_messages: Vec<MessageRange>,
    #[prost(message, repeated, tag = "5")]
    pub properties: Vec<LongProperty>,
    /// When the cursor was last active (ms).
    #[prost(int64, optional, tag = "6")]
    pub last_active: Option<i64>,
    /// `BatchedEntryDeletionIndexInfo`s, kept as they were read.
    #[prost(bytes = "vec", repeated, tag = "7")]
    pub batched_entry_deletion_index_info: Vec<Vec<u8>>,
    /// `StringProperty`s (cursor properties), kept as they were read.
    #[prost(bytes = "vec", repeated, tag = "8")]
    pub cursor_properties: Vec<Vec<u8>>,
}

/// `PositionInfo`: the entry Pulsar writes to a cursor ledger (the fields read here; its
/// properties and batch indexes are Pulsar's own).
#[derive(Clone, PartialEq, Eq, prost::Message)]
pub struct PositionInfo {
    #[prost(int64, required, tag = "1")]
    pub ledger_id: i64,
    #[prost(int64, required, tag = "2")]
    pub entry_id: i64,
    #[prost(message, repeated, tag = "3")]
    pub individual_deleted_messages: Vec<MessageRange>,
    /// The same acknowledgements in the long-array format Pulsar writes with
    /// `managedLedgerPersistIndividualAckAsLongArray=true` (its default since 4.1): per ledger,
    /// a bit set of the acknowledged entry ids. Pulsar fills this or field 3, never both.
    #[prost(message, repeated, tag = "6")]
    pub individual_deleted_message_ranges: Vec<LongListMap>,
}

/// `LongListMap`: a key (here a ledger id) and its `long`s (a Java `BitSet.toLongArray`).
#[derive(Clone, PartialEq, Eq, prost::Message)]
pub struct LongListMap {
    #[prost(int64, required, tag = "1")]
    pub key: i64,
    #[prost(int64, repeated, packed = "false", tag = "2")]
    pub values: Vec<i64>,
}

#[cfg(test)]
mod tests {
    use prost::Message;

    use super::*;

    #[test]
    fn ledger_info_wire_bytes_match_protobuf() {
        let info = ManagedLedgerInfo {
            ledger_info: vec![LedgerInfo {
                ledger_id: 3,
                entries: Some(2),
                size: Some(10),
                timestamp: Some(0),
                offload_context: None,
            }],
            terminated_position: None,
            properties: vec![],
        };
        // field 1 (len 8) { 08 03 | 10 02 | 18 0a | 20 00 }
        assert_eq!(
            info.encode_to_vec(),
            [0x0a, 8, 0x08, 3, 0x10, 2, 0x18, 10, 0x20, 0]
        );
        assert_eq!(
            ManagedLedgerInfo::decode(&info.encode_to_vec()[..]).unwrap(),
            info
        );
    }

    #[test]
    fn cursor_info_round_trips() {
        let p = |l, e| NestedPositionInfo {
            ledger_id: l,
            entry_id: e,
        };
        let c = ManagedCursorInfo {
            cursors_ledger_id: -1,
            mark_delete_ledger_id: Some(5),
            mark_delete_entry_id: Some(7),
            individual_deleted_messages: vec![MessageRange {
                lower_endpoint: p(5, 8),
                upper_endpoint: p(5, 10),
            }],
            properties: vec![],
            last_active: Some(1),
            // Kept as raw bytes: a `StringProperty` {name "a", value "b"}.
            batched_entry_deletion_index_info: vec![],
            cursor_properties: vec![vec![0x0a, 1, b'a', 0x12, 1, b'b']],
        };
        assert_eq!(
            ManagedCursorInfo::decode(&c.encode_to_vec()[..]).unwrap(),
            c
        );
    }
}
