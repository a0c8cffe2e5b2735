//! The admin calls of a cluster: `pulsar-admin brokers list` / `leader-broker` /
//! `namespaces <broker>` (`/admin/v2/brokers/...`), `namespaces bundles`, `unload` and
//! `split-bundle` (`/admin/v2/namespaces/{tenant}/{ns}/bundles`, `.../unload`,
//! `.../{bundle}/unload`, `.../{bundle}/split`), and
//! `topics bundle-range` (`/lookup/v2/topic/{domain}/{tenant}/{ns}/{topic}/bundle`). A broker on
//! its own answers as a one-broker cluster: its namespaces' bundles are the splits they were
//! created with ([`crate::cluster::bundles`]), it owns those holding a loaded topic, and
//! unloading one unloads the topics in it. In a cluster the answers come from the metadata
//! store, unloading a bundle another broker owns is answered 307 to that broker, and an unload's
//! `destinationBroker` is recorded by the leader (a follower sends the call there first), whose
//! next placement of the bundle honours it, as Pulsar does.

use std::collections::{BTreeMap, HashMap};

use axum::extract::{OriginalUri, Path, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, put};
use axum::Json;
use pulsar_rs_cluster::bundles;
use pulsar_rs_cluster::documents::BundlesData;
use pulsar_rs_cluster::split::{split_boundaries, SplitAlgorithm};
use serde_json::json;

use super::owner::{web_for, OverTls};
use crate::admin::machinery::access::{Access, Routes};
use crate::admin::machinery::state::Ctx;
use crate::admin::machinery::topic_path::TopicPath;
use crate::cluster::bundles as namespace_bundles;
use crate::http::{cluster_fail, fail};

/// The routes of this module.
pub(in crate::admin) fn routes() -> Routes {
    Routes::new()
        .route(
            "/admin/v2/brokers/leaderBroker",
            Access::Superuser,
            get(leader_broker),
        )
        .route(
            "/admin/v2/brokers/{cluster}",
            Access::Superuser,
            get(brokers),
        )
        .route("/admin/v2/brokers", Access::Superuser, get(local_brokers))
        .route(
            "/admin/v2/brokers/{cluster}/{broker}/ownedNamespaces",
            Access::Superuser,
            get(owned_namespaces),
        )
        .route(
            "/admin/v2/namespaces/{tenant}/{ns}/bundles",
            Access::Tenant,
            get(ns_bundles),
        )
        .route(
            "/admin/v2/namespaces/{tenant}/{ns}/unload",
            Access::Tenant,
            put(unload_namespace),
        )
        .route(
            "/admin/v2/namespaces/{tenant}/{ns}/{bundle}/unload",
            Access::Tenant,
            put(unload_bundle),
        )
        .route(
            "/admin/v2/namespaces/{tenant}/{ns}/{bundle}/split",
            Access::Superuser,
            put(split_bundle),
        )
        .route(
            "/lookup/v2/topic/{domain}/{tenant}/{ns}/{topic}/bundle",
            Access::Superuser,
            get(topic_bundle),
        )
}

async fn leader_broker(State(ctx): Ctx) -> Response {
    let Some(m) = ctx.cluster.get() else {
        return Json(json!({"brokerId": ctx.broker_id(), "serviceUrl": ctx.admin_url}))
            .into_response();
    };
    match m.leader().await {
        Ok(Some(l)) => Json(l).into_response(),
        Ok(None) => fail(StatusCode::NOT_FOUND, "No leader broker"),
        Err(e) => cluster_fail(&e),
    }
}

/// `/admin/v2/brokers`: the active brokers of this broker's cluster.
async fn local_brokers(ctx: Ctx) -> Response {
    let cluster = ctx.0.service.config.cluster_name.clone();
    brokers(ctx, Path(cluster)).await
}

