//! Against real ZooKeeper and Apache BookKeeper 4.17 bookies (see `common`): ledgers cross over
//! between this client and BookKeeper's own Java client in both directions, a recovery open fences
//! the old writer, and a bookie killed mid-write is replaced without losing an acknowledged entry.

mod common;

use std::time::Duration;

use common::{hex, skip_unless_ready, tagged, Cluster, SERIAL};
use pulsar_rs_bookkeeper::{BkError, BookKeeper, LedgerConfig, LedgerMetadata, LedgerState};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn config(e: usize, qw: usize, qa: usize, password: &[u8]) -> LedgerConfig {
    LedgerConfig {
        ensemble_size: e,
        write_quorum: qw,
        ack_quorum: qa,
        password: password.to_vec(),
        ..Default::default()
    }
}

fn payload(i: usize) -> Vec<u8> {
    format!("rust-entry-{i}-{}", "x".repeat(i % 7)).into_bytes()
}

/// Appends the entries of `range` in order with up to `window` in flight; returns each result.
async fn append_many(
    w: &pulsar_rs_bookkeeper::LedgerWriter,
    range: std::ops::Range<usize>,
    window: usize,
) -> Vec<pulsar_rs_bookkeeper::Result<i64>> {
    let mut out = Vec::new();
    let ids: Vec<usize> = range.collect();
    for chunk in ids.chunks(window) {
        let adds: Vec<_> = chunk
            .iter()
            .map(|&i| tokio::spawn(w.append(&payload(i))))
            .collect();
        for a in adds {
            out.push(a.await.unwrap());
        }
    }
    out
}

#[test]
fn ledger_written_by_us_is_read_by_bookkeepers_java_client() {
    let Some(home) = skip_unless_ready() else {
        return;
    };
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let cluster = Cluster::start(&home, 3);
    let rt = runtime();
    let (ledger_id, n) = rt.block_on(async {
        cluster.wait_writable(3).await;
        let bk = BookKeeper::connect(&cluster.uri(), Duration::from_secs(10))
            .await
            .unwrap();
        let w = bk.create_ledger(&config(3, 2, 2, b"pw")).await.unwrap();
        let ids = append_many(&w, 0..40, 8).await;
        let ids: Vec<i64> = ids.into_iter().map(|r| r.unwrap()).collect();
        assert_eq!(ids, (0..40).collect::<Vec<i64>>(), "in-order entry ids");
        assert_eq!(w.last_add_confirmed(), 39);
        // Too big for a bookie's frame: refused up front, no entry id spent, the ledger goes on.
        let big = vec![0u8; 5 * 1024 * 1024];
        assert!(matches!(
            w.append(&big).await,
            Err(BkError::InvalidArgument(_))
        ));
        w.close().await.unwrap();
        let (m, _) = bk.store().read_ledger_metadata(w.id()).await.unwrap();
        assert_eq!((m.state, m.last_entry_id), (LedgerState::Closed, 39));
        assert_eq!(
            m.length,
            (0..40).map(|i| payload(i).len() as i64).sum::<i64>()
        );
        // Our reader too, entry by entry and the LAC.
        let r = bk.open_ledger_no_recovery(w.id(), b"pw").await.unwrap();
        assert_eq!(r.read_last_add_confirmed().await.unwrap(), 39);
        (w.id(), 40)
    });
    let out = cluster.bktool(&["read", &cluster.zk_servers(), &ledger_id.to_string(), "pw"]);
    assert_eq!(tagged(&out, "LAST "), vec!["39"], "{out}");
    let entries = tagged(&out, "ENTRY ");
    assert_eq!(entries.len(), n);
    for (i, line) in entries.iter().enumerate() {
        assert_eq!(*line, format!("{i} {}", hex(&payload(i))));
    }
}

