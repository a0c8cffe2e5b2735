//! Transactions end to end in the broker: the buffer's max read position and aborted index,
//! pending-ack conflicts, and a coordinator and topics recovered from disk after a restart.

use std::path::Path;
use std::sync::Arc;

use pulsar_rs_ledger::Position;
use pulsar_rs_proto::pb::MessageMetadata;

use super::buffer::TransactionBuffer;
use super::pending_ack::{AckedId, PendingAcks};
use super::{TxnAction, TxnId, TxnStatus};
use crate::config::BrokerConfig;
use crate::dispatch::entry::entry_info;
use crate::error::BrokerError;
use crate::naming::TopicName;
use crate::service::BrokerService;
use crate::topic::Topic;

const TOPIC: &str = "persistent://a/b/txn";

fn service(dir: &Path) -> Arc<BrokerService> {
    let svc = BrokerService::open(
        BrokerConfig {
            journal_sync_data: false,
            transaction_coordinator_enabled: true,
            ..BrokerConfig::default()
        },
        dir,
    )
    .unwrap();
    svc.open_coordinators().unwrap();
    svc
}

fn topic(svc: &BrokerService) -> Arc<Topic> {
    svc.topic(&TopicName::parse(TOPIC).unwrap(), true).unwrap()
}

/// The topic and its durable subscription `s`, loaded off the async workers.
async fn load_with_sub(
    svc: &Arc<BrokerService>,
) -> (Arc<Topic>, Arc<crate::subscription::Subscription>) {
    let svc = Arc::clone(svc);
    tokio::task::spawn_blocking(move || {
        let t = topic(&svc);
        let s = t.durable_subscription("s", true, true).unwrap();
        (t, s)
    })
    .await
    .unwrap()
}

/// Publishes `value`, in `txn` if given, as the Java client does (txn id in the metadata too).
async fn publish(t: &Topic, txn: Option<TxnId>, value: &str) -> Position {
    publish_keyed(t, txn, "k", value).await
}

async fn publish_keyed(t: &Topic, txn: Option<TxnId>, key: &str, value: &str) -> Position {
    let md = MessageMetadata {
        producer_name: "p".into(),
        sequence_id: 0,
        publish_time: 1,
        partition_key: Some(key.into()),
        uncompressed_size: Some(u32::try_from(value.len()).unwrap()),
        txnid_most_bits: txn.map(|t| t.most),
        txnid_least_bits: txn.map(|t| t.least),
        ..Default::default()
    };
    let stored = pulsar_rs_proto::build_stored_entry(&md, value.as_bytes());
    let add = || {
        let (p, done) = t.publish(stored, 1, 1)?;
        Ok::<_, BrokerError>((p, done))
    };
    let (p, done) = match (txn, &t.txn_buffer) {
        (Some(txn), Some(tb)) => {
            let mut at = None;
            let done = tb
                .append(txn, || {
                    let (p, done) = add()?;
                    at = Some(p);
                    Ok((p, done))
                })
                .unwrap();
            (at.unwrap(), done)
        }
        _ => add().unwrap(),
    };
    if let Some(done) = done {
        done.await.unwrap();
    }
    p
}

fn info(txn: Option<TxnId>, marker: Option<i32>) -> crate::dispatch::entry::EntryInfo {
    crate::dispatch::entry::EntryInfo {
        messages: 1,
        txn: txn.map(|t| (t.most, t.least)),
        marker,
        ..Default::default()
    }
}

