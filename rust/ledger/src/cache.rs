//! The entry cache: one broker-wide byte budget shared by every managed ledger.
//!
//! Entries are inserted when they are written (if the ledger has an active cursor) and held as
//! `Bytes`, so serving a hit never copies the payload. A range read is a hit only if every entry of
//! the range is cached; a partial hit counts as a miss and the storage read is not inserted (most
//! reads of old data are one-off; see seed 000).
//!
//! Eviction, oldest first through one global FIFO (the fix of apache/pulsar#24363 / PIP-430):
//! * entries before the slowest active cursor's read position ([`LedgerEntries::evict_before`]);
//! * entries older than `managedLedgerCacheEvictionTimeThresholdMillis` ([`EntryCache::evict_expired`]);
//! * above the budget, down to `managedLedgerCacheEvictionWatermark` × budget.
//!
//! A ledger's entries are written in position order, so each ledger keeps them in a deque sorted
//! by position (appends go to the back, eviction takes from the front), and one FIFO item stands
//! for a run of one ledger's entries inserted in the same millisecond: a cached entry costs no
//! allocation of its own and no tree insert.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use bytes::Bytes;
use parking_lot::Mutex;

use crate::Position;

/// Cache counters, as read by stats and metrics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Bytes currently cached.
    pub size_bytes: u64,
    /// Entries served from the cache.
    pub hits_entries: u64,
    /// Bytes served from the cache.
    pub hits_bytes: u64,
    /// Entries that had to be read from storage.
    pub misses_entries: u64,
    /// Bytes that had to be read from storage.
    pub misses_bytes: u64,
    /// Entries evicted.
    pub evicted_entries: u64,
}

/// The entries of `owner` up to `through` (those not evicted yet) were inserted by `inserted_ms`.
struct FifoItem {
    owner: Weak<LedgerEntries>,
    through: Position,
    inserted_ms: u64,
}

/// The broker-wide cache. Shared through `Arc` by the storage and every managed ledger.
pub struct EntryCache {
    /// Budget in bytes (0 = disabled); immutable.
    budget: u64,
    /// Size eviction target in bytes; immutable.
    target: u64,
    /// Age limit in ms; immutable.
    time_threshold_ms: u64,
    /// Bytes cached across all ledgers. Updated by whoever inserts or removes.
    size: AtomicU64,
    /// Hit/miss/eviction counters; monotonic, read by stats.
    hits_entries: AtomicU64,
    hits_bytes: AtomicU64,
    misses_entries: AtomicU64,
    misses_bytes: AtomicU64,
    evicted_entries: AtomicU64,
    /// Insertion order across all ledgers, a run of one ledger's entries per item. Entries
    /// already gone are skipped. Lock order: `fifo` may be held while taking a
    /// `LedgerEntries::map` lock, never the reverse.
    fifo: Mutex<VecDeque<FifoItem>>,
}

/// One managed ledger's cached entries, ordered by position.
pub struct LedgerEntries {
    /// The shared cache this belongs to.
    cache: Arc<EntryCache>,
    /// Cached payloads, ascending by position. Guarded by a short-lived lock: lookups clone
    /// `Bytes` handles only.
    map: Mutex<VecDeque<(Position, Bytes)>>,
}

impl EntryCache {
    /// A cache with `budget` bytes, evicting down to `watermark × budget`.
    #[must_use]
    pub fn new(budget: u64, watermark: f64, time_threshold_ms: u64) -> Arc<Self> {
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        let target = (budget as f64 * watermark) as u64;
        Arc::new(EntryCache {
            budget,
            target,
            time_threshold_ms,
            size: AtomicU64::new(0),
            hits_entries: AtomicU64::new(0),
            hits_bytes: AtomicU64::new(0),
            misses_entries: AtomicU64::new(0),
            misses_bytes: AtomicU64::new(0),
            evicted_entries: AtomicU64::new(0),
            fifo: Mutex::new(VecDeque::new()),
        })
    }

    /// A new per-ledger view of this cache.
    #[must_use]
    pub fn ledger(self: &Arc<Self>) -> Arc<LedgerEntries> {
        Arc::new(LedgerEntries {
            cache: Arc::clone(self),
            map: Mutex::new(VecDeque::new()),
        })
    }

    /// Whether caching is on.
    #[must_use]
    pub fn enabled(&self) -> bool {
        self.budget > 0
    }

    /// Current counters.
    #[must_use]
    pub fn stats(&self) -> CacheStats {
        // Relaxed everywhere: independent monotonic counters, read for reporting only.
        CacheStats {
            size_bytes: self.size.load(Ordering::Relaxed),
            hits_entries: self.hits_entries.load(Ordering::Relaxed),
            hits_bytes: self.hits_bytes.load(Ordering::Relaxed),
            misses_entries: self.misses_entries.load(Ordering::Relaxed),
            misses_bytes: self.misses_bytes.load(Ordering::Relaxed),
            evicted_entries: self.evicted_entries.load(Ordering::Relaxed),
        }
    }

