//! The topic tables' settings (`icebergCatalogUri`, `icebergWarehouse`, `icebergCatalogName`),
//! checked at start-up so a bad catalog stops the broker with the key named, and the committer
//! they start. The warehouse defaults to `warehouse/` beside the catalog's file.

use std::sync::Arc;

use pulsar_rs_broker::{BrokerConfig, BrokerService};
use pulsar_rs_table::{TableCommitter, TableConfig};

use crate::ServerError;

fn table_config(config: &BrokerConfig) -> Result<Option<TableConfig>, ServerError> {
    let bad = |e: pulsar_rs_table::TableError| ServerError::BadRequest(format!("invalid topic table settings: {e}"));
    let Some(first) = TableConfig::from_keys(
        &config.iceberg_catalog_uri,
        "/",
        &config.iceberg_catalog_name,
    )
    .map_err(bad)?
    else {
        return Ok(None);
    };
    let warehouse = if config.iceberg_warehouse.trim().is_empty() {
        let dir = std::path::Path::new(&first.catalog_path)
            .parent()
            .map_or_else(|| "/".to_owned(), |d| d.display().to_string());
        format!("{}/warehouse", dir.trim_end_matches('/'))
    } else {
        config.iceberg_warehouse.clone()
    };
    TableConfig::from_keys(&config.iceberg_catalog_uri, &warehouse, &config.iceberg_catalog_name)
        .map_err(bad)
}

/// Checks the settings.
///
/// # Errors
/// [`ServerError::BadRequest`] naming the key.
pub fn check(config: &BrokerConfig) -> Result<(), ServerError> {
    table_config(config).map(|_| ())
}

/// Starts the committer when a catalog is configured.
///
/// # Errors
/// [`ServerError::BadRequest`]: bad settings, or the committer's thread did not start.
pub fn start(service: &Arc<BrokerService>) -> Result<Option<Arc<TableCommitter>>, ServerError> {
    let Some(config) = table_config(&service.config)? else {
        return Ok(None);
    };
    TableCommitter::start(config, Arc::clone(service))
        .map(|c| Some(Arc::new(c)))
        .map_err(|e| ServerError::BadRequest(e.to_string()))
}
