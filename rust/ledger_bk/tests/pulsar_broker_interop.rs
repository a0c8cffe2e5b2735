//! An Apache Pulsar 4.0.8 broker on the same ZooKeeper and bookies as the seam's managed ledger:
//! it serves a topic pulsar-rs wrote (taking it over, which fences our writer), and pulsar-rs reads
//! a topic it wrote. Skipped (with a message) without the Pulsar distribution or a JDK.

#[path = "../../bookkeeper/tests/common/mod.rs"]
mod common;

use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use common::{skip_unless_ready, Cluster, Proc, SERIAL};
use pulsar_rs_ledger::seam::{LedgerStorage, VersionedStore};
use pulsar_rs_ledger::{LedgerError, Position, SystemClock};
use pulsar_rs_ledger_bk::BkSettings;
use pulsar_rs_ledger_testkit::{SeamLedgerConfig, SeamManagedLedger};

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

async fn open(cluster: &Cluster, name: &str) -> Arc<SeamManagedLedger> {
    let settings = BkSettings::new(&format!("zk:{}", cluster.zk_servers()));
    let (ledgers, store) = pulsar_rs_ledger_bk::connect(&settings).await.unwrap();
    SeamManagedLedger::open(
        name,
        ledgers as Arc<dyn LedgerStorage>,
        store as Arc<dyn VersionedStore>,
        Arc::new(SystemClock),
        SeamLedgerConfig::default(),
    )
    .await
    .unwrap()
}

/// A Pulsar message as a broker stores it: `[0x0e01][crc32c][size][MessageMetadata][payload]`.
fn message(i: u64) -> Bytes {
    let md = pulsar_rs_proto::MessageMetadata {
        producer_name: "pulsar-rs".into(),
        sequence_id: i,
        publish_time: 1_700_000_000_000 + i,
        ..Default::default()
    };
    pulsar_rs_proto::build_stored_entry(&md, format!("rust-msg-{i}").as_bytes())
}

fn pulsar_cmd(cluster: &Cluster, args: &[&str]) -> Command {
    let mut c = Command::new(cluster.home.join("bin/pulsar"));
    c.args(args)
        .env(
            "PULSAR_MEM",
            "-Xms64m -Xmx256m -XX:MaxDirectMemorySize=256m",
        )
        .env("PULSAR_LOG_DIR", cluster.dir.path().join("pulsar-logs"));
    c
}

/// Runs `bin/pulsar-client` against `url`; its stdout.
fn pulsar_client(cluster: &Cluster, url: &str, args: &[&str]) -> String {
    let out = Command::new(cluster.home.join("bin/pulsar-client"))
        .args(["--url", url])
        .args(args)
        .env("PULSAR_MEM", "-Xmx128m")
        .env("PULSAR_LOG_DIR", cluster.dir.path().join("pulsar-logs"))
        .stderr(Stdio::null())
        .output()
        .expect("run pulsar-client");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "pulsar-client {args:?} failed: {stdout}"
    );
    stdout
}

