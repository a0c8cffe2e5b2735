//! Avro schema definitions (the JSON text AVRO and JSON schemas carry) and Avro's schema
//! resolution rules, as Apache Avro's `Resolver` applies them when a reader schema reads data
//! written with a writer schema: the rules Pulsar's `AvroSchemaBasedCompatibilityCheck` relies on.
//!
//! What resolution checks: a reader field missing from the writer needs a default; a writer field
//! missing from the reader is skipped; types must match or promote (int → long/float/double,
//! long → float/double, float → double, string ↔ bytes); a writer union needs every branch
//! readable, a reader union needs one branch that reads the writer's type; enums and fixed types
//! need the same full name (the reader's enum must know the writer's symbols unless it has a
//! default); record names are not compared (as Avro's resolver).

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

/// One Avro type.
#[derive(Clone, Debug, PartialEq)]
pub enum AvroType {
    /// `null`.
    Null,
    /// `boolean`.
    Boolean,
    /// `int` (and logical types over it).
    Int,
    /// `long`.
    Long,
    /// `float`.
    Float,
    /// `double`.
    Double,
    /// `bytes`.
    Bytes,
    /// `string`.
    String,
    /// A record.
    Record {
        /// Full name.
        name: String,
        /// Fields in order.
        fields: Vec<Field>,
    },
    /// An enum.
    Enum {
        /// Full name.
        name: String,
        /// Symbols.
        symbols: Vec<String>,
        /// Default symbol for unknown writer symbols.
        default: Option<String>,
    },
    /// `array` of items.
    Array(Box<AvroType>),
    /// `map` of values.
    Map(Box<AvroType>),
    /// A union of branches.
    Union(Vec<AvroType>),
    /// `fixed`.
    Fixed {
        /// Full name.
        name: String,
        /// Size in bytes.
        size: u64,
    },
    /// A reference to a named type defined elsewhere in the same schema.
    Ref(String),
}

/// A record field.
#[derive(Clone, Debug, PartialEq)]
pub struct Field {
    /// Field name.
    pub name: String,
    /// Aliases (names the field had in writer schemas).
    pub aliases: Vec<String>,
    /// Type.
    pub schema: AvroType,
    /// Whether the definition has a `default` (even `null`).
    pub has_default: bool,
}

/// A parsed schema: its root type and its named types by full name.
#[derive(Clone, Debug)]
pub struct AvroSchema {
    /// The root type.
    pub root: AvroType,
    /// Named types (records, enums, fixed) by full name.
    names: HashMap<String, AvroType>,
}

const PRIMITIVES: [&str; 8] = [
    "null", "boolean", "int", "long", "float", "double", "bytes", "string",
];

fn primitive(name: &str) -> Option<AvroType> {
    Some(match name {
        "null" => AvroType::Null,
        "boolean" => AvroType::Boolean,
        "int" => AvroType::Int,
        "long" => AvroType::Long,
        "float" => AvroType::Float,
        "double" => AvroType::Double,
        "bytes" => AvroType::Bytes,
        "string" => AvroType::String,
        _ => return None,
    })
}

fn full_name(name: &str, namespace: Option<&str>) -> String {
    match namespace {
        Some(ns) if !name.contains('.') && !ns.is_empty() => format!("{ns}.{name}"),
        _ => name.to_owned(),
    }
}

impl AvroSchema {
    /// Parses an Avro schema definition (JSON text).
    ///
    /// # Errors
    /// Not JSON, or not a valid Avro schema: the reason.
    pub fn parse(text: &[u8]) -> Result<AvroSchema, String> {
        let v: Value = serde_json::from_slice(text).map_err(|e| format!("not JSON: {e}"))?;
        let mut names = HashMap::new();
        let root = parse_type(&v, None, &mut names)?;
        Ok(AvroSchema { root, names })
    }

    fn deref<'a>(&'a self, t: &'a AvroType) -> Result<&'a AvroType, String> {
        match t {
            AvroType::Ref(n) => self
                .names
                .get(n)
                .ok_or_else(|| format!("undefined name: {n}")),
            other => Ok(other),
        }
    }
}

fn parse_type(
    v: &Value,
    ns: Option<&str>,
    names: &mut HashMap<String, AvroType>,
) -> Result<AvroType, String> {
    match v {
        Value::String(s) => match primitive(s) {
            Some(p) => Ok(p),
            None => {
                let full = full_name(s, ns);
                if names.contains_key(&full) {
                    Ok(AvroType::Ref(full))
                } else if names.contains_key(s) {
                    Ok(AvroType::Ref(s.clone()))
                } else {
                    Err(format!("undefined name: {s}"))
                }
            }
        },
        Value::Array(branches) => branches
            .iter()
            .map(|b| parse_type(b, ns, names))
            .collect::<Result<Vec<_>, _>>()
            .map(AvroType::Union),
        Value::Object(o) => parse_object(o, ns, names),
        other => Err(format!("not a schema: {other}")),
    }
}

