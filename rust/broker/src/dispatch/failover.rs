//! Failover: which consumer of the top-priority group is active (seed 004).
//!
//! Consumers are sorted by priority level, then name; only those of the best level count. A
//! partition of a partitioned topic picks `partitionIndex % n` (so the partitions spread over the
//! consumers); a non-partitioned topic, or any topic when `activeConsumerFailoverConsistentHashing`
//! is set, uses a Murmur3 ring with 100 points per consumer (`name + j`) and takes the first point
//! at or after `Murmur3(topic)`, wrapping around, as Pulsar's `AbstractDispatcherSingleActiveConsumer`.

use std::collections::BTreeMap;

use crate::hash::key_hash;

/// Points per consumer on the failover ring (Pulsar's `CONSUMER_CONSISTENT_HASH_REPLICAS`).
pub const RING_POINTS: u32 = 100;

/// Index (into `names`, the top-priority group in sorted order) of the active consumer.
#[must_use]
pub fn pick_active(names: &[&str], topic: &str, partition: i32, consistent: bool) -> Option<usize> {
    if names.is_empty() {
        return None;
    }
    if partition >= 0 && !consistent {
        return Some(partition as usize % names.len());
    }
    // As Java's TreeMap.put: a later consumer overwrites a colliding point.
    let mut ring: BTreeMap<u32, usize> = BTreeMap::new();
    for (i, name) in names.iter().enumerate() {
        for j in 0..RING_POINTS {
            ring.insert(key_hash(format!("{name}{j}").as_bytes()), i);
        }
    }
    let h = key_hash(topic.as_bytes());
    ring.range(h..)
        .next()
        .or_else(|| ring.iter().next())
        .map(|(_, i)| *i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_spread_by_index() {
        let names = ["a", "b", "c"];
        let picks: Vec<usize> = (0..6)
            .map(|p| pick_active(&names, "t", p, false).unwrap())
            .collect();
        assert_eq!(picks, vec![0, 1, 2, 0, 1, 2]);
        assert_eq!(pick_active(&[], "t", 0, false), None);
    }

    #[test]
    fn ring_is_stable_and_spreads_topics() {
        let names = ["c1", "c2", "c3", "c4"];
        let mut hits = [0usize; 4];
        for t in 0..400 {
            let topic = format!("persistent://public/default/t{t}");
            let a = pick_active(&names, &topic, -1, false).unwrap();
            assert_eq!(Some(a), pick_active(&names, &topic, -1, false));
            // Consistent hashing ignores the partition index.
            assert_eq!(Some(a), pick_active(&names, &topic, 3, true));
            hits[a] += 1;
        }
        assert!(hits.iter().all(|h| *h > 40), "{hits:?}");
        // Removing a consumer only moves the topics it had.
        for t in 0..400 {
            let topic = format!("persistent://public/default/t{t}");
            let a = pick_active(&names, &topic, -1, false).unwrap();
            let b = pick_active(&names[..3], &topic, -1, false).unwrap();
            if a != 3 {
                assert_eq!(a, b);
            }
        }
    }
}
