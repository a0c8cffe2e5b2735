//! [`ClusterMember`]: this broker as one of a Pulsar cluster's brokers. It registers under
//! `/loadbalance/brokers`, takes part in the leader election at `/loadbalance/leader`, owns
//! namespace bundles by ephemeral lock, answers lookups as Pulsar's modular load manager does,
//! and gives up everything it owned when its metadata-store session is lost.
//!
//! Its methods are split by job: [`session`] (connecting, registration, load reports, the
//! leader election, session loss), [`ownership`] (owning and releasing bundles, the ownership
//! check of every producer and consumer), [`lookup`] (where a topic is served, and the leader's
//! placement of unowned bundles), [`clusters`] (the cluster records), [`records`] (namespace bundles and partitioned-topic metadata
//! in the store), [`policies`] (tenant and namespace documents, changed and followed), [`split`]
//! (splitting an owned bundle), [`report`] (what goes in the load report, and when). Each
//! record is read and written in the store [`crate::stores`] names for its path.

mod clusters;
mod lookup;
mod ownership;
pub mod policies;
mod records;
pub mod report;
mod session;
mod split;

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use parking_lot::{Mutex, RwLock};
use tokio::sync::{watch, Notify};

use crate::bundles::Bundle;
use crate::documents::BrokerUrls;
use crate::store::MetadataStore;
use crate::stores::Stores;

pub use lookup::LookupAnswer;
pub use ownership::{Acquiring, Owner};
pub use report::{BrokerLoad, LoadSource, ReportPolicy};

/// How this broker joins its cluster.
#[derive(Debug, Clone)]
pub struct MemberConfig {
    /// `metadataStoreUrl`: ZooKeeper (`zk:host:port[,host:port][/chroot]`, `zk:` optional) or
    /// etcd (`etcd:http://host:port[,http://host:port]`).
    pub metadata_store_url: String,
    /// `configurationMetadataStoreUrl`, when it names another store than `metadata_store_url`:
    /// the cluster records, tenants, namespace policies and partitioned-topic metadata are read,
    /// written and watched there ([`crate::stores`]). `None`: in `metadata_store_url`'s.
    pub configuration_store_url: Option<String>,
    /// `metadataStoreSessionTimeoutMillis`: how long after this broker stops answering its
    /// bundles go to others.
    pub session_timeout: Duration,
    /// `clusterName`.
    pub cluster: String,
    /// `advertisedAddress:webServicePort`, Pulsar's broker id.
    pub broker_id: String,
    /// This broker's URLs.
    pub urls: BrokerUrls,
    /// `defaultNumberOfNamespaceBundles`, for namespaces this broker creates.
    pub default_bundles: u32,
    /// When load reports are written.
    pub report: ReportPolicy,
    /// `loadBalancerBrokerOverloadedThresholdPercentage`, as a fraction: a placement avoids a
    /// broker whose busiest resource is past it while another is not.
    pub overloaded_threshold: f64,
}

/// A boxed future (what [`OnRelease`] answers with).
pub type BoxFuture = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// Called with bundles this broker stops owning (unload, session loss, shutdown): it must close
/// their topics, so clients look them up again. Ownership locks are deleted only after it ends.
pub type OnRelease = Arc<dyn Fn(Vec<Bundle>) -> BoxFuture + Send + Sync>;

/// This broker as a cluster member.
pub struct ClusterMember {
    /// Immutable.
    config: MemberConfig,
    /// The current sessions with the cluster's store and the configuration store; each is
    /// replaced by the session task after its loss. The lock is held only to clone a handle
    /// out or put a new one in, never across an `.await`.
    stores: RwLock<Stores>,
    /// Bundles owned, by name. Written on acquire, release and session loss; read by the
    /// ownership check of every PRODUCER and SUBSCRIBE. Held for map operations only.
    owned: RwLock<HashMap<String, Bundle>>,
    /// Bundles whose ownership lock this broker is writing now, by name, each with the
    /// receiving end of a channel whose sender goes when the attempt ends (see
    /// [`ownership::Acquiring`]). Entered before the lock is written and left after `owned`
    /// has the outcome, so a client sent here by a lookup that read the lock finds the bundle
    /// owned or being acquired, never neither. Held for map operations only.
    acquiring: Mutex<HashMap<String, (Bundle, watch::Receiver<()>)>>,
    /// Namespace → bundle boundaries, as read from the store. Held for map operations only.
    boundaries: RwLock<HashMap<String, Vec<u32>>>,
    /// On the leader: bundles it placed on a broker whose load report does not show them yet,
    /// with when (Pulsar's preallocated bundles). Held for map operations only.
    preallocated: Mutex<HashMap<String, (String, Instant)>>,
    /// On the leader: bundle name → the broker an unload asked it to go to next
    /// (`destinationBroker`, Pulsar's bundle affinity); taken by the next placement. Held for
    /// map operations only.
    affinity: Mutex<HashMap<String, String>>,
    /// Whether this broker holds `/loadbalance/leader` in its current session. Written by the
    /// election loop; Relaxed: it orders nothing else, a stale read costs one extra redirect.
    is_leader: AtomicBool,
    /// Woken when `owned` changes, so the next load report is written.
    owned_changed: Notify,
    /// See [`OnRelease`].
    on_release: OnRelease,
    /// What the broker measures for its load reports; set once by the broker after joining
    /// (reports carry no load until then).
    load_source: OnceLock<LoadSource>,
    /// Stops the background tasks.
    shutdown: watch::Sender<bool>,
}

impl ClusterMember {
    /// This broker's id.
    #[must_use]
    pub fn broker_id(&self) -> &str {
        &self.config.broker_id
    }

    /// This broker's URLs.
    #[must_use]
    pub fn urls(&self) -> &BrokerUrls {
        &self.config.urls
    }

    /// The cluster's name.
    #[must_use]
    pub fn cluster(&self) -> &str {
        &self.config.cluster
    }

    /// The current session's handle with the cluster's own store.
    fn store(&self) -> MetadataStore {
        self.stores.read().local.clone()
    }

    /// The current session's handle with the store holding `path` ([`crate::stores`]).
    fn store_for(&self, path: &str) -> MetadataStore {
        self.stores.read().for_path(path).clone()
    }

    /// The current session's handle with the configuration store (the cluster's own store when
    /// none is configured).
    fn configuration_store(&self) -> MetadataStore {
        self.stores.read().configuration().clone()
    }

    /// Whether this broker is the leader now.
    #[must_use]
    pub fn is_leader(&self) -> bool {
        self.is_leader.load(std::sync::atomic::Ordering::Relaxed)
    }
}