#[test]
fn ledger_written_by_bookkeepers_java_client_is_read_by_us() {
    let Some(home) = skip_unless_ready() else {
        return;
    };
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let cluster = Cluster::start(&home, 3);
    let rt = runtime();
    rt.block_on(cluster.wait_writable(3));
    let out = cluster.bktool(&[
        "write",
        &cluster.zk_servers(),
        "3",
        "2",
        "2",
        "secret",
        "25",
    ]);
    let ledger_id: i64 = tagged(&out, "LEDGER ")[0].parse().unwrap();
    rt.block_on(async {
        let bk = BookKeeper::connect(&cluster.uri(), Duration::from_secs(10))
            .await
            .unwrap();
        // BookKeeper's metadata bytes parse, and re-serialize to the very same bytes.
        let zk = zookeeper_client::Client::connect(&cluster.zk_servers())
            .await
            .unwrap();
        let (raw, _) = zk
            .get_data(&pulsar_rs_bookkeeper::ledger_path("/ledgers", ledger_id))
            .await
            .unwrap();
        let m = LedgerMetadata::parse(&raw).unwrap();
        assert_eq!(m.serialize(), raw, "metadata re-serializes byte for byte");
        assert_eq!(
            (m.ensemble_size, m.write_quorum, m.ack_quorum, m.state),
            (3, 2, 2, LedgerState::Closed)
        );
        assert_eq!(m.password, b"secret");

        assert!(matches!(
            bk.open_ledger(ledger_id, b"wrong").await,
            Err(BkError::Unauthorized { .. })
        ));
        let r = bk.open_ledger(ledger_id, b"secret").await.unwrap();
        assert_eq!(r.last_entry_id(), Some(24));
        let entries = r.read_entries(0, 24).await.unwrap();
        for (i, e) in entries.iter().enumerate() {
            assert_eq!(e.entry_id, i as i64);
            assert_eq!(&e.payload[..], format!("java-entry-{i}").as_bytes());
        }
    });
}

#[test]
fn recovery_open_fences_the_old_writer() {
    let Some(home) = skip_unless_ready() else {
        return;
    };
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let cluster = Cluster::start(&home, 3);
    let rt = runtime();
    let ledger_id = rt.block_on(async {
        cluster.wait_writable(3).await;
        let old = BookKeeper::connect(&cluster.uri(), Duration::from_secs(10))
            .await
            .unwrap();
        let w = old.create_ledger(&config(3, 2, 2, b"")).await.unwrap();
        for r in append_many(&w, 0..30, 5).await {
            r.unwrap();
        }
        // A second client takes the ledger over, as a new Pulsar owner does.
        let new = BookKeeper::connect(&cluster.uri(), Duration::from_secs(10))
            .await
            .unwrap();
        let r = new.open_ledger(w.id(), b"").await.unwrap();
        assert_eq!(
            r.last_entry_id(),
            Some(29),
            "recovered last entry is the last acknowledged one"
        );
        assert_eq!(r.read_entry(29).await.unwrap().payload, payload(29));
        // The old writer's next add is refused by the fenced bookies.
        let err = w.append(b"after fencing").await.unwrap_err();
        assert!(matches!(err, BkError::Fenced { .. }), "got {err}");
        assert!(matches!(
            w.append(b"again").await,
            Err(BkError::Fenced { .. })
        ));
        // Nor can it close the ledger at another entry.
        assert!(w.close().await.is_err());
        let (m, _) = new.store().read_ledger_metadata(w.id()).await.unwrap();
        assert_eq!((m.state, m.last_entry_id), (LedgerState::Closed, 29));
        w.id()
    });
    let out = cluster.bktool(&["read", &cluster.zk_servers(), &ledger_id.to_string(), ""]);
    assert_eq!(tagged(&out, "LAST "), vec!["29"], "{out}");
}

