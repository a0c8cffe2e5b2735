//! Authorization as Pulsar's `PulsarAuthorizationProvider` does it: superusers may do
//! everything; other roles need `produce` (PRODUCER) or `consume` (SUBSCRIBE) granted on the
//! topic's namespace or on the topic itself (a partition inherits its partitioned topic's
//! grants); LOOKUP and PARTITIONED_METADATA need either. Grants are made through Pulsar's
//! admin paths (`/admin/v2/namespaces/{tenant}/{ns}/permissions/{role}`,
//! `/admin/v2/persistent/{tenant}/{ns}/{topic}/permissions/{role}`) and persist in the
//! metadata store under `metadata_keys::NAMESPACE_PERMISSIONS` and `TOPIC_PERMISSIONS`.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use parking_lot::RwLock;
use pulsar_rs_broker::{metadata_keys, BrokerConfig, BrokerError, TopicName};
use pulsar_rs_ledger::metastore::MetaStore;
use serde::{Deserialize, Serialize};

use crate::admin::{broker_fail, fail, topic_name};
use crate::ServerContext;

/// An action a role may be granted (Pulsar's `AuthAction`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AuthAction {
    /// Create producers.
    Produce,
    /// Subscribe.
    Consume,
    /// Pulsar Functions (stored, not used by this broker).
    Functions,
    /// Pulsar IO sources (stored, not used).
    Sources,
    /// Pulsar IO sinks (stored, not used).
    Sinks,
    /// Packages (stored, not used).
    Packages,
}

/// What a client asks to do on a topic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// PRODUCER.
    Produce,
    /// SUBSCRIBE.
    Consume,
    /// LOOKUP, PARTITIONED_METADATA, topic reads: produce or consume suffices.
    Lookup,
}

/// Role → granted actions.
pub type Grants = BTreeMap<String, BTreeSet<AuthAction>>;

/// Granted permissions of namespaces and topics, cached in memory and persisted.
pub struct PermissionStore {
    /// Where grants persist.
    meta: Arc<dyn MetaStore>,
    /// Namespace (`tenant/ns`) → grants. Read on every PRODUCER/SUBSCRIBE/LOOKUP, written by
    /// the admin API; held only for map operations and the store write (never across .await).
    namespaces: RwLock<HashMap<String, Grants>>,
    /// Topic (full name of the base topic) → grants; same discipline.
    topics: RwLock<HashMap<String, Grants>>,
}

fn corrupt(key: &str, e: &serde_json::Error) -> BrokerError {
    BrokerError::Ledger(pulsar_rs_ledger::LedgerError::CorruptMetadata {
        key: key.to_owned(),
        reason: e.to_string(),
    })
}

fn load(meta: &dyn MetaStore, prefix: &str) -> Result<HashMap<String, Grants>, BrokerError> {
    let mut out = HashMap::new();
    for key in meta.list(prefix)? {
        let Some(raw) = meta.get(&key)? else { continue };
        let g: Grants = serde_json::from_slice(&raw).map_err(|e| corrupt(&key, &e))?;
        out.insert(metadata_keys::name_of(&key), g);
    }
    Ok(out)
}

impl PermissionStore {
    /// Loads every stored grant.
    ///
    /// # Errors
    /// Metadata I/O or corrupt records.
    pub fn open(meta: Arc<dyn MetaStore>) -> Result<Self, BrokerError> {
        let namespaces = load(meta.as_ref(), metadata_keys::NAMESPACE_PERMISSIONS)?;
        let topics = load(meta.as_ref(), metadata_keys::TOPIC_PERMISSIONS)?;
        Ok(PermissionStore {
            meta,
            namespaces: RwLock::new(namespaces),
            topics: RwLock::new(topics),
        })
    }

    /// Grants of a namespace.
    #[must_use]
    pub fn namespace(&self, ns: &str) -> Grants {
        self.namespaces.read().get(ns).cloned().unwrap_or_default()
    }

    /// Grants made on a topic itself (not its namespace's).
    #[must_use]
    pub fn topic(&self, t: &TopicName) -> Grants {
        self.topics
            .read()
            .get(&t.base().to_string())
            .cloned()
            .unwrap_or_default()
    }

