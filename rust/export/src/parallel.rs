//! Builds the tables of chunks of topics on a few threads (an export is bound by reading and
//! checking every stored entry: CPU for the copies and checksums, so a second core halves it).
//!
//! Chunks are handed out in order through a shared counter; each finished chunk goes back to the
//! calling thread, which alone runs the caller's callback (progress reports may call into Python
//! and need not be `Send`). The first error or a cancelled callback stops the workers after the
//! chunk they are on.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;

use pulsar_rs_broker::{BrokerService, Topic, TopicName};

use crate::{tables, ExportError, Table};

/// Most threads an export uses.
const MAX_THREADS: usize = 4;

/// Threads for `chunks` chunks: the machine's parallelism, at most [`MAX_THREADS`], at least one.
fn threads(chunks: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    cores.clamp(1, MAX_THREADS).min(chunks.max(1))
}

fn build_one(service: &BrokerService, chunk: &[TopicName]) -> Result<Vec<Table>, ExportError> {
    let topics = chunk
        .iter()
        .map(|name| service.topic(name, false))
        .collect::<Result<Vec<Arc<Topic>>, _>>()?;
    tables::build(&topics)
}

/// Builds every chunk's tables, calling `on_part(index, tables)` on this thread for each (in
/// completion order); `on_part` returning false stops the export with [`ExportError::Cancelled`].
///
/// # Errors
/// The first chunk's failure (loading a topic, reading its entries or cursors), or cancellation.
pub(crate) fn build_chunks(
    service: &BrokerService,
    chunks: &[&[TopicName]],
    mut on_part: impl FnMut(usize, Vec<Table>) -> bool,
) -> Result<(), ExportError> {
    // Topic loads may spawn on the Tokio runtime the caller entered; workers enter it too.
    let runtime = tokio::runtime::Handle::try_current().ok();
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let (tx, rx) = mpsc::channel::<(usize, Result<Vec<Table>, ExportError>)>();
    std::thread::scope(|s| {
        for _ in 0..threads(chunks.len()) {
            let tx = tx.clone();
            let (next, stop, runtime) = (&next, &stop, runtime.clone());
            s.spawn(move || {
                let _guard = runtime.as_ref().map(tokio::runtime::Handle::enter);
                // Relaxed: the stop flag is advisory (a worker may finish one more chunk).
                while !stop.load(Ordering::Relaxed) {
                    // Relaxed: the counter only hands out distinct indices; the chunk data is
                    // shared read-only and the results travel through the channel.
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(chunk) = chunks.get(index) else {
                        return;
                    };
                    if tx.send((index, build_one(service, chunk))).is_err() {
                        return; // the caller stopped listening
                    }
                }
            });
        }
        drop(tx);
        let mut outcome = Ok(());
        for (index, part) in rx.iter() {
            match part {
                Ok(part) => {
                    if !on_part(index, part) {
                        outcome = Err(ExportError::Cancelled);
                    }
                }
                Err(e) => outcome = Err(e),
            }
            if outcome.is_err() {
                // Relaxed: see the workers' loop.
                stop.store(true, Ordering::Relaxed);
                break;
            }
        }
        // Dropping the receiver here makes any worker's next send fail, ending it.
        drop(rx);
        outcome
    })
}
