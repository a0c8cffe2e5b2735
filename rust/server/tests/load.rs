//! Load: 1 000 concurrent connections and 10 000 producers over 1 000 topics, publishing for a
//! while; afterwards no connection task or socket is left behind and memory is
//! bounded. (`PULSAR_RS_LOAD_SECS` sets the publishing time: 15 s by default, CI's short form;
//! the figure, 60 s, and longer soaks come from `benches/long_suites.sh`, 300 s.)

mod support;

use std::time::Duration;

use pulsar_rs_proto::{commands, pb::base_command::Type};
use support::{start, Conn};

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .map(|d| d.count())
        .unwrap_or(0)
}

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

#[test]
fn thousand_connections_ten_thousand_producers_leave_nothing_behind() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let secs: u64 = std::env::var("PULSAR_RS_LOAD_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        // 15 s: CI's short form (enough for every producer to publish many times and the leak
        // checks below to mean something); `benches/long_suites.sh` soaks for 300.
        .unwrap_or(15);
    rt.block_on(async move {
        let server = start(dir.path(), |c| c.journal_sync_data = false).await;
        let addr = server.service_addr;
        let metrics = tokio::runtime::Handle::current().metrics();
        let tasks_before = metrics.num_alive_tasks();
        let fds_before = open_fds();
        let rss_before = rss_kib();

        const CONNS: usize = 1000;
        const PRODUCERS_PER_CONN: u64 = 10;
        const TOPICS: usize = 1000;
        let deadline = pulsar_rs_clock::monotonic() + Duration::from_secs(secs);
        let mut clients = Vec::with_capacity(CONNS);
        for c in 0..CONNS {
            clients.push(tokio::spawn(async move {
                let mut conn = Conn::open(addr).await.expect("connect");
                conn.handshake().await.expect("CONNECTED");
                for p in 0..PRODUCERS_PER_CONN {
                    let topic = format!("persistent://public/default/load-{}", (c * 7 + p as usize) % TOPICS);
                    conn.send(&commands::producer(&topic, p, p, None)).await.unwrap();
                    conn.expect(Type::ProducerSuccess).await.expect("PRODUCER_SUCCESS");
                }
                let mut receipts = 0u64;
                let mut seq = 0u64;
                while pulsar_rs_clock::monotonic() < deadline {
                    for p in 0..PRODUCERS_PER_CONN {
                        conn.publish(p, seq, b"load test payload").await.unwrap();
                        conn.expect(Type::SendReceipt).await.expect("SEND_RECEIPT");
                        receipts += 1;
                    }
                    seq += 1;
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
                receipts
            }));
        }
        let mut total = 0;
        for c in clients {
            total += c.await.unwrap();
        }
        let rss_peak = rss_kib();
        assert!(total >= (CONNS as u64) * PRODUCERS_PER_CONN, "only {total} receipts");
        // All clients are gone (their sockets closed with their tasks): the server must settle.
        let settle = pulsar_rs_clock::monotonic() + Duration::from_secs(20);
        loop {
            let alive = metrics.num_alive_tasks();
            let fds = open_fds();
            if (alive <= tasks_before + 2 && fds <= fds_before + 8) || pulsar_rs_clock::monotonic() > settle {
                assert!(alive <= tasks_before + 2, "task leak: {tasks_before} tasks before, {alive} after");
                assert!(fds <= fds_before + 8, "descriptor leak: {fds_before} fds before, {fds} after");
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let rss_after = rss_kib();
        eprintln!(
            "load: {total} receipts in {secs}s; RSS {rss_before} KiB before, {rss_peak} KiB loaded, {rss_after} KiB after"
        );
        assert!(rss_peak < rss_before + 1_500_000, "memory grew by {} KiB", rss_peak - rss_before);
        server.shutdown().await.unwrap();
    });
}
