//! `ManagedLedger` and `Cursor`: direct access to the storage layer from Python.
//!
//! A Python `ManagedLedger` owns one [`Storage`] (a data directory) and one managed ledger in it;
//! closing it (or leaving its `with` block, or dropping it) closes the storage, persisting cursors.
//! A `Cursor` keeps its `ManagedLedger` alive.
//!
//! GIL rule: every call that does I/O, waits for an fsync or may wait on a lock held during I/O
//! runs through [`crate::error::blocking`] (GIL released). Only plain reads of in-memory counters
//! (`last_confirmed`, `stats()`, positions) keep it. Payloads are copied exactly once each way:
//! `bytes` → [`Bytes`] on append, [`Bytes`] → `bytes` on read.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use pulsar_rs_ledger::{Clock, Cursor, LedgerError, ManagedLedger, Position, Storage, SystemClock};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};

use crate::error::{blocking, to_py_err};
use crate::position::{extract_position, extract_positions, PyPosition};
use crate::settings;

/// A managed ledger (one topic's log) in a data directory of its own.
#[pyclass(name = "ManagedLedger", module = "pulsar_rs", frozen)]
pub struct PyManagedLedger {
    storage: Arc<Storage>,
    ml: Arc<ManagedLedger>,
    path: PathBuf,
    closed: AtomicBool,
    /// Suffix for the names of non-durable cursors.
    readers: AtomicU64,
}

impl PyManagedLedger {
    fn check_open(&self, py: Python<'_>) -> PyResult<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(to_py_err(
                py,
                LedgerError::Closed {
                    what: format!("managed ledger {}", self.ml.name()),
                },
            ));
        }
        Ok(())
    }
}

impl Drop for PyManagedLedger {
    fn drop(&mut self) {
        if !self.closed.swap(true, Ordering::AcqRel) {
            let _ = self.storage.close();
        }
    }
}

fn to_bytes(obj: &Bound<'_, PyAny>) -> PyResult<Bytes> {
    match obj.cast::<PyBytes>() {
        Ok(b) => Ok(Bytes::copy_from_slice(b.as_bytes())),
        Err(_) => Err(PyTypeError::new_err(format!(
            "entries must be bytes, got {}",
            obj.get_type().name()?
        ))),
    }
}

/// A Rust bool spelled the Python way, for reprs.
fn py_bool(b: bool) -> &'static str {
    if b {
        "True"
    } else {
        "False"
    }
}

