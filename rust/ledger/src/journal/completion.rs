//! What the flusher runs once a round is durable (or failed): a callback per append, or one
//! report per run of consecutive appends by the same owner.
//!
//! A managed ledger does not need to hear about each of its appends: its appends are made durable
//! in append order, so "everything up to mark M" says it all. Consecutive [`Completion::Through`]s
//! of one owner in a round's queue coalesce into one, so a round of many appends by one topic
//! costs its owner one call, with no allocation per append.

use std::sync::Arc;

use crate::{LedgerError, Result};

/// Told, on the journal flusher, that its appends up to a mark are done.
pub trait DurableThrough: Send + Sync {
    /// Every append this owner queued with a mark up to `mark` (inclusive), and not reported
    /// before, completed with `result`. Runs on the flusher thread, in append order; it must
    /// only hand the outcome on.
    fn durable_through(&self, mark: u64, result: Result<()>);
}

/// Called once per durable append (or once per coalesced run), on the flusher, in append order.
pub enum Completion {
    /// A callback for this one append.
    Once(Box<dyn FnOnce(Result<()>) + Send>),
    /// A report to an owner whose marks grow with each of its appends.
    Through(Through),
}

/// An owner and the mark of its latest append. Dropped unreported (the journal went away), it
/// reports a closed journal, so no waiter waits forever.
pub struct Through {
    /// `None` once reported or merged into an earlier `Through`.
    owner: Option<Arc<dyn DurableThrough>>,
    /// The mark of the last append covered.
    mark: u64,
}

impl Completion {
    /// A callback for one append.
    pub fn once(f: impl FnOnce(Result<()>) + Send + 'static) -> Self {
        Completion::Once(Box::new(f))
    }

    /// A report to `owner` covering its appends up to `mark`.
    pub fn through(owner: Arc<dyn DurableThrough>, mark: u64) -> Self {
        Completion::Through(Through {
            owner: Some(owner),
            mark,
        })
    }

    /// Drops this without running or reporting it (the append it belonged to was refused).
    pub(super) fn disarm(self) {
        if let Completion::Through(mut t) = self {
            t.owner = None;
        }
    }

    /// Runs the callback or makes the report.
    pub fn run(self, result: Result<()>) {
        match self {
            Completion::Once(f) => f(result),
            Completion::Through(mut t) => {
                if let Some(owner) = t.owner.take() {
                    owner.durable_through(t.mark, result);
                }
            }
        }
    }
}

/// Queues `c` behind `queue`: a `Through` of the same owner as the last one queued extends it
/// instead of taking a new slot.
pub(super) fn push(queue: &mut Vec<Completion>, mut c: Completion) {
    if let (Some(Completion::Through(last)), Completion::Through(next)) = (queue.last_mut(), &mut c)
    {
        if same_owner(last, next) {
            last.mark = next.mark;
            // Merged: dropping `next` must not report a closed journal.
            next.owner = None;
            return;
        }
    }
    queue.push(c);
}

fn same_owner(a: &Through, b: &Through) -> bool {
    match (&a.owner, &b.owner) {
        // Compare the data pointers only: the vtable pointer of one type may differ between
        // codegen units.
        (Some(a), Some(b)) => std::ptr::addr_eq(Arc::as_ptr(a), Arc::as_ptr(b)),
        _ => false,
    }
}

impl Drop for Through {
    fn drop(&mut self) {
        if let Some(owner) = self.owner.take() {
            owner.durable_through(
                self.mark,
                Err(LedgerError::Closed {
                    what: "journal".into(),
                }),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parking_lot::Mutex;

    #[derive(Default)]
    struct Owner(Mutex<Vec<(u64, bool)>>);

    impl DurableThrough for Owner {
        fn durable_through(&self, mark: u64, result: Result<()>) {
            self.0.lock().push((mark, result.is_ok()));
        }
    }

    #[test]
    fn consecutive_marks_of_one_owner_coalesce() {
        let a = Arc::new(Owner::default());
        let b = Arc::new(Owner::default());
        let mut q = Vec::new();
        for m in 0..5 {
            push(&mut q, Completion::through(a.clone(), m));
        }
        push(&mut q, Completion::through(b.clone(), 7));
        push(&mut q, Completion::through(a.clone(), 5));
        assert_eq!(q.len(), 3, "five marks of one owner in a row take one slot");
        assert!(a.0.lock().is_empty(), "a merged mark reported on its own");
        q.into_iter().for_each(|c| c.run(Ok(())));
        assert_eq!(*a.0.lock(), vec![(4, true), (5, true)]);
        assert_eq!(*b.0.lock(), vec![(7, true)]);
    }

    #[test]
    fn dropped_unreported_reports_closed() {
        let a = Arc::new(Owner::default());
        let mut q = Vec::new();
        push(&mut q, Completion::through(a.clone(), 1));
        push(&mut q, Completion::through(a.clone(), 2));
        drop(q);
        assert_eq!(*a.0.lock(), vec![(2, false)]);
    }
}