    /// Records a miss of `entries` entries and `bytes` bytes.
    pub fn record_miss(&self, entries: u64, bytes: u64) {
        // Relaxed: statistics only.
        self.misses_entries.fetch_add(entries, Ordering::Relaxed);
        self.misses_bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    fn removed(&self, count: u64, bytes: u64) {
        // Relaxed: the size is a budget gauge; no memory is published through it.
        self.size.fetch_sub(bytes, Ordering::Relaxed);
        self.evicted_entries.fetch_add(count, Ordering::Relaxed);
    }

    /// Evicts oldest entries until the cache is at most the watermark.
    pub fn evict_to_watermark(&self) {
        self.evict_while(|_, size| size > self.target);
    }

    /// Evicts entries inserted at or before `now_ms - threshold`.
    pub fn evict_expired(&self, now_ms: u64) {
        let limit = now_ms.saturating_sub(self.time_threshold_ms);
        self.evict_while(|item, _| item.inserted_ms <= limit);
    }

    /// Evicts from the oldest run on while `more` (given the run and the cache's size) holds,
    /// entry by entry.
    fn evict_while(&self, mut more: impl FnMut(&FifoItem, u64) -> bool) {
        let mut fifo = self.fifo.lock();
        while let Some(item) = fifo.front() {
            // Relaxed: see `removed`.
            if !more(item, self.size.load(Ordering::Relaxed)) {
                break;
            }
            let Some(owner) = item.owner.upgrade() else {
                fifo.pop_front();
                continue;
            };
            let mut map = owner.map.lock();
            let (mut count, mut bytes, mut whole_run) = (0, 0, true);
            while let Some((position, data)) = map.front() {
                if *position > item.through {
                    break;
                }
                // Relaxed: see `removed`.
                if count > 0
                    && !more(
                        item,
                        self.size.load(Ordering::Relaxed).saturating_sub(bytes),
                    )
                {
                    whole_run = false;
                    break;
                }
                count += 1;
                bytes += data.len() as u64;
                map.pop_front();
            }
            drop(map);
            self.removed(count, bytes);
            if !whole_run {
                break;
            }
            fifo.pop_front();
        }
    }
}

impl LedgerEntries {
    /// Caches one written entry (an entry already cached is kept as it is).
    pub fn insert(self: &Arc<Self>, position: Position, data: Bytes, now_ms: u64) {
        let cache = &self.cache;
        if !cache.enabled() {
            return;
        }
        let len = data.len() as u64;
        {
            let mut map = self.map.lock();
            match map.back() {
                Some((last, _)) if *last >= position => {
                    // Out of order (not how appends come): keep the order.
                    let Err(i) = map.binary_search_by_key(&position, |(p, _)| *p) else {
                        return;
                    };
                    map.insert(i, (position, data));
                }
                _ => map.push_back((position, data)),
            }
        }
        // Relaxed: budget gauge.
        let size = cache.size.fetch_add(len, Ordering::Relaxed) + len;
        {
            let mut fifo = cache.fifo.lock();
            match fifo.back_mut() {
                Some(run)
                    if run.inserted_ms == now_ms
                        && std::ptr::eq(run.owner.as_ptr(), Arc::as_ptr(self)) =>
                {
                    run.through = run.through.max(position);
                }
                _ => fifo.push_back(FifoItem {
                    owner: Arc::downgrade(self),
                    through: position,
                    inserted_ms: now_ms,
                }),
            }
        }
        if size > cache.budget {
            cache.evict_to_watermark();
        }
    }

    /// Returns the whole range `from..=to` (one ledger) if every entry is cached; counts a hit or
    /// leaves the miss to the caller (which knows the bytes it then reads).
    #[must_use]
    pub fn get_range(&self, from: Position, to: Position) -> Option<Vec<(Position, Bytes)>> {
        if !self.cache.enabled() || to < from {
            return None;
        }
        let want = usize::try_from(to.entry_id - from.entry_id + 1).ok()?;
        let map = self.map.lock();
        let first = map.partition_point(|(p, _)| *p < from);
        let found: Vec<(Position, Bytes)> = map
            .range(first..)
            .take_while(|(p, _)| *p <= to)
            .map(|(p, b)| (*p, b.clone()))
            .collect();
        drop(map);
        if found.len() != want {
            return None;
        }
        let bytes: u64 = found.iter().map(|(_, b)| b.len() as u64).sum();
        // Relaxed: statistics only.
        self.cache
            .hits_entries
            .fetch_add(want as u64, Ordering::Relaxed);
        self.cache.hits_bytes.fetch_add(bytes, Ordering::Relaxed);
        Some(found)
    }

    /// Drops every cached entry before `position` (the slowest active reader has passed them).
    pub fn evict_before(&self, position: Position) {
        let mut map = self.map.lock();
        let n = map.partition_point(|(p, _)| *p < position);
        let bytes: u64 = map.drain(..n).map(|(_, b)| b.len() as u64).sum();
        drop(map);
        if n > 0 {
            self.cache.removed(n as u64, bytes);
        }
    }

