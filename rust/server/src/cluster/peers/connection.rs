//! One binary-protocol connection from this broker to another broker of its cluster (the
//! connection Pulsar's broker-side client opens, over TCP or TLS: [`BrokerClient::connect`]):
//! CONNECT, then requests matched to their
//! responses by request id, PINGs answered; the commands that answer no request (a producer's
//! receipts and errors, the broker closing a producer) go to the opener's event channel when it
//! asked for one ([`PeerConnection::open_with_events`]: the replicators' producers on other
//! clusters). A reader task owns the socket's read half, a
//! writer task its write half; when the socket closes every waiting request fails at once and
//! the event channel closes.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use parking_lot::Mutex;
use pulsar_rs_proto::pb::{self, base_command::Type};
use pulsar_rs_proto::{commands, decode_frame, encode_simple, BaseCommand, DEFAULT_MAX_FRAME_SIZE};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};

use super::client::BrokerClient;

/// The protocol version announced to peers (transactions need 19 or later).
const PROTOCOL_VERSION: i32 = 21;
/// The client version this broker announces to its peers.
const CLIENT_VERSION: &str = concat!("pulsar-rs-broker/", env!("CARGO_PKG_VERSION"));

/// Requests awaiting their response, by request id.
type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<BaseCommand>>>>;

/// A connection to another broker.
pub struct PeerConnection {
    /// Encoded frames for the writer task, which owns the socket's write half.
    out: mpsc::UnboundedSender<Bytes>,
    /// Requests awaiting their response: inserted by [`PeerConnection::request`], removed by
    /// the reader task when the response comes (or drained when the socket closes). Short
    /// lock: one map operation, never held across an await.
    pending: Pending,
    /// The next request id. Relaxed: only uniqueness matters.
    next_request: AtomicU64,
    /// Set once by the reader task when the socket closed. Release on the store, Acquire on
    /// the load: a caller that sees it also sees `pending` drained.
    closed: Arc<AtomicBool>,
    /// Woken by [`PeerConnection::close`]: the reader task stops and the socket closes.
    closing: Arc<tokio::sync::Notify>,
    /// The peer's CONNECTED advertised `supports_repl_dedup_by_lid_and_eid` (set once, at the
    /// handshake; read by a replicator's producer).
    repl_dedup_by_source_position: bool,
}

fn encode(cmd: &BaseCommand) -> Bytes {
    let mut buf = BytesMut::with_capacity(128);
    encode_simple(cmd, &mut buf);
    buf.freeze()
}

/// The request id a response answers, for the responses a peer connection waits for.
fn answered_request(cmd: &BaseCommand) -> Option<u64> {
    match Type::try_from(cmd.r#type).ok()? {
        Type::EndTxnOnPartitionResponse => cmd
            .end_txn_on_partition_response
            .as_ref()
            .map(|r| r.request_id),
        Type::EndTxnOnSubscriptionResponse => cmd
            .end_txn_on_subscription_response
            .as_ref()
            .map(|r| r.request_id),
        Type::LookupResponse => cmd.lookup_topic_response.as_ref().map(|r| r.request_id),
        Type::ProducerSuccess => cmd.producer_success.as_ref().map(|r| r.request_id),
        Type::Success => cmd.success.as_ref().map(|r| r.request_id),
        Type::PartitionedMetadataResponse => cmd
            .partition_metadata_response
            .as_ref()
            .map(|r| r.request_id),
        Type::Error => cmd.error.as_ref().map(|e| e.request_id),
        _ => None,
    }
}

/// Reads one frame's command (a peer sends no payload frames on this connection).
async fn next_command(
    rd: &mut (impl AsyncRead + Unpin),
    buf: &mut BytesMut,
) -> Result<BaseCommand, String> {
    loop {
        match decode_frame(buf, DEFAULT_MAX_FRAME_SIZE) {
            Ok(Some(frame)) => return Ok(frame.into_parts().0),
            Ok(None) => {}
            Err(e) => return Err(format!("malformed frame from the peer: {e}")),
        }
        match rd.read_buf(buf).await {
            Ok(0) => return Err("the peer closed the connection".into()),
            Ok(_) => {}
            Err(e) => return Err(format!("reading from the peer: {e}")),
        }
    }
}

