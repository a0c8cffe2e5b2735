//! A call on a partitioned topic's name that acts on each partition (its subscriptions, its
//! deletion), in a cluster: sent on to each partition's owner as the same call on the
//! partition's name, as Pulsar's broker sends it through its admin client; the partitions this
//! broker owns are served here (the handlers act on the partitions this broker owns, see
//! [`crate::admin::machinery::state::targets`]); the answers are combined into one.

use std::sync::Arc;

use axum::body::{to_bytes, Body, Bytes};
use axum::extract::Request;
use axum::http::{header, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use pulsar_rs_broker::TopicName;
use pulsar_rs_cluster::ClusterMember;
use serde_json::Value;

use crate::admin::machinery::topic_path::TOPIC_ROUTE;
use crate::admin::topics::partitions::by_owner;
use crate::cluster::peers::admin::{self as peer, url_at};
use crate::context::ServerContext;
use crate::http::fail;

/// The largest request body a per-partition call carries (a message id, a position).
const BODY_LIMIT: usize = 1 << 20;

/// Whether the call `method` on the route `op` (its template past [`TOPIC_ROUTE`]) acts on each
/// partition of a partitioned topic: its subscriptions (list, create, delete, skip, reset,
/// expire), deleting the partitioned topic and unloading it.
pub(in crate::admin) fn fans_out(method: &Method, op: &str) -> bool {
    op == "/subscriptions"
        || op.starts_with("/subscription/")
        || op.starts_with("/all_subscription/")
        || (op == "/partitions" && method == Method::DELETE)
        || (op == "/unload" && method == Method::PUT)
}

/// Sends `req` (on the partitioned topic `topic`, `n` partitions) to the owner of each
/// partition this broker does not own, then serves it here for the ones it owns, and answers
/// for all of them.
pub(in crate::admin) async fn across_owners(
    ctx: &Arc<ServerContext>,
    member: &ClusterMember,
    topic: &TopicName,
    n: u32,
    req: Request,
    next: Next,
) -> Response {
    let (parts, body) = req.into_parts();
    let body = match to_bytes(body, BODY_LIMIT).await {
        Ok(b) => b,
        Err(e) => return fail(StatusCode::BAD_REQUEST, e.to_string()),
    };
    let delete = parts.method == Method::DELETE && parts.uri.path().ends_with("/partitions");
    let partitions = ctx.service.partition_targets(topic, n);
    let (owned, elsewhere) = match by_owner(
        &ctx.broker_client,
        member,
        partitions,
        |web, p, authoritative| {
            let path = partition_path(parts.uri.path(), p, delete);
            url_at(web, &parts.uri, Some(&path), authoritative)
        },
    )
    .await
    {
        Ok(split) => split,
        Err(r) => return r,
    };
    let here = !owned.is_empty();
    let auth = parts.headers.get(header::AUTHORIZATION).cloned();
    let method_is_create = parts.method == Method::PUT;
    let mut answers = Vec::new();
    for (_, url) in &elsewhere {
        match peer::call(&ctx.broker_client, &parts.method, url, &body, auth.as_ref()).await {
            Ok(a) => answers.push(a),
            Err(e) => return fail(StatusCode::SERVICE_UNAVAILABLE, e),
        }
    }
    // A partition its owner would not delete keeps the partitioned topic (its record stays).
    let refused = |(s, _): &(StatusCode, Bytes)| !s.is_success() && *s != StatusCode::NOT_FOUND;
    if delete && answers.iter().any(refused) {
        // A partition with clients (412) refuses the whole delete, in Pulsar's words for it.
        if answers
            .iter()
            .any(|(s, _)| *s == StatusCode::PRECONDITION_FAILED)
        {
            return fail(
                StatusCode::PRECONDITION_FAILED,
                "Topic has active producers/subscriptions",
            );
        }
        return combine(answers, false);
    }
    // The partitioned topic's own record is this broker's to delete, whoever owns its partitions.
    if here || delete {
        let resp = next.run(Request::from_parts(parts, Body::from(body))).await;
        let status = resp.status();
        match to_bytes(resp.into_body(), usize::MAX).await {
            Ok(b) => answers.insert(0, (status, b)),
            Err(e) => return fail(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        }
    }
    combine(answers, method_is_create)
}

/// The path of the same call on one partition: the topic segment renamed (deleting the
/// partitioned topic deletes each partition as a topic).
fn partition_path(path: &str, partition: &TopicName, delete: bool) -> String {
    let mut segs: Vec<&str> = path.split('/').collect();
    // "", "admin", "v2", "persistent", tenant, ns, topic, ...
    let topic_at = TOPIC_ROUTE.split('/').count() - 1;
    if let Some(s) = segs.get_mut(topic_at) {
        *s = &partition.local;
    }
    if delete {
        segs.truncate(topic_at + 1);
    }
    segs.join("/")
}

/// One answer for all the partitions: a failure fails the call, except that a partition
/// without the subscription (404) or, to a `create`, already with it (409) does not when
/// another partition succeeded, as a subscription need not be on every partition; lists are
/// joined.
fn combine(answers: Vec<(StatusCode, Bytes)>, create: bool) -> Response {
    let ok = |s: StatusCode| s.is_success();
    let any_ok = answers.iter().any(|(s, _)| ok(*s));
    let excused = |s: StatusCode| {
        any_ok && (s == StatusCode::NOT_FOUND || s == StatusCode::CONFLICT && create)
    };
    if let Some((s, b)) = answers.iter().find(|(s, _)| !ok(*s) && !excused(*s)) {
        return (*s, [(header::CONTENT_TYPE, "application/json")], b.clone()).into_response();
    }
    let lists: Option<Vec<Vec<Value>>> = answers
        .iter()
        .filter(|(s, _)| *s == StatusCode::OK)
        .map(|(_, b)| serde_json::from_slice::<Vec<Value>>(b).ok())
        .collect();
    match lists {
        Some(lists) if !lists.is_empty() => {
            let mut all: Vec<String> = lists
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect();
            all.sort();
            all.dedup();
            axum::Json(all).into_response()
        }
        _ => match answers.into_iter().find(|(s, _)| ok(*s)) {
            Some((s, b)) if b.is_empty() => s.into_response(),
            Some((s, b)) => (s, [(header::CONTENT_TYPE, "application/json")], b).into_response(),
            None => StatusCode::NO_CONTENT.into_response(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_partitions_call_is_the_same_call_on_the_partition() {
        let p = TopicName::parse("persistent://t/ns/x-partition-3").unwrap();
        assert_eq!(
            partition_path(
                "/admin/v2/persistent/t/ns/x/subscription/s/skip/5",
                &p,
                false
            ),
            "/admin/v2/persistent/t/ns/x-partition-3/subscription/s/skip/5"
        );
        assert_eq!(
            partition_path("/admin/v2/persistent/t/ns/x/partitions", &p, true),
            "/admin/v2/persistent/t/ns/x-partition-3"
        );
    }

    #[test]
    fn a_subscription_missing_on_some_partitions_is_no_failure() {
        let a = |s: u16, b: &str| (StatusCode::from_u16(s).unwrap(), Bytes::from(b.to_owned()));
        let r = combine(vec![a(204, ""), a(404, "{\"reason\":\"x\"}")], false);
        assert_eq!(r.status(), StatusCode::NO_CONTENT);
        let r = combine(vec![a(204, ""), a(409, "{}")], true);
        assert_eq!(r.status(), StatusCode::NO_CONTENT);
        let r = combine(vec![a(404, "{}"), a(404, "{}")], false);
        assert_eq!(r.status(), StatusCode::NOT_FOUND);
        let r = combine(vec![a(204, ""), a(412, "{}")], false);
        assert_eq!(r.status(), StatusCode::PRECONDITION_FAILED);
        // An expiry not issued on one partition fails the call.
        let r = combine(vec![a(204, ""), a(409, "{}")], false);
        assert_eq!(r.status(), StatusCode::CONFLICT);
        let r = combine(
            vec![a(200, "[\"b\",\"a\"]"), a(200, "[\"a\",\"c\"]")],
            false,
        );
        assert_eq!(r.status(), StatusCode::OK);
    }
}
