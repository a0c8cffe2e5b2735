//! Topic termination REST, Pulsar's paths and answers (`PersistentTopicsBase.internalTerminate`):
//! `POST …/{topic}/terminate` terminates a topic and answers the id of its last message as
//! `MessageIdImpl` JSON (404 for a topic that does not exist: termination creates none; 405 on a
//! partitioned topic's name and on a system topic; 406 on a non-persistent topic);
//! `POST …/{topic}/terminate/partitions` terminates every partition and answers
//! `{"0": {...}, "1": {...}}` (405 on anything but a partitioned topic's name, a missing topic
//! included). In a cluster each partition is terminated by its owner. Checked against Apache
//! Pulsar 4.0.8 (`tests/differential`). One difference: the id answered is the last message's,
//! where Pulsar answers its current ledger's last entry (`L:-1` after a reload opened a new,
//! empty ledger).

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Json;
use pulsar_rs_broker::policies::limits::SYSTEM_NAMESPACE;
use pulsar_rs_broker::TopicName;
use pulsar_rs_ledger::Position;
use serde_json::{json, Value};

use super::partitions::by_owner;
use crate::admin::machinery::access::{Access, Routes};
use crate::admin::machinery::state::Ctx;
use crate::admin::machinery::topic_path::{ExistingTopic, TopicPath};
use crate::cluster::peers::admin::{self as peer, url_at};
use crate::context::ServerContext;
use crate::http::{broker_fail, fail};

/// The routes of this module.
pub(in crate::admin) fn routes() -> Routes {
    Routes::new()
        .route(
            "/admin/v2/persistent/{tenant}/{ns}/{topic}/terminate",
            Access::Tenant,
            post(terminate),
        )
        .route(
            "/admin/v2/persistent/{tenant}/{ns}/{topic}/terminate/partitions",
            Access::Tenant,
            post(terminate_partitions),
        )
        .route(
            "/admin/v2/non-persistent/{tenant}/{ns}/{topic}/terminate",
            Access::Tenant,
            post(not_persistent),
        )
}

async fn not_persistent() -> Response {
    fail(
        StatusCode::NOT_ACCEPTABLE,
        "Need to provide a persistent topic name",
    )
}

/// A message id as Pulsar's `MessageIdImpl` is written (its `MessageIdAdv` defaults included).
fn message_id(p: Position) -> Value {
    json!({
        "ledgerId": p.ledger_id,
        "entryId": p.entry_id,
        "partitionIndex": -1,
        "batchIndex": -1,
        "batchSize": 0,
    })
}

/// Terminates one topic here, closing its producers: the position of its last message.
/// `create`: a topic not used yet (a partition) is created first, as Pulsar's admin call on it.
async fn terminate_here(
    ctx: &Arc<ServerContext>,
    name: TopicName,
    create: bool,
) -> Result<Position, Response> {
    let svc = Arc::clone(&ctx.service);
    let done = tokio::task::spawn_blocking(move || svc.topic(&name, create)?.terminate()).await;
    match done {
        Ok(Ok((at, producers))) => {
            for handle in producers {
                ctx.fence_producer(handle);
            }
            Ok(at)
        }
        Ok(Err(e)) => Err(broker_fail(&e)),
        Err(e) => Err(fail(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())),
    }
}

/// `POST …/{topic}/terminate`.
async fn terminate(State(ctx): Ctx, ExistingTopic(name): ExistingTopic) -> Response {
    if name.namespace_name() == SYSTEM_NAMESPACE {
        return fail(
            StatusCode::METHOD_NOT_ALLOWED,
            "Termination of a system topic is not allowed",
        );
    }
    if ctx.service.partitions(&name, false).unwrap_or(0) > 0 {
        return fail(
            StatusCode::METHOD_NOT_ALLOWED,
            "Termination of a partitioned topic is not allowed",
        );
    }
    // A partition exists from its partitioned topic's creation (`ExistingTopic`), used or not.
    let create = name.partition_index().is_some();
    match terminate_here(&ctx, name, create).await {
        Ok(at) => Json(message_id(at)).into_response(),
        Err(r) => r,
    }
}

/// `POST …/{topic}/terminate/partitions`.
async fn terminate_partitions(
    State(ctx): Ctx,
    TopicPath(name): TopicPath,
    headers: axum::http::HeaderMap,
    uri: axum::http::Uri,
) -> Response {
    let n = if name.partition_index().is_some() {
        0
    } else {
        match ctx.service.partitions(&name, false) {
            Ok(n) => n,
            Err(e) => return broker_fail(&e),
        }
    };
    if n == 0 {
        return fail(
            StatusCode::METHOD_NOT_ALLOWED,
            "Termination of a non-partitioned topic is not allowed using partitioned-terminate, please use terminate commands",
        );
    }
    let all: Vec<TopicName> = (0..n).map(|i| name.partition(i)).collect();
    let (here, elsewhere) = match ctx.cluster.get() {
        None => (all, Vec::new()),
        Some(member) => match by_owner(&ctx.broker_client, member, all, |web, p, authoritative| {
            let path = format!(
                "/admin/v2/persistent/{}/{}/{}/terminate",
                p.tenant, p.namespace, p.local
            );
            url_at(web, &uri, Some(&path), authoritative)
        })
        .await
        {
            Ok(split) => split,
            Err(r) => return r,
        },
    };
    let mut ids = BTreeMap::new();
    for p in here {
        let i = p.partition_index().unwrap_or(0);
        match terminate_here(&ctx, p, true).await {
            Ok(at) => ids.insert(i, message_id(at)),
            Err(r) => return r,
        };
    }
    let auth = headers.get(header::AUTHORIZATION);
    for (p, url) in elsewhere {
        let i = p.partition_index().unwrap_or(0);
        match peer::call(&ctx.broker_client, &Method::POST, &url, &Bytes::new(), auth).await {
            Ok((StatusCode::OK, body)) => match serde_json::from_slice::<Value>(&body) {
                Ok(v) => ids.insert(i, v),
                Err(e) => return fail(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
            },
            Ok((status, body)) => {
                return fail(status, String::from_utf8_lossy(&body).into_owned());
            }
            Err(e) => return fail(StatusCode::SERVICE_UNAVAILABLE, e),
        };
    }
    let body: serde_json::Map<String, Value> =
        ids.into_iter().map(|(i, v)| (i.to_string(), v)).collect();
    Json(Value::Object(body)).into_response()
}
