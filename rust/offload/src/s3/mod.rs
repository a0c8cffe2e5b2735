//! A small S3 client on hyper-util: the calls the offloader and its tests make (PUT, multipart
//! upload, ranged GET, HEAD, DELETE, ListObjectsV2, PUT bucket), SigV4-signed or unsigned.
//!
//! No checksum headers are ever sent (S3Proxy 2.6.0 answers `501` to `x-amz-checksum-*` on
//! UploadPart). With a service endpoint, buckets are addressed path-style
//! (`{endpoint}/{bucket}/{key}`); without one, Amazon's virtual-hosted style in the region.
//! Every call must run on a Tokio runtime (the connections' tasks are spawned on it).

pub mod sigv4;
pub mod xml;

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Method, Request, StatusCode, Uri};
use http_body_util::{BodyExt, Full};
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

use crate::config::Credentials;

/// How long a connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// How long a request with a small body (or none) may take, answer included.
pub const SMALL_REQUEST_TIMEOUT: Duration = Duration::from_secs(8);

/// A failed S3 call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct S3Error {
    /// What was attempted (`GET bucket/key`).
    pub what: String,
    /// The HTTP status, if an answer came.
    pub status: Option<u16>,
    /// S3's error code (`NoSuchKey`), or the transport's failure kind.
    pub code: String,
    /// The store's (or transport's) message.
    pub message: String,
}

impl S3Error {
    /// Whether trying again may help: no answer, a timeout, throttling or a server error.
    #[must_use]
    pub fn retryable(&self) -> bool {
        match self.status {
            None => true,
            Some(s) => s == 429 || s >= 500 || s == 408,
        }
    }

    /// Whether the object (or upload) does not exist.
    #[must_use]
    pub fn not_found(&self) -> bool {
        self.status == Some(404)
    }
}

impl std::fmt::Display for S3Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.status {
            Some(s) => write!(f, "{}: HTTP {s} {}: {}", self.what, self.code, self.message),
            None => write!(f, "{}: {}: {}", self.what, self.code, self.message),
        }
    }
}

impl std::error::Error for S3Error {}

/// An object read (whole or a range).
#[derive(Clone, Debug)]
pub struct GetObject {
    /// The bytes returned.
    pub body: Bytes,
    /// Its `x-amz-meta-*` user metadata (names lower-cased, prefix removed).
    pub metadata: BTreeMap<String, String>,
    /// The whole object's size, from `Content-Range` or `Content-Length`.
    pub object_size: Option<u64>,
}

/// An object's `HEAD`.
#[derive(Clone, Debug)]
pub struct HeadObject {
    /// Its size.
    pub size: u64,
    /// Its user metadata.
    pub metadata: BTreeMap<String, String>,
}

/// Where requests go.
#[derive(Clone, Debug)]
enum Addressing {
    /// `{scheme}://{authority}{base}/{bucket}/{key}`.
    Path {
        scheme: String,
        authority: String,
        base: String,
    },
    /// `https://{bucket}.s3.{region}.amazonaws.com/{key}`.
    VirtualHost,
}

/// The client: one connection pool, one endpoint, one identity.
#[derive(Clone)]
pub struct S3Client {
    http: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
    addressing: Addressing,
    region: String,
    credentials: Option<Credentials>,
}

impl std::fmt::Debug for S3Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3Client")
            .field("addressing", &self.addressing)
            .field("region", &self.region)
            .field("signed", &self.credentials.is_some())
            .finish()
    }
}

/// The system's trusted roots (for `https` endpoints), from `SSL_CERT_FILE` or the usual files.
fn system_roots() -> rustls::RootCertStore {
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::CertificateDer;
    let mut roots = rustls::RootCertStore::empty();
    let candidates = std::env::var("SSL_CERT_FILE").into_iter().chain(
        [
            "/etc/ssl/certs/ca-certificates.crt",
            "/etc/pki/tls/certs/ca-bundle.crt",
            "/etc/ssl/cert.pem",
        ]
        .map(String::from),
    );
    for path in candidates {
        if let Ok(certs) = CertificateDer::pem_file_iter(&path) {
            for c in certs.flatten() {
                let _ = roots.add(c);
            }
            if !roots.is_empty() {
                break;
            }
        }
    }
    roots
}

