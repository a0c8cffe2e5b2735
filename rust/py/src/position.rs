//! `Position`: a small, immutable, hashable, totally ordered value naming one entry.
//!
//! Mirrors [`pulsar_rs_ledger::Position`]: `(ledger_id, entry_id)`, ordered by ledger then entry;
//! `entry_id == -1` is the slot before a ledger's first entry. Converts to and from a 2-tuple:
//! `tuple(pos)`, `pos.to_tuple()`, `Position.from_tuple(t)`, and every method taking a position
//! also accepts a `(ledger_id, entry_id)` tuple.

use pulsar_rs_ledger::Position;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyTuple, PyType};

/// The address of one entry: `(ledger_id, entry_id)`.
#[pyclass(
    name = "Position",
    module = "pulsar_rs",
    frozen,
    eq,
    ord,
    hash,
    from_py_object
)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PyPosition {
    /// Id of the ledger holding the entry.
    #[pyo3(get)]
    pub ledger_id: i64,
    /// Index of the entry inside its ledger; -1 = before the first entry.
    #[pyo3(get)]
    pub entry_id: i64,
}

impl From<Position> for PyPosition {
    fn from(p: Position) -> Self {
        PyPosition {
            ledger_id: p.ledger_id,
            entry_id: p.entry_id,
        }
    }
}

impl From<PyPosition> for Position {
    fn from(p: PyPosition) -> Self {
        Position::new(p.ledger_id, p.entry_id)
    }
}

/// Reads a `Position` or a `(ledger_id, entry_id)` tuple.
pub(crate) fn extract_position(obj: &Bound<'_, PyAny>) -> PyResult<Position> {
    if let Ok(p) = obj.cast::<PyPosition>() {
        return Ok((*p.get()).into());
    }
    if let Ok((l, e)) = obj.extract::<(i64, i64)>() {
        return Ok(Position::new(l, e));
    }
    Err(PyTypeError::new_err(format!(
        "expected a Position or a (ledger_id, entry_id) tuple, got {}",
        obj.get_type().name()?
    )))
}

/// Reads one position or a list/tuple of positions.
pub(crate) fn extract_positions(obj: &Bound<'_, PyAny>) -> PyResult<Vec<Position>> {
    if let Ok(p) = extract_position(obj) {
        return Ok(vec![p]);
    }
    let mut out = Vec::new();
    for item in obj
        .try_iter()
        .map_err(|_| PyTypeError::new_err("expected a Position or an iterable of Positions"))?
    {
        out.push(extract_position(&item?)?);
    }
    Ok(out)
}

#[pymethods]
impl PyPosition {
    /// Before every entry (Pulsar's `earliest`).
    #[classattr]
    const EARLIEST: PyPosition = PyPosition {
        ledger_id: Position::EARLIEST.ledger_id,
        entry_id: Position::EARLIEST.entry_id,
    };

    /// After every entry (Pulsar's `latest`).
    #[classattr]
    const LATEST: PyPosition = PyPosition {
        ledger_id: Position::LATEST.ledger_id,
        entry_id: Position::LATEST.entry_id,
    };

    #[new]
    fn new(ledger_id: i64, entry_id: i64) -> Self {
        PyPosition {
            ledger_id,
            entry_id,
        }
    }

    /// Builds a position from a `(ledger_id, entry_id)` tuple (or returns a Position unchanged).
    #[classmethod]
    fn from_tuple(_cls: &Bound<'_, PyType>, value: &Bound<'_, PyAny>) -> PyResult<Self> {
        extract_position(value).map(Self::from)
    }

    /// `(ledger_id, entry_id)`.
    #[allow(clippy::wrong_self_convention)] // PyO3 methods take `&self`
    fn to_tuple(&self) -> (i64, i64) {
        (self.ledger_id, self.entry_id)
    }

    /// The next entry slot in the same ledger (it may not exist).
    fn next(&self) -> Self {
        Position::from(*self).next().into()
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(PyTuple::new(py, [self.ledger_id, self.entry_id])?
            .as_any()
            .try_iter()?
            .into_any())
    }

    fn __getnewargs__(&self) -> (i64, i64) {
        (self.ledger_id, self.entry_id)
    }

    fn __repr__(&self) -> String {
        format!(
            "Position(ledger_id={}, entry_id={})",
            self.ledger_id, self.entry_id
        )
    }

    fn __str__(&self) -> String {
        Position::from(*self).to_string()
    }
}
