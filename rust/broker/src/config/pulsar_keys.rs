//! The configuration keys Apache Pulsar's broker knows, as data (`pulsar_keys.txt`, generated
//! from Pulsar's `ServiceConfiguration` by `rust/broker/tools/gen_pulsar_keys.py`), and the
//! closest-key suggestion for a key that is none of them.

use std::collections::HashSet;
use std::sync::OnceLock;

const DATA: &str = include_str!("pulsar_keys.txt");

fn keys() -> &'static HashSet<&'static str> {
    static KEYS: OnceLock<HashSet<&'static str>> = OnceLock::new();
    KEYS.get_or_init(|| {
        DATA.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .collect()
    })
}

/// Whether Pulsar's broker has a setting of this name.
#[must_use]
pub fn is_pulsar_key(key: &str) -> bool {
    keys().contains(key)
}

/// Every key Pulsar's broker has.
pub fn all() -> impl Iterator<Item = &'static str> {
    keys().iter().copied()
}

/// Levenshtein distance, case-insensitive (a wrong capital is the commonest typo).
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().flat_map(char::to_lowercase).collect();
    let b: Vec<char> = b.chars().flat_map(char::to_lowercase).collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// The candidate closest to `key` by edit distance (ties: the alphabetically first).
#[must_use]
pub fn closest<'a>(key: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (distance(key, c), c))
        .min()
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_has_pulsars_keys() {
        for k in [
            "brokerServicePort",
            "managedLedgerCacheSizeMB",
            "advertisedListeners",
            "tokenSecretKey",
            "basicAuthConf",
            "loadBalancerNamespaceBundleSplitIntervalMinutes",
        ] {
            assert!(is_pulsar_key(k), "{k}");
        }
        assert!(!is_pulsar_key("properties"));
        assert!(!is_pulsar_key("brokerServicePorts"));
        assert!(all().count() > 500);
    }

    #[test]
    fn closest_key() {
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("ABC", "abc"), 0);
        assert_eq!(
            closest("brokerServicePrt", all()),
            Some("brokerServicePort")
        );
        assert_eq!(
            closest("managedledgercachesizemb", all()),
            Some("managedLedgerCacheSizeMB")
        );
    }
}
