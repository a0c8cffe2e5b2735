//! BookKeeper's `LedgerMetadataFormat` (proto2, `DataFormats.proto`), as Pulsar writes it into
//! the index object (`OffloadUtils.buildLedgerMetadataFormat`) and reads it back (LAC, length,
//! closed state).

use std::collections::BTreeMap;

use prost::Message;

use super::FormatError;

/// `LedgerMetadataFormat.State.CLOSED`.
pub const STATE_CLOSED: i32 = 3;
/// `LedgerMetadataFormat.DigestType.CRC32C`.
pub const DIGEST_CRC32C: i32 = 3;
/// The one ensemble member written: there are no bookies, but readers expect one segment.
pub const PLACEHOLDER_BOOKIE: &str = "127.0.0.1:0";

/// `LedgerMetadataFormat`; every field proto2-optional here so that each is always emitted.
#[derive(Clone, PartialEq, Message)]
pub struct LedgerMetadataFormat {
    /// Write quorum (required).
    #[prost(int32, optional, tag = "1")]
    pub quorum_size: Option<i32>,
    /// Ensemble size (required).
    #[prost(int32, optional, tag = "2")]
    pub ensemble_size: Option<i32>,
    /// Bytes of all entries (required).
    #[prost(int64, optional, tag = "3")]
    pub length: Option<i64>,
    /// The last entry (Pulsar's LAC of the offloaded ledger).
    #[prost(int64, optional, tag = "4")]
    pub last_entry_id: Option<i64>,
    /// `OPEN`=1, `IN_RECOVERY`=2, `CLOSED`=3 (required).
    #[prost(int32, optional, tag = "5")]
    pub state: Option<i32>,
    /// Ensembles by first entry.
    #[prost(message, repeated, tag = "6")]
    pub segment: Vec<Segment>,
    /// `CRC32`=1, `HMAC`=2, `CRC32C`=3, `DUMMY`=4.
    #[prost(int32, optional, tag = "7")]
    pub digest_type: Option<i32>,
    /// The ledger's password (never written).
    #[prost(bytes = "vec", optional, tag = "8")]
    pub password: Option<Vec<u8>>,
    /// Ack quorum.
    #[prost(int32, optional, tag = "9")]
    pub ack_quorum_size: Option<i32>,
    /// Creation time, ms since epoch.
    #[prost(int64, optional, tag = "10")]
    pub ctime: Option<i64>,
    /// Custom metadata pairs.
    #[prost(message, repeated, tag = "11")]
    pub custom_metadata: Vec<CustomMetadataEntry>,
}

/// `LedgerMetadataFormat.Segment`.
#[derive(Clone, PartialEq, Message)]
pub struct Segment {
    /// The bookies, `host:port`.
    #[prost(string, repeated, tag = "1")]
    pub ensemble_member: Vec<String>,
    /// The segment's first entry (required).
    #[prost(int64, optional, tag = "2")]
    pub first_entry_id: Option<i64>,
}

/// `LedgerMetadataFormat.cMetadataMapEntry`.
#[derive(Clone, PartialEq, Message)]
pub struct CustomMetadataEntry {
    /// The key.
    #[prost(string, optional, tag = "1")]
    pub key: Option<String>,
    /// The value (bytes; Pulsar's values are UTF-8).
    #[prost(bytes = "vec", optional, tag = "2")]
    pub value: Option<Vec<u8>>,
}

/// What the index says of the offloaded ledger.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OffloadedLedgerMetadata {
    /// The last entry.
    pub last_entry_id: i64,
    /// Bytes of all entries.
    pub length: u64,
    /// Whether the ledger was closed (always, for what Pulsar and we write).
    pub closed: bool,
    /// Creation time, ms since epoch (0 if absent).
    pub ctime: i64,
    /// Custom metadata as UTF-8 text.
    pub custom: BTreeMap<String, String>,
}

/// The metadata Pulsar writes for a closed ledger of managed ledger `ml_name`.
#[must_use]
pub fn build(last_entry_id: i64, length: u64, ctime_ms: u64, ml_name: &str) -> Vec<u8> {
    let custom = [
        ("pulsar/managed-ledger", ml_name),
        ("component", "managed-ledger"),
        ("application", "pulsar"),
    ];
    LedgerMetadataFormat {
        quorum_size: Some(1),
        ensemble_size: Some(1),
        length: Some(i64::try_from(length).unwrap_or(i64::MAX)),
        last_entry_id: Some(last_entry_id),
        state: Some(STATE_CLOSED),
        segment: vec![Segment {
            ensemble_member: vec![PLACEHOLDER_BOOKIE.to_string()],
            first_entry_id: Some(0),
        }],
        digest_type: Some(DIGEST_CRC32C),
        password: None,
        ack_quorum_size: Some(1),
        ctime: Some(i64::try_from(ctime_ms).unwrap_or(i64::MAX)),
        custom_metadata: custom
            .iter()
            .map(|(k, v)| CustomMetadataEntry {
                key: Some((*k).to_string()),
                value: Some(v.as_bytes().to_vec()),
            })
            .collect(),
    }
    .encode_to_vec()
}

/// Parses the index's metadata.
///
/// # Errors
/// Not a `LedgerMetadataFormat`, or a required field (`length`, `state`) is missing.
pub fn parse(b: &[u8]) -> Result<OffloadedLedgerMetadata, FormatError> {
    let m = LedgerMetadataFormat::decode(b)
        .map_err(|e| FormatError(format!("bad ledger metadata in the index: {e}")))?;
    let length = m
        .length
        .ok_or_else(|| FormatError("ledger metadata without length".into()))?;
    let state = m
        .state
        .ok_or_else(|| FormatError("ledger metadata without state".into()))?;
    Ok(OffloadedLedgerMetadata {
        last_entry_id: m.last_entry_id.unwrap_or(-1),
        length: u64::try_from(length).unwrap_or(0),
        closed: state == STATE_CLOSED,
        ctime: m.ctime.unwrap_or(0),
        custom: m
            .custom_metadata
            .into_iter()
            .filter_map(|e| {
                Some((
                    e.key?,
                    String::from_utf8_lossy(&e.value.unwrap_or_default()).into_owned(),
                ))
            })
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_bytes_are_bookkeepers() {
        let b = build(
            19,
            1170,
            1_700_000_000_000,
            "public/default/persistent/off3",
        );
        // quorumSize=1, ensembleSize=1, length=1170 (varint 0x92 0x09), lastEntryId=19, state=3.
        assert_eq!(
            &b[..14],
            &[0x08, 1, 0x10, 1, 0x18, 0x92, 0x09, 0x20, 19, 0x28, 3, 0x32, 15, 0x0A]
        );
        assert_eq!(b[14], 11);
        assert_eq!(&b[15..26], b"127.0.0.1:0");
        // segment.firstEntryId=0, then digestType=CRC32C, ackQuorumSize=1.
        assert_eq!(&b[26..32], &[0x10, 0, 0x38, 3, 0x48, 1]);
        assert_eq!(b[32], 0x50); // ctime
        let m = parse(&b).unwrap();
        assert_eq!(m.last_entry_id, 19);
        assert_eq!(m.length, 1170);
        assert!(m.closed);
        assert_eq!(m.ctime, 1_700_000_000_000);
        assert_eq!(
            m.custom.get("pulsar/managed-ledger").map(String::as_str),
            Some("public/default/persistent/off3")
        );
        assert_eq!(
            m.custom.get("application").map(String::as_str),
            Some("pulsar")
        );
        assert!(parse(&[0x08, 1]).is_err());
    }
}
