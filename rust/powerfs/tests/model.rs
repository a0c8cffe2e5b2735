//! The durability semantics of powerfs's model, checked by "power cuts": after each scenario the
//! backing directory is mounted afresh (`Model::open`), which is what the next mount would see.

use std::ffi::OsStr;
use std::fs;
use std::path::Path;

use pulsar_rs_powerfs::{Kind, Model, PowerFsError, ROOT};

fn n(s: &str) -> &OsStr {
    OsStr::new(s)
}

/// What survives: the model as the next mount sees it.
fn after_cut(mut m: Model, backing: &Path) -> Model {
    m.cut();
    drop(m);
    Model::open(backing).unwrap()
}

fn contents(m: &Model, path: &str) -> Option<Vec<u8>> {
    let mut ino = ROOT;
    for part in path.split('/') {
        ino = m.lookup(ino, n(part)).ok()?;
    }
    Some(m.read(ino, 0, usize::MAX).unwrap().to_vec())
}

fn sync_file(m: &mut Model, dir: u64, name: &str, data: &[u8]) -> u64 {
    let f = m.create(dir, n(name), Kind::File, 0o644).unwrap();
    m.write(f, 0, data).unwrap();
    m.fsync(f).unwrap();
    f
}

#[test]
fn unsynced_data_is_lost_and_synced_data_kept() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = Model::open(dir.path()).unwrap();
    let f = sync_file(&mut m, ROOT, "f", b"durable");
    m.fsync_dir(ROOT).unwrap();
    m.write(f, 7, b"+volatile").unwrap();
    assert_eq!(contents(&m, "f").unwrap(), b"durable+volatile");
    let m = after_cut(m, dir.path());
    assert_eq!(contents(&m, "f").unwrap(), b"durable");
}

#[test]
fn a_new_file_needs_its_directory_synced() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = Model::open(dir.path()).unwrap();
    sync_file(&mut m, ROOT, "f", b"data");
    let m = after_cut(m, dir.path());
    assert_eq!(
        contents(&m, "f"),
        None,
        "fsync of a file does not make its name durable"
    );
}

#[test]
fn a_durable_name_to_an_unsynced_file_is_empty() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = Model::open(dir.path()).unwrap();
    let f = m.create(ROOT, n("f"), Kind::File, 0o644).unwrap();
    m.write(f, 0, b"data").unwrap();
    m.fsync_dir(ROOT).unwrap();
    let m = after_cut(m, dir.path());
    assert_eq!(contents(&m, "f").unwrap(), b"");
}

#[test]
fn data_synced_after_the_name_is_durable_reaches_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = Model::open(dir.path()).unwrap();
    let f = m.create(ROOT, n("f"), Kind::File, 0o644).unwrap();
    m.fsync_dir(ROOT).unwrap();
    m.write(f, 0, b"abcdef").unwrap();
    m.fsync(f).unwrap();
    m.write(f, 2, b"XY").unwrap();
    m.truncate(f, 5).unwrap();
    m.fsync(f).unwrap();
    m.write(f, 10, b"gap").unwrap();
    m.fsync(f).unwrap();
    let m = after_cut(m, dir.path());
    assert_eq!(contents(&m, "f").unwrap(), b"abXYe\0\0\0\0\0gap");
}

#[test]
fn nested_new_directories_need_every_parent_synced() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = Model::open(dir.path()).unwrap();
    let a = m.create(ROOT, n("a"), Kind::Dir, 0o755).unwrap();
    let b = m.create(a, n("b"), Kind::Dir, 0o755).unwrap();
    sync_file(&mut m, b, "f", b"data");
    m.fsync_dir(b).unwrap();
    m.fsync_dir(ROOT).unwrap(); // a is durable, but a's entry for b is not
    let m2 = after_cut(m, dir.path());
    assert!(contents(&m2, "a/b/f").is_none());
    assert!(m2.lookup(ROOT, n("a")).is_ok());

    // Syncing the missing link brings the whole durable subtree along.
    let mut m = Model::open(dir.path()).unwrap();
    let a = m.lookup(ROOT, n("a")).unwrap();
    let b = m.create(a, n("b"), Kind::Dir, 0o755).unwrap();
    sync_file(&mut m, b, "f", b"data");
    m.fsync_dir(b).unwrap();
    m.fsync_dir(a).unwrap();
    let m = after_cut(m, dir.path());
    assert_eq!(contents(&m, "a/b/f").unwrap(), b"data");
}

#[test]
fn rename_is_durable_only_after_the_directory_sync() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = Model::open(dir.path()).unwrap();
    sync_file(&mut m, ROOT, "key", b"v1");
    m.fsync_dir(ROOT).unwrap();
    // The metadata-store pattern: write a temporary, fsync it, rename over the key.
    sync_file(&mut m, ROOT, "key.tmp", b"v2");
    m.rename(ROOT, n("key.tmp"), ROOT, n("key"), false).unwrap();
    assert_eq!(contents(&m, "key").unwrap(), b"v2");
    let mut m = after_cut(m, dir.path());
    assert_eq!(
        contents(&m, "key").unwrap(),
        b"v1",
        "rename not yet durable"
    );
    assert!(contents(&m, "key.tmp").is_none());

    sync_file(&mut m, ROOT, "key.tmp", b"v2");
    m.rename(ROOT, n("key.tmp"), ROOT, n("key"), false).unwrap();
    m.fsync_dir(ROOT).unwrap();
    let m = after_cut(m, dir.path());
    assert_eq!(contents(&m, "key").unwrap(), b"v2");
    assert!(contents(&m, "key.tmp").is_none());
}

