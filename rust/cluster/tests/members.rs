//! Three cluster members on a real ZooKeeper (from the Apache Pulsar distribution, as the
//! BookKeeper tests start it), and again on a real etcd: one leader; lookups through any member,
//! followed as a client follows them, end at one owner per topic and spread the bundles; concurrent acquisitions of
//! one bundle have one winner; a member that leaves releases its bundles (its topics closed
//! first) and the leadership passes on. Skipped (with a message) without the distribution.

#[path = "../../bookkeeper/tests/common/mod.rs"]
mod common;
#[path = "../../metadata_store/tests/etcd/mod.rs"]
mod etcd;

use std::collections::{BTreeSet, HashMap};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{skip_unless_ready, Cluster, SERIAL};
use pulsar_rs_cluster::member::Owner;
use pulsar_rs_cluster::{BrokerUrls, Bundle, ClusterMember, LookupAnswer, MemberConfig};

fn urls(i: usize) -> BrokerUrls {
    BrokerUrls {
        service: format!("pulsar://127.0.0.1:{}", 6650 + i),
        service_tls: None,
        web: format!("http://127.0.0.1:{}", 8080 + i),
        web_tls: None,
    }
}

type Released = Arc<Mutex<Vec<String>>>;

async fn member(zk: &str, i: usize, released: &Released) -> Arc<ClusterMember> {
    let config = MemberConfig {
        metadata_store_url: zk.to_owned(),
        configuration_store_url: None,
        session_timeout: Duration::from_secs(6),
        cluster: "test".into(),
        broker_id: format!("127.0.0.1:{}", 8080 + i),
        urls: urls(i),
        default_bundles: 4,
        report: pulsar_rs_cluster::ReportPolicy::default(),
        overloaded_threshold: 0.85,
    };
    let released = Arc::clone(released);
    ClusterMember::start(
        config,
        Arc::new(move |bundles: Vec<Bundle>| {
            let released = Arc::clone(&released);
            Box::pin(async move {
                released
                    .lock()
                    .unwrap()
                    .extend(bundles.iter().map(Bundle::name));
            })
        }),
    )
    .await
    .expect("member starts")
}

/// Follows a lookup as a client does: from `first`, Redirects go to the member at the URL given
/// with the flag given, until a Connect.
async fn resolve(members: &[Arc<ClusterMember>], first: usize, topic: &str) -> (String, usize) {
    let by_url: HashMap<String, usize> = members
        .iter()
        .enumerate()
        .map(|(i, m)| (m.urls().service.clone(), i))
        .collect();
    let (mut at, mut authoritative, mut hops) = (first, false, 0);
    loop {
        match members[at].lookup(topic, authoritative).await.unwrap() {
            LookupAnswer::Connect(u) => return (u.service, hops),
            LookupAnswer::Redirect {
                urls,
                authoritative: a,
            } => {
                hops += 1;
                assert!(hops <= 2, "a lookup ends within two redirects");
                at = by_url[&urls.service];
                authoritative = a;
            }
        }
    }
}

#[test]
fn members_elect_one_leader_converge_on_owners_and_hand_over_when_one_leaves() {
    let Some(home) = skip_unless_ready() else {
        return;
    };
    let _serial = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let cluster = Cluster::start(&home, 0);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(scenario(cluster.zk_servers()));
    rt.block_on(a_lock_read_elsewhere_is_served_by_its_writer(
        cluster.zk_servers(),
    ));
}

