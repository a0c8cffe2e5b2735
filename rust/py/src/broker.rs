//! `Broker`: a complete pulsar_rs broker running in-process on a shared Tokio runtime.
//!
//! `Broker(data_dir=None, port=0, admin_port=0, **settings)` opens the data directory (a
//! temporary one, removed on stop, when `data_dir` is None), binds the ports (0 = ephemeral) and
//! serves until `stop()` or the end of a `with` block. Settings are Pulsar's `broker.conf` keys.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use pulsar_rs_broker::{BrokerConfig, BrokerError};
use pulsar_rs_server::{Server, ServerError};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyString};

use crate::error::{self, broker_err, ServerError as PyServerError};

fn server_err(py: Python<'_>, e: ServerError) -> PyErr {
    match e {
        ServerError::Broker(b) => broker_err(py, b),
        other => PyServerError::new_err(other.to_string()),
    }
}

/// Python value → JSON, for the settings map.
fn json_value(py: Python<'_>, key: &str, v: &Bound<'_, PyAny>) -> PyResult<serde_json::Value> {
    if v.is_instance_of::<PyBool>() {
        return Ok(serde_json::Value::Bool(v.extract()?));
    }
    if v.is_instance_of::<PyInt>() {
        return match v.extract::<i64>() {
            Ok(i) => Ok(serde_json::Value::from(i)),
            Err(_) => Err(error::invalid_config(py, key, "integer out of range")),
        };
    }
    if v.is_instance_of::<PyFloat>() {
        return Ok(serde_json::Value::from(v.extract::<f64>()?));
    }
    if v.is_instance_of::<PyString>() {
        return Ok(serde_json::Value::String(v.extract()?));
    }
    if v.is_none() {
        return Ok(serde_json::Value::Null);
    }
    // Lists (e.g. `superUserRoles=["admin"]`).
    if v.is_instance_of::<pyo3::types::PyList>() || v.is_instance_of::<pyo3::types::PyTuple>() {
        let items: PyResult<Vec<serde_json::Value>> = v
            .try_iter()?
            .map(|item| json_value(py, key, &item?))
            .collect();
        return Ok(serde_json::Value::Array(items?));
    }
    Err(error::invalid_config(
        py,
        key,
        &format!("unsupported value type {}", v.get_type().name()?),
    ))
}

/// Builds a [`BrokerConfig`] from keyword settings.
pub(crate) fn config_from(
    py: Python<'_>,
    settings: Option<&Bound<'_, PyDict>>,
) -> PyResult<BrokerConfig> {
    let mut map = serde_json::Map::new();
    if let Some(s) = settings {
        for (k, v) in s.iter() {
            let key: String = k.extract()?;
            let value = json_value(py, &key, &v)?;
            map.insert(key, value);
        }
    }
    let cfg = BrokerConfig::from_json_map(map).map_err(|e| broker_err(py, e))?;
    if let Some(w) = cfg.unimplemented_warning() {
        let category = py.get_type::<pyo3::exceptions::PyUserWarning>();
        let msg = std::ffi::CString::new(w).unwrap_or_default();
        PyErr::warn(py, &category, &msg, 1)?;
    }
    Ok(cfg)
}

/// JSON value → Python object.
fn py_value<'py>(py: Python<'py>, v: &serde_json::Value) -> PyResult<Bound<'py, PyAny>> {
    use pyo3::IntoPyObjectExt;
    Ok(match v {
        serde_json::Value::Null => py.None().into_bound(py),
        serde_json::Value::Bool(b) => b.into_bound_py_any(py)?,
        serde_json::Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => i.into_bound_py_any(py)?,
            (None, Some(u)) => u.into_bound_py_any(py)?,
            _ => n.as_f64().unwrap_or(f64::NAN).into_bound_py_any(py)?,
        },
        serde_json::Value::String(s) => s.into_bound_py_any(py)?,
        serde_json::Value::Array(items) => {
            let list = pyo3::types::PyList::empty(py);
            for item in items {
                list.append(py_value(py, item)?)?;
            }
            list.into_any()
        }
        serde_json::Value::Object(m) => {
            let d = PyDict::new(py);
            for (k, item) in m {
                d.set_item(k, py_value(py, item)?)?;
            }
            d.into_any()
        }
    })
}

