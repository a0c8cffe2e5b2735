//! How BookKeeper's failures become the seam's [`LedgerError`]: a fenced ledger
//! and a lost compare-and-set keep their meaning ([`LedgerError::Fenced`], [`LedgerError::BadVersion`]),
//! everything else is a [`LedgerError::Backend`] failure carrying the backend's message.

use pulsar_rs_bookkeeper::BkError;
use pulsar_rs_ledger::LedgerError;

/// A BookKeeper client failure as the seam reports it.
#[must_use]
pub fn from_bk(e: BkError) -> LedgerError {
    match e {
        BkError::Fenced { ledger_id } => LedgerError::Fenced {
            what: format!("ledger {ledger_id}"),
        },
        BkError::LedgerClosed { ledger_id } => LedgerError::Closed {
            what: format!("ledger {ledger_id}"),
        },
        e => LedgerError::Backend {
            context: format!("bookkeeper: {e}"),
        },
    }
}
