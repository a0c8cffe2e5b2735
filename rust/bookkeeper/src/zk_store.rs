//! BookKeeper's metadata on ZooKeeper, as the `zk+hierarchical` metadata driver lays it out:
//! bookies registered under `{root}/available` (read-only ones under `{root}/available/readonly`),
//! ledger ids from EPHEMERAL_SEQUENTIAL nodes `{root}/idgen/ID-` (`ZkLedgerIdGenerator`), and ledger
//! metadata at the hierarchical path, written with compare-and-set on the znode version; and the
//! format of a new cluster's metadata (`BookKeeperAdmin.format`).

use zookeeper_client as zk;

use crate::bookie_info::bookie_rpc_address;
use crate::error::{BkError, Result};
use crate::metadata::{ledger_path, LedgerMetadata};

/// A version of a ledger's metadata znode, for compare-and-set.
pub type MetadataVersion = i32;

/// The metadata store of one BookKeeper cluster.
#[derive(Clone)]
pub struct ZkStore {
    /// The ZooKeeper session (the crate's client is cheap to clone and safe to share).
    zk: zk::Client,
    /// Ledgers root path, `/ledgers` by default. Immutable.
    root: String,
}

/// The ledgers root of a cluster's metadata when nothing names another (BookKeeper's
/// `zkLedgersRootPath` default).
pub const DEFAULT_LEDGERS_ROOT: &str = "/ledgers";
/// Where bookies register, below the ledgers root.
const AVAILABLE: &str = "available";
/// Where read-only bookies register, below [`AVAILABLE`].
const READONLY: &str = "readonly";
/// The cluster's instance id, below the ledgers root (a UUID, as text).
const INSTANCE_ID: &str = "INSTANCEID";

fn persistent() -> zk::CreateOptions<'static> {
    zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all())
}

impl ZkStore {
    /// Connects to `servers` (`host:port[,host:port]`) with ledgers under `root`.
    pub async fn connect(servers: &str, root: &str) -> Result<ZkStore> {
        let zk = zk::Client::connector()
            .with_session_timeout(std::time::Duration::from_secs(10))
            .connect(servers)
            .await?;
        Ok(ZkStore {
            zk,
            root: root.trim_end_matches('/').to_string(),
        })
    }

    /// Parses a BookKeeper `metadataServiceUri` such as `zk+hierarchical://127.0.0.1:2181/ledgers`
    /// (also `zk://` and `zk+null://`) into servers and root; hosts may be separated by `;` or `,`.
    /// Pulsar's own form for BookKeeper on its metadata store, `metadata-store:zk:host:port/ledgers`
    /// (what a broker uses when `bookkeeperMetadataServiceUri` is empty), is accepted for ZooKeeper
    /// stores: Pulsar's ledger manager and id generator keep the same paths.
    pub fn parse_uri(uri: &str) -> Result<(String, String)> {
        let bad = || BkError::InvalidArgument(format!("not a zk metadata service uri: {uri}"));
        let rest = if let Some(store) = uri.strip_prefix("metadata-store:") {
            let store = store.strip_prefix("zk:").unwrap_or(store);
            if store.contains("://") || store.starts_with("etcd:") || store.starts_with("oxia:") {
                return Err(bad());
            }
            store
        } else {
            uri.split_once("://")
                .filter(|(scheme, _)| scheme.starts_with("zk"))
                .map(|(_, rest)| rest)
                .ok_or_else(bad)?
        };
        let (servers, root) = match rest.split_once('/') {
            Some((servers, root)) => (servers, format!("/{root}")),
            None => (rest, DEFAULT_LEDGERS_ROOT.to_owned()),
        };
        Ok((servers.replace(';', ","), root))
    }

    /// Formats a new cluster's metadata as `BookKeeperAdmin.format` does, unless the ledgers
    /// root exists: the root, its `INSTANCEID` (a random UUID), `available` and
    /// `available/readonly` (the root's parent must exist). Whether it formatted.
    ///
    /// # Errors
    /// ZooKeeper failures.
    pub async fn format(&self) -> Result<bool> {
        match self.zk.create(&self.root, &[], &persistent()).await {
            Ok(_) => {}
            Err(zk::Error::NodeExists) => return Ok(false),
            Err(e) => return Err(e.into()),
        }
        let id = uuid::Uuid::new_v4().to_string();
        let available = format!("{}/{AVAILABLE}", self.root);
        for (path, data) in [
            (format!("{}/{INSTANCE_ID}", self.root), id.as_bytes()),
            (available.clone(), &[][..]),
            (format!("{available}/{READONLY}"), &[][..]),
        ] {
            self.zk.create(&path, data, &persistent()).await?;
        }
        Ok(true)
    }

