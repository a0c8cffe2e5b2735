//! Arrow exports of a broker's state, for analytics (schema: `spark/SCHEMA.md`, version 1).
//!
//! [`snapshot`] walks every topic of a [`BrokerService`] — its ledgers, every stored entry, its
//! subscriptions' cursors and ack ranges, and the attached consumers — and builds Arrow record
//! batches. The Python bindings hand them to pyarrow through the Arrow C stream interface, so the
//! column buffers built here are never copied.

mod entries;
mod error;
mod tables;

use std::sync::Arc;

use arrow_array::RecordBatch;
use pulsar_rs_broker::{BrokerService, Topic, TopicName};

pub use error::ExportError;
pub use tables::SCHEMA_VERSION;

/// One exported table: its name and its batches (possibly none), all with one schema.
pub struct Table {
    /// Table name (`topics`, `ledgers`, `entries`, `subscriptions`, `ack_ranges`, `consumers`).
    pub name: &'static str,
    /// The schema of every batch.
    pub schema: arrow_schema::SchemaRef,
    /// The rows.
    pub batches: Vec<RecordBatch>,
}

impl Table {
    /// Total rows.
    #[must_use]
    pub fn num_rows(&self) -> usize {
        self.batches.iter().map(RecordBatch::num_rows).sum()
    }
}

/// Exports every topic stored by the broker (loading topics that are not loaded yet).
///
/// # Errors
/// Storage failures while reading entries or cursor state.
pub fn snapshot(service: &BrokerService) -> Result<Vec<Table>, ExportError> {
    let mut names: Vec<TopicName> = service
        .storage
        .ledger_names()?
        .iter()
        .filter_map(|n| TopicName::from_ledger_name(n))
        .collect();
    names.sort();
    names.dedup();
    let mut topics: Vec<Arc<Topic>> = Vec::with_capacity(names.len());
    for name in &names {
        topics.push(service.topic(name, false)?);
    }
    tables::build(&topics)
}
