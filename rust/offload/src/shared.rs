//! What an offloader and the offloaded ledgers it opened share ([`Core`]: the runtime the S3
//! requests run on, the client, the configuration), and how an S3 failure reaches the managed
//! ledger ([`offload_error`]).

use std::collections::BTreeMap;
use std::future::Future;

use pulsar_rs_ledger::{LedgerError, Result};

use crate::config::OffloadConfig;
use crate::s3::{S3Client, S3Error};

/// What the offloader and the ledgers it opened share: the runtime and the client.
pub(crate) struct Core {
    /// User metadata written on every object unless the call's own names it (the broker's
    /// cluster name and version); immutable.
    pub(crate) base_metadata: BTreeMap<String, String>,
    /// The runtime the S3 requests run on: shut down (in the background) with the last handle.
    pub(crate) runtime: Option<tokio::runtime::Runtime>,
    /// A handle to `runtime`, for spawning; immutable.
    pub(crate) handle: tokio::runtime::Handle,
    /// The S3 client (cheap clones share its connections); immutable.
    pub(crate) client: S3Client,
    /// The driver configuration; immutable.
    pub(crate) config: OffloadConfig,
}

impl Core {
    /// Runs `fut` on the offloader's runtime and waits for it on this thread, which must not be
    /// one of that runtime's workers (callers are the managed ledger's blocking threads).
    pub(crate) fn block<T: Send + 'static>(
        &self,
        fut: impl Future<Output = Result<T>> + Send + 'static,
    ) -> Result<T> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.handle.spawn(async move {
            let _ = tx.send(fut.await);
        });
        rx.recv().unwrap_or_else(|_| {
            Err(LedgerError::Offload {
                context: "the offloader's runtime stopped".into(),
            })
        })
    }
}

impl Drop for Core {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            // Never blocks, so dropping the last reference on an async thread is safe.
            rt.shutdown_background();
        }
    }
}

/// An S3 failure as the managed ledger sees it.
pub(crate) fn offload_error(what: &str, e: &S3Error) -> LedgerError {
    LedgerError::Offload {
        context: format!("{what}: {e}"),
    }
}