fn py_pos(py: Python<'_>, p: Position) -> PyResult<Bound<'_, PyPosition>> {
    Bound::new(py, PyPosition::from(p))
}

#[pymethods]
impl PyManagedLedger {
    /// Opens (creating) the data directory `path` and the managed ledger `name` in it.
    /// `settings` are Pulsar's `broker.conf` keys (see `pulsar_rs.ManagedLedger.SETTINGS`).
    #[new]
    #[pyo3(signature = (path, name = "default", **settings))]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        name: &str,
        settings: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let (sc, lc) = settings::parse(py, settings)?;
        sc.validate().map_err(|e| to_py_err(py, e))?;
        lc.validate().map_err(|e| to_py_err(py, e))?;
        let dir = path.clone();
        let (storage, ml) = blocking(py, move || {
            let storage = Storage::open(&dir, sc)?;
            match storage.open_ledger(name, lc) {
                Ok(ml) => Ok((storage, ml)),
                Err(e) => {
                    let _ = storage.close();
                    Err(e)
                }
            }
        })?;
        Ok(PyManagedLedger {
            storage,
            ml,
            path,
            closed: AtomicBool::new(false),
            readers: AtomicU64::new(0),
        })
    }

    /// The keyword settings the constructor accepts.
    #[classattr]
    #[allow(non_snake_case)]
    fn SETTINGS() -> Vec<&'static str> {
        settings::KEYS.to_vec()
    }

    /// The managed ledger's name.
    #[getter]
    fn name(&self) -> &str {
        self.ml.name()
    }

    /// The data directory.
    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// Whether `close()` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Whether appends wait for fsync (`journalSyncData`).
    #[getter]
    fn durable(&self) -> bool {
        self.storage.is_durable()
    }

    /// The last entry readers may see.
    #[getter]
    fn last_confirmed(&self) -> PyPosition {
        self.ml.last_confirmed().into()
    }

    /// Appends one entry; returns once it is durable (or written, when not durable).
    fn add_entry(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<PyPosition> {
        let data = to_bytes(data)?;
        let ml = &self.ml;
        blocking(py, || ml.add_entry_blocking(data)).map(PyPosition::from)
    }

    /// Appends many entries: queues them all, then waits once (they share group commits).
    /// On error, entries before the failing one may have been stored.
    fn add_entries(&self, py: Python<'_>, entries: &Bound<'_, PyAny>) -> PyResult<Vec<PyPosition>> {
        let data = entries
            .try_iter()?
            .map(|e| to_bytes(&e?))
            .collect::<PyResult<Vec<Bytes>>>()?;
        let ml = &self.ml;
        let positions = blocking(py, || {
            let ts = SystemClock.now_ms();
            let mut pending = Vec::with_capacity(data.len());
            let mut first_err = None;
            for d in data {
                match ml.start_add(d, ts) {
                    Ok(p) => pending.push(p),
                    Err(e) => {
                        first_err = Some(e);
                        break;
                    }
                }
            }
            let mut out = Vec::with_capacity(pending.len());
            for (pos, rx) in pending {
                if let Some(rx) = rx {
                    let res = rx.wait();
                    if let Err(e) = res {
                        first_err.get_or_insert(e);
                    }
                }
                out.push(pos);
            }
            first_err.map_or(Ok(out), Err)
        })?;
        Ok(positions.into_iter().map(PyPosition::from).collect())
    }

    /// Opens (or returns the open) durable cursor `name`. A new cursor starts at the end, or at
    /// the first entry if `earliest`. A persisted cursor comes back with all its ack holes.
    #[pyo3(signature = (name, earliest = false))]
    fn open_cursor(
        slf: &Bound<'_, Self>,
        py: Python<'_>,
        name: &str,
        earliest: bool,
    ) -> PyResult<PyCursor> {
        let this = slf.get();
        this.check_open(py)?;
        let ml = &this.ml;
        let cursor = blocking(py, || ml.open_cursor_at(name, earliest))?;
        Ok(PyCursor {
            cursor,
            ledger: slf.clone().unbind(),
        })
    }

    /// Opens a non-durable cursor (a reader), not persisted and not holding back trimming.
    /// Reading starts after `start` (Pulsar's default), or at it if `inclusive`.
    /// `Position.EARLIEST` reads from the first entry, `Position.LATEST` only new entries.
    #[pyo3(signature = (start, *, inclusive = false, name = None))]
    fn open_reader(
        slf: &Bound<'_, Self>,
        py: Python<'_>,
        start: &Bound<'_, PyAny>,
        inclusive: bool,
        name: Option<String>,
    ) -> PyResult<PyCursor> {
        let this = slf.get();
        this.check_open(py)?;
        let start = extract_position(start)?;
        let name = name.unwrap_or_else(|| {
            format!("__reader-{}", this.readers.fetch_add(1, Ordering::Relaxed))
        });
        let ml = &this.ml;
        let cursor = blocking(py, || {
            let mark_delete = if start.ledger_id == Position::LATEST.ledger_id {
                ml.last_confirmed()
            } else if inclusive {
                ml.previous_position(start)
            } else {
                start
            };
            Ok(ml.open_non_durable_cursor(&name, mark_delete))
        })?;
        Ok(PyCursor {
            cursor,
            ledger: slf.clone().unbind(),
        })
    }

    /// Names of the durable cursors stored for this ledger (open or not).
    fn cursor_names(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        let ml = &self.ml;
        blocking(py, || ml.persisted_cursor_names())
    }

    /// Deletes a durable cursor and its persisted state.
    fn delete_cursor(&self, py: Python<'_>, name: &str) -> PyResult<()> {
        self.check_open(py)?;
        let ml = &self.ml;
        blocking(py, || ml.delete_cursor(name))
    }

    /// The ledgers, oldest first: `ledger_id`, `entries`, `size`, `created_ms`, `closed_ms`.
    fn ledgers<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let infos = self.ml.ledgers();
        let list = PyList::empty(py);
        for l in infos {
            let d = PyDict::new(py);
            d.set_item("ledger_id", l.ledger_id)?;
            d.set_item("entries", l.entries)?;
            d.set_item("size", l.size)?;
            d.set_item("created_ms", l.created_ms)?;
            d.set_item("closed_ms", l.closed_ms)?;
            list.append(d)?;
        }
        Ok(list)
    }

    /// Counters of this managed ledger.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.ml.stats();
        let d = PyDict::new(py);
        d.set_item("entries_added", s.entries_added)?;
        d.set_item("number_of_entries", s.number_of_entries)?;
        d.set_item("total_size", s.total_size)?;
        d.set_item("ledger_count", s.ledger_count)?;
        d.set_item("current_ledger_id", s.current_ledger_id)?;
        d.set_item("current_ledger_entries", s.current_ledger_entries)?;
        d.set_item("current_ledger_size", s.current_ledger_size)?;
        d.set_item("last_confirmed", py_pos(py, s.last_confirmed)?)?;
        d.set_item("cursor_count", s.cursor_count)?;
        Ok(d)
    }

    /// Counters of the data directory's entry cache.
    fn cache_stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.storage.cache_stats();
        let d = PyDict::new(py);
        d.set_item("size_bytes", s.size_bytes)?;
        d.set_item("hits_entries", s.hits_entries)?;
        d.set_item("hits_bytes", s.hits_bytes)?;
        d.set_item("misses_entries", s.misses_entries)?;
        d.set_item("misses_bytes", s.misses_bytes)?;
        d.set_item("evicted_entries", s.evicted_entries)?;
        Ok(d)
    }

    /// Counters of the data directory's shared journal: `rounds` (write rounds, one fsync each
    /// when durable), `segments`, `disk_usage_bytes`, `durable`.
    fn journal_stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("rounds", self.storage.journal_rounds())?;
        d.set_item("segments", self.storage.journal_segments())?;
        d.set_item("disk_usage_bytes", self.storage.journal_disk_usage())?;
        d.set_item("durable", self.storage.is_durable())?;
        Ok(d)
    }

    /// Deletes ledgers consumed by every durable cursor, subject to retention.
    fn trim(&self, py: Python<'_>) -> PyResult<()> {
        self.check_open(py)?;
        let ml = &self.ml;
        blocking(py, || ml.trim_consumed_ledgers())
    }

    /// Persists cursors and closes the ledger and its data directory. Idempotent.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        if self.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        let storage = &self.storage;
        blocking(py, || storage.close())
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "ManagedLedger(path={}, name={}, closed={})",
            PyString::new(py, &self.path.display().to_string()).repr()?,
            PyString::new(py, self.ml.name()).repr()?,
            py_bool(self.closed())
        ))
    }
}

