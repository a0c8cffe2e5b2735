//! Joining and leaving: the session with the store, this broker's registration and load
//! report, the leader election, and what a lost session means (every bundle released, then a
//! new session and a new registration).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Mutex, RwLock};
use tokio::sync::{watch, Notify};

use super::{ClusterMember, LoadSource, MemberConfig, OnRelease};
use crate::documents::{now_ms, LeaderBroker, LocalBrokerData};
use crate::error::Result;
use crate::paths;
use crate::store::{MetadataStore, StoreError};
use crate::stores::Stores;

/// How often the leader record is checked (and taken when free), and load reports written
/// when ownership changed.
const TICK: Duration = Duration::from_secs(1);

impl ClusterMember {
    /// Connects, writes the cluster's default records when missing (as Pulsar's standalone
    /// does), registers this broker and starts the election and report tasks on the current
    /// runtime.
    ///
    /// # Errors
    /// The store cannot be reached or refuses the registration.
    pub async fn start(config: MemberConfig, on_release: OnRelease) -> Result<Arc<ClusterMember>> {
        let local =
            MetadataStore::connect(&config.metadata_store_url, config.session_timeout).await?;
        let configuration = match &config.configuration_store_url {
            Some(url) => Some(MetadataStore::connect(url, config.session_timeout).await?),
            None => None,
        };
        let (shutdown, _) = watch::channel(false);
        let member = Arc::new(ClusterMember {
            config,
            stores: RwLock::new(Stores {
                local,
                configuration,
            }),
            owned: RwLock::new(HashMap::new()),
            acquiring: Mutex::new(HashMap::new()),
            boundaries: RwLock::new(HashMap::new()),
            preallocated: Mutex::new(HashMap::new()),
            affinity: Mutex::new(HashMap::new()),
            is_leader: AtomicBool::new(false),
            owned_changed: Notify::new(),
            on_release,
            load_source: std::sync::OnceLock::new(),
            shutdown,
        });
        member.initialize_cluster_metadata().await?;
        member.register().await?;
        member.elect().await;
        tokio::spawn(Arc::clone(&member).run());
        tracing::info!(broker = %member.config.broker_id, cluster = %member.config.cluster, leader = member.is_leader(), "joined the cluster");
        Ok(member)
    }

    /// Sets what this broker's load reports measure (once; later calls are ignored).
    pub fn set_load_source(&self, source: LoadSource) {
        let _ = self.load_source.set(source);
    }

    /// This broker's load report, measured now (what the report task writes when it moved).
    #[must_use]
    pub fn load_report(&self) -> LocalBrokerData {
        self.report()
    }

    /// This broker's load report.
    fn report(&self) -> LocalBrokerData {
        let bundles: std::collections::BTreeSet<String> =
            self.owned.read().keys().cloned().collect();
        let mut report = LocalBrokerData::of_broker(&self.config.urls, bundles);
        if let Some(source) = self.load_source.get() {
            let mut load = source();
            load.bundles.retain(|b, _| report.bundles.contains(b));
            super::report::fill(&mut report, load);
        }
        report
    }

    /// Creates this broker's ephemeral registration. A record left by an earlier session of
    /// the same broker id (a restart within the session timeout) is replaced, as Pulsar's
    /// `ResourceLockImpl` revalidation does.
    async fn register(&self) -> Result<()> {
        let store = self.store();
        let path = paths::broker(&self.config.broker_id);
        let mut report = self.report();
        report.start_timestamp = now_ms();
        match store.create_json(&path, &report, true).await {
            Err(StoreError::BadVersion { .. }) => {
                if let Some((_, stat)) = store.get(&path).await? {
                    if stat.ephemeral_owner != store.session_id() {
                        store.delete(&path, Some(stat.version)).await?;
                    }
                }
                Ok(store.create_json(&path, &report, true).await?)
            }
            r => Ok(r?),
        }
    }

    /// One round of the election: take `/loadbalance/leader` when free, and note whether
    /// this session holds it.
    async fn elect(&self) {
        let store = self.store();
        let mine = LeaderBroker {
            broker_id: self.config.broker_id.clone(),
            service_url: self.config.urls.web.clone(),
        };
        let held = match store.get(paths::LEADER).await {
            Ok(Some((_, stat))) => stat.ephemeral_owner == store.session_id(),
            Ok(None) => match store.create_json(paths::LEADER, &mine, true).await {
                Ok(()) => {
                    tracing::info!(broker = %self.config.broker_id, "became the cluster's leader");
                    true
                }
                Err(_) => false,
            },
            Err(e) => {
                tracing::debug!(error = %e, "leader election round failed");
                false
            }
        };
        self.is_leader.store(held, Ordering::Relaxed);
    }

