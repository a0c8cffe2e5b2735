//! Deterministic tests of the three dispatchers, with no server: a real managed ledger in a
//! temporary directory, a [`Subscription`] made with [`Subscription::new`] (no dispatcher task)
//! and driven pass by pass with [`Subscription::dispatch_once`], consumers whose connection is a
//! recording [`ConsumerSink`], and a [`ManualClock`] for the Failover delay.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use pulsar_rs_ledger::{
    LedgerConfig, ManagedLedger, ManualClock, Position, Storage, StorageConfig,
};
use pulsar_rs_proto::MessageMetadata;

use super::Subscription;
use crate::config::BrokerConfig;
use crate::consumer::{Consumer, ConsumerEvent, ConsumerSink, SubType};
use crate::dispatch::key_shared::slot_of;

/// What a consumer's connection was asked to send.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Sent {
    /// A message: consumer id, entry id, redelivery count.
    Msg(u64, i64, u32),
    /// ACTIVE_CONSUMER_CHANGE: consumer id, whether active.
    Active(u64, bool),
    /// REACHED_END_OF_TOPIC: consumer id.
    End(u64),
}

/// A fake connection shared by all consumers of a test: records what it is asked to send.
#[derive(Default)]
struct Recorder(Mutex<Vec<Sent>>);

impl ConsumerSink for Recorder {
    fn send(&self, event: ConsumerEvent) -> bool {
        let e = match event {
            ConsumerEvent::Message {
                consumer_id,
                position,
                redelivery_count,
                ..
            } => Sent::Msg(consumer_id, position.entry_id, redelivery_count),
            ConsumerEvent::ActiveConsumerChange {
                consumer_id,
                active,
            } => Sent::Active(consumer_id, active),
            ConsumerEvent::ReachedEndOfTopic { consumer_id } => Sent::End(consumer_id),
            ConsumerEvent::Closed { .. } => return true,
        };
        self.0.lock().push(e);
        true
    }
}

impl Recorder {
    /// Takes the messages sent so far as (consumer id, entry id, redelivery count).
    fn messages(&self) -> Vec<(u64, i64, u32)> {
        let mut all = self.0.lock();
        let out = all
            .iter()
            .filter_map(|e| match e {
                Sent::Msg(c, e, n) => Some((*c, *e, *n)),
                Sent::Active(..) | Sent::End(..) => None,
            })
            .collect();
        all.retain(|e| !matches!(e, Sent::Msg(..)));
        out
    }

    /// Takes the REACHED_END_OF_TOPIC notices sent so far (consumer ids).
    fn ends(&self) -> Vec<u64> {
        let mut all = self.0.lock();
        let out = all
            .iter()
            .filter_map(|e| match e {
                Sent::End(c) => Some(*c),
                _ => None,
            })
            .collect();
        all.retain(|e| !matches!(e, Sent::End(..)));
        out
    }

    /// Takes the active-consumer notices sent so far.
    fn notices(&self) -> Vec<(u64, bool)> {
        let mut all = self.0.lock();
        let out = all
            .iter()
            .filter_map(|e| match e {
                Sent::Active(c, a) => Some((*c, *a)),
                Sent::Msg(..) | Sent::End(..) => None,
            })
            .collect();
        all.retain(|e| !matches!(e, Sent::Active(..)));
        out
    }
}

struct Rig {
    _dir: tempfile::TempDir,
    _storage: Arc<Storage>,
    ml: Arc<ManagedLedger>,
    sub: Subscription,
    sink: Arc<Recorder>,
    clock: Arc<ManualClock>,
}

