//! Owning bundles: the ephemeral lock `/namespace/{tenant}/{ns}/{0xLOW_0xHIGH}` holding this
//! broker's `NamespaceEphemeralData` (Pulsar's `OwnershipCache`), the in-memory check every
//! PRODUCER and SUBSCRIBE makes (`checkTopicNsOwnership`), and the release of a bundle: marked
//! disabled, its topics closed, its lock deleted (`OwnedBundle.handleUnloadRequest`).
//!
//! Another broker may read the lock, and send a client here, before this broker's write of it
//! has returned: an acquisition in flight is therefore known ([`Acquiring`]), and the check of a
//! PRODUCER or SUBSCRIBE for its bundle waits for it to end, as Pulsar's
//! `OwnershipCache.checkOwnershipAsync` waits on the bundle's pending ownership future.

use tokio::sync::watch;

use crate::bundles::{topic_hash, topic_parts, Bundle};
use crate::documents::{BrokerUrls, NamespaceEphemeralData};
use crate::error::{ClusterError, Result};
use crate::paths;
use crate::store::StoreError;

use super::ClusterMember;

/// Who holds a bundle, as the ownership lock says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owner {
    /// This broker.
    Me,
    /// Another broker, at these URLs.
    Other(BrokerUrls),
}

/// An acquisition of a bundle in flight on this broker (its ownership lock being written):
/// [`Acquiring::ended`] resolves once `owned` has its outcome.
pub struct Acquiring(watch::Receiver<()>);

impl Acquiring {
    /// Resolves when the acquisition has ended, taken or not (its sender is dropped then;
    /// nothing is ever sent).
    pub async fn ended(mut self) {
        while self.0.changed().await.is_ok() {}
    }
}

/// This broker's acquisition of one bundle, entered in `acquiring` while it lasts: leaving
/// (on drop, whatever the outcome, a cancelled acquisition too) removes the entry and ends
/// every [`Acquiring`] of it.
struct InFlight<'a> {
    member: &'a ClusterMember,
    name: String,
    /// Dropped after the entry is removed: ends the waiters.
    _ended: watch::Sender<()>,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.member.acquiring.lock().remove(&self.name);
    }
}

impl ClusterMember {
    /// Whether this broker owns the bundle of `full_name` (a full topic name): memory only.
    #[must_use]
    pub fn owns(&self, full_name: &str) -> bool {
        let Ok(parts) = topic_parts(full_name) else {
            return false;
        };
        let ns = parts.namespace_name();
        let h = topic_hash(full_name);
        self.owned
            .read()
            .values()
            .any(|b| b.namespace == ns && b.holds(h))
    }

    /// This broker's acquisition in flight of the bundle of `full_name` (a full topic name),
    /// if there is one: memory only.
    #[must_use]
    pub fn acquiring(&self, full_name: &str) -> Option<Acquiring> {
        let parts = topic_parts(full_name).ok()?;
        let ns = parts.namespace_name();
        let h = topic_hash(full_name);
        self.acquiring
            .lock()
            .values()
            .find(|(b, _)| b.namespace == ns && b.holds(h))
            .map(|(_, ended)| Acquiring(ended.clone()))
    }

    /// Whether this broker serves `full_name` (a full topic name): it owns the topic's bundle,
    /// once an acquisition of that bundle in flight here has ended.
    pub async fn serves(&self, full_name: &str) -> bool {
        if let Some(pending) = self.acquiring(full_name) {
            pending.ended().await;
        }
        self.owns(full_name)
    }

