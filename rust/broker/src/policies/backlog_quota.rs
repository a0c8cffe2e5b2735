//! Pulsar's `BacklogQuota` policy document and its `RetentionPolicy` (what happens when a
//! quota is exceeded). It stands alone, below the error type that names a refusing policy
//! ([`crate::error::BrokerError::QuotaExceeded`]); the checks are the service's
//! ([`crate::service::backlog_quota`]).

use serde::{Deserialize, Serialize};

/// What happens when a backlog quota is exceeded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RetentionPolicy {
    /// Refuse new producers (ProducerBlockedQuotaExceededError) and disconnect existing ones.
    ProducerRequestHold,
    /// Same, with ProducerBlockedQuotaExceededException: pending sends fail.
    ProducerException,
    /// Move the slowest cursor forward to bring the backlog under the limit.
    ConsumerBacklogEviction,
}

/// `BacklogQuota`. Its JSON is Pulsar's `BacklogQuotaImpl`, which carries the size twice: the
/// deprecated `limit` and `limitSize` (the Java admin client sends both), see [`BacklogQuotaDoc`].
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(from = "BacklogQuotaDoc", into = "BacklogQuotaDoc")]
pub struct BacklogQuota {
    /// Size limit in bytes (−1 = none).
    pub limit_size: i64,
    /// Time limit in seconds (−1 = none).
    pub limit_time: i64,
    /// The policy applied when exceeded.
    pub policy: RetentionPolicy,
}

/// The JSON form of [`BacklogQuota`]: `limitSize` wins over the deprecated `limit` when a body has
/// both (they are equal in what Pulsar's clients send); both are written back, as Pulsar does.
#[derive(Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct BacklogQuotaDoc {
    #[serde(default, deserialize_with = "number_or_string")]
    limit: Option<i64>,
    #[serde(default, deserialize_with = "number_or_string")]
    limit_size: Option<i64>,
    #[serde(default = "minus_one")]
    limit_time: i64,
    policy: RetentionPolicy,
}

/// A number, or a number written as a JSON string (`"10240"`): Pulsar's Jackson coerces one to
/// the other, and the Go admin client sends the limits as strings.
fn number_or_string<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Lenient {
        Number(i64),
        Text(String),
    }
    match Option::<Lenient>::deserialize(d)? {
        None => Ok(None),
        Some(Lenient::Number(n)) => Ok(Some(n)),
        Some(Lenient::Text(t)) => t
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| serde::de::Error::custom(format!("not a number: {t:?}"))),
    }
}

impl From<BacklogQuotaDoc> for BacklogQuota {
    fn from(d: BacklogQuotaDoc) -> Self {
        BacklogQuota {
            limit_size: d.limit_size.or(d.limit).unwrap_or(-1),
            limit_time: d.limit_time,
            policy: d.policy,
        }
    }
}

impl From<BacklogQuota> for BacklogQuotaDoc {
    fn from(q: BacklogQuota) -> Self {
        BacklogQuotaDoc {
            limit: Some(q.limit_size),
            limit_size: Some(q.limit_size),
            limit_time: q.limit_time,
            policy: q.policy,
        }
    }
}

fn minus_one() -> i64 {
    -1
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Java admin client sends the deprecated `limit` beside `limitSize` (a duplicate field
    /// when `limit` was an alias); both are written back, as Pulsar's `BacklogQuotaImpl`.
    #[test]
    fn backlog_quota_takes_limit_and_limit_size_together() {
        let q: BacklogQuota = serde_json::from_str(
            r#"{"limit":2048,"limitSize":2048,"limitTime":-1,"policy":"producer_exception"}"#,
        )
        .unwrap();
        assert_eq!(q.limit_size, 2048);
        let q: BacklogQuota =
            serde_json::from_str(r#"{"limit":512,"policy":"producer_exception"}"#).unwrap();
        assert_eq!((q.limit_size, q.limit_time), (512, -1));
        let v = serde_json::to_value(q).unwrap();
        assert_eq!(v["limit"], 512);
        assert_eq!(v["limitSize"], 512);
        // The Go admin client writes the limits as strings; Jackson coerces them.
        let q: BacklogQuota = serde_json::from_str(
            r#"{"limit":"10240","limitSize":"10240","policy":"producer_exception"}"#,
        )
        .unwrap();
        assert_eq!(q.limit_size, 10240);
        assert!(serde_json::from_str::<BacklogQuota>(
            r#"{"limitSize":"x","policy":"producer_exception"}"#
        )
        .is_err());
    }
}