fn named(
    o: &Map<String, Value>,
    ns: Option<&str>,
    names: &HashMap<String, AvroType>,
) -> Result<(String, Option<String>), String> {
    let name = o
        .get("name")
        .and_then(Value::as_str)
        .ok_or("a named type needs a \"name\"")?;
    let own_ns = o.get("namespace").and_then(Value::as_str).or(ns);
    let full = full_name(name, own_ns);
    if names.contains_key(&full) {
        return Err(format!("can't redefine: {full}"));
    }
    let inner_ns = full.rsplit_once('.').map(|(n, _)| n.to_owned());
    Ok((full, inner_ns))
}

fn parse_object(
    o: &Map<String, Value>,
    ns: Option<&str>,
    names: &mut HashMap<String, AvroType>,
) -> Result<AvroType, String> {
    let ty = o.get("type").ok_or("no \"type\"")?;
    let Some(kind) = ty.as_str() else {
        // {"type": {...}} or {"type": [...]}: the nested definition.
        return parse_type(ty, ns, names);
    };
    if PRIMITIVES.contains(&kind) {
        // Logical types (date, timestamp-millis, decimal over bytes, ...) read as their base.
        return Ok(primitive(kind).unwrap_or(AvroType::Null));
    }
    match kind {
        "record" | "error" => {
            let (full, inner_ns) = named(o, ns, names)?;
            // Registered before the fields so a field may refer to its own record.
            names.insert(full.clone(), AvroType::Ref(full.clone()));
            let raw = o
                .get("fields")
                .and_then(Value::as_array)
                .ok_or("a record needs \"fields\"")?;
            let mut fields = Vec::with_capacity(raw.len());
            let mut seen = HashSet::new();
            for f in raw {
                let fo = f.as_object().ok_or("a field must be an object")?;
                let name = fo
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or("a field needs a \"name\"")?;
                if !seen.insert(name.to_owned()) {
                    return Err(format!("duplicate field {name} in record {full}"));
                }
                let ft = fo.get("type").ok_or("a field needs a \"type\"")?;
                let schema = parse_type(ft, inner_ns.as_deref(), names)?;
                let aliases = fo
                    .get("aliases")
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default();
                fields.push(Field {
                    name: name.to_owned(),
                    aliases,
                    schema,
                    has_default: fo.contains_key("default"),
                });
            }
            let t = AvroType::Record {
                name: full.clone(),
                fields,
            };
            names.insert(full, t.clone());
            Ok(t)
        }
        "enum" => {
            let (full, _) = named(o, ns, names)?;
            let symbols: Vec<String> = o
                .get("symbols")
                .and_then(Value::as_array)
                .ok_or("an enum needs \"symbols\"")?
                .iter()
                .map(|s| s.as_str().map(str::to_owned).ok_or("symbols are strings"))
                .collect::<Result<_, _>>()?;
            let default = o.get("default").and_then(Value::as_str).map(str::to_owned);
            let t = AvroType::Enum {
                name: full.clone(),
                symbols,
                default,
            };
            names.insert(full, t.clone());
            Ok(t)
        }
        "fixed" => {
            let (full, _) = named(o, ns, names)?;
            let size = o
                .get("size")
                .and_then(Value::as_u64)
                .ok_or("fixed needs a \"size\"")?;
            let t = AvroType::Fixed {
                name: full.clone(),
                size,
            };
            names.insert(full, t.clone());
            Ok(t)
        }
        "array" => {
            let items = o.get("items").ok_or("an array needs \"items\"")?;
            Ok(AvroType::Array(Box::new(parse_type(items, ns, names)?)))
        }
        "map" => {
            let values = o.get("values").ok_or("a map needs \"values\"")?;
            Ok(AvroType::Map(Box::new(parse_type(values, ns, names)?)))
        }
        other => {
            let full = full_name(other, ns);
            if names.contains_key(&full) {
                Ok(AvroType::Ref(full))
            } else {
                Err(format!("undefined name: {other}"))
            }
        }
    }
}

fn kind_name(t: &AvroType) -> &'static str {
    match t {
        AvroType::Null => "null",
        AvroType::Boolean => "boolean",
        AvroType::Int => "int",
        AvroType::Long => "long",
        AvroType::Float => "float",
        AvroType::Double => "double",
        AvroType::Bytes => "bytes",
        AvroType::String => "string",
        AvroType::Record { .. } => "record",
        AvroType::Enum { .. } => "enum",
        AvroType::Array(_) => "array",
        AvroType::Map(_) => "map",
        AvroType::Union(_) => "union",
        AvroType::Fixed { .. } => "fixed",
        AvroType::Ref(_) => "reference",
    }
}

/// Whether a writer primitive promotes to a reader primitive (Avro's promotion rules).
fn promotes(w: &AvroType, r: &AvroType) -> bool {
    use AvroType as T;
    matches!(
        (w, r),
        (T::Int, T::Long | T::Float | T::Double)
            | (T::Long, T::Float | T::Double)
            | (T::Float, T::Double)
            | (T::String, T::Bytes)
            | (T::Bytes, T::String)
    )
}