    /// Drops everything this ledger has cached.
    pub fn clear(&self) {
        let gone = std::mem::take(&mut *self.map.lock());
        if !gone.is_empty() {
            self.cache.removed(
                gone.len() as u64,
                gone.iter().map(|(_, b)| b.len() as u64).sum(),
            );
        }
    }

    /// Entries cached for this ledger.
    #[must_use]
    pub fn len(&self) -> usize {
        self.map.lock().len()
    }

    /// Whether nothing is cached for this ledger.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Drop for LedgerEntries {
    fn drop(&mut self) {
        self.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(e: i64) -> Position {
        Position::new(1, e)
    }

    #[test]
    fn whole_range_hits_partial_misses() {
        let cache = EntryCache::new(1 << 20, 0.9, 1000);
        let l = cache.ledger();
        for e in 0..10 {
            l.insert(p(e), Bytes::from(vec![e as u8; 10]), 0);
        }
        let hit = l.get_range(p(2), p(5)).unwrap();
        assert_eq!(hit.len(), 4);
        assert_eq!(hit[0].1, Bytes::from(vec![2u8; 10]));
        assert!(l.get_range(p(8), p(12)).is_none());
        assert_eq!(cache.stats().hits_entries, 4);
        assert_eq!(cache.stats().size_bytes, 100);
    }

    #[test]
    fn hit_shares_the_payload_buffer() {
        let cache = EntryCache::new(1 << 20, 0.9, 1000);
        let l = cache.ledger();
        let data = Bytes::from(vec![7u8; 64]);
        l.insert(p(0), data.clone(), 0);
        let hit = l.get_range(p(0), p(0)).unwrap();
        assert_eq!(hit[0].1.as_ptr(), data.as_ptr(), "a hit must not copy");
    }

    #[test]
    fn eviction_by_size_time_and_reader() {
        let cache = EntryCache::new(1000, 0.5, 100);
        let a = cache.ledger();
        let b = cache.ledger();
        for e in 0..8 {
            a.insert(p(e), Bytes::from(vec![0u8; 100]), e as u64);
        }
        // Over budget (1100 > 1000) evicts the oldest down to 500.
        for e in 0..3 {
            b.insert(p(e), Bytes::from(vec![0u8; 100]), 50);
        }
        assert!(cache.stats().size_bytes <= 500, "{:?}", cache.stats());
        assert!(a.get_range(p(0), p(0)).is_none(), "oldest go first");
        assert!(b.get_range(p(0), p(2)).is_some(), "newest stay");
        cache.evict_expired(140);
        assert_eq!(a.len(), 0);
        assert_eq!(b.len(), 3);
        b.evict_before(p(2));
        assert_eq!(b.len(), 1);
        drop(b);
        assert_eq!(cache.stats().size_bytes, 0);
    }

    #[test]
    fn a_run_takes_one_fifo_item_and_size_eviction_stops_inside_it() {
        let cache = EntryCache::new(1000, 0.5, 100);
        let a = cache.ledger();
        for e in 0..10 {
            a.insert(p(e), Bytes::from(vec![0u8; 100]), 7);
        }
        assert_eq!(cache.fifo.lock().len(), 1, "one run, one item");
        // 1100 > 1000: down to 500, which ends six entries into the first run.
        a.insert(p(10), Bytes::from(vec![0u8; 100]), 8);
        assert_eq!(cache.stats().size_bytes, 500);
        assert_eq!(cache.stats().evicted_entries, 6);
        assert!(a.get_range(p(5), p(5)).is_none());
        assert!(a.get_range(p(6), p(10)).is_some());
        assert_eq!(
            cache.fifo.lock().len(),
            2,
            "the partly evicted run stays queued"
        );
        // The rest of the first run expires; the second run does not.
        cache.evict_expired(107);
        assert_eq!(a.len(), 1);
        assert!(a.get_range(p(10), p(10)).is_some());
    }

    #[test]
    fn out_of_order_inserts_keep_positions_sorted() {
        let cache = EntryCache::new(1 << 20, 0.9, 1000);
        let l = cache.ledger();
        for e in [0, 1, 3, 2, 3] {
            l.insert(p(e), Bytes::from(vec![e as u8; 10]), 0);
        }
        assert_eq!(l.len(), 4, "a position already cached is not added twice");
        assert_eq!(cache.stats().size_bytes, 40);
        let hit = l.get_range(p(0), p(3)).unwrap();
        let order: Vec<i64> = hit.iter().map(|(q, _)| q.entry_id).collect();
        assert_eq!(order, vec![0, 1, 2, 3]);
    }

    #[test]
    fn disabled_cache_holds_nothing() {
        let cache = EntryCache::new(0, 0.9, 1000);
        let l = cache.ledger();
        l.insert(p(0), Bytes::from_static(b"x"), 0);
        assert!(l.is_empty());
    }
}
