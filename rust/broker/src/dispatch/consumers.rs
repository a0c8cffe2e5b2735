//! The consumers attached to a subscription, in the order every dispatcher wants them:
//! by (priority level, name, handle). The subscription owns the list (under its state lock) and
//! lends it to its dispatcher for each routing decision.

use std::collections::HashMap;
use std::sync::Arc;

use crate::consumer::Consumer;

/// Attached consumers, sorted, with a handle → index map.
#[derive(Default)]
pub(crate) struct ConsumerList {
    /// Sorted by (priority level, name, handle).
    list: Vec<Arc<Consumer>>,
    /// Consumer handle → index in `list`.
    index: HashMap<u64, usize>,
}

impl ConsumerList {
    /// The consumers, sorted.
    pub(crate) fn all(&self) -> &[Arc<Consumer>] {
        &self.list
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    pub(crate) fn len(&self) -> usize {
        self.list.len()
    }

    pub(crate) fn by_handle(&self, handle: u64) -> Option<&Arc<Consumer>> {
        self.index.get(&handle).map(|&i| &self.list[i])
    }

    pub(crate) fn add(&mut self, consumer: Arc<Consumer>) {
        self.list.push(consumer);
        self.reindex();
    }

    /// Removes a consumer by handle.
    pub(crate) fn remove(&mut self, handle: u64) -> Option<Arc<Consumer>> {
        let idx = *self.index.get(&handle)?;
        let c = self.list.remove(idx);
        self.reindex();
        Some(c)
    }

    /// Removes every consumer.
    pub(crate) fn take_all(&mut self) -> Vec<Arc<Consumer>> {
        self.index.clear();
        std::mem::take(&mut self.list)
    }

    fn reindex(&mut self) {
        self.list.sort_by(|a, b| {
            (a.priority_level, &a.name, a.handle).cmp(&(b.priority_level, &b.name, b.handle))
        });
        self.index = self
            .list
            .iter()
            .enumerate()
            .map(|(i, c)| (c.handle, i))
            .collect();
    }
}
