//! Deduplication against a real topic on a temporary data directory.

use std::sync::Arc;

use pulsar_rs_ledger::AddWaiter;
use pulsar_rs_proto::pb::MessageMetadata;

use super::*;
use crate::config::BrokerConfig;
use crate::naming::TopicName;
use crate::service::BrokerService;
use crate::topic::publish::Published;
use crate::topic::repl_source::{self, SourcePosition};
use crate::topic::{AccessMode, ProducerInfo, Topic};

fn service(dir: &std::path::Path, cfg: BrokerConfig) -> Arc<BrokerService> {
    BrokerService::open(
        BrokerConfig {
            broker_deduplication_enabled: true,
            journal_sync_data: false,
            ..cfg
        },
        dir,
    )
    .unwrap()
}

fn md(producer: &str, seq: u64) -> MessageMetadata {
    MessageMetadata {
        producer_name: producer.into(),
        sequence_id: seq,
        publish_time: 1,
        ..Default::default()
    }
}

fn send(t: &Topic, producer: &str, seq: u64, highest: Option<u64>) -> Published {
    send_md(t, &md(producer, seq), highest)
}

fn send_md(t: &Topic, m: &MessageMetadata, highest: Option<u64>) -> Published {
    let ids = SendIds {
        producer: &m.producer_name,
        sequence_id: m.sequence_id,
        highest_sequence_id: highest,
        non_last_chunk: is_non_last_chunk(m),
        marker: false,
        by: DedupBy::SequenceId,
    };
    let stored = pulsar_rs_proto::build_stored_entry(m, b"x");
    let waiter: Arc<dyn AddWaiter> = Arc::new(Unheard);
    t.publish_message_then(ids, None, m.publish_time, stored, 1, &waiter, 0)
        .unwrap()
}

/// A waiter for appends whose outcome the tests take from deduplication's ticket instead.
struct Unheard;

impl AddWaiter for Unheard {
    fn added_through(&self, _token: u64, _result: pulsar_rs_ledger::Result<()>) {}
}

fn is_dup(p: &Published) -> bool {
    matches!(p, Published::Duplicate)
}

fn topic(svc: &BrokerService) -> Arc<Topic> {
    svc.topic(&TopicName::parse("persistent://a/b/t").unwrap(), true)
        .unwrap()
}

#[test]
fn batches_count_by_highest_sequence_id() {
    let dir = tempfile::tempdir().unwrap();
    let svc = service(dir.path(), BrokerConfig::default());
    let t = topic(&svc);
    assert!(!is_dup(&send(&t, "p", 0, Some(9))));
    assert_eq!(t.dedup.last_sequence_id("p"), 9);
    assert!(is_dup(&send(&t, "p", 7, None)));
    assert!(!is_dup(&send(&t, "p", 10, None)));
    assert!(!is_dup(&send(&t, "other", 3, None)));
    assert_eq!(t.ledger.last_confirmed().entry_id, 2);
}

#[test]
fn in_flight_duplicate_is_unknown_until_persisted() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = BrokerConfig {
        broker_deduplication_enabled: true,
        ..BrokerConfig::default()
    };
    let svc = BrokerService::open(cfg, dir.path()).unwrap();
    let t = topic(&svc);
    let Published::Queued {
        ticket: Some(ticket),
        ..
    } = send(&t, "p", 5, None)
    else {
        panic!("a durable write returns a ticket");
    };
    assert!(matches!(
        send(&t, "p", 5, None),
        Published::DuplicateUnknown
    ));
    ticket.persisted(true);
    assert!(is_dup(&send(&t, "p", 5, None)));
}

#[test]
fn failed_write_lets_the_resend_through() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = BrokerConfig {
        broker_deduplication_enabled: true,
        ..BrokerConfig::default()
    };
    let svc = BrokerService::open(cfg, dir.path()).unwrap();
    let t = topic(&svc);
    assert!(!is_dup(&send(&t, "p", 1, None)));
    let Published::Queued {
        ticket: Some(ticket),
        ..
    } = send(&t, "p", 2, None)
    else {
        panic!("a durable write returns a ticket");
    };
    ticket.persisted(false);
    assert_eq!(t.dedup.last_sequence_id("p"), -1);
}

#[test]
fn snapshots_every_interval_and_recovers_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = BrokerConfig {
        broker_deduplication_entries_interval: 3,
        ..BrokerConfig::default()
    };
    {
        let svc = service(dir.path(), cfg.clone());
        let t = topic(&svc);
        for i in 0..10 {
            send(&t, "a", i, None);
            send(&t, "b", 100 + i, None);
        }
        let cursor = t
            .ledger
            .cursors()
            .into_iter()
            .find(|c| c.name() == DEDUP_CURSOR)
            .unwrap();
        // 20 entries, a snapshot every 3: the last at entry 17 (index), holding both producers.
        assert_eq!(cursor.mark_delete_position().entry_id, 17);
        let props = cursor.properties();
        assert_eq!(props.get("a"), Some(&8));
        assert_eq!(props.get("b"), Some(&108));
        // The dedup cursor is not a subscription.
        assert!(t.subscription(DEDUP_CURSOR).is_none());
        svc.close().unwrap();
    }
    let svc = service(dir.path(), cfg);
    let t = topic(&svc);
    assert!(t.subscriptions().is_empty());
    assert_eq!(t.dedup.last_sequence_id("a"), 9);
    assert_eq!(t.dedup.last_sequence_id("b"), 109);
    assert!(is_dup(&send(&t, "a", 9, None)));
    assert!(!is_dup(&send(&t, "a", 10, None)));
}

