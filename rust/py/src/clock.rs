//! `pulsar_rs.ManualClock`: the broker's clock for tests, moved by hand instead of sleeping.

use std::sync::Arc;

use pulsar_rs_clock::{Clock, ManualClock};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// A clock a test moves by hand. Give it to `Broker(clock=...)`: message TTL, retention,
/// inactive-topic deletion, delayed delivery, deduplication snapshots, token expiry and every
/// timestamp the broker writes then read it, and a test advances it instead of sleeping.
/// `ManualClock()` reads the real time plus every advance so far (clients stamp messages with the
/// real time, so a message sent after an advance is new); `ManualClock(start_ms=T)` is frozen at
/// `T` and moves only when advanced.
#[pyclass(name = "ManualClock", module = "pulsar_rs._native", frozen)]
pub struct PyManualClock {
    /// The clock the broker reads; shared with every broker started on it.
    pub(crate) inner: Arc<ManualClock>,
}

#[pymethods]
impl PyManualClock {
    #[new]
    #[pyo3(signature = (start_ms = None))]
    fn new(start_ms: Option<u64>) -> Self {
        let inner = start_ms.map_or_else(ManualClock::following_system, ManualClock::new);
        PyManualClock {
            inner: Arc::new(inner),
        }
    }

    /// The clock's time in milliseconds since the Unix epoch.
    fn now_ms(&self) -> u64 {
        self.inner.now_ms()
    }

    /// Moves the clock `seconds` forward (a float; never back). Dispatchers waiting on the
    /// clock (delayed messages) look again at once.
    fn advance(&self, py: Python<'_>, seconds: f64) -> PyResult<()> {
        if !seconds.is_finite() || seconds < 0.0 {
            return Err(PyValueError::new_err(format!(
                "a clock only moves forward: advance({seconds}) needs a finite number >= 0"
            )));
        }
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let ms = (seconds * 1000.0).round() as u64;
        let clock = Arc::clone(&self.inner);
        // The jump listeners wake dispatchers (short locks); no GIL needed for that.
        py.detach(move || clock.advance_ms(ms));
        Ok(())
    }

    fn __repr__(&self) -> String {
        format!("ManualClock(now_ms={})", self.inner.now_ms())
    }
}
