//! One TCP connection to one bookie, speaking v2, with requests pipelined: any number may be in
//! flight; each response is matched to its request by (op, ledger id, entry id), first-in first-out
//! among equal keys, as `PerChannelBookieClient` matches v2 completions.
//!
//! Two tasks own the socket: the writer task owns the write half and the request queue, the reader
//! task owns the read half. They share only the table of pending completions.

use std::collections::{HashMap, VecDeque};
use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};

use crate::error::{BkError, Result};
use crate::protocol::{decode_response, Request, Response, ResponseKey};

type Completion = oneshot::Sender<Result<Response>>;

/// Completions waiting for their response, and whether the connection has died.
#[derive(Default)]
struct Pending {
    /// Per key, the completions in the order their requests were written.
    waiting: HashMap<ResponseKey, VecDeque<Completion>>,
    /// Set once the connection failed; later requests fail at once.
    failed: Option<String>,
}

/// A live connection to one bookie. Cheap to clone; dropping the last clone ends the writer task,
/// which closes the socket.
#[derive(Clone)]
pub struct BookieConnection {
    /// The bookie id (`host:port`). Immutable.
    bookie: Arc<str>,
    /// Queue to the writer task; the writer task owns the receiving end and the socket's write half.
    tx: mpsc::UnboundedSender<(Request, Completion)>,
    /// Completions shared by the writer task (inserts before writing) and the reader task (removes on
    /// each response, drains on failure).
    pending: Arc<Mutex<Pending>>,
}

impl BookieConnection {
    /// Connects to bookie `bookie` at `address` (`host:port`).
    pub async fn connect(
        bookie: &str,
        address: &str,
        timeout: Duration,
    ) -> Result<BookieConnection> {
        let io_err = |source| BkError::BookieIo {
            bookie: bookie.to_string(),
            source,
        };
        let stream = tokio::time::timeout(timeout, TcpStream::connect(address))
            .await
            .map_err(|_| BkError::Timeout {
                bookie: bookie.to_string(),
            })?
            .map_err(io_err)?;
        stream.set_nodelay(true).map_err(io_err)?;
        let (mut rd, mut wr) = stream.into_split();
        let pending = Arc::new(Mutex::new(Pending::default()));
        let (tx, mut rx) = mpsc::unbounded_channel::<(Request, Completion)>();
        let bookie: Arc<str> = Arc::from(bookie);

        let wpending = pending.clone();
        tokio::spawn(async move {
            let mut out = BytesMut::new();
            while let Some(first) = rx.recv().await {
                // One yield before draining lets the requests other tasks are about to queue
                // (the rest of a burst of adds) join this write: one send(2) for many requests,
                // as Netty's flush consolidation does for BookKeeper's Java client. Idle, it
                // costs one extra poll.
                tokio::task::yield_now().await;
                let mut batch = vec![first];
                while let Ok(more) = rx.try_recv() {
                    batch.push(more);
                }
                {
                    // Lock: registering completions; held for the loop only, never across the write.
                    let mut p = wpending.lock().unwrap_or_else(|e| e.into_inner());
                    for (req, done) in batch {
                        if let Some(why) = &p.failed {
                            let _ = done.send(Err(BkError::Protocol(why.clone())));
                            continue;
                        }
                        req.encode(&mut out);
                        p.waiting.entry(req.key()).or_default().push_back(done);
                    }
                }
                if out.is_empty() {
                    continue;
                }
                if let Err(e) = wr.write_all(&out).await {
                    fail_all(&wpending, &format!("write failed: {e}"));
                    return;
                }
                out.clear();
            }
        });

        let rpending = pending.clone();
        let rbookie = bookie.clone();
        tokio::spawn(async move {
            let mut buf = BytesMut::with_capacity(64 * 1024);
            loop {
                loop {
                    match decode_response(&mut buf) {
                        Ok(Some(resp)) => {
                            // Lock: taking one completion off the table; not held across an await.
                            let done = {
                                let mut p = rpending.lock().unwrap_or_else(|e| e.into_inner());
                                let q = p.waiting.get_mut(&resp.key);
                                let done = q.and_then(|q| q.pop_front());
                                if p.waiting.get(&resp.key).is_some_and(|q| q.is_empty()) {
                                    p.waiting.remove(&resp.key);
                                }
                                done
                            };
                            match done {
                                Some(done) => {
                                    let _ = done.send(Ok(resp));
                                }
                                None => {
                                    tracing::warn!(bookie = %rbookie, key = ?resp.key, "unmatched response")
                                }
                            }
                        }
                        Ok(None) => break,
                        Err(e) => {
                            fail_all(&rpending, &e.to_string());
                            return;
                        }
                    }
                }
                match rd.read_buf(&mut buf).await {
                    Ok(0) => {
                        fail_all(&rpending, "connection closed by bookie");
                        return;
                    }
                    Ok(_) => {}
                    Err(e) => {
                        fail_all(&rpending, &format!("read failed: {e}"));
                        return;
                    }
                }
            }
        });
        Ok(BookieConnection {
            bookie,
            tx,
            pending,
        })
    }

    /// The bookie this connects to.
    pub fn bookie(&self) -> &str {
        &self.bookie
    }

    /// Whether the connection has failed (a new one is needed).
    pub fn is_failed(&self) -> bool {
        // Lock: reading one flag.
        self.tx.is_closed()
            || self
                .pending
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .failed
                .is_some()
    }

    /// Sends a request and waits for its response (rc not yet interpreted).
    pub async fn call(&self, req: Request, timeout: Duration) -> Result<Response> {
        let (done, wait) = oneshot::channel();
        let gone = || BkError::BookieIo {
            bookie: self.bookie.to_string(),
            source: io::Error::new(io::ErrorKind::BrokenPipe, "connection closed"),
        };
        self.tx.send((req, done)).map_err(|_| gone())?;
        match tokio::time::timeout(timeout, wait).await {
            Err(_) => Err(BkError::Timeout {
                bookie: self.bookie.to_string(),
            }),
            Ok(Err(_)) => Err(gone()),
            Ok(Ok(Err(BkError::Protocol(why)))) => Err(BkError::BookieIo {
                bookie: self.bookie.to_string(),
                source: io::Error::new(io::ErrorKind::ConnectionReset, why),
            }),
            Ok(Ok(r)) => r,
        }
    }
}

/// Marks the connection failed and fails every waiting request.
fn fail_all(pending: &Mutex<Pending>, why: &str) {
    // Lock: taking the whole table; the completions are sent after the lock is released.
    let drained: Vec<Completion> = {
        let mut p = pending.lock().unwrap_or_else(|e| e.into_inner());
        p.failed = Some(why.to_string());
        p.waiting.drain().flat_map(|(_, q)| q).collect()
    };
    for done in drained {
        let _ = done.send(Err(BkError::Protocol(why.to_string())));
    }
}
