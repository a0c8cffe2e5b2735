//! What every handler starts from: the shared context it is given ([`Ctx`]), a topic loaded on
//! the blocking pool ([`load_topic`], [`load_non_partitioned`]) and the loaded topics a path
//! addresses ([`targets`]).

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use pulsar_rs_broker::{BrokerError, Topic, TopicName};

use crate::admin::machinery::topic_path::{existing, DeferredTopicPath};
use crate::context::ServerContext;
use crate::http::{broker_fail, fail};

/// The shared context, as a handler extracts it.
pub(crate) type Ctx = State<Arc<ServerContext>>;

/// Loads a topic on the blocking pool (a first load reads its ledger metadata); the error is
/// the ready response.
pub(crate) async fn load_topic(
    ctx: &Arc<ServerContext>,
    name: TopicName,
) -> Result<Arc<Topic>, Response> {
    let svc = Arc::clone(&ctx.service);
    match tokio::task::spawn_blocking(move || svc.topic(&name, false)).await {
        Ok(Ok(t)) => Ok(t),
        Ok(Err(e)) => Err(broker_fail(&e)),
        Err(e) => Err(fail(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())),
    }
}

/// The existing, non-partitioned topic of the path, loaded; 405 with `refusal` on a partitioned
/// topic (as Pulsar refuses reading messages of one), 404 when it does not exist.
pub(crate) async fn load_non_partitioned(
    ctx: &Arc<ServerContext>,
    path: DeferredTopicPath,
    refusal: &str,
) -> Result<Arc<Topic>, Response> {
    let name = existing(ctx, path)?;
    if ctx.service.partitions(&name, false).unwrap_or(0) > 0 {
        return Err(fail(StatusCode::METHOD_NOT_ALLOWED, refusal));
    }
    load_topic(ctx, name).await
}

/// The loaded topics a path addresses: the topic, or every partition of a partitioned topic (in a
/// cluster, every partition this broker owns: [`crate::admin::cluster::fan_out`] sends the call to
/// the others').
pub(crate) fn targets(
    ctx: &ServerContext,
    name: &TopicName,
) -> Result<Vec<Arc<Topic>>, BrokerError> {
    let n = ctx.service.partitions(name, false)?;
    if n == 0 {
        return Ok(vec![ctx.service.topic(name, false)?]);
    }
    let served = |p: &TopicName| ctx.cluster.get().is_none_or(|m| m.owns(&p.to_string()));
    // Bounded by what exists (and the first EAGER_PARTITIONS), not by the declared count.
    ctx.service
        .partition_targets(name, n)
        .iter()
        .filter(|p| served(p))
        .map(|p| ctx.service.topic(p, true))
        .collect()
}