#[test]
fn buffer_stops_before_the_oldest_open_transaction_and_hides_aborted() {
    let tb = TransactionBuffer::new();
    let (a, b) = (TxnId::new(0, 1), TxnId::new(0, 2));
    let lac = Position::new(3, 9);
    assert_eq!(tb.max_read_position(|| lac), lac);
    tb.append(a, || Ok((Position::new(3, 4), ()))).unwrap();
    tb.append(b, || Ok((Position::new(3, 6), ()))).unwrap();
    tb.append(a, || Ok((Position::new(3, 7), ()))).unwrap();
    assert_eq!(tb.max_read_position(|| lac), Position::new(3, 3));
    tb.end(a, TxnAction::Abort, Position::new(3, 20));
    assert_eq!(tb.max_read_position(|| lac), Position::new(3, 5));
    assert!(tb.hides(&info(Some(a), None)));
    assert!(!tb.hides(&info(Some(b), None)));
    assert!(tb.hides(&info(Some(b), Some(super::MARKER_TXN_COMMIT))));
    // An ended transaction may not send again.
    assert!(matches!(
        tb.append(a, || Ok((Position::new(3, 8), ()))),
        Err(BrokerError::NotAllowed(_))
    ));
    tb.end(b, TxnAction::Commit, Position::new(3, 21));
    assert_eq!(tb.max_read_position(|| lac), lac);
    assert!(!tb.hides(&info(Some(b), None)));
}

#[test]
fn pending_acks_conflict_as_pulsar() {
    let acks = PendingAcks::default();
    let (a, b) = (TxnId::new(0, 1), TxnId::new(0, 2));
    let p = Position::new(1, 1);
    let whole = |p| [AckedId::whole(p)];
    let none = |_| None;
    acks.add_individual(a, &whole(p), |_| false, none).unwrap();
    assert!(acks.holds(p));
    assert!(matches!(
        acks.add_individual(b, &whole(p), |_| false, none),
        Err(BrokerError::TransactionConflict(_))
    ));
    assert!(matches!(
        acks.add_individual(b, &whole(Position::new(1, 2)), |_| true, none),
        Err(BrokerError::TransactionConflict(_))
    ));
    let at = |e| AckedId::whole(Position::new(1, e));
    acks.add_cumulative(a, &at(5), Position::new(1, 0)).unwrap();
    assert!(matches!(
        acks.add_cumulative(b, &at(6), Position::new(1, 0)),
        Err(BrokerError::TransactionConflict(_))
    ));
    assert!(matches!(
        acks.add_cumulative(a, &at(5), Position::new(1, 0)),
        Err(BrokerError::TransactionConflict(_))
    ));
    let held = acks.take(a);
    assert_eq!(held.individual, vec![p]);
    assert_eq!(held.cumulative, Some((Position::new(1, 5), vec![])));
    assert!(!acks.holds(p));
    acks.add_individual(b, &whole(p), |_| false, none).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn coordinator_and_buffer_recover_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let svc = service(dir.path());
    let t = {
        let svc = Arc::clone(&svc);
        tokio::task::spawn_blocking(move || topic(&svc))
            .await
            .unwrap()
    };
    let new = |svc: &Arc<BrokerService>| {
        let svc = Arc::clone(svc);
        async move {
            let id = svc.new_txn(0, 60_000, None).await.unwrap();
            svc.add_partitions_to_txn(id, vec![TOPIC.into()])
                .await
                .unwrap();
            id
        }
    };
    let committed = new(&svc).await;
    let a = publish(&t, Some(committed), "a").await;
    svc.end_txn(committed, TxnAction::Commit).await.unwrap();
    let aborted = new(&svc).await;
    publish(&t, Some(aborted), "b").await;
    svc.end_txn(aborted, TxnAction::Abort).await.unwrap();
    let open = new(&svc).await;
    let c = publish(&t, Some(open), "c").await;
    publish(&t, None, "d").await;
    let bound = t.max_read_position();
    assert_eq!(bound, Position::new(c.ledger_id, c.entry_id - 1));
    let last = {
        let t = Arc::clone(&t);
        tokio::task::spawn_blocking(move || t.last_message_id())
            .await
            .unwrap()
    };
    assert_eq!(
        last.unwrap().0,
        a,
        "markers and aborted messages are not the last message"
    );
    // Committing twice is refused: the transaction has left the coordinator.
    assert!(matches!(
        svc.end_txn(committed, TxnAction::Commit).await,
        Err(BrokerError::TransactionNotFound(_))
    ));
    drop(t);
    tokio::task::spawn_blocking(move || svc.close())
        .await
        .unwrap()
        .unwrap();

    let dir_path = dir.path().to_owned();
    let svc = tokio::task::spawn_blocking(move || service(&dir_path))
        .await
        .unwrap();
    svc.resume_transactions();
    let tc = svc.coordinator(0).unwrap();
    let meta = tc.get(open).expect("the open transaction is recovered");
    assert_eq!(meta.status, TxnStatus::Open);
    assert!(meta.partitions.contains(TOPIC));
    assert!(tc.get(committed).is_none() && tc.get(aborted).is_none());
    let t = {
        let svc = Arc::clone(&svc);
        tokio::task::spawn_blocking(move || topic(&svc))
            .await
            .unwrap()
    };
    assert_eq!(
        t.max_read_position(),
        bound,
        "the open transaction still blocks dispatch"
    );
    let tb = t.txn_buffer.as_ref().unwrap();
    assert!(tb.is_aborted(aborted));
    assert!(!tb.hides(&entry_info(&pulsar_rs_proto::build_stored_entry(
        &MessageMetadata {
            txnid_most_bits: Some(committed.most),
            txnid_least_bits: Some(committed.least),
            ..Default::default()
        },
        b"",
    ))));
    // Ids are never reused.
    let next = svc.new_txn(0, 60_000, None).await.unwrap();
    assert!(next.least > open.least);
    svc.end_txn(open, TxnAction::Commit).await.unwrap();
    assert_eq!(t.max_read_position(), t.ledger.last_confirmed());
}