/// Same kind and, for named types, same full name: the reader-union branch Avro picks first.
fn same_kind(w: &AvroType, r: &AvroType) -> bool {
    use AvroType as T;
    match (w, r) {
        (T::Record { name: a, .. }, T::Record { name: b, .. })
        | (T::Enum { name: a, .. }, T::Enum { name: b, .. })
        | (T::Fixed { name: a, .. }, T::Fixed { name: b, .. }) => a == b,
        (T::Array(_), T::Array(_)) | (T::Map(_), T::Map(_)) => true,
        _ => std::mem::discriminant(w) == std::mem::discriminant(r),
    }
}

struct Resolver<'a> {
    writer: &'a AvroSchema,
    reader: &'a AvroSchema,
    /// Record pairs (writer name, reader name) being resolved: recursion ends there.
    seen: HashSet<(String, String)>,
}

impl Resolver<'_> {
    fn resolve(&mut self, w: &AvroType, r: &AvroType, at: &str) -> Result<(), String> {
        use AvroType as T;
        let w = self.writer.deref(w)?;
        let r = self.reader.deref(r)?;
        if let T::Union(branches) = w {
            for b in branches {
                self.resolve(b, r, at)?;
            }
            return Ok(());
        }
        if let T::Union(branches) = r {
            let mut derefed = Vec::with_capacity(branches.len());
            for b in branches {
                derefed.push(self.reader.deref(b)?);
            }
            let pick = derefed
                .iter()
                .find(|b| same_kind(w, b))
                .or_else(|| {
                    derefed.iter().find(|b| {
                        matches!(
                            (w, b),
                            (T::Record { .. }, T::Record { .. })
                                | (T::Enum { .. }, T::Enum { .. })
                                | (T::Fixed { .. }, T::Fixed { .. })
                        )
                    })
                })
                .or_else(|| derefed.iter().find(|b| promotes(w, b)));
            return match pick {
                Some(b) => self.resolve(w, b, at),
                None => Err(format!(
                    "{at}: no branch of the reader's union reads the writer's {}",
                    kind_name(w)
                )),
            };
        }
        match (w, r) {
            (
                T::Record {
                    name: wn,
                    fields: wf,
                },
                T::Record {
                    name: rn,
                    fields: rf,
                },
            ) => {
                if !self.seen.insert((wn.clone(), rn.clone())) {
                    return Ok(());
                }
                for f in rf {
                    let here = format!("{at}/{}", f.name);
                    let found = wf
                        .iter()
                        .find(|x| x.name == f.name || f.aliases.contains(&x.name));
                    match found {
                        Some(x) => self.resolve(&x.schema, &f.schema, &here)?,
                        None if f.has_default => {}
                        None => {
                            return Err(format!(
                                "{here}: reader field {:?} is missing from the writer's record and has no default",
                                f.name
                            ))
                        }
                    }
                }
                Ok(())
            }
            (
                T::Enum {
                    name: wn,
                    symbols: ws,
                    ..
                },
                T::Enum {
                    name: rn,
                    symbols: rs,
                    default,
                },
            ) => {
                if wn != rn {
                    return Err(format!("{at}: enum names differ ({wn} vs {rn})"));
                }
                match ws.iter().find(|s| !rs.contains(s)) {
                    Some(s) if default.is_none() => Err(format!(
                        "{at}: the reader's enum {rn} lacks the writer's symbol {s:?}"
                    )),
                    _ => Ok(()),
                }
            }
            (T::Fixed { name: wn, size: a }, T::Fixed { name: rn, size: b }) => {
                if wn != rn || a != b {
                    Err(format!("{at}: fixed types differ ({wn}[{a}] vs {rn}[{b}])"))
                } else {
                    Ok(())
                }
            }
            (T::Array(wi), T::Array(ri)) => self.resolve(wi, ri, &format!("{at}/items")),
            (T::Map(wv), T::Map(rv)) => self.resolve(wv, rv, &format!("{at}/values")),
            _ if same_kind(w, r)
                && !matches!(w, T::Record { .. } | T::Enum { .. } | T::Fixed { .. }) =>
            {
                Ok(())
            }
            _ if promotes(w, r) => Ok(()),
            _ => Err(format!(
                "{at}: the writer's {} cannot be read as {}",
                kind_name(w),
                kind_name(r)
            )),
        }
    }
}

/// Whether data written with `writer` can be read with `reader`; the error says where not.
///
/// # Errors
/// The first incompatibility found, with its path (`/field/...`).
pub fn can_read(writer: &AvroSchema, reader: &AvroSchema) -> Result<(), String> {
    Resolver {
        writer,
        reader,
        seen: HashSet::new(),
    }
    .resolve(&writer.root, &reader.root, "")
}
