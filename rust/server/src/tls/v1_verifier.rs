//! Client certificates in X.509 version 1, which Pulsar (the JDK and OpenSSL) accepts and
//! webpki refuses (`UnsupportedCertVersion`): many test and internal PKIs, among them the
//! official clients' own test certificates, issue client certificates without extensions.
//!
//! [`V1TolerantVerifier`] hands every version 3 certificate to the webpki verifier unchanged.
//! A version 1 end-entity certificate is accepted when it is directly signed by one of the
//! trusted CA certificates (`tlsTrustCertsFilePath`; a v1 certificate has no extensions, so no
//! CA flag, and is never an intermediate) and the time is within its validity; its handshake
//! signature is checked against its own public key. Signature algorithms are the crypto
//! provider's (the same ones webpki uses), matched by their DER `AlgorithmIdentifier`s.

use std::sync::Arc;

use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{CertificateError, DigitallySignedStruct, DistinguishedName, Error, SignatureScheme};
use rustls_pki_types::{CertificateDer, UnixTime};

use super::der::element;

const SEQUENCE: u8 = 0x30;
const BIT_STRING: u8 = 0x03;
const UTC_TIME: u8 = 0x17;
const GENERALIZED_TIME: u8 = 0x18;

/// One DER element: (tag, content, the whole element with its header, rest).
type Tlv<'a> = (u8, &'a [u8], &'a [u8], &'a [u8]);

/// Splits off one DER element, keeping its header.
fn tlv(input: &[u8]) -> Option<Tlv<'_>> {
    let (tag, content, rest) = element(input)?;
    Some((tag, content, &input[..input.len() - rest.len()], rest))
}

/// A public key: its algorithm identifier's content and the key bits.
struct Spki<'a> {
    alg: &'a [u8],
    key: &'a [u8],
}

fn spki(content: &[u8]) -> Option<Spki<'_>> {
    let (SEQUENCE, alg, rest) = element(content)? else {
        return None;
    };
    let (BIT_STRING, bits, _) = element(rest)? else {
        return None;
    };
    let (&0, key) = bits.split_first()? else {
        return None; // a key is a whole number of bytes
    };
    Some(Spki { alg, key })
}

/// The parts of a certificate the checks need.
struct Cert<'a> {
    version1: bool,
    tbs: &'a [u8],
    sig_alg: &'a [u8],
    signature: &'a [u8],
    issuer: &'a [u8],
    not_before: u64,
    not_after: u64,
    subject: &'a [u8],
    spki: Spki<'a>,
}

fn parse(der: &[u8]) -> Option<Cert<'_>> {
    let (SEQUENCE, cert, _) = element(der)? else {
        return None;
    };
    let (SEQUENCE, tbs_content, tbs, rest) = tlv(cert)? else {
        return None;
    };
    let (SEQUENCE, sig_alg, rest) = element(rest)? else {
        return None;
    };
    let (BIT_STRING, sig_bits, _) = element(rest)? else {
        return None;
    };
    let (&0, signature) = sig_bits.split_first()? else {
        return None;
    };
    let (tag, _, _, mut rest) = tlv(tbs_content)?;
    let version1 = tag != 0xa0;
    if !version1 {
        rest = element(rest)?.2; // the serial number after [0] version
    }
    let rest = element(rest)?.2; // signature algorithm (repeated outside)
    let (SEQUENCE, _, issuer, rest) = tlv(rest)? else {
        return None;
    };
    let (SEQUENCE, validity, rest) = element(rest)? else {
        return None;
    };
    let (SEQUENCE, _, subject, rest) = tlv(rest)? else {
        return None;
    };
    let (SEQUENCE, spki_content, _) = element(rest)? else {
        return None;
    };
    let (t1, nb, r) = element(validity)?;
    let (t2, na, _) = element(r)?;
    Some(Cert {
        version1,
        tbs,
        sig_alg,
        signature,
        issuer,
        not_before: time(t1, nb)?,
        not_after: time(t2, na)?,
        subject,
        spki: spki(spki_content)?,
    })
}

/// Seconds since the epoch of an X.509 `UTCTime` / `GeneralizedTime` (`...Z`).
fn time(tag: u8, text: &[u8]) -> Option<u64> {
    let s = std::str::from_utf8(text).ok()?.strip_suffix('Z')?;
    let (year, rest) = match tag {
        UTC_TIME => {
            let yy: i64 = s.get(..2)?.parse().ok()?;
            (if yy < 50 { 2000 + yy } else { 1900 + yy }, s.get(2..)?)
        }
        GENERALIZED_TIME => (s.get(..4)?.parse().ok()?, s.get(4..)?),
        _ => return None,
    };
    if rest.len() != 10 || !rest.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n = |i: usize| rest[i..i + 2].parse::<i64>().ok();
    let (month, day, h, m, sec) = (n(0)?, n(2)?, n(4)?, n(6)?, n(8)?);
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    u64::try_from(days * 86_400 + h * 3600 + m * 60 + sec).ok()
}

fn bad(e: CertificateError) -> Error {
    Error::InvalidCertificate(e)
}

