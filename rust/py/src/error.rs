//! The Python exception hierarchy, and the one helper every blocking call goes through.
//!
//! Everything pulsar_rs raises derives from `PulsarRsError` (an `Exception`); there is one subclass
//! per [`LedgerError`] variant, never a bare `RuntimeError`. Some also derive from the builtin
//! a caller would naturally catch: `LedgerIoError` is an `OSError`, `InvalidConfigError`,
//! `InvalidPositionError` and `InvalidNameError` are `ValueError`s. Those multi-base classes are
//! created once per interpreter with `type(name, bases, ns)`; the single-base ones with
//! [`create_exception!`] (the pattern to follow for broker errors).
//!
//! Structured details ride along as attributes: `InvalidConfigError.key`,
//! `CorruptEntryError.ledger_id/.entry_id/.segment/.offset`, `CorruptMetadataError.key`,
//! `InvalidPositionError.ledger/.position`, `InvalidNameError.name`.
//!
//! [`blocking`] runs a storage call with the GIL released (`Python::detach`) and maps its error.

use pulsar_rs_ledger::LedgerError;
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyString, PyTuple, PyType};

use crate::position::PyPosition;

const MODULE: &str = "pulsar_rs";

create_exception!(
    pulsar_rs,
    PulsarRsError,
    PyException,
    "Base class of every error raised by pulsar_rs."
);
create_exception!(
    pulsar_rs,
    CorruptEntryError,
    PulsarRsError,
    "A stored entry failed its checksum or framing check (attributes: ledger_id, entry_id, segment, offset)."
);
create_exception!(
    pulsar_rs,
    CorruptMetadataError,
    PulsarRsError,
    "A metadata record (ledger list, cursor state) is damaged (attribute: key)."
);
create_exception!(
    pulsar_rs,
    BrokerError,
    PulsarRsError,
    "A broker operation failed (topic, subscription, producer or consumer state)."
);
create_exception!(
    pulsar_rs,
    ServerError,
    PulsarRsError,
    "The server could not start or stop (ports, runtime, data directory)."
);
create_exception!(
    pulsar_rs,
    DataDirLockedError,
    PulsarRsError,
    "The data directory is already open in another broker or storage instance."
);
create_exception!(
    pulsar_rs,
    ReadOnlyError,
    PulsarRsError,
    "A write was attempted on a data directory opened read-only (export, inspection)."
);
create_exception!(
    pulsar_rs,
    PerfError,
    PulsarRsError,
    "The load generator (`pulsar-rs perf`) failed: connection, protocol or broker refusal."
);
create_exception!(
    pulsar_rs,
    ClosedError,
    PulsarRsError,
    "The managed ledger, cursor or storage has been closed."
);
create_exception!(
    pulsar_rs,
    MetadataStoreError,
    PulsarRsError,
    "The cluster's metadata store (ZooKeeper) failed, or a record there changed meanwhile or does not parse."
);
create_exception!(
    pulsar_rs,
    TerminatedError,
    PulsarRsError,
    "The managed ledger was terminated (Pulsar's topic termination): it takes no more entries."
);

/// An exception class with several bases, built on first use.
struct MultiBase {
    name: &'static str,
    doc: &'static str,
    cell: PyOnceLock<Py<PyType>>,
}

impl MultiBase {
    const fn new(name: &'static str, doc: &'static str) -> Self {
        MultiBase {
            name,
            doc,
            cell: PyOnceLock::new(),
        }
    }

    fn get<'py>(
        &'static self,
        py: Python<'py>,
        bases: impl FnOnce(Python<'py>) -> PyResult<Vec<Bound<'py, PyType>>>,
    ) -> PyResult<Bound<'py, PyType>> {
        let ty = self.cell.get_or_try_init(py, || -> PyResult<Py<PyType>> {
            let bases = PyTuple::new(py, bases(py)?)?;
            let ns = PyDict::new(py);
            ns.set_item("__module__", MODULE)?;
            ns.set_item("__doc__", self.doc)?;
            let ty = py
                .get_type::<PyType>()
                .call1((self.name, bases, ns))?
                .cast_into::<PyType>()?;
            Ok(ty.unbind())
        })?;
        Ok(ty.bind(py).clone())
    }
}

