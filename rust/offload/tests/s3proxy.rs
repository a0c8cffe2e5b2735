//! The offloader against a real S3Proxy 2.6.0: a ledger of several blocks written, read back
//! whole, by ranges and by single entries in random order; the objects' names, layout and
//! `x-amz-meta-*` metadata are Pulsar's; a missing index, an oversized entry and a missing
//! bucket fail cleanly; delete removes both objects; an outage is an Offload error that passes
//! once S3Proxy is back.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::{offloader, MemLedger, Rng, S3Proxy};
use pulsar_rs_ledger::offload::random_uid;
use pulsar_rs_ledger::{LedgerError, LedgerOffloader, OffloadSource};
use pulsar_rs_offload::format::{block, index, names};
use pulsar_rs_offload::s3::S3Client;
use pulsar_rs_offload::BlobStoreOffloader;

const BUCKET: &str = "pulsar-offload";
const ML: &str = "public/default/persistent/offload-test";

fn extra() -> BTreeMap<String, String> {
    BTreeMap::from([("ManagedLedgerName".to_string(), ML.to_string())])
}

fn offload_err(r: Result<impl std::fmt::Debug, LedgerError>) -> String {
    match r {
        Err(LedgerError::Offload { context }) => context,
        other => panic!("expected an Offload error, got {other:?}"),
    }
}

/// Runs one client call on the offloader's runtime.
fn raw<T: Send + 'static, Fut>(o: &BlobStoreOffloader, f: impl FnOnce(S3Client) -> Fut) -> T
where
    Fut: std::future::Future<Output = Result<T, pulsar_rs_offload::s3::S3Error>> + Send + 'static,
{
    o.with_client(|c| {
        let fut = f(c);
        async move {
            fut.await.map_err(|e| LedgerError::Offload {
                context: e.to_string(),
            })
        }
    })
    .expect("raw S3 call")
}

fn list(o: &BlobStoreOffloader) -> Vec<String> {
    let mut keys = raw(o, |c| async move { c.list_objects(BUCKET, "").await });
    keys.sort();
    keys
}

#[test]
fn offload_read_back_metadata_and_delete() {
    let proxy = S3Proxy::start();
    let o = offloader(&proxy, BUCKET);
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    // ~2000 entries of 0..12 KB: about 12 MB, so three 5 MiB blocks.
    let ledger = MemLedger::random(42, 2000, 12_000, &mut rng);
    let uid = random_uid();
    o.offload(&ledger, uid, &extra()).expect("offload");

    let data_key = names::data_key(uid, 42);
    let index_key = names::index_key(uid, 42);
    assert_eq!(list(&o), vec![data_key.clone(), index_key.clone()]);

    // The index, raw: Pulsar's layout and metadata.
    let ik = index_key.clone();
    let got = raw(&o, |c| async move { c.get_object(BUCKET, &ik, None).await });
    assert_eq!(got.metadata["s3managedledgeroffloaderformatversion"], "1");
    assert_eq!(got.metadata["role"], "index");
    assert_eq!(got.metadata["managedledgername"], ML);
    for k in [
        "s3managedledgeroffloadersoftwareversion",
        "s3managedledgeroffloadersoftwaregitsha",
        "pulsarclustername",
    ] {
        assert!(got.metadata.contains_key(k), "{k} in {:?}", got.metadata);
    }
    assert_eq!(&got.body[0..4], &[0xDE, 0x47, 0xDE, 0x47]);
    let idx = index::parse(&got.body).expect("index parses");
    assert!(idx.entries.len() >= 2, "{} blocks", idx.entries.len());
    assert_eq!(idx.data_header_length, 128);
    assert_eq!(idx.metadata.last_entry_id, 1999);
    assert_eq!(idx.metadata.length, ledger.length());
    assert_eq!(idx.metadata.custom["pulsar/managed-ledger"], ML);
    let mut offset = 0;
    for (i, e) in idx.entries.iter().enumerate() {
        assert_eq!(e.part_id, i as i32 + 1);
        assert_eq!(e.block_offset, offset);
        offset += if i + 1 < idx.entries.len() {
            5 << 20
        } else {
            0
        };
    }
    assert_eq!(idx.entries[0].first_entry_id, 0);

    // The data object, raw: its size is the index's, every block's header is right.
    let dk = data_key.clone();
    let head = raw(&o, |c| async move { c.head_object(BUCKET, &dk).await }).expect("data object");
    assert_eq!(head.size, idx.data_object_length);
    assert_eq!(head.metadata["role"], "data");
    assert_eq!(head.metadata["s3managedledgeroffloaderformatversion"], "1");
    assert_eq!(head.metadata["managedledgername"], ML);
    for (i, e) in idx.entries.iter().enumerate() {
        let (dk, at) = (data_key.clone(), e.block_offset);
        let h = raw(&o, |c| async move {
            c.get_object(BUCKET, &dk, Some(at..at + 128)).await
        });
        assert_eq!(h.metadata["s3managedledgeroffloaderformatversion"], "1");
        let header = block::BlockHeader::decode(&h.body).expect("block header");
        assert_eq!(header.first_entry_id, e.first_entry_id);
        let end = idx
            .entries
            .get(i + 1)
            .map_or(idx.data_object_length, |n| n.block_offset);
        assert_eq!(header.block_len, end - e.block_offset);
    }

    // Read back: whole, by ranges, single entries in random order.
    let meta = o.driver_metadata();
    let r = o.open_offloaded(42, uid, &meta).expect("open");
    assert_eq!(r.last_entry_id(), 1999);
    assert_eq!(r.length(), ledger.length());
    assert_eq!(r.read(0, 1999).expect("read all"), ledger.entries);
    let mut first = 0i64;
    while first <= 1999 {
        let last = (first + rng.below(150) as i64).min(1999);
        let got = r.read(first, last).expect("range");
        assert_eq!(
            got,
            ledger.entries[first as usize..=last as usize],
            "{first}..={last}"
        );
        first = last + 1;
    }
    for _ in 0..300 {
        let e = rng.below(2000) as i64;
        assert_eq!(
            r.read(e, e).expect("entry")[0],
            ledger.entries[e as usize],
            "entry {e}"
        );
    }
    // Ranges that cross blocks, backwards.
    for e in idx.entries.iter().skip(1).rev() {
        let f = e.first_entry_id;
        let got = r.read(f - 3, f + 3).expect("across blocks");
        assert_eq!(got, ledger.entries[(f - 3) as usize..=(f + 3) as usize]);
    }
    assert!(offload_err(r.read(1999, 2000)).contains("out of"));

    // A missing index is a clear error.
    let missing = offload_err(o.open_offloaded(42, random_uid(), &meta).map(|_| ()));
    assert!(missing.contains("does not exist"), "{missing}");
    assert!(missing.contains("NoSuchKey"), "{missing}");

    // Delete removes both objects; again is fine.
    o.delete_offloaded(42, uid, &meta).expect("delete");
    assert!(list(&o).is_empty(), "{:?}", list(&o));
    o.delete_offloaded(42, uid, &meta).expect("delete again");
    drop(r);
}

