//! The objects' keys and the user metadata Pulsar puts on them (`DataBlockUtils`,
//! `BlobStoreManagedLedgerOffloader`).

use pulsar_rs_ledger::offload::uuid_string;

/// User metadata key of the format version; both objects carry it and every GET checks it.
pub const METADATA_FORMAT_VERSION_KEY: &str = "s3managedledgeroffloaderformatversion";
/// The only format version written and read.
pub const CURRENT_VERSION: &str = "1";
/// User metadata key saying which object this is (`data` or `index`).
pub const METADATA_ROLE: &str = "role";
/// [`METADATA_ROLE`] of the data object.
pub const ROLE_DATA: &str = "data";
/// [`METADATA_ROLE`] of the index object.
pub const ROLE_INDEX: &str = "index";
/// User metadata key of the managed ledger's name (Pulsar's `ManagedLedgerName`, lower-cased).
pub const METADATA_ML_NAME: &str = "managedledgername";
/// User metadata key of the writing software's version.
pub const METADATA_SOFTWARE_VERSION: &str = "s3managedledgeroffloadersoftwareversion";
/// User metadata key of the writing software's git sha.
pub const METADATA_SOFTWARE_GIT_SHA: &str = "s3managedledgeroffloadersoftwaregitsha";
/// User metadata key of the cluster's name.
pub const METADATA_CLUSTER_NAME: &str = "pulsarclustername";

/// The data object's key: `{uuid}-ledger-{ledgerId}`.
#[must_use]
pub fn data_key(uid: u128, ledger_id: i64) -> String {
    format!("{}-ledger-{ledger_id}", uuid_string(uid))
}

/// The index object's key: `{uuid}-ledger-{ledgerId}-index`.
#[must_use]
pub fn index_key(uid: u128, ledger_id: i64) -> String {
    format!("{}-index", data_key(uid, ledger_id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_pulsars() {
        let uid = 0x5eb5_e7d8_6ec8_479c_a0e8_81be_dba7_a30f_u128;
        assert_eq!(
            data_key(uid, 15),
            "5eb5e7d8-6ec8-479c-a0e8-81bedba7a30f-ledger-15"
        );
        assert_eq!(
            index_key(uid, 15),
            "5eb5e7d8-6ec8-479c-a0e8-81bedba7a30f-ledger-15-index"
        );
    }
}
