//! A connection's commands in a cluster: LOOKUP answered by the cluster member (Connect to the
//! owner, or Redirect with `authoritative`), PARTITIONED_METADATA from the cluster's store, and
//! the ownership check before a PRODUCER or SUBSCRIBE (`ServiceNotReady`: redo the lookup).

use std::sync::Arc;

use pulsar_rs_broker::{BrokerError, TopicName};
use pulsar_rs_cluster::{ClusterMember, LookupAnswer};
use pulsar_rs_proto::{commands, pb, BaseCommand, ServerError as Wire};

use super::offload::Completion;
use super::{frame, Connection};
use crate::cluster::member::wire;
use crate::error::wire_code;

impl Connection {
    /// In a cluster, refuses (and answers) a PRODUCER or SUBSCRIBE on a topic whose bundle
    /// this broker does not own, as Pulsar's `checkTopicNsOwnership`; `true` when the command
    /// is refused or held back. While this broker's acquisition of the bundle is in flight (a
    /// lookup through another broker may have read the new lock already and sent the client
    /// here), the command is held back and handled again, by `again`'s closure, once the
    /// acquisition has ended: Pulsar's check waits on the pending ownership future too.
    pub(super) fn refuse_unowned<F>(
        &self,
        request_id: u64,
        topic: &str,
        again: impl FnOnce() -> F,
    ) -> bool
    where
        F: FnOnce(&mut Connection) + Send + 'static,
    {
        let Some(member) = self.ctx.cluster.get() else {
            return false;
        };
        let Ok(name) = TopicName::parse(topic) else {
            return false;
        };
        let full = name.to_string();
        if member.owns(&full) {
            return false;
        }
        if let Some(pending) = member.acquiring(&full) {
            tracing::debug!(topic = %full, request_id, "held back until this broker's acquisition of its bundle ends");
            let (retry, completions) = (Again(again()), self.completions.clone());
            tokio::spawn(async move {
                pending.ended().await;
                // The connection closed meanwhile: nothing was attached, nothing to undo.
                let _ = completions.push(Box::new(retry));
            });
            return true;
        }
        tracing::debug!(topic = %full, request_id, "refused: bundle not owned here");
        self.error(
            request_id,
            &BrokerError::not_served(&full, &name.namespace_name()),
        );
        true
    }

    /// LOOKUP in a cluster (after the authorization check). When this broker is the answer,
    /// the topic's namespace (which the store has) is made known here too.
    pub(super) fn cluster_lookup(&self, member: &Arc<ClusterMember>, c: &pb::CommandLookupTopic) {
        let (member, tx, request_id) = (Arc::clone(member), self.tx.clone(), c.request_id);
        let (topic, authoritative) = (TopicName::parse(&c.topic), c.authoritative());
        let ctx = Arc::clone(&self.ctx);
        let asked = c.topic.clone();
        tokio::spawn(async move {
            let reply = match topic {
                Err(e) => commands::lookup_failed(request_id, wire_code(&e), e.to_string()),
                Ok(t) => match member.lookup(&t.to_string(), authoritative).await {
                    Ok(LookupAnswer::Connect(u)) if u.service == member.urls().service => {
                        match crate::cluster::sync::adopt_namespace(&ctx, &t.namespace_name()).await
                        {
                            Ok(()) => commands::lookup_connect(
                                request_id,
                                &u.service,
                                u.service_tls.as_deref(),
                            ),
                            Err(e) => commands::lookup_failed(
                                request_id,
                                Wire::MetadataError,
                                e.to_string(),
                            ),
                        }
                    }
                    Ok(LookupAnswer::Connect(u)) => {
                        commands::lookup_connect(request_id, &u.service, u.service_tls.as_deref())
                    }
                    Ok(LookupAnswer::Redirect {
                        urls,
                        authoritative,
                    }) => commands::lookup_redirect(
                        request_id,
                        &urls.service,
                        urls.service_tls.as_deref(),
                        authoritative,
                    ),
                    Err(e) => {
                        let (code, msg) = wire(&e);
                        commands::lookup_failed(request_id, code, msg)
                    }
                },
            };
            tracing::debug!(topic = %asked, request_id, authoritative, answer = ?reply.lookup_topic_response, "lookup answered");
            let _ = tx.send(frame(&reply));
        });
    }