#[test]
fn only_the_last_chunk_is_checked_and_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let svc = service(dir.path(), BrokerConfig::default());
    let t = topic(&svc);
    let chunk = |id: i32| MessageMetadata {
        chunk_id: Some(id),
        num_chunks_from_msg: Some(3),
        ..md("p", 4)
    };
    assert!(!is_dup(&send_md(&t, &chunk(0), None)));
    assert!(!is_dup(&send_md(&t, &chunk(1), None)));
    assert_eq!(t.dedup.last_sequence_id("p"), -1);
    assert!(!is_dup(&send_md(&t, &chunk(2), None)));
    assert_eq!(t.dedup.last_sequence_id("p"), 4);
    assert!(is_dup(&send_md(&t, &chunk(2), None)));
}

#[test]
fn inactive_producers_are_forgotten() {
    let dir = tempfile::tempdir().unwrap();
    let svc = service(
        dir.path(),
        BrokerConfig {
            broker_deduplication_producer_inactivity_timeout_minutes: 1,
            ..BrokerConfig::default()
        },
    );
    let t = topic(&svc);
    let info = |name: &str| ProducerInfo {
        handle: 1,
        name: name.into(),
        access_mode: AccessMode::Shared,
        address: String::new(),
        producer_id: 0,
        connected_since: pulsar_rs_clock::system_time_of_ms(t.ledger.clock().now_ms()),
        client_version: String::new(),
        metadata: Vec::new(),
        meters: std::sync::Arc::default(),
    };
    t.add_producer(info("gone"), None).unwrap();
    t.add_producer(info("here"), None).unwrap();
    send(&t, "gone", 3, None);
    send(&t, "here", 4, None);
    t.remove_producer("gone", 1);
    let now = t.ledger.clock().now_ms();
    t.dedup.tick(now + 30_000, t.ledger.last_confirmed());
    assert_eq!(t.dedup.last_sequence_id("gone"), 3);
    t.dedup.tick(now + 61_000, t.ledger.last_confirmed());
    assert_eq!(t.dedup.last_sequence_id("gone"), -1);
    assert_eq!(t.dedup.last_sequence_id("here"), 4);
}

#[test]
fn disabling_deletes_the_cursor() {
    let dir = tempfile::tempdir().unwrap();
    let svc = service(dir.path(), BrokerConfig::default());
    let t = topic(&svc);
    send(&t, "p", 1, None);
    t.dedup.set_enabled(false, &t.ledger).unwrap();
    assert!(t.ledger.cursors().iter().all(|c| c.name() != DEDUP_CURSOR));
    assert_eq!(t.dedup.last_sequence_id("p"), -1);
    assert!(!is_dup(&send(&t, "p", 1, None)));
}

/// The replicator producer from cluster `east` to this one.
fn replicator(t: &Topic) -> String {
    let cfg = &t.config;
    repl_source::replicator_producer_name(&cfg.replicator_prefix, "east", &cfg.cluster_name)
}

/// A SEND of east's replicator deduplicated by source position: the message `producer`/`seq`
/// of east, read there at `source` (no property when `None`).
fn send_replicated(t: &Topic, producer: &str, seq: u64, source: Option<(i64, i64)>) -> Published {
    let mut m = MessageMetadata {
        replicated_from: Some("east".into()),
        ..md(producer, seq)
    };
    let at = source.map(|(ledger_id, entry_id)| SourcePosition {
        ledger_id,
        entry_id,
    });
    if let Some(at) = at {
        at.set_on(&mut m);
    }
    let name = replicator(t);
    let ids = SendIds {
        producer: &name,
        sequence_id: 1,
        highest_sequence_id: None,
        non_last_chunk: false,
        marker: false,
        by: DedupBy::SourcePosition(at),
    };
    let stored = pulsar_rs_proto::build_stored_entry(&m, b"x");
    let waiter: Arc<dyn AddWaiter> = Arc::new(Unheard);
    t.publish_message_then(ids, None, m.publish_time, stored, 1, &waiter, 0)
        .unwrap()
}

fn stored(p: &Published) -> bool {
    matches!(p, Published::Stored { .. } | Published::Queued { .. })
}

