//! One version of a topic's schema, as the registry stores it and producers and consumers
//! present it (Pulsar's `SchemaInfo`).

use serde::{Deserialize, Serialize};

/// One version of a topic's schema (see [`crate::schema`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchemaInfo {
    /// Pulsar schema type number.
    pub schema_type: i32,
    /// Schema name.
    pub name: String,
    /// Schema definition bytes.
    pub data: Vec<u8>,
    /// Properties.
    pub properties: Vec<(String, String)>,
    /// A deletion marker (Pulsar's deleted `SchemaInfo`): versions before it are out of force.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deleted: bool,
    /// When the version was stored (ms since the epoch; 0 for versions stored before it was kept).
    #[serde(default)]
    pub timestamp: i64,
}