    fn update(
        &self,
        map: &RwLock<HashMap<String, Grants>>,
        key: String,
        name: String,
        f: impl FnOnce(&mut Grants),
    ) -> Result<(), BrokerError> {
        let mut map = map.write();
        let mut g = map.get(&name).cloned().unwrap_or_default();
        f(&mut g);
        if g.is_empty() {
            self.meta.delete(&key)?;
            map.remove(&name);
        } else {
            self.meta
                .put(&key, &serde_json::to_vec(&g).unwrap_or_default())?;
            map.insert(name, g);
        }
        Ok(())
    }

    /// Sets (replaces) a role's actions on a namespace; an empty set revokes.
    ///
    /// # Errors
    /// Metadata I/O.
    pub fn grant_namespace(
        &self,
        ns: &str,
        role: &str,
        actions: BTreeSet<AuthAction>,
    ) -> Result<(), BrokerError> {
        let key = metadata_keys::namespace_permissions(ns);
        self.update(&self.namespaces, key, ns.to_owned(), |g| {
            set(g, role, actions);
        })
    }

    /// Sets (replaces) a role's actions on a topic; an empty set revokes.
    ///
    /// # Errors
    /// Metadata I/O.
    pub fn grant_topic(
        &self,
        t: &TopicName,
        role: &str,
        actions: BTreeSet<AuthAction>,
    ) -> Result<(), BrokerError> {
        let name = t.base().to_string();
        let key = metadata_keys::topic_permissions(&name);
        self.update(&self.topics, key, name, |g| set(g, role, actions))
    }
}

fn set(g: &mut Grants, role: &str, actions: BTreeSet<AuthAction>) {
    if actions.is_empty() {
        g.remove(role);
    } else {
        g.insert(role.to_owned(), actions);
    }
}

/// Authorization settings and grants of a server.
pub struct Authorizer {
    /// `authorizationEnabled`.
    pub enabled: bool,
    /// `superUserRoles`; immutable.
    super_users: HashSet<String>,
    /// Granted permissions.
    pub store: PermissionStore,
}

impl Authorizer {
    /// Builds the authorizer and loads the grants.
    ///
    /// # Errors
    /// Metadata I/O or corrupt records.
    pub fn open(c: &BrokerConfig, meta: Arc<dyn MetaStore>) -> Result<Self, BrokerError> {
        Ok(Authorizer {
            enabled: c.authorization_enabled,
            super_users: c.super_user_roles.iter().cloned().collect(),
            store: PermissionStore::open(meta)?,
        })
    }

    /// Whether `role` is a superuser.
    #[must_use]
    pub fn is_superuser(&self, role: Option<&str>) -> bool {
        role.is_some_and(|r| self.super_users.contains(r))
    }

    /// Whether `role` may do `action` on `topic`.
    ///
    /// # Errors
    /// The refusal message.
    pub fn check(
        &self,
        role: Option<&str>,
        topic: &TopicName,
        action: Action,
    ) -> Result<(), String> {
        if !self.enabled || self.is_superuser(role) {
            return Ok(());
        }
        let Some(r) = role else {
            return Err(format!(
                "Client with no role is not authorized to {} on topic {topic}",
                verb(action)
            ));
        };
        let holds = |g: &Grants| {
            g.get(r).is_some_and(|a| match action {
                Action::Produce => a.contains(&AuthAction::Produce),
                Action::Consume => a.contains(&AuthAction::Consume),
                Action::Lookup => {
                    a.contains(&AuthAction::Produce) || a.contains(&AuthAction::Consume)
                }
            })
        };
        if holds(&self.store.namespace(&topic.namespace_name())) || holds(&self.store.topic(topic))
        {
            Ok(())
        } else {
            Err(format!(
                "Client with role {r} is not authorized to {} on topic {topic}",
                verb(action)
            ))
        }
    }

    /// Whether `role` may list a namespace's topics (GET_TOPICS_OF_NAMESPACE): a produce or
    /// consume grant on the namespace.
    ///
    /// # Errors
    /// The refusal message.
    pub fn check_namespace(&self, role: Option<&str>, ns: &str) -> Result<(), String> {
        if !self.enabled || self.is_superuser(role) {
            return Ok(());
        }
        let granted = role.is_some_and(|r| {
            self.store.namespace(ns).get(r).is_some_and(|a| {
                a.contains(&AuthAction::Produce) || a.contains(&AuthAction::Consume)
            })
        });
        if granted {
            Ok(())
        } else {
            Err(format!(
                "Client with role {} is not authorized to list the topics of {ns}",
                role.unwrap_or("<none>")
            ))
        }
    }

