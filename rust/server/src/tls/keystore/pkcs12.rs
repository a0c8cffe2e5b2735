//! PKCS#12 key stores as Java writes them, decoded by the `p12-keystore` crate (PBES2 with
//! AES-256-CBC and HMAC-SHA256, Java 17's default, and the older PBEWithSHA1And3DES / RC2-40 with
//! an HMAC-SHA1 MAC). Each key's chain is its certificate (same `localKeyId`) followed by the
//! issuers found among the certificate bags; every bag outside all chains, or marked with Java's
//! trusted-key-usage attribute (a trust store's `trustedCertEntry`), is a trusted certificate.

use std::collections::HashSet;

use p12_keystore::error::Error;
use p12_keystore::{CertificateBag, Pkcs12Archive, PrivateKeyBag};

use super::Parsed;

/// Reads a PKCS#12 file with `password`.
pub(super) fn parse(data: &[u8], password: &str) -> Result<Parsed, String> {
    let archive = Pkcs12Archive::from_pkcs12(data, password).map_err(describe)?;
    let chains: Vec<Vec<usize>> = archive
        .keys
        .iter()
        .map(|key| chain_of(key, &archive.certs))
        .collect();
    let in_chains: HashSet<usize> = chains.iter().flatten().copied().collect();
    let der = |i: &usize| archive.certs[*i].cert.as_der().to_vec();
    let trusted = (0..archive.certs.len())
        .filter(|i| archive.certs[*i].trusted || !in_chains.contains(i))
        .map(|i| der(&i))
        .collect();
    Ok(Parsed {
        key: archive.keys.first().map(|k| k.key.as_der().to_vec()),
        chain: chains
            .first()
            .map_or_else(Vec::new, |c| c.iter().map(der).collect()),
        trusted,
    })
}

/// Indexes into `certs` of `key`'s chain, leaf first: the bag with the key's `localKeyId`, then
/// each certificate's issuer until a self-signed one or an issuer the store lacks.
fn chain_of(key: &PrivateKeyBag, certs: &[CertificateBag]) -> Vec<usize> {
    let Some(id) = &key.local_key_id else {
        return Vec::new();
    };
    let leaf = certs
        .iter()
        .position(|c| c.local_key_id.as_deref() == Some(id.as_ref()));
    let Some(leaf) = leaf else {
        return Vec::new();
    };
    let mut chain = vec![leaf];
    let mut current = &certs[leaf].cert;
    while current.issuer() != current.subject() {
        let issuer = certs
            .iter()
            .position(|c| c.cert.subject() == current.issuer());
        match issuer {
            Some(i) if !chain.contains(&i) => {
                chain.push(i);
                current = &certs[i].cert;
            }
            _ => break,
        }
    }
    chain
}

/// What went wrong, in words.
fn describe(e: Error) -> String {
    match e {
        Error::MacError(_) => "wrong password: the store's integrity check (MAC) failed".into(),
        Error::Pkcs5Error(_) | Error::UnpadError => {
            format!("cannot decrypt the store (wrong password?): {e}")
        }
        Error::UnsupportedEncryptionScheme => {
            "unsupported key protection algorithm (PBES2, PBEWithSHA1And3DES and RC2-40 are)".into()
        }
        Error::UnsupportedMacAlgorithm => "unsupported MAC algorithm".into(),
        Error::InvalidParameters => {
            format!("{e} (an iteration count over 1,000,000, or missing parameters)")
        }
        Error::DerError(_) | Error::InvalidVersion | Error::UnsupportedContentType => {
            format!("not a PKCS12 file, or a damaged one: {e}")
        }
        other => format!("cannot read the PKCS12 store: {other}"),
    }
}
