//! This broker in a cluster: when `metadataStoreUrl` names a ZooKeeper or etcd, the broker joins
//! the cluster there ([`pulsar_rs_cluster::ClusterMember`]): it registers, owns namespace bundles,
//! answers lookups with Connect or Redirect, refuses producers and consumers of topics it does not
//! own, and closes the topics (and transaction coordinators) of a bundle it gives up so their
//! clients look them up again.

use std::sync::Arc;
use std::time::Duration;

use pulsar_rs_broker::BrokerConfig;
use pulsar_rs_cluster::{
    BrokerLoad, BrokerUrls, Bundle, ClusterError, ClusterMember, MemberConfig, ReportPolicy,
    StoreError,
};
use pulsar_rs_proto::ServerError as Wire;

use crate::context::ServerContext;
use crate::error::ServerError;

/// Joins the cluster the configuration names, if any (`None`: a broker on its own).
///
/// # Errors
/// The metadata store cannot be reached or refuses the registration.
pub async fn join(
    ctx: &Arc<ServerContext>,
    config: &BrokerConfig,
    broker_id: String,
    urls: BrokerUrls,
) -> Result<Option<Arc<ClusterMember>>, ServerError> {
    let Some(store) = config.cluster_metadata_store() else {
        return Ok(None);
    };
    let member_config = MemberConfig {
        metadata_store_url: store,
        configuration_store_url: config.configuration_metadata_store(),
        session_timeout: Duration::from_millis(
            config.metadata_store_session_timeout_millis.max(1000),
        ),
        cluster: config.cluster_name.clone(),
        broker_id,
        urls,
        default_bundles: config.default_number_of_namespace_bundles.max(1),
        report: ReportPolicy {
            threshold_percentage: config.load_balancer_report_update_threshold_percentage,
            min_interval: Duration::from_millis(
                config.load_balancer_report_update_min_interval_millis,
            ),
            max_interval: Duration::from_secs(
                config
                    .load_balancer_report_update_max_interval_minutes
                    .max(1)
                    * 60,
            ),
        },
        overloaded_threshold: config.load_balancer_broker_overloaded_threshold_percentage / 100.0,
    };
    let weak = Arc::downgrade(ctx);
    let on_release: pulsar_rs_cluster::OnRelease = Arc::new(move |bundles: Vec<Bundle>| {
        let weak = weak.clone();
        Box::pin(async move {
            let Some(ctx) = weak.upgrade() else { return };
            let service = Arc::clone(&ctx.service);
            // Closing a topic closes its ledger on the bookies: blocking pool.
            let handles = tokio::task::spawn_blocking(move || {
                let released = |name: &pulsar_rs_broker::TopicName| {
                    let full = name.to_string();
                    bundles.iter().any(|b| b.contains_topic(&full))
                };
                service.unload_coordinators_where(released);
                let mut handles = service.remove_non_persistent_where(released);
                handles.extend(service.unload_where(
                    |t| released(&t.name),
                    "bundle released: unloading the topic",
                ));
                handles
            })
            .await
            .unwrap_or_default();
            for h in handles {
                ctx.fence_producer(h);
            }
        })
    });
    let member = ClusterMember::start(member_config, on_release)
        .await
        .map_err(|e| ServerError::BadRequest(format!("joining the cluster: {e}")))?;
    let weak = Arc::downgrade(ctx);
    let owner = Arc::downgrade(&member);
    member.set_load_source(Arc::new(move || {
        let (Some(ctx), Some(member)) = (weak.upgrade(), owner.upgrade()) else {
            return BrokerLoad::default();
        };
        let owned: Vec<Bundle> = member
            .owned_bundles()
            .iter()
            .filter_map(|n| Bundle::parse(n).ok())
            .collect();
        super::load::broker_load(&ctx, &owned, &ctx.cpu)
    }));
    Ok(Some(member))
}

/// The wire code and message a cluster failure is answered with (Pulsar's `TopicLookupBase`:
/// metadata failures are `MetadataError`, everything else `ServiceNotReady`).
#[must_use]
pub fn wire(e: &ClusterError) -> (Wire, String) {
    let code = match e {
        ClusterError::Store(StoreError::SessionLost) => Wire::ServiceNotReady,
        ClusterError::Store(_) | ClusterError::NamespaceNotFound(_) => Wire::MetadataError,
        ClusterError::InvalidName(_) => Wire::InvalidTopicName,
        _ => Wire::ServiceNotReady,
    };
    (code, e.to_string())
}

/// In a cluster, brings the topics this broker knows of to the cluster's (created or deleted
/// through other brokers) before a namespace's topics are listed; a broker on its own skips it.
///
/// # Errors
/// Metadata store failures.
pub async fn refresh_known_topics(ctx: &Arc<ServerContext>) -> Result<(), ServerError> {
    if ctx.cluster.get().is_none() {
        return Ok(());
    }
    let svc = Arc::clone(&ctx.service);
    // Reads the metadata store: blocking pool.
    tokio::task::spawn_blocking(move || svc.refresh_known_topics())
        .await
        .map_err(|e| ServerError::BadRequest(format!("listing the cluster's topics: {e}")))?
        .map_err(ServerError::from)
}
