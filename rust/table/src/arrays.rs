//! Messages as an Arrow batch of the table's schema: the message's own columns from the row,
//! the value's from the payload decoded with the schema version it was written with (JSON text,
//! Avro binary, or a primitive's bytes). A value that does not decode leaves its value columns
//! null (`__value` keeps the bytes).

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::builder::{
    BooleanBuilder, Float32Builder, Float64Builder, Int32Builder, Int64Builder, LargeBinaryBuilder,
    StringBuilder, TimestampMicrosecondBuilder,
};
use arrow_array::{ArrayRef, MapArray, RecordBatch, StringArray, StructArray};
use arrow_buffer::OffsetBuffer;
use arrow_schema::{DataType, Field, Schema as ArrowSchema};
use serde_json::Value;

use crate::columns::{self, schema_type as t, FieldKind, ValueLayout};
use crate::error::TableError;
use crate::rows::MessageRow;

/// How one schema version's payloads decode.
pub enum Decoder {
    /// No value columns.
    Bytes,
    /// A primitive schema's bytes (Pulsar's `Schema.Type` number).
    Primitive(i32),
    /// JSON text.
    Json,
    /// Avro binary with the writer schema.
    Avro(Box<apache_avro::Schema>),
}

impl Decoder {
    /// The decoder of a layout (`definition`: the schema's definition, for AVRO).
    #[must_use]
    pub fn of(layout: &ValueLayout, definition: &[u8]) -> Self {
        match layout {
            ValueLayout::Bytes => Self::Bytes,
            ValueLayout::Primitive { schema_type, .. } => Self::Primitive(*schema_type),
            ValueLayout::Record { avro: false, .. } => Self::Json,
            ValueLayout::Record { avro: true, .. } => std::str::from_utf8(definition)
                .ok()
                .and_then(|d| apache_avro::Schema::parse_str(d).ok())
                .map_or(Self::Bytes, |s| Self::Avro(Box::new(s))),
        }
    }

    /// The value as JSON: an object for a record, the value itself under
    /// [`columns::PRIMITIVE_VALUE`] for a primitive; `None` when it does not decode.
    fn decode(&self, bytes: &[u8]) -> Option<Value> {
        match self {
            Self::Bytes => None,
            Self::Json => serde_json::from_slice(bytes).ok(),
            Self::Avro(schema) => {
                let v = apache_avro::from_avro_datum(schema, &mut &bytes[..], None).ok()?;
                Value::try_from(v).ok()
            }
            Self::Primitive(ty) => {
                let v = primitive(*ty, bytes)?;
                Some(serde_json::json!({ columns::PRIMITIVE_VALUE: v }))
            }
        }
    }
}

fn primitive(ty: i32, b: &[u8]) -> Option<Value> {
    let be = |n: usize| b.get(..n).filter(|_| b.len() == n);
    Some(match ty {
        t::STRING => Value::String(String::from_utf8_lossy(b).into_owned()),
        t::BOOLEAN => Value::Bool(*be(1)?.first()? != 0),
        t::INT8 => Value::from(i8::from_be_bytes(be(1)?.try_into().ok()?)),
        t::INT16 => Value::from(i16::from_be_bytes(be(2)?.try_into().ok()?)),
        t::INT32 => Value::from(i32::from_be_bytes(be(4)?.try_into().ok()?)),
        t::INT64 | t::TIMESTAMP => Value::from(i64::from_be_bytes(be(8)?.try_into().ok()?)),
        t::FLOAT => Value::from(f64::from(f32::from_be_bytes(be(4)?.try_into().ok()?))),
        t::DOUBLE => Value::from(f64::from_be_bytes(be(8)?.try_into().ok()?)),
        _ => return None,
    })
}

fn bytes_of(v: &Value) -> Option<Vec<u8>> {
    match v {
        Value::String(s) => Some(s.as_bytes().to_vec()),
        // Avro `bytes` as serde_json gives them: an array of byte values.
        Value::Array(a) => a
            .iter()
            .map(|x| x.as_u64().and_then(|n| u8::try_from(n).ok()))
            .collect(),
        _ => None,
    }
}

