//! Compatibility rules and registry behaviour.

use std::sync::Arc;

use super::avro::{can_read, AvroSchema};
use super::compat::{self, types};
use super::info::SchemaInfo;
use super::SchemaRegistry;
use crate::config::schema_strategy::Strategy;
use crate::error::BrokerError;

fn avro(json: &str) -> SchemaInfo {
    typed(types::AVRO, json)
}

fn typed(t: i32, json: &str) -> SchemaInfo {
    SchemaInfo {
        schema_type: t,
        name: String::new(),
        data: json.as_bytes().to_vec(),
        properties: Vec::new(),
        deleted: false,
        timestamp: 0,
    }
}

fn record(fields: &str) -> String {
    format!(r#"{{"type":"record","name":"R","namespace":"n","fields":[{fields}]}}"#)
}

const A_INT: &str = r#"{"name":"a","type":"int"}"#;
const A_LONG: &str = r#"{"name":"a","type":"long"}"#;
const A_STRING: &str = r#"{"name":"a","type":"string"}"#;
const B_DEFAULT: &str = r#"{"name":"b","type":["null","string"],"default":null}"#;
const B_REQUIRED: &str = r#"{"name":"b","type":"string"}"#;

fn reads(writer: &str, reader: &str) -> bool {
    can_read(
        &AvroSchema::parse(writer.as_bytes()).unwrap(),
        &AvroSchema::parse(reader.as_bytes()).unwrap(),
    )
    .is_ok()
}

fn registry() -> (tempfile::TempDir, SchemaRegistry) {
    let dir = tempfile::tempdir().unwrap();
    let meta: Arc<dyn pulsar_rs_ledger::MetaStore> =
        Arc::new(pulsar_rs_ledger::FileMetaStore::open(dir.path()).unwrap());
    (
        dir,
        SchemaRegistry::new(meta, Arc::new(pulsar_rs_clock::SystemClock)),
    )
}

#[test]
fn avro_resolution_rules() {
    // Type changes: promotion one way only; int to string never.
    assert!(reads(&record(A_INT), &record(A_LONG)));
    assert!(!reads(&record(A_LONG), &record(A_INT)));
    assert!(!reads(&record(A_INT), &record(A_STRING)));
    assert!(!reads(&record(A_STRING), &record(A_INT)));
    // A reader field the writer lacks needs a default; a writer field the reader lacks is skipped.
    let with_b = record(&format!("{A_INT},{B_DEFAULT}"));
    let with_b_required = record(&format!("{A_INT},{B_REQUIRED}"));
    assert!(reads(&record(A_INT), &with_b));
    assert!(!reads(&record(A_INT), &with_b_required));
    assert!(reads(&with_b_required, &record(A_INT)));
    // Unions: a nullable reader reads the plain type; a nullable writer needs every branch.
    let nullable = record(r#"{"name":"a","type":["null","int"]}"#);
    assert!(reads(&record(A_INT), &nullable));
    assert!(!reads(&nullable, &record(A_INT)));
    // Record names are not compared (Avro's resolver); enum symbols are.
    let other_name = r#"{"type":"record","name":"Other","fields":[{"name":"a","type":"int"}]}"#;
    assert!(reads(&record(A_INT), other_name));
    let e1 = r#"{"type":"enum","name":"E","symbols":["X","Y"]}"#;
    let e2 = r#"{"type":"enum","name":"E","symbols":["X"]}"#;
    assert!(reads(e2, e1));
    assert!(!reads(e1, e2));
    // Nested and recursive records, arrays and maps.
    let list = r#"{"type":"record","name":"L","fields":[{"name":"v","type":"int"},{"name":"next","type":["null","L"]}]}"#;
    let list_long = r#"{"type":"record","name":"L","fields":[{"name":"v","type":"long"},{"name":"next","type":["null","L"]}]}"#;
    assert!(reads(list, list_long));
    assert!(!reads(list_long, list));
    assert!(reads(
        r#"{"type":"array","items":"int"}"#,
        r#"{"type":"array","items":"double"}"#
    ));
    assert!(!reads(
        r#"{"type":"map","values":"string"}"#,
        r#"{"type":"map","values":"int"}"#
    ));
    assert!(AvroSchema::parse(
        br#"{"type":"record","name":"R","fields":[{"name":"a","type":"Nope"}]}"#
    )
    .is_err());
}

#[test]
fn strategies_against_the_latest_version() {
    let v1 = avro(&record(A_INT));
    let added_default = avro(&record(&format!("{A_INT},{B_DEFAULT}")));
    let added_required = avro(&record(&format!("{A_INT},{B_REQUIRED}")));
    let retyped = avro(&record(A_STRING));
    let ok = |new: &SchemaInfo, s| compat::for_producer(std::slice::from_ref(&v1), new, s).is_ok();
    // Adding a field with a default is fully compatible.
    for s in [Strategy::Backward, Strategy::Forward, Strategy::Full] {
        assert!(ok(&added_default, s), "{s}");
    }
    // Adding a required field: old data lacks it (BACKWARD fails), old readers skip it.
    assert!(!ok(&added_required, Strategy::Backward));
    assert!(ok(&added_required, Strategy::Forward));
    assert!(!ok(&added_required, Strategy::Full));
    // Removing a required field: the old reader misses it (FORWARD fails).
    let removed = compat::for_producer(
        std::slice::from_ref(&added_required),
        &v1,
        Strategy::Forward,
    );
    assert!(removed.is_err());
    assert!(compat::for_producer(
        std::slice::from_ref(&added_required),
        &v1,
        Strategy::Backward
    )
    .is_ok());
    // A type change fails every checking strategy, not ALWAYS_COMPATIBLE.
    assert!(!ok(&retyped, Strategy::Backward));
    assert!(!ok(&retyped, Strategy::Forward));
    assert!(ok(&retyped, Strategy::AlwaysCompatible));
    // ALWAYS_INCOMPATIBLE: Pulsar's `NeverSchemaValidator`, the new schema "unreadable" by itself.
    let text = |s: &SchemaInfo| String::from_utf8_lossy(&s.data).into_owned();
    let prefix = |strategy: &str, writer: &SchemaInfo, reader: &SchemaInfo| {
        format!(
            "Error during schema compatibility check with strategy {strategy}: org.apache.avro.SchemaValidationException: Unable to read schema: \n{}\nusing schema:\n{}\n",
            text(writer),
            text(reader)
        )
    };
    let never = compat::for_producer(
        std::slice::from_ref(&v1),
        &added_default,
        Strategy::AlwaysIncompatible,
    )
    .unwrap_err();
    assert!(
        never.starts_with(&prefix(
            "ALWAYS_INCOMPATIBLE",
            &added_default,
            &added_default
        )),
        "{never}"
    );
    // FULL checks first that the old schema reads the new (Avro's `ValidateMutualRead`): a
    // retyped field is told as the new schema (written) unreadable by the old (reading).
    let full =
        compat::for_producer(std::slice::from_ref(&v1), &retyped, Strategy::Full).unwrap_err();
    assert!(full.starts_with(&prefix("FULL", &retyped, &v1)), "{full}");
    // BACKWARD: the new schema reads the old data.
    let backward = compat::for_producer(
        std::slice::from_ref(&v1),
        &added_required,
        Strategy::Backward,
    )
    .unwrap_err();
    assert!(
        backward.starts_with(&prefix("BACKWARD", &v1, &added_required)),
        "{backward}"
    );
    // Changing the schema type is refused with Pulsar's message.
    let json = typed(types::JSON, &record(A_INT));
    assert_eq!(
        compat::for_producer(std::slice::from_ref(&v1), &json, Strategy::Full).unwrap_err(),
        "Incompatible schema: exists schema type AVRO, new schema type JSON"
    );
    // Types without a checker: anything but ALWAYS_INCOMPATIBLE.
    let s1 = typed(1, "");
    let s2 = typed(1, "x");
    assert!(compat::for_producer(std::slice::from_ref(&s1), &s2, Strategy::Full).is_ok());
    assert!(
        compat::for_producer(std::slice::from_ref(&s1), &s2, Strategy::AlwaysIncompatible).is_err()
    );
}

#[test]
fn transitive_strategies_check_every_version() {
    let v1 = avro(&record(A_INT));
    let v2 = avro(&record(&format!(
        r#"{A_INT},{{"name":"b","type":"string","default":""}}"#
    )));
    let v3 = avro(&record(&format!("{A_INT},{B_REQUIRED}")));
    let history = [v1, v2];
    // v3 reads v2's data (b is there) but not v1's (b is missing, no default).
    assert!(compat::for_producer(&history, &v3, Strategy::Backward).is_ok());
    assert!(compat::for_producer(&history, &v3, Strategy::BackwardTransitive).is_err());
    assert!(compat::for_producer(&history, &v3, Strategy::FullTransitive).is_err());
}

#[test]
fn json_schemas_must_be_avro_defined() {
    let v1 = typed(types::JSON, &record(A_INT));
    let bad = typed(
        types::JSON,
        r#"{"$schema":"http://json-schema.org/draft-07/schema#"}"#,
    );
    assert_eq!(
        compat::for_producer(std::slice::from_ref(&v1), &bad, Strategy::Full).unwrap_err(),
        "Incompatible schema: expected Avro schema format for SchemaType.JSON"
    );
    let retyped = typed(types::JSON, &record(A_STRING));
    assert!(compat::for_producer(std::slice::from_ref(&v1), &retyped, Strategy::Full).is_err());
}

#[test]
fn consumers_must_read_the_latest_version() {
    let v1 = avro(&record(A_INT));
    let history = [v1.clone()];
    // Under FULL a consumer only needs to read what is written (BACKWARD).
    let reader_with_required = avro(&record(&format!("{A_INT},{B_REQUIRED}")));
    assert!(compat::for_consumer(&history, &reader_with_required, Strategy::Full).is_err());
    let reader_long = avro(&record(A_LONG));
    assert!(compat::for_consumer(&history, &reader_long, Strategy::Full).is_ok());
    assert!(compat::for_consumer(&history, &avro(&record(A_STRING)), Strategy::Full).is_err());
    // No schema to check against: None.
    assert_eq!(compat::for_consumer(&[], &v1, Strategy::Full), Err(None));
    assert_eq!(
        compat::for_consumer(&[], &v1, Strategy::AlwaysCompatible),
        Ok(())
    );
}

#[test]
fn registry_versions_deletion_and_auto_update() {
    let (_dir, reg) = registry();
    let t = "persistent://a/b/t";
    let v1 = avro(&record(A_INT));
    let v2 = avro(&record(&format!("{A_INT},{B_DEFAULT}")));
    assert_eq!(
        reg.put_if_absent(t, v1.clone(), Strategy::Full, true)
            .unwrap(),
        0
    );
    // The same definition, reformatted: the same version.
    let spaced = avro(&record(A_INT).replace(',', ", "));
    assert_eq!(
        reg.put_if_absent(t, spaced, Strategy::Full, true).unwrap(),
        0
    );
    // Auto update off: only known versions.
    let refused = reg.put_if_absent(t, v2.clone(), Strategy::Full, false);
    assert!(
        matches!(&refused, Err(BrokerError::IncompatibleSchema(m)) if m == "Schema not found and schema auto updating is disabled."),
        "{refused:?}"
    );
    assert_eq!(
        reg.put_if_absent(t, v1.clone(), Strategy::Full, false)
            .unwrap(),
        0
    );
    assert_eq!(reg.put_if_absent(t, v2, Strategy::Full, true).unwrap(), 1);
    let retyped = avro(&record(A_STRING));
    assert!(matches!(
        reg.put_if_absent(t, retyped.clone(), Strategy::Full, true),
        Err(BrokerError::IncompatibleSchema(_))
    ));
    // Identical versions stay acceptable under ALWAYS_INCOMPATIBLE.
    assert_eq!(
        reg.put_if_absent(t, v1, Strategy::AlwaysIncompatible, true)
            .unwrap(),
        0
    );
    // Deleting starts a fresh history; version numbers go on.
    assert_eq!(reg.delete(t).unwrap(), Some(2));
    assert!(reg.latest(t).unwrap().is_none());
    assert_eq!(
        reg.put_if_absent(t, retyped, Strategy::Full, true).unwrap(),
        3
    );
    assert_eq!(reg.versions(t).unwrap().len(), 4);
}

#[test]
fn registry_persists() {
    let dir = tempfile::tempdir().unwrap();
    let meta: Arc<dyn pulsar_rs_ledger::MetaStore> =
        Arc::new(pulsar_rs_ledger::FileMetaStore::open(dir.path()).unwrap());
    let reg = SchemaRegistry::new(Arc::clone(&meta), Arc::new(pulsar_rs_clock::SystemClock));
    reg.put_if_absent("t", avro(&record(A_INT)), Strategy::Full, true)
        .unwrap();
    let again = SchemaRegistry::new(meta, Arc::new(pulsar_rs_clock::SystemClock));
    assert_eq!(again.latest("t").unwrap().unwrap().0, 0);
}

#[test]
fn strategy_names() {
    for s in Strategy::ALL {
        assert_eq!(Strategy::parse(s.as_str()), Some(s));
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(json, format!("\"{}\"", s.as_str()));
    }
    assert_eq!(Strategy::parse("backward"), Some(Strategy::Backward));
    assert_eq!(Strategy::parse("nope"), None);
    assert_eq!(compat::type_name(types::AVRO), "AVRO");
    assert_eq!(compat::type_number("json"), Some(types::JSON));
}

#[test]
fn one_topics_registration_does_not_wait_for_another_topics() {
    let (_dir, reg) = registry();
    let reg = Arc::new(reg);
    // Topic b's registration is in progress (its lock held, as across its metadata write).
    let b = reg.topic_lock("persistent://a/b/busy");
    let _held = b.lock();
    let (tx, rx) = std::sync::mpsc::channel();
    let other = Arc::clone(&reg);
    std::thread::spawn(move || {
        let v = other.put_if_absent(
            "persistent://a/b/free",
            avro(&record(A_INT)),
            Strategy::Full,
            true,
        );
        let _ = tx.send(v.is_ok());
    });
    assert_eq!(
        rx.recv_timeout(std::time::Duration::from_secs(10)),
        Ok(true),
        "a registration on another topic waited for the busy topic's lock"
    );
}
