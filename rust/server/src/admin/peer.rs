//! Reads a broker makes from the other brokers of its cluster to answer an admin call whole (a
//! partitioned topic's partitions owned elsewhere), as Pulsar's broker asks through its own
//! admin client: one `GET` of a JSON document over plain HTTP, with the caller's credentials,
//! following the answering broker's `307`s.

use std::sync::LazyLock;
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{header, HeaderValue, Request, StatusCode};
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;

/// How many redirects one read follows (a lookup chain is at most leader, then owner).
const MAX_REDIRECTS: usize = 5;
/// How long one read may take, redirects included (Pulsar's admin client's read timeout).
const READ_TIMEOUT: Duration = Duration::from_secs(60);

/// The pooled client every read shares (connections to the same broker are reused).
static CLIENT: LazyLock<Client<HttpConnector, Empty<Bytes>>> =
    LazyLock::new(|| Client::builder(TokioExecutor::new()).build_http());

/// The JSON document at `url`, asked with `authorization` (the caller's header, if any).
///
/// # Errors
/// A message naming the URL: unreachable, too slow, not JSON, or any answer but 200.
pub(crate) async fn get_json(
    url: &str,
    authorization: Option<&HeaderValue>,
) -> Result<Value, String> {
    tokio::time::timeout(READ_TIMEOUT, follow(url.to_owned(), authorization))
        .await
        .map_err(|_| format!("GET {url}: no answer in {} s", READ_TIMEOUT.as_secs()))?
}

async fn follow(mut url: String, authorization: Option<&HeaderValue>) -> Result<Value, String> {
    for _ in 0..=MAX_REDIRECTS {
        let mut req = Request::get(url.as_str());
        if let Some(a) = authorization {
            req = req.header(header::AUTHORIZATION, a);
        }
        let req = req
            .body(Empty::new())
            .map_err(|e| format!("GET {url}: {e}"))?;
        let resp = CLIENT
            .request(req)
            .await
            .map_err(|e| format!("GET {url}: {e}"))?;
        let status = resp.status();
        if matches!(
            status,
            StatusCode::TEMPORARY_REDIRECT | StatusCode::PERMANENT_REDIRECT
        ) {
            let to = resp
                .headers()
                .get(header::LOCATION)
                .and_then(|v| v.to_str().ok());
            url = to
                .ok_or_else(|| format!("GET {url}: {status} without a Location"))?
                .to_owned();
            continue;
        }
        let body = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| format!("GET {url}: {e}"))?
            .to_bytes();
        if status != StatusCode::OK {
            return Err(format!(
                "GET {url}: {status} {}",
                String::from_utf8_lossy(&body)
            ));
        }
        return serde_json::from_slice(&body).map_err(|e| format!("GET {url}: {e}"));
    }
    Err(format!("GET {url}: more than {MAX_REDIRECTS} redirects"))
}