fn rig(partition: i32, config: BrokerConfig) -> Rig {
    let dir = tempfile::tempdir().expect("tempdir");
    let storage = Storage::open(
        dir.path(),
        StorageConfig {
            journal_sync_data: false,
            cache_eviction_time_threshold: Duration::from_secs(3600),
            ..StorageConfig::default()
        },
    )
    .expect("storage");
    let ml = storage
        .open_ledger("t", LedgerConfig::default())
        .expect("ledger");
    let cursor = ml.open_cursor("sub").expect("cursor");
    let clock = Arc::new(ManualClock::new(1_000_000));
    let sub = Subscription::new(
        "sub",
        "persistent://public/default/t",
        partition,
        cursor,
        true,
        Arc::new(config),
    )
    .with_clock(Arc::clone(&clock) as Arc<dyn pulsar_rs_ledger::Clock>);
    Rig {
        _dir: dir,
        _storage: storage,
        ml,
        sub,
        sink: Arc::new(Recorder::default()),
        clock,
    }
}

impl Rig {
    /// Publishes one entry with an optional key.
    fn publish(&self, key: Option<&str>) -> Position {
        let md = MessageMetadata {
            producer_name: "p".into(),
            publish_time: 1,
            partition_key: key.map(str::to_owned),
            ..Default::default()
        };
        let data = pulsar_rs_proto::frame::build_stored_entry(&md, b"x");
        self.ml.add_entry_blocking(data).expect("append")
    }

    /// Publishes chunk `id` of `count` of the chunked message `uuid`.
    fn publish_chunk(&self, uuid: &str, id: i32, count: i32) -> Position {
        let md = MessageMetadata {
            producer_name: "p".into(),
            publish_time: 1,
            uuid: Some(uuid.to_owned()),
            chunk_id: Some(id),
            num_chunks_from_msg: Some(count),
            ..Default::default()
        };
        let data = pulsar_rs_proto::frame::build_stored_entry(&md, b"x");
        self.ml.add_entry_blocking(data).expect("append")
    }

    fn consumer(&self, id: u64, name: &str, priority: i32, t: SubType) -> Arc<Consumer> {
        let c = Consumer::new(
            id,
            name.to_owned(),
            priority,
            t,
            String::new(),
            Arc::clone(&self.sink) as Arc<dyn ConsumerSink>,
            Arc::clone(&self.clock) as Arc<dyn pulsar_rs_clock::Clock>,
        );
        self.sub
            .add_consumer(Arc::clone(&c), None)
            .expect("add consumer");
        c
    }

    /// Runs dispatcher passes until one delivers nothing.
    fn drain(&self) {
        for _ in 0..100 {
            if self.sub.dispatch_once().expect("dispatch").entries == 0 {
                return;
            }
        }
        panic!("dispatch did not settle");
    }

    fn ack(&self, c: &Consumer, positions: &[Position]) {
        let ids: Vec<(Position, Option<Vec<i64>>)> = positions.iter().map(|p| (*p, None)).collect();
        self.sub.ack_individual(c, &ids);
    }
}

/// Seed 000: Shared hands entries out round-robin, in chunks of at most
/// `dispatcherMaxRoundRobinBatchSize`, within the best priority level that has permits, each
/// consumer taking no more than its permits; the next level only gets what the best cannot take.
#[test]
fn shared_round_robin_follows_permits_and_priority() {
    let config = BrokerConfig {
        dispatcher_max_round_robin_batch_size: 2,
        ..BrokerConfig::default()
    };
    let r = rig(-1, config);
    for _ in 0..12 {
        r.publish(None);
    }
    let a = r.consumer(1, "a", 0, SubType::Shared);
    let b = r.consumer(2, "b", 0, SubType::Shared);
    let c = r.consumer(3, "c", 1, SubType::Shared);
    r.sub.flow(&c, 10);
    r.sub.flow(&a, 3);
    r.sub.flow(&b, 5);
    r.drain();
    let order: Vec<u64> = r.sink.messages().iter().map(|m| m.0).collect();
    assert_eq!(order, vec![1, 1, 2, 2, 1, 2, 2, 2, 3, 3, 3, 3]);
    assert_eq!(
        (a.permits.get(), b.permits.get(), c.permits.get()),
        (0, 0, 6)
    );
}

