//! In a cluster, tenants and namespaces with their policies are the cluster's, as in Pulsar:
//! a tenant's `TenantInfo` (`/admin/policies/{tenant}`) and a namespace's `Policies` document
//! (`/admin/policies/{tenant}/{ns}`) in the metadata store are the ones every broker applies,
//! whichever broker (a pulsar-rs one or an Apache Pulsar one) an operator changed them through.
//! This broker
//!
//! * writes each namespace change it makes to the store, only the document fields the change
//!   touched, by compare-and-set, so concurrent changes of other fields through other brokers
//!   survive ([`update_namespace`], [`share_new_namespace`]), and each tenant change as the
//!   whole record, as Pulsar does ([`share_tenant`], [`unshare_tenant`]);
//! * follows the store with a watch on `/admin/policies` and installs every tenant and namespace
//!   document that changed, after a full read at start and whenever the watch may have missed
//!   events ([`follow`]), and adopts a namespace it meets in a lookup before the watch brought
//!   it ([`adopt_namespace`]).
//!
//! A broker on its own keeps them in its local store only. Topic policies (Pulsar keeps them in
//! each namespace's `__change_events` topic) stay with the broker they were set on.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use pulsar_rs_broker::policies::Policies;
use pulsar_rs_cluster::member::policies::Document;
use pulsar_rs_cluster::{paths, ClusterError, ClusterMember, StoreEvent};
use serde_json::Value;
use tokio::sync::watch;

use crate::context::ServerContext;
use crate::error::ServerError;
use crate::http::{broker_fail, fail};
use crate::policies_document::{document, parse_document};

/// Document fields the store keeps for the cluster, never written from a policy change here:
/// the bundle split (the replication clusters are a policy like the others, shared with every
/// cluster using the same configuration store).
const CLUSTER_FIELDS: [&str; 1] = ["bundles"];

/// Wait before watching again after the store failed.
const RETRY: Duration = Duration::from_secs(1);

/// The document fields that differ between two versions of a namespace's policies: those to
/// set (with their new values) and those to remove (unset now).
fn changed_fields(before: &Policies, after: &Policies, cluster: &str) -> (Document, Vec<String>) {
    let as_map = |p: &Policies| match document(p, cluster) {
        Value::Object(m) => m,
        _ => Document::new(),
    };
    let (old, new) = (as_map(before), as_map(after));
    let keys: BTreeSet<&String> = old.keys().chain(new.keys()).collect();
    let (mut set, mut removed) = (Document::new(), Vec::new());
    for k in keys {
        if CLUSTER_FIELDS.contains(&k.as_str()) || old.get(k) == new.get(k) {
            continue;
        }
        match new.get(k).filter(|v| !v.is_null()) {
            Some(v) => {
                set.insert(k.clone(), v.clone());
            }
            None => removed.push(k.clone()),
        }
    }
    (set, removed)
}

