//! `pulsar-rs perf produce|consume`: the perf crate's load generator
//! ([`pulsar_rs_perf::perf`]) run from the Python package, with its own Tokio runtime. Lines
//! (one per second) go to stdout as they come; the summary is returned as JSON.

use std::io::Write;
use std::sync::Arc;

use clap::Parser;
use pulsar_rs_perf::perf::{run, Args};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::error::PerfError;

/// Runs `mode` ("produce": no consumers unless asked; "consume": no producers unless asked)
/// with pulsar-perf style arguments `argv`; returns the summary JSON, or None when `--help`
/// was printed.
#[pyfunction]
pub fn perf(py: Python<'_>, mode: &str, argv: Vec<String>) -> PyResult<Option<String>> {
    let implied: &[&str] = match mode {
        "produce" => &["--consumers", "0"],
        "consume" => &["--producers", "0"],
        other => {
            return Err(PyValueError::new_err(format!(
                "perf mode must be produce or consume, not {other:?}"
            )))
        }
    };
    let full = std::iter::once(format!("pulsar-rs perf {mode}"))
        .chain(implied.iter().map(|s| (*s).to_owned()))
        .chain(argv);
    let args = match Args::try_parse_from(full) {
        Ok(a) => Arc::new(a),
        Err(e) if !e.use_stderr() => {
            // --help / --version: clap's text, not an error.
            println!("{e}");
            return Ok(None);
        }
        Err(e) => return Err(PyValueError::new_err(e.to_string())),
    };
    let result = py.detach(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(args.threads.max(1))
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        let print = Arc::new(|line: &str| {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{line}");
            let _ = out.flush();
        });
        rt.block_on(run(Arc::clone(&args), print))
            .map_err(|e| e.to_string())
    });
    match result {
        Ok(v) => Ok(Some(v.to_string())),
        Err(e) => Err(PerfError::new_err(e)),
    }
}