/// Seed 004: the active consumer is `partitionIndex % n` over the top-priority group sorted by
/// name; a higher-priority newcomer takes over after `activeConsumerFailoverDelayTimeMillis`
/// (nothing goes out meanwhile) and then receives everything not acknowledged. As Pulsar's
/// `scheduleReadOnActiveConsumer`, the consumers hear who is active when the delay is over (the
/// first consumer's included); a newcomer that changes nothing hears at once it is not active.
#[test]
fn failover_picks_by_priority_then_name_and_waits_out_the_delay() {
    let config = BrokerConfig {
        active_consumer_failover_delay_time_millis: 1000,
        ..BrokerConfig::default()
    };
    let r = rig(5, config);
    // Joined out of name order: sorted they are c-a, c-b, c-c; 5 % 3 = 2 → c-c.
    let cc = r.consumer(3, "c-c", 0, SubType::Failover);
    let ca = r.consumer(1, "c-a", 0, SubType::Failover);
    let cb = r.consumer(2, "c-b", 0, SubType::Failover);
    assert_eq!(r.sub.active_consumer().map(|c| c.id), Some(3));
    // c-c stayed active as the others joined (5 % 2 = 1 and 5 % 3 = 2): they heard at once.
    assert_eq!(r.sink.notices(), vec![(1, false), (2, false)]);
    for c in [&ca, &cb, &cc] {
        r.sub.flow(c, 10);
    }
    let first = r.publish(None);
    r.publish(None);
    r.publish(None);
    r.drain();
    assert!(
        r.sink.messages().is_empty(),
        "the first consumer waits out the delay too"
    );
    r.clock.advance_ms(1000);
    r.drain();
    let mut notices = r.sink.notices();
    notices.sort_unstable();
    assert_eq!(notices, vec![(1, false), (2, false), (3, true)]);
    assert_eq!(
        r.sink.messages(),
        vec![(3, 0, 0), (3, 1, 0), (3, 2, 0)],
        "only the active consumer receives"
    );
    r.ack(&cc, &[first]);
    // A consumer of a better priority level (lower number) takes over, alone in its group (over
    // all four consumers, 5 % 4 = 1 would pick c-a).
    let top = r.consumer(9, "z-top", -1, SubType::Failover);
    r.sub.flow(&top, 10);
    assert_eq!(r.sub.active_consumer().map(|c| c.id), Some(9));
    assert_eq!(
        r.sink.notices(),
        vec![],
        "nobody hears of a change before the delay is over"
    );
    r.publish(None);
    r.drain();
    assert!(
        r.sink.messages().is_empty(),
        "held during the failover delay"
    );
    r.clock.advance_ms(999);
    r.drain();
    assert!(r.sink.messages().is_empty(), "held until the delay is over");
    r.clock.advance_ms(1);
    r.drain();
    // Rewound to mark-delete: entry 0 was acknowledged, 1 and 2 were not.
    assert_eq!(r.sink.messages(), vec![(9, 1, 0), (9, 2, 0), (9, 3, 0)]);
    let mut notices = r.sink.notices();
    notices.sort_unstable();
    assert_eq!(notices, vec![(1, false), (2, false), (3, false), (9, true)]);
}

/// A Key_Shared subscription without consistent hashing (AUTO_SPLIT: a second consumer takes the
/// upper half of the slots) and its first consumer `a`, with 100 permits.
fn key_shared_rig() -> (Rig, Arc<Consumer>) {
    let config = BrokerConfig {
        subscription_key_shared_use_consistent_hashing: false,
        ..BrokerConfig::default()
    };
    let r = rig(-1, config);
    let a = r.consumer(1, "a", 0, SubType::KeyShared);
    r.sub.flow(&a, 100);
    (r, a)
}

/// A key whose slot is in the upper half (or the lower half) of the slots.
fn key_in_half(upper: bool) -> String {
    (0..)
        .map(|i| format!("key-{i}"))
        .find(|k| (slot_of(Some(k.as_bytes())) >= 32768) == upper)
        .unwrap_or_default()
}

