//! The metadata store's contract, the same checks on a real ZooKeeper (from the Apache Pulsar
//! distribution) and a real etcd: versions from 0 with compare-and-set writes and deletes,
//! create-if-absent, a missing record refused a write, JSON records, children (and only the
//! direct ones), ephemeral records owned by the session that made them and gone with it, a
//! watch that reports every change at or below its path and nothing beside it; on etcd also a
//! session lost with its lease (revoked from outside, as an expiry does). Each store is skipped
//! (with a message) without its server.

#[path = "../../bookkeeper/tests/common/mod.rs"]
mod common;
mod etcd;

use std::collections::BTreeMap;
use std::time::Duration;

use pulsar_rs_metadata_store::{MetadataStore, StoreError, StoreEvent, StoreWatch};
use serde_json::{json, Value};

const TIMEOUT: Duration = Duration::from_secs(6);

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Changes reported by `w` until `last` is, counted by path.
async fn changes_until(w: &mut StoreWatch, last: &str) -> BTreeMap<String, usize> {
    let mut seen = BTreeMap::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        match tokio::time::timeout_at(deadline, w.next()).await {
            Ok(StoreEvent::Changed(p)) => {
                let done = p == last;
                *seen.entry(p).or_insert(0) += 1;
                if done {
                    return seen;
                }
            }
            Ok(StoreEvent::Resync) => panic!("the watch broke; seen so far {seen:?}"),
            Err(_) => panic!("{last} never reported; seen {seen:?}"),
        }
    }
}

