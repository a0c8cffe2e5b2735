//! Where a topic replicates to (Pulsar's `checkReplication` list): the topic's own
//! `replicationClusters` policy, else its namespace's `replication_clusters`, else only the
//! local cluster. Both are kept as Pulsar's JSON field names in the stored policies.

use std::collections::HashMap;

use serde_json::Value;

use super::store::PolicyStore;
use super::DispatchRate;
use crate::naming::TopicName;

/// The topic policy field of a topic's replication clusters.
pub const TOPIC_FIELD: &str = "replicationClusters";
/// The namespace `Policies` field of a namespace's replication clusters.
pub const NAMESPACE_FIELD: &str = "replication_clusters";
/// The topic policy field of a topic's replicators' rate (Pulsar's `DispatchRate`).
pub const RATE_FIELD: &str = "replicatorDispatchRate";

fn names(v: Option<&Value>) -> Option<Vec<String>> {
    let list = v?.as_array()?;
    Some(
        list.iter()
            .filter_map(|c| c.as_str().map(str::to_owned))
            .collect(),
    )
}

/// Namespace → its replication clusters (`None`: not set), filled as topics are resolved, so
/// one pass over many topics reads each namespace's policies once.
pub type NamespaceClusters = HashMap<String, Option<Vec<String>>>;

impl PolicyStore {
    /// The clusters `t` replicates to besides `local`, sorted; empty when it is not replicated.
    /// System topics (`__`-prefixed local names: transaction logs, topic policies) stay home.
    #[must_use]
    pub fn remote_clusters(&self, t: &TopicName, local: &str) -> Vec<String> {
        self.remote_clusters_in(t, local, &mut NamespaceClusters::new())
    }

    /// [`PolicyStore::remote_clusters`], reading namespaces through `seen`.
    #[must_use]
    pub fn remote_clusters_in(
        &self,
        t: &TopicName,
        local: &str,
        seen: &mut NamespaceClusters,
    ) -> Vec<String> {
        if t.local.starts_with("__") {
            return Vec::new();
        }
        let clusters = names(self.topic(t).other.get(TOPIC_FIELD)).or_else(|| {
            seen.entry(t.namespace_name())
                .or_insert_with_key(|ns| names(self.namespace(ns).other.get(NAMESPACE_FIELD)))
                .clone()
        });
        let mut remotes: Vec<String> = clusters
            .unwrap_or_default()
            .into_iter()
            .filter(|c| c != local)
            .collect();
        remotes.sort();
        remotes.dedup();
        remotes
    }

    /// The rate of `t`'s replicators, (messages/s, bytes/s), 0 = unlimited: its
    /// `replicatorDispatchRate` policy, else the broker's
    /// `dispatchThrottlingRatePerReplicatorIn{Msg,Byte}`.
    #[must_use]
    pub fn replicator_rate(&self, t: &TopicName) -> (f64, f64) {
        let own = self
            .topic(t)
            .other
            .get(RATE_FIELD)
            .and_then(|v| serde_json::from_value::<DispatchRate>(v.clone()).ok());
        match own {
            Some(r) => r.per_second(),
            None => {
                let c = &self.config;
                #[allow(clippy::cast_precision_loss)]
                let positive = |v: i64| if v > 0 { v as f64 } else { 0.0 };
                (
                    positive(c.dispatch_throttling_rate_per_replicator_in_msg),
                    positive(c.dispatch_throttling_rate_per_replicator_in_byte),
                )
            }
        }
    }
}