/// The same members, the same checks, on etcd (`metadataStoreUrl=etcd:http://...`): leases
/// instead of sessions, key ranges instead of znodes, the same records.
#[test]
fn members_on_etcd_elect_one_leader_converge_on_owners_and_hand_over_when_one_leaves() {
    let Some(etcd) = etcd::Etcd::start() else {
        return;
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(scenario(etcd.url()));
    // Pulsar's paths, as Pulsar's etcd store keeps them: one key per record; nothing
    // ephemeral is left once every member has left.
    let keys = etcd.ctl(&["get", "/", "--prefix", "--keys-only"]);
    let keys: Vec<&str> = keys.lines().filter(|k| !k.is_empty()).collect();
    for key in [
        "/admin/policies/public/default",
        "/admin/policies/public",
        "/admin/clusters/test",
    ] {
        assert!(keys.contains(&key), "{key} not in {keys:?}");
    }
    assert!(
        !keys
            .iter()
            .any(|k| k.starts_with("/loadbalance/") || k.starts_with("/namespace/")),
        "{keys:?}"
    );
}

async fn scenario(zk: String) {
    let released: Released = Arc::default();
    let mut members = Vec::new();
    for i in 0..3 {
        members.push(member(&zk, i, &released).await);
    }
    let leaders: Vec<usize> = (0..3).filter(|&i| members[i].is_leader()).collect();
    assert_eq!(leaders, vec![0], "the first member leads, and only it");
    assert_eq!(members[2].brokers().await.unwrap().len(), 3);

    // Lookups through any member end at one owner; 16 bundles spread over the members.
    let mut owners = BTreeSet::new();
    for t in 0..24 {
        let topic = format!("persistent://public/default/t-{t}");
        let (owner, _) = resolve(&members, t % 3, &topic).await;
        for via in 0..3 {
            assert_eq!(resolve(&members, via, &topic).await.0, owner, "{topic}");
        }
        let serving: Vec<usize> = (0..3).filter(|&i| members[i].owns(&topic)).collect();
        assert_eq!(serving.len(), 1, "{topic} owned by {serving:?}");
        assert_eq!(members[serving[0]].urls().service, owner);
        owners.insert(owner);
    }
    assert!(owners.len() >= 2, "every bundle on one member: {owners:?}");

    // Three members racing for one unowned bundle: one wins, the others learn who.
    let ns = "public/default";
    let bounds = members[0].boundaries(ns).await.unwrap();
    let taken: BTreeSet<String> = members.iter().flat_map(|m| m.owned_bundles()).collect();
    let free = (0..bounds.len() - 1)
        .map(|i| Bundle {
            namespace: ns.into(),
            lo: bounds[i],
            hi: bounds[i + 1],
        })
        .find(|b| !taken.contains(&b.name()))
        .expect("a free bundle");
    let (a, b, c) = tokio::join!(
        members[0].acquire(&free),
        members[1].acquire(&free),
        members[2].acquire(&free)
    );
    let answers = [a.unwrap(), b.unwrap(), c.unwrap()];
    let winners: Vec<usize> = (0..3).filter(|&i| answers[i] == Owner::Me).collect();
    assert_eq!(winners.len(), 1, "{answers:?}");
    for (i, ans) in answers.iter().enumerate() {
        if i != winners[0] {
            assert_eq!(*ans, Owner::Other(urls(winners[0])));
        }
    }

    // The leader leaves in order: its bundles are released through the callback, the
    // leadership passes to another member, and its bundles can be taken again.
    let gone = members[0].owned_bundles();
    members[0].shutdown().await;
    let got: BTreeSet<String> = released.lock().unwrap().iter().cloned().collect();
    for b in &gone {
        assert!(got.contains(b), "{b} released through the callback");
    }
    let mut waited = 0;
    while !(members[1].is_leader() || members[2].is_leader()) {
        tokio::time::sleep(Duration::from_millis(200)).await;
        waited += 1;
        assert!(waited < 50, "no new leader within 10 s");
    }
    assert!(!(members[1].is_leader() && members[2].is_leader()));
    if let Some(b) = gone.first() {
        let bundle = Bundle::parse(b).unwrap();
        assert_eq!(members[1].acquire(&bundle).await.unwrap(), Owner::Me);
    }
    assert_eq!(members[1].brokers().await.unwrap().len(), 2);
    for m in &members[1..] {
        m.shutdown().await;
    }
}

/// A client sent to a member by a lookup that read the member's new ownership lock is served
/// there, even before the member's own write of the lock has returned: the member waits for
/// its acquisition instead of refusing the PRODUCER or SUBSCRIBE as "not served" (which the C++
/// client does not retry while it creates a consumer: `tests/cluster/test_three_brokers.py`
/// timed out so, now and then, right after the brokers started). On ZooKeeper only: its client
/// sends a request when it is made, whether or not the caller polls its answer again.
async fn a_lock_read_elsewhere_is_served_by_its_writer(zk: String) {
    let released: Released = Arc::default();
    let (a, b) = (
        member(&zk, 0, &released).await,
        member(&zk, 1, &released).await,
    );
    let topic = "persistent://public/default/read-early";
    let bundle = a.bundle_of(topic).await.unwrap();
    assert_eq!(a.owner(&bundle).await.unwrap(), None, "{bundle:?} is free");
    // The write of the lock goes out on the first poll; the acquisition is not polled again
    // until the other member has read the lock, as a busy runtime may leave it.
    let mut acquire = std::pin::pin!(a.acquire(&bundle));
    let first = std::future::poll_fn(|cx| std::task::Poll::Ready(acquire.as_mut().poll(cx))).await;
    assert!(first.is_pending(), "the acquisition waits for ZooKeeper");
    let mut waited = 0;
    while b.owner(&bundle).await.unwrap() != Some(Owner::Other(urls(0))) {
        // Polling ZooKeeper, which commits the write on its own thread.
        tokio::time::sleep(Duration::from_millis(5)).await;
        waited += 1;
        assert!(waited < 2000, "the lock never showed");
    }
    // The other member's lookup answers Connect to `a`; the client's SUBSCRIBE comes to `a`.
    let (served, acquired) = tokio::join!(a.serves(topic), acquire);
    assert!(
        served,
        "{topic}: refused by the member whose lock the lookup read"
    );
    assert_eq!(acquired.unwrap(), Owner::Me);
    a.shutdown().await;
    b.shutdown().await;
}
