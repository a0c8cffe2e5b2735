//! Pulsar's paths of managed-ledger records in its metadata store: a managed ledger's at
//! `/managed-ledgers/{tenant}/{ns}/{domain}/{local}` and each cursor's as its child, the local name
//! and the cursor name URL-encoded as Java's `URLEncoder` does (Pulsar's
//! `getPersistenceNamingEncoding`, and `Codec.encode` of the subscription), so records written
//! here are where a Pulsar broker looks for them.

/// The path of a managed ledger's record; names of other shapes than
/// `tenant/ns/domain/local` are used as they are.
#[must_use]
pub fn managed_ledger_path(name: &str) -> String {
    let mut parts = name.splitn(4, '/');
    match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(t), Some(n), Some(d), Some(local)) => {
            format!("/managed-ledgers/{t}/{n}/{d}/{}", url_encode(local))
        }
        _ => format!("/managed-ledgers/{name}"),
    }
}

/// The path of a cursor's record: a child of its managed ledger's.
#[must_use]
pub fn cursor_path(ml_name: &str, cursor: &str) -> String {
    format!("{}/{}", managed_ledger_path(ml_name), url_encode(cursor))
}

/// The managed-ledger name a record path under `/managed-ledgers/` stands for (inverse of
/// [`managed_ledger_path`] for four-segment names).
#[must_use]
pub fn ledger_name(tenant: &str, ns: &str, domain: &str, encoded_local: &str) -> String {
    format!("{tenant}/{ns}/{domain}/{}", url_decode(encoded_local))
}

/// Java's `URLEncoder.encode(s, UTF_8)`: `[A-Za-z0-9.*_-]` kept, space as `+`, the rest `%XX`.
#[must_use]
pub fn url_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'.' | b'*' | b'_' | b'-' => {
                out.push(b as char);
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// Reverses [`url_encode`] (a cursor name read back from the store).
pub fn url_decode(s: &str) -> String {
    let b = s.as_bytes();
    let hex = |c: u8| (c as char).to_digit(16);
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => match (hex(b[i + 1]), hex(b[i + 2])) {
                (Some(hi), Some(lo)) => {
                    // Two hex digits are at most 0xFF: the cast cannot truncate.
                    out.push((hi * 16 + lo) as u8);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_encode_the_local_name_as_pulsar() {
        assert_eq!(
            managed_ledger_path("public/default/persistent/a b:c%"),
            "/managed-ledgers/public/default/persistent/a+b%3Ac%25"
        );
        assert_eq!(
            ledger_name("public", "default", "persistent", "a+b%3Ac%25"),
            "public/default/persistent/a b:c%"
        );
        assert_eq!(
            managed_ledger_path("t/n/persistent/x-partition-1"),
            "/managed-ledgers/t/n/persistent/x-partition-1"
        );
    }

    #[test]
    fn cursor_names_are_encoded_and_read_back() {
        assert_eq!(
            cursor_path("t/n/persistent/x", "my sub/1"),
            "/managed-ledgers/t/n/persistent/x/my+sub%2F1"
        );
        assert_eq!(url_decode("my+sub%2F1"), "my sub/1");
    }
}
