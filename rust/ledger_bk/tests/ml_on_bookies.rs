//! The seam's managed ledger on real ZooKeeper and Apache BookKeeper 4.17 bookies (the fixture of
//! the bookkeeper crate's tests): appends roll over across ledgers and read back; a second broker
//! opening the topic fences the first, whose next append fails; cursors survive the hand-over; a
//! stale ledger-list compare-and-set fences; and Apache Pulsar's own classes parse the
//! `ManagedLedgerInfo` and `ManagedCursorInfo` written, while BookKeeper's Java client reads every
//! ledger they name. Skipped (with a message) without the Pulsar distribution or a JDK.

#[path = "../../bookkeeper/tests/common/mod.rs"]
mod common;
#[path = "mltool/mod.rs"]
mod mltool;

use std::sync::Arc;

use bytes::Bytes;
use common::{skip_unless_ready, tagged, Cluster, SERIAL};
use mltool::mltool;
use pulsar_rs_ledger::seam::{managed_ledger_path, LedgerStorage, VersionedStore};
use pulsar_rs_ledger::{LedgerError, Position, SystemClock};
use pulsar_rs_ledger_bk::BkSettings;
use pulsar_rs_ledger_testkit::{SeamLedgerConfig, SeamManagedLedger};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// A "broker": its own BookKeeper client and ZooKeeper session, E=3 Qw=2 Qa=2.
async fn broker(
    cluster: &Cluster,
    name: &str,
    per_ledger: u64,
) -> pulsar_rs_ledger::Result<Arc<SeamManagedLedger>> {
    let mut settings = BkSettings::new(&format!("zk:{}", cluster.zk_servers()));
    settings.ensemble_size = 3;
    settings.write_quorum = 2;
    settings.ack_quorum = 2;
    let (ledgers, store) = pulsar_rs_ledger_bk::connect(&settings).await?;
    SeamManagedLedger::open(
        name,
        ledgers as Arc<dyn LedgerStorage>,
        store as Arc<dyn VersionedStore>,
        Arc::new(SystemClock),
        SeamLedgerConfig {
            max_entries_per_ledger: per_ledger,
        },
    )
    .await
}

fn payload(i: usize) -> Bytes {
    Bytes::from(format!("ml-entry-{i}"))
}

async fn read_all(ml: &SeamManagedLedger) -> Vec<(Position, Bytes)> {
    let mut out = Vec::new();
    let mut from = Position::new(-1, -1);
    loop {
        let got = ml.read_entries(from, 4).await.unwrap();
        let Some(last) = got.last() else { break };
        from = ml.next_position(last.position);
        out.extend(got.into_iter().map(|e| (e.position, e.data)));
    }
    out
}

