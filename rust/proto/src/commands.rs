//! Builders for [`pb::BaseCommand`]s.
//!
//! Every `pb::CommandXxx` converts into a `BaseCommand` with the matching
//! `type` via `From` (`pb::CommandPing {}.into()`). On top of that, this
//! module has one small function per command the broker sends, plus the
//! client-side commands our tests and load generator need. Each builder fills
//! every `required` field (the C++ client closes the connection on a missing
//! one) and every optional field whose absence the clients misread (e.g.
//! lookup `response`).

use bytes::Bytes;

use crate::pb::{
    self, base_command::Type, command_ack::AckType,
    command_lookup_topic_response::LookupType as LookupResponseType,
    command_partitioned_topic_metadata_response::LookupType as MetadataResponseType,
    command_subscribe::SubType, BaseCommand, MessageIdData, ServerError,
};

/// The `request_id` of broker-initiated CLOSE_PRODUCER / CLOSE_CONSUMER
/// (the protocol's "−1" on a `uint64`).
pub const BROKER_REQUEST_ID: u64 = u64::MAX;

macro_rules! command_fields {
    ($($ty:ident => $field:ident : $msg:ident,)*) => {
        $(
            impl From<pb::$msg> for BaseCommand {
                fn from(command: pb::$msg) -> Self {
                    BaseCommand {
                        r#type: Type::$ty as i32,
                        $field: Some(command.into()),
                        ..Default::default()
                    }
                }
            }
        )*

        /// Whether `cmd` carries the command field that `ty` selects.
        pub(crate) fn has_command_field(cmd: &BaseCommand, ty: Type) -> bool {
            match ty {
                $(Type::$ty => cmd.$field.is_some(),)*
            }
        }
    };
}

command_fields! {
    Connect => connect: CommandConnect,
    Connected => connected: CommandConnected,
    Subscribe => subscribe: CommandSubscribe,
    Producer => producer: CommandProducer,
    Send => send: CommandSend,
    SendReceipt => send_receipt: CommandSendReceipt,
    SendError => send_error: CommandSendError,
    Message => message: CommandMessage,
    Ack => ack: CommandAck,
    Flow => flow: CommandFlow,
    Unsubscribe => unsubscribe: CommandUnsubscribe,
    Success => success: CommandSuccess,
    Error => error: CommandError,
    CloseProducer => close_producer: CommandCloseProducer,
    CloseConsumer => close_consumer: CommandCloseConsumer,
    ProducerSuccess => producer_success: CommandProducerSuccess,
    Ping => ping: CommandPing,
    Pong => pong: CommandPong,
    RedeliverUnacknowledgedMessages => redeliver_unacknowledged_messages: CommandRedeliverUnacknowledgedMessages,
    PartitionedMetadata => partition_metadata: CommandPartitionedTopicMetadata,
    PartitionedMetadataResponse => partition_metadata_response: CommandPartitionedTopicMetadataResponse,
    Lookup => lookup_topic: CommandLookupTopic,
    LookupResponse => lookup_topic_response: CommandLookupTopicResponse,
    ConsumerStats => consumer_stats: CommandConsumerStats,
    ConsumerStatsResponse => consumer_stats_response: CommandConsumerStatsResponse,
    ReachedEndOfTopic => reached_end_of_topic: CommandReachedEndOfTopic,
    Seek => seek: CommandSeek,
    GetLastMessageId => get_last_message_id: CommandGetLastMessageId,
    GetLastMessageIdResponse => get_last_message_id_response: CommandGetLastMessageIdResponse,
    ActiveConsumerChange => active_consumer_change: CommandActiveConsumerChange,
    GetTopicsOfNamespace => get_topics_of_namespace: CommandGetTopicsOfNamespace,
    GetTopicsOfNamespaceResponse => get_topics_of_namespace_response: CommandGetTopicsOfNamespaceResponse,
    GetSchema => get_schema: CommandGetSchema,
    GetSchemaResponse => get_schema_response: CommandGetSchemaResponse,
    AuthChallenge => auth_challenge: CommandAuthChallenge,
    AuthResponse => auth_response: CommandAuthResponse,
    AckResponse => ack_response: CommandAckResponse,
    GetOrCreateSchema => get_or_create_schema: CommandGetOrCreateSchema,
    GetOrCreateSchemaResponse => get_or_create_schema_response: CommandGetOrCreateSchemaResponse,
    NewTxn => new_txn: CommandNewTxn,
    NewTxnResponse => new_txn_response: CommandNewTxnResponse,
    AddPartitionToTxn => add_partition_to_txn: CommandAddPartitionToTxn,
    AddPartitionToTxnResponse => add_partition_to_txn_response: CommandAddPartitionToTxnResponse,
    AddSubscriptionToTxn => add_subscription_to_txn: CommandAddSubscriptionToTxn,
    AddSubscriptionToTxnResponse => add_subscription_to_txn_response: CommandAddSubscriptionToTxnResponse,
    EndTxn => end_txn: CommandEndTxn,
    EndTxnResponse => end_txn_response: CommandEndTxnResponse,
    EndTxnOnPartition => end_txn_on_partition: CommandEndTxnOnPartition,
    EndTxnOnPartitionResponse => end_txn_on_partition_response: CommandEndTxnOnPartitionResponse,
    EndTxnOnSubscription => end_txn_on_subscription: CommandEndTxnOnSubscription,
    EndTxnOnSubscriptionResponse => end_txn_on_subscription_response: CommandEndTxnOnSubscriptionResponse,
    TcClientConnectRequest => tc_client_connect_request: CommandTcClientConnectRequest,
    TcClientConnectResponse => tc_client_connect_response: CommandTcClientConnectResponse,
    WatchTopicList => watch_topic_list: CommandWatchTopicList,
    WatchTopicListSuccess => watch_topic_list_success: CommandWatchTopicListSuccess,
    WatchTopicUpdate => watch_topic_update: CommandWatchTopicUpdate,
    WatchTopicListClose => watch_topic_list_close: CommandWatchTopicListClose,
}

