//! The transaction coordinators as an operator handles them, Pulsar's `/admin/v3/transactions`
//! paths (`pulsar-admin transactions coordinators-list`, `scale-transactionCoordinators`,
//! `abort-transaction`): which broker serves each coordinator (a lookup of its assign
//! partition, which places a free one as a client's lookup does), more coordinators (the assign
//! topic's partition count raised; never lowered), and a transaction aborted by a superuser
//! (one stuck open, its client gone). Every path answers 503 when `transactionCoordinatorEnabled`
//! is off, as Pulsar's. In a cluster the abort is answered by the owner of the coordinator's
//! assign partition (`crate::admin::cluster::owner`); the count is the cluster store's.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Json;
use pulsar_rs_broker::transaction::{TxnAction, TxnId, COORDINATOR_ASSIGN_TOPIC};
use pulsar_rs_broker::{BrokerError, TopicName};
use pulsar_rs_cluster::{ClusterMember, LookupAnswer};
use serde_json::{json, Value};

use super::stats::disabled;
use crate::admin::machinery::access::{Access, Routes};
use crate::admin::machinery::state::Ctx;
use crate::admin::topics::partitions;
use crate::cluster::peers::admin as peer;
use crate::context::ServerContext;
use crate::http::{broker_fail, fail};

/// The routes of this module.
pub(in crate::admin) fn routes() -> Routes {
    Routes::new()
        .route(
            "/admin/v3/transactions/coordinators",
            Access::Authenticated,
            get(list_coordinators),
        )
        .route(
            "/admin/v3/transactions/transactionCoordinator/replicas",
            Access::Superuser,
            post(scale_coordinators),
        )
        .route(
            "/admin/v3/transactions/abortTransaction/{most}/{least}",
            Access::Superuser,
            post(abort_transaction),
        )
}

/// The assign topic's name.
fn assign_topic() -> TopicName {
    // A constant that parses (the broker creates the topic from it at start).
    TopicName::parse(COORDINATOR_ASSIGN_TOPIC).expect("the assign topic's name parses")
}

/// `GET coordinators`: Pulsar's list of `TransactionCoordinatorInfo`, `{id, brokerServiceUrl}`
/// for each coordinator, in id order.
async fn list_coordinators(State(ctx): Ctx) -> Response {
    if let Some(r) = disabled(&ctx) {
        return r;
    }
    let assign = assign_topic();
    let n = match partitions::count(&ctx, &assign).await {
        Ok(n) => n,
        Err(r) => return r,
    };
    let mut infos = Vec::new();
    for id in 0..n {
        let url = match ctx.cluster.get() {
            None => ctx.lookups.urls(None).map(|u| u.broker_url),
            Some(member) => service_url_of(&ctx, member, &assign.partition(id)).await,
        };
        match url {
            Ok(url) => infos.push(json!({ "id": id, "brokerServiceUrl": url })),
            Err(e) => return fail(StatusCode::SERVICE_UNAVAILABLE, e),
        }
    }
    Json(infos).into_response()
}

/// The service URL of the broker serving `topic` in the cluster, as a lookup resolves it (a
/// free bundle placed by the leader, asked through its REST lookup in the broker's own name).
async fn service_url_of(
    ctx: &ServerContext,
    member: &ClusterMember,
    topic: &TopicName,
) -> Result<String, String> {
    let full = topic.to_string();
    match member
        .lookup(&full, false)
        .await
        .map_err(|e| e.to_string())?
    {
        LookupAnswer::Connect(u) => Ok(u.service),
        LookupAnswer::Redirect {
            urls,
            authoritative,
        } => {
            let url = format!(
                "{}/lookup/v2/topic/persistent/{}/{}/{}?authoritative={authoritative}",
                ctx.broker_client.web_url(&urls)?.trim_end_matches('/'),
                topic.tenant,
                topic.namespace,
                topic.local
            );
            let auth = ctx.broker_client.authorization().await?;
            let found = peer::get_json(&ctx.broker_client, &url, auth.as_ref()).await?;
            found
                .get("brokerUrl")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| format!("GET {url}: no brokerUrl in {found}"))
        }
    }
}

/// `POST transactionCoordinator/replicas` with the new count as the body: the assign topic's
/// partitions raised to it (406 unless it is above the current count, as Pulsar's). Clients
/// started afterwards connect to every coordinator; each is loaded by the broker that owns its
/// assign partition when a client connects to it.
async fn scale_coordinators(State(ctx): Ctx, body: String) -> Response {
    if let Some(r) = disabled(&ctx) {
        return r;
    }
    let Ok(n) = body.trim().parse::<i64>() else {
        return fail(
            StatusCode::BAD_REQUEST,
            "body must be the number of transaction coordinators",
        );
    };
    let assign = assign_topic();
    let current = match partitions::count(&ctx, &assign).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    if i64::from(current) >= n {
        return fail(
            StatusCode::NOT_ACCEPTABLE,
            "Number of transaction coordinators should be more than the current number of transaction coordinator",
        );
    }
    let n = u32::try_from(n).unwrap_or(u32::MAX);
    if let Some(member) = ctx.cluster.get() {
        // The store's record first: every broker's count is brought to it.
        if let Err(e) = member.update_partitions(COORDINATOR_ASSIGN_TOPIC, n).await {
            return fail(StatusCode::SERVICE_UNAVAILABLE, e.to_string());
        }
    }
    let svc = Arc::clone(&ctx.service);
    // The local record is a file write: blocking pool.
    match tokio::task::spawn_blocking(move || svc.update_partitioned(&assign, n)).await {
        Ok(Ok(())) => StatusCode::NO_CONTENT.into_response(),
        Ok(Err(e)) => broker_fail(&e),
        Err(e) => fail(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

/// `POST abortTransaction/{most}/{least}`: the transaction aborted by its coordinator, as if
/// its client had aborted it (its messages never visible, its acks released). 404 for a
/// coordinator not served here or a transaction it does not know, 409 for one already ending.
async fn abort_transaction(
    State(ctx): Ctx,
    Path((most, least)): Path<(String, String)>,
) -> Response {
    if let Some(r) = disabled(&ctx) {
        return r;
    }
    let (Ok(most), Ok(least)) = (most.parse::<u64>(), least.parse::<u64>()) else {
        return fail(StatusCode::BAD_REQUEST, "invalid transaction id");
    };
    // Pulsar's bound: a coordinator id is a partition index.
    if most > i32::MAX as u64 {
        return fail(StatusCode::BAD_REQUEST, "mostSigBits out of bounds");
    }
    match ctx
        .service
        .end_txn(TxnId::new(most, least), TxnAction::Abort)
        .await
    {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(e @ (BrokerError::CoordinatorNotFound(_) | BrokerError::TransactionNotFound(_))) => {
            fail(StatusCode::NOT_FOUND, e.to_string())
        }
        Err(e @ BrokerError::InvalidTxnStatus(_)) => fail(StatusCode::CONFLICT, e.to_string()),
        Err(e) => broker_fail(&e),
    }
}
