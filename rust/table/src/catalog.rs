//! The catalog topic tables are committed to: a SQL catalog on SQLite over a local warehouse
//! or one on S3,
//! the namespace `[tenant, namespace]` and the table named as the topic (a partitioned topic's
//! partitions share one table); and the guard every commit goes through, so that a commit whose
//! range another writer committed first fails instead of landing twice.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use iceberg::io::{LocalFsStorageFactory, StorageFactory};
use iceberg::spec::{Transform, UnboundPartitionSpec};
use iceberg::table::Table;
use iceberg::{
    Catalog, CatalogBuilder, ErrorKind, Namespace, NamespaceIdent, TableCommit, TableCreation,
    TableIdent,
};
use iceberg_catalog_sql::{SqlBindStyle, SqlCatalog, SqlCatalogBuilder};

use crate::columns::{self, FieldKind};
use crate::config::TableConfig;
use crate::error::TableError;
use crate::policy::PartitionBy;
use crate::s3_storage::S3StorageFactory;

/// The table property holding how far into partition `p` the table holds (`ledger:entry`).
#[must_use]
pub fn through_key(partition: i32) -> String {
    format!("pulsar.through.{partition}")
}

/// Opens the catalog (creating its file and tables when missing).
///
/// # Errors
/// [`TableError::Iceberg`]: the file cannot be created or opened.
pub async fn open(config: &TableConfig) -> Result<Arc<SqlCatalog>, TableError> {
    sqlx::any::install_default_drivers();
    if let Some(dir) = std::path::Path::new(&config.catalog_path).parent() {
        std::fs::create_dir_all(dir).map_err(|e| {
            TableError::Config(format!(
                "icebergCatalogUri: creating {}: {e}",
                dir.display()
            ))
        })?;
    }
    if let Some(dir) = config.warehouse_dir() {
        std::fs::create_dir_all(dir)
            .map_err(|e| TableError::Config(format!("icebergWarehouse: creating {dir}: {e}")))?;
    }
    let storage: Arc<dyn StorageFactory> = match &config.s3 {
        Some(service) => Arc::new(S3StorageFactory::new(service.clone())),
        None => Arc::new(LocalFsStorageFactory),
    };
    let catalog = SqlCatalogBuilder::default()
        .uri(config.sqlx_uri())
        .warehouse_location(config.warehouse.clone())
        .sql_bind_style(SqlBindStyle::QMark)
        .with_storage_factory(storage)
        .load(config.catalog_name.clone(), HashMap::new())
        .await?;
    Ok(Arc::new(catalog))
}

/// The table of a topic: namespace `[tenant, namespace]`, name the topic's local name without
/// its partition suffix.
///
/// # Errors
/// [`TableError::Iceberg`] for an empty part.
pub fn ident(tenant: &str, namespace: &str, topic: &str) -> Result<TableIdent, TableError> {
    Ok(TableIdent::new(
        NamespaceIdent::from_strs([tenant, namespace])?,
        topic.to_owned(),
    ))
}