    /// [`Authorizer::check`] on a topic given by its wire name. A name that does not parse is
    /// let through: the command itself then fails with InvalidTopicName.
    ///
    /// # Errors
    /// The refusal message.
    pub fn check_name(
        &self,
        role: Option<&str>,
        topic: &str,
        action: Action,
    ) -> Result<(), String> {
        if !self.enabled {
            return Ok(());
        }
        match TopicName::parse(topic) {
            Ok(t) => self.check(role, &t, action),
            Err(_) => Ok(()),
        }
    }
}

fn verb(a: Action) -> &'static str {
    match a {
        Action::Produce => "produce",
        Action::Consume => "consume",
        Action::Lookup => "lookup",
    }
}

// ---------------------------------------------------------------------------
// Admin REST: Pulsar's permission paths.
// ---------------------------------------------------------------------------

type Ctx = State<Arc<ServerContext>>;

/// The permission routes (guarded by [`crate::auth::admin_guard`]: superusers only when
/// authorization is on).
pub fn routes() -> Router<Arc<ServerContext>> {
    Router::new()
        .route(
            "/admin/v2/namespaces/{tenant}/{ns}/permissions",
            get(get_namespace),
        )
        .route(
            "/admin/v2/namespaces/{tenant}/{ns}/permissions/{role}",
            post(grant_namespace).delete(revoke_namespace),
        )
        .route(
            "/admin/v2/persistent/{tenant}/{ns}/{topic}/permissions",
            get(get_topic),
        )
        .route(
            "/admin/v2/persistent/{tenant}/{ns}/{topic}/permissions/{role}",
            post(grant_topic).delete(revoke_topic),
        )
}

/// The actions of a grant body; the error is the ready 400 response (boxed: it is large).
fn actions(body: &[u8]) -> Result<BTreeSet<AuthAction>, Box<Response>> {
    serde_json::from_slice(body).map_err(|e| {
        Box::new(fail(
            StatusCode::BAD_REQUEST,
            format!("body must be a JSON list of actions (produce, consume, ...): {e}"),
        ))
    })
}