#[test]
fn recovery_of_a_writer_that_died_mid_ledger() {
    let Some(home) = skip_unless_ready() else {
        return;
    };
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let cluster = Cluster::start(&home, 3);
    let rt = runtime();
    rt.block_on(async {
        cluster.wait_writable(3).await;
        let bk = BookKeeper::connect(&cluster.uri(), Duration::from_secs(10))
            .await
            .unwrap();
        // Empty open ledger: recovers to -1.
        let empty = bk.create_ledger(&config(2, 2, 2, b"")).await.unwrap();
        let r = bk.open_ledger(empty.id(), b"").await.unwrap();
        assert_eq!((r.last_entry_id(), r.metadata().length), (Some(-1), 0));
        // The writer stops without closing: the last entries' LAC was never piggybacked further, so
        // recovery must read forward past the LAC the bookies report and re-replicate.
        let w = bk.create_ledger(&config(3, 3, 2, b"")).await.unwrap();
        for r in append_many(&w, 0..12, 1).await {
            r.unwrap();
        }
        // A reader without recovery sees the LAC the bookies carry: entry 11 says 10 is confirmed.
        let tail = bk.open_ledger_no_recovery(w.id(), b"").await.unwrap();
        assert_eq!(tail.last_entry_id(), None, "still open");
        assert_eq!(tail.read_last_add_confirmed().await.unwrap(), 10);
        assert_eq!(tail.read_entry(10).await.unwrap().payload, payload(10));
        let r = bk.open_ledger(w.id(), b"").await.unwrap();
        assert_eq!(r.last_entry_id(), Some(11));
        assert_eq!(
            r.metadata().length,
            (0..12).map(|i| payload(i).len() as i64).sum::<i64>()
        );
        let all = r.read_entries(0, 11).await.unwrap();
        assert_eq!(all[11].payload, payload(11));
    });
}

#[test]
fn ensemble_change_when_a_bookie_dies_mid_write() {
    // Enough entries that most are written after the bookie dies, even in a release build.
    const N: usize = 5000;
    let Some(home) = skip_unless_ready() else {
        return;
    };
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let cluster = Cluster::start(&home, 3);
    let rt = runtime();
    let (ledger_id, victim) = rt.block_on(async {
        cluster.wait_writable(3).await;
        let bk = BookKeeper::connect(&cluster.uri(), Duration::from_secs(10))
            .await
            .unwrap();
        let w = bk.create_ledger(&config(2, 2, 2, b"")).await.unwrap();
        let victim = w.metadata().ensembles[&0][1].clone();
        // Write N entries, 10 in flight; the bookie dies once 100 are acknowledged.
        let writer = {
            let w = w.clone();
            tokio::spawn(async move { append_many(&w, 0..N, 10).await })
        };
        while w.last_add_confirmed() < 100 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        tokio::task::block_in_place(|| cluster.kill_bookie(&victim));
        let killed_at = w.last_add_confirmed();
        let results = tokio::time::timeout(Duration::from_secs(120), writer)
            .await
            .expect("every add completes (none stuck after the ensemble change)")
            .unwrap();
        for (i, r) in results.iter().enumerate() {
            assert_eq!(
                r.as_ref().map_err(|e| e.to_string()),
                Ok(&(i as i64)),
                "entry {i}"
            );
        }
        let m = w.metadata();
        assert_eq!(
            m.ensembles.len(),
            2,
            "one ensemble change: {:?}",
            m.ensembles
        );
        let (first, last_ensemble) = m.last_ensemble();
        assert!(first > 100 && (first as usize) < N, "changed at {first}");
        assert!(
            first <= killed_at + 20,
            "changed at {first}, bookie killed at LAC {killed_at}"
        );
        assert!(!last_ensemble.contains(&victim));
        w.close().await.unwrap();
        // Every acknowledged entry reads back (old ones from the surviving copy).
        let r = bk.open_ledger(w.id(), b"").await.unwrap();
        assert_eq!(r.last_entry_id(), Some(N as i64 - 1));
        let all = r.read_entries(0, N as i64 - 1).await.unwrap();
        for (i, e) in all.iter().enumerate() {
            assert_eq!(e.payload, payload(i));
        }
        (w.id(), victim)
    });
    let out = cluster.bktool(&["read", &cluster.zk_servers(), &ledger_id.to_string(), ""]);
    assert_eq!(tagged(&out, "LAST "), vec![(N - 1).to_string()], "{out}");
    let entries = tagged(&out, "ENTRY ");
    assert_eq!(entries.len(), N);
    for (i, line) in entries.iter().enumerate() {
        assert_eq!(*line, format!("{i} {}", hex(&payload(i))));
    }
    eprintln!("killed {victim}; {}", tagged(&out, "ENSEMBLES ")[0]);
}

