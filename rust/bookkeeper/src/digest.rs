//! Entry digests and the master key, computed as BookKeeper's `DigestManager` /
//! `CRC32CDigestManager` / `CRC32DigestManager` compute them.
//!
//! A stored entry is `ledgerId(8) entryId(8) lastAddConfirmed(8) length(8)` (big-endian), then the
//! digest, then the payload. The CRC32C digest (Pulsar's managed ledgers) is a 4-byte big-endian
//! Castagnoli CRC over the 32 header bytes followed by the payload (the header digest is resumed
//! over the payload, which is one CRC over both); the CRC32 digest (Pulsar's compacted ledgers) is
//! the IEEE CRC over the same bytes, written as an 8-byte big-endian long. The master key sent with adds and fencing reads is SHA-1("ledger" ‖ password),
//! for an empty password too.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use sha1::{Digest, Sha1};

use crate::error::{BkError, Result};

/// Bytes of the entry header the digest covers (`DigestManager.METADATA_LENGTH`).
pub const METADATA_LENGTH: usize = 32;
/// Bytes of a CRC32C digest.
pub const CRC32C_LENGTH: usize = 4;
/// Bytes of a CRC32 digest (a Java `long`).
pub const CRC32_LENGTH: usize = 8;
/// Bytes of the master key in v2 frames (`BookieProtocol.MASTER_KEY_LENGTH`).
pub const MASTER_KEY_LENGTH: usize = 20;

/// `LedgerMetadataFormat.DigestType` numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DigestType {
    Crc32 = 1,
    Hmac = 2,
    Crc32c = 3,
    Dummy = 4,
}

/// SHA-1("ledger" ‖ password), as `DigestManager.generateMasterKey` (the empty password is no special
/// case in the result: it is SHA-1("ledger")).
pub fn master_key(password: &[u8]) -> [u8; MASTER_KEY_LENGTH] {
    let mut h = Sha1::new();
    h.update(b"ledger");
    h.update(password);
    h.finalize().into()
}

impl DigestType {
    /// Bytes of this digest in a stored entry; `None` for the types not implemented (HMAC,
    /// dummy).
    #[must_use]
    pub fn length(self) -> Option<usize> {
        match self {
            DigestType::Crc32c => Some(CRC32C_LENGTH),
            DigestType::Crc32 => Some(CRC32_LENGTH),
            DigestType::Hmac | DigestType::Dummy => None,
        }
    }

    /// The digest of `header` then `payload`, as stored (big-endian); empty for the types not
    /// implemented (ledgers of those types are refused when opened or created).
    fn compute(self, header: &[u8], payload: &[u8]) -> Vec<u8> {
        match self {
            // Resuming the CRC over the payload is what `update(digest, data, ...)` does in Java.
            DigestType::Crc32c => crc32c::crc32c_append(crc32c::crc32c(header), payload)
                .to_be_bytes()
                .to_vec(),
            DigestType::Crc32 => {
                let mut h = crc32fast::Hasher::new();
                h.update(header);
                h.update(payload);
                u64::from(h.finalize()).to_be_bytes().to_vec()
            }
            DigestType::Hmac | DigestType::Dummy => Vec::new(),
        }
    }
}

/// An entry as a bookie stores it: digest header then payload.
pub fn package_entry(
    digest: DigestType,
    ledger_id: i64,
    entry_id: i64,
    lac: i64,
    length: i64,
    payload: &[u8],
) -> Bytes {
    let mut buf = BytesMut::with_capacity(METADATA_LENGTH + CRC32_LENGTH + payload.len());
    buf.put_i64(ledger_id);
    buf.put_i64(entry_id);
    buf.put_i64(lac);
    buf.put_i64(length);
    let code = digest.compute(&buf[..METADATA_LENGTH], payload);
    buf.put_slice(&code);
    buf.put_slice(payload);
    buf.freeze()
}

/// An entry read back from a bookie, its digest checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedEntry {
    pub ledger_id: i64,
    pub entry_id: i64,
    /// The writer's last-add-confirmed when it sent this entry (piggybacked LAC).
    pub lac: i64,
    /// The ledger length including this entry.
    pub length: i64,
    pub payload: Bytes,
}

