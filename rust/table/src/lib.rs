//! A topic as an Apache Iceberg table (format v2): the messages of a topic with the
//! `icebergTable` policy are committed, as Parquet rows with typed columns from the topic's
//! schema, to a table in a SQL catalog (SQLite, the tables pyiceberg's `SqlCatalog` and Java's
//! `JdbcCatalog` read), exactly once: each commit records, in the same atomic catalog swap, how
//! far into each partition the table holds (`pulsar.through.<partition>`).
//!
//! * [`config`]: the broker keys (`icebergCatalogUri`, `icebergWarehouse`, `icebergCatalogName`).
//! * [`policy`]: the `icebergTable` policy (namespace and topic level) and its resolution.
//! * [`columns`]: the table's columns: the message's own (`__key`, `__publish_time`, ...) and
//!   the value's, from an AVRO or JSON record schema or a primitive one.
//! * [`rows`]: a range of stored entries as messages (batches split, chunks joined, markers and
//!   aborted transactions left out).
//! * [`arrays`]: messages as an Arrow batch of the table's schema.
//! * [`catalog`]: the catalog, its namespace and tables, and the guard each commit goes through.
//! * [`s3_storage`]: a warehouse on S3, through the offloader's S3 client.
//! * [`commit`]: one commit of a topic's next range.
//! * [`committer`]: the thread commits run on, off the broker's runtime.

pub mod arrays;
pub mod catalog;
pub mod columns;
pub mod commit;
pub mod committer;
pub mod config;
pub mod error;
pub mod policy;
pub mod rows;
pub mod s3_storage;

pub use committer::{TableCommitter, TableStatus};
pub use config::TableConfig;
pub use error::TableError;
pub use policy::IcebergTablePolicy;
