//! The metadata store's layout for Python's tests (which open a stopped broker's data
//! directory): the broker's one list of key prefixes, not a copy of it.

use pulsar_rs_broker::metadata_keys::{ALL_PREFIXES, META_DIR};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Adds `META_DIR` (the store's folder in a data directory) and `METADATA_PREFIXES` (name →
/// key prefix, each a folder under `META_DIR`) to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let prefixes = PyDict::new(m.py());
    for (name, prefix) in ALL_PREFIXES {
        prefixes.set_item(name, prefix)?;
    }
    m.add("META_DIR", META_DIR)?;
    m.add("METADATA_PREFIXES", prefixes)?;
    Ok(())
}
