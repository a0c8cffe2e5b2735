//! Compiles `proto/PulsarApi.proto` and `proto/PulsarMarkers.proto` into Rust with `protox` (pure Rust
//! protobuf compiler, no `protoc` binary needed) and `prost-build`.
//! Every `bytes` field becomes a `bytes::Bytes` so payload-carrying fields
//! can share the wire buffer.

/// BaseCommand fields stored as `Option<Box<_>>`.
const BOXED_COMMANDS: &[&str] = &[
    "connect",
    "connected",
    "subscribe",
    "producer",
    "send_error",
    "unsubscribe",
    "success",
    "error",
    "close_producer",
    "close_consumer",
    "producer_success",
    "redeliver_unacknowledged_messages",
    "partition_metadata",
    "partition_metadata_response",
    "lookup_topic",
    "lookup_topic_response",
    "consumer_stats",
    "consumer_stats_response",
    "reached_end_of_topic",
    "seek",
    "get_last_message_id",
    "get_last_message_id_response",
    "active_consumer_change",
    "get_topics_of_namespace",
    "get_topics_of_namespace_response",
    "get_schema",
    "get_schema_response",
    "auth_challenge",
    "auth_response",
    "ack_response",
    "get_or_create_schema",
    "get_or_create_schema_response",
    "new_txn",
    "new_txn_response",
    "add_partition_to_txn",
    "add_partition_to_txn_response",
    "add_subscription_to_txn",
    "add_subscription_to_txn_response",
    "end_txn",
    "end_txn_response",
    "end_txn_on_partition",
    "end_txn_on_partition_response",
    "end_txn_on_subscription",
    "end_txn_on_subscription_response",
    "tc_client_connect_request",
    "tc_client_connect_response",
    "watch_topic_list",
    "watch_topic_list_success",
    "watch_topic_update",
    "watch_topic_list_close",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/PulsarApi.proto");
    println!("cargo:rerun-if-changed=proto/PulsarMarkers.proto");
    // One package (`pulsar.proto`), one generated module.
    let fds = protox::compile(["PulsarApi.proto", "PulsarMarkers.proto"], ["proto"])?;
    let mut config = prost_build::Config::new();
    config.bytes(["."]);
    // BaseCommand holds one optional field per command type; inline, it would
    // be ~4 KiB. Box every command except the small hot-path ones so frames
    // stay cheap to move.
    for field in BOXED_COMMANDS {
        config.boxed(format!(".pulsar.proto.BaseCommand.{field}"));
    }
    config.compile_fds(fds)?;
    Ok(())
}
