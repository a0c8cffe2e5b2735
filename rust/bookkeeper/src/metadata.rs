//! Ledger metadata in BookKeeper's serialized format (`LedgerMetadataSerDe`, format version 3): the
//! text header `BookieMetadataFormatVersion\t3\n` followed by a varint-length-delimited
//! `LedgerMetadataFormat` protobuf (`DataFormats.proto`), and the ledger's ZooKeeper path under the
//! hierarchical ledger manager (`StringUtils.getHybridHierarchicalLedgerPath`).

use std::collections::BTreeMap;

use prost::Message;

use crate::digest::DigestType;
use crate::error::{BkError, Result};

const HEADER_V3: &[u8] = b"BookieMetadataFormatVersion\t3\n";

/// `LedgerMetadataFormat` as in `DataFormats.proto` (proto2; field numbers are the format).
#[derive(Clone, PartialEq, Message)]
pub struct LedgerMetadataFormat {
    #[prost(int32, required, tag = "1")]
    pub quorum_size: i32,
    #[prost(int32, required, tag = "2")]
    pub ensemble_size: i32,
    #[prost(int64, required, tag = "3")]
    pub length: i64,
    #[prost(int64, optional, tag = "4")]
    pub last_entry_id: Option<i64>,
    #[prost(int32, required, tag = "5")]
    pub state: i32,
    #[prost(message, repeated, tag = "6")]
    pub segment: Vec<Segment>,
    #[prost(int32, optional, tag = "7")]
    pub digest_type: Option<i32>,
    #[prost(bytes = "vec", optional, tag = "8")]
    pub password: Option<Vec<u8>>,
    #[prost(int32, optional, tag = "9")]
    pub ack_quorum_size: Option<i32>,
    #[prost(int64, optional, tag = "10")]
    pub ctime: Option<i64>,
    #[prost(message, repeated, tag = "11")]
    pub custom_metadata: Vec<CustomMetadataEntry>,
    #[prost(int64, optional, tag = "12")]
    pub c_token: Option<i64>,
}

/// `LedgerMetadataFormat.Segment`: an ensemble and the first entry written to it.
#[derive(Clone, PartialEq, Message)]
pub struct Segment {
    #[prost(string, repeated, tag = "1")]
    pub ensemble_member: Vec<String>,
    #[prost(int64, required, tag = "2")]
    pub first_entry_id: i64,
}

/// `LedgerMetadataFormat.cMetadataMapEntry`.
#[derive(Clone, PartialEq, Message)]
pub struct CustomMetadataEntry {
    #[prost(string, optional, tag = "1")]
    pub key: Option<String>,
    #[prost(bytes = "vec", optional, tag = "2")]
    pub value: Option<Vec<u8>>,
}

/// `LedgerMetadataFormat.State`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LedgerState {
    Open = 1,
    InRecovery = 2,
    Closed = 3,
}

/// A ledger's metadata as the client works with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerMetadata {
    pub ensemble_size: usize,
    pub write_quorum: usize,
    pub ack_quorum: usize,
    pub state: LedgerState,
    /// Last entry of a closed ledger (-1 when empty or still open).
    pub last_entry_id: i64,
    /// Bytes of payload in a closed ledger.
    pub length: i64,
    /// Ensembles keyed by the first entry id written to each.
    pub ensembles: BTreeMap<i64, Vec<String>>,
    pub digest_type: DigestType,
    pub password: Vec<u8>,
    pub ctime: Option<i64>,
    pub custom_metadata: Vec<(String, Vec<u8>)>,
    pub c_token: i64,
}

