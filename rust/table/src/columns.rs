//! The table's columns. Every table has the message's own columns (the message id, publish
//! and event time, key, ordering key, properties, producer, sequence id, schema version and the
//! raw payload), named with a `__` prefix; then the value's: a field per top-level field of an
//! AVRO or JSON record schema (Pulsar's JSON schema is an Avro record definition), or one
//! `value` column for a primitive schema (STRING, INT8–INT64, FLOAT, DOUBLE, BOOLEAN,
//! TIMESTAMP). Value columns are optional (a message may lack a field), and fields whose type
//! has no flat Iceberg counterpart (records, arrays, maps, other unions) become a `string`
//! column holding the field's JSON.

use iceberg::spec::{MapType, NestedField, PrimitiveType, Schema, Type};
use pulsar_rs_broker::schema::info::SchemaInfo;
use serde_json::Value;

use crate::error::TableError;

/// `__ledger_id`, `__entry_id`, `__index_in_batch`: the message id (not `__batch_index`, a name
/// pyarrow's dataset scanner, and so pyiceberg's, adds to every batch it reads).
pub const LEDGER_ID: &str = "__ledger_id";
/// The entry of the message id.
pub const ENTRY_ID: &str = "__entry_id";
/// The batch index of the message id (-1 for a message not in a batch).
pub const BATCH_INDEX: &str = "__index_in_batch";
/// The partition (-1 for a topic that is not partitioned).
pub const PARTITION: &str = "__partition";
/// The publish time (the table's partition source).
pub const PUBLISH_TIME: &str = "__publish_time";
/// The event time (null when unset).
pub const EVENT_TIME: &str = "__event_time";
/// The key (`partition_key`).
pub const KEY: &str = "__key";
/// The ordering key.
pub const ORDERING_KEY: &str = "__ordering_key";
/// The properties.
pub const PROPERTIES: &str = "__properties";
/// The producer's name.
pub const PRODUCER_NAME: &str = "__producer_name";
/// The sequence id.
pub const SEQUENCE_ID: &str = "__sequence_id";
/// The schema version the message was written with (null without one).
pub const SCHEMA_VERSION: &str = "__schema_version";
/// The payload as produced (after decompression; a chunked message's chunks joined).
pub const VALUE_BYTES: &str = "__value";
/// The value column of a primitive schema.
pub const PRIMITIVE_VALUE: &str = "value";

/// How a value field is read and stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldKind {
    /// `boolean`.
    Boolean,
    /// `int`.
    Int,
    /// `long`.
    Long,
    /// `float`.
    Float,
    /// `double`.
    Double,
    /// `string`.
    String,
    /// `binary`.
    Binary,
    /// `timestamptz` from epoch milliseconds.
    TimestampMillis,
    /// `timestamptz` from epoch microseconds.
    TimestampMicros,
    /// `string` holding the field's JSON.
    Json,
}

impl FieldKind {
    /// The Iceberg type.
    #[must_use]
    pub fn iceberg_type(self) -> Type {
        Type::Primitive(match self {
            Self::Boolean => PrimitiveType::Boolean,
            Self::Int => PrimitiveType::Int,
            Self::Long => PrimitiveType::Long,
            Self::Float => PrimitiveType::Float,
            Self::Double => PrimitiveType::Double,
            Self::String | Self::Json => PrimitiveType::String,
            Self::Binary => PrimitiveType::Binary,
            Self::TimestampMillis | Self::TimestampMicros => PrimitiveType::Timestamptz,
        })
    }

    /// The kind of an Avro field type (`"long"`, `["null","string"]`, `{"type":"long",
    /// "logicalType":"timestamp-millis"}`).
    fn of_avro(t: &Value) -> Self {
        match t {
            Value::String(s) => match s.as_str() {
                "boolean" => Self::Boolean,
                "int" => Self::Int,
                "long" => Self::Long,
                "float" => Self::Float,
                "double" => Self::Double,
                "string" => Self::String,
                "bytes" => Self::Binary,
                _ => Self::Json,
            },
            Value::Array(branches) => {
                let not_null: Vec<&Value> = branches.iter().filter(|b| *b != "null").collect();
                match not_null.as_slice() {
                    [one] => Self::of_avro(one),
                    _ => Self::Json,
                }
            }
            Value::Object(o) => match (
                o.get("type").and_then(Value::as_str),
                o.get("logicalType").and_then(Value::as_str),
            ) {
                (Some("long"), Some("timestamp-millis")) => Self::TimestampMillis,
                (Some("long"), Some("timestamp-micros")) => Self::TimestampMicros,
                (
                    Some(
                        p @ ("boolean" | "int" | "long" | "float" | "double" | "string" | "bytes"),
                    ),
                    _,
                ) => Self::of_avro(&Value::String(p.to_owned())),
                _ => Self::Json,
            },
            _ => Self::Json,
        }
    }
}

