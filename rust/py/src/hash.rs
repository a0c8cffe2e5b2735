//! The broker's key hashing, for Python: the Spark synthetic data and the dispatch tests call
//! these instead of writing Pulsar's rules again.

use pyo3::prelude::*;

/// Murmur3_x86_32 of `data` with `seed`, as Pulsar hashes keys (Key_Shared slots, failover
/// ordering). The only implementation: Python's tests and the Spark synthetic data call this one.
#[pyfunction]
#[pyo3(signature = (data, seed = 0))]
pub fn murmur3_32(data: &[u8], seed: u32) -> u32 {
    pulsar_rs_broker::hash::murmur3_32(data, seed)
}

/// Pulsar's Key_Shared key hash, `Murmur3_x86_32(key) & 0x7fffffff`: the function the
/// Key_Shared dispatcher routes by (and the export's `key_hash` column).
#[pyfunction]
pub fn key_hash(key: &[u8]) -> u32 {
    pulsar_rs_broker::hash::key_hash(key)
}