/// Changes a namespace's policies with `f` (204, or the error's status): here, and in a
/// cluster also in the store. When the store refuses, the namespace's policies are read back
/// from it (503): the cluster's document stays the truth.
pub async fn update_namespace(
    ctx: &Arc<ServerContext>,
    ns: String,
    f: impl FnOnce(&mut Policies) + Send + 'static,
) -> Response {
    let svc = Arc::clone(&ctx.service);
    let name = ns.clone();
    let changed = tokio::task::spawn_blocking(move || {
        let (before, after) = svc.policies.change_namespace(&name, f)?;
        svc.refresh_policies();
        Ok::<_, pulsar_rs_broker::BrokerError>((before, after))
    })
    .await;
    let (before, after) = match changed {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => return broker_fail(&e),
        Err(e) => return fail(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    };
    let Some(m) = ctx.cluster.get() else {
        return StatusCode::NO_CONTENT.into_response();
    };
    let (set, removed) = changed_fields(&before, &after, m.cluster());
    if set.is_empty() && removed.is_empty() {
        return StatusCode::NO_CONTENT.into_response();
    }
    let shared = match m.update_namespace_document(&ns, &set, &removed).await {
        // A namespace this broker had before it joined the cluster: the store gets it now.
        Err(ClusterError::NamespaceNotFound(_)) => {
            let tenant = ns.split('/').next().unwrap_or_default();
            share_new_namespace(ctx, tenant, &ns).await.map(|()| None)
        }
        r => r.map(Some),
    };
    match shared {
        Ok(Some((doc, version))) => {
            // What the store holds now is installed before the answer, so a watch event read
            // before this write cannot hide the change from whoever reads it back.
            if let Err(e) = install_document(ctx, m, ns.clone(), &doc, version).await {
                tracing::warn!(namespace = %ns, error = %e, "installing the cluster's policies after a change failed");
            }
            StatusCode::NO_CONTENT.into_response()
        }
        Ok(None) => StatusCode::NO_CONTENT.into_response(),
        Err(e) => {
            tracing::warn!(namespace = %ns, error = %e, "sharing a policy change failed: reading the cluster's back");
            if let Err(again) = sync_namespace(ctx, m, &ns, false).await {
                tracing::warn!(namespace = %ns, error = %again, "reading the cluster's policies back failed");
            }
            fail(StatusCode::SERVICE_UNAVAILABLE, e.to_string())
        }
    }
}

/// In a cluster, writes a namespace this broker created (its tenant first, and the policies it
/// was created with) to the store, where lookups read its bundles and other brokers find it.
///
/// # Errors
/// Store failures.
pub async fn share_new_namespace(
    ctx: &ServerContext,
    tenant: &str,
    ns: &str,
) -> Result<(), ClusterError> {
    let Some(m) = ctx.cluster.get() else {
        return Ok(());
    };
    let info =
        serde_json::to_value(ctx.resources.tenant(tenant).unwrap_or_default()).unwrap_or_default();
    m.ensure_tenant(tenant, &info).await?;
    let here = ctx.service.policies.namespace(ns);
    let (fields, _) = changed_fields(&Policies::default(), &here, m.cluster());
    let boundaries = super::bundles::recorded(&here);
    m.ensure_namespace(ns, &fields, boundaries.as_deref()).await
}

/// Installs a namespace's policies from the store here (creating the namespace, and its tenant,
/// when this broker does not know them yet). A namespace the store no longer has is deleted
/// here too when `deleted_elsewhere` (the watch saw it go) and it holds no topics here.
///
/// # Errors
/// Store failures; local metadata I/O.
async fn sync_namespace(
    ctx: &Arc<ServerContext>,
    m: &ClusterMember,
    ns: &str,
    deleted_elsewhere: bool,
) -> Result<(), ServerError> {
    let doc = m.namespace_document(ns).await.map_err(store_error)?;
    let (c, ns) = (Arc::clone(ctx), ns.to_owned());
    let Some((doc, version)) = doc else {
        if !deleted_elsewhere {
            return Ok(());
        }
        return tokio::task::spawn_blocking(move || {
            let svc = &c.service;
            svc.policies.forget_cluster_version(&ns);
            let idle =
                svc.topics_of_namespace(&ns).is_empty() && svc.partitioned_topics(&ns).is_empty();
            if svc.policies.namespace_exists(&ns) && idle {
                svc.policies.delete_namespace(&ns)?;
                tracing::info!(namespace = %ns, "namespace deleted through another broker");
            }
            Ok::<_, pulsar_rs_broker::BrokerError>(())
        })
        .await
        .map_err(|e| ServerError::BadRequest(format!("deleting a namespace: {e}")))?
        .map_err(ServerError::from);
    };
    install_document(ctx, m, ns, &doc, version).await
}

/// Installs a namespace's `Policies` document of the store, at `version`, here.
///
/// # Errors
/// Local metadata I/O.
async fn install_document(
    ctx: &Arc<ServerContext>,
    m: &ClusterMember,
    ns: String,
    doc: &Document,
    version: i32,
) -> Result<(), ServerError> {
    let c = Arc::clone(ctx);
    let p = match parse_document(doc, m.cluster()) {
        Ok(p) => p,
        // A namespace met for the first time is still served, with default policies.
        Err(_) if !ctx.service.policies.namespace_exists(&ns) => {
            tracing::warn!(namespace = %ns, "the store's Policies document does not parse: default policies here");
            Policies::default()
        }
        Err(_) => {
            tracing::warn!(namespace = %ns, "the store's Policies document does not parse: kept as it was here");
            return Ok(());
        }
    };
    tokio::task::spawn_blocking(move || {
        let tenant = ns.split('/').next().unwrap_or_default().to_owned();
        if c.resources.tenant(&tenant).is_none() {
            let mut info = crate::resources::TenantInfo::default();
            info.allowed_clusters
                .insert(c.service.config.cluster_name.clone());
            c.resources.put_tenant(&tenant, info, true)?;
        }
        if c.service.policies.install_namespace(&ns, p, version)? {
            c.service.refresh_policies();
            tracing::info!(namespace = %ns, "namespace policies of the cluster installed");
        }
        Ok::<_, pulsar_rs_broker::BrokerError>(())
    })
    .await
    .map_err(|e| ServerError::BadRequest(format!("installing a namespace's policies: {e}")))?
    .map_err(ServerError::from)
}

fn store_error(e: ClusterError) -> ServerError {
    ServerError::BadRequest(format!("reading the cluster's policies: {e}"))
}

/// In a cluster, writes a tenant created or changed here to the store (the whole record).
///
/// # Errors
/// Store failures.
pub async fn share_tenant(ctx: &ServerContext, tenant: &str) -> Result<(), ClusterError> {
    let (Some(m), Some(info)) = (ctx.cluster.get(), ctx.resources.tenant(tenant)) else {
        return Ok(());
    };
    m.put_tenant_document(tenant, &serde_json::to_value(info).unwrap_or_default())
        .await
}

/// In a cluster, deletes a tenant deleted here from the store.
///
/// # Errors
/// Store failures (a tenant that still has namespaces in the store among them).
pub async fn unshare_tenant(ctx: &ServerContext, tenant: &str) -> Result<(), ClusterError> {
    match ctx.cluster.get() {
        Some(m) => m.delete_tenant(tenant).await,
        None => Ok(()),
    }
}

/// Installs a tenant from the store here; one the store no longer has is deleted here too when
/// `deleted_elsewhere` (the watch saw it go) and no namespace of it is known here.
///
/// # Errors
/// Store failures; local metadata I/O.
async fn sync_tenant(
    ctx: &Arc<ServerContext>,
    m: &ClusterMember,
    tenant: &str,
    deleted_elsewhere: bool,
) -> Result<(), ServerError> {
    let doc = m.tenant_document(tenant).await.map_err(store_error)?;
    let (c, tenant) = (Arc::clone(ctx), tenant.to_owned());
    tokio::task::spawn_blocking(move || {
        match doc {
            Some(doc) => {
                let Ok(info) = serde_json::from_value::<crate::resources::TenantInfo>(doc) else {
                    tracing::warn!(tenant = %tenant, "the store's TenantInfo does not parse: kept as it was here");
                    return Ok(());
                };
                if c.resources.install_tenant(&tenant, info)? {
                    tracing::info!(tenant = %tenant, "tenant of the cluster installed");
                }
            }
            None if deleted_elsewhere => {
                let prefix = format!("{tenant}/");
                let used = c.service.policies.namespaces().iter().any(|n| n.starts_with(&prefix));
                if !used && c.resources.delete_tenant(&tenant)? {
                    tracing::info!(tenant = %tenant, "tenant deleted through another broker");
                }
            }
            None => {}
        }
        Ok::<_, pulsar_rs_broker::BrokerError>(())
    })
    .await
    .map_err(|e| ServerError::BadRequest(format!("installing a tenant: {e}")))?
    .map_err(ServerError::from)
}

/// In a cluster, makes a namespace the store has (created through another broker) known here
/// too, with its tenant and the cluster's policies, so this broker can serve its topics.
///
/// # Errors
/// Store failures; local metadata I/O.
pub async fn adopt_namespace(ctx: &Arc<ServerContext>, ns: &str) -> Result<(), ServerError> {
    if ctx.service.policies.namespace_exists(ns) {
        return Ok(());
    }
    let Some(m) = ctx.cluster.get() else {
        return Ok(());
    };
    sync_namespace(ctx, m, ns, false).await
}

/// Installs the tenant or namespace document at `path` (other paths are not this module's);
/// see [`sync_tenant`] and [`sync_namespace`] for `deleted_elsewhere`.
async fn sync_path(
    ctx: &Arc<ServerContext>,
    m: &ClusterMember,
    path: &str,
    deleted_elsewhere: bool,
) {
    let synced = if let Some(t) = paths::tenant_of(path) {
        sync_tenant(ctx, m, t, deleted_elsewhere).await
    } else if let Some(ns) = paths::namespace_of_policies(path) {
        // Its bundles may have changed (a split by another broker): read again when next needed.
        m.forget_boundaries(ns);
        sync_namespace(ctx, m, ns, deleted_elsewhere).await
    } else {
        return;
    };
    if let Err(e) = synced {
        tracing::warn!(path = %path, error = %e, "installing a document of the cluster failed");
    }
}

/// Installs every tenant, then every namespace, the store holds.
///
/// # Errors
/// Listing them failed.
async fn sync_all(ctx: &Arc<ServerContext>, m: &ClusterMember) -> Result<(), ClusterError> {
    let tenants = m.tenants().await?.into_iter().map(|t| paths::tenant(&t));
    let namespaces = m.namespaces().await?;
    let all: Vec<String> = tenants
        .chain(namespaces.iter().map(|n| paths::namespace_policies(n)))
        .collect();
    for path in all {
        sync_path(ctx, m, &path, false).await;
    }
    Ok(())
}

/// Follows the cluster's tenant and namespace documents until `stop`: reads them all, then installs
/// each one the watch reports changed; reads them all again whenever the watch may have missed
/// events (a reconnection, a new session).
pub async fn follow(ctx: Arc<ServerContext>, mut stop: watch::Receiver<bool>) {
    let Some(m) = ctx.cluster.get().map(Arc::clone) else {
        return;
    };
    loop {
        let mut watch = match m.watch_policies().await {
            Ok(w) => w,
            Err(e) => {
                tracing::debug!(error = %e, "watching the cluster's policies failed: retrying");
                tokio::select! {
                    _ = stop.changed() => return,
                    () = tokio::time::sleep(RETRY) => continue,
                }
            }
        };
        if let Err(e) = sync_all(&ctx, &m).await {
            tracing::warn!(error = %e, "reading the cluster's tenants and namespaces failed");
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_fields_a_change_touched_are_written() {
        let before = Policies::default();
        let mut after = before.clone();
        after.message_ttl_in_seconds = Some(30);
        let (set, removed) = changed_fields(&before, &after, "c");
        assert_eq!(set.len(), 1, "{set:?}");
        assert_eq!(set["message_ttl_in_seconds"], 30);
        assert!(removed.is_empty());
        let (set, removed) = changed_fields(&after, &before, "c");
        assert!(set.is_empty());
        assert_eq!(removed, vec!["message_ttl_in_seconds".to_owned()]);
        // A rate is keyed by this cluster; the bundle split is never written from here.
        let mut rated = before.clone();
        rated.publish_rate = serde_json::from_str(r#"{"publishThrottlingRateInMsg":5}"#).ok();
        let (set, _) = changed_fields(&before, &rated, "c");
        assert_eq!(
            set["publishMaxMessageRate"]["c"]["publishThrottlingRateInMsg"],
            5
        );
        assert!(!set.contains_key("bundles"));
    }

    #[test]
    fn a_document_round_trips_through_the_policies() {
        let p = Policies {
            message_ttl_in_seconds: Some(7),
            retention: serde_json::from_str(
                r#"{"retentionTimeInMinutes":5,"retentionSizeInMB":-1}"#,
            )
            .ok(),
            persistence: Some(pulsar_rs_broker::policies::PersistencePolicies::default()),
            compaction_threshold: Some(1024),
            max_producers_per_topic: Some(1),
            ..Policies::default()
        };
        let Value::Object(doc) = document(&p, "c") else {
            panic!("not an object")
        };
        let back = parse_document(&doc, "c").unwrap_or_default();
        assert_eq!(back.message_ttl_in_seconds, Some(7));
        assert_eq!(back.retention, p.retention);
        assert_eq!(back.persistence, p.persistence);
        assert_eq!(back.compaction_threshold, Some(1024));
        assert_eq!(back.max_producers_per_topic, Some(1));
    }
}