#[test]
fn cross_directory_rename_needs_both_directories_synced() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = Model::open(dir.path()).unwrap();
    let a = m.create(ROOT, n("a"), Kind::Dir, 0o755).unwrap();
    let b = m.create(ROOT, n("b"), Kind::Dir, 0o755).unwrap();
    let f = sync_file(&mut m, a, "f", b"one");
    m.fsync_dir(a).unwrap();
    m.fsync_dir(ROOT).unwrap();
    m.rename(a, n("f"), b, n("g"), false).unwrap();
    m.fsync_dir(b).unwrap();
    // Durably at both names until `a` is synced; a later fsync of the file reaches both.
    m.write(f, 0, b"two").unwrap();
    m.fsync(f).unwrap();
    let mut m = after_cut(m, dir.path());
    assert_eq!(contents(&m, "a/f").unwrap(), b"two");
    assert_eq!(contents(&m, "b/g").unwrap(), b"two");

    let a = m.lookup(ROOT, n("a")).unwrap();
    m.unlink(a, n("f")).unwrap();
    m.fsync_dir(a).unwrap();
    let m = after_cut(m, dir.path());
    assert!(contents(&m, "a/f").is_none());
    assert_eq!(contents(&m, "b/g").unwrap(), b"two");
}

#[test]
fn unlink_is_durable_only_after_the_directory_sync() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = Model::open(dir.path()).unwrap();
    sync_file(&mut m, ROOT, "f", b"data");
    m.fsync_dir(ROOT).unwrap();
    m.unlink(ROOT, n("f")).unwrap();
    let mut m = after_cut(m, dir.path());
    assert_eq!(contents(&m, "f").unwrap(), b"data");
    m.unlink(ROOT, n("f")).unwrap();
    m.fsync_dir(ROOT).unwrap();
    let m = after_cut(m, dir.path());
    assert!(contents(&m, "f").is_none());
    assert!(fs::read_dir(dir.path()).unwrap().next().is_none());
}

#[test]
fn an_unlinked_open_file_still_syncs_to_its_durable_name() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = Model::open(dir.path()).unwrap();
    let f = sync_file(&mut m, ROOT, "f", b"old");
    m.fsync_dir(ROOT).unwrap();
    m.unlink(ROOT, n("f")).unwrap();
    m.write(f, 0, b"new").unwrap();
    m.fsync(f).unwrap();
    let m = after_cut(m, dir.path());
    assert_eq!(contents(&m, "f").unwrap(), b"new");
}

#[test]
fn after_the_cut_everything_fails_and_nothing_reaches_the_backing_store() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = Model::open(dir.path()).unwrap();
    let f = sync_file(&mut m, ROOT, "f", b"data");
    m.cut();
    assert!(matches!(m.fsync_dir(ROOT), Err(PowerFsError::PowerCut)));
    assert!(matches!(m.fsync(f), Err(PowerFsError::PowerCut)));
    assert!(matches!(m.write(f, 0, b"x"), Err(PowerFsError::PowerCut)));
    assert!(matches!(
        m.lookup(ROOT, n("f")),
        Err(PowerFsError::PowerCut)
    ));
    assert_eq!(PowerFsError::PowerCut.errno(), libc::EIO);
    assert!(fs::read_dir(dir.path()).unwrap().next().is_none());
}

#[test]
fn namespace_errors() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = Model::open(dir.path()).unwrap();
    let d = m.create(ROOT, n("d"), Kind::Dir, 0o755).unwrap();
    m.create(d, n("f"), Kind::File, 0o644).unwrap();
    assert!(matches!(
        m.create(ROOT, n("d"), Kind::File, 0o644),
        Err(PowerFsError::Exists(_))
    ));
    assert!(matches!(
        m.rmdir(ROOT, n("d")),
        Err(PowerFsError::NotEmpty(_))
    ));
    assert!(matches!(m.unlink(ROOT, n("d")), Err(PowerFsError::IsDir)));
    assert!(matches!(
        m.rename(ROOT, n("d"), d, n("x"), false),
        Err(PowerFsError::Invalid(_))
    ));
    assert!(matches!(
        m.create(ROOT, n("a/b"), Kind::File, 0o644),
        Err(PowerFsError::Invalid(_))
    ));
    m.create(ROOT, n("g"), Kind::File, 0o644).unwrap();
    assert!(matches!(
        m.rename(ROOT, n("g"), d, n("f"), true),
        Err(PowerFsError::Exists(_))
    ));
}
