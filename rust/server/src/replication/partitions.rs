//! A partitioned topic on the remote cluster: before a partition's replicator opens its
//! producer, the remote cluster gets the topic's partitioned metadata (`PUT
//! .../partitions` on its `serviceUrl`, or `serviceUrlTls` with `brokerClientTlsEnabled`, in this
//! broker's name), as Pulsar's admin creates it on the replication clusters of a replicated
//! namespace; 409 (it exists) is success. Without it the remote would take the partition for a
//! topic of its own.

use axum::body::Bytes;
use axum::http::{Method, StatusCode};
use pulsar_rs_broker::topic::Topic;

use crate::cluster::peers::admin;
use crate::context::ServerContext;

/// Makes sure the remote cluster `remote` knows `topic`'s partitioned topic (nothing to do for
/// a topic that is not a partition).
///
/// # Errors
/// The remote's refusal or silence, as text.
pub(super) async fn ensure_on_remote(
    ctx: &ServerContext,
    remote: &str,
    topic: &Topic,
) -> Result<(), String> {
    if topic.name.partition_index().is_none() {
        return Ok(());
    }
    let base = topic.name.base();
    let partitions = ctx
        .service
        .partitions(&base, false)
        .map_err(|e| format!("the partitions of {base}: {e}"))?;
    if partitions == 0 {
        return Ok(());
    }
    let data = ctx
        .resources
        .cluster(remote)
        .ok_or_else(|| format!("cluster {remote} is not registered here"))?;
    let key = if ctx.broker_client.tls_enabled() {
        "serviceUrlTls"
    } else {
        "serviceUrl"
    };
    let web = data
        .get(key)
        .and_then(|v| v.as_str())
        .filter(|s| !s.is_empty())
        .ok_or_else(|| format!("cluster {remote} has no {key}"))?
        .trim_end_matches('/');
    let url = format!(
        "{web}/admin/v2/{}/{}/{}/{}/partitions",
        base.domain, base.tenant, base.namespace, base.local
    );
    let authorization = ctx.broker_client.authorization().await?;
    let (status, body) = admin::call(
        &ctx.broker_client,
        &Method::PUT,
        &url,
        &Bytes::from(partitions.to_string()),
        authorization.as_ref(),
    )
    .await?;
    if status.is_success() || status == StatusCode::CONFLICT {
        return Ok(());
    }
    Err(format!(
        "creating {base} with {partitions} partitions on {remote}: {status} {}",
        String::from_utf8_lossy(&body)
    ))
}