/// Initialises the cluster's metadata on the existing BookKeeper and starts a broker; returns
/// it with its service URL.
fn start_broker(cluster: &Cluster) -> (Proc, String) {
    let (bp, wp) = (free_port(), free_port());
    let zk = format!("zk:{}", cluster.zk_servers());
    let bk_uri = cluster.uri();
    let init = pulsar_cmd(
        cluster,
        &[
            "initialize-cluster-metadata",
            "-c",
            "test",
            "-md",
            &zk,
            "-cms",
            &zk,
            "-uw",
            &format!("http://127.0.0.1:{wp}"),
            "-ub",
            &format!("pulsar://127.0.0.1:{bp}"),
            "--existing-bk-metadata-service-uri",
            &bk_uri,
        ],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .status()
    .expect("initialize-cluster-metadata");
    assert!(init.success(), "initialize-cluster-metadata failed");
    let shipped = std::fs::read_to_string(cluster.home.join("conf/broker.conf")).unwrap();
    let conf = cluster.dir.path().join("broker.conf");
    // Later keys win when Java loads the properties.
    std::fs::write(
        &conf,
        format!(
            "{shipped}\nmetadataStoreUrl={zk}\nconfigurationMetadataStoreUrl={zk}\nclusterName=test\n\
             brokerServicePort={bp}\nwebServicePort={wp}\nadvertisedAddress=127.0.0.1\n\
             bookkeeperMetadataServiceUri={bk_uri}\nmanagedLedgerDefaultEnsembleSize=2\n\
             managedLedgerDefaultWriteQuorum=2\nmanagedLedgerDefaultAckQuorum=2\n\
             functionsWorkerEnabled=false\n"
        ),
    )
    .unwrap();
    let log = std::fs::File::create(cluster.dir.path().join("broker.log")).unwrap();
    let child = pulsar_cmd(cluster, &["broker"])
        .env("PULSAR_BROKER_CONF", &conf)
        .stdout(log)
        .stderr(Stdio::null())
        .spawn()
        .expect("start the Pulsar broker");
    let broker = Proc::new(child);
    let deadline = pulsar_rs_clock::monotonic() + Duration::from_secs(180);
    while std::net::TcpStream::connect(("127.0.0.1", bp)).is_err() {
        assert!(
            pulsar_rs_clock::monotonic() < deadline,
            "the Pulsar broker never listened; see {}",
            cluster.dir.path().join("broker.log").display()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    (broker, format!("pulsar://127.0.0.1:{bp}"))
}

#[test]
fn a_pulsar_broker_and_pulsar_rs_read_each_others_topics() {
    const N: u64 = 20;
    let Some(home) = skip_unless_ready() else {
        return;
    };
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let cluster = Cluster::start(&home, 2);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    // pulsar-rs writes a topic (left open, as a broker that stopped would leave it).
    let ours = rt.block_on(async {
        cluster.wait_writable(2).await;
        let ml = open(&cluster, "public/default/persistent/from-rust").await;
        for i in 0..N {
            ml.add_entry(message(i)).await.unwrap();
        }
        ml
    });
    let (mut broker, url) = start_broker(&cluster);
    // Apache Pulsar serves it: every message, in order.
    let out = pulsar_client(
        &cluster,
        &url,
        &[
            "consume",
            "persistent://public/default/from-rust",
            "-s",
            "s",
            "-p",
            "Earliest",
            "-n",
            &N.to_string(),
        ],
    );
    let got: Vec<&str> = out
        .lines()
        .filter_map(|l| l.split("content:").nth(1))
        .collect();
    let want: Vec<String> = (0..N).map(|i| format!("rust-msg-{i}")).collect();
    assert_eq!(got, want, "{out}");
    // Its owner recovered our ledger, fencing our writer.
    let err = rt.block_on(ours.add_entry(message(N))).unwrap_err();
    assert!(matches!(err, LedgerError::Fenced { .. }), "{err:?}");

    // Apache Pulsar writes a topic; its broker dies; pulsar-rs takes it over and reads it.
    pulsar_client(
        &cluster,
        &url,
        &[
            "produce",
            "persistent://public/default/from-pulsar",
            "-m",
            "java-msg",
            "-n",
            "5",
        ],
    );
    broker.kill();
    rt.block_on(async {
        let ml = open(&cluster, "public/default/persistent/from-pulsar").await;
        let mut from = Position::new(-1, -1);
        let mut payloads = Vec::new();
        loop {
            let got = ml.read_entries(from, 100).await.unwrap();
            let Some(last) = got.last() else { break };
            from = ml.next_position(last.position);
            for e in got {
                let (md, payload) =
                    pulsar_rs_proto::parse_stored_entry(&e.data).unwrap_or_else(|err| {
                        panic!("entry {:?} is not a Pulsar message: {err}", e.position)
                    });
                payloads.push((md.producer_name.clone(), payload));
            }
        }
        assert_eq!(payloads.len(), 5, "{payloads:?}");
        for (_, p) in &payloads {
            // Pulsar's client batches by default: the message sits at the end of a batch payload.
            assert!(p.ends_with(b"java-msg"), "{p:?}");
        }
    });
}