/// Verifies `signature` over `message` with `key` by the first of `algs` made for that key's
/// algorithm (and, when given, for the signature algorithm `sig_alg`).
fn verify(
    algs: &[&dyn rustls_pki_types::SignatureVerificationAlgorithm],
    key: &Spki<'_>,
    sig_alg: Option<&[u8]>,
    message: &[u8],
    signature: &[u8],
) -> Result<(), Error> {
    let mut tried = false;
    for alg in algs {
        if alg.public_key_alg_id().as_ref() != key.alg
            || sig_alg.is_some_and(|s| alg.signature_alg_id().as_ref() != s)
        {
            continue;
        }
        tried = true;
        if alg.verify_signature(key.key, message, signature).is_ok() {
            return Ok(());
        }
    }
    Err(bad(if tried {
        CertificateError::BadSignature
    } else {
        CertificateError::BadEncoding // no algorithm of the provider fits this key
    }))
}

/// A trusted CA certificate, kept as DER.
struct Root(Vec<u8>);

/// The webpki client verifier, accepting X.509 v1 client certificates as Pulsar does.
pub struct V1TolerantVerifier {
    /// The webpki verifier (every v3 certificate).
    inner: Arc<dyn ClientCertVerifier>,
    /// `tlsTrustCertsFilePath`'s certificates.
    roots: Vec<Root>,
    /// The provider's signature algorithms.
    algs: WebPkiSupportedAlgorithms,
}

impl std::fmt::Debug for V1TolerantVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("V1TolerantVerifier")
            .field("roots", &self.roots.len())
            .finish_non_exhaustive()
    }
}

impl V1TolerantVerifier {
    /// Wraps `inner`, trusting `roots` for v1 certificates.
    #[must_use]
    pub fn new(
        inner: Arc<dyn ClientCertVerifier>,
        roots: &[CertificateDer<'_>],
        algs: WebPkiSupportedAlgorithms,
    ) -> Self {
        V1TolerantVerifier {
            inner,
            roots: roots.iter().map(|c| Root(c.as_ref().to_vec())).collect(),
            algs,
        }
    }

    fn verify_v1(&self, cert: &Cert<'_>, now: UnixTime) -> Result<(), Error> {
        let now = now.as_secs();
        if now < cert.not_before {
            return Err(bad(CertificateError::NotValidYet));
        }
        if now > cert.not_after {
            return Err(bad(CertificateError::Expired));
        }
        let mut found = false;
        for root in &self.roots {
            let Some(ca) = parse(&root.0) else { continue };
            if ca.subject != cert.issuer {
                continue;
            }
            found = true;
            if verify(
                self.algs.all,
                &ca.spki,
                Some(cert.sig_alg),
                cert.tbs,
                cert.signature,
            )
            .is_ok()
            {
                return Ok(());
            }
        }
        Err(bad(if found {
            CertificateError::BadSignature
        } else {
            CertificateError::UnknownIssuer
        }))
    }

    fn handshake_signature(
        &self,
        message: &[u8],
        cert: &Cert<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        let algs = self
            .algs
            .mapping
            .iter()
            .find(|(scheme, _)| *scheme == dss.scheme)
            .map(|(_, algs)| *algs)
            .ok_or(Error::PeerMisbehaved(
                rustls::PeerMisbehaved::SignedHandshakeWithUnadvertisedSigScheme,
            ))?;
        verify(algs, &cert.spki, None, message, dss.signature())
            .map(|()| HandshakeSignatureValid::assertion())
    }
}

/// Whether TLS 1.3 allows a signature scheme (RFC 8446 4.2.3: no PKCS#1 v1.5, no SHA-1).
fn tls13_scheme(s: SignatureScheme) -> bool {
    !matches!(
        s,
        SignatureScheme::RSA_PKCS1_SHA1
            | SignatureScheme::RSA_PKCS1_SHA256
            | SignatureScheme::RSA_PKCS1_SHA384
            | SignatureScheme::RSA_PKCS1_SHA512
            | SignatureScheme::ECDSA_SHA1_Legacy
    )
}

/// The certificate when it parses as version 1.
fn v1<'a>(der: &'a CertificateDer<'_>) -> Option<Cert<'a>> {
    parse(der.as_ref()).filter(|c| c.version1)
}

impl ClientCertVerifier for V1TolerantVerifier {
    fn offer_client_auth(&self) -> bool {
        self.inner.offer_client_auth()
    }

    fn client_auth_mandatory(&self) -> bool {
        self.inner.client_auth_mandatory()
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.inner.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, Error> {
        match v1(end_entity) {
            Some(cert) => self
                .verify_v1(&cert, now)
                .map(|()| ClientCertVerified::assertion()),
            None => self
                .inner
                .verify_client_cert(end_entity, intermediates, now),
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        match v1(cert) {
            Some(c) => self.handshake_signature(message, &c, dss),
            None => self.inner.verify_tls12_signature(message, cert, dss),
        }
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        match v1(cert) {
            Some(c) if tls13_scheme(dss.scheme) => self.handshake_signature(message, &c, dss),
            Some(_) => Err(Error::PeerMisbehaved(
                rustls::PeerMisbehaved::SignedHandshakeWithUnadvertisedSigScheme,
            )),
            None => self.inner.verify_tls13_signature(message, cert, dss),
        }
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn x509_times() {
        assert_eq!(time(UTC_TIME, b"700101000000Z"), Some(0));
        assert_eq!(time(UTC_TIME, b"210217165655Z"), Some(1_613_581_015));
        assert_eq!(
            time(GENERALIZED_TIME, b"20410212165655Z"),
            Some(2_244_301_015)
        );
        assert_eq!(time(UTC_TIME, b"2102171656Z"), None);
    }
}
