//! The thread topic tables are committed on: its own single-threaded Tokio runtime (commits
//! read entries and write files, blocking work that must stay off the broker's runtime), a
//! queue of topics due for a commit, and what each table's last commit did (for the status
//! call and the metrics).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use iceberg::Catalog;
use iceberg_catalog_sql::SqlCatalog;
use parking_lot::Mutex;
use pulsar_rs_broker::service::BrokerService;
use pulsar_rs_broker::topic::Topic;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::catalog;
use crate::commit::{self, parse_position};
use crate::config::TableConfig;
use crate::error::TableError;
use crate::policy::IcebergTablePolicy;

/// What the committer knows of one topic (partition).
#[derive(Clone, Debug, Default)]
pub struct TopicProgress {
    /// Rows this broker committed for it since start.
    pub rows: u64,
    /// Commits that appended files.
    pub commits: u64,
    /// Data files and their bytes.
    pub files: u64,
    /// Bytes of data files.
    pub file_bytes: u64,
    /// Entries read.
    pub entries: u64,
    /// The last failure, if the last commit failed.
    pub last_error: Option<String>,
}

/// A table's state as the catalog holds it, for `GET .../icebergTable`.
#[derive(Clone, Debug, Default)]
pub struct TableStatus {
    /// `tenant.namespace.topic`.
    pub table: String,
    /// Whether the table exists yet.
    pub exists: bool,
    /// Partition (−1: not partitioned) → the last message id committed (`ledger:entry`).
    pub through: BTreeMap<i32, String>,
    /// The current snapshot.
    pub snapshot_id: Option<i64>,
    /// When the current snapshot was committed (ms).
    pub snapshot_timestamp_ms: Option<i64>,
    /// Rows in the table (its summary's `total-records`).
    pub total_records: Option<u64>,
    /// Data files in the table (`total-data-files`).
    pub total_data_files: Option<u64>,
    /// The table's metadata file.
    pub metadata_location: Option<String>,
}

impl TableStatus {
    /// The status as admin JSON.
    #[must_use]
    pub fn to_json(&self) -> Value {
        let last = self
            .through
            .iter()
            .map(|(p, pos)| (p.to_string(), Value::String(format!("{pos}:-1"))))
            .collect::<serde_json::Map<_, _>>();
        serde_json::json!({
            "table": self.table,
            "exists": self.exists,
            "lastCommittedMessageId": last,
            "snapshotId": self.snapshot_id,
            "snapshotTimestampMs": self.snapshot_timestamp_ms,
            "totalRecords": self.total_records,
            "totalDataFiles": self.total_data_files,
            "metadataLocation": self.metadata_location,
        })
    }
}

enum Job {
    Commit(Arc<Topic>, IcebergTablePolicy),
    Status(
        String,
        String,
        String,
        oneshot::Sender<Result<TableStatus, TableError>>,
    ),
}

/// The committer: a queue into its thread.
pub struct TableCommitter {
    /// Jobs for the thread (unbounded: at most one commit per topic is queued, see `queued`).
    jobs: mpsc::UnboundedSender<Job>,
    /// Topics with a commit queued or running. Lock: inserted by [`TableCommitter::submit`],
    /// removed by the thread when the commit ends; held for one set operation.
    queued: Arc<Mutex<HashSet<String>>>,
    /// Each topic's progress. Lock: written by the thread after each commit, read by the
    /// metrics and the status call; held for one map operation.
    progress: Arc<Mutex<HashMap<String, TopicProgress>>>,
}

impl TableCommitter {
    /// Starts the committer's thread over the catalog `config` names.
    ///
    /// # Errors
    /// [`TableError::Config`] when the thread cannot start.
    pub fn start(config: TableConfig, service: Arc<BrokerService>) -> Result<Self, TableError> {
        let (tx, rx) = mpsc::unbounded_channel();
        let queued = Arc::new(Mutex::new(HashSet::new()));
        let progress = Arc::new(Mutex::new(HashMap::new()));
        let worker = Worker {
            config,
            service,
            catalog: None,
            queued: Arc::clone(&queued),
            progress: Arc::clone(&progress),
            resubmit: tx.clone(),
        };
        std::thread::Builder::new()
            .name("iceberg-tables".into())
            .spawn(move || worker.run(rx))
            .map_err(|e| TableError::Config(format!("starting the table committer: {e}")))?;
        Ok(Self {
            jobs: tx,
            queued,
            progress,
        })
    }

    /// Queues a commit of `topic` unless one is queued or running.
    pub fn submit(&self, topic: Arc<Topic>, policy: IcebergTablePolicy) {
        let name = topic.name.to_string();
        if !self.queued.lock().insert(name.clone()) {
            return;
        }
        if self.jobs.send(Job::Commit(topic, policy)).is_err() {
            self.queued.lock().remove(&name);
        }
    }