#[test]
fn fencing_works_across_clients_in_both_directions() {
    use std::io::{BufRead, BufReader, Write};
    let Some(home) = skip_unless_ready() else {
        return;
    };
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let cluster = Cluster::start(&home, 3);
    let rt = runtime();
    rt.block_on(cluster.wait_writable(3));

    // BookKeeper's Java writer holds a ledger open; our recovery open fences it.
    let mut java = cluster.bktool_spawn(&["hold", &cluster.zk_servers(), "3", "2", "2", "pw", "7"]);
    let mut lines = BufReader::new(java.stdout.take().unwrap()).lines();
    // BookKeeper logs to stdout too: take the first line with the tag.
    let mut tagged_line = |tag: &str| loop {
        let line = lines.next().expect("BkTool ended early").unwrap();
        if let Some(rest) = line.strip_prefix(tag) {
            break rest.to_string();
        }
    };
    let java_ledger: i64 = tagged_line("LEDGER ").parse().unwrap();
    let bk = rt
        .block_on(BookKeeper::connect(&cluster.uri(), Duration::from_secs(10)))
        .unwrap();
    let r = rt.block_on(bk.open_ledger(java_ledger, b"pw")).unwrap();
    assert_eq!(r.last_entry_id(), Some(6));
    java.stdin.take().unwrap().write_all(b"go\n").unwrap();
    assert_eq!(tagged_line("ADD "), "FAILED BKLedgerFencedException");
    java.wait().unwrap();

    // Our writer holds a ledger open; BookKeeper's Java client recovers it and fences us.
    let w = rt.block_on(async {
        let w = bk.create_ledger(&config(3, 2, 2, b"pw")).await.unwrap();
        for r in append_many(&w, 0..9, 3).await {
            r.unwrap();
        }
        w
    });
    let out = cluster.bktool(&["read", &cluster.zk_servers(), &w.id().to_string(), "pw"]);
    assert_eq!(tagged(&out, "LAST "), vec!["8"], "{out}");
    let err = rt.block_on(async { w.append(b"late").await }).unwrap_err();
    assert!(matches!(err, BkError::Fenced { .. }), "got {err}");
}

#[test]
fn recovery_replaces_a_dead_bookie_of_the_write_set() {
    let Some(home) = skip_unless_ready() else {
        return;
    };
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // Bookies known by id only: the recovering client never saw the dead one's address.
    let mut cluster = Cluster::start(&home, 0);
    for i in 0..4 {
        cluster.start_bookie_with_id(i, Some(&format!("bookie-{i}")));
    }
    let rt = runtime();
    let ledger_id = rt.block_on(async {
        cluster.wait_writable(4).await;
        let bk = BookKeeper::connect(&cluster.uri(), Duration::from_secs(10))
            .await
            .unwrap();
        let w = bk.create_ledger(&config(3, 2, 2, b"")).await.unwrap();
        // One at a time: entry 19 is on its bookies but no later entry told them it is confirmed.
        for r in append_many(&w, 0..20, 1).await {
            r.unwrap();
        }
        // Entry 19's write set is ensemble positions 1 and 2; position 1 dies with the writer.
        let victim = w.metadata().ensembles[&0][1].clone();
        tokio::task::block_in_place(|| cluster.kill_bookie(&victim));
        let id = w.id();
        drop(w);
        let bk2 = BookKeeper::connect(&cluster.uri(), Duration::from_secs(10))
            .await
            .unwrap();
        let r = bk2.open_ledger(id, b"").await.unwrap();
        assert_eq!(r.last_entry_id(), Some(19));
        let m = r.metadata();
        assert_eq!(m.ensembles.len(), 2, "{:?}", m.ensembles);
        assert!(!m.ensembles[&19].contains(&victim));
        let all = r.read_entries(0, 19).await.unwrap();
        for (i, e) in all.iter().enumerate() {
            assert_eq!(e.payload, payload(i));
        }
        r.id()
    });
    let out = cluster.bktool(&["read", &cluster.zk_servers(), &ledger_id.to_string(), ""]);
    assert_eq!(tagged(&out, "LAST "), vec!["19"], "{out}");
    assert_eq!(tagged(&out, "ENTRY ").len(), 20);
}