/// A message id with only ledger and entry set (partition/batch index −1).
pub fn message_id(ledger_id: u64, entry_id: u64) -> MessageIdData {
    MessageIdData {
        ledger_id,
        entry_id,
        ..Default::default()
    }
}

// ---------------------------------------------------------------------------
// Broker → client
// ---------------------------------------------------------------------------

/// CONNECTED. `protocol_version` should be `min(client's, MAX_PROTOCOL_VERSION)`.
pub fn connected(
    server_version: &str,
    protocol_version: i32,
    max_message_size: i32,
) -> BaseCommand {
    connected_with_flags(server_version, protocol_version, max_message_size, None)
}

/// CONNECTED with the broker's feature flags (`supports_topic_watchers`, ...).
pub fn connected_with_flags(
    server_version: &str,
    protocol_version: i32,
    max_message_size: i32,
    feature_flags: Option<pb::FeatureFlags>,
) -> BaseCommand {
    pb::CommandConnected {
        server_version: server_version.to_owned(),
        protocol_version: Some(protocol_version),
        max_message_size: Some(max_message_size),
        feature_flags,
    }
    .into()
}

/// PING.
pub fn ping() -> BaseCommand {
    pb::CommandPing {}.into()
}

/// PONG.
pub fn pong() -> BaseCommand {
    pb::CommandPong {}.into()
}

/// SUCCESS.
pub fn success(request_id: u64) -> BaseCommand {
    pb::CommandSuccess {
        request_id,
        schema: None,
    }
    .into()
}

/// ERROR.
pub fn error(request_id: u64, error: ServerError, message: impl Into<String>) -> BaseCommand {
    pb::CommandError {
        request_id,
        error: error as i32,
        message: message.into(),
    }
    .into()
}