#[test]
fn managed_ledger_on_bookies_in_pulsars_format() {
    let Some(home) = skip_unless_ready() else {
        return;
    };
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let cluster = Cluster::start(&home, 3);
    let rt = runtime();
    let name = "public/default/persistent/on-bookies";
    let (positions, ledger_count) = rt.block_on(async {
        cluster.wait_writable(3).await;
        // Broker A: 12 entries, 5 per ledger (three ledgers), a cursor acknowledging some.
        let a = broker(&cluster, name, 5).await.unwrap();
        let ca = a.open_cursor("sub").await.unwrap();
        let mut positions = Vec::new();
        for i in 0..12 {
            positions.push(a.add_entry(payload(i)).await.unwrap());
        }
        assert_eq!(a.ledger_ids().len(), 3);
        let read = read_all(&a).await;
        assert_eq!(read.iter().map(|r| r.0).collect::<Vec<_>>(), positions);
        assert_eq!(read[11].1, payload(11));
        assert_eq!(ca.read_entries(100).await.unwrap().len(), 5);
        for p in &positions[0..4] {
            ca.acknowledge(*p);
        }
        ca.acknowledge(positions[7]);
        ca.flush().await.unwrap();

        // Broker B takes the topic over: the recovery open fences A's current ledger.
        let b = broker(&cluster, name, 5).await.unwrap();
        let err = a.add_entry(payload(99)).await.unwrap_err();
        assert!(
            matches!(err, LedgerError::Fenced { .. }),
            "A's append after the hand-over: {err:?}"
        );
        assert!(a.is_fenced());
        let read = read_all(&b).await;
        assert_eq!(
            read.iter().map(|r| r.0).collect::<Vec<_>>(),
            positions,
            "B reads every entry A had acknowledged"
        );
        let cb = b.open_cursor("sub").await.unwrap();
        assert_eq!(cb.mark_delete_position(), positions[3]);
        assert_eq!(cb.individually_deleted(), vec![positions[7]]);
        positions.push(b.add_entry(payload(12)).await.unwrap());
        cb.flush().await.unwrap();
        // A's cursor record is stale now: its write loses the compare-and-set.
        assert!(matches!(ca.flush().await, Err(LedgerError::Fenced { .. })));
        let n = b.ledger_ids().len();
        // Closing writes the last ledger's end to its metadata: a reader that does not recover
        // it sees its last entry only then (BookKeeper piggybacks the LAC on the next entry).
        b.close().await.unwrap();
        (positions, n)
    });

    // Pulsar's own MLDataFormats parse the records; BookKeeper's Java client reads the ledgers.
    let out = mltool(&cluster, &["ml", &cluster.zk_servers(), name]);
    let ledgers = tagged(&out, "LEDGER ");
    assert_eq!(ledgers.len(), ledger_count, "{out}");
    let entries: Vec<String> = tagged(&out, "ENTRY ")
        .iter()
        .map(|s| (*s).to_string())
        .collect();
    let expected: Vec<String> = positions
        .iter()
        .enumerate()
        .map(|(i, p)| format!("{}:{} ml-entry-{i}", p.ledger_id, p.entry_id))
        .collect();
    assert_eq!(entries, expected, "{out}");
    let closed: Vec<String> = (0..3)
        .map(|l| {
            let idx: Vec<usize> = (l * 5..(l * 5 + 5).min(12)).collect();
            let size: usize = idx.iter().map(|&i| payload(i).len()).sum();
            format!("{} {} {size}", positions[idx[0]].ledger_id, idx.len())
        })
        .collect();
    assert_eq!(
        ledgers[..3],
        closed,
        "entries and sizes of the closed ledgers: {out}"
    );
    let out = mltool(&cluster, &["cursor", &cluster.zk_servers(), name, "sub"]);
    assert_eq!(tagged(&out, "CURSORLEDGER "), vec!["-1"]);
    let md = positions[3];
    assert_eq!(
        tagged(&out, "MARKDELETE "),
        vec![format!("{}:{}", md.ledger_id, md.entry_id)]
    );
    let p7 = positions[7];
    assert_eq!(
        tagged(&out, "RANGE "),
        vec![format!(
            "{}:{} {}:{}",
            p7.ledger_id,
            p7.entry_id - 1,
            p7.ledger_id,
            p7.entry_id
        )]
    );
}