impl S3Client {
    /// A client for `endpoint` (path-style) or, without one, Amazon S3 in `region`.
    ///
    /// # Errors
    /// The endpoint is not an `http`/`https` URL.
    pub fn new(
        endpoint: Option<&str>,
        region: Option<&str>,
        credentials: Option<Credentials>,
    ) -> Result<S3Client, String> {
        let addressing = match endpoint {
            Some(e) => {
                let uri: Uri = e
                    .trim()
                    .parse()
                    .map_err(|err| format!("bad service endpoint {e:?}: {err}"))?;
                let scheme = uri.scheme_str().unwrap_or("https").to_ascii_lowercase();
                if scheme != "http" && scheme != "https" {
                    return Err(format!("bad service endpoint {e:?}: not http or https"));
                }
                let authority = uri
                    .authority()
                    .ok_or_else(|| format!("bad service endpoint {e:?}: no host"))?
                    .to_string();
                Addressing::Path {
                    scheme,
                    authority,
                    base: uri.path().trim_end_matches('/').to_string(),
                }
            }
            None => Addressing::VirtualHost,
        };
        let needs_tls = !matches!(&addressing, Addressing::Path { scheme, .. } if scheme == "http");
        let roots = if needs_tls {
            system_roots()
        } else {
            rustls::RootCertStore::empty()
        };
        let tls = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
        let mut plain = HttpConnector::new();
        plain.enforce_http(false);
        plain.set_connect_timeout(Some(CONNECT_TIMEOUT));
        plain.set_nodelay(true);
        let connector = HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .wrap_connector(plain);
        let http = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .build(connector);
        Ok(S3Client {
            http,
            addressing,
            region: region
                .filter(|r| !r.is_empty())
                .unwrap_or("us-east-1")
                .to_string(),
            credentials,
        })
    }

    /// `(scheme, host, encoded path)` of `bucket`/`key`.
    fn locate(&self, bucket: &str, key: Option<&str>) -> (String, String, String) {
        let key_path = key.map(|k| format!("/{}", sigv4::uri_encode(k, true)));
        match &self.addressing {
            Addressing::Path {
                scheme,
                authority,
                base,
            } => (
                scheme.clone(),
                authority.clone(),
                format!(
                    "{base}/{}{}",
                    sigv4::uri_encode(bucket, false),
                    key_path.unwrap_or_default()
                ),
            ),
            Addressing::VirtualHost => (
                "https".into(),
                format!("{bucket}.s3.{}.amazonaws.com", self.region),
                key_path.unwrap_or_else(|| "/".into()),
            ),
        }
    }