#[test]
fn bookies_registered_under_custom_ids_are_resolved() {
    let Some(home) = skip_unless_ready() else {
        return;
    };
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut cluster = Cluster::start(&home, 0);
    for (i, id) in ["bookie-a", "bookie-b", "bookie-c"].iter().enumerate() {
        cluster.start_bookie_with_id(i, Some(id));
    }
    let rt = runtime();
    let ledger_id = rt.block_on(async {
        let store = cluster.wait_writable(3).await;
        assert_eq!(
            store.writable_bookies().await.unwrap(),
            vec!["bookie-a", "bookie-b", "bookie-c"]
        );
        let bk = BookKeeper::connect(&cluster.uri(), Duration::from_secs(10))
            .await
            .unwrap();
        let w = bk.create_ledger(&config(2, 2, 2, b"")).await.unwrap();
        for r in append_many(&w, 0..6, 3).await {
            r.unwrap();
        }
        // A bookie known only by its id dies: it unregisters, and is replaced all the same.
        let victim = w.metadata().ensembles[&0][0].clone();
        tokio::task::block_in_place(|| cluster.kill_bookie(&victim));
        for r in append_many(&w, 6..12, 3).await {
            r.unwrap();
        }
        assert_eq!(w.metadata().ensembles.len(), 2);
        w.close().await.unwrap();
        let r = bk.open_ledger(w.id(), b"").await.unwrap();
        for e in r.read_entries(0, 11).await.unwrap() {
            assert_eq!(e.payload, payload(e.entry_id as usize));
        }
        w.id()
    });
    let out = cluster.bktool(&["read", &cluster.zk_servers(), &ledger_id.to_string(), ""]);
    assert_eq!(tagged(&out, "ENTRY ").len(), 12, "{out}");
    assert!(tagged(&out, "ENSEMBLES ")[0].contains("bookie-"), "{out}");
}

#[test]
fn ensemble_change_loses_to_a_recovery_that_changed_the_metadata() {
    let Some(home) = skip_unless_ready() else {
        return;
    };
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let cluster = Cluster::start(&home, 3);
    let rt = runtime();
    rt.block_on(async {
        cluster.wait_writable(3).await;
        let bk = BookKeeper::connect(&cluster.uri(), Duration::from_secs(10))
            .await
            .unwrap();
        let w = bk.create_ledger(&config(2, 2, 2, b"")).await.unwrap();
        for r in append_many(&w, 0..5, 5).await {
            r.unwrap();
        }
        // Another client starts recovering: the metadata goes IN_RECOVERY (a new version), before
        // it got to fence the bookies.
        let other = BookKeeper::connect(&cluster.uri(), Duration::from_secs(10))
            .await
            .unwrap();
        let (mut m, v) = other.store().read_ledger_metadata(w.id()).await.unwrap();
        m.state = LedgerState::InRecovery;
        other
            .store()
            .write_ledger_metadata(w.id(), &m, v)
            .await
            .unwrap();
        // Now a bookie of the writer's ensemble dies: its ensemble change must not overwrite the
        // recovery's metadata; the writer is fenced instead.
        let victim = w.metadata().ensembles[&0][0].clone();
        tokio::task::block_in_place(|| cluster.kill_bookie(&victim));
        let err = w.append(b"during recovery").await.unwrap_err();
        assert!(matches!(err, BkError::Fenced { .. }), "got {err}");
        let (m, _) = other.store().read_ledger_metadata(w.id()).await.unwrap();
        assert_eq!(m.state, LedgerState::InRecovery);
        assert_eq!(
            m.ensembles.len(),
            1,
            "no ensemble written over the recovery: {:?}",
            m.ensembles
        );
    });
}

