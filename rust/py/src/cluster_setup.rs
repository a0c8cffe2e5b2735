//! `initialize_cluster_metadata`: `pulsar initialize-cluster-metadata` for a new cluster's
//! ZooKeeper (`pulsar_rs_server::cluster_setup`), with the GIL released while it writes.

use std::time::Duration;

use pulsar_rs_cluster::setup::{ClusterSetup, SETUP_BUNDLES, SETUP_TRANSACTION_COORDINATORS};
use pulsar_rs_server::cluster_setup::{initialize, InitializeClusterMetadata};
use pulsar_rs_server::ServerError;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::error::MetadataStoreError;

/// Writes a new cluster's records in its metadata store as `pulsar initialize-cluster-metadata`
/// does (BookKeeper's `/ledgers` format unless `existing_bookkeeper`, the cluster, the tenants
/// `public` and `pulsar`, the namespaces `public/default` and `pulsar/system`, the transaction
/// coordinators' topic); records that exist are kept (a cluster is added to their lists).
/// `None` counts are Pulsar's defaults (16 and 16). Returns whether BookKeeper's metadata was
/// formatted.
#[pyfunction]
#[pyo3(signature = (
    cluster,
    web_service_url,
    metadata_store_url,
    configuration_metadata_store_url,
    *,
    web_service_url_tls=None,
    broker_service_url=None,
    broker_service_url_tls=None,
    default_namespace_bundles=None,
    transaction_coordinators=None,
    existing_bookkeeper=false,
    session_timeout_ms=30_000,
))]
#[allow(clippy::too_many_arguments)] // Pulsar's flags, one keyword each
pub fn initialize_cluster_metadata(
    py: Python<'_>,
    cluster: String,
    web_service_url: String,
    metadata_store_url: String,
    configuration_metadata_store_url: String,
    web_service_url_tls: Option<String>,
    broker_service_url: Option<String>,
    broker_service_url_tls: Option<String>,
    default_namespace_bundles: Option<u32>,
    transaction_coordinators: Option<u32>,
    existing_bookkeeper: bool,
    session_timeout_ms: u64,
) -> PyResult<bool> {
    let args = InitializeClusterMetadata {
        setup: ClusterSetup {
            cluster,
            web_service_url,
            web_service_url_tls,
            broker_service_url,
            broker_service_url_tls,
            // Pulsar's `-bn 0` (its default) is the default count too.
            default_namespace_bundles: default_namespace_bundles
                .filter(|&n| n > 0)
                .unwrap_or(SETUP_BUNDLES),
            transaction_coordinators: transaction_coordinators
                .unwrap_or(SETUP_TRANSACTION_COORDINATORS),
        },
        metadata_store_url,
        configuration_metadata_store_url,
        existing_bookkeeper,
        session_timeout: Duration::from_millis(session_timeout_ms.max(1)),
    };
    let done = py.detach(|| crate::export::runtime().block_on(initialize(&args)));
    match done {
        Ok(d) => Ok(d.formatted_bookkeeper),
        Err(ServerError::BadRequest(reason)) => Err(PyValueError::new_err(reason)),
        Err(ServerError::Metadata(e)) => Err(MetadataStoreError::new_err(e.to_string())),
        Err(other) => Err(crate::error::ServerError::new_err(other.to_string())),
    }
}
