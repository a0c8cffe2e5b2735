//! Tests for the frame codec (included from `frame.rs`).

use super::*;
use crate::commands::{self, message_id};
use crate::pb::KeyValue;

const MAX: usize = DEFAULT_MAX_FRAME_SIZE;

fn kv(k: &str, v: &str) -> KeyValue {
    KeyValue {
        key: k.into(),
        value: v.into(),
    }
}

fn schema() -> pb::Schema {
    pb::Schema {
        name: "s".into(),
        schema_data: Bytes::from_static(b"{\"type\":\"string\"}"),
        r#type: pb::schema::Type::Json as i32,
        properties: vec![kv("a", "b")],
    }
}

/// One representative command per type, with non-default field values.
fn sample(ty: Type) -> pb::BaseCommand {
    use pb::*;
    let id = MessageIdData {
        ledger_id: u64::MAX,
        entry_id: u64::MAX,
        partition: Some(3),
        batch_index: Some(7),
        ack_set: vec![-1, 5],
        batch_size: Some(10),
        first_chunk_message_id: Some(Box::new(message_id(1, 2))),
    };
    match ty {
        Type::Connect => CommandConnect {
            client_version: "Pulsar-CPP-v3.5.0".into(),
            auth_method: Some(AuthMethod::None as i32),
            auth_data: Some(Bytes::from_static(b"tok")),
            protocol_version: Some(20),
            auth_method_name: Some("none".into()),
            feature_flags: Some(FeatureFlags {
                supports_auth_refresh: Some(true),
                supports_broker_entry_metadata: Some(true),
                ..Default::default()
            }),
            ..Default::default()
        }
        .into(),
        Type::Connected => commands::connected("pulsar-rs", 20, 5 << 20),
        Type::Subscribe => CommandSubscribe {
            start_message_id: Some(id),
            schema: Some(schema()),
            key_shared_meta: Some(KeySharedMeta {
                key_shared_mode: KeySharedMode::Sticky as i32,
                hash_ranges: vec![IntRange {
                    start: 0,
                    end: 65535,
                }],
                allow_out_of_order_delivery: Some(true),
            }),
            subscription_properties: vec![kv("x", "y")],
            initial_position: Some(command_subscribe::InitialPosition::Earliest as i32),
            durable: Some(false),
            ..*commands::subscribe("t", "s", command_subscribe::SubType::Failover, 1, 2, "c")
                .subscribe
                .unwrap()
        }
        .into(),
        Type::Producer => CommandProducer {
            producer_access_mode: Some(ProducerAccessMode::WaitForExclusive as i32),
            metadata: vec![kv("k", "v")],
            epoch: Some(2),
            ..*commands::producer("t", 1, 2, Some("p")).producer.unwrap()
        }
        .into(),
        Type::Send => commands::send(1, u64::MAX - 1, 5),
        Type::SendReceipt => commands::send_receipt(1, 2, Some(3), u64::MAX, u64::MAX),
        Type::SendError => commands::send_error(1, 2, ServerError::ChecksumError, "crc"),
        Type::Message => commands::message(1, u64::MAX, u64::MAX, -1, 3, Some(vec![1, -1])),
        Type::Ack => CommandAck {
            validation_error: Some(command_ack::ValidationError::ChecksumMismatch as i32),
            properties: vec![KeyLongValue {
                key: "k".into(),
                value: u64::MAX,
            }],
            request_id: Some(9),
            ..commands::ack(1, command_ack::AckType::Individual, vec![id])
                .ack
                .unwrap()
        }
        .into(),
        Type::Flow => commands::flow(1, u32::MAX),
        Type::Unsubscribe => CommandUnsubscribe {
            consumer_id: 1,
            request_id: 2,
            force: Some(true),
        }
        .into(),
        Type::Success => CommandSuccess {
            request_id: 1,
            schema: Some(schema()),
        }
        .into(),
        Type::Error => commands::error(1, ServerError::ProducerBusy, "busy"),
        Type::CloseProducer => commands::close_producer(1),
        Type::CloseConsumer => CommandCloseConsumer {
            assigned_broker_service_url: Some("pulsar://x:1".into()),
            ..*commands::close_consumer_request(1, 2)
                .close_consumer
                .unwrap()
        }
        .into(),
        Type::ProducerSuccess => {
            commands::producer_success(1, "p", 41, Some(Bytes::from_static(&[0, 1])))
        }
        Type::Ping => commands::ping(),
        Type::Pong => commands::pong(),
        Type::RedeliverUnacknowledgedMessages => CommandRedeliverUnacknowledgedMessages {
            consumer_id: 1,
            message_ids: vec![message_id(1, 2), message_id(3, 4)],
            consumer_epoch: Some(1),
        }
        .into(),
        Type::PartitionedMetadata => commands::partitioned_metadata_request("t", 1),
        Type::PartitionedMetadataResponse => commands::partitioned_metadata(1, 4),
        Type::Lookup => commands::lookup("t", 1),
        Type::LookupResponse => commands::lookup_connect(1, "pulsar://h:6650", None),
        Type::ConsumerStats => CommandConsumerStats {
            request_id: 1,
            consumer_id: 2,
        }
        .into(),
        Type::ConsumerStatsResponse => commands::consumer_stats_response(
            1,
            CommandConsumerStatsResponse {
                msg_rate_out: Some(1.5),
                consumer_name: Some("c".into()),
                available_permits: Some(10),
                r#type: Some("Shared".into()),
                msg_backlog: Some(3),
                ..Default::default()
            },
        ),
        Type::ReachedEndOfTopic => CommandReachedEndOfTopic { consumer_id: 1 }.into(),
        Type::Seek => CommandSeek {
            consumer_id: 1,
            request_id: 2,
            message_id: Some(message_id(u64::MAX, u64::MAX)),
            message_publish_time: Some(3),
        }
        .into(),
        Type::GetLastMessageId => CommandGetLastMessageId {
            consumer_id: 1,
            request_id: 2,
        }
        .into(),
        Type::GetLastMessageIdResponse => {
            commands::get_last_message_id_response(1, id.clone(), Some(message_id(1, 2)))
        }
        Type::ActiveConsumerChange => commands::active_consumer_change(1, false),
        Type::GetTopicsOfNamespace => CommandGetTopicsOfNamespace {
            request_id: 1,
            namespace: "public/default".into(),
            mode: Some(command_get_topics_of_namespace::Mode::All as i32),
            ..Default::default()
        }
        .into(),
        Type::GetTopicsOfNamespaceResponse => {
            commands::get_topics_of_namespace_response(1, vec!["a".into(), "b".into()])
        }
        Type::GetSchema => CommandGetSchema {
            request_id: 1,
            topic: "t".into(),
            schema_version: Some(Bytes::from_static(b"\x00\x01")),
        }
        .into(),
        Type::GetSchemaResponse => {
            commands::get_schema_response(1, schema(), Bytes::from_static(b"v1"))
        }
        Type::AuthChallenge => CommandAuthChallenge {
            server_version: Some("s".into()),
            challenge: Some(AuthData {
                auth_method_name: Some("token".into()),
                auth_data: Some(Bytes::from_static(b"x")),
            }),
            protocol_version: Some(20),
        }
        .into(),
        Type::AuthResponse => CommandAuthResponse {
            client_version: Some("c".into()),
            response: None,
            protocol_version: Some(20),
        }
        .into(),
        Type::AckResponse => {
            commands::ack_response(1, 2, Some((ServerError::UnknownError, "x".into())))
        }
        Type::GetOrCreateSchema => CommandGetOrCreateSchema {
            request_id: 1,
            topic: "t".into(),
            schema: schema(),
            producer_name: Some("p".into()),
        }
        .into(),
        Type::GetOrCreateSchemaResponse => {
            commands::get_or_create_schema_response(1, Bytes::from_static(b"v"))
        }
        Type::TcClientConnectRequest => CommandTcClientConnectRequest {
            request_id: 1,
            tc_id: 3,
        }
        .into(),
        Type::TcClientConnectResponse => commands::tc_client_connect_response(
            1,
            Some((ServerError::TransactionCoordinatorNotFound, "no tc".into())),
        ),
        Type::WatchTopicList => CommandWatchTopicList {
            request_id: 1,
            watcher_id: 2,
            namespace: "public/default".into(),
            topics_pattern: "persistent://public/default/t-.*".into(),
            topics_hash: Some("00000000".into()),
        }
        .into(),
        Type::WatchTopicListSuccess => {
            commands::watch_topic_list_success(1, 2, vec!["persistent://a/b/c".into()], "x".into())
        }
        Type::WatchTopicUpdate => {
            commands::watch_topic_update(2, vec!["persistent://a/b/c".into()], vec![], "x".into())
        }
        Type::WatchTopicListClose => CommandWatchTopicListClose {
            request_id: 1,
            watcher_id: 2,
        }
        .into(),
        Type::NewTxn => CommandNewTxn {
            request_id: 1,
            txn_ttl_seconds: Some(60_000),
            tc_id: Some(2),
        }
        .into(),
        Type::NewTxnResponse => commands::new_txn_response(1, (2, u64::MAX), None),
        Type::AddPartitionToTxn => CommandAddPartitionToTxn {
            request_id: 1,
            txnid_least_bits: Some(5),
            txnid_most_bits: Some(2),
            partitions: vec!["persistent://a/b/c-partition-0".into(), "t".into()],
        }
        .into(),
        Type::AddPartitionToTxnResponse => commands::add_partition_to_txn_response(
            1,
            (2, 5),
            Some((ServerError::InvalidTxnStatus, "ended".into())),
        ),
        Type::AddSubscriptionToTxn => CommandAddSubscriptionToTxn {
            request_id: 1,
            txnid_least_bits: Some(5),
            txnid_most_bits: Some(2),
            subscription: vec![Subscription {
                topic: "t".into(),
                subscription: "s".into(),
            }],
        }
        .into(),
        Type::AddSubscriptionToTxnResponse => {
            commands::add_subscription_to_txn_response(1, (2, 5), None)
        }
        Type::EndTxn => CommandEndTxn {
            request_id: 1,
            txnid_least_bits: Some(5),
            txnid_most_bits: Some(2),
            txn_action: Some(TxnAction::Abort as i32),
        }
        .into(),
        Type::EndTxnResponse => commands::end_txn_response(
            1,
            (2, 5),
            Some((ServerError::TransactionNotFound, "gone".into())),
        ),
        Type::EndTxnOnPartition => CommandEndTxnOnPartition {
            request_id: 1,
            txnid_least_bits: Some(5),
            txnid_most_bits: Some(2),
            topic: Some("t".into()),
            txn_action: Some(TxnAction::Commit as i32),
            txnid_least_bits_of_low_watermark: Some(4),
        }
        .into(),
        Type::EndTxnOnPartitionResponse => commands::end_txn_on_partition_response(1, (2, 5), None),
        Type::EndTxnOnSubscription => CommandEndTxnOnSubscription {
            request_id: 1,
            txnid_least_bits: Some(5),
            txnid_most_bits: Some(2),
            subscription: Some(Subscription {
                topic: "t".into(),
                subscription: "s".into(),
            }),
            txn_action: Some(TxnAction::Abort as i32),
            txnid_least_bits_of_low_watermark: None,
        }
        .into(),
        Type::EndTxnOnSubscriptionResponse => commands::end_txn_on_subscription_response(
            1,
            (2, 5),
            Some((ServerError::TransactionConflict, "conflict".into())),
        ),
    }
}

