//! One document per partition of a partitioned topic (its stats, its internal stats), for the calls
//! that answer for the topic as a whole: computed here for the partitions this broker serves and,
//! in a cluster, asked of each other partition's owner (through [`crate::cluster::peers::admin`]),
//! as Pulsar's broker asks through its admin client. Bounded by the partitions that exist
//! ([`crate::admin::machinery::state::targets`]), never a declared count one by one, and written
//! while it is sent ([`answer`]): a step of partitions at a time, stopped when the client leaves.

use std::sync::Arc;

use axum::http::{HeaderValue, StatusCode};
use axum::response::Response;
use pulsar_rs_broker::{Topic, TopicName};
use pulsar_rs_cluster::{ClusterMember, LookupAnswer};
use serde_json::{Map, Value};

use crate::cluster::peers::admin as peer;
use crate::cluster::peers::client::BrokerClient;
use crate::context::ServerContext;
use crate::http::{broker_fail, cluster_fail, fail};

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
    client: &BrokerClient,
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
                let web = client
                    .web_url(&u)
                    .map_err(|e| fail(StatusCode::SERVICE_UNAVAILABLE, e))?;
                let to = url(web.trim_end_matches('/'), &p, true);
                elsewhere.push((p, to));
            }
            Ok(LookupAnswer::Redirect {
                urls,
                authoritative,
            }) => {
                let web = client
                    .web_url(&urls)
                    .map_err(|e| fail(StatusCode::SERVICE_UNAVAILABLE, e))?;
                let to = url(web.trim_end_matches('/'), &p, authoritative);
                elsewhere.push((p, to));
            }
            Err(e) => return Err(cluster_fail(&e)),
        }
    }
    Ok((here, elsewhere))
}

/// Makes the document of a partition this broker serves.
pub(crate) type LocalDocument = Arc<dyn Fn(&ServerContext, &Topic) -> Value + Send + Sync>;

/// What one partition's document is: its admin path's last segment and how it is made here.
pub(crate) struct PartitionDocument {
    /// `stats` or `internalStats` (`/admin/v2/persistent/{tenant}/{ns}/{partition}/{op}`).
    pub op: &'static str,
    /// The document of a partition this broker serves.
    pub local: LocalDocument,
    /// Query parameters (`&k=v...`, or empty) the partitions served by other brokers are asked
    /// with, so their documents are made as `local` makes them here.
    pub query: String,
    /// Whether each partition's document is in the answer (`perPartition`), or only the
    /// summary.
    pub per_partition: bool,
}

/// What an answer over all partitions says besides each partition's document.
pub(crate) trait Summary: Send + 'static {
    /// Takes one partition's document in.
    fn add(&mut self, doc: &Value);
    /// The answer's fields besides `partitions`, once every partition was added.
    fn fields(self) -> Map<String, Value>;
}

/// Partitions this broker serves, made in one blocking call: a step of the answer is at most
/// this many, so the broker holds one step's documents (a few hundred KB) at a time.
const STEP: usize = 256;

/// One step of an answer: partitions served here, or one partition asked of the broker that
/// serves it (the URL of the call).
enum Step {
    Here(Vec<TopicName>),
    Peer(TopicName, String),
}

