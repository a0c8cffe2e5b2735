//! Typed bookie operations (add, read, fencing read) over a cache of one connection per bookie;
//! return codes become [`BkError`]s here.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;

use crate::connection::BookieConnection;
use crate::digest::MASTER_KEY_LENGTH;
use crate::error::{rc, BkError, Result};
use crate::protocol::Request;
use crate::zk_store::ZkStore;

/// Connections to bookies, made on first use and replaced when they fail.
#[derive(Clone)]
pub struct BookieClient {
    /// Bookie id to its connection. Shared by every ledger handle of one client; entries are replaced
    /// by whoever finds them failed.
    conns: Arc<Mutex<HashMap<String, BookieConnection>>>,
    /// Bookie id to `host:port`, filled on first use from the registration and forgotten when a
    /// connect fails. Shared like `conns`.
    addresses: Arc<Mutex<HashMap<String, String>>>,
    /// Where bookie ids are resolved; None treats every id as `host:port`. Immutable.
    store: Option<ZkStore>,
    /// Per-request timeout (Pulsar's `bookkeeperClientTimeoutInSeconds`). Immutable.
    timeout: Duration,
}

impl BookieClient {
    /// A client that resolves bookie ids through `store` (None: ids are `host:port`).
    pub fn new(store: Option<ZkStore>, timeout: Duration) -> BookieClient {
        BookieClient {
            conns: Arc::default(),
            addresses: Arc::default(),
            store,
            timeout,
        }
    }

    async fn address(&self, bookie: &str) -> Result<String> {
        let Some(store) = &self.store else {
            return Ok(bookie.to_string());
        };
        // Lock: cache lookup only.
        if let Some(a) = self
            .addresses
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(bookie)
        {
            return Ok(a.clone());
        }
        let a = store.resolve_bookie(bookie).await?;
        // Lock: cache insert only.
        self.addresses
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(bookie.to_string(), a.clone());
        Ok(a)
    }

    async fn conn(&self, bookie: &str) -> Result<BookieConnection> {
        {
            // Lock: cache lookup only; released before connecting.
            let conns = self.conns.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(c) = conns.get(bookie) {
                if !c.is_failed() {
                    return Ok(c.clone());
                }
            }
        }
        let addr = self.address(bookie).await?;
        let c = match BookieConnection::connect(bookie, &addr, self.timeout).await {
            Ok(c) => c,
            Err(e) => {
                // Lock: forgetting the address, so that a bookie back at a new one is found again.
                self.addresses
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(bookie);
                return Err(e);
            }
        };
        // Lock: cache insert only. A racing connect may overwrite ours; both work.
        self.conns
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(bookie.to_string(), c.clone());
        Ok(c)
    }

    /// Adds a stored (digest-framed) entry; `recovery` sets RECOVERY_ADD, which a fenced bookie
    /// still accepts.
    pub async fn add(
        &self,
        bookie: &str,
        master_key: [u8; MASTER_KEY_LENGTH],
        ledger_id: i64,
        entry_id: i64,
        stored: Bytes,
        recovery: bool,
    ) -> Result<()> {
        let flags = if recovery {
            crate::protocol::FLAG_RECOVERY_ADD
        } else {
            crate::protocol::FLAG_NONE
        };
        let conn = self.conn(bookie).await?;
        let resp = conn
            .call(
                Request::Add {
                    flags,
                    master_key,
                    ledger_id,
                    entry_id,
                    stored,
                },
                self.timeout,
            )
            .await?;
        if resp.rc == rc::EOK {
            Ok(())
        } else {
            Err(BkError::from_rc(bookie, resp.rc, ledger_id, entry_id))
        }
    }

    /// Reads the stored bytes of one entry (entry -1: the last entry the bookie holds). With
    /// `fence`, the bookie first fences the ledger against normal adds.
    pub async fn read(
        &self,
        bookie: &str,
        ledger_id: i64,
        entry_id: i64,
        fence: Option<[u8; MASTER_KEY_LENGTH]>,
    ) -> Result<Bytes> {
        let conn = self.conn(bookie).await?;
        let resp = conn
            .call(
                Request::Read {
                    ledger_id,
                    entry_id,
                    fence,
                },
                self.timeout,
            )
            .await?;
        if resp.rc == rc::EOK {
            Ok(resp.body)
        } else {
            Err(BkError::from_rc(bookie, resp.rc, ledger_id, entry_id))
        }
    }
}
