//! A minimal DER reader for X.509: one element at a time ([`element`], also used by the v1
//! verifier), and the subject's Common Name, which is a client's role under
//! `AuthenticationProviderTls` (the client names the method `tls` and sends no auth data).
//! The walk: Certificate → tbsCertificate → subject → the last `id-at-commonName` attribute.

/// A DER element: (tag, content, rest).
pub(crate) fn element(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first & 0x80 == 0 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |acc, &b| (acc << 8) | usize::from(b));
        (len, &rest[n..])
    };
    if rest.len() < len {
        return None;
    }
    Some((tag, &rest[..len], &rest[len..]))
}

const SEQUENCE: u8 = 0x30;
const SET: u8 = 0x31;
const OID: u8 = 0x06;
/// 2.5.4.3 (id-at-commonName).
const CN_OID: &[u8] = &[0x55, 0x04, 0x03];

/// The subject CN of a DER certificate.
#[must_use]
pub fn common_name(cert_der: &[u8]) -> Option<String> {
    let (SEQUENCE, cert, _) = element(cert_der)? else {
        return None;
    };
    let (SEQUENCE, tbs, _) = element(cert)? else {
        return None;
    };
    let mut rest = tbs;
    // [0] version (optional), serial, signature algorithm, issuer, validity, subject.
    let (tag, _, r) = element(rest)?;
    rest = if tag == 0xa0 { element(r)?.2 } else { r };
    for _ in 0..3 {
        rest = element(rest)?.2; // signature algorithm, issuer, validity
    }
    let (SEQUENCE, mut rdns, _) = element(rest)? else {
        return None;
    };
    let mut cn = None;
    while !rdns.is_empty() {
        let (SET, mut set, r) = element(rdns)? else {
            return None;
        };
        rdns = r;
        while !set.is_empty() {
            let (SEQUENCE, atv, r) = element(set)? else {
                return None;
            };
            set = r;
            let (OID, oid, value) = element(atv)? else {
                return None;
            };
            if oid == CN_OID {
                let (_, text, _) = element(value)?;
                cn = Some(String::from_utf8_lossy(text).into_owned());
            }
        }
    }
    cn
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cn_of_a_certificate() {
        // A self-signed certificate with subject "C=US, O=pulsar-rs, CN=client-role"
        // (generated with `openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256`).
        let pem = include_str!("../../tests/data/client-role.pem");
        let b64: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
        let der = base64::Engine::decode(&base64::engine::general_purpose::STANDARD, b64).unwrap();
        assert_eq!(common_name(&der).as_deref(), Some("client-role"));
        assert_eq!(common_name(&der[..40]), None);
        assert_eq!(common_name(b"\x30\x00"), None);
    }
}
