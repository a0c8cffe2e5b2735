//! A topic's replication cursors, as Pulsar names them (`<replicatorPrefix>.<remote cluster>`,
//! `pulsar.repl.east`): one durable cursor per remote cluster the topic replicates to, holding
//! what is still to be sent there. They are not subscriptions (no consumer attaches to them,
//! stats list them under `replication`), but like subscriptions they hold the ledgers they have
//! not consumed. The server's replicators read and acknowledge them. Message TTL and the admin
//! `expireMessages` reach them as Pulsar's `PersistentReplicator.expireMessages`.

use std::sync::Arc;

use pulsar_rs_ledger::Cursor;

use super::Topic;
use crate::error::BrokerError;
use crate::subscription::expiry;
use crate::subscription::expiry_monitor::ExpiryMonitor;

/// The name of the replication cursor towards `remote` (`<prefix>.<remote>`).
#[must_use]
pub fn cursor_name(prefix: &str, remote: &str) -> String {
    format!("{prefix}.{remote}")
}

/// The remote cluster a cursor named `name` replicates to, when it is a replication cursor
/// (Pulsar: the text after the prefix and its dot).
#[must_use]
pub fn remote_of<'a>(prefix: &str, name: &'a str) -> Option<&'a str> {
    name.strip_prefix(prefix)?
        .strip_prefix('.')
        .filter(|r| !r.is_empty())
}

impl Topic {
    /// Whether `name` is one of this broker's replication cursor names.
    #[must_use]
    pub fn is_replication_cursor(&self, name: &str) -> bool {
        remote_of(&self.config.replicator_prefix, name).is_some()
    }

    /// The replication cursors open on this topic, by remote cluster.
    #[must_use]
    pub fn replication_cursors(&self) -> Vec<(String, Arc<Cursor>)> {
        let prefix = &self.config.replicator_prefix;
        self.ledger
            .cursors()
            .into_iter()
            .filter(|c| c.is_durable())
            .filter_map(|c| remote_of(prefix, c.name()).map(|r| (r.to_owned(), Arc::clone(&c))))
            .collect()
    }

    /// The replication cursor towards `remote`, opened (at the end of the topic, as Pulsar's
    /// `startReplicator`: what was written before is not replicated) when it does not exist.
    /// Blocking: a new cursor's record is written.
    ///
    /// # Errors
    /// Storage failures.
    pub fn replication_cursor(&self, remote: &str) -> Result<Arc<Cursor>, BrokerError> {
        let name = cursor_name(&self.config.replicator_prefix, remote);
        Ok(self.ledger.open_cursor_at(&name, false)?)
    }

    /// The message-TTL state and counters of the replication cursor towards `remote`.
    #[must_use]
    pub fn replication_expiry(&self, remote: &str) -> Arc<ExpiryMonitor> {
        // Lock: see the field.
        Arc::clone(
            self.replication_expiry
                .lock()
                .entry(remote.to_owned())
                .or_default(),
        )
    }

    /// Expires what the replication cursor towards `remote` holds older than `ttl_seconds`
    /// (Pulsar's `PersistentReplicator.expireMessages(int)`): not issued (`Ok(false)`) without
    /// that cursor, without a backlog, with a backlog under 1 000 entries whose oldest has not
    /// expired, or while another check runs. Blocking: reads entries, persists the cursor.
    ///
    /// # Errors
    /// Storage failures.
    pub fn expire_replication(
        &self,
        remote: &str,
        ttl_seconds: u64,
        now_ms: u64,
    ) -> Result<bool, BrokerError> {
        let Some((_, cursor)) = self
            .replication_cursors()
            .into_iter()
            .find(|(r, _)| r == remote)
        else {
            return Ok(false);
        };
        let monitor = self.replication_expiry(remote);
        let target = expiry::Target {
            topic: &self.name.to_string(),
            name: cursor.name(),
            // A replicator has no consumers: Pulsar always applies the small-backlog rule.
            small_backlog_rule: true,
        };
        Ok(expiry::expire_cursor(&cursor, &monitor, &target, ttl_seconds, now_ms)?.is_some())
    }

    /// Deletes the replication cursor towards `remote` (Pulsar's `removeReplicator`: what it
    /// held for that cluster is no longer kept). Blocking.
    ///
    /// # Errors
    /// Storage failures.
    pub fn remove_replication_cursor(&self, remote: &str) -> Result<(), BrokerError> {
        let name = cursor_name(&self.config.replicator_prefix, remote);
        // Lock: see the field.
        self.replication_expiry.lock().remove(remote);
        Ok(self.ledger.delete_cursor(&name)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_as_pulsar() {
        assert_eq!(cursor_name("pulsar.repl", "east"), "pulsar.repl.east");
        assert_eq!(remote_of("pulsar.repl", "pulsar.repl.east"), Some("east"));
        assert_eq!(remote_of("pulsar.repl", "pulsar.replx"), None);
        assert_eq!(remote_of("pulsar.repl", "pulsar.repl."), None);
        assert_eq!(remote_of("pulsar.repl", "sub"), None);
    }
}
