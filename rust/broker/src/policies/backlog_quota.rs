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

/// `BacklogQuota`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BacklogQuota {
    /// Size limit in bytes (−1 = none).
    #[serde(default = "minus_one", alias = "limit")]
    pub limit_size: i64,
    /// Time limit in seconds (−1 = none).
    #[serde(default = "minus_one")]
    pub limit_time: i64,
    /// The policy applied when exceeded.
    pub policy: RetentionPolicy,
}

fn minus_one() -> i64 {
    -1
}
