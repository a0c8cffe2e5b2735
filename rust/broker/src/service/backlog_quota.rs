//! Backlog quotas (DESIGN 2.4), as Pulsar's `BacklogQuotaManager`: a topic over its size or
//! time quota either blocks its producers or, with `consumer_backlog_eviction`, moves its
//! slowest cursors forward.

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
        let subs: Vec<_> = topic
            .subscriptions()
            .into_iter()
            .filter(|s| s.durable)
            .collect();
        let Some(slowest) = subs
            .iter()
            .max_by_key(|s| s.cursor.estimated_backlog_size())
        else {
            return;
        };
        let backlog = slowest.cursor.estimated_backlog_size();
        if backlog <= target {
            return;
        }
        let entries = slowest.cursor.backlog();
        #[allow(
            clippy::cast_precision_loss,
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss
        )]
        let skip = (((backlog - target) as f64 / backlog as f64) * entries as f64)
            .ceil()
            .max(1.0) as u64;
        let before = slowest.cursor.mark_delete_position();
        slowest.cursor.skip_entries(skip);
        if slowest.cursor.mark_delete_position() == before {
            // No progress (apache/pulsar#13249): give up rather than loop.
            tracing::warn!(topic = %topic.name, subscription = %slowest.name, "backlog eviction made no progress");
            return;
        }
        tracing::info!(topic = %topic.name, subscription = %slowest.name, skipped = skip, "backlog quota eviction");
    }
}

/// Acknowledges, on every durable subscription, the entries published before `cutoff_ms`.
fn evict_by_time(topic: &Topic, cutoff_ms: u64) -> Result<(), BrokerError> {
    let first_kept = topic.ledger.find_position_by_time(cutoff_ms)?;
    let upto = topic.ledger.previous_position(first_kept);
    for s in topic.subscriptions().into_iter().filter(|s| s.durable) {
        if upto > s.cursor.mark_delete_position() && upto.entry_id >= 0 {
            s.cursor.mark_delete(upto)?;
        }
    }
    Ok(())
}
