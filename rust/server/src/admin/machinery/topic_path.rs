//! The topic a REST path names, read in one place: `{tenant}/{ns}/{topic}` under
//! `/admin/v2/persistent/`, `/admin/v2/non-persistent/` (the domain is the path's),
//! `/lookup/v2/topic/{domain}/` (the domain is a segment) or any other topic route
//! (schemas, transactions: persistent). Handlers take a [`TopicPath`] instead of the three
//! segments ([`ExistingTopic`] where the topic must exist, [`DeferredTopicPath`] where other
//! input is checked first); the admin guard reads raw paths through [`name`].

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{FromRequestParts, Path};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use pulsar_rs_broker::{BrokerError, TopicName};

use crate::context::ServerContext;
use crate::http::{broker_fail, fail};

/// The prefix of the admin route templates that name a persistent topic.
pub(crate) const TOPIC_ROUTE: &str = "/admin/v2/persistent/{tenant}/{ns}/{topic}";

/// The topic named by a domain and the three segments of a REST path.
///
/// # Errors
/// [`BrokerError::InvalidTopicName`] when the segments make no valid topic name.
pub(crate) fn name(
    domain: &str,
    tenant: &str,
    ns: &str,
    topic: &str,
) -> Result<TopicName, BrokerError> {
    TopicName::parse(&format!("{domain}://{tenant}/{ns}/{topic}"))
}

/// The domain of a topic route: its `{domain}` segment, else the one its path is under.
fn domain<'a>(params: &'a HashMap<String, String>, path: &str) -> &'a str {
    match params.get("domain") {
        Some(d) => d,
        None if path.starts_with("/admin/v2/non-persistent/") => "non-persistent",
        None => "persistent",
    }
}

/// Extractor: the topic of a route with `{tenant}`, `{ns}` and `{topic}` segments. A name that
/// does not parse is refused with the broker's answer to an invalid topic name (412).
#[derive(Debug)]
pub(crate) struct TopicPath(pub TopicName);

impl<S: Send + Sync> FromRequestParts<S> for TopicPath {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let Path(params) = Path::<HashMap<String, String>>::from_request_parts(parts, state)
            .await
            .map_err(IntoResponse::into_response)?;
        let (Some(tenant), Some(ns), Some(topic)) =
            (params.get("tenant"), params.get("ns"), params.get("topic"))
        else {
            return Err(fail(
                StatusCode::INTERNAL_SERVER_ERROR,
                "route without a topic path",
            ));
        };
        name(domain(&params, parts.uri.path()), tenant, ns, topic)
            .map(TopicPath)
            .map_err(|e| broker_fail(&e))
    }
}

/// Whether `name` is a stored or loaded topic, or a partition within its partitioned topic's
/// count (as Pulsar's `checkTopicExists`: a partitioned topic's partitions exist from its
/// creation, used or not).
pub(crate) fn exists(ctx: &ServerContext, name: &TopicName) -> bool {
    name.partition_index()
        .is_some_and(|i| i < ctx.service.partitions(&name.base(), false).unwrap_or(0))
        || ctx.service.loaded_topic(name).is_some()
        || ctx
            .service
            .topics_of_namespace(&name.namespace_name())
            .contains(name)
}

/// Refuses with 404 a topic that does not exist (neither partitioned nor [`exists`]).
#[allow(clippy::result_large_err)] // cold path; the error is the ready response
pub(crate) fn must_exist(ctx: &ServerContext, name: &TopicName) -> Result<(), Response> {
    if ctx.service.partitions(name, false).unwrap_or(0) > 0 || exists(ctx, name) {
        Ok(())
    } else {
        Err(fail(
            StatusCode::NOT_FOUND,
            format!("Topic {name} not found"),
        ))
    }
}

/// A [`TopicPath`] whose refusal waits for the handler: handlers that check other input first
/// (a count, a body, a policy name) take this and resolve it with [`existing`] where they used to
/// read the name, so a request wrong in two ways is answered as before.
pub(crate) type DeferredTopicPath = Result<TopicPath, Response>;

/// The topic of a deferred path, which must exist (412 for an invalid name, else 404).
#[allow(clippy::result_large_err)] // cold path; the error is the ready response
pub(crate) fn existing(
    ctx: &ServerContext,
    path: DeferredTopicPath,
) -> Result<TopicName, Response> {
    let TopicPath(name) = path?;
    must_exist(ctx, &name)?;
    Ok(name)
}

/// Extractor: a [`TopicPath`] whose topic exists ([`must_exist`]), for handlers with nothing
/// else to check first.
#[derive(Debug)]
pub(crate) struct ExistingTopic(pub TopicName);

impl FromRequestParts<Arc<ServerContext>> for ExistingTopic {
    type Rejection = Response;

    async fn from_request_parts(
        parts: &mut Parts,
        ctx: &Arc<ServerContext>,
    ) -> Result<Self, Self::Rejection> {
        let TopicPath(name) = TopicPath::from_request_parts(parts, ctx).await?;
        must_exist(ctx, &name)?;
        Ok(ExistingTopic(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_domain_is_the_routes() {
        let none = HashMap::new();
        let np = "/admin/v2/non-persistent/t/ns/x/stats";
        assert_eq!(domain(&none, np), "non-persistent");
        assert_eq!(domain(&none, "/admin/v2/persistent/t/ns/x"), "persistent");
        assert_eq!(
            domain(&none, "/admin/v2/schemas/t/ns/x/schema"),
            "persistent"
        );
        let lookup = HashMap::from([("domain".to_owned(), "non-persistent".to_owned())]);
        assert_eq!(
            domain(&lookup, "/lookup/v2/topic/non-persistent/t/ns/x"),
            "non-persistent"
        );
    }

    #[test]
    fn names_parse_as_the_broker_parses_them() {
        let n = name("persistent", "t", "ns", "x-partition-1").unwrap();
        assert_eq!(n.to_string(), "persistent://t/ns/x-partition-1");
        assert_eq!(n.partition_index(), Some(1));
        assert!(matches!(
            name("bogus", "t", "ns", "x"),
            Err(BrokerError::InvalidTopicName { .. })
        ));
    }
}