#[test]
fn replicated_messages_are_told_apart_by_source_position_not_sequence_id() {
    let dir = tempfile::tempdir().unwrap();
    let svc = service(dir.path(), BrokerConfig::default());
    let t = topic(&svc);
    // Two producers named "p" on east, one after the other, both from sequence id 0.
    assert!(stored(&send_replicated(&t, "p", 0, Some((3, 0)))));
    assert!(stored(&send_replicated(&t, "p", 1, Some((3, 1)))));
    assert!(stored(&send_replicated(&t, "p", 0, Some((3, 2)))));
    assert!(stored(&send_replicated(&t, "p", 1, Some((4, 0)))));
    // A rewound replicator resends: at or below the persisted position, a duplicate.
    assert!(is_dup(&send_replicated(&t, "p", 0, Some((3, 2)))));
    assert!(is_dup(&send_replicated(&t, "q", 9, Some((3, 0)))));
    // Without its position a replicated message cannot be judged: "unknown" (resent later).
    assert!(matches!(
        send_replicated(&t, "p", 7, None),
        Published::DuplicateUnknown
    ));
    assert_eq!(t.ledger.last_confirmed().entry_id, 3);
    assert_eq!(
        t.dedup.persisted_source_positions()[&replicator(&t)],
        SourcePosition {
            ledger_id: 4,
            entry_id: 0
        }
    );
}

#[test]
fn a_source_position_in_flight_is_unknown_until_persisted() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = BrokerConfig {
        broker_deduplication_enabled: true,
        ..BrokerConfig::default()
    };
    let svc = BrokerService::open(cfg, dir.path()).unwrap();
    let t = topic(&svc);
    let Published::Queued {
        ticket: Some(ticket),
        ..
    } = send_replicated(&t, "p", 0, Some((3, 5)))
    else {
        panic!("a durable write returns a ticket");
    };
    assert!(matches!(
        send_replicated(&t, "p", 0, Some((3, 5))),
        Published::DuplicateUnknown
    ));
    ticket.persisted(true);
    assert!(is_dup(&send_replicated(&t, "p", 0, Some((3, 5)))));
    // A failed write lets the resend through.
    let Published::Queued {
        ticket: Some(ticket),
        ..
    } = send_replicated(&t, "p", 1, Some((3, 6)))
    else {
        panic!("a durable write returns a ticket");
    };
    ticket.persisted(false);
    assert!(!is_dup(&send_replicated(&t, "p", 1, Some((3, 6)))));
}

#[test]
fn source_positions_survive_a_restart_from_snapshot_and_replay() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = BrokerConfig {
        broker_deduplication_entries_interval: 3,
        ..BrokerConfig::default()
    };
    let name;
    {
        let svc = service(dir.path(), cfg.clone());
        let t = topic(&svc);
        name = replicator(&t);
        for i in 0..4 {
            send_replicated(&t, "p", 0, Some((3, i)));
        }
        // The snapshot after 3 entries holds 3:2 as two properties; 3:3 is only in the ledger.
        let cursor = t
            .ledger
            .cursors()
            .into_iter()
            .find(|c| c.name() == DEDUP_CURSOR)
            .unwrap();
        let props = cursor.properties();
        assert_eq!(props.get(&format!("{name}_LID")), Some(&3));
        assert_eq!(props.get(&format!("{name}_EID")), Some(&2));
        svc.close().unwrap();
    }
    let svc = service(dir.path(), cfg);
    let t = topic(&svc);
    assert_eq!(
        t.dedup.persisted_source_positions()[&name],
        SourcePosition {
            ledger_id: 3,
            entry_id: 3
        },
        "the snapshot, then the replayed entry"
    );
    assert!(is_dup(&send_replicated(&t, "x", 5, Some((3, 3)))));
    assert!(!is_dup(&send_replicated(&t, "p", 0, Some((3, 4)))));
}

#[test]
fn source_positions_are_not_forgotten_for_inactivity() {
    let dir = tempfile::tempdir().unwrap();
    let svc = service(
        dir.path(),
        BrokerConfig {
            broker_deduplication_producer_inactivity_timeout_minutes: 1,
            ..BrokerConfig::default()
        },
    );
    let t = topic(&svc);
    send_replicated(&t, "p", 0, Some((3, 0)));
    t.dedup.producer_removed(&replicator(&t));
    let now = t.ledger.clock().now_ms();
    t.dedup.tick(now + 61_000, t.ledger.last_confirmed());
    assert!(is_dup(&send_replicated(&t, "p", 0, Some((3, 0)))));
}

#[test]
fn markers_from_a_replicator_are_not_deduplicated() {
    let dir = tempfile::tempdir().unwrap();
    let svc = service(dir.path(), BrokerConfig::default());
    let t = topic(&svc);
    let name = replicator(&t);
    let m = MessageMetadata {
        marker_type: Some(10),
        replicated_from: Some("east".into()),
        ..md("pulsar.marker", 0)
    };
    for _ in 0..2 {
        let ids = SendIds {
            producer: &name,
            sequence_id: 1,
            highest_sequence_id: None,
            non_last_chunk: false,
            marker: true,
            by: DedupBy::SequenceId,
        };
        let stored_entry = pulsar_rs_proto::build_stored_entry(&m, b"x");
        let waiter: Arc<dyn AddWaiter> = Arc::new(Unheard);
        let p = t
            .publish_message_then(ids, None, 1, stored_entry, 1, &waiter, 0)
            .unwrap();
        assert!(stored(&p));
    }
    assert!(t.dedup.persisted_source_positions().is_empty());
}
