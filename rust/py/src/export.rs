//! Arrow exports handed to pyarrow without copying, through the Arrow C stream interface
//! (`__arrow_c_stream__` PyCapsules): `pyarrow.table(stream)` takes the Rust-built buffers as is.

use std::ffi::CString;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{RecordBatch, RecordBatchIterator};
use arrow_schema::SchemaRef;
use pulsar_rs_broker::{BrokerConfig, BrokerService};
use pulsar_rs_export::{ExportError, Progress, Table};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict};

use crate::error::{self, BrokerError as PyBrokerError};

/// The runtime of work that belongs to no broker (offline exports).
pub(crate) fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .thread_name("pulsar-rs")
            .build()
            .expect("cannot start the Tokio runtime")
    })
}

/// One exported table, consumable once as an Arrow C stream.
#[pyclass(name = "ArrowStream", module = "pulsar_rs._native", frozen)]
pub struct PyArrowStream {
    /// Table name.
    #[pyo3(get)]
    name: &'static str,
    /// Row count.
    #[pyo3(get)]
    num_rows: usize,
    schema: SchemaRef,
    /// The batches until a consumer takes them.
    batches: Mutex<Option<Vec<RecordBatch>>>,
}

#[pymethods]
impl PyArrowStream {
    /// The Arrow PyCapsule stream protocol. The batches move to the consumer (once).
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema; // we only produce our own schema; consumers cast if they wish
        let batches = self
            .batches
            .lock()
            .map_err(|_| PyValueError::new_err("stream lock poisoned"))?
            .take()
            .ok_or_else(|| {
                PyValueError::new_err(format!("the {} stream was already consumed", self.name))
            })?;
        let reader =
            RecordBatchIterator::new(batches.into_iter().map(Ok), Arc::clone(&self.schema));
        let stream = FFI_ArrowArrayStream::new(Box::new(reader));
        let name =
            CString::new("arrow_array_stream").map_err(|e| PyValueError::new_err(e.to_string()))?;
        // Dropping an FFI stream that a consumer moved out is a no-op (its release is null).
        PyCapsule::new_with_destructor(py, stream, Some(name), |stream, _| drop(stream))
    }

    fn __repr__(&self) -> String {
        format!(
            "ArrowStream(name={:?}, num_rows={})",
            self.name, self.num_rows
        )
    }
}

fn export_err(py: Python<'_>, e: ExportError) -> PyErr {
    match e {
        ExportError::Ledger(l) => error::to_py_err(py, l),
        ExportError::Broker(b) => crate::error::broker_err(py, b),
        other => PyBrokerError::new_err(other.to_string()),
    }
}

pub(crate) fn tables_to_dict(py: Python<'_>, tables: Vec<Table>) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    for t in tables {
        let stream = PyArrowStream {
            name: t.name,
            num_rows: t.num_rows(),
            schema: t.schema,
            batches: Mutex::new(Some(t.batches)),
        };
        d.set_item(t.name, Bound::new(py, stream)?)?;
    }
    Ok(d)
}

/// A progress callback from Python, called with `(topics_done, topics_total, rows)`; the first
/// exception it raises stops the export and is re-raised.
struct Reporter {
    /// The callable (or none).
    callback: Option<Py<PyAny>>,
    /// The exception that stopped the export.
    error: Option<PyErr>,
}

impl Reporter {
    fn new(callback: Option<Py<PyAny>>) -> Self {
        Reporter {
            callback,
            error: None,
        }
    }

    /// Called on the export's thread, without the GIL: takes it for the call.
    fn report(&mut self, p: Progress) -> bool {
        let Some(cb) = &self.callback else {
            return true;
        };
        let outcome = Python::attach(|py| {
            py.check_signals()?;
            cb.call1(py, (p.topics_done, p.topics_total, p.rows))
                .map(drop)
        });
        match outcome {
            Ok(()) => true,
            Err(e) => {
                self.error = Some(e);
                false
            }
        }
    }

    /// The export's result, with the callback's exception in place of the cancellation.
    fn finish<'py>(
        self,
        py: Python<'py>,
        result: Result<Vec<Table>, ExportError>,
    ) -> PyResult<Bound<'py, PyDict>> {
        match (result, self.error) {
            (Err(ExportError::Cancelled), Some(e)) => Err(e),
            (r, _) => tables_to_dict(py, r.map_err(|e| export_err(py, e))?),
        }
    }
}

/// Exports a running broker's state.
pub(crate) fn export_service<'py>(
    py: Python<'py>,
    service: Arc<BrokerService>,
    progress: Option<Py<PyAny>>,
    rt: &tokio::runtime::Handle,
) -> PyResult<Bound<'py, PyDict>> {
    let mut reporter = Reporter::new(progress);
    let result = py.detach(|| {
        // Loading topics starts their dispatchers, which need the broker's runtime.
        let _guard = rt.enter();
        pulsar_rs_export::snapshot_with_progress(&service, &mut |p| reporter.report(p))
    });
    reporter.finish(py, result)
}

