//! How a replicator (a persistent topic's or a non-persistent one's) reaches its remote cluster:
//! the remote's partitioned metadata first ([`super::partitions`]), then its producer there
//! under the replicator's name, the cluster record read again at each attempt (a changed URL or
//! credentials take effect at the next reconnection), and Pulsar's backoff between failed
//! attempts (100 ms doubling to 1 min), logged at the first failure and every tenth.

use std::time::Duration;

use pulsar_rs_broker::topic::repl_source::replicator_producer_name;
use pulsar_rs_broker::TopicName;

use super::remote::RemoteProducer;
use super::remote_cluster::RemoteCluster;
use crate::context::ServerContext;

/// How long opening the remote producer may take (lookup, CONNECT, PRODUCER).
const OPEN_TIMEOUT: Duration = Duration::from_secs(30);
/// Pulsar's replicator backoff: 100 ms doubling to 1 min.
const BACKOFF_MIN: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(60);

/// One replicator's way to its remote cluster. Owned by the replicator's task.
pub(super) struct Link<'a> {
    ctx: &'a ServerContext,
    /// The remote cluster's name.
    remote: &'a str,
    /// The topic (or partition) replicated.
    topic: &'a TopicName,
    /// The replicator's producer name (`<prefix>.<local>--><remote>`).
    name: String,
    /// Whether the remote cluster knows the partitioned topic of a partition.
    partitioned_on_remote: bool,
    /// The wait after the next failure.
    backoff: Duration,
    /// Failures in a row.
    failures: u32,
}

impl<'a> Link<'a> {
    pub(super) fn new(ctx: &'a ServerContext, remote: &'a str, topic: &'a TopicName) -> Self {
        let config = &ctx.service.config;
        Link {
            ctx,
            remote,
            topic,
            name: replicator_producer_name(&config.replicator_prefix, &config.cluster_name, remote),
            partitioned_on_remote: false,
            backoff: BACKOFF_MIN,
            failures: 0,
        }
    }

    /// Opens the replicator's producer on the remote cluster; the backoff starts again on
    /// success.
    ///
    /// # Errors
    /// Why the remote cannot be reached or refused, as text.
    pub(super) async fn open(&mut self) -> Result<RemoteProducer, String> {
        let (ctx, remote, topic) = (self.ctx, self.remote, self.topic);
        if !self.partitioned_on_remote {
            match super::partitions::ensure_on_remote(ctx, remote, topic).await {
                Ok(()) => self.partitioned_on_remote = true,
                // The producer is tried anyway; the failure shows with the producer's, if any.
                Err(e) => tracing::debug!(topic = %topic, remote, "replicator: {e}"),
            }
        }
        let cluster = RemoteCluster::of(ctx, remote).await?;
        let url = cluster.broker_url()?;
        let topic_name = topic.to_string();
        let producer =
            RemoteProducer::open(&cluster.client, &url, &topic_name, &self.name, OPEN_TIMEOUT)
                .await?;
        self.backoff = BACKOFF_MIN;
        self.failures = 0;
        tracing::info!(topic = %topic, remote, at = %producer.address, "replicator connected");
        Ok(producer)
    }

    /// After a failure (`why`): logs it (the first and every tenth: a remote down for long
    /// logs little), waits the backoff and doubles it.
    pub(super) async fn back_off(&mut self, why: &str) {
        self.failures += 1;
        let (failures, backoff) = (self.failures, self.backoff);
        if failures == 1 || failures.is_multiple_of(10) {
            tracing::warn!(topic = %self.topic, remote = self.remote, failures, "replicator: {why}; retrying in {backoff:?}");
        }
        tokio::time::sleep(backoff).await;
        self.backoff = (backoff * 2).min(BACKOFF_MAX);
    }
}
