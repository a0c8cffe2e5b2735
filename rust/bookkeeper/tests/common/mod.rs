//! Test fixture: a real ZooKeeper and real Apache BookKeeper bookies (from the Apache Pulsar 4.0.8
//! distribution) on 127.0.0.1 with ephemeral ports and temporary directories, started and stopped by
//! the tests; and BookKeeper's own Java client (`tests/java/BkTool.java`) to cross-check formats.
//!
//! The distribution is looked up at `$PULSAR_REFERENCE_CACHE/apache-pulsar-4.0.8` (default
//! `~/.cache/pulsar-rs`); CI fetches it once with `python3 python/pulsar_rs/testing/distribution.py` from the
//! repository root. Without it (or without `java`/`javac`) the tests print why and pass as skipped.

#![allow(dead_code)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use pulsar_rs_bookkeeper::zk_store::ZkStore;

/// One cluster at a time: each is four JVMs on a small shared machine.
pub static SERIAL: Mutex<()> = Mutex::new(());

/// The pinned Apache Pulsar release, read from `python/pulsar_rs/testing/distribution.py` (where
/// it is defined once, next to the download that fetches it).
pub fn pulsar_version() -> String {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../python/pulsar_rs/testing/distribution.py");
    let text = std::fs::read_to_string(&file).expect("python/pulsar_rs/testing/distribution.py");
    text.lines()
        .find_map(|l| l.strip_prefix("PULSAR_VERSION = \""))
        .and_then(|rest| rest.split('"').next())
        .expect("PULSAR_VERSION = \"...\" in python/pulsar_rs/testing/distribution.py")
        .to_owned()
}

pub fn pulsar_home() -> Option<PathBuf> {
    let cache = std::env::var_os("PULSAR_REFERENCE_CACHE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/pulsar-rs")))?;
    let home = cache.join(format!("apache-pulsar-{}", pulsar_version()));
    home.join("lib").is_dir().then_some(home)
}

/// The distribution, or None after printing why the test is skipped.
pub fn skip_unless_ready() -> Option<PathBuf> {
    let Some(home) = pulsar_home() else {
        eprintln!(
            "SKIPPED: Apache Pulsar {} not found; run `python3 python/pulsar_rs/testing/distribution.py` from the repo root",
            pulsar_version()
        );
        return None;
    };
    for tool in ["java", "javac"] {
        if Command::new(tool)
            .arg("-version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_err()
        {
            eprintln!("SKIPPED: `{tool}` not on PATH");
            return None;
        }
    }
    Some(home)
}

/// A port free on 127.0.0.1 now (the test binds it next).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn classpath(home: &Path) -> String {
    format!("{}/lib/*", home.display())
}

/// A child process killed when dropped.
pub struct Proc(Option<Child>);

impl Proc {
    /// Owns `child`: it is killed when this is dropped.
    pub fn new(child: Child) -> Proc {
        Proc(Some(child))
    }

    pub fn kill(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// How the process ended, if it did on its own (None while it runs or after `kill`).
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.0.as_mut().and_then(|c| c.try_wait().ok().flatten())
    }
}

/// One bookie of a [`Cluster`].
pub struct Bookie {
    /// Its number: its directories are `bookie{index}`.
    pub index: usize,
    /// Its registered id (`127.0.0.1:port`, or the `bookieId` it was given).
    pub id: String,
    /// The `bookieId` setting it was started with, if any.
    fixed_id: Option<String>,
    pub proc: Proc,
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill();
    }
}

/// ZooKeeper plus bookies.
pub struct Cluster {
    pub home: PathBuf,
    pub dir: tempfile::TempDir,
    pub zk_port: u16,
    pub zk: Proc,
    /// The bookies started, in order; behind a lock so `wait_writable` (which takes `&self`, as
    /// the tests hold the cluster shared) can replace one that died on start.
    pub bookies: Mutex<Vec<Bookie>>,
}

impl Cluster {
    pub fn zk_servers(&self) -> String {
        format!("127.0.0.1:{}", self.zk_port)
    }

    pub fn uri(&self) -> String {
        format!("zk+hierarchical://127.0.0.1:{}/ledgers", self.zk_port)
    }