/// The settings an export reads offloaded ledgers with: the tiered-storage keys of the broker's
/// configuration file (`config`), or none.
fn export_config(config: Option<&PathBuf>) -> Result<BrokerConfig, ExportError> {
    let cfg = match config {
        Some(path) => BrokerConfig::from_file(path)?,
        None => BrokerConfig::default(),
    };
    pulsar_rs_server::offloaders::check(&cfg).map_err(|e| {
        ExportError::from(pulsar_rs_ledger::LedgerError::Offload {
            context: e.to_string(),
        })
    })?;
    Ok(BrokerConfig {
        offload_properties: cfg.offload_properties,
        cluster_name: cfg.cluster_name,
        ..BrokerConfig::default()
    })
}

/// Exports a data directory offline, opened read-only: nothing in it is changed (no
/// housekeeping, no truncation), so it is safe on a copy of a live broker's directory; `progress`
/// is called with `(topics_done, topics_total, rows)` as topics are exported. `config`: the
/// broker's configuration file, whose tiered-storage keys let offloaded ledgers be read.
#[pyfunction]
#[pyo3(signature = (path, progress=None, config=None))]
pub fn export_data_dir(
    py: Python<'_>,
    path: PathBuf,
    progress: Option<Py<PyAny>>,
    config: Option<PathBuf>,
) -> PyResult<Bound<'_, PyDict>> {
    let mut reporter = Reporter::new(progress);
    let result = py.detach(|| -> Result<Vec<Table>, ExportError> {
        let _guard = runtime().enter();
        let config = export_config(config.as_ref())?;
        let cluster = config.cluster_name.clone();
        let service = BrokerService::open_read_only(config, &path)?;
        service.set_offloader_factory(pulsar_rs_server::offloaders::factory(&cluster));
        let tables =
            pulsar_rs_export::snapshot_with_progress(&service, &mut |p| reporter.report(p));
        service.close()?;
        tables
    });
    reporter.finish(py, result)
}

/// Exports the topics a Pulsar cluster keeps on BookKeeper, read from its metadata store
/// (`metadata_store_url`, Pulsar's `metadataStoreUrl`: `zk:host:port[,host:port]`, or
/// `etcd:http://host:port` with BookKeeper's own metadata at `bookkeeper_metadata_service_uri`,
/// Pulsar's `bookkeeperMetadataServiceUri`): every managed ledger under `/managed-ledgers`,
/// whichever broker (pulsar-rs or Apache Pulsar) wrote it, its entries read from the bookies.
/// Read-only: nothing is fenced or written, so the brokers serving those topics go on; a ledger
/// still being written is read up to its last add confirmed.
#[pyfunction]
#[pyo3(signature = (metadata_store_url, progress=None, bookkeeper_metadata_service_uri=None, config=None))]
pub fn export_metadata_store(
    py: Python<'_>,
    metadata_store_url: String,
    progress: Option<Py<PyAny>>,
    bookkeeper_metadata_service_uri: Option<String>,
    config: Option<PathBuf>,
) -> PyResult<Bound<'_, PyDict>> {
    let mut reporter = Reporter::new(progress);
    let result = py.detach(|| -> Result<Option<Vec<Table>>, ExportError> {
        let _guard = runtime().enter();
        let config = BrokerConfig {
            metadata_store_url,
            bookkeeper_metadata_service_uri: bookkeeper_metadata_service_uri.unwrap_or_default(),
            ..export_config(config.as_ref())?
        };
        let cluster = config.cluster_name.clone();
        let Some(backing) = pulsar_rs_server::bookkeeper::backing(&config)? else {
            return Ok(None);
        };
        // The broker's own records (policies, schemas' index) are not in the store: none.
        let empty = tempfile::tempdir().map_err(|e| {
            pulsar_rs_ledger::LedgerError::io("making an empty directory for the export", e)
        })?;
        let service = BrokerService::open_read_only_on_backing(config, empty.path(), backing)?;
        service.set_offloader_factory(pulsar_rs_server::offloaders::factory(&cluster));
        let tables =
            pulsar_rs_export::snapshot_with_progress(&service, &mut |p| reporter.report(p));
        service.close()?;
        tables.map(Some)
    });
    match result {
        Ok(None) => Err(PyValueError::new_err(
            "metadata_store_url names no ZooKeeper or etcd (expected zk:host:port[,host:port] or etcd:http://host:port)",
        )),
        other => reporter.finish(py, other.map(Option::unwrap_or_default)),
    }
}