/// The active brokers of `cluster` (`/admin/v2/brokers`: of this broker's cluster).
async fn brokers(State(ctx): Ctx, Path(cluster): Path<String>) -> Response {
    if cluster != ctx.service.config.cluster_name {
        return fail(
            StatusCode::PRECONDITION_FAILED,
            format!("Cluster {cluster} does not exist"),
        );
    }
    let Some(m) = ctx.cluster.get() else {
        return Json(vec![ctx.broker_id()]).into_response();
    };
    match m.brokers().await {
        Ok(b) => Json(b).into_response(),
        Err(e) => cluster_fail(&e),
    }
}

async fn owned_namespaces(
    State(ctx): Ctx,
    Path((_cluster, broker)): Path<(String, String)>,
) -> Response {
    let owned: Vec<String> = match ctx.cluster.get() {
        None if broker == ctx.broker_id() => match namespace_bundles::owned_here(&ctx).await {
            Ok(o) => o,
            Err(r) => return r,
        },
        None => return fail(StatusCode::NOT_FOUND, format!("Broker {broker} not found")),
        Some(m) if broker == m.broker_id() => m.owned_bundles(),
        Some(m) => match m.broker_data(&broker).await {
            Ok(Some(d)) => d.bundles.into_iter().collect(),
            Ok(None) => return fail(StatusCode::NOT_FOUND, format!("Broker {broker} not found")),
            Err(e) => return cluster_fail(&e),
        },
    };
    let status = json!({"broker_assignment": "shared", "is_controlled": false, "is_active": true});
    let map: BTreeMap<String, serde_json::Value> =
        owned.into_iter().map(|b| (b, status.clone())).collect();
    Json(map).into_response()
}

async fn ns_bundles(State(ctx): Ctx, Path((tenant, ns)): Path<(String, String)>) -> Response {
    let name = format!("{tenant}/{ns}");
    if ctx.cluster.get().is_none() {
        if let Some(r) = crate::admin::namespaces::lifecycle::missing(&ctx, &name) {
            return r;
        }
    }
    match namespace_bundles::boundaries(&ctx, &name).await {
        Ok(b) => Json::<BundlesData>(bundles::bundles_data(&b)).into_response(),
        Err(r) => r,
    }
}

async fn unload_namespace(State(ctx): Ctx, Path((tenant, ns)): Path<(String, String)>) -> Response {
    let name = format!("{tenant}/{ns}");
    let Some(m) = ctx.cluster.get() else {
        // On its own, the broker owns the namespace's every bundle: its topics are unloaded.
        if let Some(r) = crate::admin::namespaces::lifecycle::missing(&ctx, &name) {
            return r;
        }
        let why = "namespace unloaded by an admin call";
        return crate::admin::machinery::closing::closing_producers(&ctx, move |svc| {
            Ok(svc.unload_where(|t| t.name.namespace_name() == name, why))
        })
        .await;
    };
    match m.unload(&name, None).await {
        Ok(_) => StatusCode::NO_CONTENT.into_response(),
        Err(e) => cluster_fail(&e),
    }
}