/// PRODUCER_SUCCESS with `producer_ready = true`.
pub fn producer_success(
    request_id: u64,
    producer_name: impl Into<String>,
    last_sequence_id: i64,
    schema_version: Option<Bytes>,
) -> BaseCommand {
    pb::CommandProducerSuccess {
        request_id,
        producer_name: producer_name.into(),
        // Always set, empty without a schema, as Pulsar's `newProducerSuccessCommand`: the Java
        // client reads it unconditionally.
        last_sequence_id: Some(last_sequence_id),
        schema_version: Some(schema_version.unwrap_or_default()),
        topic_epoch: None,
        producer_ready: Some(true),
    }
    .into()
}

/// PRODUCER_SUCCESS with the topic epoch and Pulsar's `producer_ready` flag: `false` tells a
/// WaitForExclusive producer it is queued (a second answer with `true` follows on the same
/// request id once it holds the topic).
pub fn producer_success_epoch(
    request_id: u64,
    producer_name: impl Into<String>,
    last_sequence_id: i64,
    schema_version: Option<Bytes>,
    topic_epoch: Option<u64>,
    producer_ready: bool,
) -> BaseCommand {
    pb::CommandProducerSuccess {
        request_id,
        producer_name: producer_name.into(),
        // Always set, empty without a schema, as Pulsar's `newProducerSuccessCommand`: the Java
        // client reads it unconditionally.
        last_sequence_id: Some(last_sequence_id),
        schema_version: Some(schema_version.unwrap_or_default()),
        topic_epoch,
        producer_ready: Some(producer_ready),
    }
    .into()
}

/// SEND_RECEIPT for the entry at (`ledger_id`, `entry_id`).
pub fn send_receipt(
    producer_id: u64,
    sequence_id: u64,
    highest_sequence_id: Option<u64>,
    ledger_id: u64,
    entry_id: u64,
) -> BaseCommand {
    pb::CommandSendReceipt {
        producer_id,
        sequence_id,
        message_id: Some(message_id(ledger_id, entry_id)),
        highest_sequence_id,
    }
    .into()
}

/// SEND_ERROR. Any error but `ChecksumError` makes the C++ client reconnect.
pub fn send_error(
    producer_id: u64,
    sequence_id: u64,
    error: ServerError,
    message: impl Into<String>,
) -> BaseCommand {
    pb::CommandSendError {
        producer_id,
        sequence_id,
        error: error as i32,
        message: message.into(),
    }
    .into()
}

/// LOOKUP_RESPONSE{Connect}: the topic is served by the broker at `url`.
pub fn lookup_connect(
    request_id: u64,
    broker_service_url: &str,
    broker_service_url_tls: Option<&str>,
) -> BaseCommand {
    pb::CommandLookupTopicResponse {
        broker_service_url: Some(broker_service_url.to_owned()),
        broker_service_url_tls: broker_service_url_tls.map(str::to_owned),
        response: Some(LookupResponseType::Connect as i32),
        request_id,
        authoritative: Some(true),
        proxy_through_service_url: Some(false),
        ..Default::default()
    }
    .into()
}

/// LOOKUP_RESPONSE{Redirect}: ask the broker at these URLs again; with `authoritative` that
/// broker takes the topic's bundle without asking further.
pub fn lookup_redirect(
    request_id: u64,
    broker_service_url: &str,
    broker_service_url_tls: Option<&str>,
    authoritative: bool,
) -> BaseCommand {
    pb::CommandLookupTopicResponse {
        broker_service_url: Some(broker_service_url.to_owned()),
        broker_service_url_tls: broker_service_url_tls.map(str::to_owned),
        response: Some(LookupResponseType::Redirect as i32),
        request_id,
        authoritative: Some(authoritative),
        proxy_through_service_url: Some(false),
        ..Default::default()
    }
    .into()
}

/// LOOKUP_RESPONSE{Failed} (lookups ignore ERROR frames).
pub fn lookup_failed(
    request_id: u64,
    error: ServerError,
    message: impl Into<String>,
) -> BaseCommand {
    pb::CommandLookupTopicResponse {
        response: Some(LookupResponseType::Failed as i32),
        request_id,
        error: Some(error as i32),
        message: Some(message.into()),
        ..Default::default()
    }
    .into()
}