/// Answers `{"partitions": {name: document, ...}, <the summary's fields>}` for each partition of
/// `name` (`n` declared) that exists, in partition order; `authorization` (the caller's) goes with
/// the reads from other brokers. The answer is written while it is sent
/// ([`crate::admin::machinery::streamed`]), a step of partitions at a time, so its memory stays a
/// few steps' worth however many partitions there are, and the work stops when the client leaves. A
/// failure in the first step is answered with its status; a later one aborts the answer.
pub(crate) async fn answer<S: Summary>(
    ctx: &Arc<ServerContext>,
    name: &TopicName,
    n: u32,
    doc: PartitionDocument,
    authorization: Option<HeaderValue>,
    mut summary: S,
) -> Response {
    let partitions = ctx.service.partition_targets(name, n);
    let (here, elsewhere) = match ctx.cluster.get() {
        None => (partitions, Vec::new()),
        Some(member) => {
            let (op, query) = (doc.op, doc.query.as_str());
            let split = by_owner(
                &ctx.broker_client,
                member,
                partitions,
                |web, p, authoritative| {
                    let path = format!(
                        "/admin/v2/persistent/{}/{}/{}/{op}",
                        p.tenant, p.namespace, p.local
                    );
                    format!("{web}{path}?authoritative={authoritative}{query}")
                },
            )
            .await;
            match split {
                Ok(s) => s,
                Err(r) => return r,
            }
        }
    };
    let mut steps = steps(here, elsewhere).into_iter();
    let mut out = b"{\"partitions\":{".to_vec();
    let mut first = true;
    if let Some(step) = steps.next() {
        match run(ctx, step, &doc, authorization.as_ref()).await {
            Ok(docs) => write(&mut out, &mut first, &mut summary, &doc, docs),
            Err(r) => return r,
        }
    }
    let (response, tx) = crate::admin::machinery::streamed::json_response(out);
    let ctx = Arc::clone(ctx);
    tokio::spawn(async move {
        for step in steps {
            let docs = match run(&ctx, step, &doc, authorization.as_ref()).await {
                Ok(d) => d,
                Err(r) => {
                    let why = format!("partition answer failed: status {}", r.status());
                    tracing::warn!("{why}");
                    tx.fail(why).await;
                    return;
                }
            };
            let mut out = Vec::new();
            write(&mut out, &mut first, &mut summary, &doc, docs);
            if out.is_empty() {
                // JSON allows whitespace between tokens: a step with nothing to write still
                // sends a byte, so a client that left is noticed at every step.
                out.push(b' ');
            }
            if tx.send(out).await.is_err() {
                tracing::debug!("the client left: partition answer stopped");
                return;
            }
        }
        let mut out = b"}".to_vec();
        crate::admin::machinery::streamed::write_fields(&mut out, summary.fields());
        out.push(b'}');
        let _ = tx.send(out).await;
    });
    response
}

/// The partitions in index order, consecutive ones served here grouped by [`STEP`].
fn steps(here: Vec<TopicName>, elsewhere: Vec<(TopicName, String)>) -> Vec<Step> {
    let mut all: Vec<(TopicName, Option<String>)> = here
        .into_iter()
        .map(|p| (p, None))
        .chain(elsewhere.into_iter().map(|(p, u)| (p, Some(u))))
        .collect();
    all.sort_by_key(|(p, _)| p.partition_index());
    let mut out: Vec<Step> = Vec::new();
    for (p, url) in all {
        match (url, out.last_mut()) {
            (Some(u), _) => out.push(Step::Peer(p, u)),
            (None, Some(Step::Here(v))) if v.len() < STEP => v.push(p),
            (None, _) => out.push(Step::Here(vec![p])),
        }
    }
    out
}

/// The documents of one step's partitions.
async fn run(
    ctx: &Arc<ServerContext>,
    step: Step,
    doc: &PartitionDocument,
    authorization: Option<&HeaderValue>,
) -> Result<Vec<(TopicName, Value)>, Response> {
    match step {
        Step::Here(here) => {
            let (c, local) = (Arc::clone(ctx), Arc::clone(&doc.local));
            // Loading a partition reads its ledger: blocking pool.
            tokio::task::spawn_blocking(move || {
                here.into_iter()
                    .map(|p| {
                        let t = c.service.topic(&p, true)?;
                        let v = local(&c, &t);
                        Ok((p, v))
                    })
                    .collect::<Result<Vec<_>, _>>()
            })
            .await
            .map_err(|e| fail(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?
            .map_err(|e| broker_fail(&e))
        }
        Step::Peer(p, url) => peer::get_json(&ctx.broker_client, &url, authorization)
            .await
            .map(|v| vec![(p, v)])
            .map_err(|e| {
                tracing::warn!(error = %e, %url, "a partition's document from its owner");
                fail(StatusCode::SERVICE_UNAVAILABLE, e)
            }),
    }
}

/// Adds one step's documents to the summary and, per partition, to the answer.
fn write<S: Summary>(
    out: &mut Vec<u8>,
    first: &mut bool,
    summary: &mut S,
    doc: &PartitionDocument,
    docs: Vec<(TopicName, Value)>,
) {
    for (p, v) in docs {
        summary.add(&v);
        if !doc.per_partition {
            continue;
        }
        if !std::mem::take(first) {
            out.push(b',');
        }
        // Strings and JSON values serialize into a Vec without failing.
        let _ = serde_json::to_writer(&mut *out, &p.to_string());
        out.push(b':');
        let _ = serde_json::to_writer(&mut *out, &v);
    }
}
