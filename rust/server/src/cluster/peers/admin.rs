//! Calls a broker makes to the other brokers of its cluster to answer an admin call whole (a
//! partitioned topic's partitions owned elsewhere), as Pulsar's broker calls through its own
//! admin client: one request over HTTP or HTTPS (the broker client's TLS,
//! [`BrokerClient`]), with the caller's credentials, following the answering broker's `307`s.

use std::time::Duration;

use axum::body::Bytes;
use axum::http::{header, HeaderValue, Method, Request, StatusCode, Uri};
use http_body_util::{BodyExt, Full};
use serde_json::Value;

use super::client::BrokerClient;

/// How many redirects one call follows (a lookup chain is at most leader, then owner).
const MAX_REDIRECTS: usize = 5;
/// How long one call may take, redirects included (Pulsar's admin client's read timeout).
const CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// One call: `method` on `url` with `body` (JSON when not empty) and `authorization` (the
/// caller's header, if any); the final answer's status and body.
///
/// # Errors
/// A message naming the URL: unreachable, too slow, or redirected too often.
pub(crate) async fn call(
    client: &BrokerClient,
    method: &Method,
    url: &str,
    body: &Bytes,
    authorization: Option<&HeaderValue>,
) -> Result<(StatusCode, Bytes), String> {
    tokio::time::timeout(
        CALL_TIMEOUT,
        follow(client, method, url.to_owned(), body, authorization),
    )
    .await
    .map_err(|_| format!("{method} {url}: no answer in {} s", CALL_TIMEOUT.as_secs()))?
}

/// The JSON document at `url` (a `GET` answered 200).
///
/// # Errors
/// As [`call`], and any answer but 200 or a body that is not JSON.
pub(crate) async fn get_json(
    client: &BrokerClient,
    url: &str,
    authorization: Option<&HeaderValue>,
) -> Result<Value, String> {
    let (status, body) = call(client, &Method::GET, url, &Bytes::new(), authorization).await?;
    if status != StatusCode::OK {
        return Err(format!(
            "GET {url}: {status} {}",
            String::from_utf8_lossy(&body)
        ));
    }
    serde_json::from_slice(&body).map_err(|e| format!("GET {url}: {e}"))
}

/// The URL of the call `uri` at `web` (a broker's `http://host:port`): its path, or `path`
/// instead, and its query with `authoritative` set.
pub(crate) fn url_at(web: &str, uri: &Uri, path: Option<&str>, authoritative: bool) -> String {
    let mut query: Vec<&str> = uri
        .query()
        .unwrap_or_default()
        .split('&')
        .filter(|kv| !kv.is_empty() && !kv.starts_with("authoritative="))
        .collect();
    let flag = format!("authoritative={authoritative}");
    query.push(&flag);
    format!(
        "{}{}?{}",
        web.trim_end_matches('/'),
        path.unwrap_or(uri.path()),
        query.join("&")
    )
}

/// An error with its causes (hyper's own text is only "client error (Connect)").
fn with_causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

async fn follow(
    client: &BrokerClient,
    method: &Method,
    mut url: String,
    body: &Bytes,
    authorization: Option<&HeaderValue>,
) -> Result<(StatusCode, Bytes), String> {
    let fail = |url: &str, e: &dyn std::fmt::Display| format!("{method} {url}: {e}");
    for _ in 0..=MAX_REDIRECTS {
        let mut req = Request::builder().method(method.clone()).uri(url.as_str());
        if let Some(a) = authorization {
            req = req.header(header::AUTHORIZATION, a);
        }
        if !body.is_empty() {
            req = req.header(header::CONTENT_TYPE, "application/json");
        }
        let req = req
            .body(Full::new(body.clone()))
            .map_err(|e| fail(&url, &e))?;
        let resp = client
            .http()
            .request(req)
            .await
            .map_err(|e| fail(&url, &with_causes(&e)))?;
        let status = resp.status();
        if matches!(
            status,
            StatusCode::TEMPORARY_REDIRECT | StatusCode::PERMANENT_REDIRECT
        ) {
            let to = resp
                .headers()
                .get(header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .ok_or_else(|| fail(&url, &"a redirect without a Location"))?;
            url = to.to_owned();
            continue;
        }
        let bytes = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| fail(&url, &e))?
            .to_bytes();
        return Ok((status, bytes));
    }
    Err(fail(&url, &format!("more than {MAX_REDIRECTS} redirects")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_elsewhere_keeps_the_query_and_sets_authoritative_once() {
        let uri: Uri =
            "/admin/v2/persistent/t/ns/x/stats?getPreciseBacklog=true&authoritative=false"
                .parse()
                .unwrap();
        assert_eq!(
            url_at("http://b:8081/", &uri, None, true),
            "http://b:8081/admin/v2/persistent/t/ns/x/stats?getPreciseBacklog=true&authoritative=true"
        );
        let bare: Uri = "/admin/v2/persistent/t/ns/x".parse().unwrap();
        assert_eq!(
            url_at(
                "http://b:8081",
                &bare,
                Some("/admin/v2/persistent/t/ns/x-partition-1"),
                false
            ),
            "http://b:8081/admin/v2/persistent/t/ns/x-partition-1?authoritative=false"
        );
    }
}