/// Builds the batch of `rows` for the table's Arrow schema. `kinds` gives each value column's
/// kind; `decoders` each schema version's decoder (`None` = messages without a version).
///
/// # Errors
/// [`TableError::Arrow`] (a bug: a column of a type this crate does not build).
pub fn batch(
    schema: &Arc<ArrowSchema>,
    rows: &[MessageRow],
    partition: i32,
    kinds: &HashMap<String, FieldKind>,
    decoders: &HashMap<Option<i64>, Decoder>,
) -> Result<RecordBatch, TableError> {
    let values: Vec<Option<Value>> = rows
        .iter()
        .map(|r| {
            let d = decoders.get(&r.schema_version)?;
            d.decode(r.value.as_deref()?)
        })
        .collect();
    let columns = schema
        .fields()
        .iter()
        .map(|f| column(f, rows, &values, partition, kinds))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(RecordBatch::try_new(Arc::clone(schema), columns)?)
}

fn ts_tz(f: &Field) -> Option<Arc<str>> {
    match f.data_type() {
        DataType::Timestamp(_, tz) => tz.clone(),
        _ => None,
    }
}

fn column(
    f: &Field,
    rows: &[MessageRow],
    values: &[Option<Value>],
    partition: i32,
    kinds: &HashMap<String, FieldKind>,
) -> Result<ArrayRef, TableError> {
    use columns as c;
    let longs = |get: &dyn Fn(&MessageRow) -> Option<i64>| -> ArrayRef {
        let mut b = Int64Builder::with_capacity(rows.len());
        rows.iter().for_each(|r| b.append_option(get(r)));
        Arc::new(b.finish())
    };
    let micros = |get: &dyn Fn(&MessageRow) -> Option<i64>| -> ArrayRef {
        let mut b = TimestampMicrosecondBuilder::with_capacity(rows.len());
        rows.iter()
            .for_each(|r| b.append_option(get(r).map(|ms| ms.saturating_mul(1000))));
        Arc::new(b.finish().with_timezone_opt(ts_tz(f)))
    };
    let strings = |get: &dyn Fn(&MessageRow) -> Option<&str>| -> ArrayRef {
        let mut b = StringBuilder::new();
        rows.iter().for_each(|r| b.append_option(get(r)));
        Arc::new(b.finish())
    };
    let binaries = |get: &dyn Fn(&MessageRow) -> Option<&[u8]>| -> ArrayRef {
        let mut b = LargeBinaryBuilder::new();
        rows.iter().for_each(|r| b.append_option(get(r)));
        Arc::new(b.finish())
    };
    Ok(match f.name().as_str() {
        c::LEDGER_ID => longs(&|r| Some(r.position.ledger_id)),
        c::ENTRY_ID => longs(&|r| Some(r.position.entry_id)),
        c::BATCH_INDEX => {
            let mut b = Int32Builder::with_capacity(rows.len());
            rows.iter().for_each(|r| b.append_value(r.batch_index));
            Arc::new(b.finish())
        }
        c::PARTITION => {
            let mut b = Int32Builder::with_capacity(rows.len());
            rows.iter().for_each(|_| b.append_value(partition));
            Arc::new(b.finish())
        }
        c::PUBLISH_TIME => micros(&|r| Some(r.publish_time_ms)),
        c::EVENT_TIME => micros(&|r| r.event_time_ms),
        c::KEY => strings(&|r| r.key.as_deref()),
        c::ORDERING_KEY => binaries(&|r| r.ordering_key.as_deref()),
        c::PROPERTIES => properties(f, rows)?,
        c::PRODUCER_NAME => strings(&|r| Some(r.producer_name.as_str())),
        c::SEQUENCE_ID => longs(&|r| Some(r.sequence_id)),
        c::SCHEMA_VERSION => longs(&|r| r.schema_version),
        c::VALUE_BYTES => binaries(&|r| r.value.as_deref()),
        name => {
            // A column no schema version of this range names (added by a later version) holds
            // nothing here; read as its own type, never re-quoted as JSON.
            let kind = kinds.get(name).copied().unwrap_or(FieldKind::String);
            let cells = values.iter().map(|v| {
                v.as_ref()
                    .and_then(|v| v.get(name))
                    .filter(|v| !v.is_null())
            });
            value_column(f, kind, cells)?
        }
    })
}

