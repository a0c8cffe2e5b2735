//! Codec micro-benchmarks: SEND encode/decode with a 100-byte payload, and
//! the per-dispatch MESSAGE header encode.

use std::hint::black_box;

use bytes::BytesMut;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use pulsar_rs_proto::{
    build_stored_entry, commands, decode_frame, encode_message_header, encode_payload_command,
    parse_stored_entry, pb, DEFAULT_MAX_FRAME_SIZE,
};

fn metadata() -> pb::MessageMetadata {
    pb::MessageMetadata {
        producer_name: "standalone-0-42".into(),
        sequence_id: 123_456,
        publish_time: 1_700_000_000_000,
        ..Default::default()
    }
}

fn bench_send(c: &mut Criterion) {
    let payload = [0xabu8; 100];
    let md = metadata();
    let cmd = commands::send(1, 123_456, 1);
    let mut group = c.benchmark_group("send_100b");
    group.throughput(Throughput::Elements(1));

    let mut out = BytesMut::with_capacity(4096);
    group.bench_function("encode", |b| {
        b.iter(|| {
            out.clear();
            encode_payload_command(
                black_box(&cmd),
                black_box(&md),
                black_box(&payload),
                &mut out,
            );
            black_box(out.len())
        })
    });

    let mut frame = BytesMut::new();
    encode_payload_command(&cmd, &md, &payload, &mut frame);
    let frame = frame.freeze();
    group.bench_function("decode", |b| {
        b.iter(|| {
            let mut buf = BytesMut::from(&frame[..]);
            black_box(decode_frame(&mut buf, DEFAULT_MAX_FRAME_SIZE).unwrap())
        })
    });

    group.bench_function("encode_decode", |b| {
        let mut buf = BytesMut::with_capacity(4096);
        b.iter(|| {
            encode_payload_command(&cmd, &md, black_box(&payload), &mut buf);
            black_box(decode_frame(&mut buf, DEFAULT_MAX_FRAME_SIZE).unwrap())
        })
    });
    group.finish();
}

fn bench_message(c: &mut Criterion) {
    let stored = build_stored_entry(&metadata(), &[0xabu8; 100]);
    let mut group = c.benchmark_group("message");
    group.throughput(Throughput::Elements(1));
    let mut out = BytesMut::with_capacity(4096);
    group.bench_function("header_encode", |b| {
        b.iter(|| {
            out.clear();
            let cmd = commands::message(7, black_box(12), black_box(34), -1, 0, None);
            encode_message_header(&cmd, stored.len(), &mut out);
            black_box(out.len())
        })
    });
    let cmd = commands::message(7, 12, 34, -1, 0, None);
    group.bench_function("header_encode_prebuilt", |b| {
        b.iter(|| {
            out.clear();
            encode_message_header(black_box(&cmd), stored.len(), &mut out);
            black_box(out.len())
        })
    });
    group.bench_function("parse_stored_entry", |b| {
        b.iter(|| black_box(parse_stored_entry(black_box(&stored)).unwrap()))
    });
    group.finish();
}

criterion_group!(benches, bench_send, bench_message);
criterion_main!(benches);