    /// The table's state in the catalog.
    ///
    /// # Errors
    /// [`TableError::Stopped`], catalog failures.
    pub async fn status(
        &self,
        tenant: &str,
        namespace: &str,
        topic: &str,
    ) -> Result<TableStatus, TableError> {
        let (tx, rx) = oneshot::channel();
        self.jobs
            .send(Job::Status(
                tenant.into(),
                namespace.into(),
                topic.into(),
                tx,
            ))
            .map_err(|_| TableError::Stopped)?;
        rx.await.map_err(|_| TableError::Stopped)?
    }

    /// Each topic's progress since start.
    #[must_use]
    pub fn progress(&self) -> HashMap<String, TopicProgress> {
        self.progress.lock().clone()
    }
}

struct Worker {
    config: TableConfig,
    service: Arc<BrokerService>,
    catalog: Option<Arc<SqlCatalog>>,
    queued: Arc<Mutex<HashSet<String>>>,
    progress: Arc<Mutex<HashMap<String, TopicProgress>>>,
    resubmit: mpsc::UnboundedSender<Job>,
}

impl Worker {
    fn run(mut self, mut rx: mpsc::UnboundedReceiver<Job>) {
        let rt = match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(rt) => rt,
            Err(e) => {
                tracing::error!(error = %e, "the table committer's runtime did not start");
                return;
            }
        };
        rt.block_on(async move {
            while let Some(job) = rx.recv().await {
                match job {
                    Job::Commit(topic, policy) => self.commit(topic, policy).await,
                    Job::Status(t, n, name, reply) => {
                        let _ = reply.send(self.status(&t, &n, &name).await);
                    }
                }
            }
        });
    }

    async fn catalog(&mut self) -> Result<Arc<SqlCatalog>, TableError> {
        if let Some(c) = &self.catalog {
            return Ok(Arc::clone(c));
        }
        let c = catalog::open(&self.config).await?;
        self.catalog = Some(Arc::clone(&c));
        Ok(c)
    }

    async fn commit(&mut self, topic: Arc<Topic>, policy: IcebergTablePolicy) {
        let name = topic.name.to_string();
        let result = match self.catalog().await {
            Ok(c) => commit::commit_next(&c, &self.service, &topic, policy.partition_by).await,
            Err(e) => Err(e),
        };
        let mut again = false;
        {
            let mut all = self.progress.lock();
            let p = all.entry(name.clone()).or_default();
            match &result {
                Ok(done) => {
                    p.rows += done.rows;
                    p.entries += done.entries;
                    p.files += done.files;
                    p.file_bytes += done.file_bytes;
                    p.commits += u64::from(done.files > 0);
                    p.last_error = None;
                    again = done.more;
                }
                Err(e) => p.last_error = Some(e.to_string()),
            }
        }
        match result {
            Ok(done) => {
                // The table holds the range: the topic may trim it.
                if let Some(through) = done.through {
                    if let Err(e) = topic.table_committed(through) {
                        tracing::warn!(topic = %name, error = %e, "moving the table cursor");
                    }
                }
            }
            Err(e) => tracing::warn!(topic = %name, error = %e, "committing to the topic's table"),
        }
        if again {
            // More entries wait: commit them now rather than at the next interval.
            let _ = self.resubmit.send(Job::Commit(topic, policy));
        } else {
            self.queued.lock().remove(&name);
        }
    }

    async fn status(
        &mut self,
        tenant: &str,
        ns: &str,
        topic: &str,
    ) -> Result<TableStatus, TableError> {
        let catalog = self.catalog().await?;
        let id = catalog::ident(tenant, ns, topic)?;
        let mut status = TableStatus {
            table: format!("{tenant}.{ns}.{topic}"),
            ..TableStatus::default()
        };
        if !catalog.table_exists(&id).await? {
            return Ok(status);
        }
        let table = catalog.load_table(&id).await?;
        let md = table.metadata();
        status.exists = true;
        status.metadata_location = table.metadata_location().map(str::to_owned);
        for (k, v) in md.properties() {
            let Some(p) = k
                .strip_prefix("pulsar.through.")
                .and_then(|p| p.parse().ok())
            else {
                continue;
            };
            if let Some(pos) = parse_position(v) {
                status
                    .through
                    .insert(p, format!("{}:{}", pos.ledger_id, pos.entry_id));
            }
        }
        if let Some(s) = md.current_snapshot() {
            status.snapshot_id = Some(s.snapshot_id());
            status.snapshot_timestamp_ms = Some(s.timestamp_ms());
            let extra = &s.summary().additional_properties;
            status.total_records = extra.get("total-records").and_then(|v| v.parse().ok());
            status.total_data_files = extra.get("total-data-files").and_then(|v| v.parse().ok());
        }
        Ok(status)
    }
}