impl PeerConnection {
    /// Connects to the broker at `service_url` (`pulsar://` or `pulsar+ssl://host:port`)
    /// through `client` and completes CONNECT with its credentials.
    ///
    /// # Errors
    /// The URL, the socket, the TLS handshake or the peer's refusal, as text.
    pub async fn open(
        service_url: &str,
        timeout: Duration,
        client: &BrokerClient,
    ) -> Result<Arc<Self>, String> {
        Self::open_inner(service_url, timeout, client, None).await
    }

    /// Like [`PeerConnection::open`], with the commands that answer no request (SEND_RECEIPT,
    /// SEND_ERROR, CLOSE_PRODUCER, ...) sent to the returned receiver, which ends when the
    /// socket closes.
    ///
    /// # Errors
    /// As [`PeerConnection::open`].
    pub async fn open_with_events(
        service_url: &str,
        timeout: Duration,
        client: &BrokerClient,
    ) -> Result<(Arc<Self>, mpsc::UnboundedReceiver<BaseCommand>), String> {
        let (tx, rx) = mpsc::unbounded_channel();
        let conn = Self::open_inner(service_url, timeout, client, Some(tx)).await?;
        Ok((conn, rx))
    }

    async fn open_inner(
        service_url: &str,
        timeout: Duration,
        client: &BrokerClient,
        events: Option<mpsc::UnboundedSender<BaseCommand>>,
    ) -> Result<Arc<Self>, String> {
        let addr = service_url.to_owned();
        let credentials = client.credentials().cloned();
        let handshake = async {
            let stream = client.connect(service_url).await?;
            let (mut rd, mut wr) = tokio::io::split(stream);
            let mut connect = match &credentials {
                Some(c) => {
                    let (method, data) = c.current().await?;
                    commands::connect_with_auth(CLIENT_VERSION, PROTOCOL_VERSION, method, data)
                }
                None => commands::connect(CLIENT_VERSION, PROTOCOL_VERSION),
            };
            // As Pulsar 4.0.4+'s client: a replicator producer on this connection may be
            // deduplicated by source position (it only matters for those).
            if let Some(c) = connect.connect.as_mut() {
                c.feature_flags = Some(pb::FeatureFlags {
                    supports_repl_dedup_by_lid_and_eid: Some(true),
                    ..pb::FeatureFlags::default()
                });
            }
            wr.write_all(&encode(&connect))
                .await
                .map_err(|e| format!("writing CONNECT to {addr}: {e}"))?;
            let mut buf = BytesMut::with_capacity(8 * 1024);
            loop {
                let cmd = next_command(&mut rd, &mut buf).await?;
                match Type::try_from(cmd.r#type) {
                    Ok(Type::Connected) => {
                        let by_source = cmd
                            .connected
                            .and_then(|c| c.feature_flags)
                            .and_then(|f| f.supports_repl_dedup_by_lid_and_eid)
                            .unwrap_or(false);
                        return Ok((rd, wr, buf, by_source));
                    }
                    Ok(Type::Error) => {
                        let msg = cmd.error.map(|e| e.message).unwrap_or_default();
                        return Err(format!("{addr} refused CONNECT: {msg}"));
                    }
                    _ => {}
                }
            }
        };
        let (mut rd, mut wr, mut buf, repl_dedup_by_source_position) =
            tokio::time::timeout(timeout, handshake)
                .await
                .map_err(|_| format!("no CONNECTED from {addr} within {timeout:?}"))??;
        let (out, mut frames) = mpsc::unbounded_channel::<Bytes>();
        let conn = Arc::new(PeerConnection {
            out: out.clone(),
            pending: Arc::default(),
            next_request: AtomicU64::new(1),
            closed: Arc::default(),
            closing: Arc::default(),
            repl_dedup_by_source_position,
        });
        tokio::spawn(async move {
            while let Some(f) = frames.recv().await {
                if wr.write_all(&f).await.is_err() {
                    break;
                }
            }
        });
        let (pending, closed) = (Arc::clone(&conn.pending), Arc::clone(&conn.closed));
        let closing = Arc::clone(&conn.closing);
        tokio::spawn(async move {
            let why = loop {
                let next = tokio::select! {
                    next = next_command(&mut rd, &mut buf) => next,
                    () = closing.notified() => break "closed by this broker".to_owned(),
                };
                let cmd = match next {
                    Ok(c) => c,
                    Err(why) => break why,
                };
                if cmd.r#type == Type::Ping as i32 {
                    let _ = out.send(encode(&commands::pong()));
                    continue;
                }
                if cmd.r#type == Type::AuthChallenge as i32 {
                    // Our credentials expired there: fresh ones, or the peer closes this.
                    if let Some(c) = &credentials {
                        match c.current().await {
                            Ok((method, data)) => {
                                let _ = out.send(encode(&commands::auth_response(
                                    CLIENT_VERSION,
                                    PROTOCOL_VERSION,
                                    method,
                                    data,
                                )));
                            }
                            Err(e) => {
                                tracing::warn!(peer = %addr, error = %e, "answering an auth challenge")
                            }
                        }
                    }
                    continue;
                }
                if let Some(id) = answered_request(&cmd) {
                    // Short lock: one map operation.
                    let waiter = pending.lock().remove(&id);
                    if let Some(waiter) = waiter {
                        let _ = waiter.send(cmd);
                        continue;
                    }
                }
                if let Some(events) = &events {
                    let _ = events.send(cmd);
                }
            };
            tracing::debug!(peer = %addr, "peer connection closed: {why}");
            // Release: pairs with the Acquire in `is_closed`.
            closed.store(true, Ordering::Release);
            // Dropping the senders fails every waiting request.
            pending.lock().clear();
        });
        Ok(conn)
    }

    /// Whether the peer deduplicates a replicator's messages by source position (its CONNECTED
    /// advertised `supports_repl_dedup_by_lid_and_eid`): receipts then carry source positions.
    #[must_use]
    pub fn repl_dedup_by_source_position(&self) -> bool {
        self.repl_dedup_by_source_position
    }

    /// Whether the socket closed (a new connection is needed).
    #[must_use]
    pub fn is_closed(&self) -> bool {
        // Acquire: pairs with the reader task's Release.
        self.closed.load(Ordering::Acquire)
    }

    /// Closes the connection: the reader task stops (failing whatever waits), and the socket
    /// closes once the frames already queued are written and the last handle is dropped.
    pub fn close(&self) {
        // A stored permit: the reader sees it even when it is not waiting right now.
        self.closing.notify_one();
    }

    /// Queues an encoded frame (a SEND with its payload) for the writer task.
    ///
    /// # Errors
    /// The connection is closed.
    pub fn send_frame(&self, frame: Bytes) -> Result<(), String> {
        if self.is_closed() || self.out.send(frame).is_err() {
            return Err("the peer connection is closed".into());
        }
        Ok(())
    }

    /// Sends the command `build` makes with a fresh request id and waits for its response.
    ///
    /// # Errors
    /// The connection closed, or no response came within `timeout`, as text.
    pub async fn request(
        &self,
        build: impl FnOnce(u64) -> BaseCommand,
        timeout: Duration,
    ) -> Result<BaseCommand, String> {
        // Relaxed: a unique id is all that is needed.
        let id = self.next_request.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending.lock().insert(id, tx);
        if self.is_closed() || self.out.send(encode(&build(id))).is_err() {
            self.pending.lock().remove(&id);
            return Err("the peer connection is closed".into());
        }
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(reply)) => Ok(reply),
            Ok(Err(_)) => Err("the peer connection closed before it answered".into()),
            Err(_) => {
                self.pending.lock().remove(&id);
                Err(format!("no answer from the peer within {timeout:?}"))
            }
        }
    }
}
