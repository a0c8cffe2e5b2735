//! Runs `tests/java/MlTool.java` (Pulsar's own `MLDataFormats` classes reading what is in
//! ZooKeeper) for the tests of this crate; compiled once per test process.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use super::common::Cluster;

/// Compiles `MlTool.java` once per test process.
pub fn mltool_classes(home: &Path) -> PathBuf {
    static CLASSES: OnceLock<PathBuf> = OnceLock::new();
    CLASSES
        .get_or_init(|| {
            let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("mltool-classes");
            std::fs::create_dir_all(&out).unwrap();
            let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/java/MlTool.java");
            let ok = Command::new("javac")
                .args(["-nowarn", "-d"])
                .arg(&out)
                .args(["-cp", &format!("{}/lib/*", home.display())])
                .arg(src)
                .status()
                .expect("javac");
            assert!(ok.success(), "javac MlTool.java failed");
            out
        })
        .clone()
}

pub fn mltool(cluster: &Cluster, args: &[&str]) -> String {
    let classes = mltool_classes(&cluster.home);
    let out = Command::new("java")
        .args([
            "-Xmx128m",
            "-cp",
            &format!("{}:{}/lib/*", classes.display(), cluster.home.display()),
            "MlTool",
        ])
        .args(args)
        .output()
        .expect("run MlTool");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "MlTool {args:?} failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}