    /// Bookies that accept writes: children of `available` except `readonly`.
    pub async fn writable_bookies(&self) -> Result<Vec<String>> {
        let mut v = self
            .zk
            .list_children(&format!("{}/{AVAILABLE}", self.root))
            .await?;
        v.retain(|c| c != READONLY);
        v.sort();
        Ok(v)
    }

    /// Bookies registered read-only.
    pub async fn readonly_bookies(&self) -> Result<Vec<String>> {
        match self
            .zk
            .list_children(&format!("{}/{AVAILABLE}/{READONLY}", self.root))
            .await
        {
            Ok(mut v) => {
                v.sort();
                Ok(v)
            }
            Err(zk::Error::NoNode) => Ok(Vec::new()),
            Err(e) => Err(e.into()),
        }
    }

    /// The address (`host:port`) of bookie `id`: its published `bookie-rpc` endpoint (writable or
    /// read-only registration), else the id itself when it has the legacy `host:port` form.
    pub async fn resolve_bookie(&self, id: &str) -> Result<String> {
        for path in [
            format!("{}/available/{id}", self.root),
            format!("{}/available/readonly/{id}", self.root),
        ] {
            match self.zk.get_data(&path).await {
                Ok((data, _)) => {
                    if let Some(addr) = bookie_rpc_address(&data) {
                        return Ok(addr);
                    }
                    break;
                }
                Err(zk::Error::NoNode) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        if id
            .rsplit_once(':')
            .is_some_and(|(_, port)| port.parse::<u16>().is_ok())
        {
            Ok(id.to_string())
        } else {
            Err(BkError::BookieNotAvailable {
                bookie: id.to_string(),
            })
        }
    }

    /// A new ledger id, as the hierarchical ledger manager's generator (`LongZkLedgerIdGenerator`
    /// over `ZkLedgerIdGenerator`, also Pulsar's `PulsarLedgerIdGenerator`) makes them: 31-bit ids
    /// from sequence nodes `{root}/idgen/ID-` until that sequence overflows; from then on (for good,
    /// once `{root}/idgen-long` exists) `high << 32 | low`, with `high` the largest directory
    /// `{root}/idgen-long/HOB-%010d` and `low` a sequence node in it, a new HOB directory being made
    /// when its sequence overflows.
    pub async fn generate_ledger_id(&self) -> Result<i64> {
        let long_dir = format!("{}/idgen-long", self.root);
        if self.zk.check_stat(&long_dir).await?.is_none() {
            if let Some(id) = self.sequence_id(&format!("{}/idgen", self.root)).await? {
                return Ok(id);
            }
            // 31-bit ids overflowed: 63-bit ids from now on.
            self.zk.mkdir(&long_dir, &persistent()).await?;
        }
        loop {
            let hobs = self.zk.list_children(&long_dir).await?;
            let high = hobs
                .iter()
                .filter_map(|h| h.strip_prefix("HOB-")?.parse::<i64>().ok())
                .max();
            let Some(high) = high else {
                self.create_hob(&long_dir, 1).await?;
                continue;
            };
            match self
                .sequence_id(&format!("{long_dir}/HOB-{high:010}"))
                .await?
            {
                Some(low) => return Ok((high << 32) | low),
                None => self.create_hob(&long_dir, high + 1).await?,
            }
        }
    }

    async fn create_hob(&self, long_dir: &str, hob: i64) -> Result<()> {
        let path = format!("{long_dir}/HOB-{hob:010}");
        match self.zk.create(&path, &[], &persistent()).await {
            Ok(_) | Err(zk::Error::NodeExists) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// One number from an EPHEMERAL_SEQUENTIAL node `{dir}/ID-`, deleted at once (it only reserved
    /// the number); None once the sequence has left `0..i32::MAX` (`LedgerIdOverflowException`).
    async fn sequence_id(&self, dir: &str) -> Result<Option<i64>> {
        let prefix = format!("{dir}/ID-");
        let opts = zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all());
        let seq = match self.zk.create(&prefix, &[], &opts).await {
            Ok((_, seq)) => seq,
            Err(zk::Error::NoNode) => {
                self.zk.mkdir(dir, &persistent()).await?;
                self.zk.create(&prefix, &[], &opts).await?.1
            }
            Err(e) => return Err(e.into()),
        };
        let id = seq.into_i64();
        let node = format!("{prefix}{seq}");
        if let Err(e) = self.zk.delete(&node, None).await {
            tracing::warn!(%node, error = %e, "could not delete id generation node");
        }
        Ok((0..i64::from(i32::MAX)).contains(&id).then_some(id))
    }

    /// Creates a ledger's metadata; fails with `NodeExists` mapped to `InvalidArgument` if taken.
    pub async fn create_ledger_metadata(
        &self,
        ledger_id: i64,
        m: &LedgerMetadata,
    ) -> Result<MetadataVersion> {
        let path = ledger_path(&self.root, ledger_id);
        let data = m.serialize();
        let res = match self.zk.create(&path, &data, &persistent()).await {
            Err(zk::Error::NoNode) => {
                let parent = &path[..path.rfind('/').expect("path has a parent")];
                self.zk.mkdir(parent, &persistent()).await?;
                self.zk.create(&path, &data, &persistent()).await
            }
            r => r,
        };
        match res {
            Ok((stat, _)) => Ok(stat.version),
            Err(zk::Error::NodeExists) => Err(BkError::InvalidArgument(format!(
                "ledger {ledger_id} exists"
            ))),
            Err(e) => Err(e.into()),
        }
    }

    /// Reads a ledger's metadata and its version.
    pub async fn read_ledger_metadata(
        &self,
        ledger_id: i64,
    ) -> Result<(LedgerMetadata, MetadataVersion)> {
        match self.zk.get_data(&ledger_path(&self.root, ledger_id)).await {
            Ok((data, stat)) => Ok((LedgerMetadata::parse(&data)?, stat.version)),
            Err(zk::Error::NoNode) => Err(BkError::NoSuchLedgerMetadata { ledger_id }),
            Err(e) => Err(e.into()),
        }
    }

    /// Writes a ledger's metadata if its version is still `expected` (compare-and-set).
    pub async fn write_ledger_metadata(
        &self,
        ledger_id: i64,
        m: &LedgerMetadata,
        expected: MetadataVersion,
    ) -> Result<MetadataVersion> {
        match self
            .zk
            .set_data(
                &ledger_path(&self.root, ledger_id),
                &m.serialize(),
                Some(expected),
            )
            .await
        {
            Ok(stat) => Ok(stat.version),
            Err(zk::Error::BadVersion) => Err(BkError::MetadataVersionConflict { ledger_id }),
            Err(zk::Error::NoNode) => Err(BkError::NoSuchLedgerMetadata { ledger_id }),
            Err(e) => Err(e.into()),
        }
    }

    /// Deletes a ledger's metadata (the bookies garbage-collect its entries later).
    pub async fn delete_ledger_metadata(&self, ledger_id: i64) -> Result<()> {
        match self
            .zk
            .delete(&ledger_path(&self.root, ledger_id), None)
            .await
        {
            Ok(()) | Err(zk::Error::NoNode) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris() {
        assert_eq!(
            ZkStore::parse_uri("zk+hierarchical://127.0.0.1:2181/ledgers").unwrap(),
            ("127.0.0.1:2181".into(), "/ledgers".into())
        );
        assert_eq!(
            ZkStore::parse_uri("zk+null://a:1;b:2/bk/ledgers").unwrap(),
            ("a:1,b:2".into(), "/bk/ledgers".into())
        );
        assert!(ZkStore::parse_uri("etcd://x").is_err());
        assert_eq!(
            ZkStore::parse_uri("metadata-store:zk:127.0.0.1:2181/ledgers").unwrap(),
            ("127.0.0.1:2181".into(), "/ledgers".into())
        );
        assert!(ZkStore::parse_uri("metadata-store:oxia://x:6648/ledgers").is_err());
    }
}
