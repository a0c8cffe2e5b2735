//! The topic tables' settings (`icebergCatalogUri`, `icebergWarehouse`, `icebergCatalogName`,
//! `icebergS3Endpoint`, `icebergS3Region`),
//! checked at start-up so a bad catalog stops the broker with the key named, and the committer
//! they start.

use std::sync::Arc;

use pulsar_rs_broker::{BrokerConfig, BrokerService};
use pulsar_rs_table::{TableCommitter, TableConfig};

use crate::ServerError;

fn table_config(config: &BrokerConfig) -> Result<Option<TableConfig>, ServerError> {
    TableConfig::from_keys(
        &config.iceberg_catalog_uri,
        &config.iceberg_warehouse,
        &config.iceberg_catalog_name,
    )
    .and_then(|c| {
        c.map(|c| c.with_s3_service(&config.iceberg_s3_endpoint, &config.iceberg_s3_region))
            .transpose()
    })
    .map_err(|e| ServerError::BadRequest(format!("invalid topic table settings: {e}")))
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