/// Key_Shared, PIP-379 draining hashes: when a key's slot moves to a new consumer, new entries of
/// it wait until the previous consumer acknowledged what it holds of that key; other keys flow.
#[test]
fn key_shared_new_owner_waits_for_draining_hash() {
    let (r, a) = key_shared_rig();
    let slot = |k: &str| u32::from(slot_of(Some(k.as_bytes())));
    let (moving, staying) = (key_in_half(true), key_in_half(false));
    let e0 = r.publish(Some(&moving));
    r.drain();
    assert_eq!(r.sink.messages(), vec![(1, e0.entry_id, 0)]);
    let b = r.consumer(2, "b", 0, SubType::KeyShared);
    r.sub.flow(&b, 100);
    let owns = |c: &Consumer, k: &str| {
        r.sub
            .key_shared_ranges(c)
            .iter()
            .any(|(lo, hi)| (*lo..=*hi).contains(&slot(k)))
    };
    assert!(owns(&b, &moving) && owns(&a, &staying));
    let e1 = r.publish(Some(&moving));
    let e2 = r.publish(Some(&staying));
    r.drain();
    assert_eq!(
        r.sink.messages(),
        vec![(1, e2.entry_id, 0)],
        "the moved key waits for a's acknowledgement; the other key does not"
    );
    assert_eq!(r.sub.replay_len(), 1);
    r.ack(&a, &[e0]);
    r.drain();
    assert_eq!(r.sink.messages(), vec![(2, e1.entry_id, 0)]);
}

/// Shared: a closed consumer's unacknowledged entries are replayed to the others before any new
/// entry is read. As in Pulsar 4.x (apache/pulsar#17060) a close does not count as a redelivery:
/// they carry redelivery count 0.
#[test]
fn shared_replays_before_new_entries() {
    let r = rig(-1, BrokerConfig::default());
    let a = r.consumer(1, "a", 0, SubType::Shared);
    let b = r.consumer(2, "b", 0, SubType::Shared);
    r.sub.flow(&a, 3);
    for _ in 0..3 {
        r.publish(None);
    }
    r.drain();
    assert_eq!(r.sink.messages(), vec![(1, 0, 0), (1, 1, 0), (1, 2, 0)]);
    r.sub.remove_consumer(&a);
    r.publish(None);
    r.publish(None);
    r.sub.flow(&b, 10);
    r.drain();
    assert_eq!(
        r.sink.messages(),
        vec![(2, 0, 0), (2, 1, 0), (2, 2, 0), (2, 3, 0), (2, 4, 0)],
        "replayed first, not counted as redelivered"
    );
}

/// Shared: only REDELIVER_UNACKNOWLEDGED_MESSAGES counts a redelivery; a count survives a
/// consumer closing while others remain, and is forgotten when the last consumer leaves
/// (Pulsar's `clearComponentsAfterRemovedAllConsumers`).
#[test]
fn shared_redelivery_counts_only_client_redeliveries() {
    let r = rig(-1, BrokerConfig::default());
    let a = r.consumer(1, "a", 0, SubType::Shared);
    let b = r.consumer(2, "b", 0, SubType::Shared);
    r.sub.flow(&a, 3);
    let e0 = r.publish(None);
    r.publish(None);
    r.drain();
    assert_eq!(r.sink.messages(), vec![(1, 0, 0), (1, 1, 0)]);
    r.sub.redeliver(&a, Some(&[e0]));
    r.drain();
    assert_eq!(r.sink.messages(), vec![(1, 0, 1)], "a negative ack counts");
    r.sub.remove_consumer(&a);
    r.sub.flow(&b, 10);
    r.drain();
    assert_eq!(
        r.sink.messages(),
        vec![(2, 0, 1), (2, 1, 0)],
        "the close adds nothing; the earlier count is kept"
    );
    r.sub.remove_consumer(&b);
    let c = r.consumer(3, "c", 0, SubType::Shared);
    let d = r.consumer(4, "d", 0, SubType::Shared);
    r.sub.flow(&c, 10);
    r.drain();
    assert_eq!(r.sink.messages(), vec![(3, 0, 0), (3, 1, 0)]);
    // Replayed again after c closes: the count from before the subscription emptied is gone.
    r.sub.remove_consumer(&c);
    r.sub.flow(&d, 10);
    r.drain();
    assert_eq!(r.sink.messages(), vec![(4, 0, 0), (4, 1, 0)]);
}