async fn unload_bundle(
    State(ctx): Ctx,
    OverTls(tls): OverTls,
    OriginalUri(uri): OriginalUri,
    Path((tenant, ns, range)): Path<(String, String, String)>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let name = format!("{tenant}/{ns}");
    if ctx.cluster.get().is_none() {
        if let Some(r) = crate::admin::namespaces::lifecycle::missing(&ctx, &name) {
            return r;
        }
    }
    let bundle = match namespace_bundles::boundaries(&ctx, &name).await {
        Ok(b) => match namespace_bundles::named(&name, &b, &range) {
            Ok(bundle) => bundle,
            Err(r) => return r,
        },
        Err(r) => return r,
    };
    let destination = q
        .get("destinationBroker")
        .filter(|d| !d.is_empty())
        .map(|d| {
            d.trim_start_matches("https://")
                .trim_start_matches("http://")
        });
    let Some(m) = ctx.cluster.get() else {
        // On its own, the broker is the one live broker, and owns the bundle: the topics in
        // it are unloaded.
        if destination.is_some_and(|d| d != ctx.broker_id()) {
            return fail(StatusCode::PRECONDITION_FAILED, INACTIVE_DESTINATION);
        }
        let why = "namespace bundle unloaded by an admin call";
        return crate::admin::machinery::closing::closing_producers(&ctx, move |svc| {
            Ok(svc.unload_where(|t| bundle.contains_topic(&t.name.to_string()), why))
        })
        .await;
    };
    let authoritative = q.get("authoritative").is_some_and(|v| v == "true");
    // Pulsar's `setNamespaceBundleAffinityAsync`: a destination must be a live broker, and the
    // leader (which places bundles) records it; a follower sends the call to the leader.
    if let Some(dest) = destination {
        match m.brokers().await {
            Ok(live) if live.iter().any(|b| b == dest) => {}
            Ok(_) => return fail(StatusCode::PRECONDITION_FAILED, INACTIVE_DESTINATION),
            Err(e) => return cluster_fail(&e),
        }
        if m.is_leader() {
            m.set_affinity(&bundle, dest);
        } else if !authoritative {
            match m.leader().await {
                Ok(Some(l)) => {
                    let web = match m.broker_data(&l.broker_id).await {
                        Ok(Some(d)) => web_for(&d.urls(), tls).to_owned(),
                        _ => l.service_url,
                    };
                    return redirect(&web, &uri, false);
                }
                Ok(None) => {
                    return fail(
                        StatusCode::PRECONDITION_FAILED,
                        "The current leader is empty.",
                    )
                }
                Err(e) => return cluster_fail(&e),
            }
        }
    }
    match m.owner(&bundle).await {
        // Pulsar's `validateNamespaceBundleOwnership`: the owner does it.
        Ok(Some(pulsar_rs_cluster::member::Owner::Other(u))) => {
            redirect(web_for(&u, tls), &uri, m.is_leader())
        }
        Ok(_) => match m.release(&bundle).await {
            Ok(()) => StatusCode::NO_CONTENT.into_response(),
            Err(e) => cluster_fail(&e),
        },
        Err(e) => cluster_fail(&e),
    }
}

