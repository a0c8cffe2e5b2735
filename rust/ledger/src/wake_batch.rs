//! Wake-ups batched per journal round.
//!
//! When a durable round completes, the journal flusher runs its completions one after another:
//! each hands a receipt to a connection's writer, and the ledger tells waiting dispatchers that
//! entries are readable. Each of those wakes a task on the connection threads. Woken one by one,
//! a task often runs (on another core) and parks again before the next completion wakes it, so a
//! round of 60 SENDs cost its connection thread two or three wake-ups, each a context switch and
//! an `epoll_wait` (the costliest part of a small message's CPU on this VM).
//!
//! A task polled through [`Batched`] is woken through a [`Relay`]: a wake-up that happens on a
//! thread inside [`batch`] (the flusher's completion pass) is held until the pass ends, then
//! delivered once, however many completions asked for it; a wake-up anywhere else is delivered
//! at once. Nothing but the moment of the wake-up changes: the data (receipts, entries) is handed
//! over as before, and the pass takes microseconds.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use parking_lot::Mutex;

thread_local! {
    /// Relays whose wake-up is held until the current [`batch`] ends; `None` outside one.
    static HELD: RefCell<Option<Vec<Arc<Relay>>>> = const { RefCell::new(None) };
}

/// Runs `f` with wake-ups through [`Relay`]s held, then delivers each held one once. Nested
/// calls join the outer batch.
pub fn batch<R>(f: impl FnOnce() -> R) -> R {
    let outer = HELD.with(|h| {
        let mut h = h.borrow_mut();
        if h.is_some() {
            true
        } else {
            *h = Some(Vec::new());
            false
        }
    });
    if outer {
        return f();
    }
    /// Delivers the held wake-ups even if `f` unwinds, so no task is left asleep.
    struct Deliver;
    impl Drop for Deliver {
        fn drop(&mut self) {
            let held = HELD.with(|h| h.borrow_mut().take()).unwrap_or_default();
            for relay in held {
                relay.deliver();
            }
        }
    }
    let _deliver = Deliver;
    f()
}

/// The waker a [`Batched`] task is polled with: forwards to the task's own waker, holding the
/// wake-up while the waking thread is inside a [`batch`].
#[derive(Default)]
pub struct Relay {
    /// The task's waker as of its last poll. Lock: taken by the poll to replace it and by a
    /// wake-up to clone it; never held while waking.
    task: Mutex<Option<Waker>>,
    /// Held in some thread's batch already: another wake-up meanwhile adds nothing, since the
    /// delivery clears this before it wakes the task. Relaxed: only this one variable's order
    /// matters (a wake-up that sees it set precedes the clearing, so the delivery after the
    /// clearing covers it); the waker itself is read under `task`'s lock.
    held: AtomicBool,
}

impl Relay {
    fn deliver(&self) {
        // Relaxed: see `held`.
        self.held.store(false, Ordering::Relaxed);
        let waker = self.task.lock().clone();
        if let Some(w) = waker {
            w.wake();
        }
    }

    fn register(&self, waker: &Waker) {
        let mut task = self.task.lock();
        if !task.as_ref().is_some_and(|w| w.will_wake(waker)) {
            *task = Some(waker.clone());
        }
    }
}

impl Wake for Relay {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let held = HELD.with(|h| {
            let mut h = h.borrow_mut();
            let Some(list) = h.as_mut() else {
                return false;
            };
            // Relaxed: see `held`.
            if !self.held.swap(true, Ordering::Relaxed) {
                list.push(Arc::clone(self));
            }
            true
        });
        if !held {
            self.deliver();
        }
    }
}

/// A future whose wake-ups go through a [`Relay`] (see the module docs).
pub struct Batched<F> {
    fut: Pin<Box<F>>,
    relay: Arc<Relay>,
    waker: Waker,
}

impl<F: Future> Batched<F> {
    /// Wraps `fut`.
    pub fn new(fut: F) -> Self {
        let relay = Arc::new(Relay::default());
        Batched {
            fut: Box::pin(fut),
            waker: Waker::from(Arc::clone(&relay)),
            relay,
        }
    }
}

impl<F: Future> Future for Batched<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.get_mut();
        this.relay.register(cx.waker());
        this.fut
            .as_mut()
            .poll(&mut Context::from_waker(&this.waker))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// A task waker counting its wake-ups.
    #[derive(Default)]
    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// A future that stays pending and hands out the waker it was polled with.
    struct Pending(Arc<Mutex<Option<Waker>>>);

    impl Future for Pending {
        type Output = ();
        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            *self.0.lock() = Some(cx.waker().clone());
            Poll::Pending
        }
    }

    fn polled_once() -> (Arc<Count>, Waker, Batched<Pending>) {
        let count = Arc::new(Count::default());
        let task = Waker::from(Arc::clone(&count));
        let slot = Arc::new(Mutex::new(None));
        let mut fut = Batched::new(Pending(Arc::clone(&slot)));
        assert!(Pin::new(&mut fut)
            .poll(&mut Context::from_waker(&task))
            .is_pending());
        let inner = slot.lock().clone().unwrap();
        (count, inner, fut)
    }

    #[test]
    fn wake_ups_inside_a_batch_are_delivered_once_at_its_end() {
        let (count, inner, _fut) = polled_once();
        batch(|| {
            for _ in 0..60 {
                inner.wake_by_ref();
            }
            assert_eq!(count.0.load(Ordering::SeqCst), 0, "held until the end");
        });
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        // The next batch holds it again.
        batch(|| inner.wake_by_ref());
        assert_eq!(count.0.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn wake_ups_outside_a_batch_are_delivered_at_once() {
        let (count, inner, _fut) = polled_once();
        inner.wake_by_ref();
        inner.wake_by_ref();
        assert_eq!(count.0.load(Ordering::SeqCst), 2);
        // Another thread's batch does not hold this thread's wake-ups.
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let (started_tx, started) = std::sync::mpsc::channel();
        let t = std::thread::spawn(move || {
            batch(|| {
                started_tx.send(()).unwrap();
                rx.recv().unwrap();
            });
        });
        started.recv().unwrap();
        inner.wake_by_ref();
        assert_eq!(count.0.load(Ordering::SeqCst), 3);
        tx.send(()).unwrap();
        t.join().unwrap();
    }

    #[test]
    fn a_batch_that_unwinds_still_delivers() {
        let (count, inner, _fut) = polled_once();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            batch(|| {
                inner.wake_by_ref();
                panic!("a completion failed");
            })
        }));
        assert!(r.is_err());
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn the_latest_task_waker_is_woken() {
        let (first, inner, mut fut) = polled_once();
        let second = Arc::new(Count::default());
        let task = Waker::from(Arc::clone(&second));
        assert!(Pin::new(&mut fut)
            .poll(&mut Context::from_waker(&task))
            .is_pending());
        batch(|| inner.wake_by_ref());
        assert_eq!(first.0.load(Ordering::SeqCst), 0);
        assert_eq!(second.0.load(Ordering::SeqCst), 1);
    }
}