/// PARTITIONED_METADATA_RESPONSE{Success}; 0 partitions = non-partitioned.
pub fn partitioned_metadata(request_id: u64, partitions: u32) -> BaseCommand {
    pb::CommandPartitionedTopicMetadataResponse {
        partitions: Some(partitions),
        request_id,
        response: Some(MetadataResponseType::Success as i32),
        error: None,
        message: None,
    }
    .into()
}

/// PARTITIONED_METADATA_RESPONSE{Failed}.
pub fn partitioned_metadata_failed(
    request_id: u64,
    error: ServerError,
    message: impl Into<String>,
) -> BaseCommand {
    pb::CommandPartitionedTopicMetadataResponse {
        partitions: None,
        request_id,
        response: Some(MetadataResponseType::Failed as i32),
        error: Some(error as i32),
        message: Some(message.into()),
    }
    .into()
}

/// MESSAGE header command. `partition` is −1 for non-partitioned topics;
/// `redelivery_count` is only sent when > 0 and `ack_set` only when given.
pub fn message(
    consumer_id: u64,
    ledger_id: u64,
    entry_id: u64,
    partition: i32,
    redelivery_count: u32,
    ack_set: Option<Vec<i64>>,
) -> BaseCommand {
    pb::CommandMessage {
        consumer_id,
        message_id: MessageIdData {
            partition: Some(partition),
            ..message_id(ledger_id, entry_id)
        },
        redelivery_count: (redelivery_count > 0).then_some(redelivery_count),
        ack_set: ack_set.unwrap_or_default(),
        consumer_epoch: None,
    }
    .into()
}

/// Broker-initiated CLOSE_PRODUCER (request_id −1): the client reconnects.
pub fn close_producer(producer_id: u64) -> BaseCommand {
    pb::CommandCloseProducer {
        producer_id,
        request_id: BROKER_REQUEST_ID,
        ..Default::default()
    }
    .into()
}

/// Broker-initiated CLOSE_CONSUMER (request_id −1): the client reconnects.
pub fn close_consumer(consumer_id: u64) -> BaseCommand {
    pb::CommandCloseConsumer {
        consumer_id,
        request_id: BROKER_REQUEST_ID,
        ..Default::default()
    }
    .into()
}

/// ACTIVE_CONSUMER_CHANGE (is_active always set).
pub fn active_consumer_change(consumer_id: u64, is_active: bool) -> BaseCommand {
    pb::CommandActiveConsumerChange {
        consumer_id,
        is_active: Some(is_active),
    }
    .into()
}

/// GET_LAST_MESSAGE_ID_RESPONSE.
pub fn get_last_message_id_response(
    request_id: u64,
    last_message_id: MessageIdData,
    consumer_mark_delete_position: Option<MessageIdData>,
) -> BaseCommand {
    pb::CommandGetLastMessageIdResponse {
        last_message_id,
        request_id,
        consumer_mark_delete_position,
    }
    .into()
}

/// GET_TOPICS_OF_NAMESPACE_RESPONSE (unfiltered, changed).
pub fn get_topics_of_namespace_response(request_id: u64, topics: Vec<String>) -> BaseCommand {
    pb::CommandGetTopicsOfNamespaceResponse {
        request_id,
        topics,
        filtered: Some(false),
        topics_hash: None,
        changed: Some(true),
    }
    .into()
}

/// GET_SCHEMA_RESPONSE carrying a schema.
pub fn get_schema_response(
    request_id: u64,
    schema: pb::Schema,
    schema_version: Bytes,
) -> BaseCommand {
    pb::CommandGetSchemaResponse {
        request_id,
        schema: Some(schema),
        schema_version: Some(schema_version),
        ..Default::default()
    }
    .into()
}

/// GET_SCHEMA_RESPONSE carrying an error (schema lookups ignore ERROR).
pub fn get_schema_response_error(
    request_id: u64,
    error: ServerError,
    message: impl Into<String>,
) -> BaseCommand {
    pb::CommandGetSchemaResponse {
        request_id,
        error_code: Some(error as i32),
        error_message: Some(message.into()),
        ..Default::default()
    }
    .into()
}

