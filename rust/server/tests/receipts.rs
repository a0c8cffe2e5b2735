//! Receipts keep SEND order: durable writes are answered from the journal flusher, refused SENDs
//! at once, and a refusal never overtakes an earlier SEND that is still being made durable.

mod support;

use pulsar_rs_proto::{commands, pb::base_command::Type};
use support::Conn;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_queue_behind_durable_writes() {
    let dir = tempfile::tempdir().unwrap();
    let server = support::start(dir.path(), |c| c.max_message_size = 4096).await;
    let mut conn = Conn::open(server.service_addr).await.unwrap();
    conn.handshake().await.unwrap();
    conn.send(&commands::producer(
        "persistent://public/default/order",
        1,
        1,
        None,
    ))
    .await
    .unwrap();
    conn.expect(Type::ProducerSuccess).await.unwrap();

    // Pipelined: every fourth SEND is over the size limit and refused without a write.
    let n = 400u64;
    let refused = |seq: u64| seq % 4 == 3;
    for seq in 0..n {
        let size = if refused(seq) { 8192 } else { 100 };
        conn.publish(1, seq, &vec![b'x'; size]).await.unwrap();
    }
    let mut answers = Vec::new();
    while answers.len() < n as usize {
        let f = conn.recv().await.expect("connection open");
        let cmd = f.command();
        if cmd.r#type == Type::SendReceipt as i32 {
            let r = cmd.send_receipt.as_ref().unwrap();
            answers.push((r.sequence_id, true));
        } else if cmd.r#type == Type::SendError as i32 {
            let e = cmd.send_error.as_ref().unwrap();
            answers.push((e.sequence_id, false));
        }
    }
    let expected: Vec<(u64, bool)> = (0..n).map(|s| (s, !refused(s))).collect();
    assert_eq!(answers, expected, "receipts out of SEND order");
    server.shutdown().await.unwrap();
}