#[test]
fn bad_ledgers_and_buckets_leave_nothing_behind() {
    let proxy = S3Proxy::start();
    let o = offloader(&proxy, BUCKET);
    // An entry a 5 MiB block cannot hold: refused before any upload.
    let max = block::max_entry_size(5 << 20) as usize;
    let ledger = MemLedger {
        id: 7,
        entries: vec![
            bytes::Bytes::from(vec![1u8; 10]),
            bytes::Bytes::from(vec![2u8; max + 1]),
        ],
    };
    let err = offload_err(o.offload(&ledger, random_uid(), &extra()));
    assert!(err.contains("entry 1 has"), "{err}");
    // The same entry in a later block: the upload is aborted.
    let mut rng = Rng(7);
    let mut big = MemLedger::random(8, 600, 12_000, &mut rng);
    big.entries.push(bytes::Bytes::from(vec![3u8; max + 1]));
    let err = offload_err(o.offload(&big, random_uid(), &extra()));
    assert!(err.contains("entry 600 has"), "{err}");
    // The largest entry that fits is fine.
    let fits = MemLedger {
        id: 9,
        entries: vec![
            bytes::Bytes::from(vec![4u8; max]),
            bytes::Bytes::from(vec![5u8; 3]),
        ],
    };
    let uid = random_uid();
    o.offload(&fits, uid, &extra()).expect("largest entry");
    let r = o
        .open_offloaded(9, uid, &o.driver_metadata())
        .expect("open");
    assert_eq!(r.read(0, 1).expect("read"), fits.entries);
    let keys: Vec<String> = list(&o)
        .into_iter()
        .filter(|k| !k.starts_with(&pulsar_rs_ledger::offload::uuid_string(uid)))
        .collect();
    assert!(
        keys.iter().all(|k| !k.contains("-ledger-")),
        "objects left behind: {keys:?}"
    );
    // A bucket that does not exist.
    let mut meta = o.driver_metadata();
    meta.insert("bucket".into(), "no-such-bucket".into());
    let err = offload_err(o.open_offloaded(9, uid, &meta).map(|_| ()));
    assert!(err.contains("no-such-bucket"), "{err}");
}

#[test]
fn outage_is_an_offload_error_then_reads_resume() {
    let mut proxy = S3Proxy::start();
    let o = offloader(&proxy, BUCKET);
    let mut rng = Rng(99);
    // ~4 MB in one block: more than the 1 MiB read buffer.
    let ledger = MemLedger::random(3, 400, 20_000, &mut rng);
    let uid = random_uid();
    o.offload(&ledger, uid, &extra()).expect("offload");
    let meta = o.driver_metadata();
    let r = o.open_offloaded(3, uid, &meta).expect("open");
    assert_eq!(r.read(0, 0).expect("first")[0], ledger.entries[0]);

    proxy.stop();
    let start = Instant::now();
    let err = offload_err(r.read(399, 399));
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "took {:?}",
        start.elapsed()
    );
    assert!(err.contains("ConnectionFailed"), "{err}");
    let err = offload_err(o.open_offloaded(3, uid, &meta).map(|_| ()));
    assert!(err.contains("index"), "{err}");

    proxy.restart();
    assert_eq!(
        r.read(399, 399).expect("after restart")[0],
        ledger.entries[399]
    );
    let r2 = o.open_offloaded(3, uid, &meta).expect("open after restart");
    assert_eq!(r2.read(0, 399).expect("all"), ledger.entries);
}
