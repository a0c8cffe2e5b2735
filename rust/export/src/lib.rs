//! Arrow exports of a broker's state, for analytics (schema: `spark/SCHEMA.md`, version 1).
//!
//! [`snapshot`] walks every topic of a [`BrokerService`] — its ledgers, every stored entry, its
//! subscriptions' cursors and ack ranges, and the attached consumers — and the transaction
//! coordinators it hosts, and builds Arrow record batches. The Python bindings hand them to pyarrow through the Arrow C stream interface, so the
//! column buffers built here are never copied.

mod entries;
mod error;
mod parallel;
mod tables;

use arrow_array::RecordBatch;
use pulsar_rs_broker::{BrokerService, TopicName};

pub use error::ExportError;
pub use tables::SCHEMA_VERSION;

/// One exported table: its name and its batches (possibly none), all with one schema.
pub struct Table {
    /// Table name (`topics`, `ledgers`, `entries`, `subscriptions`, `ack_ranges`, `consumers`,
    /// `transaction_coordinators`).
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

/// How far a [`snapshot_with_progress`] has got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    /// Topics exported so far.
    pub topics_done: usize,
    /// Topics to export in all.
    pub topics_total: usize,
    /// Rows built so far, all tables.
    pub rows: usize,
}

/// Topics exported between two progress reports (and per batch of every table).
const TOPICS_PER_CHUNK: usize = 32;

/// Exports every topic stored by the broker (loading topics that are not loaded yet).
///
/// # Errors
/// Storage failures while reading entries or cursor state.
pub fn snapshot(service: &BrokerService) -> Result<Vec<Table>, ExportError> {
    snapshot_with_progress(service, &mut |_| true)
}

/// As [`snapshot`], calling `progress` after every few topics (and once at the start); it
/// returns false to stop the export, which then fails with [`ExportError::Cancelled`].
///
/// # Errors
/// Storage failures while reading entries or cursor state; cancellation.
pub fn snapshot_with_progress(
    service: &BrokerService,
    progress: &mut dyn FnMut(Progress) -> bool,
) -> Result<Vec<Table>, ExportError> {
    let mut names: Vec<TopicName> = service
        .storage
        .ledger_names()?
        .iter()
        .filter_map(|n| TopicName::from_ledger_name(n))
        .collect();
    names.sort();
    names.dedup();
    let mut done = Progress {
        topics_done: 0,
        topics_total: names.len(),
        rows: 0,
    };
    if !progress(done) {
        return Err(ExportError::Cancelled);
    }
    let chunks: Vec<&[TopicName]> = names.chunks(TOPICS_PER_CHUNK).collect();
    let mut parts: Vec<Option<Vec<Table>>> = Vec::new();
    parts.resize_with(chunks.len(), || None);
    parallel::build_chunks(service, &chunks, |index, part| {
        done.rows += part.iter().map(Table::num_rows).sum::<usize>();
        done.topics_done += chunks[index].len();
        parts[index] = Some(part);
        progress(done)
    })?;
    // Concatenated in chunk order, so the rows come out sorted by topic whatever thread built them.
    let mut all: Option<Vec<Table>> = None;
    for part in parts.into_iter().flatten() {
        match &mut all {
            None => all = Some(part),
            Some(all) => {
                for (table, more) in all.iter_mut().zip(part) {
                    table.batches.extend(more.batches);
                }
            }
        }
    }
    let mut all = match all {
        Some(all) => all,
        None => tables::build(&[])?,
    };
    all.push(tables::coordinators_table(service)?);
    Ok(all)
}