    /// The background task: election rounds, load reports when ownership changed, and the
    /// reaction to a lost session; until [`ClusterMember::shutdown`].
    async fn run(self: Arc<Self>) {
        let mut stop = self.shutdown.subscribe();
        let mut tick = tokio::time::interval(TICK);
        let mut written = self.report();
        let mut written_at = pulsar_rs_clock::monotonic();
        loop {
            let store = self.store();
            let configuration = self.stores.read().configuration.clone();
            let configuration_lost = async {
                match &configuration {
                    Some(c) => c.lost().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = stop.changed() => return,
                () = store.lost() => {
                    drop(store);
                    self.session_lost(&mut stop).await;
                    continue;
                }
                () = configuration_lost => {
                    drop(configuration);
                    self.configuration_session_lost(&mut stop).await;
                    continue;
                }
                _ = tick.tick() => {}
                () = self.owned_changed.notified() => {}
            }
            self.elect().await;
            let mut report = self.report();
            if self
                .config
                .report
                .needs_update(&written, &report, written_at.elapsed())
            {
                let path = paths::broker(&self.config.broker_id);
                report.last_update = now_ms();
                match store.set_json(&path, &report, None).await {
                    Ok(_) => {
                        written = report;
                        written_at = pulsar_rs_clock::monotonic();
                    }
                    Err(e) => tracing::debug!(error = %e, "writing the load report failed"),
                }
            }
        }
    }

    /// The session is gone: every bundle is released (its topics closed) without touching the
    /// store, then a new session is opened and this broker registers again.
    async fn session_lost(&self, stop: &mut watch::Receiver<bool>) {
        tracing::warn!(broker = %self.config.broker_id, "metadata store session lost: releasing every bundle");
        self.is_leader.store(false, Ordering::Relaxed);
        let lost: Vec<_> = self.owned.write().drain().map(|(_, b)| b).collect();
        if !lost.is_empty() {
            (self.on_release)(lost).await;
        }
        loop {
            let opened = MetadataStore::connect(
                &self.config.metadata_store_url,
                self.config.session_timeout,
            );
            tokio::select! {
                _ = stop.changed() => return,
                r = opened => match r {
                    Ok(store) => {
                        self.stores.write().local = store;
                        match self.register().await {
                            Ok(()) => {
                                tracing::info!(broker = %self.config.broker_id, "metadata store session re-established");
                                return;
                            }
                            Err(e) => tracing::warn!(error = %e, "registering again failed"),
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "reconnecting to the metadata store failed"),
                },
            }
            tokio::select! {
                _ = stop.changed() => return,
                () = tokio::time::sleep(TICK) => {}
            }
        }
    }

    /// The configuration store's session is gone: nothing this broker owns depends on it (no
    /// ephemeral record is there), so only a new session is opened. Watches of its paths end
    /// with the old session and are set again by their followers.
    async fn configuration_session_lost(&self, stop: &mut watch::Receiver<bool>) {
        let Some(url) = self.config.configuration_store_url.clone() else {
            return;
        };
        tracing::warn!(broker = %self.config.broker_id, "configuration store session lost: reconnecting");
        loop {
            tokio::select! {
                _ = stop.changed() => return,
                r = MetadataStore::connect(&url, self.config.session_timeout) => match r {
                    Ok(store) => {
                        self.stores.write().configuration = Some(store);
                        tracing::info!(broker = %self.config.broker_id, "configuration store session re-established");
                        return;
                    }
                    Err(e) => tracing::warn!(error = %e, "reconnecting to the configuration store failed"),
                },
            }
            tokio::select! {
                _ = stop.changed() => return,
                () = tokio::time::sleep(TICK) => {}
            }
        }
    }

    /// Leaves the cluster in order: stops the tasks, releases every bundle (closing its
    /// topics, then deleting its lock), and deletes the leader record and the registration, so
    /// other brokers take over at once instead of after the session timeout.
    pub async fn shutdown(&self) {
        let _ = self.shutdown.send(true);
        let owned: Vec<_> = self.owned.read().values().cloned().collect();
        for b in owned {
            if let Err(e) = self.release(&b).await {
                tracing::warn!(bundle = %b.name(), error = %e, "releasing a bundle at shutdown");
            }
        }
        let store = self.store();
        if self.is_leader() {
            let _ = store.delete(paths::LEADER, None).await;
        }
        let _ = store
            .delete(&paths::broker(&self.config.broker_id), None)
            .await;
        tracing::info!(broker = %self.config.broker_id, "left the cluster");
    }

    /// Broker ids registered now.
    ///
    /// # Errors
    /// Store failures.
    pub async fn brokers(&self) -> Result<Vec<String>> {
        let mut v = self.store().children(paths::BROKERS).await?;
        v.sort();
        Ok(v)
    }

    /// The leader's record, if there is a leader.
    ///
    /// # Errors
    /// Store failures.
    pub async fn leader(&self) -> Result<Option<LeaderBroker>> {
        Ok(self
            .store()
            .get_json::<LeaderBroker>(paths::LEADER)
            .await?
            .map(|(l, _)| l))
    }

    /// A registered broker's load report.
    ///
    /// # Errors
    /// Store failures.
    pub async fn broker_data(&self, broker_id: &str) -> Result<Option<LocalBrokerData>> {
        Ok(self
            .store()
            .get_json::<LocalBrokerData>(&paths::broker(broker_id))
            .await?
            .map(|(d, _)| d))
    }

    /// The load reports of the brokers registered now, by broker id.
    ///
    /// # Errors
    /// Store failures.
    pub async fn load_reports(
        &self,
    ) -> Result<std::collections::BTreeMap<String, LocalBrokerData>> {
        let mut out = std::collections::BTreeMap::new();
        for id in self.brokers().await? {
            if let Some(data) = self.broker_data(&id).await? {
                out.insert(id, data);
            }
        }
        Ok(out)
    }
}