/// Key_Shared: when a consumer closes, the consumer that takes its keys over gets the replayed
/// entries of a key and then, right after, the new entries of that key, without waiting for the
/// replayed ones to be acknowledged.
#[test]
fn key_shared_replacement_gets_new_entries_right_after_replayed() {
    let r = rig(-1, BrokerConfig::default());
    let a = r.consumer(1, "a", 0, SubType::KeyShared);
    let c = r.consumer(3, "c", 0, SubType::KeyShared);
    let slot = |k: &str| u32::from(slot_of(Some(k.as_bytes())));
    let key = (0..)
        .map(|i| format!("key-{i}"))
        .find(|k| {
            r.sub
                .key_shared_ranges(&a)
                .iter()
                .any(|(lo, hi)| (*lo..=*hi).contains(&slot(k)))
        })
        .unwrap_or_default();
    r.sub.flow(&a, 2);
    r.publish(Some(&key));
    r.publish(Some(&key));
    r.drain();
    assert_eq!(r.sink.messages(), vec![(1, 0, 0), (1, 1, 0)]);
    r.sub.remove_consumer(&a);
    r.publish(Some(&key));
    r.sub.flow(&c, 10);
    r.drain();
    assert_eq!(r.sink.messages(), vec![(3, 0, 0), (3, 1, 0), (3, 2, 0)]);
    assert_eq!(r.sub.replay_len(), 0);
}

/// Shared (Pulsar's `SharedConsumerAssignor`): every chunk of a chunked message goes, in order, to
/// the consumer that got its first chunk, while other entries keep going round-robin; a chunk its
/// consumer has no permits for waits (with the message's later chunks) in the replay set.
#[test]
fn shared_sends_all_chunks_of_a_message_to_one_consumer() {
    let r = rig(
        -1,
        BrokerConfig {
            dispatcher_max_round_robin_batch_size: 1,
            ..BrokerConfig::default()
        },
    );
    let a = r.consumer(1, "a", 0, SubType::Shared);
    let b = r.consumer(2, "b", 0, SubType::Shared);
    r.publish_chunk("u1", 0, 3); // 0
    r.publish_chunk("u2", 0, 2); // 1
    r.publish(None); // 2
    r.publish_chunk("u1", 1, 3); // 3
    r.publish_chunk("u2", 1, 2); // 4
    r.publish_chunk("u1", 2, 3); // 5
    r.publish(None); // 6
    r.sub.flow(&a, 100);
    r.sub.flow(&b, 3);
    r.drain();
    let got = r.sink.messages();
    let to = |c: u64| -> Vec<i64> { got.iter().filter(|m| m.0 == c).map(|m| m.1).collect() };
    // u1 (0, 3, 5) to a, u2 (1, 4) to b, the plain entries round-robin in between.
    assert_eq!(to(1), vec![0, 2, 3, 5]);
    assert_eq!(to(2), vec![1, 4, 6]);
    // b has no permits left: u3's first chunk goes to a, and its next chunk too, though b has
    // permits again by then.
    r.publish_chunk("u3", 0, 2); // 7
    r.drain();
    assert_eq!(r.sink.messages(), vec![(1, 7, 0)]);
    r.sub.flow(&b, 5);
    r.publish_chunk("u3", 1, 2); // 8
    r.drain();
    assert_eq!(r.sink.messages(), vec![(1, 8, 0)]);
}

