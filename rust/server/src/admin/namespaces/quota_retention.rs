//! Retention against the backlog quota, as Pulsar checks them when either is set
//! (`checkQuotas` / `checkBacklogQuota`): a retention that keeps less than the destination
//! storage quota lets through (both limited) is refused with 412, at the namespace and at the
//! topic level, whichever of the two is set second.

use axum::http::StatusCode;
use axum::response::Response;
use pulsar_rs_broker::config::BrokerConfig;
use pulsar_rs_broker::policies::backlog_quota::{BacklogQuota, RetentionPolicy};
use pulsar_rs_broker::policies::{Policies, Retention};

use crate::http::fail;

/// The quota kind that counts against retention.
const DESTINATION_STORAGE: &str = "destination_storage";

/// Which level a policy is set at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::admin) enum At {
    /// A namespace's policies.
    Namespace,
    /// A topic's policies (over its namespace's).
    Topic,
}

/// Pulsar's `checkBacklogQuota`: whether `retention` keeps at least what `quota` lets pile up.
fn covers(quota: &BacklogQuota, r: &Retention) -> bool {
    if r.retention_size_in_mb <= 0 || r.retention_time_in_minutes <= 0 {
        return true;
    }
    quota.limit_size < r.retention_size_in_mb.saturating_mul(1 << 20)
        && quota.limit_time < r.retention_time_in_minutes.saturating_mul(60)
}

/// The broker's default quota (`backlogQuotaDefaultLimit*`).
fn default_quota(config: &BrokerConfig) -> BacklogQuota {
    BacklogQuota {
        limit_size: config.backlog_quota_default_limit_size(),
        limit_time: config.backlog_quota_default_limit_second,
        // Not looked at by the check.
        policy: RetentionPolicy::ProducerRequestHold,
    }
}

fn destination_storage(p: &Policies) -> Option<BacklogQuota> {
    p.backlog_quota_map.get(DESTINATION_STORAGE).copied()
}

/// Which of the two was set last (and is refused).
#[derive(Debug, Clone, Copy)]
enum Set {
    Retention,
    Quota,
}

fn refused(set: Set, at: At) -> Result<(), Response> {
    let message = match (set, at) {
        (Set::Retention, At::Namespace) => {
            "Retention Quota must exceed configured backlog quota for namespace."
        }
        (Set::Retention, At::Topic) => {
            "Retention Quota must exceed configured backlog quota for topic. Please increase \
             retention quota and retry"
        }
        (Set::Quota, At::Namespace) => {
            "Backlog Quota exceeds configured retention quota for namespace. Please increase \
             retention quota and retry"
        }
        (Set::Quota, At::Topic) => {
            "Backlog Quota exceeds configured retention quota for topic. Please increase \
             retention quota and retry"
        }
    };
    Err(fail(StatusCode::PRECONDITION_FAILED, message))
}

/// A new retention, checked against the quota in force: at a namespace, its destination
/// storage quota when it has any quota (the broker's default when only `message_age` is set);
/// at a topic, the topic's, else its namespace's, else the broker's default.
pub(in crate::admin) fn check_retention(
    r: &Retention,
    at: At,
    namespace: &Policies,
    topic: Option<&Policies>,
    config: &BrokerConfig,
) -> Result<(), Response> {
    let quota = match at {
        At::Namespace if namespace.backlog_quota_map.is_empty() => return Ok(()),
        At::Namespace => destination_storage(namespace),
        At::Topic => topic
            .and_then(destination_storage)
            .or_else(|| destination_storage(namespace)),
    }
    .unwrap_or_else(|| default_quota(config));
    if covers(&quota, r) {
        Ok(())
    } else {
        refused(Set::Retention, at)
    }
}

/// A new backlog quota of `quota_type`, checked against the retention in force: at a
/// namespace, its own retention (a `message_age` quota is checked as the broker's default
/// quota, as Pulsar does); at a topic, the topic's, else its namespace's, else the broker's.
pub(in crate::admin) fn check_quota(
    quota: &BacklogQuota,
    quota_type: &str,
    at: At,
    namespace: &Policies,
    topic: Option<&Policies>,
    config: &BrokerConfig,
) -> Result<(), Response> {
    let retention = match at {
        At::Namespace => namespace.retention,
        At::Topic => topic
            .and_then(|t| t.retention)
            .or(namespace.retention)
            .or(Some(Retention {
                retention_time_in_minutes: config.default_retention_time_in_minutes,
                retention_size_in_mb: config.default_retention_size_in_mb,
            })),
    };
    let Some(r) = retention else {
        return Ok(());
    };
    let quota = if at == At::Namespace && quota_type != DESTINATION_STORAGE {
        default_quota(config)
    } else {
        *quota
    };
    if covers(&quota, &r) {
        Ok(())
    } else {
        refused(Set::Quota, at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quota(limit_size: i64, limit_time: i64) -> BacklogQuota {
        BacklogQuota {
            limit_size,
            limit_time,
            policy: RetentionPolicy::ProducerRequestHold,
        }
    }

    fn retention(minutes: i64, mb: i64) -> Retention {
        Retention {
            retention_time_in_minutes: minutes,
            retention_size_in_mb: mb,
        }
    }

    #[test]
    fn a_retention_below_the_quota_is_refused_whichever_is_set_second() {
        let config = BrokerConfig::default();
        let mut ns = Policies::default();
        // No quota at the namespace: any retention.
        assert!(check_retention(&retention(60, 1024), At::Namespace, &ns, None, &config).is_ok());
        ns.backlog_quota_map
            .insert(DESTINATION_STORAGE.into(), quota(2 << 30, -1));
        // 1 GiB kept, 2 GiB allowed to pile up: refused; 20 GiB or unlimited: taken.
        assert!(check_retention(&retention(60, 1024), At::Namespace, &ns, None, &config).is_err());
        assert!(check_retention(&retention(60, 20480), At::Namespace, &ns, None, &config).is_ok());
        assert!(check_retention(&retention(60, -1), At::Namespace, &ns, None, &config).is_ok());
        // A topic without its own quota is held to its namespace's.
        let topic = Policies::default();
        assert!(
            check_retention(&retention(60, 1024), At::Topic, &ns, Some(&topic), &config).is_err()
        );
        // The quota set second, against the retention in force.
        ns.retention = Some(retention(60, 1024));
        let q = quota(2 << 30, -1);
        assert!(check_quota(&q, DESTINATION_STORAGE, At::Namespace, &ns, None, &config).is_err());
        assert!(check_quota(&q, "message_age", At::Namespace, &ns, None, &config).is_ok());
        let small = quota(1 << 20, -1);
        assert!(check_quota(&small, DESTINATION_STORAGE, At::Topic, &ns, None, &config).is_ok());
    }
}
