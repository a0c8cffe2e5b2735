//! In a cluster, the cluster records (Pulsar's `ClusterData` at `/admin/clusters/{name}`) are the
//! configuration store's, as in Pulsar: a cluster registered, changed or deleted through any
//! broker (of this cluster, or of another cluster sharing the configuration store) is known to
//! every broker. This broker writes each change made through its admin API to the store
//! ([`share_cluster`], [`unshare_cluster`]) and follows the store with a watch on
//! `/admin/clusters`, installing every record that changed after a full read at start and
//! whenever the watch may have missed events ([`follow`]). A broker on its own keeps them in
//! its local store only.

use std::sync::Arc;
use std::time::Duration;

use pulsar_rs_cluster::{paths, ClusterError, ClusterMember, StoreEvent};
use serde_json::Value;
use tokio::sync::watch;

use crate::context::ServerContext;

/// Wait before watching again after the store failed.
const RETRY: Duration = Duration::from_secs(1);

/// In a cluster, writes a cluster record created or changed here to the store.
///
/// # Errors
/// Store failures.
pub async fn share_cluster(ctx: &ServerContext, name: &str) -> Result<(), ClusterError> {
    let (Some(m), Some(data)) = (ctx.cluster.get(), ctx.resources.cluster(name)) else {
        return Ok(());
    };
    m.put_cluster_document(name, &Value::Object(data)).await
}

/// In a cluster, deletes a cluster record deleted here from the store.
///
/// # Errors
/// Store failures.
pub async fn unshare_cluster(ctx: &ServerContext, name: &str) -> Result<(), ClusterError> {
    match ctx.cluster.get() {
        Some(m) => m.delete_cluster_document(name).await,
        None => Ok(()),
    }
}

/// Installs the cluster record at `path` here (other paths are not this module's); one the
/// store no longer has is deleted here when `deleted_elsewhere` (the watch saw it go).
async fn sync_path(
    ctx: &Arc<ServerContext>,
    m: &ClusterMember,
    path: &str,
    deleted_elsewhere: bool,
) {
    let Some(name) = paths::cluster_of(path) else {
        return;
    };
    if name == pulsar_rs_cluster::setup::GLOBAL_CLUSTER {
        return;
    }
    let doc = match m.cluster_document(name).await {
        Ok(d) => d,
        Err(e) => {
            tracing::warn!(cluster = %name, error = %e, "reading a cluster record failed");
            return;
        }
    };
    let (c, name) = (Arc::clone(ctx), name.to_owned());
    // Local metadata I/O: blocking pool.
    let installed = tokio::task::spawn_blocking(move || match doc {
        Some(Value::Object(data)) => {
            let changed = c.resources.install_cluster(&name, data)?;
            if changed {
                tracing::info!(cluster = %name, "cluster record of the configuration store installed");
            }
            Ok(())
        }
        Some(_) => {
            tracing::warn!(cluster = %name, "the store's ClusterData is not an object: kept as it was here");
            Ok(())
        }
        None if deleted_elsewhere => {
            if c.resources.delete_cluster(&name)? {
                tracing::info!(cluster = %name, "cluster deleted through another broker");
            }
            Ok(())
        }
        None => Ok::<_, pulsar_rs_broker::BrokerError>(()),
    })
    .await;
    match installed {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            tracing::warn!(path = %path, error = %e, "installing a cluster record failed")
        }
        Err(e) => tracing::warn!(path = %path, error = %e, "installing a cluster record failed"),
    }
}

/// Follows the cluster records of the configuration store until `stop`: reads them all, then
/// installs each one the watch reports changed; reads them all again whenever the watch may
/// have missed events (a reconnection, a new session).
pub async fn follow(ctx: Arc<ServerContext>, mut stop: watch::Receiver<bool>) {
    let Some(m) = ctx.cluster.get().map(Arc::clone) else {
        return;
    };
    loop {
        let mut watch = match m.watch_clusters().await {
            Ok(w) => w,
            Err(e) => {
                tracing::debug!(error = %e, "watching the cluster records failed: retrying");
                tokio::select! {
                    _ = stop.changed() => return,
                    () = tokio::time::sleep(RETRY) => continue,
                }
            }
        };
        match m.cluster_names().await {
            Ok(names) => {
                for name in names {
                    sync_path(&ctx, &m, &paths::cluster(&name), false).await;
                }
            }
            Err(e) => tracing::warn!(error = %e, "listing the cluster records failed"),
        }
        loop {
            let event = tokio::select! {
                _ = stop.changed() => return,
                e = watch.next() => e,
            };
            match event {
                StoreEvent::Changed(path) => sync_path(&ctx, &m, &path, true).await,
                StoreEvent::Resync => break,
            }
        }
    }
}
