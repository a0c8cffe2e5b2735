//! The seed corpus: real frames as Pulsar's clients send them (CONNECT, LOOKUP, PRODUCER,
//! SUBSCRIBE, FLOW, ACK, SEND with and without checksum, batched and compressed with each
//! codec), built with the same encoders the broker's tests check against the official clients.

use bytes::{BufMut, BytesMut};
use prost::Message;
use pulsar_rs_proto::{commands, compression, pb};

/// A batch payload of `n` small messages with keys, uncompressed.
fn batch(n: i32) -> Vec<u8> {
    let mut out = BytesMut::new();
    for i in 0..n {
        let body = format!("message-{i}");
        let smm = pb::SingleMessageMetadata {
            payload_size: i32::try_from(body.len()).unwrap_or(0),
            partition_key: Some(format!("key-{}", i % 3)),
            properties: vec![pb::KeyValue {
                key: "p".into(),
                value: i.to_string(),
            }],
            ..Default::default()
        };
        out.put_u32(u32::try_from(smm.encoded_len()).unwrap_or(0));
        out.extend_from_slice(&smm.encode_to_vec());
        out.extend_from_slice(body.as_bytes());
    }
    out.to_vec()
}

fn metadata(codec: i32, batched: Option<i32>, uncompressed: usize) -> pb::MessageMetadata {
    pb::MessageMetadata {
        producer_name: "standalone-0-1".into(),
        sequence_id: 7,
        publish_time: 1_700_000_000_000,
        compression: (codec != 0).then_some(codec),
        uncompressed_size: Some(u32::try_from(uncompressed).unwrap_or(0)),
        num_messages_in_batch: batched,
        partition_key: batched.is_none().then(|| "k".to_owned()),
        ..Default::default()
    }
}

/// Named seeds for the `frames` target (several frames per seed, as one socket read holds).
pub fn frames() -> Vec<(String, Vec<u8>)> {
    let topic = "persistent://public/default/fuzz";
    let mut handshake = BytesMut::new();
    for cmd in [
        commands::connect("2.11.0", 20),
        commands::partitioned_metadata_request(topic, 1),
        commands::lookup(topic, 2),
        commands::producer(topic, 1, 3, None),
        commands::subscribe(
            topic,
            "s",
            pb::command_subscribe::SubType::Shared,
            1,
            4,
            "c",
        ),
        commands::flow(1, 1000),
        commands::ack(
            1,
            pb::command_ack::AckType::Individual,
            vec![commands::message_id(3, 4)],
        ),
        commands::ping(),
    ] {
        pulsar_rs_proto::encode_simple(&cmd, &mut handshake);
    }
    let mut seeds = vec![("handshake".to_owned(), handshake.to_vec())];
    let raw = batch(5);
    for codec in 0..5 {
        let body = compression::compress(codec, &raw)
            .map(|b| b.to_vec())
            .unwrap_or_default();
        let md = metadata(codec, Some(5), raw.len());
        let mut out = BytesMut::new();
        pulsar_rs_proto::encode_payload_command(&commands::send(1, 7, 5), &md, &body, &mut out);
        seeds.push((format!("send-batch-codec{codec}"), out.to_vec()));
        let mut old = BytesMut::new();
        pulsar_rs_proto::encode_payload_command_without_checksum(
            &commands::send(1, 8, 5),
            &md,
            &body,
            &mut old,
        );
        seeds.push((format!("send-batch-codec{codec}-nocrc"), old.to_vec()));
    }
    let mut single = BytesMut::new();
    let md = metadata(0, None, 5);
    pulsar_rs_proto::encode_payload_command_without_checksum(
        &commands::send(1, 9, 1),
        &md,
        b"hello",
        &mut single,
    );
    seeds.push(("send-single-nocrc".to_owned(), single.to_vec()));
    seeds
}

/// Named seeds for the `stored_entry` target: the stored form of each SEND above.
pub fn stored_entries() -> Vec<(String, Vec<u8>)> {
    let raw = batch(5);
    let mut seeds = Vec::new();
    for codec in 0..5 {
        let body = compression::compress(codec, &raw)
            .map(|b| b.to_vec())
            .unwrap_or_default();
        let entry =
            pulsar_rs_proto::build_stored_entry(&metadata(codec, Some(5), raw.len()), &body);
        seeds.push((format!("entry-batch-codec{codec}"), entry.to_vec()));
    }
    let entry = pulsar_rs_proto::build_stored_entry(&metadata(0, None, 5), b"hello");
    seeds.push(("entry-single".to_owned(), entry.to_vec()));
    seeds
}

/// Named seeds for the `decompress` target: `[codec][u32 size][compressed]`.
pub fn compressed() -> Vec<(String, Vec<u8>)> {
    let raw = batch(20);
    (0..5)
        .map(|codec| {
            let mut seed = vec![u8::try_from(codec).unwrap_or(0)];
            seed.extend_from_slice(&u32::try_from(raw.len()).unwrap_or(0).to_be_bytes());
            let body = compression::compress(codec, &raw).unwrap_or_default();
            seed.extend_from_slice(&body);
            (format!("codec{codec}"), seed)
        })
        .collect()
}