fn value_column<'a>(
    f: &Field,
    kind: FieldKind,
    vals: impl Iterator<Item = Option<&'a Value>>,
) -> Result<ArrayRef, TableError> {
    // The Arrow type the table's schema has decides (a column added as one kind keeps it).
    Ok(match f.data_type() {
        DataType::Boolean => {
            let mut b = BooleanBuilder::new();
            vals.for_each(|v| b.append_option(v.and_then(Value::as_bool)));
            Arc::new(b.finish())
        }
        DataType::Int32 => {
            let mut b = Int32Builder::new();
            vals.for_each(|v| {
                b.append_option(
                    v.and_then(Value::as_i64)
                        .and_then(|n| i32::try_from(n).ok()),
                );
            });
            Arc::new(b.finish())
        }
        DataType::Int64 => {
            let mut b = Int64Builder::new();
            vals.for_each(|v| b.append_option(v.and_then(Value::as_i64)));
            Arc::new(b.finish())
        }
        DataType::Float32 => {
            let mut b = Float32Builder::new();
            #[allow(clippy::cast_possible_truncation)] // a FLOAT column holds f32 values
            vals.for_each(|v| b.append_option(v.and_then(Value::as_f64).map(|x| x as f32)));
            Arc::new(b.finish())
        }
        DataType::Float64 => {
            let mut b = Float64Builder::new();
            vals.for_each(|v| b.append_option(v.and_then(Value::as_f64)));
            Arc::new(b.finish())
        }
        DataType::Timestamp(_, tz) => {
            let mut b = TimestampMicrosecondBuilder::new();
            let scale = if kind == FieldKind::TimestampMicros {
                1
            } else {
                1000
            };
            vals.for_each(|v| {
                b.append_option(v.and_then(Value::as_i64).map(|n| n.saturating_mul(scale)));
            });
            Arc::new(b.finish().with_timezone_opt(tz.clone()))
        }
        DataType::LargeBinary => {
            let mut b = LargeBinaryBuilder::new();
            vals.for_each(|v| b.append_option(v.and_then(bytes_of)));
            Arc::new(b.finish())
        }
        DataType::Utf8 => {
            let mut b = StringBuilder::new();
            vals.for_each(|v| match v {
                Some(Value::String(s)) if kind != FieldKind::Json => b.append_value(s),
                Some(other) => b.append_value(other.to_string()),
                None => b.append_null(),
            });
            Arc::new(b.finish())
        }
        other => {
            return Err(TableError::Config(format!(
                "column {} has type {other}, which topic tables do not write",
                f.name()
            )))
        }
    })
}

/// `__properties` as a map array with the schema's own entry, key and value fields (their
/// field ids included, as the Parquet writer needs them).
fn properties(f: &Field, rows: &[MessageRow]) -> Result<ArrayRef, TableError> {
    let DataType::Map(entries, sorted) = f.data_type() else {
        return Err(TableError::Config("__properties is not a map".into()));
    };
    let DataType::Struct(kv) = entries.data_type() else {
        return Err(TableError::Config(
            "__properties' entries are not a struct".into(),
        ));
    };
    let keys: StringArray = rows
        .iter()
        .flat_map(|r| r.properties.iter().map(|(k, _)| Some(k.as_str())))
        .collect();
    let vals: StringArray = rows
        .iter()
        .flat_map(|r| r.properties.iter().map(|(_, v)| Some(v.as_str())))
        .collect();
    let entries_array = StructArray::try_new(
        kv.clone(),
        vec![Arc::new(keys) as ArrayRef, Arc::new(vals)],
        None,
    )?;
    let offsets = OffsetBuffer::from_lengths(rows.iter().map(|r| r.properties.len()));
    Ok(Arc::new(MapArray::try_new(
        Arc::clone(entries),
        offsets,
        entries_array,
        None,
        *sorted,
    )?))
}