/// How a topic's values become columns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ValueLayout {
    /// No value columns (BYTES, no schema, or a schema type without a mapping): `__value` only.
    Bytes,
    /// One `value` column of a primitive schema (its Pulsar type number kept for decoding).
    Primitive {
        /// Pulsar's `Schema.Type` number.
        schema_type: i32,
        /// The column's kind.
        kind: FieldKind,
    },
    /// A column per record field (JSON or AVRO), in the schema's order.
    Record {
        /// Whether values are Avro binary (AVRO) rather than JSON text (JSON).
        avro: bool,
        /// The fields and their kinds.
        fields: Vec<(String, FieldKind)>,
    },
}

/// Pulsar's `Schema.Type` numbers this crate reads.
pub mod schema_type {
    /// STRING.
    pub const STRING: i32 = 1;
    /// JSON.
    pub const JSON: i32 = 2;
    /// AVRO.
    pub const AVRO: i32 = 4;
    /// BOOLEAN.
    pub const BOOLEAN: i32 = 5;
    /// INT8.
    pub const INT8: i32 = 6;
    /// INT16.
    pub const INT16: i32 = 7;
    /// INT32.
    pub const INT32: i32 = 8;
    /// INT64.
    pub const INT64: i32 = 9;
    /// FLOAT.
    pub const FLOAT: i32 = 10;
    /// DOUBLE.
    pub const DOUBLE: i32 = 11;
    /// TIMESTAMP (epoch ms).
    pub const TIMESTAMP: i32 = 14;
}

impl ValueLayout {
    /// The layout a schema version gives (`None`: no schema).
    ///
    /// # Errors
    /// [`TableError::Config`] for a JSON or AVRO schema whose definition is not a record.
    pub fn of(schema: Option<&SchemaInfo>) -> Result<Self, TableError> {
        use schema_type as t;
        let Some(s) = schema else {
            return Ok(Self::Bytes);
        };
        let primitive = |kind| {
            Ok(Self::Primitive {
                schema_type: s.schema_type,
                kind,
            })
        };
        match s.schema_type {
            t::STRING => primitive(FieldKind::String),
            t::BOOLEAN => primitive(FieldKind::Boolean),
            t::INT8 | t::INT16 | t::INT32 => primitive(FieldKind::Int),
            t::INT64 => primitive(FieldKind::Long),
            t::FLOAT => primitive(FieldKind::Float),
            t::DOUBLE => primitive(FieldKind::Double),
            t::TIMESTAMP => primitive(FieldKind::TimestampMillis),
            t::JSON | t::AVRO => {
                let def: Value = serde_json::from_slice(&s.data).map_err(|e| {
                    TableError::Config(format!("the topic's schema is not JSON: {e}"))
                })?;
                let fields = def
                    .get("fields")
                    .and_then(Value::as_array)
                    .ok_or_else(|| TableError::Config("the topic's schema is not a record".into()))?
                    .iter()
                    .filter_map(|f| {
                        let name = f.get("name")?.as_str()?;
                        // A field that would shadow a message column keeps only `__value`.
                        let kind = FieldKind::of_avro(f.get("type")?);
                        (!name.starts_with("__")).then(|| (name.to_owned(), kind))
                    })
                    .collect();
                Ok(Self::Record {
                    avro: s.schema_type == t::AVRO,
                    fields,
                })
            }
            _ => Ok(Self::Bytes),
        }
    }

    /// The value columns, in order.
    #[must_use]
    pub fn columns(&self) -> Vec<(String, FieldKind)> {
        match self {
            Self::Bytes => Vec::new(),
            Self::Primitive { kind, .. } => vec![(PRIMITIVE_VALUE.to_owned(), *kind)],
            Self::Record { fields, .. } => fields.clone(),
        }
    }
}

