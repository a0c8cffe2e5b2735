//! The `replication` section of a topic's stats (Pulsar's `ReplicatorStatsImpl` per remote
//! cluster): what this broker's replicator sends there (`msgRateOut`, `replicationBacklog`,
//! `connected`, `outboundConnection`), and what the remote cluster's replicator producer
//! publishes here (`msgRateIn`, `inboundConnection`). Pulsar lists those producers here, not
//! under `publishers`.

use serde_json::{json, Map, Value};

use pulsar_rs_broker::nonpersistent::NonPersistentTopic;
use pulsar_rs_broker::topic::Topic;

use super::instant::instant_string;
use crate::context::ServerContext;
use crate::replication::view::peers;

/// The `replication` map of `topic`'s stats.
pub(in crate::admin) fn replication_json(ctx: &ServerContext, topic: &Topic) -> Value {
    let mut out = Map::new();
    for peer in peers(ctx, topic) {
        let status = peer.outbound.as_deref();
        let (rate_out, tput_out) = status.map_or((0.0, 0.0), |s| s.msg_out.rates());
        let (count_out, bytes_out) =
            status.map_or((0, 0), |s| (s.msg_out.total(), s.msg_out.total_bytes()));
        let since = status.and_then(|s| s.connected_since_ms());
        let from_remote = peer.inbound.as_ref();
        let (rate_in, tput_in) = from_remote.map_or((0.0, 0.0), |p| p.meters.msg_in.rates());
        let (count_in, bytes_in) = from_remote.map_or((0, 0), |p| {
            (p.meters.msg_in.total(), p.meters.msg_in.total_bytes())
        });
        let expiry = topic.replication_expiry(&peer.remote);
        let mut doc = json!({
            "msgRateIn": rate_in,
            "msgInCount": count_in,
            "msgThroughputIn": tput_in,
            "bytesInCount": bytes_in,
            "msgRateOut": rate_out,
            "msgOutCount": count_out,
            "msgThroughputOut": tput_out,
            "bytesOutCount": bytes_out,
            "msgRateExpired": expiry.rate(),
            "msgExpiredCount": expiry.total(),
            "replicationBacklog": peer.cursor.backlog(),
            "connected": since.is_some(),
            "replicationDelayInSeconds": 0,
        });
        // Pulsar leaves the connection fields out while there is no connection.
        let optional = [
            ("inboundConnection", from_remote.map(|p| p.address.clone())),
            (
                "inboundConnectedSince",
                from_remote.map(|p| instant_string(p.connected_since)),
            ),
            (
                "outboundConnection",
                since.and_then(|_| status.and_then(|s| s.address())),
            ),
            (
                "outboundConnectedSince",
                since.map(|ms| instant_string(pulsar_rs_clock::system_time_of_ms(ms))),
            ),
        ];
        if let Value::Object(m) = &mut doc {
            for (k, v) in optional {
                if let Some(v) = v {
                    m.insert(k.to_owned(), Value::String(v));
                }
            }
        }
        out.insert(peer.remote, doc);
    }
    Value::Object(out)
}

/// The `replication` map of a non-persistent topic's stats (Pulsar's
/// `NonPersistentReplicatorStatsImpl`): per remote cluster, what this broker's replicator sent
/// (`msgRateOut`...) and dropped (`msgDropRate`), and whether it is connected; no backlog.
pub(in crate::admin) fn non_persistent_replication_json(
    ctx: &ServerContext,
    topic: &NonPersistentTopic,
) -> Value {
    let mut out = Map::new();
    for (remote, status) in ctx.replicators.of_topic(&topic.name.to_string()) {
        let (rate_out, tput_out) = status.msg_out.rates();
        let since = status.connected_since_ms();
        let mut doc = json!({
            "msgRateOut": rate_out,
            "msgOutCount": status.msg_out.total(),
            "msgThroughputOut": tput_out,
            "bytesOutCount": status.msg_out.total_bytes(),
            "msgDropRate": status.msg_drop.rates().0,
            "replicationBacklog": 0,
            "connected": since.is_some(),
        });
        if let (Value::Object(m), Some(ms)) = (&mut doc, since) {
            if let Some(address) = status.address() {
                m.insert("outboundConnection".to_owned(), Value::String(address));
            }
            m.insert(
                "outboundConnectedSince".to_owned(),
                Value::String(instant_string(pulsar_rs_clock::system_time_of_ms(ms))),
            );
        }
        out.insert(remote, doc);
    }
    Value::Object(out)
}
