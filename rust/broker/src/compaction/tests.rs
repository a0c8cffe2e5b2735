//! Compaction runs against a real topic on a temporary data directory: the view, the cursor,
//! a second run, restart, and the threshold monitor.

use std::sync::Arc;

use pulsar_rs_proto::pb::MessageMetadata;

use super::*;
use crate::config::BrokerConfig;
use crate::naming::TopicName;
use crate::service::BrokerService;
use crate::topic::Topic;

fn service(dir: &Path, cfg: BrokerConfig) -> Arc<BrokerService> {
    BrokerService::open(
        BrokerConfig {
            journal_sync_data: false,
            ..cfg
        },
        dir,
    )
    .unwrap()
}

fn topic(svc: &BrokerService) -> Arc<Topic> {
    svc.topic(&TopicName::parse("persistent://a/b/t").unwrap(), true)
        .unwrap()
}

fn put(t: &Topic, key: &str, value: &[u8]) -> Position {
    let md = MessageMetadata {
        producer_name: "p".into(),
        sequence_id: 0,
        publish_time: 1,
        partition_key: Some(key.into()),
        // As the Java and Go clients send every message: an empty value is a null value.
        uncompressed_size: Some(u32::try_from(value.len()).unwrap()),
        ..Default::default()
    };
    t.publish(pulsar_rs_proto::build_stored_entry(&md, value), 1, 1)
        .unwrap()
        .0
}

fn view_values(t: &Topic) -> Vec<(String, Vec<u8>)> {
    t.compaction
        .view()
        .map(|v| v.read_all().unwrap())
        .unwrap_or_default()
        .iter()
        .map(|e| {
            let (md, p) = pulsar_rs_proto::parse_stored_entry(&e.data).unwrap();
            (md.partition_key.unwrap(), p.to_vec())
        })
        .collect()
}

fn run(t: &Topic) {
    assert!(t.compaction.try_start());
    t.compaction.run_started(&t.ledger);
    assert_eq!(t.compaction.status().status, Status::Success);
}

#[test]
fn runs_fold_in_new_messages_and_survive_restart() {
    let dir = tempfile::tempdir().unwrap();
    let svc = service(dir.path(), BrokerConfig::default());
    let t = topic(&svc);
    assert_eq!(t.compaction.status().status, Status::NotRun);
    put(&t, "a", b"1");
    put(&t, "b", b"1");
    let last = put(&t, "a", b"2");
    run(&t);
    assert_eq!(
        view_values(&t),
        vec![("b".into(), b"1".to_vec()), ("a".into(), b"2".to_vec())]
    );
    let info = t.compaction.info();
    assert_eq!(info.horizon, Some(last));
    // The horizon is the `__compaction` cursor's mark-delete; it is no subscription.
    let cursor = t
        .ledger
        .cursors()
        .into_iter()
        .find(|c| c.name() == COMPACTION_CURSOR)
        .unwrap();
    assert_eq!(cursor.mark_delete_position(), last);
    assert!(t.subscription(COMPACTION_CURSOR).is_none());
    // A second run merges the previous view with what came since (b deleted by a tombstone).
    put(&t, "b", b"");
    put(&t, "c", b"1");
    run(&t);
    assert_eq!(
        view_values(&t),
        vec![("a".into(), b"2".to_vec()), ("c".into(), b"1".to_vec())]
    );
    let id = t.compaction.info().ledger_id.unwrap();
    assert_eq!(id, 2);
    // The first compacted ledger is gone.
    let dir_of = topic_dir(svc.storage.dir(), &t.name.ledger_name());
    assert!(!dir_of.join("1.ledger").exists());
    drop(t);
    svc.close().unwrap();
    drop(svc);
    let svc = service(dir.path(), BrokerConfig::default());
    let t = topic(&svc);
    assert_eq!(t.compaction.info().ledger_id, Some(id));
    assert_eq!(
        view_values(&t),
        vec![("a".into(), b"2".to_vec()), ("c".into(), b"1".to_vec())]
    );
}

#[test]
fn a_second_run_is_refused_while_one_runs() {
    let dir = tempfile::tempdir().unwrap();
    let svc = service(dir.path(), BrokerConfig::default());
    let t = topic(&svc);
    assert!(t.compaction.try_start());
    assert!(!t.compaction.try_start());
    t.compaction.run_started(&t.ledger);
    assert!(t.compaction.try_start());
}

#[test]
fn threshold_starts_a_run_only_when_exceeded() {
    let dir = tempfile::tempdir().unwrap();
    let svc = service(dir.path(), BrokerConfig::default());
    let t = topic(&svc);
    put(&t, "k", &[7u8; 200]);
    put(&t, "k", &[8u8; 200]);
    // Default threshold 0: off.
    assert!(svc.compaction_tick().is_empty());
    let ns = t.name.namespace_name();
    svc.policies
        .update_namespace(&ns, |p| p.compaction_threshold = Some(10_000))
        .unwrap();
    svc.refresh_policies();
    assert!(svc.compaction_tick().is_empty());
    svc.policies
        .update_topic(&t.name, |p| p.compaction_threshold = Some(100))
        .unwrap();
    svc.refresh_policies();
    assert_eq!(svc.compaction_tick(), vec![t.name.clone()]);
    assert_eq!(view_values(&t), vec![("k".into(), vec![8u8; 200])]);
    // Nothing new past the horizon: no second run.
    assert!(svc.compaction_tick().is_empty());
}