/// GET_OR_CREATE_SCHEMA_RESPONSE carrying the schema version.
pub fn get_or_create_schema_response(request_id: u64, schema_version: Bytes) -> BaseCommand {
    pb::CommandGetOrCreateSchemaResponse {
        request_id,
        schema_version: Some(schema_version),
        ..Default::default()
    }
    .into()
}

/// GET_OR_CREATE_SCHEMA_RESPONSE carrying an error.
pub fn get_or_create_schema_response_error(
    request_id: u64,
    error: ServerError,
    message: impl Into<String>,
) -> BaseCommand {
    pb::CommandGetOrCreateSchemaResponse {
        request_id,
        error_code: Some(error as i32),
        error_message: Some(message.into()),
        schema_version: None,
    }
    .into()
}

/// CONSUMER_STATS_RESPONSE: `stats` with its `request_id` overwritten.
pub fn consumer_stats_response(
    request_id: u64,
    stats: pb::CommandConsumerStatsResponse,
) -> BaseCommand {
    pb::CommandConsumerStatsResponse {
        request_id,
        ..stats
    }
    .into()
}

/// CONSUMER_STATS_RESPONSE carrying an error (stats requests ignore ERROR).
pub fn consumer_stats_response_error(
    request_id: u64,
    error: ServerError,
    message: impl Into<String>,
) -> BaseCommand {
    pb::CommandConsumerStatsResponse {
        request_id,
        error_code: Some(error as i32),
        error_message: Some(message.into()),
        ..Default::default()
    }
    .into()
}

/// ACK_RESPONSE (only for ACKs that carried a request_id).
pub fn ack_response(
    consumer_id: u64,
    request_id: u64,
    error: Option<(ServerError, String)>,
) -> BaseCommand {
    let (error, message) = error.map_or((None, None), |(e, m)| (Some(e as i32), Some(m)));
    pb::CommandAckResponse {
        consumer_id,
        error,
        message,
        request_id: Some(request_id),
        ..Default::default()
    }
    .into()
}

// ---------------------------------------------------------------------------
// Client → broker (tests, load generator)
// ---------------------------------------------------------------------------

/// CONNECT with auth method "none".
pub fn connect(client_version: &str, protocol_version: i32) -> BaseCommand {
    pb::CommandConnect {
        client_version: client_version.to_owned(),
        protocol_version: Some(protocol_version),
        auth_method_name: Some("none".to_owned()),
        ..Default::default()
    }
    .into()
}

/// CONNECT with credentials (`auth_method_name` `token`, `basic`, ...).
pub fn connect_with_auth(
    client_version: &str,
    protocol_version: i32,
    method: &str,
    data: Vec<u8>,
) -> BaseCommand {
    pb::CommandConnect {
        client_version: client_version.to_owned(),
        protocol_version: Some(protocol_version),
        auth_method_name: Some(method.to_owned()),
        auth_data: Some(data.into()),
        ..Default::default()
    }
    .into()
}

/// AUTH_RESPONSE: fresh credentials answering an AUTH_CHALLENGE.
pub fn auth_response(
    client_version: &str,
    protocol_version: i32,
    method: &str,
    data: Vec<u8>,
) -> BaseCommand {
    pb::CommandAuthResponse {
        client_version: Some(client_version.to_owned()),
        response: Some(pb::AuthData {
            auth_method_name: Some(method.to_owned()),
            auth_data: Some(data.into()),
        }),
        protocol_version: Some(protocol_version),
    }
    .into()
}

/// PARTITIONED_METADATA.
pub fn partitioned_metadata_request(topic: &str, request_id: u64) -> BaseCommand {
    pb::CommandPartitionedTopicMetadata {
        topic: topic.to_owned(),
        request_id,
        ..Default::default()
    }
    .into()
}