async fn eventually_gone(store: &MetadataStore, path: &str, within: Duration) {
    let deadline = tokio::time::Instant::now() + within;
    while store.get(path).await.unwrap().is_some() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{path} still there after {within:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn contract(url: &str) {
    let a = MetadataStore::connect(url, TIMEOUT).await.unwrap();
    let b = MetadataStore::connect(url, TIMEOUT).await.unwrap();
    assert_ne!(a.session_id(), b.session_id());
    assert_eq!(a.session_timeout(), TIMEOUT);
    let mut w = b.watch("/contract").await.unwrap();

    // Versions and compare-and-set.
    let p = "/contract/a/x";
    assert!(a.get(p).await.unwrap().is_none());
    a.create(p, b"1", false).await.unwrap();
    let (v, st) = b.get(p).await.unwrap().unwrap();
    assert_eq!(
        (v.as_slice(), st.version, st.ephemeral_owner),
        (&b"1"[..], 0, 0)
    );
    assert!(matches!(
        b.create(p, b"2", false).await,
        Err(StoreError::BadVersion { .. })
    ));
    assert!(!b.create_if_absent(p, b"2").await.unwrap());
    assert_eq!(a.set(p, b"2", Some(0)).await.unwrap(), 1);
    assert!(matches!(
        b.set(p, b"3", Some(0)).await,
        Err(StoreError::BadVersion { .. })
    ));
    assert_eq!(b.set(p, b"3", None).await.unwrap(), 2);
    let (v, st) = a.get(p).await.unwrap().unwrap();
    assert_eq!((v.as_slice(), st.version), (&b"3"[..], 2));
    for expected in [None, Some(0)] {
        assert!(
            matches!(
                a.set("/contract/none", b"x", expected).await,
                Err(StoreError::Metadata { .. })
            ),
            "a write to a missing record ({expected:?}) is refused"
        );
    }
    assert!(a.get("/contract/none").await.unwrap().is_none());
    assert!(matches!(
        a.delete(p, Some(1)).await,
        Err(StoreError::BadVersion { .. })
    ));
    assert!(
        a.get(p).await.unwrap().is_some(),
        "a refused delete deletes nothing"
    );

    // JSON records.
    assert!(a
        .create_json_if_absent("/contract/j", &json!({"k": 1}))
        .await
        .unwrap());
    let (doc, st) = b.get_json::<Value>("/contract/j").await.unwrap().unwrap();
    assert_eq!((doc["k"].as_i64(), st.version), (Some(1), 0));
    assert_eq!(
        b.set_json("/contract/j", &json!({"k": 2}), Some(0))
            .await
            .unwrap(),
        1
    );

    // Children: the direct ones only; a sibling that shares the prefix is not one.
    a.create("/contract/a/y", b"", false).await.unwrap();
    a.create("/contract/b", b"", false).await.unwrap();
    a.create("/contractor", b"", false).await.unwrap();
    assert_eq!(b.children("/contract").await.unwrap(), ["a", "b", "j"]);
    assert_eq!(b.children("/contract/a").await.unwrap(), ["x", "y"]);
    assert!(b.children("/contract/none").await.unwrap().is_empty());

    // Ephemeral records belong to the session that made them.
    let e = "/contract/eph";
    a.create(e, b"mine", true).await.unwrap();
    let (_, st) = b.get(e).await.unwrap().unwrap();
    assert_eq!(st.ephemeral_owner, a.session_id());
    assert!(matches!(
        b.create(e, b"", true).await,
        Err(StoreError::BadVersion { .. })
    ));
    // A write keeps it ephemeral (ZooKeeper's setData; etcd's put keeping the lease).
    a.set(e, b"still mine", None).await.unwrap();
    assert_eq!(
        b.get(e).await.unwrap().unwrap().1.ephemeral_owner,
        a.session_id()
    );

    // Deletes.
    a.delete(p, Some(2)).await.unwrap();
    assert!(b.get(p).await.unwrap().is_none());
    a.delete(p, None).await.unwrap();
    a.delete(p, Some(7)).await.unwrap();

    // The watch saw every change at or below /contract, in order, and nothing beside it.
    a.create("/contract/end", b"", false).await.unwrap();
    let seen = changes_until(&mut w, "/contract/end").await;
    assert_eq!(
        seen.get(p),
        Some(&4),
        "created, set twice, deleted: {seen:?}"
    );
    assert_eq!(seen.get("/contract/j"), Some(&2), "{seen:?}");
    assert_eq!(seen.get(e), Some(&2), "{seen:?}");
    for path in ["/contract/a/y", "/contract/b"] {
        assert_eq!(seen.get(path), Some(&1), "{path}: {seen:?}");
    }
    assert!(!seen.contains_key("/contractor"), "{seen:?}");
    assert!(!seen.contains_key("/contract/none"), "{seen:?}");

    // The session ends with its last handle: its ephemeral records go, the others stay.
    drop(a);
    eventually_gone(&b, e, TIMEOUT + Duration::from_secs(4)).await;
    assert!(b.get("/contract/b").await.unwrap().is_some());
}

#[test]
fn the_store_contract_on_zookeeper() {
    let Some(home) = common::skip_unless_ready() else {
        return;
    };
    let _serial = common::SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let cluster = common::Cluster::start(&home, 0);
    runtime().block_on(contract(&format!("zk:{}", cluster.zk_servers())));
}

#[test]
fn the_store_contract_on_etcd() {
    let Some(etcd) = etcd::Etcd::start() else {
        return;
    };
    runtime().block_on(contract(&etcd.url()));
}

#[test]
fn an_etcd_session_is_lost_with_its_lease() {
    let Some(etcd) = etcd::Etcd::start() else {
        return;
    };
    let etcd = std::sync::Arc::new(etcd);
    runtime().block_on(async {
        let s = MetadataStore::connect(&etcd.url(), TIMEOUT).await.unwrap();
        let other = MetadataStore::connect(&etcd.url(), TIMEOUT).await.unwrap();
        s.create("/loss/mine", b"", true).await.unwrap();
        // Revoked from outside, as an expiry after a pause longer than the TTL would.
        let lease = format!("{:x}", s.session_id());
        let ctl = std::sync::Arc::clone(&etcd);
        tokio::task::spawn_blocking(move || ctl.ctl(&["lease", "revoke", &lease]))
            .await
            .unwrap();
        tokio::time::timeout(TIMEOUT, s.lost())
            .await
            .expect("the loss is noticed within the session timeout");
        assert!(other.get("/loss/mine").await.unwrap().is_none());
        assert!(matches!(
            s.create("/loss/again", b"", true).await,
            Err(StoreError::SessionLost)
        ));
        // A new session works.
        let again = MetadataStore::connect(&etcd.url(), TIMEOUT).await.unwrap();
        again.create("/loss/again", b"", true).await.unwrap();
    });
}