/// Not a correctness test: how fast pipelined appends go on three local bookies.
/// `cargo test -p pulsar-rs-bookkeeper --test bookies -- --ignored --nocapture pipelined`
#[test]
#[ignore]
fn pipelined_append_throughput() {
    let Some(home) = skip_unless_ready() else {
        return;
    };
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let cluster = Cluster::start(&home, 3);
    let rt = runtime();
    rt.block_on(async {
        cluster.wait_writable(3).await;
        let bk = BookKeeper::connect(&cluster.uri(), Duration::from_secs(30)).await.unwrap();
        let body = vec![7u8; 1024];
        for (window, n) in [(1usize, 2_000usize), (1000, 20_000)] {
            let w = bk.create_ledger(&config(2, 2, 2, b"")).await.unwrap();
            let start = pulsar_rs_clock::monotonic();
            let mut inflight = std::collections::VecDeque::new();
            for _ in 0..n {
                inflight.push_back(tokio::spawn(w.append(&body)));
                if inflight.len() >= window {
                    inflight.pop_front().unwrap().await.unwrap().unwrap();
                }
            }
            for a in inflight {
                a.await.unwrap().unwrap();
            }
            let secs = start.elapsed().as_secs_f64();
            eprintln!(
                "E=Qw=Qa=2, 1 KiB entries, {window} in flight: {n} entries in {secs:.2} s = {:.0} entries/s",
                n as f64 / secs
            );
            w.close().await.unwrap();
        }
    });
}

#[test]
fn long_ledger_ids_once_idgen_long_exists() {
    let Some(home) = skip_unless_ready() else {
        return;
    };
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let cluster = Cluster::start(&home, 2);
    let rt = runtime();
    let ids = rt.block_on(async {
        cluster.wait_writable(2).await;
        let bk = BookKeeper::connect(&cluster.uri(), Duration::from_secs(10))
            .await
            .unwrap();
        let short = bk.create_ledger(&config(2, 2, 2, b"")).await.unwrap();
        assert!(short.id() < i64::from(i32::MAX));
        // As after 2^31 ledgers: the 63-bit generator takes over for good.
        let zk = zookeeper_client::Client::connect(&cluster.zk_servers())
            .await
            .unwrap();
        let opts = zookeeper_client::CreateMode::Persistent
            .with_acls(zookeeper_client::Acls::anyone_all());
        zk.create("/ledgers/idgen-long", &[], &opts).await.unwrap();
        let w = bk.create_ledger(&config(2, 2, 2, b"")).await.unwrap();
        assert_eq!(w.id() >> 32, 1, "first HOB directory is 1: {}", w.id());
        let (_, stat) = zk
            .get_data(&pulsar_rs_bookkeeper::ledger_path("/ledgers", w.id()))
            .await
            .unwrap();
        assert_eq!(stat.version, 0);
        for r in append_many(&w, 0..3, 3).await {
            r.unwrap();
        }
        w.close().await.unwrap();
        let next = bk.create_ledger(&config(2, 2, 2, b"")).await.unwrap();
        assert_eq!(next.id(), w.id() + 1);
        w.id()
    });
    // BookKeeper's Java client finds it at the long hierarchical path and reads it.
    let out = cluster.bktool(&["read", &cluster.zk_servers(), &ids.to_string(), ""]);
    assert_eq!(tagged(&out, "ENTRY ").len(), 3, "{out}");
}