    /// Starts ZooKeeper, formats BookKeeper's metadata and starts `n` bookies (blocking; call before
    /// entering the runtime or from `spawn_blocking`).
    pub fn start(home: &Path, n: usize) -> Cluster {
        let dir = tempfile::tempdir().unwrap();
        let zk_port = free_port();
        let root = dir.path().to_path_buf();
        let log = |name: &str| std::fs::File::create(root.join(name)).unwrap();
        let zk = Command::new("java")
            .args([
                "-Xmx96m",
                "-Dzookeeper.admin.enableServer=false",
                "-cp",
                &classpath(home),
            ])
            .arg("org.apache.zookeeper.server.ZooKeeperServerMain")
            .arg(zk_port.to_string())
            .arg(dir.path().join("zk"))
            .stdout(log("zk.log"))
            .stderr(Stdio::null())
            .spawn()
            .expect("start zookeeper");
        let mut cluster = Cluster {
            home: home.to_path_buf(),
            dir,
            zk_port,
            zk: Proc(Some(zk)),
            bookies: Mutex::new(Vec::new()),
        };
        wait_port(zk_port);
        let conf0 = cluster.bookie_conf(0, free_port(), None);
        let ok = Command::new("java")
            .args([
                "-Xmx96m",
                "-cp",
                &classpath(home),
                "org.apache.bookkeeper.bookie.BookieShell",
                "-conf",
            ])
            .arg(&conf0)
            .args(["initnewcluster"])
            .stdout(log("init.log"))
            .stderr(Stdio::null())
            .status()
            .expect("run initnewcluster");
        assert!(
            ok.success(),
            "initnewcluster failed; see {}",
            cluster.dir.path().join("init.log").display()
        );
        for i in 0..n {
            cluster.start_bookie(i);
        }
        cluster
    }

    fn bookie_conf(&self, i: usize, port: u16, bookie_id: Option<&str>) -> PathBuf {
        let d = self.dir.path().join(format!("bookie{i}"));
        std::fs::create_dir_all(&d).unwrap();
        let conf = d.join("bk.conf");
        std::fs::write(
            &conf,
            format!(
                "bookiePort={port}\nadvertisedAddress=127.0.0.1\nallowLoopback=true\n\
                 journalDirectories={d}/journal\nledgerDirectories={d}/ledgers\n\
                 metadataServiceUri=zk+hierarchical://127.0.0.1:{zk}/ledgers\nhttpServerEnabled=false\n\
                 ledgerStorageClass=org.apache.bookkeeper.bookie.SortedLedgerStorage\n\
                 diskUsageThreshold=0.999\ndiskUsageWarnThreshold=0.998\njournalSyncData=false\n\
                 statsProviderClass=org.apache.bookkeeper.stats.NullStatsProvider\nextraServerComponents=\n\
                 zkTimeout=10000\n{id}",
                d = d.display(),
                zk = self.zk_port,
                id = bookie_id.map(|b| format!("bookieId={b}\n")).unwrap_or_default(),
            ),
        )
        .unwrap();
        conf
    }

    /// Starts bookie number `i` on a fresh port, its id `127.0.0.1:port`.
    pub fn start_bookie(&mut self, i: usize) {
        self.start_bookie_with_id(i, None);
    }

    /// Starts bookie number `i` on a fresh port; with `bookie_id`, registered under that id (the
    /// `bookieId` setting) rather than its address.
    pub fn start_bookie_with_id(&mut self, i: usize, bookie_id: Option<&str>) {
        let bookie = self.spawn_bookie(i, bookie_id.map(str::to_string));
        self.bookies.lock().unwrap().push(bookie);
    }

    fn spawn_bookie(&self, i: usize, fixed_id: Option<String>) -> Bookie {
        let port = free_port();
        let conf = self.bookie_conf(i, port, fixed_id.as_deref());
        let log = std::fs::File::create(self.dir.path().join(format!("bookie{i}.log"))).unwrap();
        let child = Command::new("java")
            .args([
                "-Xmx128m",
                "-XX:MaxDirectMemorySize=128m",
                "-cp",
                &classpath(&self.home),
            ])
            .args(["org.apache.bookkeeper.server.Main", "--conf"])
            .arg(conf)
            .stdout(log)
            .stderr(Stdio::null())
            .spawn()
            .expect("start bookie");
        Bookie {
            index: i,
            id: fixed_id.clone().unwrap_or(format!("127.0.0.1:{port}")),
            fixed_id,
            proc: Proc(Some(child)),
        }
    }

    /// The ids of the bookies started, in order.
    pub fn bookie_ids(&self) -> Vec<String> {
        self.bookies
            .lock()
            .unwrap()
            .iter()
            .map(|b| b.id.clone())
            .collect()
    }