static LEDGER_IO_ERROR: MultiBase = MultiBase::new(
    "LedgerIoError",
    "An I/O call of the storage failed (also an OSError).",
);
static NO_SPACE_ERROR: MultiBase = MultiBase::new(
    "NoSpaceError",
    "The disk is full: the write was not acknowledged and may be retried later.",
);
static INVALID_CONFIG_ERROR: MultiBase = MultiBase::new(
    "InvalidConfigError",
    "A setting is unknown, of the wrong type or out of range (attribute: key, Pulsar's name).",
);
static INVALID_POSITION_ERROR: MultiBase = MultiBase::new(
    "InvalidPositionError",
    "A position does not name an entry of this managed ledger (attributes: ledger, position).",
);
static INVALID_NAME_ERROR: MultiBase = MultiBase::new(
    "InvalidNameError",
    "A managed ledger or cursor name is empty, too long or has control characters (attribute: name).",
);

fn base<T: pyo3::PyTypeInfo>(py: Python<'_>) -> Bound<'_, PyType> {
    py.get_type::<T>()
}

/// `LedgerIoError(PulsarRsError, OSError)`.
pub(crate) fn ledger_io_error(py: Python<'_>) -> PyResult<Bound<'_, PyType>> {
    LEDGER_IO_ERROR.get(py, |py| {
        Ok(vec![base::<PulsarRsError>(py), base::<PyOSError>(py)])
    })
}

/// `NoSpaceError(LedgerIoError)`.
pub(crate) fn no_space_error(py: Python<'_>) -> PyResult<Bound<'_, PyType>> {
    NO_SPACE_ERROR.get(py, |py| Ok(vec![ledger_io_error(py)?]))
}

/// `InvalidConfigError(PulsarRsError, ValueError)`.
pub(crate) fn invalid_config_error(py: Python<'_>) -> PyResult<Bound<'_, PyType>> {
    INVALID_CONFIG_ERROR.get(py, |py| {
        Ok(vec![base::<PulsarRsError>(py), base::<PyValueError>(py)])
    })
}

/// `InvalidPositionError(PulsarRsError, ValueError)`.
pub(crate) fn invalid_position_error(py: Python<'_>) -> PyResult<Bound<'_, PyType>> {
    INVALID_POSITION_ERROR.get(py, |py| {
        Ok(vec![base::<PulsarRsError>(py), base::<PyValueError>(py)])
    })
}

/// `InvalidNameError(PulsarRsError, ValueError)`.
pub(crate) fn invalid_name_error(py: Python<'_>) -> PyResult<Bound<'_, PyType>> {
    INVALID_NAME_ERROR.get(py, |py| {
        Ok(vec![base::<PulsarRsError>(py), base::<PyValueError>(py)])
    })
}

/// Instantiates `ty(message)` with extra attributes, as a `PyErr`.
pub(crate) fn raise_with(
    ty: PyResult<Bound<'_, PyType>>,
    message: String,
    attrs: &[(&str, Bound<'_, PyAny>)],
) -> PyErr {
    let build = || -> PyResult<PyErr> {
        let value = ty?.call1((message,))?;
        for (k, v) in attrs {
            value.setattr(*k, v)?;
        }
        Ok(PyErr::from_value(value))
    };
    build().unwrap_or_else(|e| e)
}

/// `InvalidConfigError` naming `key`.
pub(crate) fn invalid_config(py: Python<'_>, key: &str, reason: &str) -> PyErr {
    raise_with(
        invalid_config_error(py),
        format!("invalid setting {key}: {reason}"),
        &[("key", PyString::new(py, key).into_any())],
    )
}

/// `InvalidConfigError` without a key (bad values of non-setting arguments).
pub(crate) fn invalid_config_plain(message: &str) -> PyErr {
    Python::attach(|py| raise_with(invalid_config_error(py), message.to_owned(), &[]))
}

/// Maps a storage error onto the Python hierarchy.
pub(crate) fn to_py_err(py: Python<'_>, err: LedgerError) -> PyErr {
    let msg = err.to_string();
    let s = |v: &str| -> PyResult<Bound<'_, PyAny>> { Ok(PyString::new(py, v).into_any()) };
    let i = |v: i64| v.into_pyobject(py).map(Bound::into_any);
    let u = |v: u64| v.into_pyobject(py).map(Bound::into_any);
    let attrs = || -> PyResult<Vec<(&'static str, Bound<'_, PyAny>)>> {
        Ok(match &err {
            LedgerError::CorruptEntry {
                ledger_id,
                entry_id,
                segment,
                offset,
                ..
            } => vec![
                ("ledger_id", i(*ledger_id)?),
                ("entry_id", i(*entry_id)?),
                ("segment", u(u64::from(*segment))?),
                ("offset", u(*offset)?),
            ],
            LedgerError::CorruptMetadata { key, .. } => vec![("key", s(key)?)],
            LedgerError::InvalidConfig { key, .. } => vec![("key", s(key)?)],
            LedgerError::InvalidPosition { ledger, position } => vec![
                ("ledger", s(ledger)?),
                (
                    "position",
                    Bound::new(py, PyPosition::from(*position))?.into_any(),
                ),
            ],
            LedgerError::InvalidName { name, .. } => vec![("name", s(name)?)],
            _ => Vec::new(),
        })
    };
    let attrs = match attrs() {
        Ok(a) => a,
        Err(e) => return e,
    };
    let ty = match &err {
        LedgerError::Io { .. } => ledger_io_error(py),
        LedgerError::NoSpace { .. } => no_space_error(py),
        LedgerError::CorruptEntry { .. } => Ok(py.get_type::<CorruptEntryError>()),
        LedgerError::CorruptMetadata { .. } => Ok(py.get_type::<CorruptMetadataError>()),
        LedgerError::InvalidConfig { .. } => invalid_config_error(py),
        LedgerError::InvalidPosition { .. } => invalid_position_error(py),
        LedgerError::Closed { .. } => Ok(py.get_type::<ClosedError>()),
        LedgerError::Terminated { .. } => Ok(py.get_type::<TerminatedError>()),
        LedgerError::InvalidName { .. } => invalid_name_error(py),
        LedgerError::Locked { .. } => Ok(py.get_type::<DataDirLockedError>()),
        LedgerError::ReadOnly { .. } => Ok(py.get_type::<ReadOnlyError>()),
        _ => Ok(py.get_type::<PulsarRsError>()),
    };
    raise_with(ty, msg, &attrs)
}

/// Runs `f` with the GIL released and maps its error: the one way the bindings call into storage
/// code that may block (disk I/O, fsync waits, lock waits).
pub(crate) fn blocking<T, F>(py: Python<'_>, f: F) -> PyResult<T>
where
    F: FnOnce() -> pulsar_rs_ledger::Result<T> + Send,
    T: Send,
{
    py.detach(f).map_err(|e| to_py_err(py, e))
}

/// Adds every exception class to the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("PulsarRsError", py.get_type::<PulsarRsError>())?;
    m.add("LedgerIoError", ledger_io_error(py)?)?;
    m.add("NoSpaceError", no_space_error(py)?)?;
    m.add("CorruptEntryError", py.get_type::<CorruptEntryError>())?;
    m.add(
        "CorruptMetadataError",
        py.get_type::<CorruptMetadataError>(),
    )?;
    m.add("InvalidConfigError", invalid_config_error(py)?)?;
    m.add("InvalidPositionError", invalid_position_error(py)?)?;
    m.add("ClosedError", py.get_type::<ClosedError>())?;
    m.add("TerminatedError", py.get_type::<TerminatedError>())?;
    m.add("ReadOnlyError", py.get_type::<ReadOnlyError>())?;
    m.add("InvalidNameError", invalid_name_error(py)?)?;
    m.add("BrokerError", py.get_type::<BrokerError>())?;
    m.add("DataDirLockedError", py.get_type::<DataDirLockedError>())?;
    m.add("ServerError", py.get_type::<ServerError>())?;
    m.add("PerfError", py.get_type::<PerfError>())?;
    m.add("MetadataStoreError", py.get_type::<MetadataStoreError>())?;
    Ok(())
}

/// A broker failure as its Python exception (a ledger failure as the ledger's, an invalid
/// setting as `InvalidConfigError`).
pub(crate) fn broker_err(py: Python<'_>, e: pulsar_rs_broker::BrokerError) -> PyErr {
    match e {
        pulsar_rs_broker::BrokerError::Ledger(l) => to_py_err(py, l),
        pulsar_rs_broker::BrokerError::InvalidConfig { key, reason } => {
            invalid_config(py, &key, &reason)
        }
        other => BrokerError::new_err(other.to_string()),
    }
}