/// Shared: a chunk whose consumer has no permits waits in the replay set, and the message's
/// later chunks wait behind it, while other consumers could take them.
#[test]
fn shared_chunk_waits_for_its_consumer() {
    let r = rig(-1, BrokerConfig::default());
    let a = r.consumer(1, "a", 0, SubType::Shared);
    let b = r.consumer(2, "b", 0, SubType::Shared);
    r.sub.flow(&a, 1);
    r.publish_chunk("u", 0, 3);
    r.publish_chunk("u", 1, 3);
    r.drain();
    assert_eq!(r.sink.messages(), vec![(1, 0, 0)]);
    r.sub.flow(&b, 10);
    r.publish_chunk("u", 2, 3);
    r.publish(None);
    r.drain();
    assert_eq!(
        r.sink.messages(),
        vec![(2, 3, 0)],
        "only the plain entry goes to b"
    );
    assert_eq!(r.sub.replay_len(), 2);
    r.sub.flow(&a, 5);
    r.drain();
    assert_eq!(r.sink.messages(), vec![(1, 1, 0), (1, 2, 0)]);
}

/// Shared: when the consumer of a chunked message leaves before its last chunk, its chunks are
/// replayed from the first one to another consumer, followed by the rest of the message.
#[test]
fn shared_chunks_of_a_closed_consumer_move_whole() {
    let r = rig(-1, BrokerConfig::default());
    let a = r.consumer(1, "a", 0, SubType::Shared);
    let b = r.consumer(2, "b", 0, SubType::Shared);
    r.sub.flow(&a, 2);
    r.publish_chunk("u", 0, 3);
    r.publish_chunk("u", 1, 3);
    r.drain();
    assert_eq!(r.sink.messages(), vec![(1, 0, 0), (1, 1, 0)]);
    r.sub.remove_consumer(&a);
    r.publish_chunk("u", 2, 3);
    r.sub.flow(&b, 10);
    r.drain();
    assert_eq!(r.sink.messages(), vec![(2, 0, 0), (2, 1, 0), (2, 2, 0)]);
    // A later chunk with no first chunk delivered (an orphan) is acknowledged, not delivered.
    let e = r.publish_chunk("v", 1, 2);
    r.drain();
    assert_eq!(r.sink.messages(), vec![]);
    assert!(r.sub.cursor.is_acked(e));
}

/// Exclusive: aborting a transaction that acknowledged a message delivers it again, and
/// returns (`Go client suite TestTxn_AckChunkMessage` once hung the broker here: the abort took
/// the subscription's state lock twice). Run on a thread so that a deadlock fails the test.
#[test]
fn exclusive_abort_of_a_transactional_ack_redelivers_without_deadlock() {
    let r = Arc::new(rig(-1, BrokerConfig::default()));
    let a = r.consumer(1, "a", 0, SubType::Exclusive);
    r.sub.flow(&a, 10);
    let m = r.publish(None);
    r.drain();
    assert_eq!(r.sink.messages(), vec![(1, 0, 0)]);
    let txn = crate::transaction::TxnId::new(0, 7);
    r.sub
        .ack_individual_txn(
            &a,
            txn,
            &[crate::transaction::pending_ack::AckedId::whole(m)],
        )
        .expect("held by the transaction");
    let (tx, rx) = std::sync::mpsc::channel();
    let rr = Arc::clone(&r);
    std::thread::spawn(move || {
        let res = rr
            .sub
            .end_txn(txn, crate::transaction::TxnAction::Abort)
            .map_err(|e| e.to_string());
        let _ = tx.send(res);
    });
    let res = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("end_txn(Abort) did not return within 10 s: deadlock");
    res.expect("abort");
    assert!(!r.sub.cursor.is_acked(m));
    r.drain();
    assert_eq!(
        r.sink.messages(),
        vec![(1, 0, 0)],
        "delivered again after the abort"
    );
}

