//! One commit of a topic's next range to its table: read from just after where the table
//! holds the partition (`pulsar.through.<partition>`) up to what consumers may read (the
//! transaction buffer's max read position), decode, add the value columns new schema versions
//! bring, write Parquet data files (one per publish-time partition) and append them in one
//! catalog swap that also moves `pulsar.through.<partition>`, through [`Guarded`].

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use iceberg::arrow::{schema_to_arrow_schema, RecordBatchPartitionSplitter};
use iceberg::spec::DataFileFormat;
use iceberg::table::Table;
use iceberg::transaction::{AddColumn, ApplyTransactionAction, Transaction};
use iceberg::writer::base_writer::data_file_writer::DataFileWriterBuilder;
use iceberg::writer::file_writer::location_generator::{
    DefaultFileNameGenerator, DefaultLocationGenerator,
};
use iceberg::writer::file_writer::rolling_writer::RollingFileWriterBuilder;
use iceberg::writer::file_writer::ParquetWriterBuilder;
use iceberg::writer::{IcebergWriter, IcebergWriterBuilder};
use iceberg::TableIdent;
use iceberg_catalog_sql::SqlCatalog;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use pulsar_rs_broker::schema::info::SchemaInfo;
use pulsar_rs_broker::service::BrokerService;
use pulsar_rs_broker::topic::Topic;
use pulsar_rs_ledger::{Entry, Position};

use crate::arrays::{self, Decoder};
use crate::catalog::{self, through_key, Guarded, SUPERSEDED};
use crate::columns::{FieldKind, ValueLayout};
use crate::error::TableError;
use crate::policy::PartitionBy;
use crate::rows;

/// Entries one commit reads at most (the rest goes in the next).
pub const MAX_ENTRIES: usize = 50_000;
/// Bytes of entries one commit reads at most.
pub const MAX_BYTES: u64 = 64 << 20;

/// What a commit did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Committed {
    /// Messages (rows) appended.
    pub rows: u64,
    /// Entries read.
    pub entries: u64,
    /// Data files appended.
    pub files: u64,
    /// Their bytes.
    pub file_bytes: u64,
    /// The position the table now holds the partition through (None: nothing to commit).
    pub through: Option<Position>,
    /// Whether entries remain after this range (read more now).
    pub more: bool,
}

/// Parses `ledger:entry`.
#[must_use]
pub fn parse_position(s: &str) -> Option<Position> {
    let (l, e) = s.split_once(':')?;
    Some(Position::new(
        l.trim().parse().ok()?,
        e.trim().parse().ok()?,
    ))
}

/// How far the table holds `partition`, as its property says.
#[must_use]
pub fn held_through(table: &Table, partition: i32) -> Option<Position> {
    table
        .metadata()
        .properties()
        .get(&through_key(partition))
        .and_then(|s| parse_position(s))
}

/// The entries after `through` up to `upto` (the commit's bounds). Blocking.
fn read(
    topic: &Topic,
    through: Option<Position>,
    upto: Position,
) -> Result<(Vec<Entry>, bool), TableError> {
    let ml = &topic.ledger;
    let first = ml.first_position();
    let after = through.map_or(first, |t| t.max(first));
    let mut from = ml.next_valid_position(after);
    let mut out = Vec::new();
    let mut bytes = 0u64;
    while from <= upto && out.len() < MAX_ENTRIES && bytes < MAX_BYTES {
        let batch = ml.read_entries(from, MAX_ENTRIES - out.len(), MAX_BYTES - bytes, upto)?;
        let Some(tail) = batch.last().map(|e| e.position) else {
            break;
        };
        bytes += batch.iter().map(|e| e.data.len() as u64).sum::<u64>();
        out.extend(batch);
        if tail >= upto {
            return Ok((out, false));
        }
        from = ml.next_valid_position(tail);
    }
    let more = out.last().is_some_and(|e| e.position < upto);
    Ok((out, more))
}

/// The schema versions of the base topic, by number.
fn versions(service: &BrokerService, topic: &Topic) -> Result<Vec<SchemaInfo>, TableError> {
    Ok(service.schemas.versions(&topic.name.base().to_string())?)
}