    /// Enters this broker's acquisition of `bundle`, or, when one is in flight already, the
    /// means to wait for it.
    fn enter_acquiring(&self, bundle: &Bundle) -> std::result::Result<InFlight<'_>, Acquiring> {
        let name = bundle.name();
        let mut acquiring = self.acquiring.lock();
        if let Some((_, ended)) = acquiring.get(&name) {
            return Err(Acquiring(ended.clone()));
        }
        let (ended, rx) = watch::channel(());
        acquiring.insert(name.clone(), (bundle.clone(), rx));
        Ok(InFlight {
            member: self,
            name,
            _ended: ended,
        })
    }

    /// Names of the bundles this broker owns.
    #[must_use]
    pub fn owned_bundles(&self) -> Vec<String> {
        let mut v: Vec<String> = self.owned.read().keys().cloned().collect();
        v.sort();
        v
    }

    /// The current owner of `bundle`, from its lock (`None`: unowned).
    ///
    /// # Errors
    /// [`ClusterError::BundleUnloading`] while its owner unloads it; store failures.
    pub async fn owner(&self, bundle: &Bundle) -> Result<Option<Owner>> {
        if self.owned.read().contains_key(&bundle.name()) {
            return Ok(Some(Owner::Me));
        }
        let store = self.store();
        let Some((data, stat)) = store
            .get_json::<NamespaceEphemeralData>(&paths::ownership(&bundle.name()))
            .await?
        else {
            return Ok(None);
        };
        if stat.ephemeral_owner == store.session_id() && !data.disabled {
            // Ours in this session but not in memory (an acquire whose answer was lost).
            self.note_owned(bundle);
            return Ok(Some(Owner::Me));
        }
        if data.disabled {
            return Err(ClusterError::BundleUnloading(bundle.name()));
        }
        Ok(Some(Owner::Other(BrokerUrls::from(&data))))
    }

    fn note_owned(&self, bundle: &Bundle) {
        self.owned.write().insert(bundle.name(), bundle.clone());
        self.owned_changed.notify_one();
    }

    /// Takes `bundle` unless another broker holds it; the owner either way.
    ///
    /// # Errors
    /// Store failures.
    pub async fn acquire(&self, bundle: &Bundle) -> Result<Owner> {
        // Left (on drop) only after `owned` has the outcome: see `ClusterMember::acquiring`.
        let _in_flight = loop {
            if self.owned.read().contains_key(&bundle.name()) {
                return Ok(Owner::Me);
            }
            match self.enter_acquiring(bundle) {
                Ok(in_flight) => break in_flight,
                Err(pending) => pending.ended().await,
            }
        };
        let me = NamespaceEphemeralData::from(&self.config.urls);
        let path = paths::ownership(&bundle.name());
        match self.store().create_json(&path, &me, true).await {
            Ok(()) => {
                tracing::info!(bundle = %bundle.name(), "bundle owned");
                self.note_owned(bundle);
                Ok(Owner::Me)
            }
            Err(StoreError::BadVersion { .. }) => match self.owner(bundle).await? {
                Some(o) => Ok(o),
                // Released between our create and our read: the next lookup takes it.
                None => Err(ClusterError::BundleUnloading(bundle.name())),
            },
            Err(e) => Err(e.into()),
        }
    }

    /// Unloads an owned bundle: its lock is marked disabled (lookups wait), its topics are
    /// closed, then its lock is deleted. Releasing a bundle not owned does nothing.
    ///
    /// # Errors
    /// Store failures (the topics are closed and the bundle is no longer owned regardless).
    pub async fn release(&self, bundle: &Bundle) -> Result<()> {
        if self.owned.write().remove(&bundle.name()).is_none() {
            return Ok(());
        }
        self.owned_changed.notify_one();
        let store = self.store();
        let path = paths::ownership(&bundle.name());
        let mut disabled = NamespaceEphemeralData::from(&self.config.urls);
        disabled.disabled = true;
        let marked = store.set_json(&path, &disabled, None).await;
        (self.on_release)(vec![bundle.clone()]).await;
        tracing::info!(bundle = %bundle.name(), "bundle released");
        marked?;
        Ok(store.delete(&path, None).await?)
    }

    /// Unloads every owned bundle of `namespace` (or only `range`, `0xLOW_0xHIGH`); the
    /// bundles released.
    ///
    /// # Errors
    /// Store failures.
    pub async fn unload(&self, namespace: &str, range: Option<&str>) -> Result<Vec<String>> {
        let targets: Vec<Bundle> = self
            .owned
            .read()
            .values()
            .filter(|b| b.namespace == namespace && range.is_none_or(|r| b.range() == r))
            .cloned()
            .collect();
        let mut done = Vec::new();
        for b in targets {
            self.release(&b).await?;
            done.push(b.name());
        }
        Ok(done)
    }
}
