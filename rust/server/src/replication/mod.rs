//! Geo-replication, as Apache Pulsar's: a topic whose replication clusters (its
//! `replicationClusters` policy, else its namespace's `replication_clusters`) name clusters
//! besides this one has, per remote cluster, a replication cursor (opened when the topic loads,
//! in the broker crate) and a replicator ([`replicator`]) sending what that cursor holds to a
//! producer on the remote cluster ([`remote`]), entry by entry ([`entry`]). The remote
//! clusters are found in the cluster records (`PUT /admin/v2/clusters/{name}`) and reached with
//! this broker's client settings (`brokerClient*`).
//!
//! The [`registry::Replicators`] keep what runs; [`spawn`] starts the task that, every second, compares
//! the loaded topics' replication clusters with it (Pulsar runs `checkReplication` on loads
//! and policy changes): replicators start for new clusters, stop when a topic unloads, and a
//! cluster taken out of the list has its replicator stopped and its cursor deleted. A
//! non-persistent topic's replicators ([`non_persistent`]) tap the topic instead of reading a
//! cursor.

mod entry;
mod in_flight;
mod link;
mod non_persistent;
mod partitions;
pub mod registry;
mod remote;
mod remote_cluster;
mod replicator;
mod snapshots;
pub mod view;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use pulsar_rs_broker::nonpersistent::NonPersistentTopic;
use pulsar_rs_broker::topic::Topic;
use pulsar_rs_ledger::Cursor;
use tokio::sync::watch;
use tokio::task::JoinSet;

use self::registry::{Replicated, Running, Status};
use crate::context::ServerContext;

/// Whether `name` is a replicator producer's (`<prefix>.<from>--><to>`), as Pulsar's
/// `Producer` tells another cluster's replicator from a local producer.
#[must_use]
pub fn is_replicator_producer(prefix: &str, name: &str) -> bool {
    source_cluster(prefix, name).is_some()
}

/// The cluster a replicator producer named `name` replicates from (the text before `-->`).
#[must_use]
pub fn source_cluster<'a>(prefix: &str, name: &'a str) -> Option<&'a str> {
    let rest = name.strip_prefix(prefix)?.strip_prefix('.')?;
    rest.split_once("-->").map(|(from, _)| from)
}

/// How often the loaded topics' replication clusters are checked.
const CHECK_PERIOD: Duration = Duration::from_secs(1);

/// Spawns the task that starts and stops replicators (it returns, stopping them all, at
/// `shutdown`) and the replicated subscriptions' snapshot timer ([`snapshots`]).
pub(crate) fn spawn(
    tasks: &mut JoinSet<()>,
    ctx: &Arc<ServerContext>,
    shutdown: &watch::Receiver<bool>,
) {
    snapshots::spawn(tasks, ctx, shutdown);
    let (ctx, mut shutdown) = (Arc::clone(ctx), shutdown.clone());
    tasks.spawn(async move {
        let mut tick = tokio::time::interval(CHECK_PERIOD);
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                _ = shutdown.changed() => break,
            }
            check(&ctx).await;
        }
        ctx.replicators.stop_all();
    });
}

/// What a loaded topic wants towards one remote cluster.
enum Want {
    /// A persistent topic's replicator, reading this replication cursor.
    Persistent(Arc<Topic>, Arc<Cursor>),
    /// A non-persistent topic's replicator.
    NonPersistent(Arc<NonPersistentTopic>),
}

impl Want {
    /// Whether `running` replicates this very topic object (not a reload of it), still open.
    fn is_run_by(&self, running: &Replicated) -> bool {
        match (self, running) {
            (Want::Persistent(w, _), Replicated::Persistent(r)) => r
                .upgrade()
                .is_some_and(|t| !t.ledger.is_closed() && Arc::ptr_eq(w, &t)),
            (Want::NonPersistent(w), Replicated::NonPersistent(r)) => {
                r.upgrade().is_some_and(|t| Arc::ptr_eq(w, &t))
            }
            _ => false,
        }
    }
}

