//! Routing and dropping of non-persistent messages, through a recording consumer sink.

use std::sync::Arc;

use parking_lot::Mutex;

use super::*;
use crate::consumer::{ConsumerEvent, ConsumerSink};
use crate::dispatch::key_shared::KeySharedMeta;
use crate::BrokerConfig;

#[derive(Default)]
struct Recorder(Mutex<Vec<u64>>);

impl ConsumerSink for Recorder {
    fn send(&self, event: ConsumerEvent) -> bool {
        if let ConsumerEvent::Message { consumer_id, .. } = event {
            self.0.lock().push(consumer_id);
        }
        true
    }
}

fn consumer(id: u64, t: SubType, sink: &Arc<Recorder>) -> Arc<Consumer> {
    Consumer::new(
        id,
        format!("c{id}"),
        0,
        t,
        String::new(),
        Arc::clone(sink) as Arc<dyn ConsumerSink>,
        Arc::new(pulsar_rs_clock::SystemClock),
    )
}

fn entry() -> Bytes {
    let md = pulsar_rs_proto::pb::MessageMetadata {
        producer_name: "p".into(),
        publish_time: 1,
        ..Default::default()
    };
    pulsar_rs_proto::build_stored_entry(&md, b"x")
}

#[test]
fn no_permits_means_dropped_and_counted() {
    let t = NonPersistentTopic::new(
        TopicName::parse("non-persistent://a/b/t").unwrap(),
        Arc::new(pulsar_rs_clock::SystemClock),
    );
    let sink = Arc::new(Recorder::default());
    let c = consumer(1, SubType::Exclusive, &sink);
    let sub = t
        .subscribe(
            "s",
            Arc::clone(&c),
            &KeySharedMeta::default(),
            &BrokerConfig::default(),
        )
        .unwrap();
    c.permits.add(2);
    for _ in 0..5 {
        t.publish(&entry(), 1);
    }
    assert_eq!(sink.0.lock().len(), 2);
    assert_eq!(sub.msg_drop.total(), 3);
    assert_eq!(t.msg_drop.total(), 3);
    assert_eq!(t.msg_in.total(), 5);
}

#[test]
fn shared_round_robins_over_consumers_with_permits() {
    let t = NonPersistentTopic::new(
        TopicName::parse("non-persistent://a/b/t").unwrap(),
        Arc::new(pulsar_rs_clock::SystemClock),
    );
    let sink = Arc::new(Recorder::default());
    let a = consumer(1, SubType::Shared, &sink);
    let b = consumer(2, SubType::Shared, &sink);
    t.subscribe(
        "s",
        Arc::clone(&a),
        &KeySharedMeta::default(),
        &BrokerConfig::default(),
    )
    .unwrap();
    t.subscribe(
        "s",
        Arc::clone(&b),
        &KeySharedMeta::default(),
        &BrokerConfig::default(),
    )
    .unwrap();
    a.permits.add(10);
    b.permits.add(1);
    for _ in 0..4 {
        t.publish(&entry(), 1);
    }
    assert_eq!(*sink.0.lock(), vec![1, 2, 1, 1]);
    assert!(t
        .subscribe(
            "s",
            consumer(3, SubType::Exclusive, &sink),
            &KeySharedMeta::default(),
            &BrokerConfig::default()
        )
        .is_err());
}

#[test]
fn exclusive_refuses_a_second_consumer_and_empty_subscriptions_go() {
    let t = NonPersistentTopic::new(
        TopicName::parse("non-persistent://a/b/t").unwrap(),
        Arc::new(pulsar_rs_clock::SystemClock),
    );
    let sink = Arc::new(Recorder::default());
    let a = consumer(1, SubType::Exclusive, &sink);
    let sub = t
        .subscribe(
            "s",
            Arc::clone(&a),
            &KeySharedMeta::default(),
            &BrokerConfig::default(),
        )
        .unwrap();
    assert!(t
        .subscribe(
            "s",
            consumer(2, SubType::Exclusive, &sink),
            &KeySharedMeta::default(),
            &BrokerConfig::default()
        )
        .is_err());
    t.unsubscribe_consumer(&sub, &a);
    assert!(t.subscriptions().is_empty());
}

fn keyed(key: &str) -> Bytes {
    let md = pulsar_rs_proto::pb::MessageMetadata {
        producer_name: "p".into(),
        publish_time: 1,
        partition_key: Some(key.into()),
        ..Default::default()
    };
    pulsar_rs_proto::build_stored_entry(&md, b"x")
}

