//! A replicator's producer on a remote cluster, as Pulsar's replicator opens it: the topic
//! looked up on the remote cluster's `brokerServiceUrl` (or `brokerServiceUrlTls` with
//! `brokerClientTlsEnabled`) following its redirects, then PRODUCER on the owner under the
//! replicator's name (`<prefix>.<local>--><remote>`), with this broker's client credentials.
//! Each SEND carries an entry's stored metadata and payload; receipts and errors come back
//! on the connection's event channel.

use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use pulsar_rs_proto::pb::base_command::Type;
use pulsar_rs_proto::pb::command_lookup_topic_response::LookupType;
use pulsar_rs_proto::pb::{self, BaseCommand, MessageMetadata};
use pulsar_rs_proto::{commands, encode_payload_command, encode_simple};
use tokio::sync::mpsc;

use crate::cluster::peers::client::BrokerClient;
use crate::cluster::peers::connection::PeerConnection;

/// The only producer id on a replicator's connection.
const PRODUCER_ID: u64 = 1;
/// Redirects followed before a lookup gives up.
const MAX_REDIRECTS: usize = 8;

/// An open producer on the remote cluster.
pub struct RemoteProducer {
    /// The owner's connection (its own, not shared with other replicators).
    conn: Arc<PeerConnection>,
    /// Receipts, send errors and the broker's CLOSE_PRODUCER; ends when the socket closes.
    events: mpsc::UnboundedReceiver<BaseCommand>,
    /// The URL of the broker the producer is on (stats' `outboundConnection`).
    pub address: String,
}

/// The error text of a failed lookup or PRODUCER.
fn refused(what: &str, error: Option<i32>, message: Option<String>) -> String {
    let kind = error
        .and_then(|e| pb::ServerError::try_from(e).ok())
        .map_or_else(|| "error".to_owned(), |e| format!("{e:?}"));
    format!("{what}: {kind}: {}", message.unwrap_or_default())
}

/// The owner of `topic` on the cluster whose binary-protocol URL is `cluster_url`.
async fn lookup(
    client: &BrokerClient,
    cluster_url: &str,
    topic: &str,
    timeout: Duration,
) -> Result<String, String> {
    let (mut at, mut authoritative) = (cluster_url.to_owned(), false);
    for _ in 0..MAX_REDIRECTS {
        let conn = PeerConnection::open(&at, timeout, client).await?;
        let reply = conn
            .request(
                |request_id| commands::lookup_with(topic, request_id, authoritative),
                timeout,
            )
            .await;
        conn.close();
        let reply = reply?;
        let Some(r) = reply.lookup_topic_response else {
            let e = reply.error.unwrap_or_default();
            return Err(refused(
                &format!("looking up {topic} at {at}"),
                Some(e.error),
                Some(e.message),
            ));
        };
        let url = client.lookup_url(&r)?;
        match r.response.and_then(|v| LookupType::try_from(v).ok()) {
            // Through a proxy the connection stays on the URL looked up.
            Some(LookupType::Connect) if r.proxy_through_service_url == Some(true) => {
                return Ok(at)
            }
            Some(LookupType::Connect) => return Ok(url),
            Some(LookupType::Redirect) => {
                at = url;
                authoritative = r.authoritative.unwrap_or(false);
            }
            _ => {
                return Err(refused(
                    &format!("looking up {topic} at {at}"),
                    r.error,
                    r.message,
                ))
            }
        }
    }
    Err(format!(
        "looking up {topic}: more than {MAX_REDIRECTS} redirects"
    ))
}

impl RemoteProducer {
    /// Looks `topic` up on the remote cluster at `cluster_url` and opens the producer `name`
    /// on its owner.
    ///
    /// # Errors
    /// The lookup, the connection or the remote broker's refusal, as text.
    pub async fn open(
        client: &BrokerClient,
        cluster_url: &str,
        topic: &str,
        name: &str,
        timeout: Duration,
    ) -> Result<Self, String> {
        let owner = lookup(client, cluster_url, topic, timeout).await?;
        let (conn, events) = PeerConnection::open_with_events(&owner, timeout, client).await?;
        let reply = conn
            .request(
                |request_id| commands::producer(topic, PRODUCER_ID, request_id, Some(name)),
                timeout,
            )
            .await
            .inspect_err(|_| conn.close())?;
        if reply.r#type != Type::ProducerSuccess as i32 {
            conn.close();
            let e = reply.error.unwrap_or_default();
            return Err(refused(
                &format!("creating producer {name} on {topic} at {owner}"),
                Some(e.error),
                Some(e.message),
            ));
        }
        Ok(RemoteProducer {
            conn,
            events,
            address: owner,
        })
    }

    /// Whether the remote deduplicates this producer's messages by source position (V2): its
    /// receipts then name source positions ([`super::in_flight`]).
    #[must_use]
    pub fn by_source_position(&self) -> bool {
        self.conn.repl_dedup_by_source_position()
    }

    /// Sends one entry as SEND `sequence_id`.
    ///
    /// # Errors
    /// The connection is closed.
    pub fn send(
        &self,
        sequence_id: u64,
        metadata: &MessageMetadata,
        payload: &[u8],
        num_messages: i32,
    ) -> Result<(), String> {
        let mut cmd = commands::send(PRODUCER_ID, sequence_id, num_messages);
        if metadata.marker_type.is_some() {
            // A server marker (Pulsar's client sets `marker` for one): the remote does not
            // deduplicate it.
            if let Some(send) = cmd.send.as_mut() {
                send.marker = Some(true);
            }
        }
        let mut buf = BytesMut::with_capacity(payload.len() + 256);
        encode_payload_command(&cmd, metadata, payload, &mut buf);
        self.conn.send_frame(buf.freeze())
    }

    /// The next receipt, send error or close from the remote broker; `None` once the
    /// connection closed.
    pub async fn next_event(&mut self) -> Option<BaseCommand> {
        self.events.recv().await
    }
}

impl Drop for RemoteProducer {
    /// Closes the producer on the remote broker (best effort), then the connection: a new
    /// producer of the same name can open at once.
    fn drop(&mut self) {
        let mut buf = BytesMut::new();
        encode_simple(&commands::close_producer_request(PRODUCER_ID, 0), &mut buf);
        let _ = self.conn.send_frame(buf.freeze());
        self.conn.close();
    }
}