/// A cursor over a managed ledger: durable (a subscription) or not (a reader).
#[pyclass(name = "Cursor", module = "pulsar_rs", frozen)]
pub struct PyCursor {
    cursor: Arc<Cursor>,
    ledger: Py<PyManagedLedger>,
}

#[pymethods]
impl PyCursor {
    /// The cursor's name.
    #[getter]
    fn name(&self) -> &str {
        self.cursor.name()
    }

    /// Whether the cursor's state is persisted.
    #[getter]
    fn durable(&self) -> bool {
        self.cursor.is_durable()
    }

    /// The managed ledger it walks.
    #[getter]
    fn ledger(&self, py: Python<'_>) -> Py<PyManagedLedger> {
        self.ledger.clone_ref(py)
    }

    /// Reads up to `n` unacknowledged entries from the read position and advances it.
    /// Returns `[]` when nothing is available.
    fn read_entries<'py>(&self, py: Python<'py>, n: usize) -> PyResult<Bound<'py, PyList>> {
        let cursor = &self.cursor;
        let entries = blocking(py, || cursor.read_entries(n))?;
        let list = PyList::empty(py);
        for e in entries {
            let item = PyTuple::new(
                py,
                [
                    py_pos(py, e.position)?.into_any(),
                    PyBytes::new(py, &e.data).into_any(),
                ],
            )?;
            list.append(item)?;
        }
        Ok(list)
    }

    /// Whether entries are available beyond the read position.
    fn has_more_entries(&self, py: Python<'_>) -> PyResult<bool> {
        let cursor = &self.cursor;
        blocking(py, || Ok(cursor.has_more_entries()))
    }

    /// Acknowledges one position or an iterable of positions individually.
    fn delete(&self, py: Python<'_>, positions: &Bound<'_, PyAny>) -> PyResult<()> {
        let positions = extract_positions(positions)?;
        let cursor = &self.cursor;
        blocking(py, || {
            cursor.delete(&positions);
            Ok(())
        })
    }

    /// Acknowledges everything up to and including `position` (cumulative ack).
    fn mark_delete(&self, py: Python<'_>, position: &Bound<'_, PyAny>) -> PyResult<()> {
        let position = extract_position(position)?;
        let cursor = &self.cursor;
        blocking(py, || cursor.mark_delete(position))
    }

    /// Whether `position` is acknowledged.
    fn is_acked(&self, py: Python<'_>, position: &Bound<'_, PyAny>) -> PyResult<bool> {
        let position = extract_position(position)?;
        let cursor = &self.cursor;
        blocking(py, || Ok(cursor.is_acked(position)))
    }

    /// Unacknowledged entries (Pulsar counts entries, not messages).
    #[getter]
    fn backlog(&self, py: Python<'_>) -> PyResult<u64> {
        let cursor = &self.cursor;
        blocking(py, || Ok(cursor.backlog()))
    }

    /// Estimated backlog size in bytes (Pulsar's rule).
    #[getter]
    fn estimated_backlog_size(&self, py: Python<'_>) -> PyResult<u64> {
        let cursor = &self.cursor;
        blocking(py, || Ok(cursor.estimated_backlog_size()))
    }

    /// Everything at or before this is acknowledged.
    #[getter]
    fn mark_delete_position(&self) -> PyPosition {
        self.cursor.mark_delete_position().into()
    }

    /// The next entry to read.
    #[getter]
    fn read_position(&self) -> PyPosition {
        self.cursor.read_position().into()
    }

    /// Individually acknowledged entries after mark-delete, as closed ranges `(first, last)`.
    fn acked_ranges(&self, py: Python<'_>) -> PyResult<Vec<(PyPosition, PyPosition)>> {
        let cursor = &self.cursor;
        let ranges = blocking(py, || Ok(cursor.acked_ranges()))?;
        Ok(ranges
            .into_iter()
            .map(|(a, b)| (a.into(), b.into()))
            .collect())
    }

    /// Moves mark-delete forward over `n` unacknowledged entries.
    fn skip(&self, py: Python<'_>, n: u64) -> PyResult<()> {
        let cursor = &self.cursor;
        blocking(py, || {
            cursor.skip_entries(n);
            Ok(())
        })
    }

    /// Acknowledges everything currently in the ledger (clear backlog).
    fn skip_all(&self, py: Python<'_>) -> PyResult<()> {
        let cursor = &self.cursor;
        blocking(py, || {
            cursor.skip_all();
            Ok(())
        })
    }

    /// Resets so that the next entry read is `position`; earlier entries count as acknowledged.
    fn reset(&self, py: Python<'_>, position: &Bound<'_, PyAny>) -> PyResult<()> {
        let position = extract_position(position)?;
        let cursor = &self.cursor;
        blocking(py, || {
            cursor.reset(position);
            Ok(())
        })
    }

    /// Resets to the first entry appended at or after `timestamp_ms` (ms since the epoch);
    /// returns that position (the end position if there is none).
    fn reset_by_time(&self, py: Python<'_>, timestamp_ms: u64) -> PyResult<PyPosition> {
        let cursor = &self.cursor;
        blocking(py, || cursor.reset_by_time(timestamp_ms)).map(PyPosition::from)
    }

    /// Moves the read position back to the first unacknowledged entry (redelivery).
    fn rewind(&self, py: Python<'_>) -> PyResult<()> {
        let cursor = &self.cursor;
        blocking(py, || {
            cursor.rewind();
            Ok(())
        })
    }

    /// The cursor's properties.
    #[getter]
    fn properties(&self, py: Python<'_>) -> PyResult<std::collections::BTreeMap<String, i64>> {
        let cursor = &self.cursor;
        blocking(py, || Ok(cursor.properties()))
    }

    /// Sets a property (persisted with the cursor).
    fn set_property(&self, py: Python<'_>, key: &str, value: i64) -> PyResult<()> {
        let cursor = &self.cursor;
        blocking(py, || {
            cursor.set_property(key, value);
            Ok(())
        })
    }

    /// Persists the cursor state now if it changed (durable cursors only).
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        let cursor = &self.cursor;
        blocking(py, || cursor.flush())
    }

    /// Persists and detaches the cursor (a durable cursor's state is kept).
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let cursor = &self.cursor;
        blocking(py, || cursor.close())
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "Cursor(name={}, durable={}, mark_delete_position={}, read_position={})",
            PyString::new(py, self.cursor.name()).repr()?,
            py_bool(self.cursor.is_durable()),
            self.cursor.mark_delete_position(),
            self.cursor.read_position()
        ))
    }
}
