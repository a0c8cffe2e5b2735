//! Property-based fuzzing of the server's frame handling: arbitrary bytes, and valid frames with
//! random corruption, after a handshake. The offending connection may be closed; the server
//! never panics, and a well-behaved client keeps working afterwards.

mod support;

use proptest::prelude::*;
use pulsar_rs_proto::{commands, pb::base_command::Type};
use support::{start, Conn};

fn valid_frames() -> Vec<Vec<u8>> {
    let mut frames = Vec::new();
    let cmds = [
        commands::producer("persistent://public/default/fuzz", 1, 1, None),
        commands::flow(1, 1000),
        commands::subscribe(
            "persistent://public/default/fuzz",
            "s",
            pulsar_rs_proto::pb::command_subscribe::SubType::Shared,
            1,
            2,
            "c",
        ),
        commands::lookup("persistent://public/default/fuzz", 3),
        commands::partitioned_metadata_request("fuzz", 4),
        commands::send(1, 1, 1),
        commands::close_producer_request(1, 5),
    ];
    for c in &cmds {
        let mut out = bytes::BytesMut::new();
        pulsar_rs_proto::encode_simple(c, &mut out);
        frames.push(out.to_vec());
    }
    frames
}

#[derive(Debug, Clone)]
enum Mutation {
    Flip(usize, u8),
    Truncate(usize),
    Insert(usize, Vec<u8>),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Flip(i, b)),
        any::<usize>().prop_map(Mutation::Truncate),
        (
            any::<usize>(),
            proptest::collection::vec(any::<u8>(), 1..16)
        )
            .prop_map(|(i, v)| Mutation::Insert(i, v)),
    ]
}

fn apply(mut frame: Vec<u8>, muts: &[Mutation]) -> Vec<u8> {
    for m in muts {
        let len = frame.len().max(1);
        match m {
            Mutation::Flip(i, b) => {
                let i = i % len;
                if let Some(x) = frame.get_mut(i) {
                    *x ^= b | 1;
                }
            }
            Mutation::Truncate(i) => frame.truncate(i % len),
            Mutation::Insert(i, v) => {
                let i = i % len;
                frame.splice(i..i, v.iter().copied());
            }
        }
    }
    frame
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn corrupted_frames_never_take_the_server_down(
        picks in proptest::collection::vec((0usize..7, proptest::collection::vec(mutation(), 0..4)), 1..12),
        junk in proptest::collection::vec(any::<u8>(), 0..256),
    ) {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let dir = tempfile::tempdir().unwrap();
        rt.block_on(async {
            let server = start(dir.path(), |c| c.journal_sync_data = false).await;
            let frames = valid_frames();
            let mut bad = Conn::open(server.service_addr).await.unwrap();
            bad.handshake().await.unwrap();
            for (i, muts) in &picks {
                let bytes = apply(frames[*i].clone(), muts);
                if bad.send_raw(&bytes).await.is_err() {
                    break; // closed by the server: allowed
                }
            }
            let _ = bad.send_raw(&junk).await;
            // Drain whatever the server answers until it closes or goes quiet.
            let _ = tokio::time::timeout(std::time::Duration::from_millis(200), async {
                while bad.recv().await.is_some() {}
            }).await;
            // A good client is unaffected.
            let mut good = Conn::open(server.service_addr).await.unwrap();
            prop_assert!(good.handshake().await.is_some());
            good.send(&commands::producer("persistent://public/default/fuzz-good", 9, 9, None)).await.unwrap();
            prop_assert!(good.expect(Type::ProducerSuccess).await.is_some());
            good.publish(9, 0, b"still fine").await.unwrap();
            prop_assert!(good.expect(Type::SendReceipt).await.is_some());
            server.shutdown().await.unwrap();
            Ok(())
        })?;
    }

    #[test]
    fn arbitrary_bytes_before_connect(junk in proptest::collection::vec(any::<u8>(), 0..512)) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let dir = tempfile::tempdir().unwrap();
        rt.block_on(async {
            let server = start(dir.path(), |c| c.journal_sync_data = false).await;
            let mut bad = Conn::open(server.service_addr).await.unwrap();
            let _ = bad.send_raw(&junk).await;
            let _ = tokio::time::timeout(std::time::Duration::from_millis(100), async {
                while bad.recv().await.is_some() {}
            }).await;
            let mut good = Conn::open(server.service_addr).await.unwrap();
            prop_assert!(good.handshake().await.is_some());
            server.shutdown().await.unwrap();
            Ok(())
        })?;
    }
}