/// LOOKUP (non-authoritative).
pub fn lookup(topic: &str, request_id: u64) -> BaseCommand {
    lookup_with(topic, request_id, false)
}

/// LOOKUP, `authoritative` as the redirect that led here said.
pub fn lookup_with(topic: &str, request_id: u64, authoritative: bool) -> BaseCommand {
    pb::CommandLookupTopic {
        topic: topic.to_owned(),
        request_id,
        authoritative: Some(authoritative),
        ..Default::default()
    }
    .into()
}

/// PRODUCER; `producer_name: None` lets the broker pick one.
pub fn producer(
    topic: &str,
    producer_id: u64,
    request_id: u64,
    producer_name: Option<&str>,
) -> BaseCommand {
    pb::CommandProducer {
        topic: topic.to_owned(),
        producer_id,
        request_id,
        producer_name: producer_name.map(str::to_owned),
        user_provided_producer_name: Some(producer_name.is_some()),
        ..Default::default()
    }
    .into()
}

/// SUBSCRIBE (durable, initial position Latest).
pub fn subscribe(
    topic: &str,
    subscription: &str,
    sub_type: SubType,
    consumer_id: u64,
    request_id: u64,
    consumer_name: &str,
) -> BaseCommand {
    pb::CommandSubscribe {
        topic: topic.to_owned(),
        subscription: subscription.to_owned(),
        sub_type: sub_type as i32,
        consumer_id,
        request_id,
        consumer_name: Some(consumer_name.to_owned()),
        durable: Some(true),
        ..Default::default()
    }
    .into()
}

/// FLOW granting `message_permits` more messages.
pub fn flow(consumer_id: u64, message_permits: u32) -> BaseCommand {
    pb::CommandFlow {
        consumer_id,
        message_permits,
    }
    .into()
}

/// SEND for an entry of `num_messages` messages starting at `sequence_id`.
pub fn send(producer_id: u64, sequence_id: u64, num_messages: i32) -> BaseCommand {
    pb::CommandSend {
        producer_id,
        sequence_id,
        num_messages: Some(num_messages),
        ..Default::default()
    }
    .into()
}

/// ACK of `message_ids`.
pub fn ack(consumer_id: u64, ack_type: AckType, message_ids: Vec<MessageIdData>) -> BaseCommand {
    pb::CommandAck {
        consumer_id,
        ack_type: ack_type as i32,
        message_id: message_ids,
        ..Default::default()
    }
    .into()
}

/// Client CLOSE_PRODUCER.
pub fn close_producer_request(producer_id: u64, request_id: u64) -> BaseCommand {
    pb::CommandCloseProducer {
        producer_id,
        request_id,
        ..Default::default()
    }
    .into()
}

