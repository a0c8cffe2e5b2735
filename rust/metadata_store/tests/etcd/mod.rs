//! Test fixture: a real etcd (Debian's `etcd-server`, which `.ci/run` installs) on 127.0.0.1
//! with ephemeral ports and a temporary data directory, started and stopped by the test.
//! Without the `etcd` binary the tests print why and pass as skipped, unless
//! `PULSAR_RS_REQUIRE_ETCD` is set (as `.ci/run` sets it), when they fail. A test crate that
//! includes it includes the BookKeeper tests' `common` too (for `free_port`).

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// One etcd member, killed when dropped.
pub struct Etcd {
    child: Child,
    /// Its data directory.
    pub dir: tempfile::TempDir,
    /// Its client port.
    pub port: u16,
}

impl Etcd {
    /// Starts etcd, or `None` after printing why the test is skipped.
    pub fn start() -> Option<Etcd> {
        let found = Command::new("etcd")
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !found {
            assert!(
                std::env::var_os("PULSAR_RS_REQUIRE_ETCD").is_none(),
                "PULSAR_RS_REQUIRE_ETCD is set but `etcd` is not on PATH (apt-get install etcd-server)"
            );
            eprintln!("SKIPPED: `etcd` not on PATH (apt-get install etcd-server)");
            return None;
        }
        // Three attempts with fresh ports: another test's etcd (tests run in parallel) may have
        // taken a port `free_port` handed out, and this one then exits or answers nothing.
        for _ in 0..3 {
            if let Some(etcd) = Self::start_once() {
                return Some(etcd);
            }
        }
        panic!("etcd did not become healthy in three attempts");
    }

    /// One start on fresh ports: `Some` once its client port answers `/health` with
    /// `"health":"true"` (a listening socket alone is not a serving etcd), `None` if it exited
    /// or did not within 10 s (its log is printed).
    fn start_once() -> Option<Etcd> {
        let dir = tempfile::tempdir().unwrap();
        let (port, peer) = (crate::common::free_port(), crate::common::free_port());
        let client = format!("http://127.0.0.1:{port}");
        let peer_url = format!("http://127.0.0.1:{peer}");
        let log = std::fs::File::create(dir.path().join("etcd.log")).unwrap();
        let child = Command::new("etcd")
            .arg("--name=t")
            .arg(format!("--data-dir={}", dir.path().join("data").display()))
            .arg(format!("--listen-client-urls={client}"))
            .arg(format!("--advertise-client-urls={client}"))
            .arg(format!("--listen-peer-urls={peer_url}"))
            .arg(format!("--initial-advertise-peer-urls={peer_url}"))
            .arg(format!("--initial-cluster=t={peer_url}"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start etcd");
        let mut etcd = Etcd { child, dir, port };
        for _ in 0..100 {
            if etcd.child.try_wait().ok().flatten().is_some() {
                break;
            }
            if healthy(port) {
                // Ours, not another test's on a port both were handed: ours would have exited.
                std::thread::sleep(Duration::from_millis(200));
                if etcd.child.try_wait().ok().flatten().is_none() {
                    return Some(etcd);
                }
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let log = std::fs::read_to_string(etcd.dir.path().join("etcd.log")).unwrap_or_default();
        let tail: String = log.lines().rev().take(5).collect::<Vec<_>>().join("\n");
        eprintln!("etcd on port {port} did not become healthy; its log ends with:\n{tail}");
        None
    }

    /// Its `metadataStoreUrl`, as Pulsar writes it.
    pub fn url(&self) -> String {
        format!("etcd:http://127.0.0.1:{}", self.port)
    }

    /// Runs `etcdctl` against it; its standard output.
    pub fn ctl(&self, args: &[&str]) -> String {
        let out = Command::new("etcdctl")
            .env("ETCDCTL_API", "3")
            .arg(format!("--endpoints=127.0.0.1:{}", self.port))
            .args(args)
            .output()
            .expect("run etcdctl");
        assert!(
            out.status.success(),
            "etcdctl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

/// Whether the etcd at `port` answers `GET /health` with `"health":"true"`.
fn healthy(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    if stream
        .write_all(b"GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer.starts_with("HTTP/1.") && answer.contains("\"health\":\"true\"")
}

impl Drop for Etcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
