//! Where entries go: BookKeeper's round-robin distribution schedule (entry `e` goes to ensemble
//! positions `(e + i) mod E` for `i < Qw`), and ensemble choice as `DefaultEnsemblePlacementPolicy`
//! makes it (a random pick among writable bookies, replacements not already in the ensemble).

use crate::error::{BkError, Result};

/// Ensemble positions that store `entry_id` (`RoundRobinDistributionSchedule.getWriteSet`).
pub fn write_set(entry_id: i64, ensemble_size: usize, write_quorum: usize) -> Vec<usize> {
    let e = ensemble_size as i64;
    (0..write_quorum as i64)
        .map(|i| ((entry_id + i).rem_euclid(e)) as usize)
        .collect()
}

/// Whether the bookies that answered cover every write quorum, so that no entry can have reached
/// an ack quorum without one of them seeing it (`RoundRobinQuorumCoverageSet.checkCovered`): in
/// each of the E write sets, fewer than `ack_quorum` bookies may be unaccounted for.
pub fn covers_every_write_quorum(
    answered: &[bool],
    write_quorum: usize,
    ack_quorum: usize,
) -> bool {
    let e = answered.len();
    (0..e).all(|start| {
        let missing = (0..write_quorum)
            .filter(|i| !answered[(start + i) % e])
            .count();
        missing < ack_quorum
    })
}

/// A pseudo-random shuffle seed (placement needs no cryptographic randomness): the standard
/// library's per-process random hasher keys, mixed with a counter so successive calls differ.
fn seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    // Relaxed: only distinctness matters.
    h.write_u64(CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    h.finish() ^ 0x9e37_79b9_7f4a_7c15
}

fn shuffle(v: &mut [String]) {
    let mut x = seed();
    for i in (1..v.len()).rev() {
        // xorshift64
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.swap(i, (x % (i as u64 + 1)) as usize);
    }
}

/// Picks `size` distinct bookies from `writable`.
pub fn new_ensemble(mut writable: Vec<String>, size: usize) -> Result<Vec<String>> {
    if writable.len() < size {
        return Err(BkError::NotEnoughBookies {
            needed: size,
            available: writable.len(),
        });
    }
    shuffle(&mut writable);
    writable.truncate(size);
    Ok(writable)
}

/// Picks a replacement for a failed member: a writable bookie not in `ensemble` and not `failed`.
pub fn replacement(
    writable: Vec<String>,
    ensemble: &[String],
    failed: &[String],
) -> Result<String> {
    let mut candidates: Vec<String> = writable
        .into_iter()
        .filter(|b| !ensemble.contains(b) && !failed.contains(b))
        .collect();
    if candidates.is_empty() {
        return Err(BkError::NotEnoughBookies {
            needed: ensemble.len() + 1,
            available: ensemble.len(),
        });
    }
    shuffle(&mut candidates);
    Ok(candidates.swap_remove(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_robin() {
        assert_eq!(write_set(0, 3, 2), vec![0, 1]);
        assert_eq!(write_set(2, 3, 2), vec![2, 0]);
        assert_eq!(write_set(4, 5, 3), vec![4, 0, 1]);
    }

    #[test]
    fn coverage() {
        // E=3 Qw=2 Qa=2: one silent bookie is fine (each write set still has one answer).
        assert!(covers_every_write_quorum(&[true, false, true], 2, 2));
        assert!(!covers_every_write_quorum(&[true, false, false], 2, 2));
        // Qa=1: every write set needs every member answered.
        assert!(!covers_every_write_quorum(&[true, false, true], 2, 1));
        assert!(covers_every_write_quorum(&[true, true, true], 3, 1));
    }

    #[test]
    fn choices() {
        let all: Vec<String> = (1..=4).map(|i| format!("b{i}")).collect();
        let e = new_ensemble(all.clone(), 3).unwrap();
        assert_eq!(e.len(), 3);
        let r = replacement(all.clone(), &e, &[]).unwrap();
        assert!(!e.contains(&r));
        assert!(new_ensemble(all, 5).is_err());
    }
}
