//! Topic discovery: LOOKUP, PARTITIONED_METADATA and GET_TOPICS_OF_NAMESPACE. A broker on its
//! own owns every topic, so a lookup answers "connect here"; in a cluster the answers come from
//! the cluster (`super::cluster`).

use std::sync::Arc;

use pulsar_rs_broker::TopicName;
use pulsar_rs_proto::{commands, pb, ServerError as Wire};

use super::Connection;
use crate::auth::authz::Action;
use crate::error::wire_code;

impl Connection {
    pub(super) fn partitioned_metadata(&self, c: &pb::CommandPartitionedTopicMetadata) {
        if let Some(member) = self.ctx.cluster.get() {
            // Tenants and namespaces of the cluster are checked against its store.
            if !self.refuse_unauthorized_metadata(c) {
                self.cluster_partitioned_metadata(member, c);
            }
            return;
        }
        if let Some(ns) = self.missing_tenant(&c.topic) {
            // Pulsar: authorizing a lookup starts with `validateTenantAdminAccess`, whose 404
            // for a missing tenant `ServerCnx` answers with TopicNotFound, for every role (a
            // superuser is authorized and then finds the namespace missing: the same answer).
            self.send(&commands::partitioned_metadata_failed(
                c.request_id,
                Wire::TopicNotFound,
                format!("Tenant or namespace or topic does not exist: {ns}"),
            ));
            return;
        }
        if self.refuse_unauthorized_metadata(c) {
            return;
        }
        if let Some(ns) = self.missing_namespace(&c.topic) {
            // Pulsar: the namespace's policies are missing → 404 → TopicNotFound.
            self.send(&commands::partitioned_metadata_failed(
                c.request_id,
                Wire::TopicNotFound,
                format!("Tenant or namespace or topic does not exist: {ns}"),
            ));
            return;
        }
        let service = Arc::clone(&self.service);
        let (topic, request_id, auto) = (
            c.topic.clone(),
            c.request_id,
            c.metadata_auto_creation_enabled(),
        );
        // Auto-creating a partitioned topic stores its metadata (write + fsync): blocking pool.
        self.offload_reply(move || {
            match TopicName::parse(&topic).and_then(|t| service.partitions(&t, auto)) {
                Ok(n) => commands::partitioned_metadata(request_id, n),
                Err(e) => {
                    commands::partitioned_metadata_failed(request_id, wire_code(&e), e.to_string())
                }
            }
        });
    }

    /// Refuses (and answers) a PARTITIONED_METADATA the connection's role may not look up;
    /// `true` when refused.
    fn refuse_unauthorized_metadata(&self, c: &pb::CommandPartitionedTopicMetadata) -> bool {
        let Err(msg) = self.authorized(&c.topic, Action::Lookup) else {
            return false;
        };
        self.send(&commands::partitioned_metadata_failed(
            c.request_id,
            Wire::AuthorizationError,
            msg,
        ));
        true
    }

    pub(super) fn lookup(&self, c: &pb::CommandLookupTopic) {
        if let Err(msg) = self.authorized(&c.topic, Action::Lookup) {
            let code = Wire::AuthorizationError;
            self.send(&commands::lookup_failed(c.request_id, code, msg));
            return;
        }
        if let Some(member) = self.ctx.cluster.get() {
            self.cluster_lookup(member, c);
            return;
        }
        if self.missing_namespace(&c.topic).is_some() {
            // Pulsar's lookup answers a failed namespace validation with MetadataError.
            let code = Wire::MetadataError;
            self.send(&commands::lookup_failed(
                c.request_id,
                code,
                "Namespace not found",
            ));
            return;
        }
        let reply = match TopicName::parse(&c.topic) {
            // The answer for the client's listener (`advertisedListeners`); an unknown one is
            // refused with ServiceNotReady, as Pulsar does.
            Ok(_) => match self.ctx.lookups.urls(c.advertised_listener_name.as_deref()) {
                Ok(u) => commands::lookup_connect(
                    c.request_id,
                    &u.broker_url,
                    u.broker_url_tls.as_deref(),
                ),
                Err(msg) => commands::lookup_failed(c.request_id, Wire::ServiceNotReady, msg),
            },
            Err(e) => commands::lookup_failed(c.request_id, wire_code(&e), e.to_string()),
        };
        self.send(&reply);
    }

    pub(super) fn topics_of_namespace(&self, g: &pb::CommandGetTopicsOfNamespace) {
        let role = self.role.as_ref().ok().and_then(Option::as_deref);
        if let Err(msg) = self.ctx.authz.check_namespace(role, &g.namespace) {
            let code = Wire::AuthorizationError;
            self.send(&commands::error(g.request_id, code, msg));
            return;
        }
        use pb::command_get_topics_of_namespace::Mode;
        let (persistent, non_persistent) = match g.mode() {
            Mode::Persistent => (true, false),
            Mode::NonPersistent => (false, true),
            Mode::All => (true, true),
        };
        let (ctx, tx, request) = (Arc::clone(&self.ctx), self.tx.clone(), g.clone());
        // Off this task: the list may wait for memory (PIP-442) or, in a cluster, for the
        // metadata store.
        tokio::spawn(async move {
            let reply =
                super::topic_list::namespace_topics(&ctx, &request, persistent, non_persistent)
                    .await;
            let _ = tx.send(reply);
        });
    }
}