    /// PARTITIONED_METADATA in a cluster: the count the cluster's store records (adopted here
    /// too), else this broker's answer (auto-creation included), recorded in the store so every
    /// broker gives the same.
    pub(super) fn cluster_partitioned_metadata(
        &self,
        member: &Arc<ClusterMember>,
        c: &pb::CommandPartitionedTopicMetadata,
    ) {
        let (member, ctx, tx) = (Arc::clone(member), Arc::clone(&self.ctx), self.tx.clone());
        let (topic, request_id, auto) = (
            c.topic.clone(),
            c.request_id,
            c.metadata_auto_creation_enabled(),
        );
        tokio::spawn(async move {
            let reply = partitions(&member, &ctx, &topic, auto).await;
            let reply: BaseCommand = match reply {
                Ok(n) => commands::partitioned_metadata(request_id, n),
                Err((code, msg)) => commands::partitioned_metadata_failed(request_id, code, msg),
            };
            let _ = tx.send(frame(&reply));
        });
    }
}

async fn partitions(
    member: &ClusterMember,
    ctx: &Arc<crate::context::ServerContext>,
    topic: &str,
    auto: bool,
) -> Result<u32, (Wire, String)> {
    let broker = |e: BrokerError| (wire_code(&e), e.to_string());
    let name = TopicName::parse(topic).map_err(broker)?;
    let service = &ctx.service;
    // The namespace must be the cluster's (Pulsar: a missing one is TopicNotFound here); this
    // broker then knows it too.
    let ns = name.namespace_name();
    if let Err(e) = member.boundaries(&ns).await {
        return Err(match e {
            pulsar_rs_cluster::ClusterError::NamespaceNotFound(_) => (
                Wire::TopicNotFound,
                format!("Tenant or namespace or topic does not exist: {ns}"),
            ),
            e => wire(&e),
        });
    }
    crate::cluster::sync::adopt_namespace(ctx, &ns)
        .await
        .map_err(|e| (Wire::MetadataError, e.to_string()))?;
    if name.partition_index().is_some() {
        return Ok(0);
    }
    let full = name.to_string();
    // Storage writes (the local record): blocking pool.
    let blocking = |f: Box<dyn FnOnce() -> Result<u32, BrokerError> + Send>| async move {
        tokio::task::spawn_blocking(f)
            .await
            .map_err(|e| (Wire::ServiceNotReady, e.to_string()))?
            .map_err(broker)
    };
    if let Some(n) = member.partitions(&full).await.map_err(|e| wire(&e))? {
        let (svc, name) = (Arc::clone(service), name.clone());
        if n > 0 {
            blocking(Box::new(move || {
                svc.adopt_partitioned(&name, n).map(|()| n)
            }))
            .await?;
        }
        return Ok(n);
    }
    let (svc, local_name) = (Arc::clone(service), name.clone());
    let n = blocking(Box::new(move || svc.partitions(&local_name, auto))).await?;
    if n == 0 {
        return Ok(0);
    }
    member
        .record_partitions(&full, n)
        .await
        .map_err(|e| wire(&e))
}

/// A PRODUCER or SUBSCRIBE held back by [`Connection::refuse_unowned`]: handled again on the
/// connection task.
struct Again<F>(F);

impl<F: FnOnce(&mut Connection) + Send> Completion for Again<F> {
    fn apply(self: Box<Self>, conn: &mut Connection) {
        (self.0)(conn);
    }
    fn abandon(self: Box<Self>) {}
}
