//! Storage work of a command off the runtime threads.
//!
//! A command that may touch the disk (topic load, cursor creation, schema storage, seek by
//! time) runs its storage part on Tokio's blocking pool, as Pulsar's handlers return futures.
//! The connection task keeps reading and serving other commands meanwhile; when the work is
//! done, its result comes back through the connection's completion queue and is applied on
//! the connection task (which owns the producer and consumer maps). If the connection is gone
//! by then, the result is abandoned instead, so whatever the work attached (a producer, a
//! consumer) is detached again.

use std::sync::Arc;

use pulsar_rs_proto::BaseCommand;

use super::{frame, Connection};

/// A finished piece of work, waiting to be applied on its connection.
pub(super) trait Completion: Send {
    /// Applies the result on the connection task.
    fn apply(self: Box<Self>, conn: &mut Connection);
    /// The connection closed first: undoes what the work attached.
    fn abandon(self: Box<Self>);
}

/// The completion queue of one connection (allocating only while work comes back).
pub(super) type Completions = Arc<crate::queue::Queue<Box<dyn Completion>>>;

struct Done<T, A, U> {
    value: T,
    apply: A,
    undo: U,
}

impl<T, A, U> Completion for Done<T, A, U>
where
    T: Send,
    A: FnOnce(&mut Connection, T) + Send,
    U: FnOnce(T) + Send,
{
    fn apply(self: Box<Self>, conn: &mut Connection) {
        (self.apply)(conn, self.value);
    }
    fn abandon(self: Box<Self>) {
        (self.undo)(self.value);
    }
}

impl Connection {
    /// Runs `work` on the blocking pool, then `apply` on this connection's task with its
    /// result — or `undo` with it if the connection closed meanwhile.
    pub(super) fn offload<T, W, A, U>(&self, work: W, apply: A, undo: U)
    where
        T: Send + 'static,
        W: FnOnce() -> T + Send + 'static,
        A: FnOnce(&mut Connection, T) + Send + 'static,
        U: FnOnce(T) + Send + 'static,
    {
        let completions = Arc::clone(&self.completions);
        tokio::task::spawn_blocking(move || {
            let done: Box<dyn Completion> = Box::new(Done {
                value: work(),
                apply,
                undo,
            });
            if let Err(done) = completions.push(done) {
                done.abandon();
            }
        });
    }

    /// Runs `work` on the blocking pool and queues the reply it returns: for requests whose
    /// answer changes nothing on the connection.
    pub(super) fn offload_reply<W>(&self, work: W)
    where
        W: FnOnce() -> BaseCommand + Send + 'static,
    {
        let tx = self.tx.clone();
        tokio::task::spawn_blocking(move || {
            let _ = tx.send(frame(&work()));
        });
    }
}