/// Checks a stored entry's digest (and, when `expect_entry` is given, that it is that entry) and
/// splits it into its fields.
pub fn verify_entry(
    digest: DigestType,
    ledger_id: i64,
    expect_entry: Option<i64>,
    mut stored: Bytes,
) -> Result<VerifiedEntry> {
    let code_len = digest.length().unwrap_or(usize::MAX / 2);
    if stored.len() < METADATA_LENGTH + code_len {
        return Err(BkError::Protocol(format!(
            "stored entry of {} bytes is too short",
            stored.len()
        )));
    }
    let code = digest.compute(
        &stored[..METADATA_LENGTH],
        &stored[METADATA_LENGTH + code_len..],
    );
    let matches = code[..] == stored[METADATA_LENGTH..METADATA_LENGTH + code_len];
    let got_ledger = stored.get_i64();
    let entry_id = stored.get_i64();
    let lac = stored.get_i64();
    let length = stored.get_i64();
    stored.advance(code_len);
    if !matches || got_ledger != ledger_id || expect_entry.is_some_and(|e| e != entry_id) {
        return Err(BkError::DigestMismatch {
            ledger_id,
            entry_id: expect_entry.unwrap_or(entry_id),
        });
    }
    Ok(VerifiedEntry {
        ledger_id,
        entry_id,
        lac,
        length,
        payload: stored,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    // Expected values printed by BookKeeper 4.17.2's own DigestManager (tests/java/BkTool.java
    // `digest` command, run with `java -cp 'apache-pulsar-4.0.8/lib/*'`). The frame it printed is the
    // full v2 ADD request; the stored entry is the part after the 4-byte length, 4-byte header and
    // 20-byte master key.
    #[test]
    fn matches_bookkeeper_empty_password() {
        let key = master_key(b"");
        assert_eq!(hex(&key), "850bf1071c5e3d8c24235676f8816ae0cbe2f14f");
        let e = package_entry(DigestType::Crc32c, 7, 3, 2, 1234, b"hello, bookie");
        assert_eq!(
            hex(&e),
            "0000000000000007000000000000000300000000000000020000000000000\
             4d2d581685068656c6c6f2c20626f6f6b6965"
        );
        let v = verify_entry(DigestType::Crc32c, 7, Some(3), e).unwrap();
        assert_eq!(
            (v.entry_id, v.lac, v.length, &v.payload[..]),
            (3, 2, 1234, &b"hello, bookie"[..])
        );
    }

    #[test]
    fn matches_bookkeeper_with_password_and_long_id() {
        assert_eq!(
            hex(&master_key(b"secret")),
            "e793cbc379107648537183605cd361d3bb789a39"
        );
        let e = package_entry(DigestType::Crc32c, 2147483648, 0, -1, 5, b"x");
        assert_eq!(
            hex(&e),
            "00000000800000000000000000000000ffffffffffffffff00000000000000050a8b690778"
        );
    }

    #[test]
    fn rejects_corruption() {
        let mut e = package_entry(DigestType::Crc32c, 7, 3, 2, 1234, b"hello, bookie").to_vec();
        let last = e.len() - 1;
        e[last] ^= 1;
        assert!(matches!(
            verify_entry(DigestType::Crc32c, 7, Some(3), e.into()),
            Err(BkError::DigestMismatch { .. })
        ));
        let e = package_entry(DigestType::Crc32c, 7, 3, 2, 1234, b"hello");
        assert!(verify_entry(DigestType::Crc32c, 7, Some(4), e).is_err());
    }

    // CRC32 (Pulsar's compacted ledgers): an 8-byte big-endian long of the IEEE CRC over the
    // header and payload (BookKeeper's `CRC32DigestManager`); "123456789" has the check value
    // 0xCBF43926, so a header-less CRC over it ends the same.
    #[test]
    fn crc32_digest_is_a_long_of_the_ieee_crc() {
        let e = package_entry(DigestType::Crc32, 7, 3, 2, 1234, b"hello, bookie");
        assert_eq!(e.len(), METADATA_LENGTH + CRC32_LENGTH + 13);
        let mut h = crc32fast::Hasher::new();
        h.update(&e[..METADATA_LENGTH]);
        h.update(b"hello, bookie");
        let want = u64::from(h.finalize()).to_be_bytes();
        assert_eq!(&e[METADATA_LENGTH..METADATA_LENGTH + 8], &want[..]);
        assert_eq!(&e[METADATA_LENGTH..METADATA_LENGTH + 4], &[0, 0, 0, 0]);
        let v = verify_entry(DigestType::Crc32, 7, Some(3), e.clone()).unwrap();
        assert_eq!(&v.payload[..], b"hello, bookie");
        assert!(verify_entry(DigestType::Crc32c, 7, Some(3), e).is_err());
        assert_eq!(crc32fast::hash(b"123456789"), 0xCBF4_3926);
    }
}
