//! A loaded topic's replication as its stats and the metrics show it: per remote cluster, the
//! replication cursor, this broker's replicator towards that cluster and that cluster's
//! replicator producer publishing here.

use std::sync::Arc;

use pulsar_rs_broker::topic::Topic;
use pulsar_rs_broker::ProducerInfo;
use pulsar_rs_ledger::Cursor;

use super::registry::Status;
use super::source_cluster;
use crate::context::ServerContext;

/// One remote cluster of a topic.
pub struct Peer {
    /// The remote cluster's name.
    pub remote: String,
    /// The replication cursor towards it (what is still to be sent there).
    pub cursor: Arc<Cursor>,
    /// This broker's replicator towards it, when one runs.
    pub outbound: Option<Arc<Status>>,
    /// Its replicator's producer on this topic, when connected.
    pub inbound: Option<ProducerInfo>,
}

/// The remote clusters `topic` replicates to, sorted by name.
#[must_use]
pub fn peers(ctx: &ServerContext, topic: &Topic) -> Vec<Peer> {
    let cursors = topic.replication_cursors();
    if cursors.is_empty() {
        return Vec::new();
    }
    let prefix = &ctx.service.config.replicator_prefix;
    let running = ctx.replicators.of_topic(&topic.name.to_string());
    let mut producers = topic.producers();
    let mut peers: Vec<Peer> = cursors
        .into_iter()
        .map(|(remote, cursor)| {
            let outbound = running
                .iter()
                .find(|(r, _)| *r == remote)
                .map(|(_, s)| Arc::clone(s));
            let inbound = producers
                .iter()
                .position(|p| source_cluster(prefix, &p.name) == Some(remote.as_str()))
                .map(|i| producers.swap_remove(i));
            Peer {
                remote,
                cursor,
                outbound,
                inbound,
            }
        })
        .collect();
    peers.sort_by(|a, b| a.remote.cmp(&b.remote));
    peers
}
