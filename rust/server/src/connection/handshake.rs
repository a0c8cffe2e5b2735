//! CONNECT: protocol version negotiation and authentication of the connection's role; the
//! periodic credential check and AUTH_RESPONSE (see [`super::refresh`]).
//!
//! **Failed authentication on the binary protocol.** Java's broker answers a bad CONNECT with
//! ERROR(AuthenticationError) and closes the socket. The C++ client (and so Python) treats
//! anything but CONNECTED as the first reply as a *retryable* disconnection
//! (`ClientConnection::handleIncomingCommand`, state `TcpConnected` → `ResultDisconnected`),
//! so `create_producer` would retry until its operation timeout and raise `Timeout`. We
//! therefore answer CONNECTED, refuse the connection's first request with AuthenticationError
//! in the reply type that request expects ([`refusal`]: LOOKUP_RESPONSE /
//! PARTITIONED_METADATA_RESPONSE `Failed`, otherwise ERROR) and then close the connection: the
//! client raises `pulsar.AuthenticationError` at once, and the unauthenticated connection
//! serves nothing.

use pulsar_rs_proto::pb::{self, base_command::Type};
use pulsar_rs_proto::{commands, BaseCommand, ServerError as Wire};

use super::refresh::RefreshAction;
use super::Connection;
use crate::error::ServerError;

impl Connection {
    pub(super) fn connect(&mut self, c: &pb::CommandConnect) -> Result<(), ServerError> {
        if self.connected {
            return Err(ServerError::BadRequest("second CONNECT".into()));
        }
        let version = c
            .protocol_version()
            .min(pulsar_rs_proto::MAX_PROTOCOL_VERSION);
        self.connected = true;
        self.protocol_version = version;
        let method = c.auth_method_name.as_deref().unwrap_or("");
        let data = c.auth_data.as_deref().unwrap_or_default();
        let identity = self
            .ctx
            .auth
            .authenticate(method, data, self.auth.peer_cn.as_deref())
            .map_err(|e| {
                tracing::info!(peer = %self.peer, error = %e, "authentication failed");
                e.to_string()
            });
        self.role = identity
            .as_ref()
            .map(|i| i.as_ref().map(|i| i.role.clone()))
            .map_err(Clone::clone);
        self.auth.method = c.auth_method_name.clone().unwrap_or_default();
        self.auth.identity = identity.ok().flatten();
        tracing::debug!(peer = %self.peer, client = %c.client_version, version, "connected");
        self.client_version.clone_from(&c.client_version);
        self.repl_dedup_by_source_position = c
            .feature_flags
            .as_ref()
            .and_then(|f| f.supports_repl_dedup_by_lid_and_eid)
            .unwrap_or(false);
        let max = i32::try_from(self.service.config.max_message_size).unwrap_or(i32::MAX);
        // Topic-list watchers are offered as Pulsar offers them: with broker-side pattern
        // evaluation and `enableBrokerTopicListWatcher` (PIP-452) on (their defaults), whatever
        // the protocol version.
        let config = &self.service.config;
        let watchers = config.enable_broker_side_subscription_pattern_evaluation
            && config.enable_broker_topic_list_watcher;
        // Replicators that negotiate it are deduplicated by source position (Pulsar 4.0.4+'s
        // `Commands.newConnected` always offers it).
        let flags = pb::FeatureFlags {
            supports_topic_watchers: Some(watchers),
            supports_repl_dedup_by_lid_and_eid: Some(true),
            ..pb::FeatureFlags::default()
        };
        self.send(&commands::connected_with_flags(
            &format!("pulsar-rs-{}", env!("CARGO_PKG_VERSION")),
            version,
            max,
            Some(flags),
        ));
        Ok(())
    }

    /// The periodic credential check (`authenticationRefreshCheckSeconds`).
    pub(super) fn refresh_check(&mut self) -> Result<(), String> {
        let now = self.ctx.auth.now_secs();
        match self.auth.check(now, self.protocol_version) {
            RefreshAction::Nothing => Ok(()),
            RefreshAction::Challenge(cmd) => {
                self.send(&cmd);
                Ok(())
            }
            RefreshAction::Close(reason) => Err(reason),
        }
    }
}

/// The reply refusing `cmd` on a connection whose CONNECT failed authentication, in the
/// frame type the client waits on for that request; `None` for commands without a request id.
#[must_use]
pub fn refusal(ty: Type, cmd: &BaseCommand, reason: &str) -> Option<BaseCommand> {
    let code = Wire::AuthenticationError;
    let msg = format!("Failed to authenticate: {reason}");
    let rid = |id: Option<u64>| id.map(|r| commands::error(r, code, msg.clone()));
    match ty {
        Type::PartitionedMetadata => cmd
            .partition_metadata
            .as_ref()
            .map(|c| commands::partitioned_metadata_failed(c.request_id, code, msg.clone())),
        Type::Lookup => cmd
            .lookup_topic
            .as_ref()
            .map(|c| commands::lookup_failed(c.request_id, code, msg.clone())),
        Type::GetSchema => cmd
            .get_schema
            .as_ref()
            .map(|c| commands::get_schema_response_error(c.request_id, code, msg.clone())),
        Type::ConsumerStats => cmd
            .consumer_stats
            .as_ref()
            .map(|c| commands::consumer_stats_response_error(c.request_id, code, msg.clone())),
        Type::Producer => rid(cmd.producer.as_ref().map(|c| c.request_id)),
        Type::Subscribe => rid(cmd.subscribe.as_ref().map(|c| c.request_id)),
        Type::CloseProducer => rid(cmd.close_producer.as_ref().map(|c| c.request_id)),
        Type::CloseConsumer => rid(cmd.close_consumer.as_ref().map(|c| c.request_id)),
        Type::Unsubscribe => rid(cmd.unsubscribe.as_ref().map(|c| c.request_id)),
        Type::Seek => rid(cmd.seek.as_ref().map(|c| c.request_id)),
        Type::GetLastMessageId => rid(cmd.get_last_message_id.as_ref().map(|c| c.request_id)),
        Type::GetTopicsOfNamespace => {
            rid(cmd.get_topics_of_namespace.as_ref().map(|c| c.request_id))
        }
        Type::GetOrCreateSchema => rid(cmd.get_or_create_schema.as_ref().map(|c| c.request_id)),
        Type::WatchTopicList => rid(cmd.watch_topic_list.as_ref().map(|c| c.request_id)),
        Type::WatchTopicListClose => rid(cmd.watch_topic_list_close.as_ref().map(|c| c.request_id)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_use_the_expected_reply_types() {
        let lookup = commands::lookup("persistent://a/b/c", 7);
        let r = refusal(Type::Lookup, &lookup, "x").unwrap();
        let l = r.lookup_topic_response.unwrap();
        assert_eq!(l.request_id, 7);
        assert_eq!(l.error, Some(Wire::AuthenticationError as i32));
        let pm = commands::partitioned_metadata_request("persistent://a/b/c", 8);
        let r = refusal(Type::PartitionedMetadata, &pm, "x").unwrap();
        assert_eq!(r.partition_metadata_response.unwrap().request_id, 8);
        let flow = commands::flow(1, 10);
        assert!(refusal(Type::Flow, &flow, "x").is_none());
    }
}
