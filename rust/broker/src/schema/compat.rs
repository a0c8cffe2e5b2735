//! Schema compatibility checks as Pulsar's `SchemaRegistryServiceImpl` applies them: against the
//! latest version or (transitive strategies) every version, the type must not change, an
//! identical definition is always compatible, AVRO and JSON (Avro-defined records) follow
//! Avro's resolution rules, every other type is compatible unless the strategy is
//! `ALWAYS_INCOMPATIBLE`. Errors carry Pulsar's messages.

use super::avro::{can_read, AvroSchema};
use super::info::SchemaInfo;
use crate::config::schema_strategy::Strategy;

/// Wire schema type numbers this module treats specially.
pub mod types {
    /// `JSON`.
    pub const JSON: i32 = 2;
    /// `PROTOBUF`.
    pub const PROTOBUF: i32 = 3;
    /// `AVRO`.
    pub const AVRO: i32 = 4;
    /// `AUTO_CONSUME`: a consumer that takes whatever the topic has.
    pub const AUTO_CONSUME: i32 = 21;
}

const TYPE_NAMES: [&str; 22] = [
    "NONE",
    "STRING",
    "JSON",
    "PROTOBUF",
    "AVRO",
    "BOOLEAN",
    "INT8",
    "INT16",
    "INT32",
    "INT64",
    "FLOAT",
    "DOUBLE",
    "DATE",
    "TIME",
    "TIMESTAMP",
    "KEY_VALUE",
    "INSTANT",
    "LOCAL_DATE",
    "LOCAL_TIME",
    "LOCAL_DATE_TIME",
    "PROTOBUF_NATIVE",
    "AUTO_CONSUME",
];

/// Pulsar's `SchemaType` name of a wire type number (`BYTES` for -1).
#[must_use]
pub fn type_name(t: i32) -> &'static str {
    match t {
        -1 => "BYTES",
        _ => usize::try_from(t)
            .ok()
            .and_then(|i| TYPE_NAMES.get(i).copied())
            .unwrap_or("NONE"),
    }
}

/// The wire type number of a `SchemaType` name (case-insensitive).
#[must_use]
pub fn type_number(name: &str) -> Option<i32> {
    if name.eq_ignore_ascii_case("BYTES") {
        return Some(-1);
    }
    TYPE_NAMES
        .iter()
        .position(|n| n.eq_ignore_ascii_case(name))
        .and_then(|i| i32::try_from(i).ok())
}

fn avro_parsed(t: i32) -> bool {
    matches!(t, types::AVRO | types::JSON | types::PROTOBUF)
}

/// Whether `b` is the same schema as the stored `a` (Pulsar's `getSchemaVersionBySchemaData`):
/// same type and, for Avro-defined types, the same parsed definition, else the same bytes.
/// Properties are not compared.
#[must_use]
pub fn same_schema(a: &SchemaInfo, b: &SchemaInfo) -> bool {
    if a.schema_type != b.schema_type {
        return false;
    }
    if a.data == b.data {
        return true;
    }
    if avro_parsed(a.schema_type) {
        let parse = |d: &[u8]| serde_json::from_slice::<serde_json::Value>(d).ok();
        if let (Some(x), Some(y)) = (parse(&a.data), parse(&b.data)) {
            return x == y;
        }
    }
    false
}

/// Pulsar's `SchemaDataValidator`, which its admin calls apply before anything else: AVRO and
/// PROTOBUF definitions must parse as Avro, JSON ones as Avro or as a JSON object (an older
/// client's JSON schema); primitive types carry no definition; client-side types are refused.
/// Other types are not checked.
///
/// # Errors
/// Pulsar's `InvalidSchemaDataException` message.
pub fn validate_data(s: &SchemaInfo) -> Result<(), String> {
    let invalid = || {
        format!(
            "Invalid schema definition data for {} schema",
            type_name(s.schema_type)
        )
    };
    match s.schema_type {
        types::AVRO | types::PROTOBUF if AvroSchema::parse(&s.data).is_err() => Err(invalid()),
        types::JSON
            if AvroSchema::parse(&s.data).is_err()
                && !serde_json::from_slice::<serde_json::Value>(&s.data)
                    .is_ok_and(|v| v.is_object()) =>
        {
            Err(invalid())
        }
        // BOOLEAN .. LOCAL_DATE_TIME but KEY_VALUE and PROTOBUF_NATIVE: Pulsar's primitives.
        5..=14 | 16..=19 if !s.data.is_empty() => Err(format!(
            "Invalid schema definition data for primitive schemas: length of schema data should be zero, but {} bytes is found",
            s.data.len()
        )),
        types::AUTO_CONSUME => Err(format!(
            "Schema {} is a client-side schema type",
            type_name(s.schema_type)
        )),
        _ => Ok(()),
    }
}

fn type_changed(existing: &SchemaInfo, new: &SchemaInfo) -> String {
    format!(
        "Incompatible schema: exists schema type {}, new schema type {}",
        type_name(existing.schema_type),
        type_name(new.schema_type)
    )
}

fn parse(s: &SchemaInfo) -> Result<AvroSchema, String> {
    AvroSchema::parse(&s.data).map_err(|e| format!("org.apache.avro.SchemaParseException: {e}"))
}

