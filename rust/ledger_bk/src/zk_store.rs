//! [`ZkVersionedStore`]: the seam's versioned records as ZooKeeper znodes, the version being the
//! znode's `Stat.version`, so a write made with a stale version fails with `BadVersion` exactly as
//! Pulsar's metadata store reports it. Parent znodes are created (empty) on first write, as
//! Pulsar's `ZKMetadataStore` does.

use pulsar_rs_ledger::seam::{BoxFut, Version, Versioned, VersionedStore};
use pulsar_rs_ledger::{LedgerError, Result};
use zookeeper_client as zk;

use crate::errors::from_zk;

/// Records in ZooKeeper.
pub struct ZkVersionedStore {
    /// The session; the client is cheap to clone and safe to share.
    zk: zk::Client,
}

fn persistent() -> zk::CreateOptions<'static> {
    zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all())
}

fn version(v: Version, path: &str) -> Result<i32> {
    i32::try_from(v).map_err(|_| LedgerError::BadVersion {
        key: path.to_owned(),
    })
}

impl ZkVersionedStore {
    /// Connects to `servers` (`host:port[,host:port]`).
    ///
    /// # Errors
    /// ZooKeeper cannot be reached.
    pub async fn connect(servers: &str) -> Result<ZkVersionedStore> {
        let zk = zk::Client::connector()
            .with_session_timeout(std::time::Duration::from_secs(10))
            .connect(servers)
            .await
            .map_err(|e| from_zk(servers, e))?;
        Ok(ZkVersionedStore { zk })
    }
}

impl VersionedStore for ZkVersionedStore {
    fn get(&self, path: &str) -> BoxFut<'_, Result<Option<Versioned>>> {
        let path = path.to_owned();
        Box::pin(async move {
            match self.zk.get_data(&path).await {
                Ok((data, stat)) => Ok(Some((data, Version::from(stat.version)))),
                Err(zk::Error::NoNode) => Ok(None),
                Err(e) => Err(from_zk(&path, e)),
            }
        })
    }

    fn put(
        &self,
        path: &str,
        value: Vec<u8>,
        expected: Option<Version>,
    ) -> BoxFut<'_, Result<Version>> {
        let path = path.to_owned();
        Box::pin(async move {
            if let Some(v) = expected {
                let stat = self
                    .zk
                    .set_data(&path, &value, Some(version(v, &path)?))
                    .await
                    .map_err(|e| from_zk(&path, e))?;
                return Ok(Version::from(stat.version));
            }
            let created = match self.zk.create(&path, &value, &persistent()).await {
                Err(zk::Error::NoNode) => {
                    if let Some(parent) = path
                        .rfind('/')
                        .map(|i| &path[..i])
                        .filter(|p| !p.is_empty())
                    {
                        match self.zk.mkdir(parent, &persistent()).await {
                            Ok(()) | Err(zk::Error::NodeExists) => {}
                            Err(e) => return Err(from_zk(parent, e)),
                        }
                    }
                    self.zk.create(&path, &value, &persistent()).await
                }
                r => r,
            };
            let (stat, _) = created.map_err(|e| from_zk(&path, e))?;
            Ok(Version::from(stat.version))
        })
    }

    fn delete(&self, path: &str, expected: Option<Version>) -> BoxFut<'_, Result<()>> {
        let path = path.to_owned();
        Box::pin(async move {
            let v = expected.map(|v| version(v, &path)).transpose()?;
            match self.zk.delete(&path, v).await {
                Ok(()) | Err(zk::Error::NoNode) => Ok(()),
                Err(e) => Err(from_zk(&path, e)),
            }
        })
    }

    fn children(&self, path: &str) -> BoxFut<'_, Result<Vec<String>>> {
        let path = path.to_owned();
        Box::pin(async move {
            match self.zk.list_children(&path).await {
                Ok(c) => Ok(c),
                Err(zk::Error::NoNode) => Ok(Vec::new()),
                Err(e) => Err(from_zk(&path, e)),
            }
        })
    }
}
