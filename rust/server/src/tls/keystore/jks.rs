//! Java's own key store format, JKS (`sun.security.provider.JavaKeyStore`), read without Java:
//! magic `0xFEEDFEED`, version 1 or 2, the entries (tag 1: a private key protected by Sun's
//! `KeyProtector` and its certificate chain; tag 2: a trusted certificate), then a SHA-1 digest of
//! (password as UTF-16BE, `"Mighty Aphrodite"`, everything before the digest) that a wrong
//! password fails. The key is recovered only after that check passed.

use sha1::{Digest, Sha1};

use crate::tls::der::element;

use super::Parsed;

/// The magic number of a JKS file.
pub(super) const MAGIC: [u8; 4] = [0xFE, 0xED, 0xFE, 0xED];
/// The magic number of a JCEKS file (`com.sun.crypto.provider.JceKeyStore`).
pub(super) const JCEKS_MAGIC: [u8; 4] = [0xCE, 0xCE, 0xCE, 0xCE];
/// SHA-1's output length: the integrity digest, the key protector's salt and check.
const DIGEST_LEN: usize = 20;
/// What the integrity digest mixes in after the password.
const WHITENER: &[u8] = b"Mighty Aphrodite";
/// 1.3.6.1.4.1.42.2.17.1.1: Sun's `KeyProtector`, the only protection JKS uses.
const KEY_PROTECTOR_OID: &[u8] = &[0x2B, 0x06, 0x01, 0x04, 0x01, 0x2A, 0x02, 0x11, 0x01, 0x01];
/// The certificate type JKS version 2 names before each certificate.
const X509: &[u8] = b"X.509";

/// A big-endian reader over the file, failing with "truncated" past its end.
struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.data.len());
        let end = end.ok_or_else(|| format!("truncated JKS file (at byte {})", self.pos))?;
        let bytes = &self.data[self.pos..end];
        self.pos = end;
        Ok(bytes)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let mut out = [0; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    fn u32(&mut self) -> Result<u32, String> {
        self.array().map(u32::from_be_bytes)
    }

    /// A `DataOutput.writeUTF` string (u16 length, modified UTF-8), as bytes.
    fn utf(&mut self) -> Result<&'a [u8], String> {
        let len = u16::from_be_bytes(self.array()?);
        self.take(usize::from(len))
    }

    /// A u32 length and that many bytes.
    fn blob(&mut self) -> Result<&'a [u8], String> {
        let len = usize::try_from(self.u32()?).map_err(|e| e.to_string())?;
        self.take(len)
    }

    /// A certificate: (version 2) its type, then its DER.
    fn cert(&mut self, version: u32) -> Result<Vec<u8>, String> {
        if version == 2 {
            let kind = self.utf()?;
            if kind != X509 {
                let kind = String::from_utf8_lossy(kind);
                return Err(format!(
                    "unsupported certificate type {kind:?} (only X.509)"
                ));
            }
        }
        Ok(self.blob()?.to_vec())
    }
}

/// The first private key's protected form and chain, and the trusted certificates.
#[derive(Default)]
struct Entries {
    key: Option<(Vec<u8>, Vec<Vec<u8>>)>,
    trusted: Vec<Vec<u8>>,
}

/// Reads a JKS file (`data` starts with [`MAGIC`]) with `password`.
pub(super) fn parse(data: &[u8], password: &str) -> Result<Parsed, String> {
    let mut r = Reader { data, pos: 0 };
    if r.array::<4>()? != MAGIC {
        return Err("not a JKS file".into());
    }
    let version = r.u32()?;
    if version != 1 && version != 2 {
        return Err(format!("unsupported JKS version {version}"));
    }
    let entries = read_entries(&mut r, version)?;
    let body = &data[..r.pos];
    let digest = r.take(DIGEST_LEN)?;
    let pw = utf16be(password);
    if sha1(&[&pw, WHITENER, body]).as_slice() != digest {
        return Err("wrong password: the store's integrity check failed".into());
    }
    let (key, chain) = match entries.key {
        Some((protected, chain)) => (Some(recover_key(&protected, &pw)?), chain),
        None => (None, Vec::new()),
    };
    Ok(Parsed {
        key,
        chain,
        trusted: entries.trusted,
    })
}

/// The entries after the header; the reader is left at the integrity digest.
fn read_entries(r: &mut Reader<'_>, version: u32) -> Result<Entries, String> {
    let count = r.u32()?;
    let mut entries = Entries::default();
    for _ in 0..count {
        let tag = r.u32()?;
        r.utf()?; // alias
        r.take(8)?; // creation date
        match tag {
            1 => {
                let protected = r.blob()?.to_vec();
                let n = r.u32()?;
                let chain = (0..n).map(|_| r.cert(version)).collect::<Result<_, _>>()?;
                entries.key.get_or_insert((protected, chain));
            }
            2 => entries.trusted.push(r.cert(version)?),
            _ => return Err(format!("unknown JKS entry tag {tag}")),
        }
    }
    Ok(entries)
}

