//! A queue of one connection (its outbound frames, its finished offloaded work) whose memory
//! follows its traffic: many senders, one consumer task.
//!
//! Tokio's unbounded channel allocates a first block of 32 slots when it is made, and keeps a
//! block for the channel's life: for the writer's queue of ~96-byte items about 3 KiB on every
//! connection, idle or not, which made an idle connection cost more than Apache Pulsar's
//! (benches/RESULTS.md, the hostile soak's idle phase). Here the items sit in a `VecDeque` that
//! allocates on the first push, grows with what is queued, and is given back by
//! [`Queue::shrink`] when the connection idles. The consumer takes everything queued in one
//! lock ([`Queue::take_all`]), so a burst costs it one lock, not one per item.

use std::collections::VecDeque;

use parking_lot::Mutex;
use tokio::sync::Notify;

/// The queue; shared by its senders and its one consumer (each connection holds it in an `Arc`).
pub struct Queue<T> {
    /// What is queued and whether the consumer is gone. Locked by a sender for one push and by
    /// the consumer for one swap or drain (parking_lot: short, never held across an `.await`
    /// or I/O).
    state: Mutex<State<T>>,
    /// Wakes the consumer after a push into an empty queue. Notify keeps a permit when the
    /// consumer is not waiting, so a push between its look and its wait is not missed.
    ready: Notify,
}

struct State<T> {
    /// The items, oldest first.
    items: VecDeque<T>,
    /// The consumer is gone: pushes are refused.
    closed: bool,
}

impl<T> Default for Queue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Queue<T> {
    /// An empty, open queue; nothing is allocated until the first push.
    #[must_use]
    pub fn new() -> Self {
        Queue {
            state: Mutex::new(State {
                items: VecDeque::new(),
                closed: false,
            }),
            ready: Notify::new(),
        }
    }

    /// Queues `item` behind the others.
    ///
    /// # Errors
    /// The item back when the consumer is gone ([`Queue::close`]).
    pub fn push(&self, item: T) -> Result<(), T> {
        let mut st = self.state.lock();
        if st.closed {
            return Err(item);
        }
        let was_empty = st.items.is_empty();
        st.items.push_back(item);
        drop(st);
        // Only the first item after the consumer found the queue empty needs a wake-up: until
        // it finds the queue empty again it takes what follows without waiting.
        if was_empty {
            self.ready.notify_one();
        }
        Ok(())
    }

    /// Whether the consumer is gone.
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.state.lock().closed
    }

    /// Whether nothing is queued.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.state.lock().items.is_empty()
    }

    /// Moves everything queued to the back of `into`, without waiting; false when nothing was.
    pub fn try_take_all(&self, into: &mut VecDeque<T>) -> bool {
        let mut st = self.state.lock();
        if st.items.is_empty() {
            return false;
        }
        if into.is_empty() {
            // The two buffers trade places: no item is moved one by one.
            std::mem::swap(&mut st.items, into);
        } else {
            into.extend(st.items.drain(..));
        }
        true
    }

    /// Waits until something is queued and moves it all to the back of `into`: true, or false
    /// once the queue is closed and empty. One consumer only.
    pub async fn take_all(&self, into: &mut VecDeque<T>) -> bool {
        loop {
            if self.try_take_all(into) {
                return true;
            }
            if self.is_closed() {
                return false;
            }
            self.ready.notified().await;
        }
    }

    /// Refuses every later push and returns what is still queued (the consumer is going).
    pub fn close(&self) -> VecDeque<T> {
        let mut st = self.state.lock();
        st.closed = true;
        let rest = std::mem::take(&mut st.items);
        drop(st);
        // A consumer waiting in `take_all` (elsewhere than the closer) sees the end.
        self.ready.notify_one();
        rest
    }

    /// Gives the queue's memory back if nothing is queued (the connection idles).
    pub fn shrink(&self) {
        let mut st = self.state.lock();
        if st.items.is_empty() {
            st.items = VecDeque::new();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;

    #[test]
    fn allocates_with_the_first_push_and_gives_it_back_when_empty() {
        let q = Queue::new();
        assert_eq!(q.state.lock().items.capacity(), 0, "nothing before a push");
        for i in 0..100 {
            q.push(i).unwrap();
        }
        q.shrink();
        assert!(
            q.state.lock().items.capacity() >= 100,
            "kept while items are queued"
        );
        let mut taken = VecDeque::new();
        assert!(q.try_take_all(&mut taken));
        assert_eq!(taken, (0..100).collect::<VecDeque<_>>());
        q.shrink();
        assert_eq!(q.state.lock().items.capacity(), 0, "given back once empty");
    }

    #[test]
    fn keeps_order_across_takes_and_refuses_pushes_once_closed() {
        let q = Queue::new();
        let mut taken = VecDeque::from([0]);
        q.push(1).unwrap();
        q.push(2).unwrap();
        assert!(
            q.try_take_all(&mut taken),
            "appended behind what the consumer holds"
        );
        assert_eq!(taken, VecDeque::from([0, 1, 2]));
        assert!(!q.try_take_all(&mut taken));
        q.push(3).unwrap();
        assert_eq!(q.close(), VecDeque::from([3]));
        assert!(q.is_closed());
        assert_eq!(q.push(4), Err(4));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_consumer_gets_every_item_of_many_senders_in_each_senders_order() {
        let q = Arc::new(Queue::new());
        let senders: Vec<_> = (0..4u64)
            .map(|s| {
                let q = Arc::clone(&q);
                std::thread::spawn(move || {
                    for i in 0..20_000u64 {
                        q.push((s, i)).unwrap();
                        if i % 1000 == 0 {
                            std::thread::yield_now();
                        }
                    }
                })
            })
            .collect();
        let consumer = {
            let q = Arc::clone(&q);
            tokio::spawn(async move {
                let mut next = [0u64; 4];
                let mut taken = VecDeque::new();
                while next.iter().sum::<u64>() < 80_000 {
                    assert!(q.take_all(&mut taken).await);
                    for (s, i) in taken.drain(..) {
                        assert_eq!(i, next[s as usize], "sender {s} out of order");
                        next[s as usize] += 1;
                    }
                }
            })
        };
        for s in senders {
            s.join().unwrap();
        }
        tokio::time::timeout(Duration::from_secs(30), consumer)
            .await
            .expect("the consumer was not woken for every item")
            .unwrap();
    }

    #[tokio::test]
    async fn a_waiting_consumer_ends_when_the_queue_closes() {
        let q = Arc::new(Queue::<u8>::new());
        let waiting = {
            let q = Arc::clone(&q);
            tokio::spawn(async move {
                let mut taken = VecDeque::new();
                q.take_all(&mut taken).await
            })
        };
        tokio::task::yield_now().await;
        q.close();
        assert!(!tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .unwrap()
            .unwrap());
    }
}