/// The message's own columns, in order: name, type, required.
fn message_columns() -> Vec<(&'static str, Type, bool)> {
    let p = Type::Primitive;
    vec![
        (LEDGER_ID, p(PrimitiveType::Long), true),
        (ENTRY_ID, p(PrimitiveType::Long), true),
        (BATCH_INDEX, p(PrimitiveType::Int), true),
        (PARTITION, p(PrimitiveType::Int), true),
        (PUBLISH_TIME, p(PrimitiveType::Timestamptz), true),
        (EVENT_TIME, p(PrimitiveType::Timestamptz), false),
        (KEY, p(PrimitiveType::String), false),
        (ORDERING_KEY, p(PrimitiveType::Binary), false),
        (
            PROPERTIES,
            // Ids 1000/1001 for the map's key and value: below the value columns' ids, which
            // start after the message columns; the catalog renumbers on creation anyway.
            Type::Map(MapType::optional(
                1000,
                p(PrimitiveType::String),
                1001,
                p(PrimitiveType::String),
            )),
            false,
        ),
        (PRODUCER_NAME, p(PrimitiveType::String), false),
        (SEQUENCE_ID, p(PrimitiveType::Long), false),
        (SCHEMA_VERSION, p(PrimitiveType::Long), false),
        (VALUE_BYTES, p(PrimitiveType::Binary), false),
    ]
}

/// The schema of a new table: the message's columns, then `values`.
///
/// # Errors
/// [`TableError::Iceberg`] when Iceberg refuses the schema (two value fields with one name).
pub fn table_schema(values: &[(String, FieldKind)]) -> Result<Schema, TableError> {
    let mut fields = Vec::new();
    let mut id = 0;
    for (name, ty, required) in message_columns() {
        id += 1;
        let f = if required {
            NestedField::required(id, name, ty)
        } else {
            NestedField::optional(id, name, ty)
        };
        fields.push(f.into());
    }
    for (name, kind) in values {
        id += 1;
        fields.push(NestedField::optional(id, name, kind.iceberg_type()).into());
    }
    Ok(Schema::builder().with_fields(fields).build()?)
}

/// The value columns of `wanted` the table's `schema` lacks (what a schema update adds).
#[must_use]
pub fn missing(schema: &Schema, wanted: &[(String, FieldKind)]) -> Vec<(String, FieldKind)> {
    wanted
        .iter()
        .filter(|(name, _)| schema.field_by_name(name).is_none())
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json_schema(def: &str) -> SchemaInfo {
        SchemaInfo {
            schema_type: schema_type::JSON,
            name: "t".into(),
            data: def.as_bytes().to_vec(),
            properties: Vec::new(),
            deleted: false,
            timestamp: 0,
        }
    }

    #[test]
    fn a_json_record_gives_a_column_per_field() {
        let s = json_schema(
            r#"{"type":"record","name":"Order","fields":[
                {"name":"id","type":["null","long"]},
                {"name":"customer","type":["null","string"]},
                {"name":"amount","type":"double"},
                {"name":"at","type":{"type":"long","logicalType":"timestamp-millis"}},
                {"name":"tags","type":{"type":"array","items":"string"}},
                {"name":"__key","type":"string"}]}"#,
        );
        let layout = ValueLayout::of(Some(&s)).unwrap();
        assert_eq!(
            layout.columns(),
            vec![
                ("id".to_owned(), FieldKind::Long),
                ("customer".to_owned(), FieldKind::String),
                ("amount".to_owned(), FieldKind::Double),
                ("at".to_owned(), FieldKind::TimestampMillis),
                ("tags".to_owned(), FieldKind::Json),
            ]
        );
        let schema = table_schema(&layout.columns()).unwrap();
        assert!(schema.field_by_name(KEY).is_some());
        assert!(schema.field_by_name("customer").is_some());
        let evolved = json_schema(
            r#"{"type":"record","name":"Order","fields":[
                {"name":"id","type":["null","long"]},{"name":"region","type":["null","string"]}]}"#,
        );
        let more = ValueLayout::of(Some(&evolved)).unwrap().columns();
        assert_eq!(
            missing(&schema, &more),
            vec![("region".to_owned(), FieldKind::String)]
        );
    }

    #[test]
    fn primitives_and_bytes() {
        assert_eq!(ValueLayout::of(None).unwrap(), ValueLayout::Bytes);
        let mut s = json_schema("");
        s.schema_type = schema_type::INT64;
        assert_eq!(
            ValueLayout::of(Some(&s)).unwrap().columns(),
            vec![(PRIMITIVE_VALUE.to_owned(), FieldKind::Long)]
        );
        s.schema_type = schema_type::JSON;
        assert!(ValueLayout::of(Some(&s)).is_err());
    }
}