/// Loads the table, creating it (and its namespace) with `values` as its value columns and
/// `partition_by` as its partitioning when it does not exist.
///
/// # Errors
/// [`TableError::Iceberg`].
pub async fn load_or_create(
    catalog: &SqlCatalog,
    id: &TableIdent,
    values: &[(String, FieldKind)],
    partition_by: PartitionBy,
) -> Result<Table, TableError> {
    if catalog.table_exists(id).await? {
        return Ok(catalog.load_table(id).await?);
    }
    let ns = id.namespace();
    let mut parts: Vec<String> = Vec::new();
    for part in ns.iter() {
        parts.push(part.clone());
        let level = NamespaceIdent::from_vec(parts.clone())?;
        if !catalog.namespace_exists(&level).await? {
            match catalog.create_namespace(&level, HashMap::new()).await {
                Ok(_) => {}
                // Another partition's committer created it first.
                Err(e) if e.kind() == ErrorKind::NamespaceAlreadyExists => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
    let schema = columns::table_schema(values)?;
    let source = schema
        .field_by_name(columns::PUBLISH_TIME)
        .map(|f| f.id)
        .ok_or_else(|| TableError::Config("no __publish_time column".into()))?;
    let mut spec = UnboundPartitionSpec::builder();
    match partition_by {
        PartitionBy::Day => {
            spec = spec.add_partition_field(source, "__publish_time_day", Transform::Day)?;
        }
        PartitionBy::Hour => {
            spec = spec.add_partition_field(source, "__publish_time_hour", Transform::Hour)?;
        }
        PartitionBy::None => {}
    }
    let creation = TableCreation::builder()
        .name(id.name().to_owned())
        .schema(schema)
        .partition_spec(spec.build())
        .properties([
            ("write.format.default".to_owned(), "parquet".to_owned()),
            ("pulsar.topic-table".to_owned(), "true".to_owned()),
        ])
        .build();
    match catalog.create_table(ns, creation).await {
        Ok(t) => Ok(t),
        Err(e) if e.kind() == ErrorKind::TableAlreadyExists => Ok(catalog.load_table(id).await?),
        Err(e) => Err(e.into()),
    }
}

/// The catalog as one commit sees it: [`Catalog::update_table`] first checks that the table
/// still holds partition `partition` through exactly `expected` (what the commit read before
/// it wrote its files), so a commit that another writer's overtook fails with
/// [`iceberg::ErrorKind::DataInvalid`] (not retried) instead of appending the range twice. The
/// check and the catalog's own compare-and-swap of the metadata location close the window: a
/// commit landing between them moves the table's snapshot, which the append's own requirement
/// refuses, and the retry checks again.
#[derive(Debug)]
pub struct Guarded {
    /// The catalog.
    pub inner: Arc<SqlCatalog>,
    /// The table property checked.
    pub key: String,
    /// Its value when the commit started.
    pub expected: Option<String>,
}

/// The marker of a guard's refusal in its error's message.
pub const SUPERSEDED: &str = "superseded:";

#[async_trait]
impl Catalog for Guarded {
    async fn list_namespaces(
        &self,
        parent: Option<&NamespaceIdent>,
    ) -> iceberg::Result<Vec<NamespaceIdent>> {
        self.inner.list_namespaces(parent).await
    }
    async fn create_namespace(
        &self,
        namespace: &NamespaceIdent,
        properties: HashMap<String, String>,
    ) -> iceberg::Result<Namespace> {
        self.inner.create_namespace(namespace, properties).await
    }
    async fn get_namespace(&self, namespace: &NamespaceIdent) -> iceberg::Result<Namespace> {
        self.inner.get_namespace(namespace).await
    }
    async fn namespace_exists(&self, namespace: &NamespaceIdent) -> iceberg::Result<bool> {
        self.inner.namespace_exists(namespace).await
    }
    async fn update_namespace(
        &self,
        namespace: &NamespaceIdent,
        properties: HashMap<String, String>,
    ) -> iceberg::Result<()> {
        self.inner.update_namespace(namespace, properties).await
    }
    async fn drop_namespace(&self, namespace: &NamespaceIdent) -> iceberg::Result<()> {
        self.inner.drop_namespace(namespace).await
    }
    async fn list_tables(&self, namespace: &NamespaceIdent) -> iceberg::Result<Vec<TableIdent>> {
        self.inner.list_tables(namespace).await
    }
    async fn create_table(
        &self,
        namespace: &NamespaceIdent,
        creation: TableCreation,
    ) -> iceberg::Result<Table> {
        self.inner.create_table(namespace, creation).await
    }
    async fn load_table(&self, table: &TableIdent) -> iceberg::Result<Table> {
        self.inner.load_table(table).await
    }
    async fn drop_table(&self, table: &TableIdent) -> iceberg::Result<()> {
        self.inner.drop_table(table).await
    }
    async fn purge_table(&self, table: &TableIdent) -> iceberg::Result<()> {
        self.inner.purge_table(table).await
    }
    async fn table_exists(&self, table: &TableIdent) -> iceberg::Result<bool> {
        self.inner.table_exists(table).await
    }
    async fn rename_table(&self, src: &TableIdent, dest: &TableIdent) -> iceberg::Result<()> {
        self.inner.rename_table(src, dest).await
    }
    async fn register_table(
        &self,
        table: &TableIdent,
        metadata_location: String,
    ) -> iceberg::Result<Table> {
        self.inner.register_table(table, metadata_location).await
    }
    async fn update_table(&self, commit: TableCommit) -> iceberg::Result<Table> {
        let current = self.inner.load_table(commit.identifier()).await?;
        let now = current.metadata().properties().get(&self.key).cloned();
        if now != self.expected {
            return Err(iceberg::Error::new(
                ErrorKind::DataInvalid,
                format!(
                    "{SUPERSEDED} {} holds {} through {}, this commit started from {}",
                    commit.identifier(),
                    self.key,
                    now.as_deref().unwrap_or("nothing"),
                    self.expected.as_deref().unwrap_or("nothing"),
                ),
            ));
        }
        self.inner.update_table(commit).await
    }
}