/// Client CLOSE_CONSUMER.
pub fn close_consumer_request(consumer_id: u64, request_id: u64) -> BaseCommand {
    pb::CommandCloseConsumer {
        consumer_id,
        request_id,
        ..Default::default()
    }
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::{decode_frame, encode_payload_command, encode_simple, validate_command};
    use bytes::BytesMut;

    fn round_trip(cmd: &BaseCommand) -> BaseCommand {
        let mut buf = BytesMut::new();
        match validate_command(cmd).unwrap() {
            Type::Send | Type::Message => {
                encode_payload_command(cmd, &Default::default(), b"", &mut buf)
            }
            _ => encode_simple(cmd, &mut buf),
        }
        let frame = decode_frame(&mut buf, usize::MAX).unwrap().unwrap();
        assert!(buf.is_empty());
        frame.into_parts().0
    }

    #[test]
    fn every_builder_produces_a_valid_command() {
        let all = vec![
            connected("pulsar-rs", 20, 5 << 20),
            ping(),
            pong(),
            success(1),
            error(1, ServerError::TopicNotFound, "nope"),
            producer_success(1, "p", -1, Some(Bytes::from_static(b"\0\0"))),
            send_receipt(1, 2, Some(3), 4, 5),
            send_error(1, 2, ServerError::ChecksumError, "bad crc"),
            lookup_connect(1, "pulsar://h:6650", None),
            lookup_failed(1, ServerError::ServiceNotReady, "x"),
            partitioned_metadata(1, 0),
            partitioned_metadata_failed(1, ServerError::InvalidTopicName, "x"),
            message(1, 2, 3, -1, 0, None),
            close_producer(1),
            close_consumer(1),
            active_consumer_change(1, true),
            get_last_message_id_response(1, message_id(u64::MAX, u64::MAX), None),
            get_topics_of_namespace_response(1, vec!["persistent://a/b/c".into()]),
            get_schema_response_error(1, ServerError::TopicNotFound, "x"),
            get_or_create_schema_response(1, Bytes::from_static(b"v")),
            get_or_create_schema_response_error(1, ServerError::IncompatibleSchema, "x"),
            consumer_stats_response(7, Default::default()),
            consumer_stats_response_error(7, ServerError::ConsumerNotFound, "x"),
            ack_response(1, 2, None),
            connect("Pulsar-CPP-v3.5", 20),
            partitioned_metadata_request("t", 1),
            lookup("t", 1),
            producer("t", 1, 2, None),
            subscribe("t", "s", SubType::KeyShared, 1, 2, "c"),
            flow(1, 1000),
            send(1, 2, 1),
            ack(1, AckType::Cumulative, vec![message_id(1, 2)]),
            close_producer_request(1, 2),
            close_consumer_request(1, 2),
        ];
        for cmd in all {
            assert_eq!(round_trip(&cmd), cmd);
        }
    }

    #[test]
    fn fields_clients_depend_on_are_explicit() {
        let c = round_trip(&connected("pulsar-rs", 20, 5_242_880));
        let connected = c.connected.unwrap();
        assert_eq!(connected.server_version, "pulsar-rs");
        assert_eq!(connected.protocol_version, Some(20));
        assert_eq!(connected.max_message_size, Some(5_242_880));

        let c = round_trip(&partitioned_metadata(3, 0))
            .partition_metadata_response
            .unwrap();
        assert_eq!(c.response, Some(MetadataResponseType::Success as i32));
        assert_eq!(c.partitions, Some(0));

        let c = round_trip(&lookup_connect(3, "pulsar://h:1", Some("pulsar+ssl://h:2")));
        let c = c.lookup_topic_response.unwrap();
        assert_eq!(c.response(), LookupResponseType::Connect);
        assert_eq!(c.proxy_through_service_url, Some(false));
        assert_eq!(
            c.broker_service_url_tls.as_deref(),
            Some("pulsar+ssl://h:2")
        );

        let c = round_trip(&producer_success(3, "p", -1, None))
            .producer_success
            .unwrap();
        assert_eq!(c.producer_ready, Some(true));
        assert_eq!(c.last_sequence_id(), -1);

        let c = round_trip(&close_consumer(9)).close_consumer.unwrap();
        assert_eq!(c.request_id, u64::MAX);
        assert_eq!(c.request_id as i64, -1);

        let m = round_trip(&message(1, 2, 3, 4, 5, Some(vec![-1, 7])));
        let m = m.message.unwrap();
        assert_eq!(m.message_id.partition, Some(4));
        assert_eq!(m.redelivery_count, Some(5));
        assert_eq!(m.ack_set, vec![-1, 7]);
        let m = message(1, 2, 3, -1, 0, None).message.unwrap();
        assert_eq!(m.redelivery_count, None);
        assert_eq!(m.message_id.partition, Some(-1));
    }

    #[test]
    fn proto_defaults_match_pulsar() {
        let s = pb::CommandSubscribe::default();
        assert!(s.durable());
        assert!(s.force_topic_creation());
        assert_eq!(
            s.initial_position(),
            pb::command_subscribe::InitialPosition::Latest
        );
        let id = MessageIdData::default();
        assert_eq!((id.partition(), id.batch_index()), (-1, -1));
        let ps = pb::CommandProducerSuccess::default();
        assert_eq!(ps.last_sequence_id(), -1);
        assert!(ps.producer_ready());
        assert!(pb::CommandProducer::default().user_provided_producer_name());
        assert_eq!(pb::CommandSend::default().num_messages(), 1);
        assert_eq!(pb::MessageMetadata::default().num_messages_in_batch(), 1);
        assert!(pb::CommandPartitionedTopicMetadata::default().metadata_auto_creation_enabled());
        assert!(pb::CommandGetTopicsOfNamespaceResponse::default().changed());
        // Every Type value equals the BaseCommand field number it selects.
        for v in 2..=40 {
            let ty = Type::try_from(v).unwrap();
            assert_eq!(ty as i32, v);
        }
    }
}