/// `pulsar-admin namespaces split-bundle`: Pulsar's `splitNamespaceBundle`. The query names the
/// algorithm (`splitAlgorithmName`, default `range_equally_divide`) and whether the children are
/// unloaded afterwards (`unload`); the body is the `splitBoundaries` (a JSON list, for
/// `specified_positions_divide`). The bundle's owner splits it (another broker answers 307 to the
/// owner; an unowned bundle is taken first) and keeps both halves, its topics staying loaded. A
/// bundle no point of the algorithm falls inside is left whole, with a 204, as Pulsar leaves it.
async fn split_bundle(
    State(ctx): Ctx,
    OverTls(tls): OverTls,
    OriginalUri(uri): OriginalUri,
    Path((tenant, ns, range)): Path<(String, String, String)>,
    Query(q): Query<HashMap<String, String>>,
    body: axum::body::Bytes,
) -> Response {
    let name = format!("{tenant}/{ns}");
    if ctx.cluster.get().is_none() {
        if let Some(r) = crate::admin::namespaces::lifecycle::missing(&ctx, &name) {
            return r;
        }
    }
    let positions: Vec<u64> = if body.iter().all(u8::is_ascii_whitespace) {
        Vec::new()
    } else {
        match serde_json::from_slice(&body) {
            Ok(p) => p,
            Err(e) => {
                return fail(
                    StatusCode::BAD_REQUEST,
                    format!("splitBoundaries must be a list of hash positions: {e}"),
                )
            }
        }
    };
    // Without a name: `defaultNamespaceBundleSplitAlgorithm`, as Pulsar.
    let algorithm_name = q.get("splitAlgorithmName").map_or(
        ctx.service
            .config
            .default_namespace_bundle_split_algorithm
            .as_str(),
        String::as_str,
    );
    let algorithm = match SplitAlgorithm::parse(algorithm_name, positions) {
        Ok(a) => a,
        Err(why) => return fail(StatusCode::PRECONDITION_FAILED, why),
    };
    let unload = q.get("unload").is_some_and(|v| v == "true");
    let bounds = match namespace_bundles::boundaries(&ctx, &name).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    let bundle = match namespace_bundles::named(&name, &bounds, &range) {
        Ok(bundle) => bundle,
        Err(r) => return r,
    };
    if let Some(m) = ctx.cluster.get() {
        // Pulsar's `validateNamespaceBundleOwnership`: the owner splits.
        let owner = match m.owner(&bundle).await {
            Ok(None) => m.acquire(&bundle).await,
            Ok(Some(o)) => Ok(o),
            Err(e) => Err(e),
        };
        match owner {
            Ok(pulsar_rs_cluster::member::Owner::Other(u)) => {
                return redirect(web_for(&u, tls), &uri, m.is_leader())
            }
            Ok(pulsar_rs_cluster::member::Owner::Me) => {}
            Err(e) => return cluster_fail(&e),
        }
    }
    if let Err(e) = crate::cluster::member::refresh_known_topics(&ctx).await {
        return fail(StatusCode::SERVICE_UNAVAILABLE, e.to_string());
    }
    let hashes: Vec<u32> = ctx
        .service
        .discoverable_topics(&name, true, true)
        .iter()
        .filter(|t| bundle.contains_topic(t))
        .map(|t| bundles::topic_hash(t))
        .collect();
    let points = algorithm.split_points(&bundle, &hashes);
    let Some(m) = ctx.cluster.get() else {
        // On its own, the broker records the new split with the namespace's policies.
        let (all, _) = split_boundaries(&bounds, &bundle, &points);
        let ns_name = name.clone();
        let recorded = crate::http::no_content(&ctx, move |svc| {
            svc.policies
                .update_namespace(&ns_name, |p| namespace_bundles::record(p, &all))
        })
        .await;
        if !unload || recorded.status() != StatusCode::NO_CONTENT {
            return recorded;
        }
        let why = "namespace bundle split and unloaded by an admin call";
        return crate::admin::machinery::closing::closing_producers(&ctx, move |svc| {
            Ok(svc.unload_where(|t| bundle.contains_topic(&t.name.to_string()), why))
        })
        .await;
    };
    let children = match m.split_bundle(&bundle, &points).await {
        Ok(c) => c,
        Err(e) => return cluster_fail(&e),
    };
    if unload {
        for child in &children {
            if let Err(e) = m.release(child).await {
                return cluster_fail(&e);
            }
        }
    }
    StatusCode::NO_CONTENT.into_response()
}

/// Pulsar's refusal of an unload whose `destinationBroker` is not a live broker.
const INACTIVE_DESTINATION: &str =
    "Not allowed unload namespace bundle to inactive destination broker";

/// 307 to the same path and query on `web`, with `authoritative` set as given.
fn redirect(web: &str, uri: &axum::http::Uri, authoritative: bool) -> Response {
    let query: Vec<&str> = uri
        .query()
        .unwrap_or_default()
        .split('&')
        .filter(|kv| !kv.is_empty() && !kv.starts_with("authoritative="))
        .collect();
    let mut to = format!("{}{}?", web.trim_end_matches('/'), uri.path());
    for kv in query {
        to.push_str(kv);
        to.push('&');
    }
    to.push_str(&format!("authoritative={authoritative}"));
    (StatusCode::TEMPORARY_REDIRECT, [(header::LOCATION, to)]).into_response()
}

/// The bundle range of a topic, as Pulsar's `TopicLookup.getNamespaceBundle` answers it: the
/// bare range (`0xLOW_0xHIGH`), with a JSON content type.
async fn topic_bundle(State(ctx): Ctx, TopicPath(topic): TopicPath) -> Response {
    let ns = topic.namespace_name();
    let range = match namespace_bundles::boundaries(&ctx, &ns).await {
        Ok(b) => bundles::find_bundle(&ns, &b, &topic.to_string()).range(),
        Err(r) => return r,
    };
    ([(header::CONTENT_TYPE, "application/json")], range).into_response()
}