impl LedgerMetadata {
    /// BookKeeper's `LedgerMetadata.toSafeString()` (the password left out), which Pulsar's
    /// `internalStats?metadata=true` shows per ledger: `LedgerMetadata{formatVersion=3,
    /// ensembleSize=3, ..., ensembles={0=[host:port, ...], ...}, customMetadata={k=base64:...}}`.
    #[must_use]
    pub fn to_safe_string(&self) -> String {
        use base64::Engine;
        use std::fmt::Write;
        let state = match self.state {
            LedgerState::Open => "OPEN",
            LedgerState::InRecovery => "IN_RECOVERY",
            LedgerState::Closed => "CLOSED",
        };
        let mut s = format!(
            "LedgerMetadata{{formatVersion=3, ensembleSize={}, writeQuorumSize={}, ackQuorumSize={}, state={state}",
            self.ensemble_size, self.write_quorum, self.ack_quorum
        );
        if self.state == LedgerState::Closed {
            let _ = write!(
                s,
                ", length={}, lastEntryId={}",
                self.length, self.last_entry_id
            );
        }
        let digest = match self.digest_type {
            DigestType::Crc32 => "CRC32",
            DigestType::Hmac => "MAC",
            DigestType::Crc32c => "CRC32C",
            DigestType::Dummy => "DUMMY",
        };
        let _ = write!(s, ", digestType={digest}, password=OMITTED, ensembles={{");
        for (i, (first, bookies)) in self.ensembles.iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            let _ = write!(s, "{sep}{first}=[{}]", bookies.join(", "));
        }
        s.push_str("}, customMetadata={");
        for (i, (k, v)) in self.custom_metadata.iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            let v = base64::engine::general_purpose::STANDARD.encode(v);
            let _ = write!(s, "{sep}{k}=base64:{v}");
        }
        s.push_str("}}");
        s
    }

    /// Metadata of a new, open ledger on `ensemble`.
    pub fn new_open(
        write_quorum: usize,
        ack_quorum: usize,
        ensemble: Vec<String>,
        password: &[u8],
        ctime: i64,
        custom_metadata: Vec<(String, Vec<u8>)>,
        digest_type: DigestType,
    ) -> LedgerMetadata {
        LedgerMetadata {
            ensemble_size: ensemble.len(),
            write_quorum,
            ack_quorum,
            state: LedgerState::Open,
            last_entry_id: -1,
            length: 0,
            ensembles: BTreeMap::from([(0, ensemble)]),
            digest_type,
            password: password.to_vec(),
            ctime: Some(ctime),
            custom_metadata,
            c_token: 0,
        }
    }

    /// Refuses ledgers this client cannot verify: CRC32C (Pulsar's `managedLedgerDigestType`
    /// default) and CRC32 (Pulsar's compacted ledgers) digests are implemented.
    pub fn check_digest_supported(&self) -> Result<()> {
        if self.digest_type.length().is_some() {
            Ok(())
        } else {
            Err(BkError::Metadata(format!(
                "digest type {:?} is not supported (CRC32C and CRC32 only)",
                self.digest_type
            )))
        }
    }

    /// The ensemble that entry `entry_id` was (or will be) written to.
    pub fn ensemble_for(&self, entry_id: i64) -> &[String] {
        self.ensembles
            .range(..=entry_id.max(0))
            .next_back()
            .map(|(_, e)| e.as_slice())
            .unwrap_or(&[])
    }

    /// The last ensemble and its first entry id.
    pub fn last_ensemble(&self) -> (i64, &[String]) {
        self.ensembles
            .iter()
            .next_back()
            .map(|(k, e)| (*k, e.as_slice()))
            .unwrap_or((0, &[]))
    }

    /// Serializes as `LedgerMetadataSerDe.serialize(3, ...)` does.
    pub fn serialize(&self) -> Vec<u8> {
        let fmt = LedgerMetadataFormat {
            quorum_size: self.write_quorum as i32,
            ensemble_size: self.ensemble_size as i32,
            length: self.length,
            last_entry_id: Some(self.last_entry_id),
            state: self.state as i32,
            segment: self
                .ensembles
                .iter()
                .map(|(first, e)| Segment {
                    ensemble_member: e.clone(),
                    first_entry_id: *first,
                })
                .collect(),
            digest_type: Some(self.digest_type as i32),
            // BookKeeper always writes the password field, empty bytes for no password.
            password: Some(self.password.clone()),
            ack_quorum_size: Some(self.ack_quorum as i32),
            ctime: self.ctime,
            custom_metadata: self
                .custom_metadata
                .iter()
                .map(|(k, v)| CustomMetadataEntry {
                    key: Some(k.clone()),
                    value: Some(v.clone()),
                })
                .collect(),
            c_token: Some(self.c_token),
        };
        let mut out = HEADER_V3.to_vec();
        fmt.encode_length_delimited(&mut out).expect("Vec grows");
        out
    }

    /// Parses format version 3 (what every BookKeeper since 4.9 writes).
    pub fn parse(bytes: &[u8]) -> Result<LedgerMetadata> {
        let body = bytes
            .strip_prefix(HEADER_V3)
            .ok_or_else(|| BkError::Metadata("not BookieMetadataFormatVersion 3".into()))?;
        let fmt = LedgerMetadataFormat::decode_length_delimited(body)
            .map_err(|e| BkError::Metadata(format!("LedgerMetadataFormat: {e}")))?;
        let state = match fmt.state {
            1 => LedgerState::Open,
            2 => LedgerState::InRecovery,
            3 => LedgerState::Closed,
            s => return Err(BkError::Metadata(format!("state {s}"))),
        };
        let digest_type = match fmt.digest_type.unwrap_or(3) {
            1 => DigestType::Crc32,
            2 => DigestType::Hmac,
            3 => DigestType::Crc32c,
            4 => DigestType::Dummy,
            d => return Err(BkError::Metadata(format!("digest type {d}"))),
        };
        Ok(LedgerMetadata {
            ensemble_size: fmt.ensemble_size as usize,
            write_quorum: fmt.quorum_size as usize,
            ack_quorum: fmt.ack_quorum_size.unwrap_or(fmt.quorum_size) as usize,
            state,
            last_entry_id: fmt.last_entry_id.unwrap_or(-1),
            length: fmt.length,
            ensembles: fmt
                .segment
                .into_iter()
                .map(|s| (s.first_entry_id, s.ensemble_member))
                .collect(),
            digest_type,
            password: fmt.password.unwrap_or_default(),
            ctime: fmt.ctime,
            custom_metadata: fmt
                .custom_metadata
                .into_iter()
                .map(|c| (c.key.unwrap_or_default(), c.value.unwrap_or_default()))
                .collect(),
            c_token: fmt.c_token.unwrap_or(0),
        })
    }
}

