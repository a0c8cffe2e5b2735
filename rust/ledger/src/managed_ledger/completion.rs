//! Who hears that a queued durable append completed: an [`AddWaiter`] (told on the journal
//! flusher, once per run of its appends in a round), or an [`AddCompletion`] for one append,
//! awaited as a future, waited for from a plain thread, or handed a callback.
//!
//! The waiter form lets the broker answer SENDs from the journal flusher itself: the receipts go
//! straight to the connection's writer, with no task in between to wake and schedule and no
//! allocation per append.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use parking_lot::Mutex;

use crate::{LedgerError, Result};

type Then = Box<dyn FnOnce(Result<()>) + Send>;

/// Told when the appends it waits for complete. Each append names the waiter and a token; the
/// tokens one waiter gives must grow with its appends to one managed ledger.
pub trait AddWaiter: Send + Sync {
    /// Every append of this waiter with a token up to `token` (inclusive) that was not reported
    /// before completed with `result`. Runs on the journal flusher, in append order: it must only
    /// hand the outcome on.
    fn added_through(&self, token: u64, result: Result<()>);
}

enum State {
    /// Not completed; the waker of the task awaiting it, if polled.
    Waiting(Option<Waker>),
    /// Not completed; run this on completion.
    Then(Then),
    /// Completed, outcome not taken yet.
    Done(Result<()>),
    /// Outcome handed on (to the awaiting task or the callback).
    Taken,
}

/// Shared by the managed ledger (as the append's [`AddWaiter`]) and the [`AddCompletion`].
struct Cell {
    /// Lock: taken by both sides only to swap the state; the callback runs and the waker is
    /// woken after it is released.
    state: Mutex<State>,
}

/// Resolves once the append is durable (or failed). Await it, [`AddCompletion::wait`] for it, or
/// give it a callback with [`AddCompletion::then`].
pub struct AddCompletion {
    cell: Arc<Cell>,
}

/// A new pending completion and the waiter that completes it (its token is not used).
pub(crate) fn pending() -> (Arc<dyn AddWaiter>, AddCompletion) {
    let cell = Arc::new(Cell {
        state: Mutex::new(State::Waiting(None)),
    });
    (cell.clone(), AddCompletion { cell })
}

impl AddWaiter for Cell {
    fn added_through(&self, _token: u64, result: Result<()>) {
        settle(self, result);
    }
}

fn settle(cell: &Cell, result: Result<()>) {
    let mut st = cell.state.lock();
    match std::mem::replace(&mut *st, State::Taken) {
        State::Waiting(waker) => {
            *st = State::Done(result);
            drop(st);
            if let Some(w) = waker {
                w.wake();
            }
        }
        State::Then(f) => {
            drop(st);
            f(result);
        }
        // Completed once already (a managed ledger reports each append once): keep the first.
        done @ (State::Done(_) | State::Taken) => *st = done,
    }
}

impl AddCompletion {
    /// Runs `f` with the outcome: at once, on this thread, if the append already completed;
    /// otherwise later, on the thread that completes it (the journal flusher), which must not be
    /// kept waiting: `f` should only hand the outcome on.
    pub fn then(self, f: impl FnOnce(Result<()>) + Send + 'static) {
        let mut st = self.cell.state.lock();
        match std::mem::replace(&mut *st, State::Taken) {
            State::Done(r) => {
                drop(st);
                f(r);
            }
            State::Waiting(_) => *st = State::Then(Box::new(f)),
            // `then` consumes the handle and polling to completion takes the outcome, so a
            // second taker cannot exist.
            State::Then(_) | State::Taken => unreachable!("append outcome taken twice"),
        }
    }

    /// Blocks this thread until the append completes (for callers outside an async runtime).
    ///
    /// # Errors
    /// The append's failure, or [`LedgerError::Closed`] if the journal went away.
    pub fn wait(self) -> Result<()> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.then(move |r| {
            let _ = tx.send(r);
        });
        rx.recv().unwrap_or_else(|_| {
            Err(LedgerError::Closed {
                what: "journal".into(),
            })
        })
    }
}

impl Future for AddCompletion {
    type Output = Result<()>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<()>> {
        let mut st = self.cell.state.lock();
        match std::mem::replace(&mut *st, State::Taken) {
            State::Done(r) => Poll::Ready(r),
            State::Waiting(_) => {
                *st = State::Waiting(Some(cx.waker().clone()));
                Poll::Pending
            }
            State::Then(_) | State::Taken => unreachable!("append outcome taken twice"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn callback_runs_at_completion_or_at_once() {
        let (done, c) = pending();
        let (tx, rx) = std::sync::mpsc::channel();
        c.then(move |r| tx.send(r.is_ok()).unwrap());
        assert!(rx.try_recv().is_err(), "ran before completion");
        done.added_through(0, Ok(()));
        assert!(rx.try_recv().unwrap());

        let (done, c) = pending();
        done.added_through(0, Ok(()));
        let (tx, rx) = std::sync::mpsc::channel();
        c.then(move |r| tx.send(r.is_ok()).unwrap());
        assert!(
            rx.try_recv().unwrap(),
            "did not run at once when already complete"
        );
    }

    #[test]
    fn a_failure_reaches_a_blocked_waiter() {
        let (done, c) = pending();
        let t = std::thread::spawn(move || c.wait());
        std::thread::sleep(std::time::Duration::from_millis(20));
        done.added_through(0, Err(LedgerError::Closed { what: "x".into() }));
        assert!(matches!(t.join().unwrap(), Err(LedgerError::Closed { .. })));
    }

    #[tokio::test]
    async fn awaited_from_a_task() {
        let (done, c) = pending();
        let h = tokio::spawn(c);
        tokio::task::yield_now().await;
        done.added_through(0, Ok(()));
        assert!(h.await.unwrap().is_ok());
    }
}
