//! Pulsar's `TopicList`: which topics of a namespace a pattern consumer's pattern names, and the
//! hash by which a client and the broker tell whether they know the same list (the topic-list
//! watcher's `topics_hash`, and the filtered GET_TOPICS_OF_NAMESPACE's).
//!
//! As Pulsar: the pattern is matched whole against a topic's partitioned-topic name without its
//! `persistent://` scheme (a pattern's own scheme is removed first), so a partition matches when
//! its topic does; the hash is CRC32C of the sorted full names joined by `,`, written as Guava
//! writes a 32-bit hash code (its four bytes little-endian, in lower-case hex).

use regex::Regex;

use crate::error::BrokerError;
use crate::naming::TopicName;

/// A pattern consumer's topics pattern.
#[derive(Debug, Clone)]
pub struct TopicsPattern {
    /// The pattern without its scheme, anchored at both ends.
    regex: Regex,
}

/// The scheme separator of a topic name.
const SCHEME: &str = "://";

impl TopicsPattern {
    /// Compiles `pattern` (`persistent://tenant/ns/orders-.*`, or without the scheme).
    ///
    /// # Errors
    /// [`BrokerError::NotAllowed`]: not a regular expression this broker reads.
    pub fn parse(pattern: &str) -> Result<Self, BrokerError> {
        let bare = pattern.split_once(SCHEME).map_or(pattern, |(_, rest)| rest);
        Regex::new(&format!("^(?:{bare})$"))
            .map(|regex| TopicsPattern { regex })
            .map_err(|e| BrokerError::NotAllowed(format!("bad topics pattern {pattern}: {e}")))
    }

    /// Whether `topic` (a full name; a partition's) is one the pattern names.
    #[must_use]
    pub fn matches(&self, topic: &str) -> bool {
        let base =
            TopicName::parse(topic).map_or_else(|_| topic.to_owned(), |t| t.base().to_string());
        let bare = base
            .split_once(SCHEME)
            .map_or(base.as_str(), |(_, rest)| rest);
        self.regex.is_match(bare)
    }

    /// The topics of `topics` the pattern names, in their order.
    #[must_use]
    pub fn filter(&self, topics: &[String]) -> Vec<String> {
        topics.iter().filter(|t| self.matches(t)).cloned().collect()
    }
}

/// Pulsar's `TopicList.calculateHash`.
#[must_use]
pub fn topics_hash(topics: &[String]) -> String {
    let mut sorted: Vec<&str> = topics.iter().map(String::as_str).collect();
    sorted.sort_unstable();
    let crc = crc32c::crc32c(sorted.join(",").as_bytes());
    crc.to_le_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn the_hash_is_pulsars() {
        // Pulsar's TopicList.calculateHash of these two names, and of none.
        let two = names(&[
            "persistent://public/default/t2",
            "persistent://public/default/t1",
        ]);
        assert_eq!(topics_hash(&two), "8bafeea1");
        assert_eq!(topics_hash(&[]), "00000000");
    }

    #[test]
    fn a_pattern_names_whole_topics_and_their_partitions() {
        let p = TopicsPattern::parse("persistent://public/default/orders-.*").unwrap();
        let all = names(&[
            "persistent://public/default/orders-eu",
            "persistent://public/default/orders-us-partition-3",
            "persistent://public/default/returns",
            "persistent://public/other/orders-eu",
            "persistent://public/default/xorders-eu",
        ]);
        assert_eq!(
            p.filter(&all),
            names(&[
                "persistent://public/default/orders-eu",
                "persistent://public/default/orders-us-partition-3",
            ])
        );
        // Without a scheme, and matched whole.
        let bare = TopicsPattern::parse("public/default/orders").unwrap();
        assert!(bare.matches("persistent://public/default/orders"));
        assert!(!bare.matches("persistent://public/default/orders-eu"));
        assert!(TopicsPattern::parse("public/default/(").is_err());
    }
}