/// The `(error, message)` of a failed transaction request, or `None` for success.
pub type TxnError = Option<(ServerError, String)>;

/// Splits a [`TxnError`] into the optional wire fields.
fn txn_error_fields(err: TxnError) -> (Option<i32>, Option<String>) {
    match err {
        Some((code, message)) => (Some(code as i32), Some(message)),
        None => (None, None),
    }
}

/// TC_CLIENT_CONNECT_RESPONSE.
pub fn tc_client_connect_response(request_id: u64, err: TxnError) -> BaseCommand {
    let (error, message) = txn_error_fields(err);
    pb::CommandTcClientConnectResponse {
        request_id,
        error,
        message,
    }
    .into()
}

/// WATCH_TOPIC_LIST_SUCCESS: the watcher's matching `topics` (empty when the client's hash was
/// already `topics_hash`).
pub fn watch_topic_list_success(
    request_id: u64,
    watcher_id: u64,
    topics: Vec<String>,
    topics_hash: String,
) -> BaseCommand {
    pb::CommandWatchTopicListSuccess {
        request_id,
        watcher_id,
        topic: topics,
        topics_hash,
    }
    .into()
}

/// WATCH_TOPIC_UPDATE: topics that appeared and went, and the hash of the list now.
pub fn watch_topic_update(
    watcher_id: u64,
    new_topics: Vec<String>,
    deleted_topics: Vec<String>,
    topics_hash: String,
) -> BaseCommand {
    pb::CommandWatchTopicUpdate {
        watcher_id,
        new_topics,
        deleted_topics,
        topics_hash,
    }
    .into()
}

/// NEW_TXN_RESPONSE with the new transaction's id `(most, least)` (zeros on error).
pub fn new_txn_response(request_id: u64, txn: (u64, u64), err: TxnError) -> BaseCommand {
    let (error, message) = txn_error_fields(err);
    pb::CommandNewTxnResponse {
        request_id,
        txnid_most_bits: Some(txn.0),
        txnid_least_bits: Some(txn.1),
        error,
        message,
    }
    .into()
}

macro_rules! txn_responses {
    ($($(#[$doc:meta])* $name:ident => $msg:ident,)*) => {
        $(
            $(#[$doc])*
            pub fn $name(request_id: u64, txn: (u64, u64), err: TxnError) -> BaseCommand {
                let (error, message) = txn_error_fields(err);
                pb::$msg {
                    request_id,
                    txnid_most_bits: Some(txn.0),
                    txnid_least_bits: Some(txn.1),
                    error,
                    message,
                }
                .into()
            }
        )*
    };
}

txn_responses! {
    /// ADD_PARTITION_TO_TXN_RESPONSE.
    add_partition_to_txn_response => CommandAddPartitionToTxnResponse,
    /// ADD_SUBSCRIPTION_TO_TXN_RESPONSE.
    add_subscription_to_txn_response => CommandAddSubscriptionToTxnResponse,
    /// END_TXN_RESPONSE.
    end_txn_response => CommandEndTxnResponse,
    /// END_TXN_ON_PARTITION_RESPONSE.
    end_txn_on_partition_response => CommandEndTxnOnPartitionResponse,
    /// END_TXN_ON_SUBSCRIPTION_RESPONSE.
    end_txn_on_subscription_response => CommandEndTxnOnSubscriptionResponse,
}
