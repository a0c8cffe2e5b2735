//! Test support: a real S3Proxy 2.6.0 (filesystem backend, `authorization=none`, 127.0.0.1
//! only) started by the test and killed on drop, an in-memory ledger to offload, and a small
//! deterministic random generator.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use pulsar_rs_ledger::{OffloadSource, Result};
use pulsar_rs_offload::{BlobStoreOffloader, OffloadConfig};

/// The fat jar's coordinates on Maven Central.
const ARTIFACT: &str = "org.gaul:s3proxy:2.6.0:jar:jar-with-dependencies";
/// How long the JVM may take to answer on its port (a busy 2-core machine).
const START_TIMEOUT: Duration = Duration::from_secs(120);

/// The S3Proxy jar, fetched with Maven into `~/.m2` when missing.
pub fn jar() -> PathBuf {
    let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
    let jar = Path::new(&home)
        .join(".m2/repository/org/gaul/s3proxy/2.6.0/s3proxy-2.6.0-jar-with-dependencies.jar");
    if !jar.exists() {
        let status = Command::new("mvn")
            .args([
                "-q",
                "dependency:get",
                &format!("-Dartifact={ARTIFACT}"),
                "-Dtransitive=false",
            ])
            .status()
            .expect("mvn runs");
        assert!(status.success(), "mvn dependency:get {ARTIFACT} failed");
    }
    jar
}

/// A free TCP port on 127.0.0.1.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("bind 127.0.0.1:0")
        .port()
}

/// One S3Proxy process; stopped (killed) on drop.
pub struct S3Proxy {
    child: Option<Child>,
    /// Its port on 127.0.0.1.
    pub port: u16,
    /// Holds the properties, the log and the blobs (`data/`).
    pub dir: tempfile::TempDir,
}

impl S3Proxy {
    /// Starts S3Proxy on a free port with a new directory.
    pub fn start() -> S3Proxy {
        let mut p = S3Proxy {
            child: None,
            port: free_port(),
            dir: tempfile::tempdir().expect("tempdir"),
        };
        p.restart();
        p
    }

    /// `http://127.0.0.1:{port}`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// (Re)starts the process on the same port and directory.
    pub fn restart(&mut self) {
        self.stop();
        let data = self.dir.path().join("data");
        std::fs::create_dir_all(&data).expect("basedir");
        let props = self.dir.path().join("s3proxy.conf");
        std::fs::write(
            &props,
            format!(
                "s3proxy.endpoint=http://127.0.0.1:{}\ns3proxy.authorization=none\n\
                 jclouds.provider=filesystem\njclouds.filesystem.basedir={}\n",
                self.port,
                data.display()
            ),
        )
        .expect("properties");
        let log = std::fs::File::create(self.dir.path().join("s3proxy.log")).expect("log");
        let child = Command::new("java")
            .args(["-Xmx192m", "-jar"])
            .arg(jar())
            .arg("--properties")
            .arg(&props)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("java starts");
        self.child = Some(child);
        let start = Instant::now();
        loop {
            if TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return;
            }
            if let Some(c) = self.child.as_mut() {
                if let Ok(Some(status)) = c.try_wait() {
                    panic!("S3Proxy exited with {status}: {}", self.log());
                }
            }
            assert!(
                start.elapsed() < START_TIMEOUT,
                "S3Proxy did not start: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Kills the process and waits for it.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Its log so far.
    pub fn log(&self) -> String {
        let mut s = String::new();
        if let Ok(mut f) = std::fs::File::open(self.dir.path().join("s3proxy.log")) {
            let _ = f.read_to_string(&mut s);
        }
        s
    }
}

impl Drop for S3Proxy {
    fn drop(&mut self) {
        self.stop();
    }
}

/// An offloader on `proxy`'s bucket `bucket` (created), with 5 MiB blocks.
pub fn offloader(proxy: &S3Proxy, bucket: &str) -> BlobStoreOffloader {
    let props: BTreeMap<String, String> = [
        ("managedLedgerOffloadDriver", "S3"),
        ("managedLedgerOffloadBucket", bucket),
        ("managedLedgerOffloadServiceEndpoint", &proxy.endpoint()),
        ("managedLedgerOffloadMaxBlockSizeInBytes", "5242880"),
    ]
    .iter()
    .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
    .collect();
    let config = OffloadConfig::from_properties(&props)
        .expect("valid config")
        .expect("a driver");
    let o = BlobStoreOffloader::new(config).expect("offloader");
    let b = bucket.to_string();
    o.with_client(|c| async move {
        c.create_bucket(&b)
            .await
            .map_err(|e| pulsar_rs_ledger::LedgerError::Offload {
                context: e.to_string(),
            })
    })
    .expect("bucket created");
    o
}

/// A deterministic xorshift generator.
pub struct Rng(pub u64);

impl Rng {
    /// The next value.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A value in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A closed ledger held in memory.
pub struct MemLedger {
    pub id: i64,
    pub entries: Vec<Bytes>,
}

impl MemLedger {
    /// `n` entries of random sizes in `0..max_size` (entry `i` starts with its id).
    pub fn random(id: i64, n: usize, max_size: u64, rng: &mut Rng) -> MemLedger {
        let entries = (0..n)
            .map(|i| {
                let len = rng.below(max_size) as usize;
                let mut v: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
                let tag = (i as u64).to_be_bytes();
                let k = tag.len().min(v.len());
                v[..k].copy_from_slice(&tag[..k]);
                Bytes::from(v)
            })
            .collect();
        MemLedger { id, entries }
    }
}

impl OffloadSource for MemLedger {
    fn ledger_id(&self) -> i64 {
        self.id
    }

    fn last_entry_id(&self) -> i64 {
        self.entries.len() as i64 - 1
    }

    fn length(&self) -> u64 {
        self.entries.iter().map(|e| e.len() as u64).sum()
    }

    fn created_ms(&self) -> u64 {
        1_700_000_000_000
    }

    fn read(&self, first: i64, last: i64) -> Result<Vec<Bytes>> {
        Ok(self.entries[first as usize..=last as usize].to_vec())
    }
}