    /// Sends one request and reads the whole answer; a status of 300 or more is an error.
    #[allow(clippy::too_many_arguments)]
    async fn send(
        &self,
        method: Method,
        bucket: &str,
        key: Option<&str>,
        query: &[(String, String)],
        extra_headers: Vec<(String, String)>,
        body: Bytes,
        timeout: Duration,
    ) -> Result<(StatusCode, HeaderMap, Bytes), S3Error> {
        let what = match key {
            Some(k) => format!("{method} {bucket}/{k}"),
            None => format!("{method} {bucket}"),
        };
        let transport = |code: &str, message: String| S3Error {
            what: what.clone(),
            status: None,
            code: code.into(),
            message,
        };
        let (scheme, host, path) = self.locate(bucket, key);
        let query_string = query
            .iter()
            .map(|(k, v)| {
                if v.is_empty() {
                    sigv4::uri_encode(k, false)
                } else {
                    format!(
                        "{}={}",
                        sigv4::uri_encode(k, false),
                        sigv4::uri_encode(v, false)
                    )
                }
            })
            .collect::<Vec<_>>()
            .join("&");
        let uri = if query_string.is_empty() {
            format!("{scheme}://{host}{path}")
        } else {
            format!("{scheme}://{host}{path}?{query_string}")
        };
        let mut headers = extra_headers;
        if let Some(creds) = &self.credentials {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            let (amz_date, date) = sigv4::amz_date(now);
            let payload = if body.is_empty() {
                sigv4::EMPTY_SHA256.to_string()
            } else {
                sigv4::sha256_hex(&body)
            };
            headers.push(("x-amz-date".into(), amz_date.clone()));
            headers.push(("x-amz-content-sha256".into(), payload.clone()));
            let mut signed = headers.clone();
            signed.push(("host".into(), host.clone()));
            let auth = sigv4::authorization(
                &sigv4::ToSign {
                    method: method.as_str(),
                    path: &path,
                    query,
                    headers: &signed,
                    payload_sha256: &payload,
                },
                creds,
                &self.region,
                &amz_date,
                &date,
            );
            headers.push(("authorization".into(), auth));
        }
        let mut req = Request::builder().method(method.clone()).uri(&uri);
        for (k, v) in &headers {
            req = req.header(k.as_str(), v.as_str());
        }
        let req = req
            .body(Full::new(body))
            .map_err(|e| transport("BadRequest", e.to_string()))?;
        let exchange = async {
            let resp = self
                .http
                .request(req)
                .await
                .map_err(|e| transport("ConnectionFailed", error_chain(&e)))?;
            let (parts, body) = resp.into_parts();
            let bytes = body
                .collect()
                .await
                .map_err(|e| transport("ReadFailed", error_chain(&e)))?
                .to_bytes();
            Ok::<_, S3Error>((parts.status, parts.headers, bytes))
        };
        let (status, headers, bytes) = tokio::time::timeout(timeout, exchange)
            .await
            .map_err(|_| transport("Timeout", format!("no answer within {timeout:?}")))??;
        if status.as_u16() >= 300 {
            let text = String::from_utf8_lossy(&bytes);
            return Err(S3Error {
                what,
                status: Some(status.as_u16()),
                code: xml::first(&text, "Code")
                    .unwrap_or_else(|| status.canonical_reason().unwrap_or("Error").to_string()),
                message: xml::first(&text, "Message").unwrap_or_default(),
            });
        }
        Ok((status, headers, bytes))
    }

    /// Writes `body` as `bucket/key` with user metadata `metadata` in one PUT.
    ///
    /// # Errors
    /// The store's answer.
    pub async fn put_object(
        &self,
        bucket: &str,
        key: &str,
        body: Bytes,
        metadata: &BTreeMap<String, String>,
    ) -> Result<(), S3Error> {
        let timeout = body_timeout(body.len());
        self.send(
            Method::PUT,
            bucket,
            Some(key),
            &[],
            object_headers(metadata),
            body,
            timeout,
        )
        .await
        .map(|_| ())
    }

    /// Starts a multipart upload of `bucket/key` with user metadata `metadata`; its upload id.
    ///
    /// # Errors
    /// The store's answer.
    pub async fn create_multipart_upload(
        &self,
        bucket: &str,
        key: &str,
        metadata: &BTreeMap<String, String>,
    ) -> Result<String, S3Error> {
        let (_, _, body) = self
            .send(
                Method::POST,
                bucket,
                Some(key),
                &[("uploads".into(), String::new())],
                object_headers(metadata),
                Bytes::new(),
                SMALL_REQUEST_TIMEOUT,
            )
            .await?;
        xml::first(&String::from_utf8_lossy(&body), "UploadId").ok_or_else(|| S3Error {
            what: format!("POST {bucket}/{key}?uploads"),
            status: Some(200),
            code: "BadAnswer".into(),
            message: "no UploadId in the answer".into(),
        })
    }