    /// SIGKILLs the bookie with this id.
    pub fn kill_bookie(&self, id: &str) {
        for b in self.bookies.lock().unwrap().iter_mut() {
            if b.id == id {
                b.proc.kill();
            }
        }
    }

    /// Starts again, on a fresh port and empty directories, each bookie that exited on its own
    /// before registering (its port taken between `free_port` and the JVM's bind, which any
    /// outgoing connection can do on a loaded machine): returns what it restarted, with the end of
    /// each dead bookie's log.
    fn restart_dead_bookies(&self, registered: &[String]) -> Vec<String> {
        let mut bookies = self.bookies.lock().unwrap();
        let mut restarted = Vec::new();
        for b in bookies.iter_mut() {
            if registered.contains(&b.id) {
                continue;
            }
            let Some(status) = b.proc.exited() else {
                continue;
            };
            let log =
                std::fs::read_to_string(self.dir.path().join(format!("bookie{}.log", b.index)))
                    .unwrap_or_default();
            let why: Vec<&str> = log
                .lines()
                .filter(|l| l.contains("ERROR") || l.contains("Exception:"))
                .take(3)
                .collect();
            restarted.push(format!("{} ({status}): {why:?}", b.id));
            let _ = std::fs::remove_dir_all(self.dir.path().join(format!("bookie{}", b.index)));
            *b = self.spawn_bookie(b.index, b.fixed_id.clone());
        }
        restarted
    }

    /// Waits until `n` bookies are registered writable; a bookie that dies before registering is
    /// started again (at most twice in all, each reported on stderr).
    pub async fn wait_writable(&self, n: usize) -> ZkStore {
        let store = ZkStore::connect(&self.zk_servers(), "/ledgers")
            .await
            .unwrap();
        let deadline = pulsar_rs_clock::monotonic() + Duration::from_secs(90);
        let mut restarts = 0;
        loop {
            let have = store.writable_bookies().await.unwrap_or_default();
            if have.len() >= n {
                return store;
            }
            if restarts < 2 {
                for r in self.restart_dead_bookies(&have) {
                    eprintln!("bookie died before registering, started again: {r}");
                    restarts += 1;
                }
            }
            assert!(
                pulsar_rs_clock::monotonic() < deadline,
                "only {have:?} bookies registered; logs in {}",
                self.dir.path().display()
            );
            // The bookies register in ZooKeeper on their own time: poll every 300 ms.
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    }

    /// Runs BookKeeper's own Java client (`tests/java/BkTool.java`) and returns its stdout.
    pub fn bktool(&self, args: &[&str]) -> String {
        let classes = bktool_classes(&self.home);
        let out = Command::new("java")
            .args([
                "-Xmx128m",
                "-cp",
                &format!("{}:{}", classes.display(), classpath(&self.home)),
                "BkTool",
            ])
            .args(args)
            .stderr(Stdio::null())
            .output()
            .expect("run BkTool");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "BkTool {args:?} failed: {stdout}");
        stdout
    }
}

impl Cluster {
    /// Starts BkTool with piped stdin/stdout (for the interactive `hold` command).
    pub fn bktool_spawn(&self, args: &[&str]) -> Child {
        let classes = bktool_classes(&self.home);
        Command::new("java")
            .args([
                "-Xmx128m",
                "-cp",
                &format!("{}:{}", classes.display(), classpath(&self.home)),
                "BkTool",
            ])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("run BkTool")
    }
}

fn wait_port(port: u16) {
    let deadline = pulsar_rs_clock::monotonic() + Duration::from_secs(60);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            pulsar_rs_clock::monotonic() < deadline,
            "port {port} never opened"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Compiles `BkTool.java` once per test process.
fn bktool_classes(home: &Path) -> PathBuf {
    static CLASSES: OnceLock<PathBuf> = OnceLock::new();
    CLASSES
        .get_or_init(|| {
            let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("bktool-classes");
            std::fs::create_dir_all(&out).unwrap();
            let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/java/BkTool.java");
            let ok = Command::new("javac")
                .args(["-nowarn", "-d"])
                .arg(&out)
                .args(["-cp", &classpath(home)])
                .arg(src)
                .status()
                .expect("javac");
            assert!(ok.success(), "javac BkTool.java failed");
            out
        })
        .clone()
}

/// Lines of BkTool output starting with `tag`, the rest of each line.
pub fn tagged<'a>(out: &'a str, tag: &str) -> Vec<&'a str> {
    out.lines()
        .filter_map(|l| l.strip_prefix(tag).map(str::trim))
        .collect()
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