/// The compacted view's (key, value) pairs.
fn compacted(t: &Arc<Topic>) -> Vec<(String, String)> {
    t.compaction
        .view()
        .map(|v| v.read_all().unwrap())
        .unwrap_or_default()
        .iter()
        .map(|e| {
            let (md, p) = pulsar_rs_proto::parse_stored_entry(&e.data).unwrap();
            (
                md.partition_key.unwrap(),
                String::from_utf8(p.to_vec()).unwrap(),
            )
        })
        .collect()
}

async fn compact(t: &Arc<Topic>) {
    assert!(t.compaction.try_start());
    let t2 = Arc::clone(t);
    tokio::task::spawn_blocking(move || t2.compaction.run_started(&t2.ledger))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_stops_at_open_transactions_and_leaves_aborted_out() {
    let dir = tempfile::tempdir().unwrap();
    let svc = service(dir.path());
    let t = {
        let svc = Arc::clone(&svc);
        tokio::task::spawn_blocking(move || topic(&svc))
            .await
            .unwrap()
    };
    publish_keyed(&t, None, "a", "1").await;
    let open = svc.new_txn(0, 60_000, None).await.unwrap();
    svc.add_partitions_to_txn(open, vec![TOPIC.into()])
        .await
        .unwrap();
    publish_keyed(&t, Some(open), "a", "2").await;
    publish_keyed(&t, None, "b", "1").await;
    compact(&t).await;
    assert_eq!(
        compacted(&t),
        vec![("a".into(), "1".into())],
        "not past the open transaction"
    );
    svc.end_txn(open, TxnAction::Abort).await.unwrap();
    compact(&t).await;
    assert_eq!(
        compacted(&t),
        vec![("a".into(), "1".into()), ("b".into(), "1".into())],
        "the aborted value is left out"
    );
    let committed = svc.new_txn(0, 60_000, None).await.unwrap();
    svc.add_partitions_to_txn(committed, vec![TOPIC.into()])
        .await
        .unwrap();
    publish_keyed(&t, Some(committed), "b", "2").await;
    svc.end_txn(committed, TxnAction::Commit).await.unwrap();
    compact(&t).await;
    assert_eq!(
        compacted(&t),
        vec![("a".into(), "1".into()), ("b".into(), "2".into())]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn held_acks_survive_a_restart_and_a_commit_persists_them() {
    let dir = tempfile::tempdir().unwrap();
    let svc = service(dir.path());
    let (t, s) = load_with_sub(&svc).await;
    let m = publish(&t, None, "m").await;
    let txn = svc.new_txn(0, 60_000, None).await.unwrap();
    svc.add_subscriptions_to_txn(txn, vec![(TOPIC.into(), "s".into())])
        .await
        .unwrap();
    s.pending_acks
        .add_individual(
            txn,
            &[AckedId::whole(m)],
            |p| s.cursor.is_acked(p),
            |_| None,
        )
        .unwrap();
    svc.persist_txn_ack(
        txn,
        super::pending_ack_store::HeldAck {
            topic: TOPIC.into(),
            subscription: "s".into(),
            positions: vec![AckedId::whole(m)],
            cumulative: false,
        },
    )
    .await
    .unwrap();
    drop((t, s));
    tokio::task::spawn_blocking(move || svc.close())
        .await
        .unwrap()
        .unwrap();

    let path = dir.path().to_owned();
    let svc = tokio::task::spawn_blocking(move || service(&path))
        .await
        .unwrap();
    let (t, s) = load_with_sub(&svc).await;
    assert!(s.pending_acks.holds(m), "the held ack is restored at load");
    assert!(!s.cursor.is_acked(m));
    svc.end_txn(txn, TxnAction::Commit).await.unwrap();
    assert!(s.cursor.is_acked(m));
    drop((t, s));
    tokio::task::spawn_blocking(move || svc.close())
        .await
        .unwrap()
        .unwrap();

    let path = dir.path().to_owned();
    let svc = tokio::task::spawn_blocking(move || service(&path))
        .await
        .unwrap();
    let (_t, s) = load_with_sub(&svc).await;
    assert!(s.cursor.is_acked(m), "the committed ack was persisted");
    assert!(!s.pending_acks.holds(m));
}

/// A broker on a simulated file system with every write synced, as in production.
fn service_on(fs: &pulsar_rs_ledger_testkit::simfs::SimFs) -> Arc<BrokerService> {
    let svc = BrokerService::open_on(
        BrokerConfig {
            journal_sync_data: true,
            transaction_coordinator_enabled: true,
            ..BrokerConfig::default()
        },
        Path::new("/data"),
        Arc::new(fs.clone()),
        Arc::new(pulsar_rs_clock::SystemClock),
    )
    .unwrap();
    svc.open_coordinators().unwrap();
    svc
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_power_cut_keeps_committed_transactions_whole_and_open_ones_hidden() {
    let fs = pulsar_rs_ledger_testkit::simfs::SimFs::new();
    let svc = {
        let fs = fs.clone();
        tokio::task::spawn_blocking(move || service_on(&fs))
            .await
            .unwrap()
    };
    let (t, s) = load_with_sub(&svc).await;
    let m = publish(&t, None, "m").await;
    let committed = svc.new_txn(0, 60_000, None).await.unwrap();
    svc.add_partitions_to_txn(committed, vec![TOPIC.into()])
        .await
        .unwrap();
    svc.add_subscriptions_to_txn(committed, vec![(TOPIC.into(), "s".into())])
        .await
        .unwrap();
    publish(&t, Some(committed), "x").await;
    s.pending_acks
        .add_individual(
            committed,
            &[AckedId::whole(m)],
            |p| s.cursor.is_acked(p),
            |_| None,
        )
        .unwrap();
    svc.persist_txn_ack(
        committed,
        super::pending_ack_store::HeldAck {
            topic: TOPIC.into(),
            subscription: "s".into(),
            positions: vec![AckedId::whole(m)],
            cumulative: false,
        },
    )
    .await
    .unwrap();
    svc.end_txn(committed, TxnAction::Commit).await.unwrap();
    let open = svc.new_txn(0, 60_000, None).await.unwrap();
    svc.add_partitions_to_txn(open, vec![TOPIC.into()])
        .await
        .unwrap();
    let y = publish(&t, Some(open), "y").await;
    // The machine loses power: only what was synced survives.
    fs.power_cut(pulsar_rs_ledger_testkit::simfs::Cut::DropUnsynced);
    drop((t, s, svc));

    let svc = {
        let fs = fs.clone();
        tokio::task::spawn_blocking(move || service_on(&fs))
            .await
            .unwrap()
    };
    let (t, s) = load_with_sub(&svc).await;
    let tb = t.txn_buffer.as_ref().unwrap();
    assert!(!tb.is_aborted(committed));
    assert_eq!(
        t.max_read_position(),
        Position::new(y.ledger_id, y.entry_id - 1),
        "the committed message is readable, the open transaction's is not"
    );
    assert!(s.cursor.is_acked(m), "the committed ack survived");
    assert!(!s.pending_acks.holds(m));
    let tc = svc.coordinator(0).unwrap();
    assert!(tc.get(committed).is_none());
    assert_eq!(tc.get(open).map(|m| m.status), Some(TxnStatus::Open));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_txn_beyond_the_active_limit_is_refused_until_one_ends() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_owned();
    let svc = tokio::task::spawn_blocking(move || {
        let svc = BrokerService::open(
            BrokerConfig {
                journal_sync_data: false,
                transaction_coordinator_enabled: true,
                max_active_transactions_per_coordinator: 2,
                ..BrokerConfig::default()
            },
            &path,
        )
        .unwrap();
        svc.open_coordinators().unwrap();
        svc
    })
    .await
    .unwrap();
    let first = svc.new_txn(0, 60_000, None).await.unwrap();
    svc.new_txn(0, 60_000, None).await.unwrap();
    assert!(matches!(
        svc.new_txn(0, 60_000, None).await,
        Err(BrokerError::ReachMaxActiveTxn(_))
    ));
    svc.end_txn(first, TxnAction::Abort).await.unwrap();
    svc.new_txn(0, 60_000, None).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_times_out_on_the_brokers_clock() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_owned();
    let clock = Arc::new(pulsar_rs_clock::ManualClock::new(1_000_000));
    let c = Arc::clone(&clock) as Arc<dyn pulsar_rs_clock::Clock>;
    let svc = tokio::task::spawn_blocking(move || {
        let svc = BrokerService::open_with_clock(
            BrokerConfig {
                journal_sync_data: false,
                transaction_coordinator_enabled: true,
                ..BrokerConfig::default()
            },
            &path,
            c,
        )
        .unwrap();
        svc.open_coordinators().unwrap();
        svc
    })
    .await
    .unwrap();
    let tc = svc.coordinator(0).unwrap();
    let short = svc.new_txn(0, 60_000, None).await.unwrap();
    let long = svc.new_txn(0, 3_600_000, None).await.unwrap();
    assert_eq!(
        tc.get(short).unwrap().start_ms,
        1_000_000,
        "stamped on the broker's clock"
    );
    let status = |id| tc.get(id).map(|m| m.status);
    // A minute of real time would pass before the timer fires on its own; the clock jumps it.
    clock.advance_ms(59_000);
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    assert_eq!(status(short), Some(TxnStatus::Open), "not yet due");
    clock.advance_ms(2_000);
    let deadline = pulsar_rs_clock::monotonic() + std::time::Duration::from_secs(5);
    while status(short) == Some(TxnStatus::Open) && pulsar_rs_clock::monotonic() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_ne!(
        status(short),
        Some(TxnStatus::Open),
        "the jump past its timeout aborted it"
    );
    assert_eq!(
        status(long),
        Some(TxnStatus::Open),
        "an hour's timeout is not over"
    );
    assert_eq!(
        tc.stats
            .timed_out
            .load(std::sync::atomic::Ordering::Relaxed),
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_transactions_are_those_with_a_longer_timeout_not_yet_ended() {
    let dir = tempfile::tempdir().unwrap();
    let svc = service(dir.path());
    let short = svc.new_txn(0, 1_000, None).await.unwrap();
    let long = svc.new_txn(0, 60_000, None).await.unwrap();
    let ended = svc.new_txn(0, 120_000, None).await.unwrap();
    svc.end_txn(ended, TxnAction::Abort).await.unwrap();
    let tc = svc.coordinator(0).unwrap();
    let ids = |timeout| {
        let mut v: Vec<TxnId> = tc.slow_transactions(timeout).iter().map(|m| m.id).collect();
        v.sort();
        v
    };
    // Pulsar's comparison is strict: a timeout equal to the threshold is not slow.
    assert_eq!(ids(0), vec![short, long]);
    assert_eq!(ids(1_000), vec![long]);
    assert_eq!(ids(59_999), vec![long]);
    assert_eq!(ids(60_000), Vec::<TxnId>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pending_ack_log_is_deleted_with_its_subscription_and_its_topic() {
    let dir = tempfile::tempdir().unwrap();
    let svc = service(dir.path());
    let name = TopicName::parse(TOPIC).unwrap();
    let hold = |sub: &'static str| {
        let svc = Arc::clone(&svc);
        async move {
            let t = {
                let svc = Arc::clone(&svc);
                tokio::task::spawn_blocking(move || topic(&svc))
                    .await
                    .unwrap()
            };
            let s = {
                let t = Arc::clone(&t);
                tokio::task::spawn_blocking(move || {
                    t.durable_subscription(sub, true, true).unwrap()
                })
                .await
                .unwrap()
            };
            let m = publish(&t, None, "m").await;
            let txn = svc.new_txn(0, 60_000, None).await.unwrap();
            let ack = super::pending_ack_store::HeldAck {
                topic: TOPIC.into(),
                subscription: sub.into(),
                positions: vec![AckedId::whole(m)],
                cumulative: false,
            };
            s.pending_acks
                .add_individual(txn, &ack.positions, |p| s.cursor.is_acked(p), |_| None)
                .unwrap();
            svc.persist_txn_ack(txn, ack).await.unwrap();
            let log = super::pending_ack_store::ledger_name(&TopicName::parse(TOPIC).unwrap(), sub)
                .unwrap();
            assert!(svc.storage.ledger_exists(&log).unwrap());
            (t, log)
        }
    };
    let (t, gone_with_sub) = hold("s1").await;
    let (_, gone_with_topic) = hold("s2").await;
    tokio::task::spawn_blocking(move || t.remove_subscription("s1").unwrap())
        .await
        .unwrap();
    assert!(!svc.storage.ledger_exists(&gone_with_sub).unwrap());
    assert!(svc.storage.ledger_exists(&gone_with_topic).unwrap());
    let s = Arc::clone(&svc);
    tokio::task::spawn_blocking(move || s.delete_topic(&name, true).unwrap())
        .await
        .unwrap();
    assert!(!svc.storage.ledger_exists(&gone_with_topic).unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transactions_owner_is_logged_and_outlives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let svc = service(dir.path());
    let alices = svc.new_txn(0, 60_000, Some("alice".into())).await.unwrap();
    let anyones = svc.new_txn(0, 60_000, None).await.unwrap();
    tokio::task::spawn_blocking(move || svc.close())
        .await
        .unwrap()
        .unwrap();
    let path = dir.path().to_owned();
    let svc = tokio::task::spawn_blocking(move || service(&path))
        .await
        .unwrap();
    assert!(svc.txn_owned_by(alices, Some("alice")).unwrap());
    assert!(!svc.txn_owned_by(alices, Some("bob")).unwrap());
    assert!(!svc.txn_owned_by(alices, None).unwrap());
    // Opened without authentication: anyone's, as Pulsar's (no owner recorded).
    assert!(svc.txn_owned_by(anyones, Some("bob")).unwrap());
    assert!(matches!(
        svc.txn_owned_by(TxnId::new(0, 999), Some("alice")),
        Err(BrokerError::TransactionNotFound(_))
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_load_starts_from_the_buffer_snapshot_and_replays_only_what_follows() {
    let dir = tempfile::tempdir().unwrap();
    let svc = service(dir.path());
    let t = {
        let svc = Arc::clone(&svc);
        tokio::task::spawn_blocking(move || topic(&svc))
            .await
            .unwrap()
    };
    for i in 0..40 {
        publish(&t, None, &format!("plain-{i}")).await;
    }
    let aborted = svc.new_txn(0, 60_000, None).await.unwrap();
    svc.add_partitions_to_txn(aborted, vec![TOPIC.into()])
        .await
        .unwrap();
    publish(&t, Some(aborted), "x").await;
    svc.end_txn(aborted, TxnAction::Abort).await.unwrap();
    let open = svc.new_txn(0, 60_000, None).await.unwrap();
    svc.add_partitions_to_txn(open, vec![TOPIC.into()])
        .await
        .unwrap();
    let first_open = publish(&t, Some(open), "o").await;
    publish(&t, None, "after").await;
    drop(t);
    let restart = |svc: Arc<BrokerService>| {
        let path = dir.path().to_owned();
        async move {
            tokio::task::spawn_blocking(move || {
                svc.close().unwrap();
                let svc = service(&path);
                let t = topic(&svc);
                (svc, t)
            })
            .await
            .unwrap()
        }
    };
    // Closing the topic took a snapshot (a transaction ended since the last): the load replays
    // from the open transaction's first message only.
    let (svc, t) = restart(svc).await;
    let tb = t.txn_buffer.as_ref().unwrap();
    let replayed = |tb: &crate::transaction::buffer::TransactionBuffer| {
        tb.stats
            .replayed_at_load
            .load(std::sync::atomic::Ordering::Relaxed)
    };
    assert_eq!(
        replayed(tb),
        2,
        "the open transaction's message and the one after"
    );
    assert!(
        tb.is_aborted(aborted),
        "the aborted transaction came from the snapshot"
    );
    assert_eq!(
        t.max_read_position(),
        Position::new(first_open.ledger_id, first_open.entry_id - 1)
    );
    // Without the snapshot (a bad one is ignored) the whole ledger is replayed to the same state.
    t.ledger
        .set_property(crate::topic::transaction::SNAPSHOT_PROPERTY, "not json")
        .unwrap();
    drop(t);
    let (svc, t) = restart(svc).await;
    let tb = t.txn_buffer.as_ref().unwrap();
    assert_eq!(
        replayed(tb),
        44,
        "40 plain, 2 of transactions, 2 markers... the whole ledger"
    );
    assert!(tb.is_aborted(aborted));
    drop((svc, t));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_low_watermark_aborts_what_a_topic_still_holds_of_ended_transactions() {
    let dir = tempfile::tempdir().unwrap();
    let svc = service(dir.path());
    let (t, _) = load_with_sub(&svc).await;
    let ended = svc.new_txn(0, 60_000, None).await.unwrap();
    svc.add_partitions_to_txn(ended, vec![TOPIC.into()])
        .await
        .unwrap();
    publish(&t, Some(ended), "in time").await;
    let held = publish(&t, None, "held").await;
    svc.end_txn(ended, TxnAction::Commit).await.unwrap();
    drop(t);
    tokio::task::spawn_blocking(move || svc.close())
        .await
        .unwrap()
        .unwrap();
    let path = dir.path().to_owned();
    let svc = tokio::task::spawn_blocking(move || service(&path))
        .await
        .unwrap();
    let (t, s) = load_with_sub(&svc).await;
    // After the load the topic no longer knows the commit: a late message of the ended
    // transaction opens it again there, holding dispatch back, and a late ack holds a message.
    let late = publish(&t, Some(ended), "late").await;
    s.pending_acks
        .add_individual(
            ended,
            &[AckedId::whole(held)],
            |p| s.cursor.is_acked(p),
            |_| None,
        )
        .unwrap();
    assert_eq!(
        t.max_read_position(),
        Position::new(late.ledger_id, late.entry_id - 1)
    );
    // The next transaction to end on the topic carries the coordinator's low watermark. Its id
    // is new although every earlier transaction ended and left the log before the restart.
    let next = svc.new_txn(0, 60_000, None).await.unwrap();
    assert!(next.least > ended.least, "{next} reuses an id");
    svc.add_partitions_to_txn(next, vec![TOPIC.into()])
        .await
        .unwrap();
    svc.add_subscriptions_to_txn(next, vec![(TOPIC.into(), "s".into())])
        .await
        .unwrap();
    publish(&t, Some(next), "next").await;
    svc.end_txn(next, TxnAction::Commit).await.unwrap();
    let tb = t.txn_buffer.as_ref().unwrap();
    assert!(
        tb.is_aborted(ended),
        "the late message is aborted: {:?} {ended} {next}",
        tb.low_water_marks()
    );
    assert_eq!(t.max_read_position(), t.ledger.last_confirmed());
    assert!(!s.pending_acks.holds(held), "the late ack is released");
    assert_eq!(tb.low_water_marks(), vec![(0, next.least - 1)]);
}