    /// Uploads part `part_number` (from 1); its ETag.
    ///
    /// # Errors
    /// The store's answer.
    pub async fn upload_part(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        part_number: i32,
        body: Bytes,
    ) -> Result<String, S3Error> {
        let timeout = body_timeout(body.len());
        let (_, headers, _) = self
            .send(
                Method::PUT,
                bucket,
                Some(key),
                &[
                    ("partNumber".into(), part_number.to_string()),
                    ("uploadId".into(), upload_id.to_string()),
                ],
                Vec::new(),
                body,
                timeout,
            )
            .await?;
        headers
            .get("etag")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
            .ok_or_else(|| S3Error {
                what: format!("PUT {bucket}/{key} part {part_number}"),
                status: Some(200),
                code: "BadAnswer".into(),
                message: "no ETag in the answer".into(),
            })
    }

    /// Completes a multipart upload from its parts' `(number, ETag)`.
    ///
    /// # Errors
    /// The store's answer (an `<Error>` in a `200` answer too).
    pub async fn complete_multipart_upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        parts: &[(i32, String)],
    ) -> Result<(), S3Error> {
        let mut doc = String::from("<CompleteMultipartUpload>");
        for (n, etag) in parts {
            doc.push_str(&format!(
                "<Part><PartNumber>{n}</PartNumber><ETag>{}</ETag></Part>",
                xml::escape(etag)
            ));
        }
        doc.push_str("</CompleteMultipartUpload>");
        let (_, _, body) = self
            .send(
                Method::POST,
                bucket,
                Some(key),
                &[("uploadId".into(), upload_id.to_string())],
                vec![("content-type".into(), "application/xml".into())],
                Bytes::from(doc),
                Duration::from_secs(20),
            )
            .await?;
        let text = String::from_utf8_lossy(&body);
        if text.contains("<Error>") {
            return Err(S3Error {
                what: format!("POST {bucket}/{key}?uploadId"),
                status: Some(200),
                code: xml::first(&text, "Code").unwrap_or_else(|| "Error".into()),
                message: xml::first(&text, "Message").unwrap_or_default(),
            });
        }
        Ok(())
    }

    /// Aborts a multipart upload (an unknown upload is fine).
    ///
    /// # Errors
    /// The store's answer.
    pub async fn abort_multipart_upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
    ) -> Result<(), S3Error> {
        match self
            .send(
                Method::DELETE,
                bucket,
                Some(key),
                &[("uploadId".into(), upload_id.to_string())],
                Vec::new(),
                Bytes::new(),
                SMALL_REQUEST_TIMEOUT,
            )
            .await
        {
            Err(e) if !e.not_found() => Err(e),
            _ => Ok(()),
        }
    }

    /// Reads `bucket/key`, whole or bytes `range` (`start..end`, end exclusive).
    ///
    /// # Errors
    /// The store's answer (`404` for a missing object).
    pub async fn get_object(
        &self,
        bucket: &str,
        key: &str,
        range: Option<std::ops::Range<u64>>,
    ) -> Result<GetObject, S3Error> {
        let headers = match &range {
            Some(r) => vec![(
                "range".to_string(),
                format!("bytes={}-{}", r.start, r.end.saturating_sub(1)),
            )],
            None => Vec::new(),
        };
        let timeout = match &range {
            Some(r) => body_timeout(usize::try_from(r.end - r.start).unwrap_or(usize::MAX)),
            None => SMALL_REQUEST_TIMEOUT * 2,
        };
        let (_, headers, body) = self
            .send(
                Method::GET,
                bucket,
                Some(key),
                &[],
                headers,
                Bytes::new(),
                timeout,
            )
            .await?;
        let object_size = headers
            .get("content-range")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.rsplit('/').next())
            .and_then(|v| v.parse().ok())
            .or_else(|| range.is_none().then_some(body.len() as u64));
        Ok(GetObject {
            metadata: user_metadata(&headers),
            body,
            object_size,
        })
    }

    /// `HEAD bucket/key`; `None` when it does not exist.
    ///
    /// # Errors
    /// The store's answer.
    pub async fn head_object(
        &self,
        bucket: &str,
        key: &str,
    ) -> Result<Option<HeadObject>, S3Error> {
        match self
            .send(
                Method::HEAD,
                bucket,
                Some(key),
                &[],
                Vec::new(),
                Bytes::new(),
                SMALL_REQUEST_TIMEOUT,
            )
            .await
        {
            Ok((_, headers, _)) => Ok(Some(HeadObject {
                size: headers
                    .get("content-length")
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0),
                metadata: user_metadata(&headers),
            })),
            Err(e) if e.not_found() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Deletes `bucket/key` (a missing object is fine).
    ///
    /// # Errors
    /// The store's answer.
    pub async fn delete_object(&self, bucket: &str, key: &str) -> Result<(), S3Error> {
        match self
            .send(
                Method::DELETE,
                bucket,
                Some(key),
                &[],
                Vec::new(),
                Bytes::new(),
                SMALL_REQUEST_TIMEOUT,
            )
            .await
        {
            Err(e) if !e.not_found() => Err(e),
            _ => Ok(()),
        }
    }

    /// The keys in `bucket` starting with `prefix` (ListObjectsV2, every page).
    ///
    /// # Errors
    /// The store's answer.
    pub async fn list_objects(&self, bucket: &str, prefix: &str) -> Result<Vec<String>, S3Error> {
        let mut keys = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let mut query = vec![("list-type".to_string(), "2".to_string())];
            if !prefix.is_empty() {
                query.push(("prefix".into(), prefix.to_string()));
            }
            if let Some(t) = &token {
                query.push(("continuation-token".into(), t.clone()));
            }
            let (_, _, body) = self
                .send(
                    Method::GET,
                    bucket,
                    None,
                    &query,
                    Vec::new(),
                    Bytes::new(),
                    SMALL_REQUEST_TIMEOUT,
                )
                .await?;
            let text = String::from_utf8_lossy(&body);
            keys.extend(xml::all(&text, "Key"));
            token = xml::first(&text, "NextContinuationToken");
            if xml::first(&text, "IsTruncated").as_deref() != Some("true") || token.is_none() {
                return Ok(keys);
            }
        }
    }

    /// Creates `bucket` (one that exists already and is ours is fine).
    ///
    /// # Errors
    /// The store's answer.
    pub async fn create_bucket(&self, bucket: &str) -> Result<(), S3Error> {
        match self
            .send(
                Method::PUT,
                bucket,
                None,
                &[],
                Vec::new(),
                Bytes::new(),
                SMALL_REQUEST_TIMEOUT,
            )
            .await
        {
            Err(e) if e.code == "BucketAlreadyOwnedByYou" => Ok(()),
            other => other.map(|_| ()),
        }
    }
}

/// A request timeout for a body of `len` bytes: the small-request one plus a second per MiB.
fn body_timeout(len: usize) -> Duration {
    SMALL_REQUEST_TIMEOUT + Duration::from_secs((len >> 20) as u64)
}

/// Content type and `x-amz-meta-*` headers of an object being written.
fn object_headers(metadata: &BTreeMap<String, String>) -> Vec<(String, String)> {
    let mut h = vec![(
        "content-type".to_string(),
        "application/octet-stream".to_string(),
    )];
    for (k, v) in metadata {
        h.push((format!("x-amz-meta-{}", k.to_ascii_lowercase()), v.clone()));
    }
    h
}

/// The `x-amz-meta-*` headers of an answer.
fn user_metadata(headers: &HeaderMap) -> BTreeMap<String, String> {
    headers
        .iter()
        .filter_map(|(k, v)| {
            let name = k.as_str().strip_prefix("x-amz-meta-")?;
            Some((name.to_string(), v.to_str().ok()?.to_string()))
        })
        .collect()
}

/// An error and its sources, `: `-joined (hyper's own message is often just "client error").
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}