fn sample_metadata() -> pb::MessageMetadata {
    pb::MessageMetadata {
        producer_name: "standalone-0-1".into(),
        sequence_id: 42,
        publish_time: 1_700_000_000_000,
        properties: vec![kv("a", "1")],
        partition_key: Some("key".into()),
        num_messages_in_batch: Some(5),
        ordering_key: Some(Bytes::from_static(b"ok")),
        deliver_at_time: Some(1_700_000_001_000),
        encryption_keys: vec![pb::EncryptionKeys {
            key: "k".into(),
            value: Bytes::from_static(b"v"),
            metadata: vec![],
        }],
        ..Default::default()
    }
}

fn encode_any(cmd: &pb::BaseCommand) -> BytesMut {
    let mut buf = BytesMut::new();
    match Type::try_from(cmd.r#type).unwrap() {
        Type::Send | Type::Message => {
            encode_payload_command(cmd, &sample_metadata(), b"hello payload", &mut buf)
        }
        _ => encode_simple(cmd, &mut buf),
    }
    buf
}

fn all_types() -> impl Iterator<Item = Type> {
    (2..=40)
        .chain(50..=63)
        .map(|v| Type::try_from(v).expect("every value 2..=40 and 50..=63 is a command type"))
}

#[test]
fn every_command_type_round_trips() {
    for ty in all_types() {
        let cmd = sample(ty);
        assert_eq!(cmd.r#type, ty as i32);
        let mut buf = encode_any(&cmd);
        let frame = decode_frame(&mut buf, MAX).unwrap().unwrap();
        assert!(buf.is_empty(), "{ty:?} left bytes behind");
        assert_eq!(frame.command(), &cmd, "{ty:?}");
        assert_eq!(command_type_name(&cmd), ty.as_str_name());
        if let Frame::Payload { payload, .. } = frame {
            assert!(matches!(ty, Type::Send | Type::Message));
            assert!(payload.checksum_valid);
            assert_eq!(payload.full_metadata().unwrap(), sample_metadata());
            assert_eq!(
                payload.metadata.publish_time,
                sample_metadata().publish_time
            );
            assert_eq!(&payload.payload[..], b"hello payload");
        }
    }
}

#[test]
fn type_value_equals_command_field_number() {
    for ty in all_types() {
        let bytes = sample(ty).encode_to_vec();
        // [0x08 type-varint] then the key of the command field (wire type 2).
        assert_eq!(bytes[0], 0x08);
        assert_eq!(bytes[1] as i32, ty as i32);
        let mut rest = &bytes[2..];
        let key = prost::encoding::decode_varint(&mut rest).unwrap();
        assert_eq!(key, ((ty as u64) << 3) | 2, "{ty:?}");
    }
}

#[test]
fn required_fields_are_always_on_the_wire() {
    // protobuf-lite rejects messages lacking a required field, even a zero one.
    let bytes = pb::CommandFlow {
        consumer_id: 0,
        message_permits: 0,
    }
    .encode_to_vec();
    assert_eq!(bytes, [0x08, 0x00, 0x10, 0x00]);
    let bytes = pb::CommandConnected {
        server_version: String::new(),
        ..Default::default()
    }
    .encode_to_vec();
    assert_eq!(bytes, [0x0a, 0x00]);

    let mut buf = BytesMut::new();
    encode_simple(
        &commands::connected("pulsar-rs/0.1", 20, 5_242_880),
        &mut buf,
    );
    let cmd = decode_frame(&mut buf, MAX).unwrap().unwrap().into_parts().0;
    let c = cmd.connected.unwrap();
    assert_eq!(
        (
            c.server_version.as_str(),
            c.protocol_version(),
            c.max_message_size()
        ),
        ("pulsar-rs/0.1", 20, 5_242_880)
    );
}

#[test]
fn u64_max_sentinel_round_trips() {
    let mut buf = BytesMut::new();
    let cmd = commands::send_receipt(1, 2, None, u64::MAX, u64::MAX);
    encode_simple(&cmd, &mut buf);
    let cmd = decode_frame(&mut buf, MAX).unwrap().unwrap().into_parts().0;
    let id = cmd.send_receipt.unwrap().message_id.unwrap();
    assert_eq!((id.ledger_id as i64, id.entry_id as i64), (-1, -1));
    assert_eq!(id.partition(), -1);
}

#[test]
fn simple_frame_layout() {
    let mut buf = BytesMut::new();
    encode_simple(&commands::ping(), &mut buf);
    // type=PING (0x08 0x12), ping field 18 empty (0x92 0x01 0x00).
    assert_eq!(
        &buf[..],
        &[0, 0, 0, 9, 0, 0, 0, 5, 0x08, 18, 0x92, 0x01, 0x00]
    );
}

#[test]
fn send_with_checksum_is_zero_copy() {
    let md = sample_metadata();
    let mut buf = encode_any(&commands::send(1, 2, 5));
    let range = buf.as_ptr() as usize..buf.as_ptr() as usize + buf.len();
    let (cmd, payload) = decode_frame(&mut buf, MAX).unwrap().unwrap().into_parts();
    let p = payload.unwrap();
    assert_eq!(cmd.send.unwrap().num_messages(), 5);
    assert!(range.contains(&(p.stored.as_ptr() as usize)));
    assert!(range.contains(&(p.payload.as_ptr() as usize)));
    assert_eq!(p.stored, build_stored_entry(&md, b"hello payload"));
    assert_eq!(p.checksum, Some(crc32c::crc32c(&p.stored[6..])));
    assert_eq!(p.stored.len(), stored_entry_len(&md, 13));
    assert_eq!(parse_stored_entry(&p.stored).unwrap(), (md, p.payload));
}

#[test]
fn send_without_checksum_is_normalized() {
    let md = sample_metadata();
    let mut buf = BytesMut::new();
    encode_payload_command_without_checksum(&commands::send(1, 2, 5), &md, b"abc", &mut buf);
    let (_, p) = decode_frame(&mut buf, MAX).unwrap().unwrap().into_parts();
    let p = p.unwrap();
    assert_eq!(p.checksum, None);
    assert!(p.checksum_valid);
    assert_eq!(p.stored, build_stored_entry(&md, b"abc"));
    assert_eq!(&p.payload[..], b"abc");
    assert_eq!(parse_stored_entry(&p.stored).unwrap().0, md);
}

#[test]
fn corrupted_checksum_is_reported_not_fatal() {
    let mut buf = encode_any(&commands::send(1, 2, 5));
    let last = buf.len() - 1;
    buf[last] ^= 0xff;
    let (_, p) = decode_frame(&mut buf, MAX).unwrap().unwrap().into_parts();
    let p = p.unwrap();
    assert!(!p.checksum_valid);
    assert_eq!(p.full_metadata().unwrap(), sample_metadata());
    assert!(matches!(
        parse_stored_entry(&p.stored),
        Err(ProtocolError::ChecksumMismatch { .. })
    ));

    // Corrupt metadataSize too: still a frame, with default metadata.
    let mut buf = encode_any(&commands::send(1, 2, 5));
    let cmd_len = commands::send(1, 2, 5).encoded_len();
    buf[8 + cmd_len + 6] = 0xff;
    let (_, p) = decode_frame(&mut buf, MAX).unwrap().unwrap().into_parts();
    let p = p.unwrap();
    assert!(!p.checksum_valid);
    assert_eq!(p.metadata, FrameMetadata::default());
    assert!(p.full_metadata().is_err());
}

#[test]
fn stored_entry_errors() {
    let entry = build_stored_entry(&sample_metadata(), b"x");
    let mut bad = entry.to_vec();
    bad[0] = 0x0f;
    assert!(matches!(
        parse_stored_entry(&Bytes::from(bad)),
        Err(ProtocolError::BadMagic { found: 0x0f01 })
    ));
    for n in 0..entry.len() {
        assert!(parse_stored_entry(&entry.slice(..n)).is_err(), "prefix {n}");
    }
    // Valid checksum over a lying metadataSize.
    let mut lie = BytesMut::new();
    lie.put_u16(MAGIC_CRC32C);
    lie.put_u32(crc32c::crc32c(&[0, 0, 1, 0]));
    lie.put_u32(256);
    assert!(matches!(
        parse_stored_entry(&lie.freeze()),
        Err(ProtocolError::BadMetadataSize {
            size: 256,
            available: 0
        })
    ));
}

#[test]
fn message_header_plus_stored_entry_is_a_message_frame() {
    let md = sample_metadata();
    let stored = build_stored_entry(&md, b"payload");
    let cmd = commands::message(7, 1, 2, -1, 0, None);
    let mut whole = BytesMut::new();
    encode_payload_command(&cmd, &md, b"payload", &mut whole);
    let mut header = BytesMut::new();
    encode_message_header(&cmd, stored.len(), &mut header);
    header.extend_from_slice(&stored);
    assert_eq!(header, whole);
    let mut copied = BytesMut::new();
    encode_message(&cmd, &stored, &mut copied);
    assert_eq!(copied, whole);

    let (c, p) = decode_frame(&mut whole, MAX).unwrap().unwrap().into_parts();
    assert_eq!(c, cmd);
    let p = p.unwrap();
    assert_eq!(p.stored, stored);
    assert_eq!(p.broker_entry_metadata, None);
}

#[test]
fn broker_entry_metadata_is_decoded() {
    let md = sample_metadata();
    let stored = build_stored_entry(&md, b"p");
    let bem = pb::BrokerEntryMetadata {
        broker_timestamp: Some(123),
        index: Some(u64::MAX),
    };
    let cmd = commands::message(7, 1, 2, 0, 0, None);
    let mut buf = BytesMut::new();
    encode_message_header_with_broker_entry_metadata(&cmd, &bem, stored.len(), &mut buf);
    buf.extend_from_slice(&stored);
    let (_, p) = decode_frame(&mut buf, MAX).unwrap().unwrap().into_parts();
    let p = p.unwrap();
    assert!(buf.is_empty());
    assert_eq!(p.broker_entry_metadata, Some(bem));
    assert_eq!(p.stored, stored);
    assert_eq!(p.full_metadata().unwrap(), md);
}

#[test]
fn every_prefix_is_incomplete_and_untouched() {
    for ty in [Type::Connect, Type::Send, Type::Message, Type::Ping] {
        let full = encode_any(&sample(ty)).freeze();
        for n in 0..full.len() {
            let mut buf = BytesMut::from(&full[..n]);
            assert!(decode_frame(&mut buf, MAX).unwrap().is_none(), "{ty:?} {n}");
            assert_eq!(&buf[..], &full[..n]);
        }
        assert!(matches!(
            decode_exact(full.slice(..full.len() - 1), MAX),
            Err(ProtocolError::Incomplete)
        ));
        assert_eq!(
            decode_exact(full.clone(), MAX).unwrap().command(),
            &sample(ty)
        );
        let mut longer = full.to_vec();
        longer.push(0);
        assert!(matches!(
            decode_exact(longer.into(), MAX),
            Err(ProtocolError::TrailingBytes { extra: 1 })
        ));
    }
}

#[test]
fn consecutive_frames_decode_in_order() {
    let mut buf = BytesMut::new();
    for ty in all_types() {
        buf.extend_from_slice(&encode_any(&sample(ty)));
    }
    for ty in all_types() {
        let frame = decode_frame(&mut buf, MAX).unwrap().unwrap();
        assert_eq!(frame.command().r#type, ty as i32);
    }
    assert!(decode_frame(&mut buf, MAX).unwrap().is_none());
}

fn raw_frame(total: u32, cmd_size: u32, rest: &[u8]) -> BytesMut {
    let mut buf = BytesMut::new();
    buf.put_u32(total);
    buf.put_u32(cmd_size);
    buf.extend_from_slice(rest);
    buf
}

#[test]
fn size_violations_are_errors() {
    let mut buf = raw_frame(MAX as u32 + 1, 0, &[]);
    let err = decode_frame(&mut buf, MAX).unwrap_err();
    assert!(
        matches!(err, ProtocolError::FrameTooLarge { size, max } if size == MAX + 1 && max == MAX)
    );
    assert_eq!(buf.len(), 8, "nothing consumed");

    let mut buf = BytesMut::from(&[0u8, 0, 0, 3, 0, 0, 0][..]);
    assert!(matches!(
        decode_frame(&mut buf, MAX),
        Err(ProtocolError::BadFrameSize { size: 3 })
    ));
    let mut buf = raw_frame(u32::MAX, 0, &[]);
    assert!(matches!(
        decode_frame(&mut buf, usize::MAX),
        Ok(None) | Err(ProtocolError::FrameTooLarge { .. })
    ));

    let mut buf = raw_frame(8, 5, &[0; 4]);
    assert!(matches!(
        decode_frame(&mut buf, MAX),
        Err(ProtocolError::BadCommandSize {
            cmd_size: 5,
            total_size: 8
        })
    ));
    let mut buf = raw_frame(8, u32::MAX, &[0; 4]);
    assert!(matches!(
        decode_frame(&mut buf, MAX),
        Err(ProtocolError::BadCommandSize { .. })
    ));
}

#[test]
fn semantic_violations_are_errors() {
    let mut buf = raw_frame(7, 3, &[0xff, 0xff, 0xff]);
    assert!(matches!(
        decode_frame(&mut buf, MAX),
        Err(ProtocolError::Decode {
            what: "BaseCommand",
            ..
        })
    ));
    assert!(buf.is_empty(), "a malformed frame is consumed");

    let missing = pb::BaseCommand {
        r#type: Type::Send as i32,
        ..Default::default()
    };
    let mut buf = BytesMut::new();
    encode_simple(&missing, &mut buf);
    assert!(matches!(
        decode_frame(&mut buf, MAX),
        Err(ProtocolError::MissingCommand { ty: "SEND" })
    ));

    let unknown = pb::BaseCommand {
        r#type: 45,
        ..Default::default()
    };
    encode_simple(&unknown, &mut buf);
    assert!(matches!(
        decode_frame(&mut buf, MAX),
        Err(ProtocolError::UnknownCommandType(45))
    ));
    assert_eq!(command_type_name(&unknown), "UNKNOWN");

    let ping = commands::ping();
    encode_message(&ping, b"junk", &mut buf);
    assert!(matches!(
        decode_frame(&mut buf, MAX),
        Err(ProtocolError::UnexpectedPayload { ty: "PING" })
    ));

    encode_simple(&commands::send(1, 2, 1), &mut buf);
    assert!(matches!(
        decode_frame(&mut buf, MAX),
        Err(ProtocolError::TruncatedPayload { .. })
    ));

    let mut body = BytesMut::new();
    body.put_u32(1000);
    body.extend_from_slice(b"short");
    encode_message(&commands::send(1, 2, 1), &body, &mut buf);
    assert!(matches!(
        decode_frame(&mut buf, MAX),
        Err(ProtocolError::BadMetadataSize {
            size: 1000,
            available: 5
        })
    ));

    let mut body = BytesMut::new();
    body.put_u16(MAGIC_BROKER_ENTRY_METADATA);
    body.put_u32(99);
    encode_message(&commands::message(1, 2, 3, -1, 0, None), &body, &mut buf);
    assert!(matches!(
        decode_frame(&mut buf, MAX),
        Err(ProtocolError::BadBrokerEntryMetadataSize { size: 99, .. })
    ));
    assert!(buf.is_empty());
}

/// Deterministic xorshift64* generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[test]
fn mutated_frames_never_panic() {
    let seeds: Vec<Bytes> = all_types()
        .map(|t| encode_any(&sample(t)).freeze())
        .collect();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut outcomes = [0usize; 3];
    for _ in 0..20_000 {
        let mut data = seeds[rng.below(seeds.len())].to_vec();
        for _ in 0..=rng.below(4) {
            match rng.below(5) {
                0 => {
                    let i = rng.below(data.len());
                    data[i] ^= 1 << rng.below(8);
                }
                1 => {
                    let i = rng.below(data.len());
                    data[i] = rng.next() as u8;
                }
                2 => data.truncate(rng.below(data.len() + 1)),
                3 => {
                    let i = rng.below(data.len() + 1);
                    data.insert(i, rng.next() as u8);
                }
                _ => {
                    // Rewrite one of the size fields.
                    let at = [0usize, 4][rng.below(2)];
                    if data.len() >= at + 4 {
                        let v = (rng.next() as u32) >> rng.below(32);
                        data[at..at + 4].copy_from_slice(&v.to_be_bytes());
                    }
                }
            }
            if data.is_empty() {
                data.push(0);
            }
        }
        let mut buf = BytesMut::from(&data[..]);
        // Drain the buffer; every call either consumes or stops.
        loop {
            let before = buf.len();
            match decode_frame(&mut buf, 1 << 16) {
                Ok(Some(_)) => {
                    outcomes[0] += 1;
                    assert!(buf.len() < before);
                }
                Ok(None) => {
                    outcomes[1] += 1;
                    break;
                }
                Err(_) => {
                    outcomes[2] += 1;
                    break;
                }
            }
        }
        let _ = parse_stored_entry(&Bytes::from(data));
    }
    assert!(outcomes.iter().all(|&n| n > 100), "{outcomes:?}");
}

#[test]
fn base_command_stays_small() {
    // Rarely used commands are boxed (see rust/proto_codegen) so frames are cheap to move.
    assert!(std::mem::size_of::<pb::BaseCommand>() <= 1024);
}

#[test]
fn stored_checksum_reads_the_header_it_writes() {
    let stored = build_stored_entry(&sample_metadata(), b"payload");
    let (from, crc) = stored_checksum(&stored).expect("a stored entry carries its checksum");
    assert_eq!(from, STORED_CHECKSUM_FROM);
    assert_eq!(crc, crc32c::crc32c(&stored[from..]));
    // Legacy or foreign bytes: no magic, or too short to hold the checksum.
    assert_eq!(stored_checksum(&stored[..5]), None);
    assert_eq!(stored_checksum(b""), None);
    let mut other = stored.to_vec();
    other[1] ^= 0xff;
    assert_eq!(stored_checksum(&other), None);
}
