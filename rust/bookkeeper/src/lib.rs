//! A BookKeeper client for pulsar_rs that talks to real Apache BookKeeper bookies in BookKeeper's own
//! formats: the v2 wire protocol Pulsar uses, CRC32C digests and the SHA-1 master key as
//! BookKeeper computes them, ledger ids and ledger metadata (format v3) on ZooKeeper at the paths of
//! the hierarchical ledger manager, round-robin placement with E/Qw/Qa, pipelined appends, reads and
//! LAC reads, ensemble changes when a bookie fails mid-write, and the recovery open that fences a
//! ledger and closes it at the last entry an ack quorum may hold.
//!
//! ZooKeeper client: `zookeeper-client` (kezhuw), not the older `zookeeper` crate. It is async and
//! runs on Tokio (feature `tokio`), so no blocking ZooKeeper call ever sits on a worker thread; it
//! is maintained (0.11.2, 2026) and speaks ZooKeeper 3.5+'s create2 (the created node's stat, hence
//! its version for compare-and-set) and multi ops. The `zookeeper` crate is synchronous with its own
//! threads and has seen no release since 2022. The `bookkeeper-client` crate (same author, v3
//! protocol, last commit 2023) was not taken: Pulsar speaks v2, and it pins old dependencies.
//!
//! Module map (no module imports one that imports it back):
//! `error` → `digest`, `protocol` → `connection`; `metadata`, `bookie_info` → `zk_store`;
//! `connection`, `zk_store` → `bookie_client`;
//! `placement`; `reader`, `writer`, `recovery` on top; `client` ties them together.

pub mod bookie_client;
pub mod bookie_info;
pub mod client;
pub mod connection;
pub mod digest;
pub mod error;
pub mod metadata;
pub mod placement;
pub mod protocol;
pub mod reader;
pub mod recovery;
pub mod writer;
pub mod zk_store;

pub use client::{BookKeeper, LedgerConfig};
pub use digest::{master_key, DigestType, VerifiedEntry};
pub use error::{BkError, Result};
pub use metadata::{ledger_path, LedgerMetadata, LedgerState};
pub use reader::LedgerReader;
pub use writer::LedgerWriter;
