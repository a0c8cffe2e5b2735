//! The cursor of a topic's Iceberg table (`__iceberg_table`, beside `__compaction`): a durable
//! cursor that is not a subscription, opened at the earliest entry when the `icebergTable`
//! policy takes effect and moved as commits land, so retention never trims what the table does
//! not hold yet. Deleted when the policy is switched off.

use std::sync::Arc;

use pulsar_rs_ledger::{Cursor, Position};

use super::Topic;
use crate::error::BrokerError;

/// The table cursor's name.
pub const TABLE_CURSOR: &str = "__iceberg_table";

impl Topic {
    /// The table cursor, opened at the earliest entry when missing. Blocking (a new cursor's
    /// record is written).
    ///
    /// # Errors
    /// Storage failures.
    pub fn table_cursor(&self) -> Result<Arc<Cursor>, BrokerError> {
        Ok(self.ledger.open_cursor_at(TABLE_CURSOR, true)?)
    }

    /// Whether the topic has a table cursor.
    #[must_use]
    pub fn has_table_cursor(&self) -> bool {
        self.ledger
            .cursors()
            .iter()
            .any(|c| c.name() == TABLE_CURSOR)
    }

    /// Moves the table cursor to `through` (never back). Blocking.
    ///
    /// # Errors
    /// Storage failures.
    pub fn table_committed(&self, through: Position) -> Result<(), BrokerError> {
        let cursor = self.table_cursor()?;
        if through > cursor.mark_delete_position() {
            cursor.mark_delete(through)?;
        }
        Ok(())
    }

    /// Deletes the table cursor (the policy is off: the table no longer holds the topic back).
    /// Blocking.
    ///
    /// # Errors
    /// Storage failures.
    pub fn remove_table_cursor(&self) -> Result<(), BrokerError> {
        if self.has_table_cursor() {
            self.ledger.delete_cursor(TABLE_CURSOR)?;
        }
        Ok(())
    }
}
