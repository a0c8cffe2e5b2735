//! Tiered storage for pulsar_rs: Apache Pulsar's jcloud offloader (drivers `S3`, `aws-s3`,
//! `aliyun-oss`) on S3-compatible object storage, writing and reading exactly Pulsar 4.0.8's
//! objects, so that Pulsar reads the ledgers we offload and we read the ones Pulsar offloaded.
//!
//! * [`config`]: [`OffloadConfig`] from Pulsar's broker keys (`managedLedgerOffload*`,
//!   `s3ManagedLedgerOffload*`).
//! * [`format`]: the objects' bytes (data blocks, the index and its `LedgerMetadataFormat`),
//!   pure and without I/O.
//! * [`s3`]: a small S3 client (SigV4 or unsigned requests, path-style with an endpoint).
//! * [`offloader`]: [`BlobStoreOffloader`], the [`pulsar_rs_ledger::LedgerOffloader`].
//! * [`reader`]: an offloaded ledger open for reading (ranged GETs through the sparse index).

pub mod config;
pub mod format;
pub mod offloader;
pub mod reader;
mod retry;
pub mod s3;
mod shared;

pub use config::{Driver, OffloadConfig};
pub use offloader::BlobStoreOffloader;
