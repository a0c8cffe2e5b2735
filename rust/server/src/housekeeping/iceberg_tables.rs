//! Topic tables: every second, each loaded topic whose `icebergTable` policy (its own, else its
//! namespace's) is on gets its table cursor and, once its commit interval has passed since its
//! last commit, a commit queued on the table committer; a topic whose policy went off loses its
//! table cursor, so the table no longer holds its ledgers.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use pulsar_rs_broker::BrokerService;
use pulsar_rs_table::{policy, IcebergTablePolicy, TableCommitter};
use tokio::sync::watch;

use crate::context::ServerContext;

/// How often topics are looked at (commit intervals are whole seconds).
const PERIOD: Duration = Duration::from_secs(1);

/// The policy in force for a topic.
#[must_use]
pub(crate) fn policy_of(
    service: &BrokerService,
    name: &pulsar_rs_broker::TopicName,
) -> Option<IcebergTablePolicy> {
    let topic = service.policies.topic(name);
    let namespace = service.policies.namespace(&name.namespace_name());
    IcebergTablePolicy::resolve(
        topic.other.get(policy::KEY),
        namespace.other.get(policy::KEY),
    )
}

/// Runs until shutdown (only on a broker with a catalog).
pub(super) async fn run(ctx: Arc<ServerContext>, shutdown: watch::Receiver<bool>) {
    let Some(tables) = ctx.tables.clone() else {
        return;
    };
    // Topic → when its last commit was queued (ms, the broker's clock). Lock: only this task's
    // runs touch it, one at a time; held for the pass.
    let last: Arc<Mutex<HashMap<String, u64>>> = Arc::default();
    super::every(PERIOD, &ctx, shutdown, move |service| {
        pass(service, &tables, &mut last.lock());
    })
    .await;
}

fn pass(service: &BrokerService, tables: &TableCommitter, last: &mut HashMap<String, u64>) {
    let now = service.clock().now_ms();
    let mut seen = Vec::new();
    for topic in service.loaded_topics() {
        if !topic.name.is_persistent() {
            continue;
        }
        let key = topic.name.to_string();
        match policy_of(service, &topic.name).filter(|p| p.enabled) {
            Some(p) => {
                if let Err(e) = topic.table_cursor() {
                    tracing::warn!(topic = %key, error = %e, "opening the table cursor");
                    continue;
                }
                let due = last
                    .get(&key)
                    .is_none_or(|&at| now.saturating_sub(at) >= p.commit_interval_seconds * 1000);
                if due {
                    last.insert(key.clone(), now);
                    tables.submit(Arc::clone(&topic), p);
                }
                seen.push(key);
            }
            None => {
                if let Err(e) = topic.remove_table_cursor() {
                    tracing::warn!(topic = %key, error = %e, "removing the table cursor");
                }
            }
        }
    }
    last.retain(|k, _| seen.contains(k));
}
