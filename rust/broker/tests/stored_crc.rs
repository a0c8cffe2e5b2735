//! A stored entry damaged on disk is still caught now that dispatch no longer recomputes CRC32C.
//!
//! The dispatcher reads each entry's metadata without verifying its checksum (verified once at
//! publish, then carried inside the entry to the consumer). What guards the disk is the
//! journal's record checksum, verified on every cache-miss read. This flips one byte of one
//! entry's payload in the journal segment of a running storage (after recovery, so only the
//! read can notice), with the entry cache off, and drives a real subscription: the damaged
//! entry is reported as `CorruptEntry` and never delivered, nor anything after it.

use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;
use pulsar_rs_broker::{
    BrokerConfig, BrokerError, Consumer, ConsumerEvent, ConsumerSink, SubType, Subscription,
};
use pulsar_rs_ledger::{LedgerConfig, LedgerError, Position, Storage, StorageConfig};
use pulsar_rs_proto::MessageMetadata;

/// Collects delivered entries.
#[derive(Default)]
struct Sink {
    delivered: Mutex<Vec<(Position, Bytes)>>,
}

impl ConsumerSink for Sink {
    fn send(&self, event: ConsumerEvent) -> bool {
        if let ConsumerEvent::Message { position, data, .. } = event {
            self.delivered.lock().push((position, data));
        }
        true
    }
}

fn payload(i: usize) -> Vec<u8> {
    format!("entry-{i:04}-{}", "x".repeat(200)).into_bytes()
}

#[test]
fn a_stored_entry_damaged_on_disk_is_reported_not_delivered() {
    let dir = tempfile::tempdir().unwrap();
    let storage = Storage::open(
        dir.path(),
        StorageConfig {
            // Durable appends: each entry is in the segment file when its add returns.
            journal_sync_data: true,
            cache_size_bytes: 0,
            ..StorageConfig::default()
        },
    )
    .unwrap();
    let ml = storage
        .open_ledger("crc-topic", LedgerConfig::default())
        .unwrap();
    for i in 0..10 {
        let md = MessageMetadata {
            producer_name: "p".into(),
            sequence_id: i as u64,
            publish_time: 1,
            ..Default::default()
        };
        let stored = pulsar_rs_proto::build_stored_entry(&md, &payload(i));
        ml.add_entry_blocking(stored).unwrap();
    }

    // Flip one payload byte of entry 5 in the segment, behind the running storage's back.
    let seg = std::fs::read_dir(dir.path().join("journal"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "log"))
        .expect("a journal segment");
    let mut raw = std::fs::read(&seg).unwrap();
    let marker = b"entry-0005-";
    let at = raw
        .windows(marker.len())
        .position(|w| w == marker)
        .expect("entry 5 in the segment")
        + marker.len()
        + 7;
    raw[at] ^= 0x01;
    std::fs::write(&seg, &raw).unwrap();

    let config = Arc::new(BrokerConfig::default());
    let cursor = ml.open_non_durable_cursor("s", Position::EARLIEST);
    let sub = Subscription::new(
        "s",
        "persistent://public/default/crc-topic",
        -1,
        cursor,
        false,
        config,
    );
    let sink = Arc::new(Sink::default());
    let c = Consumer::new(
        0,
        "c".into(),
        0,
        SubType::Exclusive,
        "s".into(),
        Arc::clone(&sink) as Arc<dyn ConsumerSink>,
        Arc::new(pulsar_rs_clock::SystemClock),
    );
    sub.add_consumer(Arc::clone(&c), None).unwrap();
    sub.flow(&c, 1000);

    let mut error = None;
    for _ in 0..20 {
        match sub.dispatch_once() {
            Ok(out) if out.entries == 0 => break,
            Ok(_) => {}
            Err(e) => {
                error = Some(e);
                break;
            }
        }
    }
    let delivered = sink.delivered.lock().clone();
    for (p, data) in &delivered {
        let (md, body) = pulsar_rs_proto::parse_stored_entry(data)
            .unwrap_or_else(|e| panic!("entry {p} delivered damaged: {e}"));
        assert_eq!(&body[..], &payload(md.sequence_id as usize)[..]);
    }
    // The read that meets the damage fails as a whole (the entries of that read before it may
    // or may not have gone out in an earlier read): only intact entries before it, in order.
    let ids: Vec<i64> = delivered.iter().map(|(p, _)| p.entry_id).collect();
    assert_eq!(ids, (0..ids.len() as i64).collect::<Vec<_>>());
    assert!(
        ids.len() <= 5,
        "nothing at or past the damaged entry: {ids:?}"
    );
    assert!(
        matches!(
            error,
            Some(BrokerError::Ledger(LedgerError::CorruptEntry {
                entry_id: 5,
                ..
            }))
        ),
        "the damaged entry is reported: {error:?}"
    );
}