/// The ZooKeeper path of a ledger's metadata under `root` (`/ledgers`): ids below `i32::MAX` as
/// `%010d` split 2-4-4, others as `%019d` split 3-4-4-4-4, each leaf prefixed `L`.
pub fn ledger_path(root: &str, ledger_id: i64) -> String {
    if ledger_id < i64::from(i32::MAX) {
        let s = format!("{ledger_id:010}");
        format!("{root}/{}/{}/L{}", &s[0..2], &s[2..6], &s[6..10])
    } else {
        let s = format!("{ledger_id:019}");
        format!(
            "{root}/{}/{}/{}/{}/L{}",
            &s[0..3],
            &s[3..7],
            &s[7..11],
            &s[11..15],
            &s[15..19]
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_as_bookkeeper() {
        assert_eq!(ledger_path("/ledgers", 1), "/ledgers/00/0000/L0001");
        assert_eq!(
            ledger_path("/ledgers", 1234567890),
            "/ledgers/12/3456/L7890"
        );
        assert_eq!(
            ledger_path("/ledgers", 2147483648),
            "/ledgers/000/0000/0021/4748/L3648"
        );
        // `ledgerId < Integer.MAX_VALUE`: MAX_VALUE itself already takes the long form.
        assert_eq!(
            ledger_path("/ledgers", 2147483647),
            "/ledgers/000/0000/0021/4748/L3647"
        );
    }

    #[test]
    fn safe_string_is_bookkeepers() {
        let mut m = LedgerMetadata::new_open(
            2,
            2,
            vec!["127.0.0.1:3181".into(), "127.0.0.1:3182".into()],
            b"secret",
            1700000000000,
            vec![("application".into(), b"pulsar".to_vec())],
            DigestType::Crc32c,
        );
        m.ensembles
            .insert(5, vec!["127.0.0.1:3181".into(), "127.0.0.1:3183".into()]);
        assert_eq!(
            m.to_safe_string(),
            "LedgerMetadata{formatVersion=3, ensembleSize=2, writeQuorumSize=2, ackQuorumSize=2, \
             state=OPEN, digestType=CRC32C, password=OMITTED, ensembles={0=[127.0.0.1:3181, \
             127.0.0.1:3182], 5=[127.0.0.1:3181, 127.0.0.1:3183]}, \
             customMetadata={application=base64:cHVsc2Fy}}"
        );
        m.state = LedgerState::Closed;
        m.length = 10;
        m.last_entry_id = 6;
        assert!(m
            .to_safe_string()
            .contains("state=CLOSED, length=10, lastEntryId=6, digestType=CRC32C"));
    }

    #[test]
    fn round_trip() {
        let mut m = LedgerMetadata::new_open(
            2,
            2,
            vec!["127.0.0.1:3181".into(), "127.0.0.1:3182".into()],
            b"",
            1700000000000,
            vec![("application".into(), b"pulsar".to_vec())],
            DigestType::Crc32c,
        );
        m.ensembles
            .insert(5, vec!["127.0.0.1:3181".into(), "127.0.0.1:3183".into()]);
        let bytes = m.serialize();
        assert!(bytes.starts_with(b"BookieMetadataFormatVersion\t3\n"));
        assert_eq!(LedgerMetadata::parse(&bytes).unwrap(), m);
        assert_eq!(m.ensemble_for(4)[1], "127.0.0.1:3182");
        assert_eq!(m.ensemble_for(5)[1], "127.0.0.1:3183");
    }
}
