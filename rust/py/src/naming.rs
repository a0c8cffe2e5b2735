//! Topic names for Python: the broker's own parser ([`TopicName::parse`]), so Python's admin
//! client expands short names and refuses bad ones exactly as the broker does.

use pulsar_rs_broker::TopicName;
use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::error::{invalid_name_error, raise_with};

/// `(domain, tenant, namespace, local)` of a topic name in any of Pulsar's forms (`x`,
/// `tenant/ns/x`, `persistent://tenant/ns/x`, `non-persistent://tenant/ns/x`). A name the
/// broker refuses raises `InvalidNameError` (a `ValueError`) with the name as `.name`.
#[pyfunction]
pub fn parse_topic_name(py: Python<'_>, name: &str) -> PyResult<(String, String, String, String)> {
    let t = TopicName::parse(name).map_err(|e| {
        raise_with(
            invalid_name_error(py),
            e.to_string(),
            &[("name", PyString::new(py, name).into_any())],
        )
    })?;
    Ok((t.domain, t.tenant, t.namespace, t.local))
}
