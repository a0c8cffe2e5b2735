//! A batch payload split into its messages, for Python's admin client (peek, examine and
//! get-message answers carry a batch as its raw payload): proto's [`split_batch`] decodes it,
//! so Python holds no copy of the `SingleMessageMetadata` format.

use bytes::Bytes;
use pulsar_rs_proto::split_batch as split;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

/// The first `count` messages of an uncompressed batch payload, each a dict: `properties`
/// (`dict[str, str]`), `key` (`str | None`), `event_time` (ms, 0 when not set), `sequence_id`
/// (`int | None`) and `data` (`bytes`). A malformed batch raises `ValueError`.
#[pyfunction]
pub fn split_batch<'py>(
    py: Python<'py>,
    payload: &[u8],
    count: i32,
) -> PyResult<Bound<'py, PyList>> {
    let members = split(Bytes::copy_from_slice(payload), count)
        .map_err(|e| PyValueError::new_err(format!("malformed batch: {e}")))?;
    let out = PyList::empty(py);
    for m in members {
        let properties = PyDict::new(py);
        for kv in &m.metadata.properties {
            properties.set_item(&kv.key, &kv.value)?;
        }
        let d = PyDict::new(py);
        d.set_item("properties", properties)?;
        d.set_item("key", m.metadata.partition_key.as_deref())?;
        d.set_item("event_time", m.metadata.event_time.unwrap_or(0))?;
        d.set_item("sequence_id", m.metadata.sequence_id)?;
        d.set_item("data", PyBytes::new(py, &m.body))?;
        out.append(d)?;
    }
    Ok(out)
}
