//! `pulsar_rs._native`: the PyO3 extension module behind the `pulsar_rs` Python package.
//!
//! This is the only crate that depends on PyO3. It exposes the storage layer
//! ([`ledger::PyManagedLedger`], [`ledger::PyCursor`], [`position::PyPosition`]) and the exception
//! hierarchy ([`error`]); the broker is added next to them. Every call that can block releases the
//! GIL through [`error::blocking`].

mod batch;
mod broker;
mod clock;
mod cluster_setup;
mod error;
mod export;
mod hash;
mod ledger;
mod metadata_keys;
mod naming;
mod perf;
mod position;
mod settings;

use pyo3::prelude::*;

/// The extension module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<position::PyPosition>()?;
    m.add_class::<ledger::PyManagedLedger>()?;
    m.add_class::<ledger::PyCursor>()?;
    m.add_class::<broker::PyBroker>()?;
    m.add_class::<clock::PyManualClock>()?;
    m.add_class::<export::PyArrowStream>()?;
    m.add_function(wrap_pyfunction!(export::export_data_dir, m)?)?;
    m.add_function(wrap_pyfunction!(export::export_metadata_store, m)?)?;
    m.add_function(wrap_pyfunction!(broker::enable_logging, m)?)?;
    m.add_function(wrap_pyfunction!(broker::read_config, m)?)?;
    m.add_function(wrap_pyfunction!(perf::perf, m)?)?;
    m.add_function(wrap_pyfunction!(
        cluster_setup::initialize_cluster_metadata,
        m
    )?)?;
    m.add_function(wrap_pyfunction!(hash::murmur3_32, m)?)?;
    m.add_function(wrap_pyfunction!(hash::key_hash, m)?)?;
    m.add_function(wrap_pyfunction!(batch::split_batch, m)?)?;
    m.add_function(wrap_pyfunction!(naming::parse_topic_name, m)?)?;
    metadata_keys::register(m)?;
    error::register(m)?;
    Ok(())
}
