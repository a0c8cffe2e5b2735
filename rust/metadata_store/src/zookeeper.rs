//! The store on ZooKeeper through `zookeeper-client` (the maintained, runtime-agnostic client;
//! `zookeeper-async` and `tokio-zookeeper` are quiet ports of older designs): versioned reads,
//! create-if-absent and compare-and-set writes, parents created on first write (as Pulsar's
//! `ZKMetadataStore` does), ephemeral records tied to this broker's session, a persistent
//! recursive watch, and the session's loss reported once.

use std::time::Duration;

use zookeeper_client as zk;

use super::{RecordStat, StoreEvent};
use crate::error::{Result, StoreError};

/// A persistent, recursive watch on one subtree of the store (ZooKeeper 3.6+'s `addWatch`),
/// as Pulsar's metadata cache follows the store.
pub struct ZkWatch {
    /// The watch; `None` once a terminal session event came (the client panics if polled
    /// again after one).
    watcher: Option<zk::PersistentWatcher>,
}

impl ZkWatch {
    /// The next change below the watched path.
    pub async fn next(&mut self) -> StoreEvent {
        let Some(w) = self.watcher.as_mut() else {
            return std::future::pending().await;
        };
        let event = w.changed().await;
        if event.event_type == zk::EventType::Session {
            if event.session_state.is_terminated() {
                self.watcher = None;
            }
            return StoreEvent::Resync;
        }
        StoreEvent::Changed(event.path)
    }
}

/// One session with ZooKeeper. Cheap to clone (the client is shared); every clone is the same
/// session, which closes when the last clone is dropped.
#[derive(Clone)]
pub struct ZkMetadataStore {
    /// The session.
    zk: zk::Client,
}

fn meta(path: &str, e: zk::Error) -> StoreError {
    match e {
        zk::Error::BadVersion | zk::Error::NodeExists => StoreError::BadVersion {
            path: path.to_owned(),
        },
        zk::Error::SessionExpired | zk::Error::ClientClosed => StoreError::SessionLost,
        e => StoreError::Metadata {
            path: path.to_owned(),
            reason: e.to_string(),
        },
    }
}

impl ZkMetadataStore {
    /// Opens a session with `servers` (`host:port[,host:port]`, an optional chroot after the
    /// first `/`) that expires `session_timeout` after this broker stops answering.
    ///
    /// # Errors
    /// ZooKeeper cannot be reached.
    pub async fn connect(servers: &str, session_timeout: Duration) -> Result<ZkMetadataStore> {
        let zk = zk::Client::connector()
            .with_session_timeout(session_timeout)
            .with_connection_timeout(session_timeout.min(Duration::from_secs(10)))
            .connect(servers)
            .await
            .map_err(|e| meta(servers, e))?;
        Ok(ZkMetadataStore { zk })
    }

    /// This session's id (an ephemeral record's `ephemeral_owner` when this session made it).
    #[must_use]
    pub fn session_id(&self) -> i64 {
        self.zk.session_id().0
    }

    /// The negotiated session timeout.
    #[must_use]
    pub fn session_timeout(&self) -> Duration {
        self.zk.session_timeout()
    }

    /// Resolves once the session is lost: expired, closed, refused, or disconnected for longer
    /// than its timeout (by then the ensemble has expired it, and this broker must act as if
    /// it had, as Pulsar's `ZKSessionWatcher` does).
    pub async fn lost(&self) {
        let mut watcher = self.zk.state_watcher();
        let timeout = self.zk.session_timeout();
        let mut state = self.zk.state();
        loop {
            if state.is_terminated() {
                return;
            }
            if state == zk::SessionState::Disconnected {
                match tokio::time::timeout(timeout, watcher.changed()).await {
                    Ok(s) => state = s,
                    Err(_) => return,
                }
            } else {
                state = watcher.changed().await;
            }
        }
    }

    /// Reads a record.
    ///
    /// # Errors
    /// Store failures.
    pub async fn get(&self, path: &str) -> Result<Option<(Vec<u8>, RecordStat)>> {
        match self.zk.get_data(path).await {
            Ok((data, stat)) => Ok(Some((
                data,
                RecordStat {
                    version: stat.version,
                    ephemeral_owner: stat.ephemeral_owner,
                },
            ))),
            Err(zk::Error::NoNode) => Ok(None),
            Err(e) => Err(meta(path, e)),
        }
    }

    /// Creates a record that must not exist yet (its parents are created as needed);
    /// `ephemeral` ties it to this session. An existing record is [`StoreError::BadVersion`].
    ///
    /// # Errors
    /// As above; store failures.
    pub async fn create(&self, path: &str, value: &[u8], ephemeral: bool) -> Result<()> {
        let mode = if ephemeral {
            zk::CreateMode::Ephemeral
        } else {
            zk::CreateMode::Persistent
        };
        let options = mode.with_acls(zk::Acls::anyone_all());
        match self.zk.create(path, value, &options).await {
            Ok(_) => return Ok(()),
            Err(zk::Error::NoNode) => {}
            Err(e) => return Err(meta(path, e)),
        }
        if let Some(parent) = path
            .rfind('/')
            .map(|i| &path[..i])
            .filter(|p| !p.is_empty())
        {
            let parents = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
            match self.zk.mkdir(parent, &parents).await {
                Ok(()) | Err(zk::Error::NodeExists) => {}
                Err(e) => return Err(meta(parent, e)),
            }
        }
        self.zk
            .create(path, value, &options)
            .await
            .map(|_| ())
            .map_err(|e| meta(path, e))
    }

    /// Replaces a record at version `expected` (`None`: whatever its version); its new version.
    ///
    /// # Errors
    /// [`StoreError::BadVersion`] when it changed meanwhile; a missing record; store failures.
    pub async fn set(&self, path: &str, value: &[u8], expected: Option<i32>) -> Result<i32> {
        self.zk
            .set_data(path, value, expected)
            .await
            .map(|s| s.version)
            .map_err(|e| meta(path, e))
    }

    /// Deletes a record at version `expected` (`None`: whatever its version); a missing record
    /// is not an error.
    ///
    /// # Errors
    /// [`StoreError::BadVersion`]; store failures.
    pub async fn delete(&self, path: &str, expected: Option<i32>) -> Result<()> {
        match self.zk.delete(path, expected).await {
            Ok(()) | Err(zk::Error::NoNode) => Ok(()),
            Err(e) => Err(meta(path, e)),
        }
    }

    /// Watches every record below `path` (created, changed, deleted) until the session ends.
    ///
    /// # Errors
    /// Store failures.
    pub async fn watch(&self, path: &str) -> Result<ZkWatch> {
        let watcher = self
            .zk
            .watch(path, zk::AddWatchMode::PersistentRecursive)
            .await
            .map_err(|e| meta(path, e))?;
        Ok(ZkWatch {
            watcher: Some(watcher),
        })
    }

    /// Names of the records directly below `path` (none when it does not exist).
    ///
    /// # Errors
    /// Store failures.
    pub async fn children(&self, path: &str) -> Result<Vec<String>> {
        match self.zk.list_children(path).await {
            Ok(c) => Ok(c),
            Err(zk::Error::NoNode) => Ok(Vec::new()),
            Err(e) => Err(meta(path, e)),
        }
    }
}
