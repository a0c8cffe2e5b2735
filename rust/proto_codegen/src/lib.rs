//! The Rust of the repository's protobuf files, generated here and committed beside the crates
//! that use them (`rust/proto/src/generated/`, `rust/metadata_store/src/generated/`): a build of
//! the broker, the Python extension or the fuzz targets then compiles no protobuf compiler
//! (protox, prost-build and their parsers were the longest chain of the fuzz build, about 100 s
//! of its 115 s). `cargo run -p pulsar-rs-proto-codegen` writes the files again after a `.proto`
//! changes; the crate's test fails while a committed file differs from what it generates.

use std::path::{Path, PathBuf};

/// Commands of `BaseCommand` held as `Option<Box<_>>`: inline, `BaseCommand` (one optional field
/// per command) would be about 4 KiB; boxed, a frame stays cheap to move. The small hot-path
/// commands (SEND, MESSAGE, ACK, FLOW, PING, PONG, ...) stay inline.
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

/// One generated file: where its `.proto` files are and where the Rust goes.
#[derive(Clone, Copy, Debug)]
pub struct Generated {
    /// The file's name, as prost-build names it after the protobuf package.
    pub file: &'static str,
    /// The crate whose `src/generated/` holds it, relative to the repository's root.
    pub crate_dir: &'static str,
}

/// Pulsar's protocol and markers (package `pulsar.proto`), for `pulsar-rs-proto`.
pub const PULSAR: Generated = Generated {
    file: "pulsar.proto.rs",
    crate_dir: "rust/proto",
};
/// etcd's v3 API (the part the metadata store uses; a tonic client), for
/// `pulsar-rs-metadata-store`.
pub const ETCD: Generated = Generated {
    file: "etcdserverpb.rs",
    crate_dir: "rust/metadata_store",
};

/// The repository's root (this crate is `rust/proto_codegen`).
#[must_use]
pub fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

impl Generated {
    /// The committed file, under `root`.
    #[must_use]
    pub fn committed(&self, root: &Path) -> PathBuf {
        root.join(self.crate_dir)
            .join("src/generated")
            .join(self.file)
    }

    /// Generates the file into `out` from the `.proto` files under `root`.
    ///
    /// # Errors
    /// The `.proto` files do not parse, or `out` cannot be written.
    pub fn generate(&self, root: &Path, out: &Path) -> Result<PathBuf, Box<dyn std::error::Error>> {
        let protos = root.join(self.crate_dir).join("proto");
        if self.file == PULSAR.file {
            let fds = protox::compile(["PulsarApi.proto", "PulsarMarkers.proto"], [&protos])?;
            let mut config = prost_build::Config::new();
            // Every `bytes` field a `bytes::Bytes`: payload-carrying fields share the wire buffer.
            config.bytes(["."]);
            for field in BOXED_COMMANDS {
                config.boxed(format!(".pulsar.proto.BaseCommand.{field}"));
            }
            config.out_dir(out);
            config.compile_fds(fds)?;
        } else {
            let fds = protox::compile(["etcd.proto"], [&protos])?;
            tonic_prost_build::configure()
                .build_server(false)
                .build_client(true)
                .out_dir(out)
                .compile_fds(fds)?;
        }
        Ok(out.join(self.file))
    }
}
