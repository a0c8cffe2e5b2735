//! Nothing blocks a runtime thread (issue 14.1) and memory per connection is bounded (14.2).
//!
//! * A slow storage operation on one topic (a delay injected through the storage seam,
//!   [`Vfs`]) delays neither publishes on another topic nor the creation of a third, even on a
//!   runtime with a single worker thread.
//! * A consumer that grants a million permits and never reads its socket leaves the broker's
//!   memory bounded, while another consumer on the same topic keeps receiving.

mod support;

use std::io;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use pulsar_rs_broker::BrokerConfig;
use pulsar_rs_ledger::vfs::{DirLock, RealFs, VFile, Vfs};
use pulsar_rs_proto::{commands, pb, pb::base_command::Type};
use pulsar_rs_server::Server;
use support::Conn;

/// The real file system, with every operation on a path containing all of `marker` delayed.
struct SlowFs {
    marker: &'static [&'static str],
    delay: Duration,
}

impl SlowFs {
    fn pause(&self, path: &Path) {
        let p = path.to_string_lossy();
        if self.marker.iter().all(|m| p.contains(m)) {
            std::thread::sleep(self.delay);
        }
    }
}

impl Vfs for SlowFs {
    fn create_dir(&self, path: &Path) -> io::Result<bool> {
        self.pause(path);
        RealFs.create_dir(path)
    }
    fn dir_exists(&self, path: &Path) -> bool {
        RealFs.dir_exists(path)
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.pause(dir);
        RealFs.list(dir)
    }
    fn open(&self, path: &Path, create: bool) -> io::Result<Arc<dyn VFile>> {
        self.pause(path);
        RealFs.open(path, create)
    }
    fn open_read(&self, path: &Path) -> io::Result<Arc<dyn VFile>> {
        self.pause(path);
        RealFs.open_read(path)
    }
    fn create(&self, path: &Path) -> io::Result<Arc<dyn VFile>> {
        self.pause(path);
        RealFs.create(path)
    }
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.pause(path);
        RealFs.read(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.pause(to);
        RealFs.rename(from, to)
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.pause(path);
        RealFs.remove_file(path)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.pause(dir);
        RealFs.sync_dir(dir)
    }
    fn lock(&self, path: &Path) -> io::Result<Option<DirLock>> {
        RealFs.lock(path)
    }
}

fn config() -> BrokerConfig {
    BrokerConfig {
        broker_service_port: 0,
        web_service_port: 0,
        ..BrokerConfig::default()
    }
}

async fn producer(conn: &mut Conn, topic: &str, id: u64) -> Duration {
    let t0 = pulsar_rs_clock::monotonic();
    conn.send(&commands::producer(topic, id, id, None))
        .await
        .unwrap();
    conn.expect(Type::ProducerSuccess)
        .await
        .expect("PRODUCER_SUCCESS");
    t0.elapsed()
}