#[test]
fn a_stale_ledger_list_compare_and_set_fences_and_consumed_ledgers_are_trimmed() {
    let Some(home) = skip_unless_ready() else {
        return;
    };
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let cluster = Cluster::start(&home, 3);
    let rt = runtime();
    rt.block_on(async {
        cluster.wait_writable(3).await;
        let name = "public/default/persistent/cas";
        // One entry per ledger: the second append rolls over and writes the list.
        let ml = broker(&cluster, name, 1).await.unwrap();
        ml.add_entry(payload(0)).await.unwrap();
        // Someone else rewrites the list (same bytes, next znode version), fencing no ledger.
        let store = pulsar_rs_ledger_bk::MetadataVersionedStore::connect(&cluster.zk_servers())
            .await
            .unwrap();
        let path = managed_ledger_path(name);
        let (raw, v) = store.get(&path).await.unwrap().unwrap();
        store.put(&path, raw, Some(v)).await.unwrap();
        let err = ml.add_entry(payload(1)).await.unwrap_err();
        assert!(matches!(err, LedgerError::Fenced { .. }), "{err:?}");
        assert!(ml.is_fenced());

        // Trimming: consumed ledgers leave the list, then the bookies' metadata.
        let name = "public/default/persistent/trim";
        let ml = broker(&cluster, name, 2).await.unwrap();
        let c = ml.open_cursor("sub").await.unwrap();
        let mut positions = Vec::new();
        for i in 0..5 {
            positions.push(ml.add_entry(payload(i)).await.unwrap());
        }
        let ids = ml.ledger_ids();
        assert_eq!(ids.len(), 3);
        for p in &positions[..4] {
            c.acknowledge(*p);
        }
        assert_eq!(ml.trim_consumed_ledgers().await.unwrap(), ids[..2].to_vec());
        let (raw, _) = store
            .get(&managed_ledger_path(name))
            .await
            .unwrap()
            .unwrap();
        let info = <pulsar_rs_ledger::seam::formats::ManagedLedgerInfo as prost::Message>::decode(
            &raw[..],
        )
        .unwrap();
        assert_eq!(
            info.ledger_info
                .iter()
                .map(|l| l.ledger_id)
                .collect::<Vec<_>>(),
            vec![ids[2]]
        );
        let bk =
            pulsar_rs_bookkeeper::zk_store::ZkStore::connect(&cluster.zk_servers(), "/ledgers")
                .await
                .unwrap();
        for id in &ids[..2] {
            assert!(matches!(
                bk.read_ledger_metadata(*id).await,
                Err(pulsar_rs_bookkeeper::BkError::NoSuchLedgerMetadata { .. })
            ));
        }
        assert_eq!(read_all(&ml).await.len(), 1);
    });

    // Deleting a managed ledger removes its cursors, its list and its ledgers from the bookies.
    rt.block_on(async {
        let name = "public/default/persistent/deleted";
        let ml = broker(&cluster, name, 2).await.unwrap();
        let c = ml.open_cursor("sub").await.unwrap();
        for i in 0..5 {
            ml.add_entry(payload(i)).await.unwrap();
        }
        c.flush().await.unwrap();
        let ids = ml.ledger_ids();
        ml.delete().await.unwrap();
        let store = pulsar_rs_ledger_bk::MetadataVersionedStore::connect(&cluster.zk_servers())
            .await
            .unwrap();
        assert!(store
            .get(&managed_ledger_path(name))
            .await
            .unwrap()
            .is_none());
        let bk =
            pulsar_rs_bookkeeper::zk_store::ZkStore::connect(&cluster.zk_servers(), "/ledgers")
                .await
                .unwrap();
        for id in ids {
            assert!(matches!(
                bk.read_ledger_metadata(id).await,
                Err(pulsar_rs_bookkeeper::BkError::NoSuchLedgerMetadata { .. })
            ));
        }
    });

    // A cursor as a Pulsar broker killed mid-way leaves it (written by Pulsar's own classes): its
    // position in a cursor ledger that was never closed. Opening it recovers (fences and closes)
    // that ledger and takes the position from its last entry.
    let name = "public/default/persistent/trim";
    let ids = rt.block_on(async {
        let ml = broker(&cluster, name, 2).await.unwrap();
        ml.ledger_ids()
    });
    // Mark-delete at entry 0, entry 2 acknowledged on its own (Pulsar's open-closed range (1, 2]).
    let first = ids[0];
    let out = mltool(
        &cluster,
        &[
            "pulsarcursor",
            &cluster.zk_servers(),
            name,
            "from-pulsar",
            &first.to_string(),
            "0",
            &first.to_string(),
            "2",
        ],
    );
    let cursor_ledger: i64 = tagged(&out, "CURSORLEDGER ")[0].parse().unwrap();
    rt.block_on(async {
        let ml = broker(&cluster, name, 2).await.unwrap();
        let c = ml.open_cursor("from-pulsar").await.unwrap();
        assert_eq!(c.mark_delete_position(), Position::new(first, 0));
        assert_eq!(c.individually_deleted(), vec![Position::new(first, 2)]);
        let bk =
            pulsar_rs_bookkeeper::zk_store::ZkStore::connect(&cluster.zk_servers(), "/ledgers")
                .await
                .unwrap();
        let (m, _) = bk.read_ledger_metadata(cursor_ledger).await.unwrap();
        assert_eq!(
            (m.state, m.last_entry_id),
            (pulsar_rs_bookkeeper::LedgerState::Closed, 0),
            "the cursor ledger was recovered and closed at its one entry"
        );
    });
}