/// Shared: messages published one at a time (each read holds one entry) go to the consumers in
/// turn, as Pulsar's `getNextConsumer` moves on at every read; the round-robin chunk of
/// `dispatcherMaxRoundRobinBatchSize` applies within one read only (pulsar-lite's suite,
/// `test_shared_round_robin_distribution`, saw 20 in a row go to one consumer).
#[test]
fn shared_gives_one_message_reads_to_each_consumer_in_turn() {
    let r = rig(-1, BrokerConfig::default());
    let cs: Vec<_> = (1..=3)
        .map(|i| r.consumer(i, &format!("c{i}"), 0, SubType::Shared))
        .collect();
    for c in &cs {
        r.sub.flow(c, 100);
    }
    let mut order = Vec::new();
    for _ in 0..9 {
        let p = r.publish(None);
        r.drain();
        let got = r.sink.messages();
        assert_eq!(got.len(), 1);
        let c = cs.iter().find(|c| c.id == got[0].0).expect("a consumer");
        r.ack(c, &[p]);
        order.push(got[0].0);
    }
    assert_eq!(order, vec![1, 2, 3, 1, 2, 3, 1, 2, 3]);
}

/// Exclusive: a cumulative ack of message 4 of a 10-message batch (batch index ack: the ack set
/// keeps 5..9 unacknowledged) acknowledges everything before the batch's entry and not the entry,
/// as Pulsar's asyncMarkDelete with an ack set (the Go client suite's TestBatchIndexAck lost
/// messages 5..9 when the whole entry was acknowledged).
#[test]
fn cumulative_ack_inside_a_batch_keeps_the_rest_of_the_batch() {
    let r = rig(-1, BrokerConfig::default());
    let a = r.consumer(1, "a", 0, SubType::Exclusive);
    let first = r.publish(None);
    let batch = r.publish(None);
    r.sub.flow(&a, 10);
    r.drain();
    let unacked_5_to_9: i64 = 0b11_1110_0000;
    r.sub
        .ack_cumulative_in_batch(&a, batch, vec![unacked_5_to_9])
        .expect("ack");
    assert_eq!(r.sub.cursor.mark_delete_position(), first);
    assert!(
        !r.sub.cursor.is_acked(batch),
        "messages 5..9 of the batch are not acknowledged"
    );
    r.sub.ack_individual(&a, &[(batch, Some(vec![0]))]);
    assert!(
        r.sub.cursor.is_acked(batch),
        "acknowledged once every index is"
    );
}

/// Topic termination: a subscription's consumers hear REACHED_END_OF_TOPIC only once everything
/// is acknowledged (not while one message is outstanding), once each, and a consumer asking for
/// more of a terminated topic it has consumed hears it at its FLOW (Pulsar's
/// `checkAndApplyReachedEndOfTopicOrTopicMigration` after acks and on a read finding nothing).
#[test]
fn the_end_of_a_terminated_topic_is_told_once_everything_is_acknowledged() {
    let r = rig(-1, BrokerConfig::default());
    let p: Vec<Position> = (0..3).map(|_| r.publish(None)).collect();
    let a = r.consumer(1, "a", 0, SubType::Shared);
    let b = r.consumer(2, "b", 0, SubType::Shared);
    r.sub.flow(&a, 10);
    r.sub.flow(&b, 10);
    r.drain();
    assert_eq!(r.sink.messages().len(), 3);
    r.ack(&a, &p[..2]);
    assert!(r.sink.ends().is_empty(), "not terminated: no end");
    assert_eq!(r.ml.terminate().expect("terminate"), p[2]);
    r.sub.check_end_of_topic();
    assert!(r.sink.ends().is_empty(), "one message still unacknowledged");
    r.ack(&b, &p[2..]);
    let mut ends = r.sink.ends();
    ends.sort_unstable();
    assert_eq!(
        ends,
        vec![1, 2],
        "every consumer, once everything is acknowledged"
    );
    r.sub.check_end_of_topic();
    r.sub.flow(&a, 10);
    assert!(r.sink.ends().is_empty(), "told once");
    let c = r.consumer(3, "c", 0, SubType::Shared);
    assert!(r.sink.ends().is_empty(), "not before its first FLOW");
    r.sub.flow(&c, 10);
    assert_eq!(r.sink.ends(), vec![3]);
}