/// Commits the next range of `topic` (a partition or a whole topic) to its table.
///
/// Blocking (reads entries) and async (the catalog): run on the committer's own runtime.
///
/// # Errors
/// [`TableError::Superseded`] when another writer committed this partition meanwhile;
/// storage, catalog and file failures.
pub async fn commit_next(
    catalog: &Arc<SqlCatalog>,
    service: &BrokerService,
    topic: &Arc<Topic>,
    partition_by: PartitionBy,
) -> Result<Committed, TableError> {
    let name = topic.name.base();
    let id = catalog::ident(&name.tenant, &name.namespace, &name.local)?;
    let all_versions = versions(service, topic)?;
    let latest = all_versions.iter().rev().find(|v| !v.deleted);
    let layout = ValueLayout::of(latest)?;
    let mut table = catalog::load_or_create(catalog, &id, &layout.columns(), partition_by).await?;
    let partition = topic.partition;
    let through = held_through(&table, partition);
    let upto = topic.max_read_position();
    let (entries, more) = read(topic, through, upto)?;
    let tb = topic.txn_buffer.clone();
    let decoded = rows::decode(&entries, &|info| {
        tb.as_ref().is_some_and(|tb| tb.hides(info))
    });
    let Some(new_through) = decoded.through else {
        return Ok(Committed::default());
    };
    if decoded.unreadable > 0 {
        tracing::warn!(topic = %topic.name, entries = decoded.unreadable, "entries that do not parse are left out of the table");
    }
    // The value columns of every schema version the range uses.
    let used: BTreeSet<Option<i64>> = decoded.rows.iter().map(|r| r.schema_version).collect();
    let mut decoders: HashMap<Option<i64>, Decoder> = HashMap::new();
    let mut kinds: HashMap<String, FieldKind> = HashMap::new();
    let mut wanted: Vec<(String, FieldKind)> = Vec::new();
    for v in &used {
        // A message without a version (a producer without a schema) reads as the topic's
        // latest schema, as a consumer with the topic's schema reads it.
        let info = match v {
            Some(n) => usize::try_from(*n)
                .ok()
                .and_then(|n| all_versions.get(n))
                .filter(|i| !i.deleted),
            None => latest,
        };
        let layout = ValueLayout::of(info)?;
        for (c, k) in layout.columns() {
            if !kinds.contains_key(&c) {
                kinds.insert(c.clone(), k);
                wanted.push((c, k));
            }
        }
        decoders.insert(*v, Decoder::of(&layout, info.map_or(&[][..], |i| &i.data)));
    }
    let missing = crate::columns::missing(table.metadata().current_schema(), &wanted);
    if !missing.is_empty() {
        table = add_columns(catalog, &id, &missing).await?;
    }
    let mut committed = Committed {
        rows: decoded.rows.len() as u64,
        entries: entries.len() as u64,
        through: Some(new_through),
        more,
        ..Committed::default()
    };
    let mut tx = Transaction::new(&table);
    if !decoded.rows.is_empty() {
        let schema = table.metadata().current_schema().clone();
        let arrow = Arc::new(schema_to_arrow_schema(&schema)?);
        let batch = arrays::batch(&arrow, &decoded.rows, partition, &kinds, &decoders)?;
        let files = write_files(&table, batch).await?;
        committed.files = files.len() as u64;
        committed.file_bytes = files.iter().map(|f| f.file_size_in_bytes()).sum();
        let summary = HashMap::from([
            ("pulsar.topic".to_owned(), topic.name.to_string()),
            ("pulsar.partition".to_owned(), partition.to_string()),
            (
                "pulsar.from".to_owned(),
                decoded
                    .rows
                    .first()
                    .map(|r| r.position.to_string())
                    .unwrap_or_default(),
            ),
            ("pulsar.through".to_owned(), new_through.to_string()),
        ]);
        tx = tx
            .fast_append()
            .add_data_files(files)
            .set_snapshot_properties(summary)
            .apply(tx)?;
    }
    tx = tx
        .update_table_properties()
        .set(
            through_key(partition),
            format!("{}:{}", new_through.ledger_id, new_through.entry_id),
        )
        .apply(tx)?;
    let guard = Guarded {
        inner: Arc::clone(catalog),
        key: through_key(partition),
        expected: table
            .metadata()
            .properties()
            .get(&through_key(partition))
            .cloned(),
    };
    match tx.commit(&guard).await {
        Ok(_) => Ok(committed),
        Err(e) if e.message().starts_with(SUPERSEDED) => Err(TableError::Superseded(e.to_string())),
        Err(e) => Err(e.into()),
    }
}

/// Adds optional value columns (a compatible schema version with new fields); another
/// partition adding them first is fine.
async fn add_columns(
    catalog: &Arc<SqlCatalog>,
    id: &TableIdent,
    missing: &[(String, FieldKind)],
) -> Result<Table, TableError> {
    use iceberg::Catalog;
    for _ in 0..3 {
        let table = catalog.load_table(id).await?;
        let still = crate::columns::missing(table.metadata().current_schema(), missing);
        if still.is_empty() {
            return Ok(table);
        }
        let mut tx = Transaction::new(&table);
        let mut update = tx.update_schema();
        for (name, kind) in &still {
            update = update.add_column(AddColumn::optional(name, kind.iceberg_type()));
        }
        tx = update.apply(tx)?;
        match tx.commit(catalog.as_ref()).await {
            Ok(t) => return Ok(t),
            Err(e) if e.retryable() => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Ok(catalog.load_table(id).await?)
}

/// Writes `batch` as Parquet data files, one per publish-time partition.
async fn write_files(
    table: &Table,
    batch: arrow_array::RecordBatch,
) -> Result<Vec<iceberg::spec::DataFile>, TableError> {
    let schema = table.metadata().current_schema().clone();
    let spec = table.metadata().default_partition_spec().clone();
    let parts: Vec<(
        Option<iceberg::spec::PartitionKey>,
        arrow_array::RecordBatch,
    )> = if spec.is_unpartitioned() {
        vec![(None, batch)]
    } else {
        RecordBatchPartitionSplitter::try_new_with_computed_values(schema.clone(), spec)?
            .split(&batch)?
            .into_iter()
            .map(|(k, b)| (Some(k), b))
            .collect()
    };
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .build();
    let mut files = Vec::new();
    let prefix = unique_prefix();
    for (key, part) in parts {
        let location = DefaultLocationGenerator::new(table.metadata())?;
        let names = DefaultFileNameGenerator::new(prefix.clone(), None, DataFileFormat::Parquet);
        let rolling = RollingFileWriterBuilder::new_with_default_file_size(
            ParquetWriterBuilder::new(props.clone(), schema.clone()),
            table.file_io().clone(),
            location,
            names,
        );
        let mut writer = DataFileWriterBuilder::new(rolling).build(key).await?;
        writer.write(part).await?;
        files.extend(writer.close().await?);
    }
    Ok(files)
}

/// A name prefix no other commit uses (files of an abandoned commit stay orphaned under their
/// own names, never overwritten).
fn unique_prefix() -> String {
    format!("pulsar-{}", uuid::Uuid::new_v4())
}
