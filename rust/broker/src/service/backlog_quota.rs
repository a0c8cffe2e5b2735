//! Backlog quotas (DESIGN 2.4), as Pulsar's `BacklogQuotaManager`: a topic over its size or
//! time quota either blocks its producers or, with `consumer_backlog_eviction`, moves its
//! slowest cursors forward. The cursors are the durable subscriptions' and the replicators'
//! ([`Topic::backlog_cursors`]): a remote cluster that is down holds the backlog as a slow
//! consumer does.

use super::BrokerService;
use crate::error::BrokerError;
use crate::policies::backlog_quota::RetentionPolicy;
use crate::topic::Topic;

/// Outcome of a backlog quota check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QuotaVerdict {
    /// Within quota (or no quota).
    Ok,
    /// Exceeded with a producer-blocking policy: refuse producers, disconnect existing ones.
    Blocked(RetentionPolicy),
    /// Exceeded with `consumer_backlog_eviction`: the slowest cursors were moved forward.
    Evicted,
}

impl BrokerService {
    /// Checks a topic's backlog quotas (DESIGN 2.4). Producer-blocking policies mark the topic
    /// blocked (the caller disconnects its producers); `consumer_backlog_eviction` moves the
    /// slowest cursors forward until the backlog is at most 0.9 × the limit, stopping when no
    /// progress is made.
    ///
    /// # Errors
    /// Storage failures while searching by time.
    pub fn check_backlog_quota(
        &self,
        topic: &Topic,
        now_ms: u64,
    ) -> Result<QuotaVerdict, BrokerError> {
        let eff = topic.effective_policy();
        let mut verdict = QuotaVerdict::Ok;
        if let Some(q) = eff.backlog_size {
            let limit = u64::try_from(q.limit_size).unwrap_or(0);
            if topic.backlog_size() > limit {
                verdict = match q.policy {
                    RetentionPolicy::ConsumerBacklogEviction => {
                        evict_by_size(topic, limit);
                        QuotaVerdict::Evicted
                    }
                    p => QuotaVerdict::Blocked(p),
                };
            }
        }
        if let Some(q) = eff.backlog_time {
            let limit_ms = u64::try_from(q.limit_time)
                .unwrap_or(0)
                .saturating_mul(1000);
            let oldest = topic.oldest_unacked_publish_time()?;
            if oldest.is_some_and(|t| now_ms.saturating_sub(t) > limit_ms) {
                verdict = match (q.policy, verdict) {
                    (RetentionPolicy::ConsumerBacklogEviction, v) => {
                        evict_by_time(topic, now_ms.saturating_sub(limit_ms * 9 / 10))?;
                        if v == QuotaVerdict::Ok {
                            QuotaVerdict::Evicted
                        } else {
                            v
                        }
                    }
                    (p, QuotaVerdict::Blocked(_)) | (p, _) => QuotaVerdict::Blocked(p),
                };
            }
        }
        topic.set_quota_blocked(match verdict {
            QuotaVerdict::Blocked(p) => Some(p),
            _ => None,
        });
        Ok(verdict)
    }
}

/// Skips entries on the slowest cursor until the estimated backlog is at most 0.9 × `limit`.
fn evict_by_size(topic: &Topic, limit: u64) {
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss
    )]
    let target = (limit as f64 * 0.9) as u64;
    for _ in 0..64 {
        let cursors = topic.backlog_cursors();
        let Some((name, slowest)) = cursors
            .iter()
            .max_by_key(|(_, c)| c.estimated_backlog_size())
        else {
            return;
        };
        let backlog = slowest.estimated_backlog_size();
        if backlog <= target {
            return;
        }
        let entries = slowest.backlog();
        #[allow(
            clippy::cast_precision_loss,
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss
        )]
        let skip = (((backlog - target) as f64 / backlog as f64) * entries as f64)
            .ceil()
            .max(1.0) as u64;
        let before = slowest.mark_delete_position();
        slowest.skip_entries(skip);
        if slowest.mark_delete_position() == before {
            // No progress (apache/pulsar#13249): give up rather than loop.
            tracing::warn!(topic = %topic.name, cursor = %name, "backlog eviction made no progress");
            return;
        }
        tracing::info!(topic = %topic.name, cursor = %name, skipped = skip, "backlog quota eviction");
    }
}

/// Acknowledges, on every cursor the backlog is kept for (durable subscriptions and
/// replicators), the entries published before `cutoff_ms`.
fn evict_by_time(topic: &Topic, cutoff_ms: u64) -> Result<(), BrokerError> {
    let first_kept = topic.ledger.find_position_by_time(cutoff_ms)?;
    let upto = topic.ledger.previous_position(first_kept);
    for (_, cursor) in topic.backlog_cursors() {
        if upto > cursor.mark_delete_position() && upto.entry_id >= 0 {
            cursor.mark_delete(upto)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use pulsar_rs_proto::pb::MessageMetadata;

    use super::*;
    use crate::config::BrokerConfig;
    use crate::naming::TopicName;
    use crate::policies::backlog_quota::BacklogQuota;

    /// A topic with no subscription whose replicator towards `west` (a cluster that is down)
    /// holds 100 entries of 1 KiB, under a 10 KiB size quota with `policy`.
    fn held_by_a_replicator(
        dir: &std::path::Path,
        policy: RetentionPolicy,
    ) -> (std::sync::Arc<BrokerService>, std::sync::Arc<Topic>) {
        let cfg = BrokerConfig {
            journal_sync_data: false,
            ..BrokerConfig::default()
        };
        let svc = BrokerService::open(cfg, dir).unwrap();
        let quota = BacklogQuota {
            limit_size: 10 * 1024,
            limit_time: -1,
            policy,
        };
        svc.policies
            .update_namespace("a/b", |p| {
                p.backlog_quota_map
                    .insert("destination_storage".into(), quota);
            })
            .unwrap();
        let t = svc
            .topic(&TopicName::parse("persistent://a/b/t").unwrap(), true)
            .unwrap();
        let cursor = t.replication_cursor("west").unwrap();
        for i in 0..100u64 {
            let md = MessageMetadata {
                producer_name: "p".into(),
                sequence_id: i,
                publish_time: 1,
                ..Default::default()
            };
            t.publish(pulsar_rs_proto::build_stored_entry(&md, &[7u8; 1024]), 1, 1)
                .unwrap();
        }
        assert_eq!(cursor.backlog(), 100);
        (svc, t)
    }

    #[test]
    fn a_replicators_backlog_counts_against_the_quota() {
        let dir = tempfile::tempdir().unwrap();
        let (svc, t) = held_by_a_replicator(dir.path(), RetentionPolicy::ProducerException);
        assert!(t.subscriptions().is_empty());
        assert!(t.backlog_size() > 100 * 1024, "{}", t.backlog_size());
        assert_eq!(
            svc.check_backlog_quota(&t, 2).unwrap(),
            QuotaVerdict::Blocked(RetentionPolicy::ProducerException)
        );
    }

    #[test]
    fn eviction_moves_a_replicators_cursor_too() {
        let dir = tempfile::tempdir().unwrap();
        let (svc, t) = held_by_a_replicator(dir.path(), RetentionPolicy::ConsumerBacklogEviction);
        assert_eq!(
            svc.check_backlog_quota(&t, 2).unwrap(),
            QuotaVerdict::Evicted
        );
        let (_, cursor) = t.replication_cursors().pop().unwrap();
        assert!(cursor.backlog() < 10, "{} entries left", cursor.backlog());
        assert!(t.backlog_size() <= 10 * 1024);
    }
}
