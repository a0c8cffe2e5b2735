//! PIP-452's `properties` query parameter of a namespace's topic list
//! (`GET /admin/v2/persistent/{tenant}/{ns}?properties=k1=v1,k2=v2`, URL-encoded as
//! `pulsar-admin topics list -p` sends it), read into the pairs the broker lists by.

use std::collections::BTreeMap;

use axum::http::StatusCode;
use axum::response::Response;

use crate::http::fail;

/// `k1=v1,k2=v2` as its pairs (a value may hold `=`; an empty text is no pair); a pair without
/// `=` or with an empty key is refused with 400.
pub(in crate::admin) fn parse_properties(text: &str) -> Result<BTreeMap<String, String>, Response> {
    let mut out = BTreeMap::new();
    for pair in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => {
                out.insert(k.trim().to_owned(), v.trim().to_owned());
            }
            _ => {
                return Err(fail(
                    StatusCode::BAD_REQUEST,
                    format!(
                        "Invalid properties: {pair} (expected key=value pairs separated by ',')"
                    ),
                ))
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::parse_properties;

    #[test]
    fn pairs_are_read_and_a_pair_without_a_key_is_refused() {
        let p = parse_properties("env=prod, region=us-west,url=a=b").unwrap();
        assert_eq!(p.len(), 3);
        assert_eq!(p["region"], "us-west");
        assert_eq!(p["url"], "a=b");
        assert!(parse_properties("").unwrap().is_empty());
        assert!(parse_properties("env").is_err());
        assert!(parse_properties("=x").is_err());
    }
}