/// Reads a broker configuration file — Pulsar's own `broker.conf` / `standalone.conf` (Java
/// properties) or TOML — into keyword settings for `Broker(**settings)`: only the keys the file
/// sets, typed. The whole file is checked: a key Pulsar does not have or a bad value raises
/// `InvalidConfigError` naming it.
#[pyfunction]
pub fn read_config<'py>(py: Python<'py>, path: PathBuf) -> PyResult<Bound<'py, PyDict>> {
    let map = py
        .detach(|| {
            let map = pulsar_rs_broker::config::load::file_settings(&path)?;
            BrokerConfig::from_json_map(map.clone())?;
            Ok::<_, BrokerError>(map)
        })
        .map_err(|e| broker_err(py, e))?;
    let d = PyDict::new(py);
    for (k, v) in &map {
        d.set_item(k, py_value(py, v)?)?;
    }
    Ok(d)
}

/// A running in-process broker.
#[pyclass(name = "Broker", module = "pulsar_rs._native", frozen)]
pub struct PyBroker {
    /// The server while running; taken by `stop`. Locked only to take it.
    server: Mutex<Option<Server>>,
    /// This broker's own runtime, `numIOThreads` workers; `None` only once dropped.
    rt: Option<Arc<tokio::runtime::Runtime>>,
    service_url: String,
    admin_url: String,
    /// `pulsar+ssl://host:port` when `brokerServicePortTls` is set.
    service_url_tls: Option<String>,
    /// `https://host:port` when `webServicePortTls` is set.
    admin_url_tls: Option<String>,
    data_dir: PathBuf,
    /// The temporary data directory when none was given; removed when the broker is dropped.
    temp: Mutex<Option<tempfile::TempDir>>,
}

impl PyBroker {
    /// This broker's runtime.
    fn rt(&self) -> Arc<tokio::runtime::Runtime> {
        Arc::clone(
            self.rt
                .as_ref()
                .expect("the runtime lives as long as the broker"),
        )
    }

    /// The running broker's service.
    fn service(&self) -> PyResult<Arc<pulsar_rs_broker::BrokerService>> {
        self.server
            .lock()
            .map_err(|_| PyRuntimeError::new_err("broker lock poisoned"))?
            .as_ref()
            .map(|s| Arc::clone(&s.ctx.service))
            .ok_or_else(|| PyServerError::new_err("the broker is stopped"))
    }
}

#[pymethods]
impl PyBroker {
    #[new]
    #[pyo3(signature = (data_dir=None, port=0, admin_port=0, clock=None, **settings))]
    fn new(
        py: Python<'_>,
        data_dir: Option<PathBuf>,
        port: u16,
        admin_port: u16,
        clock: Option<PyRef<'_, crate::clock::PyManualClock>>,
        settings: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let mut cfg = config_from(py, settings)?;
        cfg.broker_service_port = port;
        cfg.web_service_port = admin_port;
        let (dir, temp) = match data_dir {
            Some(d) => (d, None),
            None => {
                let t = tempfile::Builder::new()
                    .prefix("pulsar-rs-")
                    .tempdir()
                    .map_err(|e| {
                        PyServerError::new_err(format!("creating a temporary data dir: {e}"))
                    })?;
                (t.path().to_path_buf(), Some(t))
            }
        };
        let rt = pulsar_rs_server::io_runtime(&cfg)
            .map(Arc::new)
            .map_err(|e| PyServerError::new_err(format!("starting the broker's threads: {e}")))?;
        let d = dir.clone();
        let r = Arc::clone(&rt);
        let seams = pulsar_rs_server::Seams {
            fs: None,
            clock: clock.map(|c| Arc::clone(&c.inner) as Arc<dyn pulsar_rs_clock::Clock>),
        };
        let server = py
            .detach(move || r.block_on(Server::start_with(cfg, d, seams)))
            .map_err(|e| server_err(py, e))?;
        Ok(PyBroker {
            service_url: server.service_url().to_owned(),
            admin_url: server.admin_url(),
            service_url_tls: server.service_url_tls().map(str::to_owned),
            admin_url_tls: server.admin_url_tls().map(str::to_owned),
            data_dir: dir,
            server: Mutex::new(Some(server)),
            rt: Some(rt),
            temp: Mutex::new(temp),
        })
    }

    /// `pulsar://host:port`, for `pulsar.Client`.
    #[getter]
    fn service_url(&self) -> &str {
        &self.service_url
    }

    /// `http://host:port` of the admin REST API and `/metrics`.
    #[getter]
    fn admin_url(&self) -> &str {
        &self.admin_url
    }

    /// `pulsar+ssl://host:port` when `brokerServicePortTls` is set, else `None`.
    #[getter]
    fn service_url_tls(&self) -> Option<&str> {
        self.service_url_tls.as_deref()
    }