async fn blocking(
    ctx: &Arc<ServerContext>,
    f: impl FnOnce(&Authorizer) -> Result<(), BrokerError> + Send + 'static,
) -> Response {
    let c = Arc::clone(ctx);
    match tokio::task::spawn_blocking(move || f(&c.authz)).await {
        Ok(Ok(())) => StatusCode::NO_CONTENT.into_response(),
        Ok(Err(e)) => broker_fail(&e),
        Err(e) => fail(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

async fn get_namespace(State(ctx): Ctx, Path((tenant, ns)): Path<(String, String)>) -> Response {
    Json(ctx.authz.store.namespace(&format!("{tenant}/{ns}"))).into_response()
}

async fn grant_namespace(
    State(ctx): Ctx,
    Path((tenant, ns, role)): Path<(String, String, String)>,
    body: axum::body::Bytes,
) -> Response {
    let acts = match actions(&body) {
        Ok(a) => a,
        Err(r) => return *r,
    };
    let ns = format!("{tenant}/{ns}");
    blocking(&ctx, move |a| a.store.grant_namespace(&ns, &role, acts)).await
}

async fn revoke_namespace(
    State(ctx): Ctx,
    Path((tenant, ns, role)): Path<(String, String, String)>,
) -> Response {
    let ns = format!("{tenant}/{ns}");
    blocking(&ctx, move |a| {
        a.store.grant_namespace(&ns, &role, BTreeSet::new())
    })
    .await
}

/// A topic's permissions: its namespace's grants merged with its own (as Pulsar answers).
async fn get_topic(
    State(ctx): Ctx,
    Path((tenant, ns, topic)): Path<(String, String, String)>,
) -> Response {
    let t = match topic_name(&tenant, &ns, &topic) {
        Ok(t) => t,
        Err(r) => return *r,
    };
    let mut all = ctx.authz.store.namespace(&t.namespace_name());
    for (role, acts) in ctx.authz.store.topic(&t) {
        all.entry(role).or_default().extend(acts);
    }
    Json(all).into_response()
}

async fn grant_topic(
    State(ctx): Ctx,
    Path((tenant, ns, topic, role)): Path<(String, String, String, String)>,
    body: axum::body::Bytes,
) -> Response {
    let t = match topic_name(&tenant, &ns, &topic) {
        Ok(t) => t,
        Err(r) => return *r,
    };
    let acts = match actions(&body) {
        Ok(a) => a,
        Err(r) => return *r,
    };
    blocking(&ctx, move |a| a.store.grant_topic(&t, &role, acts)).await
}

async fn revoke_topic(
    State(ctx): Ctx,
    Path((tenant, ns, topic, role)): Path<(String, String, String, String)>,
) -> Response {
    let t = match topic_name(&tenant, &ns, &topic) {
        Ok(t) => t,
        Err(r) => return *r,
    };
    blocking(&ctx, move |a| {
        a.store.grant_topic(&t, &role, BTreeSet::new())
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn authz(dir: &std::path::Path, supers: &[&str]) -> Authorizer {
        let meta: Arc<dyn MetaStore> =
            Arc::new(pulsar_rs_ledger::metastore::FileMetaStore::open(dir).unwrap());
        let c = BrokerConfig {
            authorization_enabled: true,
            super_user_roles: supers.iter().map(|s| (*s).to_owned()).collect(),
            ..BrokerConfig::default()
        };
        Authorizer::open(&c, meta).unwrap()
    }

    fn t(s: &str) -> TopicName {
        TopicName::parse(s).unwrap()
    }

    fn acts(a: &[AuthAction]) -> BTreeSet<AuthAction> {
        a.iter().copied().collect()
    }

    #[test]
    fn namespace_and_topic_grants() {
        let dir = tempfile::tempdir().unwrap();
        let a = authz(dir.path(), &["admin"]);
        let topic = t("persistent://public/default/orders");
        let other = t("persistent://public/default/other");
        assert!(a.check(Some("admin"), &topic, Action::Produce).is_ok());
        assert!(a.check(Some("alice"), &topic, Action::Lookup).is_err());
        assert!(a.check(None, &topic, Action::Lookup).is_err());

        a.store
            .grant_namespace("public/default", "alice", acts(&[AuthAction::Produce]))
            .unwrap();
        assert!(a.check(Some("alice"), &topic, Action::Produce).is_ok());
        assert!(a.check(Some("alice"), &topic, Action::Lookup).is_ok());
        assert!(a.check(Some("alice"), &topic, Action::Consume).is_err());

        a.store
            .grant_topic(&topic, "bob", acts(&[AuthAction::Consume]))
            .unwrap();
        assert!(a.check(Some("bob"), &topic, Action::Consume).is_ok());
        assert!(a.check(Some("bob"), &other, Action::Consume).is_err());
        // A partition inherits its partitioned topic's grants.
        let part = t("persistent://public/default/orders-partition-3");
        assert!(a.check(Some("bob"), &part, Action::Consume).is_ok());
        assert!(a.check(Some("bob"), &part, Action::Produce).is_err());

        // Grants persist.
        drop(a);
        let a = authz(dir.path(), &[]);
        assert!(a.check(Some("alice"), &topic, Action::Produce).is_ok());
        assert!(a.check(Some("bob"), &topic, Action::Consume).is_ok());
        a.store
            .grant_namespace("public/default", "alice", BTreeSet::new())
            .unwrap();
        assert!(a.check(Some("alice"), &topic, Action::Produce).is_err());
        assert!(a.store.namespace("public/default").is_empty());
        assert!(a.check_namespace(Some("bob"), "public/default").is_err());
        a.store
            .grant_namespace("public/default", "carol", acts(&[AuthAction::Consume]))
            .unwrap();
        assert!(a.check_namespace(Some("carol"), "public/default").is_ok());
        assert!(a.check_namespace(Some("carol"), "public/other").is_err());
    }

    #[test]
    fn disabled_allows_everything() {
        let dir = tempfile::tempdir().unwrap();
        let meta: Arc<dyn MetaStore> =
            Arc::new(pulsar_rs_ledger::metastore::FileMetaStore::open(dir.path()).unwrap());
        let a = Authorizer::open(&BrokerConfig::default(), meta).unwrap();
        assert!(a
            .check(None, &t("persistent://a/b/c"), Action::Produce)
            .is_ok());
        assert!(a.check_name(None, "not a topic", Action::Produce).is_ok());
    }

    #[test]
    fn action_names_are_pulsars() {
        let a: BTreeSet<AuthAction> = serde_json::from_str(r#"["produce","consume"]"#).unwrap();
        assert_eq!(a, acts(&[AuthAction::Produce, AuthAction::Consume]));
        assert!(serde_json::from_str::<BTreeSet<AuthAction>>(r#"["write"]"#).is_err());
    }
}