/// What the loaded topics want: by (topic, remote), what to replicate; and (topic, remote)
/// whose cursor must go (the cluster left the list). Blocking: opens and reads cursors.
type Wanted = (HashMap<(String, String), Want>, Vec<(Arc<Topic>, String)>);

fn wanted(ctx: &ServerContext) -> Wanted {
    let service = &ctx.service;
    let local = &service.config.cluster_name;
    let (mut run, mut stale) = (HashMap::new(), Vec::new());
    let mut namespaces = pulsar_rs_broker::policies::replication::NamespaceClusters::new();
    for topic in service.loaded_topics() {
        if topic.ledger.is_closed() {
            continue;
        }
        let remotes = service
            .policies
            .remote_clusters_in(&topic.name, local, &mut namespaces);
        let open = topic.replication_cursors();
        if remotes.is_empty() && open.is_empty() {
            continue;
        }
        for (remote, _) in open {
            if !remotes.contains(&remote) {
                stale.push((Arc::clone(&topic), remote));
            }
        }
        for remote in remotes {
            match topic.replication_cursor(&remote) {
                Ok(cursor) => {
                    run.insert(
                        (topic.name.to_string(), remote),
                        Want::Persistent(Arc::clone(&topic), cursor),
                    );
                }
                Err(e) => {
                    tracing::warn!(topic = %topic.name, remote = %remote, error = %e, "opening a replication cursor");
                }
            }
        }
    }
    for topic in service.non_persistent_topics() {
        for remote in service
            .policies
            .remote_clusters_in(&topic.name, local, &mut namespaces)
        {
            run.insert(
                (topic.name.to_string(), remote),
                Want::NonPersistent(Arc::clone(&topic)),
            );
        }
    }
    (run, stale)
}

/// One comparison of what runs with what the loaded topics want.
async fn check(ctx: &Arc<ServerContext>) {
    let c = Arc::clone(ctx);
    let Ok((run, stale)) = tokio::task::spawn_blocking(move || wanted(&c)).await else {
        return;
    };
    {
        // Lock: map bookkeeping only, no await inside.
        let mut running = ctx.replicators.running.lock();
        running.retain(|key, r| {
            let keep = run.get(key).is_some_and(|want| want.is_run_by(&r.topic));
            if !keep {
                r.task.abort();
            }
            keep
        });
        for (key, want) in run {
            if running.contains_key(&key) {
                continue;
            }
            let remote = key.1.clone();
            let status = Arc::new(Status::default());
            let (topic, task) = match want {
                Want::Persistent(topic, cursor) => (
                    Replicated::Persistent(Arc::downgrade(&topic)),
                    tokio::spawn(replicator::run(
                        Arc::clone(ctx),
                        topic,
                        remote,
                        cursor,
                        Arc::clone(&status),
                    )),
                ),
                Want::NonPersistent(topic) => (
                    Replicated::NonPersistent(Arc::downgrade(&topic)),
                    tokio::spawn(non_persistent::run(
                        Arc::clone(ctx),
                        topic,
                        remote,
                        Arc::clone(&status),
                    )),
                ),
            };
            running.insert(
                key,
                Running {
                    topic,
                    status,
                    task: task.abort_handle(),
                },
            );
        }
    }
    for (topic, remote) in stale {
        let removed = tokio::task::spawn_blocking(move || {
            topic
                .remove_replication_cursor(&remote)
                .map(|()| (topic, remote))
        })
        .await;
        match removed {
            Ok(Ok((topic, remote))) => {
                tracing::info!(topic = %topic.name, remote = %remote, "replication to a cluster removed: its cursor deleted");
            }
            Ok(Err(e)) => tracing::warn!(error = %e, "deleting a replication cursor"),
            Err(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tells_replicator_producers_apart() {
        assert!(is_replicator_producer(
            "pulsar.repl",
            "pulsar.repl.east-->west"
        ));
        assert_eq!(
            source_cluster("pulsar.repl", "pulsar.repl.east-->west"),
            Some("east")
        );
        assert!(!is_replicator_producer("pulsar.repl", "pulsar.repl.east"));
        assert!(!is_replicator_producer("pulsar.repl", "standalone-0-1"));
    }
}