#[test]
fn a_bookie_killed_while_producing_loses_no_acknowledged_entry() {
    const N: usize = 1500;
    let Some(home) = skip_unless_ready() else {
        return;
    };
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // E=3 on four bookies: one can die and be replaced.
    let cluster = Cluster::start(&home, 4);
    let rt = runtime();
    rt.block_on(async {
        let zk = cluster.wait_writable(4).await;
        let name = "public/default/persistent/bookie-dies";
        let a = broker(&cluster, name, 600).await.unwrap();
        let producer = {
            let a = Arc::clone(&a);
            tokio::spawn(async move {
                let mut acked = Vec::new();
                for window in (0..N).collect::<Vec<_>>().chunks(10) {
                    let adds: Vec<_> = window
                        .iter()
                        .map(|&i| {
                            let a = Arc::clone(&a);
                            tokio::spawn(async move { (i, a.add_entry(payload(i)).await) })
                        })
                        .collect();
                    for add in adds {
                        acked.push(add.await.unwrap());
                    }
                }
                acked
            })
        };
        while a.last_confirmed().entry_id < 100 {
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        let (m, _) = zk
            .read_ledger_metadata(a.current_ledger_id())
            .await
            .unwrap();
        let victim = m.ensembles[&0][1].clone();
        tokio::task::block_in_place(|| cluster.kill_bookie(&victim));
        let acked = tokio::time::timeout(std::time::Duration::from_secs(180), producer)
            .await
            .expect("every append completes after the ensemble change")
            .unwrap();
        let mut by_position = std::collections::BTreeMap::new();
        for (i, r) in acked {
            let p = r.unwrap_or_else(|e| panic!("entry {i} not acknowledged: {e}"));
            by_position.insert(p, payload(i));
        }
        assert_eq!(by_position.len(), N);
        assert!(
            a.ledger_ids().len() >= 3,
            "rolled over after the bookie died"
        );
        // The writer itself reads everything back too (old entries from the surviving copies).
        let own: std::collections::BTreeMap<Position, Bytes> =
            read_all(&a).await.into_iter().collect();
        assert_eq!(own, by_position);
        // Another broker takes over and reads every acknowledged entry back.
        let b = broker(&cluster, name, 600).await.unwrap();
        let read: std::collections::BTreeMap<Position, Bytes> =
            read_all(&b).await.into_iter().collect();
        assert_eq!(read, by_position);
        eprintln!(
            "killed {victim} at LAC >= 100 of ledger {}",
            a.ledger_ids()[0]
        );
    });
}

#[test]
fn a_broker_killed_while_producing_loses_no_acknowledged_entry() {
    const N: usize = 3000;
    let Some(home) = skip_unless_ready() else {
        return;
    };
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let cluster = Cluster::start(&home, 3);
    let name = "public/default/persistent/broker-dies";
    // Broker A runs on its own runtime; shutting that down drops its tasks and its connections
    // to the bookies and ZooKeeper mid-write, as a SIGKILL would.
    let acked: Arc<std::sync::Mutex<Vec<(usize, Position)>>> = Arc::default();
    let rt_a = runtime();
    rt_a.block_on(async {
        cluster.wait_writable(3).await;
        let a = broker(&cluster, name, 700).await.unwrap();
        let record = Arc::clone(&acked);
        tokio::spawn(async move {
            for window in (0..N).collect::<Vec<_>>().chunks(20) {
                let adds: Vec<_> = window
                    .iter()
                    .map(|&i| {
                        let a = Arc::clone(&a);
                        tokio::spawn(async move { (i, a.add_entry(payload(i)).await) })
                    })
                    .collect();
                for add in adds {
                    if let Ok((i, Ok(p))) = add.await {
                        record.lock().unwrap().push((i, p));
                    }
                }
            }
        });
        while acked.lock().unwrap().len() < 1000 {
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
    });
    rt_a.shutdown_background();
    let acked = acked.lock().unwrap().clone();
    assert!(
        acked.len() < N,
        "killed mid-way: {} of {N} acknowledged",
        acked.len()
    );
    let rt_b = runtime();
    rt_b.block_on(async {
        let b = broker(&cluster, name, 700).await.unwrap();
        let read: std::collections::BTreeMap<Position, Bytes> =
            read_all(&b).await.into_iter().collect();
        for (i, p) in &acked {
            assert_eq!(
                read.get(p),
                Some(&payload(*i)),
                "acknowledged entry {i} at {p:?}"
            );
        }
        // Nothing else but entries that were sent, each once.
        let sent: std::collections::HashSet<Bytes> = (0..N).map(payload).collect();
        assert!(read.values().all(|d| sent.contains(d)));
        let distinct: std::collections::HashSet<&Bytes> = read.values().collect();
        assert_eq!(distinct.len(), read.len());
        eprintln!("{} acknowledged, {} recovered", acked.len(), read.len());
    });
}
