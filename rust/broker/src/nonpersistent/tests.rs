//! Routing and dropping of non-persistent messages, through a recording consumer sink.

use std::sync::Arc;

use parking_lot::Mutex;

use super::*;
use crate::consumer::{ConsumerEvent, ConsumerSink};

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
    let t = NonPersistentTopic::new(TopicName::parse("non-persistent://a/b/t").unwrap());
    let sink = Arc::new(Recorder::default());
    let c = consumer(1, SubType::Exclusive, &sink);
    let sub = t.subscribe("s", Arc::clone(&c)).unwrap();
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
    let t = NonPersistentTopic::new(TopicName::parse("non-persistent://a/b/t").unwrap());
    let sink = Arc::new(Recorder::default());
    let a = consumer(1, SubType::Shared, &sink);
    let b = consumer(2, SubType::Shared, &sink);
    t.subscribe("s", Arc::clone(&a)).unwrap();
    t.subscribe("s", Arc::clone(&b)).unwrap();
    a.permits.add(10);
    b.permits.add(1);
    for _ in 0..4 {
        t.publish(&entry(), 1);
    }
    assert_eq!(*sink.0.lock(), vec![1, 2, 1, 1]);
    assert!(t
        .subscribe("s", consumer(3, SubType::Exclusive, &sink))
        .is_err());
}

#[test]
fn exclusive_refuses_a_second_consumer_and_empty_subscriptions_go() {
    let t = NonPersistentTopic::new(TopicName::parse("non-persistent://a/b/t").unwrap());
    let sink = Arc::new(Recorder::default());
    let a = consumer(1, SubType::Exclusive, &sink);
    let sub = t.subscribe("s", Arc::clone(&a)).unwrap();
    assert!(t
        .subscribe("s", consumer(2, SubType::Exclusive, &sink))
        .is_err());
    t.unsubscribe_consumer(&sub, &a);
    assert!(t.subscriptions().is_empty());
}