/// An Exclusive subscription's consumer is never told it is active: Pulsar sends
/// ACTIVE_CONSUMER_CHANGE to Failover consumers only (`notifyActiveConsumerChanged`); the Go
/// client logged "Consumer not found while active consumer change" for the one we sent.
#[test]
fn exclusive_consumers_hear_no_active_consumer_change() {
    let r = rig(-1, BrokerConfig::default());
    let a = r.consumer(1, "a", 0, SubType::Exclusive);
    r.sub.flow(&a, 10);
    r.publish(None);
    r.drain();
    assert_eq!(r.sink.messages(), vec![(1, 0, 0)]);
    assert!(r.sink.notices().is_empty(), "{:?}", r.sink.notices());
    let no_delay = BrokerConfig {
        active_consumer_failover_delay_time_millis: 0,
        ..BrokerConfig::default()
    };
    let f = rig(-1, no_delay);
    f.consumer(1, "a", 0, SubType::Failover);
    assert_eq!(f.sink.notices(), vec![(1, true)], "Failover's are told");
}

/// The diagnosis names what the dispatcher waits for: a moved Key_Shared hash still held by its
/// previous consumer, then its new owner without permits, then nothing once all is delivered.
#[test]
fn diagnosis_names_the_draining_hash_then_the_owner_without_permits() {
    use super::diagnosis::Blocker;
    let (r, a) = key_shared_rig();
    let slot = |k: &str| slot_of(Some(k.as_bytes()));
    let moving = key_in_half(true);
    let e0 = r.publish(Some(&moving));
    r.drain();
    let b = r.consumer(2, "b", 0, SubType::KeyShared);
    let e1 = r.publish(Some(&moving));
    r.drain();
    let d = r.sub.diagnose();
    assert!(d.waiting_for_delivery && d.messages_in_replay == 1);
    assert_eq!(
        d.blockers,
        vec![
            Blocker::NoPermits {
                consumer: "b".into()
            },
            Blocker::KeyHeldByOtherConsumer {
                hash: slot(&moving),
                message_id: e1.to_string(),
                waiting: 1,
                owner: "b".into(),
                holder: "a".into(),
                holder_message_id: e0.to_string(),
            }
        ]
    );
    r.ack(&a, &[e0]);
    r.drain();
    assert_eq!(
        r.sub.diagnose().blockers,
        vec![
            Blocker::NoPermits {
                consumer: "b".into()
            },
            Blocker::KeyOwnerCannotTake {
                hash: slot(&moving),
                message_id: e1.to_string(),
                waiting: 1,
                owner: "b".into(),
            }
        ]
    );
    r.sub.flow(&b, 10);
    r.drain();
    assert_eq!(
        r.sink.messages(),
        vec![(1, e0.entry_id, 0), (2, e1.entry_id, 0)]
    );
    let d = r.sub.diagnose();
    assert!(d.blockers.is_empty() && !d.waiting_for_delivery, "{d:?}");
    assert_eq!(d.oldest_unacked, Some(e1));
}

/// The diagnosis names a Failover change in its delay, with the new active consumer.
#[test]
fn diagnosis_names_the_failover_delay() {
    use super::diagnosis::Blocker;
    use pulsar_rs_ledger::Clock as _;
    let config = BrokerConfig {
        active_consumer_failover_delay_time_millis: 1000,
        ..BrokerConfig::default()
    };
    let r = rig(-1, config);
    let c = r.consumer(1, "c", 0, SubType::Failover);
    r.sub.flow(&c, 10);
    r.publish(None);
    r.drain();
    let until = r.clock.now_ms() + 1000;
    assert_eq!(
        r.sub.diagnose().blockers,
        vec![Blocker::FailoverDelay {
            consumer: "c".into(),
            until
        }]
    );
    r.clock.advance_ms(1000);
    r.drain();
    assert!(r.sub.diagnose().blockers.is_empty());
}
