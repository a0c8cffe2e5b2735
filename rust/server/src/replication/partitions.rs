//! A partitioned topic on the remote cluster: before a partition's replicator opens its
//! producer, the remote cluster gets the topic's partitioned metadata (`PUT
//! .../partitions` on its `serviceUrl`, or `serviceUrlTls` over TLS, with the credentials of
//! [`super::remote_cluster`]), as Pulsar's admin creates it on the replication clusters of a replicated
//! namespace; 409 (it exists) is success. Without it the remote would take the partition for a
//! topic of its own.

use axum::body::Bytes;
use axum::http::{Method, StatusCode};
use pulsar_rs_broker::TopicName;

use super::remote_cluster::RemoteCluster;
use crate::cluster::peers::admin;
use crate::context::ServerContext;

/// Makes sure the remote cluster `remote` knows the partitioned topic of `topic` (nothing to do
/// for a topic that is not a partition).
///
/// # Errors
/// The remote's refusal or silence, as text.
pub(super) async fn ensure_on_remote(
    ctx: &ServerContext,
    remote: &str,
    topic: &TopicName,
) -> Result<(), String> {
    if topic.partition_index().is_none() {
        return Ok(());
    }
    let base = topic.base();
    let partitions = ctx
        .service
        .partitions(&base, false)
        .map_err(|e| format!("the partitions of {base}: {e}"))?;
    if partitions == 0 {
        return Ok(());
    }
    let cluster = RemoteCluster::of(ctx, remote).await?;
    let web = cluster.web_url()?;
    let url = format!(
        "{web}/admin/v2/{}/{}/{}/{}/partitions",
        base.domain, base.tenant, base.namespace, base.local
    );
    let authorization = cluster.client.authorization().await?;
    let (status, body) = admin::call(
        &cluster.client,
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