/// The persistent dispatchers' routing, reused: Shared serves the best priority level first,
/// Key_Shared sends a key to the owner of its slot, Failover picks by partition index within
/// the top-priority group.
#[test]
fn routing_is_the_persistent_dispatchers() {
    let t = NonPersistentTopic::new(
        TopicName::parse("non-persistent://a/b/t").unwrap(),
        Arc::new(pulsar_rs_clock::SystemClock),
    );
    let sink = Arc::new(Recorder::default());
    let low = Consumer::new(
        1,
        "a-low".into(),
        1,
        SubType::Shared,
        String::new(),
        Arc::clone(&sink) as Arc<dyn ConsumerSink>,
        Arc::new(pulsar_rs_clock::SystemClock),
    );
    let high = consumer(2, SubType::Shared, &sink);
    t.subscribe(
        "s",
        Arc::clone(&low),
        &KeySharedMeta::default(),
        &BrokerConfig::default(),
    )
    .unwrap();
    t.subscribe(
        "s",
        Arc::clone(&high),
        &KeySharedMeta::default(),
        &BrokerConfig::default(),
    )
    .unwrap();
    low.permits.add(10);
    high.permits.add(2);
    for _ in 0..4 {
        t.publish(&entry(), 1);
    }
    assert_eq!(*sink.0.lock(), vec![2, 2, 1, 1]);

    let sink = Arc::new(Recorder::default());
    let a = consumer(11, SubType::KeyShared, &sink);
    let b = consumer(12, SubType::KeyShared, &sink);
    let sub = t
        .subscribe(
            "k",
            Arc::clone(&a),
            &KeySharedMeta::default(),
            &BrokerConfig::default(),
        )
        .unwrap();
    t.subscribe(
        "k",
        Arc::clone(&b),
        &KeySharedMeta::default(),
        &BrokerConfig::default(),
    )
    .unwrap();
    a.permits.add(100);
    b.permits.add(100);
    let mut selector = crate::dispatch::key_shared::Selector::new(
        crate::dispatch::key_shared::KeySharedMode::AutoSplit,
        true,
        crate::config::BrokerConfig::default()
            .subscription_key_shared_consistent_hashing_replica_points,
    );
    let meta = crate::dispatch::key_shared::KeySharedMeta::default();
    selector.add(a.handle, &a.name, &meta).unwrap();
    selector.add(b.handle, &b.name, &meta).unwrap();
    let keys: Vec<String> = (0..20).map(|i| format!("key-{i}")).collect();
    let expected: Vec<u64> = keys
        .iter()
        .map(|k| {
            let owner = selector.owner(selector.slot_of(Some(k.as_bytes())));
            if owner == Some(a.handle) {
                11
            } else {
                12
            }
        })
        .collect();
    assert!(expected.contains(&11) && expected.contains(&12));
    for k in &keys {
        t.publish(&keyed(k), 1);
    }
    assert_eq!(*sink.0.lock(), expected);
    assert_eq!(sub.msg_drop.total(), 0);

    let t = NonPersistentTopic::new(
        TopicName::parse("non-persistent://a/b/t-partition-3").unwrap(),
        Arc::new(pulsar_rs_clock::SystemClock),
    );
    let sink = Arc::new(Recorder::default());
    let names = ["f-c", "f-a", "f-b"];
    let consumers: Vec<Arc<Consumer>> = names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            Consumer::new(
                21 + i as u64,
                (*n).into(),
                0,
                SubType::Failover,
                String::new(),
                Arc::clone(&sink) as Arc<dyn ConsumerSink>,
                Arc::new(pulsar_rs_clock::SystemClock),
            )
        })
        .collect();
    for c in &consumers {
        t.subscribe(
            "f",
            Arc::clone(c),
            &KeySharedMeta::default(),
            &BrokerConfig::default(),
        )
        .unwrap();
        c.permits.add(10);
    }
    t.publish(&entry(), 1);
    // Sorted f-a, f-b, f-c; partition 3 % 3 = 0 → f-a (id 22).
    assert_eq!(*sink.0.lock(), vec![22]);
}

#[test]
fn replication_taps_see_every_message_and_only_their_own_tap_is_removed() {
    let t = NonPersistentTopic::new(
        TopicName::parse("non-persistent://a/b/t").unwrap(),
        Arc::new(pulsar_rs_clock::SystemClock),
    );
    let seen = Arc::new(Mutex::new(Vec::new()));
    let tap_of = |remote: &'static str| -> ReplicationTap {
        let seen = Arc::clone(&seen);
        Arc::new(move |stored: &Bytes, n: u32| seen.lock().push((remote, stored.len(), n)))
    };
    let (west, east) = (tap_of("west"), tap_of("east"));
    t.set_replication_tap("west", Arc::clone(&west));
    t.set_replication_tap("east", Arc::clone(&east));
    assert_eq!(t.replication_remotes(), ["east", "west"]);
    // No subscription: the message is dropped for consumers, but the taps still get it.
    t.publish(&entry(), 3);
    let len = entry().len();
    assert_eq!(*seen.lock(), [("west", len, 3), ("east", len, 3)]);
    // A newer tap towards west replaced the first: removing the first leaves it.
    let newer = tap_of("west");
    t.set_replication_tap("west", Arc::clone(&newer));
    t.remove_replication_tap("west", &west);
    assert_eq!(t.replication_remotes(), ["east", "west"]);
    t.remove_replication_tap("west", &newer);
    t.remove_replication_tap("east", &east);
    assert!(t.replication_remotes().is_empty());
    seen.lock().clear();
    t.publish(&entry(), 1);
    assert!(seen.lock().is_empty());
}
