//! Test fixture: a real etcd (Debian's `etcd-server`, which `.ci/run` installs) on 127.0.0.1
//! with ephemeral ports and a temporary data directory, started and stopped by the test.
//! Without the `etcd` binary the tests print why and pass as skipped, unless
//! `PULSAR_RS_REQUIRE_ETCD` is set (as `.ci/run` sets it), when they fail. A test crate that
//! includes it includes the BookKeeper tests' `common` too (for `free_port`).

#![allow(dead_code)]

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
        let etcd = Etcd { child, dir, port };
        for _ in 0..100 {
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Some(etcd);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!(
            "etcd did not listen within 10 s; see {}",
            etcd.dir.path().join("etcd.log").display()
        );
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

impl Drop for Etcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