/// The PKCS#8 `PrivateKeyInfo` inside a `KeyProtector`-protected `EncryptedPrivateKeyInfo`:
/// protected = salt (20) ‖ encrypted ‖ check (20); keystream blocks d = SHA1(pw ‖ d) from
/// d = salt; check = SHA1(pw ‖ plaintext).
fn recover_key(encrypted_info: &[u8], pw: &[u8]) -> Result<Vec<u8>, String> {
    let protected = protected_data(encrypted_info)?;
    if protected.len() < 2 * DIGEST_LEN {
        return Err("damaged private key entry (too short)".into());
    }
    let (salt, rest) = protected.split_at(DIGEST_LEN);
    let (encrypted, check) = rest.split_at(rest.len() - DIGEST_LEN);
    let mut block = salt.to_vec();
    let mut plain = Vec::with_capacity(encrypted.len());
    for chunk in encrypted.chunks(DIGEST_LEN) {
        block = sha1(&[pw, &block]).to_vec();
        plain.extend(chunk.iter().zip(&block).map(|(c, k)| c ^ k));
    }
    if sha1(&[pw, &plain]).as_slice() != check {
        return Err(
            "cannot recover the private key: its password is not the store's password \
                    (Pulsar uses the store's password for the key too)"
                .into(),
        );
    }
    Ok(plain)
}

/// The encrypted data of an `EncryptedPrivateKeyInfo`, after checking its algorithm is Sun's
/// `KeyProtector`.
fn protected_data(info: &[u8]) -> Result<&[u8], String> {
    let damaged = || "damaged private key entry (bad EncryptedPrivateKeyInfo)".to_string();
    let Some((0x30, info, _)) = element(info) else {
        return Err(damaged());
    };
    let Some((0x30, algorithm, rest)) = element(info) else {
        return Err(damaged());
    };
    let Some((0x06, oid, _)) = element(algorithm) else {
        return Err(damaged());
    };
    if oid != KEY_PROTECTOR_OID {
        return Err(format!(
            "unsupported key protection algorithm {} (JKS keys use 1.3.6.1.4.1.42.2.17.1.1)",
            dotted(oid)
        ));
    }
    match element(rest) {
        Some((0x04, data, _)) => Ok(data),
        _ => Err(damaged()),
    }
}

/// An OID's content bytes in dotted form.
fn dotted(oid: &[u8]) -> String {
    let mut arcs = Vec::new();
    let mut value = 0u64;
    for &b in oid {
        value = (value << 7) | u64::from(b & 0x7f);
        if b & 0x80 == 0 {
            if arcs.is_empty() {
                let first = value.min(80) / 40;
                arcs.extend([first, value - first * 40]);
            } else {
                arcs.push(value);
            }
            value = 0;
        }
    }
    arcs.iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(".")
}

/// A Java `char[]` password as bytes: each UTF-16 unit big-endian.
fn utf16be(password: &str) -> Vec<u8> {
    password.encode_utf16().flat_map(u16::to_be_bytes).collect()
}

/// SHA-1 of the concatenated `parts`.
fn sha1(parts: &[&[u8]]) -> [u8; DIGEST_LEN] {
    let mut hasher = Sha1::new();
    for part in parts {
        hasher.update(part);
    }
    hasher.finalize().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sun's `KeyProtector.protect`, for a round trip independent of keytool.
    fn protect(plain: &[u8], pw: &[u8], salt: [u8; DIGEST_LEN]) -> Vec<u8> {
        let mut block = salt.to_vec();
        let mut out = salt.to_vec();
        for chunk in plain.chunks(DIGEST_LEN) {
            block = sha1(&[pw, &block]).to_vec();
            out.extend(chunk.iter().zip(&block).map(|(c, k)| c ^ k));
        }
        out.extend(sha1(&[pw, plain]));
        out
    }

    /// An `EncryptedPrivateKeyInfo` (short form lengths) around `data`.
    fn encrypted_info(oid: &[u8], data: &[u8]) -> Vec<u8> {
        let mut alg = vec![0x06, oid.len() as u8];
        alg.extend(oid);
        alg.extend([0x05, 0x00]);
        let mut inner = vec![0x30, alg.len() as u8];
        inner.extend(alg);
        inner.extend([0x04, data.len() as u8]);
        inner.extend(data);
        let mut out = vec![0x30, inner.len() as u8];
        out.extend(inner);
        out
    }

    #[test]
    fn key_protector_round_trip_and_wrong_password() {
        let pw = utf16be("changeit");
        let plain: Vec<u8> = (0u8..45).collect();
        let info = encrypted_info(KEY_PROTECTOR_OID, &protect(&plain, &pw, [7; 20]));
        assert_eq!(recover_key(&info, &pw).unwrap(), plain);
        let err = recover_key(&info, &utf16be("other")).unwrap_err();
        assert!(err.contains("password"), "{err}");
    }

    #[test]
    fn other_protection_algorithms_are_named() {
        // 1.3.6.1.4.1.42.2.19.1: JCEKS's PBEWithMD5AndTripleDES.
        let oid = [0x2B, 0x06, 0x01, 0x04, 0x01, 0x2A, 0x02, 0x13, 0x01];
        let err = recover_key(&encrypted_info(&oid, &[0; 40]), &[]).unwrap_err();
        assert!(err.contains("1.3.6.1.4.1.42.2.19.1"), "{err}");
    }
}
