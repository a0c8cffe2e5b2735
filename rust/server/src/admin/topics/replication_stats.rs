//! The `replication` section of a topic's stats (Pulsar's `ReplicatorStatsImpl` per remote
//! cluster): what this broker's replicator sends there (`msgRateOut`, `replicationBacklog`,
//! `connected`, `outboundConnection`), and what the remote cluster's replicator producer
//! publishes here (`msgRateIn`, `inboundConnection`). Pulsar lists those producers here, not
//! under `publishers`.

use serde_json::{json, Map, Value};

use pulsar_rs_broker::topic::Topic;
use pulsar_rs_broker::ProducerInfo;

use crate::context::ServerContext;
use crate::replication::source_cluster;

/// The `replication` map of `topic`'s stats.
pub(in crate::admin) fn replication_json(ctx: &ServerContext, topic: &Topic) -> Value {
    let prefix = &ctx.service.config.replicator_prefix;
    let inbound: Vec<(String, ProducerInfo)> = topic
        .producers()
        .into_iter()
        .filter_map(|p| {
            let from = source_cluster(prefix, &p.name)?.to_owned();
            Some((from, p))
        })
        .collect();
    let cursors = topic.replication_cursors();
    let running = ctx.replicators.of_topic(&topic.name.to_string());
    let mut out = Map::new();
    for (remote, cursor) in &cursors {
        let status = running.iter().find(|(r, _)| r == remote).map(|(_, s)| s);
        let (rate_out, tput_out) = status.map_or((0.0, 0.0), |s| s.msg_out.rates());
        let (count_out, bytes_out) =
            status.map_or((0, 0), |s| (s.msg_out.total(), s.msg_out.total_bytes()));
        let connected = status.is_some_and(|s| s.is_connected());
        let (address, _) = status.map(|s| s.detail()).unwrap_or_default();
        let since = status
            .and_then(|s| s.connected_since_ms())
            .map(|ms| super::instant::instant_string(pulsar_rs_clock::system_time_of_ms(ms)));
        let from_remote = inbound.iter().find(|(c, _)| c == remote).map(|(_, p)| p);
        let (rate_in, tput_in) = from_remote.map_or((0.0, 0.0), |p| p.meters.msg_in.rates());
        let (count_in, bytes_in) = from_remote.map_or((0, 0), |p| {
            (p.meters.msg_in.total(), p.meters.msg_in.total_bytes())
        });
        let mut doc = json!({
            "msgRateIn": rate_in,
            "msgInCount": count_in,
            "msgThroughputIn": tput_in,
            "bytesInCount": bytes_in,
            "msgRateOut": rate_out,
            "msgOutCount": count_out,
            "msgThroughputOut": tput_out,
            "bytesOutCount": bytes_out,
            "msgRateExpired": 0.0,
            "msgExpiredCount": 0,
            "replicationBacklog": cursor.backlog(),
            "connected": connected,
            "replicationDelayInSeconds": 0,
        });
        // Pulsar leaves the connection fields out while there is no connection.
        let optional = [
            ("inboundConnection", from_remote.map(|p| p.address.clone())),
            (
                "inboundConnectedSince",
                from_remote.map(|p| super::instant::instant_string(p.connected_since)),
            ),
            ("outboundConnection", if connected { address } else { None }),
            ("outboundConnectedSince", since),
        ];
        if let Value::Object(m) = &mut doc {
            for (k, v) in optional {
                if let Some(v) = v {
                    m.insert(k.to_owned(), Value::String(v));
                }
            }
        }
        out.insert(remote.clone(), doc);
    }
    Value::Object(out)
}