    /// `https://host:port` of the admin API when `webServicePortTls` is set, else `None`.
    #[getter]
    fn admin_url_tls(&self) -> Option<&str> {
        self.admin_url_tls.as_deref()
    }

    /// The data directory.
    #[getter]
    fn data_dir(&self) -> PathBuf {
        self.data_dir.clone()
    }

    /// The binary protocol port.
    #[getter]
    fn port(&self) -> u16 {
        self.service_url
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or(0)
    }

    /// How many threads serve its connections (`numIOThreads`), as its runtime reports.
    #[getter]
    fn io_threads(&self) -> usize {
        self.rt().metrics().num_workers()
    }

    /// Whether it is serving.
    #[getter]
    fn running(&self) -> bool {
        self.server.lock().map(|s| s.is_some()).unwrap_or(false)
    }

    /// Stops serving, persists state and closes the data directory. Idempotent.
    fn stop(&self, py: Python<'_>) -> PyResult<()> {
        let server = self
            .server
            .lock()
            .map_err(|_| PyRuntimeError::new_err("broker lock poisoned"))?
            .take();
        if let Some(server) = server {
            let rt = self.rt();
            py.detach(move || rt.block_on(server.shutdown()))
                .map_err(|e| server_err(py, e))?;
        }
        Ok(())
    }

    /// Removes the temporary data directory (if one was created); the broker must be stopped.
    fn cleanup(&self, py: Python<'_>) -> PyResult<()> {
        self.stop(py)?;
        if let Ok(mut t) = self.temp.lock() {
            t.take();
        }
        Ok(())
    }

    /// Runs one message-expiry check now (Pulsar's `BrokerService.checkMessageExpiry`, which
    /// the broker runs every `messageExpiryCheckIntervalInMinutes`; Pulsar's own tests call it
    /// directly, as this does).
    fn check_message_expiry(&self, py: Python<'_>) -> PyResult<()> {
        let service = self.service()?;
        py.detach(move || service.check_message_expiry(service.clock().now_ms()));
        Ok(())
    }

    /// Runs one inactive-topic check now (Pulsar's `BrokerService.checkGC`, run every
    /// `brokerDeleteInactiveTopicsFrequencySeconds`); returns the names of the topics deleted.
    fn check_gc(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        let service = self.service()?;
        Ok(py.detach(move || service.check_gc().iter().map(ToString::to_string).collect()))
    }

    /// Exports the broker's state as Arrow tables: name → stream (`pyarrow.table(stream)`);
    /// `progress` is called with `(topics_done, topics_total, rows)` as topics are exported.
    #[pyo3(signature = (progress=None))]
    fn export_tables<'py>(
        &self,
        py: Python<'py>,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let service = self.service()?;
        crate::export::export_service(py, service, progress, self.rt().handle())
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<bool> {
        self.cleanup(py)?;
        Ok(false)
    }

    fn __repr__(&self) -> String {
        format!(
            "Broker(service_url={:?}, admin_url={:?}, running={})",
            self.service_url,
            self.admin_url,
            self.running()
        )
    }
}

impl Drop for PyBroker {
    fn drop(&mut self) {
        let server = self.server.lock().ok().and_then(|mut s| s.take());
        let Some(rt) = self.rt.take() else {
            return;
        };
        Python::attach(|py| {
            py.detach(move || {
                if let Some(server) = server {
                    let _ = rt.block_on(server.shutdown());
                }
                // The last holder stops the threads; a task still running after the server's
                // shutdown (none is expected) is abandoned rather than waited on forever.
                if let Ok(rt) = Arc::try_unwrap(rt) {
                    rt.shutdown_timeout(std::time::Duration::from_secs(5));
                }
            });
        });
    }
}

/// Turns on log output (tracing) at `level` (e.g. "info", "debug", "pulsar_rs_server=debug"),
/// as text lines or one JSON object per line (`format="json"`).
#[pyfunction]
#[pyo3(signature = (level="info", format="text"))]
pub fn enable_logging(level: &str, format: &str) -> PyResult<()> {
    let filter = tracing_subscriber::EnvFilter::try_new(level)
        .map_err(|e| error::invalid_config_plain(&format!("bad log filter {level:?}: {e}")))?;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        "text" => builder.try_init(),
        "json" => builder.json().try_init(),
        other => {
            return Err(error::invalid_config_plain(&format!(
                "log format must be text or json, not {other:?}"
            )))
        }
    };
    Ok(())
}