#[test]
fn slow_storage_on_one_topic_delays_no_other_topic() {
    // One worker thread: any blocking call on it stops every connection.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let delay = Duration::from_millis(1500);
    rt.block_on(async move {
        // Only the slow topic's schema record is slow: loading that topic reads it.
        let fs = Arc::new(SlowFs {
            marker: &["schemas", "slowtopic"],
            delay,
        });
        let seams = pulsar_rs_server::Seams {
            fs: Some(fs),
            clock: None,
        };
        let server = Server::start_with(config(), dir.path().to_path_buf(), seams)
            .await
            .expect("server starts");
        let addr = server.service_addr;

        let mut fast = Conn::open(addr).await.unwrap();
        fast.handshake().await.unwrap();
        producer(&mut fast, "persistent://public/default/fast", 1).await;
        // Publishes one at a time on the loaded topic; returns the longest wait for a receipt.
        let publisher = tokio::spawn(async move {
            let (mut worst, mut seq) = (Duration::ZERO, 0u64);
            let end = pulsar_rs_clock::monotonic() + delay + Duration::from_millis(800);
            while pulsar_rs_clock::monotonic() < end {
                let t0 = pulsar_rs_clock::monotonic();
                fast.publish(1, seq, b"m").await.unwrap();
                fast.expect(Type::SendReceipt).await.expect("receipt");
                worst = worst.max(t0.elapsed());
                seq += 1;
            }
            (worst, seq)
        });
        tokio::time::sleep(Duration::from_millis(200)).await;

        let mut slow = Conn::open(addr).await.unwrap();
        slow.handshake().await.unwrap();
        let slow_load = tokio::spawn(async move {
            producer(&mut slow, "persistent://public/default/slowtopic", 1).await
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        // A third topic, loaded while the slow one is loading.
        let mut other = Conn::open(addr).await.unwrap();
        other.handshake().await.unwrap();
        let other_load = producer(&mut other, "persistent://public/default/other", 1).await;

        let slow_load = slow_load.await.unwrap();
        let (worst, published) = publisher.await.unwrap();
        // The delay really happened (else the test proves nothing).
        assert!(slow_load >= delay, "the slow load took {slow_load:?}");
        assert!(
            worst < Duration::from_millis(500),
            "a publish on another topic waited {worst:?} behind the slow load"
        );
        assert!(
            other_load < Duration::from_millis(700),
            "loading another topic waited {other_load:?} behind the slow load"
        );
        assert!(published > 10, "only {published} publishes");
        server.shutdown().await.unwrap();
    });
}

/// Resident set size of this process (the broker runs in it), in KiB.
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

async fn subscribe(conn: &mut Conn, topic: &str, sub: &str, id: u64) {
    let mut cmd = commands::subscribe(
        topic,
        sub,
        pb::command_subscribe::SubType::Exclusive,
        id,
        id,
        sub,
    );
    if let Some(body) = cmd.subscribe.as_mut() {
        body.initial_position = Some(pb::command_subscribe::InitialPosition::Earliest as i32);
    }
    conn.send(&cmd).await.unwrap();
    conn.expect(Type::Success).await.expect("SUCCESS");
}

#[test]
fn a_consumer_that_never_reads_leaves_memory_bounded() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    rt.block_on(async move {
        let server = support::start(dir.path(), |c| {
            c.journal_sync_data = false;
            // A small entry cache, so what stays in memory is what the connections hold.
            c.managed_ledger_cache_size_mb = 8;
        })
        .await;
        let addr = server.service_addr;
        let topic = "persistent://public/default/stuck";
        // A backlog of 400 MiB: 6 400 entries of 64 KiB.
        const ENTRIES: u64 = 6400;
        let payload = vec![b'x'; 64 << 10];
        let mut p = Conn::open(addr).await.unwrap();
        p.handshake().await.unwrap();
        producer(&mut p, topic, 1).await;
        for seq in 0..ENTRIES {
            p.publish(1, seq, &payload).await.unwrap();
            if (seq + 1).is_multiple_of(64) {
                // Keep a bounded number of SENDs in flight.
                for _ in 0..64 {
                    p.expect(Type::SendReceipt).await.expect("receipt");
                }
            }
        }
        let rss_before = rss_kib();

        // The stuck consumer: a million permits, and its socket is never read.
        let mut stuck = Conn::open(addr).await.unwrap();
        stuck.handshake().await.unwrap();
        subscribe(&mut stuck, topic, "stuck", 1).await;
        stuck.send(&commands::flow(1, 1_000_000)).await.unwrap();

        // Another consumer on its own subscription keeps flowing through the whole backlog.
        let mut live = Conn::open(addr).await.unwrap();
        live.handshake().await.unwrap();
        subscribe(&mut live, topic, "live", 1).await;
        live.send(&commands::flow(1, 1000)).await.unwrap();
        let t0 = pulsar_rs_clock::monotonic();
        let mut got = 0u64;
        let mut peak = rss_before;
        while got < ENTRIES {
            let f = tokio::time::timeout(Duration::from_secs(30), live.recv())
                .await
                .expect("the live consumer starved")
                .expect("connection open");
            if f.command().r#type == Type::Message as i32 {
                got += 1;
                if got.is_multiple_of(500) {
                    live.send(&commands::flow(1, 500)).await.unwrap();
                    peak = peak.max(rss_kib());
                }
            }
        }
        let took = t0.elapsed();
        tokio::time::sleep(Duration::from_millis(300)).await;
        peak = peak.max(rss_kib());
        let grown_mib = peak.saturating_sub(rss_before) / 1024;
        eprintln!("live consumer: {ENTRIES} entries in {took:?}; RSS grew {grown_mib} MiB");
        // Unbounded, the stuck connection would hold most of the 400 MiB backlog.
        assert!(
            grown_mib < 120,
            "broker memory grew by {grown_mib} MiB for a consumer that never reads"
        );
        drop(stuck);
        server.shutdown().await.unwrap();
    });
}

#[test]
fn a_large_frame_before_connect_is_refused_at_once() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    rt.block_on(async move {
        let server = support::start(dir.path(), |_| {}).await;
        let mut c = Conn::open(server.service_addr).await.unwrap();
        // A 4 MiB frame announced by a peer that has not sent CONNECT: the broker must not
        // wait for (and buffer) it, but close the connection.
        c.send_raw(&(4u32 << 20).to_be_bytes()).await.unwrap();
        let closed = tokio::time::timeout(Duration::from_secs(5), c.recv()).await;
        assert!(
            matches!(closed, Ok(None)),
            "the connection stayed open, waiting for a 4 MiB frame"
        );
        server.shutdown().await.unwrap();
    });
}
