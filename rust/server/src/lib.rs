//! The network side of pulsar_rs: a Tokio server speaking Pulsar's binary protocol, plus the
//! admin REST API and Prometheus metrics on a second port.
//!
//! [`Server::start`] is the one entry point used by the binary, the Python bindings and tests:
//! it binds both ports (0 = ephemeral), spawns the accept loops on the current runtime and
//! returns a handle with the bound addresses and a clean shutdown.
//!
//! Security (all off by default): authentication and permissions ([`auth`]), the admin guard
//! (`admin::machinery::guard`) and TLS ([`tls`]) on listeners beside the plain ones, all served
//! by one accept loop ([`listen`]), enabled by Pulsar's `broker.conf` keys.
//!
//! The rooms, from the top down: [`server`] (the running server and its start-up, phase by
//! phase); [`admin`] (the REST API, with [`metrics`] and the web [`console`]) and
//! [`connection`] (one binary-protocol client); [`cluster`] (this broker acting in a cluster,
//! and as a client of its peers); [`replication`] (geo-replication to other clusters);
//! [`housekeeping`] (the periodic tasks); [`context`] (the state
//! they all share); and below it the plain parts: [`auth`], [`tls`], [`resources`],
//! [`lookup`], [`offloaders`], [`iceberg_tables`], [`topic_list_limit`], [`writer`], [`outbound`], [`queue`], [`http`], [`error`] and the like. This file only names
//! the modules and hands on the names other crates use.
#![recursion_limit = "256"] // serde_json::json! of the admin stats documents

pub mod admin;
pub mod auth;
pub mod bookkeeper;
pub mod cluster;
pub mod connection;
pub mod console;
pub mod context;
pub mod error;
pub mod housekeeping;
pub mod http;
pub mod iceberg_tables;
pub mod listen;
pub mod lookup;
pub mod metrics;
pub mod offloaders;
pub mod outbound;
pub mod policies_document;
pub mod queue;
pub mod replication;
pub mod resources;
pub mod server;
pub mod standalone_defaults;
pub mod tls;
pub mod topic_list_limit;
pub mod writer;

pub use cluster::setup as cluster_setup;
pub use context::{PublishBuffer, ServerContext};
pub use error::ServerError;
pub use server::{io_runtime, Seams, Server};