/// Avro's `SchemaValidator` for a strategy over `from` (oldest first).
fn avro_check(from: &[&SchemaInfo], to: &SchemaInfo, strategy: Strategy) -> Result<(), String> {
    let to_schema = parse(to)?;
    // Pulsar's message (`AvroSchemaBasedCompatibilityCheck` around Avro's
    // `SchemaValidationException`): the writer's schema, then the reader's; ours adds why.
    let unreadable = |why: &str, writer: &SchemaInfo, reader: &SchemaInfo| {
        format!(
            "Error during schema compatibility check with strategy {}: org.apache.avro.SchemaValidationException: Unable to read schema: \n{}\nusing schema:\n{}\n({why})",
            strategy.as_str(),
            String::from_utf8_lossy(&writer.data),
            String::from_utf8_lossy(&reader.data)
        )
    };
    let (read_old, old_reads) = match strategy {
        Strategy::AlwaysCompatible => return Ok(()),
        Strategy::Backward | Strategy::BackwardTransitive => (true, false),
        Strategy::Forward | Strategy::ForwardTransitive => (false, true),
        Strategy::Full | Strategy::FullTransitive => (true, true),
        // Pulsar's `NeverSchemaValidator`: refused whenever there is an earlier version, told
        // as the new schema not reading itself.
        Strategy::AlwaysIncompatible | Strategy::Undefined => {
            return match from.last() {
                Some(_) => Err(unreadable("the strategy is ALWAYS_INCOMPATIBLE", to, to)),
                None => Ok(()),
            };
        }
    };
    // Newest first, as Avro's validators are given them; non-transitive: the latest only.
    let against: Vec<&&SchemaInfo> = if strategy.is_transitive() {
        from.iter().rev().collect()
    } else {
        from.iter().rev().take(1).collect()
    };
    for old in against {
        let old_schema = parse(old)?;
        // Avro's `ValidateMutualRead` (FULL) checks that the old schema reads the new first.
        if old_reads {
            can_read(&to_schema, &old_schema).map_err(|w| unreadable(&w, to, old))?;
        }
        if read_old {
            can_read(&old_schema, &to_schema).map_err(|w| unreadable(&w, old, to))?;
        }
    }
    Ok(())
}

/// The per-type check (Pulsar's `SchemaCompatibilityCheck` for the type, else `DEFAULT`).
fn type_check(from: &[&SchemaInfo], to: &SchemaInfo, strategy: Strategy) -> Result<(), String> {
    match to.schema_type {
        types::AVRO => avro_check(from, to, strategy),
        types::JSON => {
            if from.iter().any(|f| AvroSchema::parse(&f.data).is_err()) {
                return Err("Incompatible schema: existing schema is not in valid Avro format for SchemaType.JSON".into());
            }
            if AvroSchema::parse(&to.data).is_err() {
                return Err(
                    "Incompatible schema: expected Avro schema format for SchemaType.JSON".into(),
                );
            }
            avro_check(from, to, strategy)
        }
        _ if strategy == Strategy::AlwaysIncompatible => {
            Err("Schema compatibility strategy is ALWAYS_INCOMPATIBLE".into())
        }
        _ => Ok(()),
    }
}

/// Pulsar's `checkCompatibilityWithLatest`.
///
/// # Errors
/// Why `new` is incompatible.
pub fn check_with_latest(
    latest: &SchemaInfo,
    new: &SchemaInfo,
    strategy: Strategy,
) -> Result<(), String> {
    if strategy == Strategy::AlwaysCompatible {
        return Ok(());
    }
    if latest.schema_type != new.schema_type {
        return Err(type_changed(latest, new));
    }
    if latest.data == new.data {
        return Ok(());
    }
    type_check(&[latest], new, strategy)
}

/// Pulsar's `checkCompatibilityWithAll` over `active` (oldest first).
///
/// # Errors
/// Why `new` is incompatible.
pub fn check_with_all(
    active: &[SchemaInfo],
    new: &SchemaInfo,
    strategy: Strategy,
) -> Result<(), String> {
    if strategy == Strategy::AlwaysCompatible {
        return Ok(());
    }
    if let Some(other) = active.iter().find(|s| s.schema_type != new.schema_type) {
        return Err(type_changed(other, new));
    }
    let from: Vec<&SchemaInfo> = active.iter().collect();
    type_check(&from, new, strategy)
}

/// The check a producer's new schema passes before it is stored as a new version (Pulsar's
/// `putSchemaIfAbsent`, after the lookup of an identical version).
///
/// # Errors
/// Why `new` is incompatible.
pub fn for_producer(
    active: &[SchemaInfo],
    new: &SchemaInfo,
    strategy: Strategy,
) -> Result<(), String> {
    match active.last() {
        None => Ok(()),
        Some(_) if strategy.is_transitive() => check_with_all(active, new, strategy),
        Some(latest) => check_with_latest(latest, new, strategy),
    }
}

/// The check a consumer's schema passes on a topic that has one (Pulsar's
/// `checkConsumerCompatibility`): non-transitive strategies (and `FORWARD_TRANSITIVE`) ask that
/// the consumer reads data written with the latest version.
///
/// # Errors
/// Why the consumer's schema is incompatible; `None` inside when the topic has no schema.
pub fn for_consumer(
    active: &[SchemaInfo],
    new: &SchemaInfo,
    strategy: Strategy,
) -> Result<(), Option<String>> {
    if strategy == Strategy::AlwaysCompatible {
        return Ok(());
    }
    let latest = active.last().ok_or(None)?;
    match strategy {
        Strategy::Backward | Strategy::Forward | Strategy::ForwardTransitive | Strategy::Full => {
            check_with_latest(latest, new, Strategy::Backward).map_err(Some)
        }
        _ => check_with_all(active, new, strategy).map_err(Some),
    }
}
