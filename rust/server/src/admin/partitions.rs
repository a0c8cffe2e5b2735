//! One document per partition of a partitioned topic (its stats, its internal stats), for the
//! calls that answer for the topic as a whole: computed here for the partitions this broker
//! serves and, in a cluster, asked of each other partition's owner (through [`super::peer`]), as
//! Pulsar's broker asks through its admin client. Bounded by the partitions that exist
//! ([`super::targets`]), never a declared count one by one.

use std::sync::Arc;

use axum::http::{HeaderValue, StatusCode};
use axum::response::Response;
use pulsar_rs_broker::{Topic, TopicName};
use pulsar_rs_cluster::{ClusterMember, LookupAnswer};
use serde_json::Value;

use super::cluster::cluster_fail;
use super::peer;
use crate::http::{broker_fail, fail};
use crate::ServerContext;

/// A topic's partition count as the cluster knows it (0: not partitioned): in a cluster, the
/// store's record, which this broker's own record is brought to (taken on for a topic created
/// through another broker, forgotten for one deleted through another); else this broker's
/// record.
///
/// # Errors
/// The ready response: the store did not answer (503), or the local record failed.
pub(crate) async fn count(ctx: &Arc<ServerContext>, name: &TopicName) -> Result<u32, Response> {
    let (Some(member), None) = (ctx.cluster.get(), name.partition_index()) else {
        return Ok(ctx.service.partitions(name, false).unwrap_or(0));
    };
    let stored = member
        .partitions(&name.to_string())
        .await
        .map_err(|e| cluster_fail(&e))?
        .unwrap_or(0);
    let local = ctx.service.partitions(name, false).unwrap_or(0);
    if stored == local {
        return Ok(stored);
    }
    let (svc, base) = (Arc::clone(&ctx.service), name.clone());
    // The local record is a file write: blocking pool. A record the store no longer has is
    // stale (the topic was deleted through another broker).
    let recorded = tokio::task::spawn_blocking(move || {
        if stored > 0 {
            svc.adopt_partitioned(&base, stored)
        } else {
            svc.forget_partitioned(&base).map(drop)
        }
    });
    recorded
        .await
        .map_err(|e| fail(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?
        .map_err(|e| broker_fail(&e))?;
    Ok(stored)
}

/// `partitions` split into the ones this broker serves (a free bundle is placed first, as a
/// lookup places it, and may land here) and, for each other one, the URL of the call at the
/// broker to ask (`url(web, partition, authoritative)`: its owner, or the leader that places it).
///
/// # Errors
/// The ready response when the cluster cannot say.
pub(crate) async fn by_owner(
    member: &ClusterMember,
    partitions: Vec<TopicName>,
    url: impl Fn(&str, &TopicName, bool) -> String,
) -> Result<(Vec<TopicName>, Vec<(TopicName, String)>), Response> {
    let (mut here, mut elsewhere) = (Vec::new(), Vec::new());
    for p in partitions {
        let full = p.to_string();
        if member.owns(&full) {
            here.push(p);
            continue;
        }
        match member.lookup(&full, false).await {
            Ok(LookupAnswer::Connect(u)) if u.service == member.urls().service => here.push(p),
            Ok(LookupAnswer::Connect(u)) => {
                let to = url(u.web.trim_end_matches('/'), &p, true);
                elsewhere.push((p, to));
            }
            Ok(LookupAnswer::Redirect {
                urls,
                authoritative,
            }) => {
                let to = url(urls.web.trim_end_matches('/'), &p, authoritative);
                elsewhere.push((p, to));
            }
            Err(e) => return Err(cluster_fail(&e)),
        }
    }
    Ok((here, elsewhere))
}

/// What one partition's document is: its admin path's last segment and how it is made here.
pub(crate) struct PartitionDocument {
    /// `stats` or `internalStats` (`/admin/v2/persistent/{tenant}/{ns}/{partition}/{op}`).
    pub op: &'static str,
    /// The document of a partition this broker serves.
    pub local: fn(&ServerContext, &Topic) -> Value,
}

/// `(partition name, document)` for each partition of `name` (`n` declared) that exists, in
/// partition order; `authorization` (the caller's) goes with the reads from other brokers.
///
/// # Errors
/// The ready response: the partitions' topics failed to load here, an owner could not be
/// found, or an owner did not answer (503 naming it).
pub(crate) async fn documents(
    ctx: &Arc<ServerContext>,
    name: &TopicName,
    n: u32,
    doc: PartitionDocument,
    authorization: Option<HeaderValue>,
) -> Result<Vec<(String, Value)>, Response> {
    let partitions = ctx.service.partition_targets(name, n);
    let (here, elsewhere) = match ctx.cluster.get() {
        None => (partitions, Vec::new()),
        Some(member) => {
            let op = doc.op;
            by_owner(member, partitions, |web, p, authoritative| {
                let path = format!(
                    "/admin/v2/persistent/{}/{}/{}/{op}",
                    p.tenant, p.namespace, p.local
                );
                format!("{web}{path}?authoritative={authoritative}")
            })
            .await?
        }
    };
    let c = Arc::clone(ctx);
    let local = doc.local;
    let mut out = tokio::task::spawn_blocking(move || {
        here.iter()
            .map(|p| {
                let t = c.service.topic(p, true)?;
                Ok((p.clone(), local(&c, &t)))
            })
            .collect::<Result<Vec<_>, _>>()
    })
    .await
    .map_err(|e| fail(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?
    .map_err(|e| broker_fail(&e))?;
    for (p, url) in elsewhere {
        let v = peer::get_json(&url, authorization.as_ref())
            .await
            .map_err(|e| fail(StatusCode::SERVICE_UNAVAILABLE, e))?;
        out.push((p, v));
    }
    out.sort_by_key(|(p, _)| p.partition_index());
    Ok(out.into_iter().map(|(p, v)| (p.to_string(), v)).collect())
}
