//! Authorization as Pulsar's `PulsarAuthorizationProvider` does it: superusers may do
//! everything; a tenant's `adminRoles` may do everything on their tenant's namespaces and
//! topics; other roles need `produce` (PRODUCER) or `consume` (SUBSCRIBE) granted on the
//! topic's namespace or on the topic itself (a partition inherits its partitioned topic's
//! grants); LOOKUP and PARTITIONED_METADATA need either. A client without credentials has the
//! `anonymousUserRole` (see [`crate::auth`]), which is checked like any role.
//!
//! Grants live where Pulsar keeps them, in the namespace's `Policies` document
//! (`auth_policies.namespace_auth` and `.destination_auth`), set in the namespace body or
//! through Pulsar's admin paths (`/admin/v2/namespaces/{tenant}/{ns}/permissions/{role}`,
//! `/admin/v2/persistent/{tenant}/{ns}/{topic}/permissions/{role}`; REST in
//! `admin::permissions`), with the roles allowed on each subscription
//! (`auth_policies.subscription_auth_roles`) and `subscription_auth_mode`. Grants of the previous
//! layout (`metadata_keys::NAMESPACE_PERMISSIONS`, `TOPIC_PERMISSIONS`) are moved there once at
//! start ([`migrate_legacy_grants`]).

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Arc;

use pulsar_rs_broker::policies::AuthPolicies;
use pulsar_rs_broker::{metadata_keys, BrokerConfig, BrokerError, BrokerService, TopicName};
use serde::{Deserialize, Serialize};

use crate::resources::Resources;

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

/// Role → granted actions (action names as Pulsar writes them).
pub type Grants = BTreeMap<String, BTreeSet<String>>;

/// Whether granted action names allow `action`.
fn allows(acts: &BTreeSet<String>, action: Action) -> bool {
    let has = |a: AuthAction| acts.contains(a.as_str());
    match action {
        Action::Produce => has(AuthAction::Produce),
        Action::Consume => has(AuthAction::Consume),
        Action::Lookup => has(AuthAction::Produce) || has(AuthAction::Consume),
    }
}

impl AuthAction {
    /// Pulsar's name of the action.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            AuthAction::Produce => "produce",
            AuthAction::Consume => "consume",
            AuthAction::Functions => "functions",
            AuthAction::Sources => "sources",
            AuthAction::Sinks => "sinks",
            AuthAction::Packages => "packages",
        }
    }
}

/// Checks that every action name of a grant is one of Pulsar's.
///
/// # Errors
/// The first unknown name.
pub fn validate_actions(auth: &AuthPolicies) -> Result<(), String> {
    let lists = auth
        .namespace_auth
        .values()
        .chain(auth.destination_auth.values().flat_map(BTreeMap::values));
    for acts in lists {
        for a in acts {
            if serde_json::from_value::<AuthAction>(serde_json::Value::from(a.as_str())).is_err() {
                return Err(format!(
                    "unknown action {a:?} (produce, consume, functions, sources, sinks, packages)"
                ));
            }
        }
    }
    Ok(())
}

/// Authorization settings of a server; grants are read from the namespace policies.
pub struct Authorizer {
    /// `authorizationEnabled`; immutable.
    pub enabled: bool,
    /// `superUserRoles`; immutable.
    super_users: HashSet<String>,
    /// The broker, whose namespace policies hold the grants (its own locks guard them).
    service: Arc<BrokerService>,
    /// Tenants, for their admin roles (its own locks guard them).
    resources: Arc<Resources>,
}

impl Authorizer {
    /// Builds the authorizer.
    #[must_use]
    pub fn new(c: &BrokerConfig, service: Arc<BrokerService>, resources: Arc<Resources>) -> Self {
        Authorizer {
            enabled: c.authorization_enabled,
            super_users: c.super_user_roles.iter().cloned().collect(),
            service,
            resources,
        }
    }

    /// Whether `role` is a superuser.
    #[must_use]
    pub fn is_superuser(&self, role: Option<&str>) -> bool {
        role.is_some_and(|r| self.super_users.contains(r))
    }

    /// Whether `role` is a superuser or one of `tenant`'s admin roles (Pulsar's
    /// `validateTenantAdminAccess`).
    #[must_use]
    pub fn is_tenant_admin(&self, role: Option<&str>, tenant: &str) -> bool {
        self.is_superuser(role)
            || role.is_some_and(|r| {
                self.resources
                    .tenant(tenant)
                    .is_some_and(|t| t.admin_roles.contains(r))
            })
    }

    /// Grants on a namespace.
    #[must_use]
    pub fn namespace_grants(&self, ns: &str) -> Grants {
        self.service
            .policies
            .namespace(ns)
            .auth_policies
            .namespace_auth
    }

    /// Grants made on a topic itself (not its namespace's).
    #[must_use]
    pub fn topic_grants(&self, t: &TopicName) -> Grants {
        let base = t.base();
        self.service
            .policies
            .namespace(&base.namespace_name())
            .auth_policies
            .destination_auth
            .remove(&base.to_string())
            .unwrap_or_default()
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
        let auth = self
            .service
            .policies
            .namespace(&topic.namespace_name())
            .auth_policies;
        let on_ns = auth
            .namespace_auth
            .get(r)
            .is_some_and(|a| allows(a, action));
        let on_topic = auth
            .destination_auth
            .get(&topic.base().to_string())
            .and_then(|g| g.get(r))
            .is_some_and(|a| allows(a, action));
        if on_ns || on_topic || self.is_tenant_admin(role, &topic.tenant) {
            Ok(())
        } else {
            Err(format!(
                "Client with role {r} is not authorized to {} on topic {topic}",
                verb(action)
            ))
        }
    }

    /// Whether `role` may subscribe to `subscription` on `topic` (Pulsar's `canConsume` with a
    /// subscription): superusers and tenant admins always; otherwise, when the namespace lists
    /// roles for this subscription (`auth_policies.subscription_auth_roles`) the role must be
    /// one of them, under `subscription_auth_mode` `Prefix` the subscription name must start
    /// with the role, and the role needs the consume permission.
    ///
    /// # Errors
    /// The refusal message.
    pub fn check_subscribe(
        &self,
        role: Option<&str>,
        topic: &TopicName,
        subscription: &str,
    ) -> Result<(), String> {
        if !self.enabled || self.is_superuser(role) || self.is_tenant_admin(role, &topic.tenant) {
            return Ok(());
        }
        let policies = self.service.policies.namespace(&topic.namespace_name());
        let who = role.unwrap_or("<none>");
        if let Some(roles) = policies
            .auth_policies
            .subscription_auth_roles
            .get(subscription)
            .filter(|r| !r.is_empty())
        {
            if !role.is_some_and(|r| roles.contains(r)) {
                return Err(format!(
                    "Client with role {who} is not authorized to subscribe with subscription {subscription} on topic {topic}"
                ));
            }
        }
        if subscription_auth_mode(&policies) == SubscriptionAuthMode::Prefix
            && !role.is_some_and(|r| subscription.starts_with(r))
        {
            return Err(format!(
                "Failed to create consumer - The subscription name needs to be prefixed by the authentication role, like {who}-xxxx for topic: {topic}"
            ));
        }
        self.check(role, topic, Action::Consume)
    }

    /// [`Authorizer::check_subscribe`] on a topic given by its wire name (a name that does not
    /// parse is let through, as in [`Authorizer::check_name`]).
    ///
    /// # Errors
    /// The refusal message.
    pub fn check_subscribe_name(
        &self,
        role: Option<&str>,
        topic: &str,
        subscription: &str,
    ) -> Result<(), String> {
        if !self.enabled {
            return Ok(());
        }
        match TopicName::parse(topic) {
            Ok(t) => self.check_subscribe(role, &t, subscription),
            Err(_) => Ok(()),
        }
    }

    /// Whether `role` may list a namespace's topics (GET_TOPICS_OF_NAMESPACE): a produce or
    /// consume grant on the namespace, or tenant admin.
    ///
    /// # Errors
    /// The refusal message.
    pub fn check_namespace(&self, role: Option<&str>, ns: &str) -> Result<(), String> {
        if !self.enabled || self.is_superuser(role) {
            return Ok(());
        }
        let tenant = ns.split('/').next().unwrap_or_default();
        let granted = role.is_some_and(|r| {
            self.namespace_grants(ns)
                .get(r)
                .is_some_and(|a| allows(a, Action::Lookup))
        });
        if granted || self.is_tenant_admin(role, tenant) {
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

/// Pulsar's `SubscriptionAuthMode`: `None`, or `Prefix` (subscription names must start with
/// the subscriber's role).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum SubscriptionAuthMode {
    /// No rule on subscription names.
    None,
    /// Subscription names must start with the role.
    Prefix,
}

/// The namespace's `subscription_auth_mode` (kept in its Policies document under Pulsar's name).
pub(crate) fn subscription_auth_mode(
    p: &pulsar_rs_broker::policies::Policies,
) -> SubscriptionAuthMode {
    p.other
        .get(SUBSCRIPTION_AUTH_MODE)
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or(SubscriptionAuthMode::None)
}

/// The Policies document's field for the subscription auth mode.
pub(crate) const SUBSCRIPTION_AUTH_MODE: &str = "subscription_auth_mode";

/// Moves grants of the previous layout (their own records) into the namespace policies, once:
/// the old records are deleted after the move. Namespaces are registered before this runs.
///
/// # Errors
/// Metadata I/O or corrupt records.
pub fn migrate_legacy_grants(service: &BrokerService) -> Result<(), BrokerError> {
    let meta = service.storage.meta();
    for (prefix, topic_level) in [
        (metadata_keys::NAMESPACE_PERMISSIONS, false),
        (metadata_keys::TOPIC_PERMISSIONS, true),
    ] {
        for key in meta.list(prefix)? {
            let Some(raw) = meta.get(&key)? else { continue };
            let grants: Grants = serde_json::from_slice(&raw).map_err(|e| {
                BrokerError::Ledger(pulsar_rs_ledger::LedgerError::CorruptMetadata {
                    key: key.clone(),
                    reason: e.to_string(),
                })
            })?;
            let name = metadata_keys::name_of(&key);
            let ns = if topic_level {
                TopicName::parse(&name)?.namespace_name()
            } else {
                name.clone()
            };
            service.policies.update_namespace(&ns, |p| {
                let target = if topic_level {
                    p.auth_policies.destination_auth.entry(name).or_default()
                } else {
                    &mut p.auth_policies.namespace_auth
                };
                for (role, acts) in grants {
                    target.entry(role).or_default().extend(acts);
                }
            })?;
            meta.delete(&key)?;
            tracing::info!(%key, "moved permissions into the namespace policies");
        }
    }
    Ok(())
}

fn verb(a: Action) -> &'static str {
    match a {
        Action::Produce => "produce",
        Action::Consume => "consume",
        Action::Lookup => "lookup",
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::resources::TenantInfo;

    /// An authorizer over a fresh broker in `dir`: namespaces `public/default` and `acme/ns`,
    /// tenant `acme` administered by `acme-admin`, `supers` as superusers.
    pub(crate) fn authz(
        dir: &std::path::Path,
        supers: &[&str],
    ) -> (Authorizer, Arc<BrokerService>) {
        let c = BrokerConfig {
            authorization_enabled: true,
            super_user_roles: supers.iter().map(|s| (*s).to_owned()).collect(),
            ..BrokerConfig::default()
        };
        let svc = BrokerService::open(c.clone(), dir).unwrap();
        let res = Arc::new(Resources::open(svc.storage.meta()).unwrap());
        for ns in ["public/default", "acme/ns"] {
            if !svc.policies.namespace_exists(ns) {
                svc.policies
                    .create_namespace(ns, pulsar_rs_broker::policies::Policies::default())
                    .unwrap();
            }
        }
        let info = TenantInfo {
            admin_roles: BTreeSet::from(["acme-admin".to_owned()]),
            allowed_clusters: BTreeSet::from(["standalone".to_owned()]),
        };
        let _ = res.put_tenant("acme", info, true);
        (Authorizer::new(&c, Arc::clone(&svc), res), svc)
    }

    fn t(s: &str) -> TopicName {
        TopicName::parse(s).unwrap()
    }

    pub(crate) fn acts(a: &[&str]) -> BTreeSet<String> {
        a.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn namespace_topic_and_tenant_admin_grants() {
        let dir = tempfile::tempdir().unwrap();
        let (a, svc) = authz(dir.path(), &["admin"]);
        let topic = t("persistent://public/default/orders");
        let other = t("persistent://public/default/other");
        assert!(a.check(Some("admin"), &topic, Action::Produce).is_ok());
        assert!(a.check(Some("alice"), &topic, Action::Lookup).is_err());
        assert!(a.check(None, &topic, Action::Lookup).is_err());

        svc.policies
            .update_namespace("public/default", |p| {
                p.auth_policies
                    .namespace_auth
                    .insert("alice".into(), acts(&["produce"]));
                p.auth_policies.destination_auth.insert(
                    "persistent://public/default/orders".into(),
                    BTreeMap::from([("bob".to_owned(), acts(&["consume"]))]),
                );
            })
            .unwrap();
        assert!(a.check(Some("alice"), &topic, Action::Produce).is_ok());
        assert!(a.check(Some("alice"), &topic, Action::Lookup).is_ok());
        assert!(a.check(Some("alice"), &topic, Action::Consume).is_err());
        assert!(a.check(Some("bob"), &topic, Action::Consume).is_ok());
        assert!(a.check(Some("bob"), &other, Action::Consume).is_err());
        // A partition inherits its partitioned topic's grants.
        let part = t("persistent://public/default/orders-partition-3");
        assert!(a.check(Some("bob"), &part, Action::Consume).is_ok());
        assert!(a.check(Some("bob"), &part, Action::Produce).is_err());
        assert!(a.check_namespace(Some("alice"), "public/default").is_ok());
        assert!(a.check_namespace(Some("bob"), "public/default").is_err());

        // Tenant admins may do everything on their tenant, nothing elsewhere.
        let mine = t("persistent://acme/ns/x");
        assert!(a.check(Some("acme-admin"), &mine, Action::Produce).is_ok());
        assert!(a
            .check(Some("acme-admin"), &topic, Action::Produce)
            .is_err());
    }

    #[test]
    fn legacy_grants_move_into_the_namespace_policies_once() {
        let dir = tempfile::tempdir().unwrap();
        let (a, svc) = authz(dir.path(), &[]);
        let meta = svc.storage.meta();
        let grants = serde_json::to_vec(&BTreeMap::from([("carol", ["consume"])])).unwrap();
        meta.put(
            &metadata_keys::namespace_permissions("public/default"),
            &grants,
        )
        .unwrap();
        meta.put(
            &metadata_keys::topic_permissions("persistent://public/default/t"),
            &grants,
        )
        .unwrap();
        migrate_legacy_grants(&svc).unwrap();
        assert!(meta
            .list(metadata_keys::NAMESPACE_PERMISSIONS)
            .unwrap()
            .is_empty());
        assert!(meta
            .list(metadata_keys::TOPIC_PERMISSIONS)
            .unwrap()
            .is_empty());
        let auth = svc.policies.namespace("public/default").auth_policies;
        assert_eq!(auth.namespace_auth["carol"], acts(&["consume"]));
        assert_eq!(
            auth.destination_auth["persistent://public/default/t"]["carol"],
            acts(&["consume"])
        );
        assert!(a
            .check(
                Some("carol"),
                &t("persistent://public/default/z"),
                Action::Consume
            )
            .is_ok());
    }

    #[test]
    fn disabled_allows_everything() {
        let dir = tempfile::tempdir().unwrap();
        let svc = BrokerService::open(BrokerConfig::default(), dir.path()).unwrap();
        let res = Arc::new(Resources::open(svc.storage.meta()).unwrap());
        let a = Authorizer::new(&BrokerConfig::default(), svc, res);
        assert!(a
            .check(None, &t("persistent://a/b/c"), Action::Produce)
            .is_ok());
        assert!(a.check_name(None, "not a topic", Action::Produce).is_ok());
    }

    #[test]
    fn action_names_are_pulsars() {
        let a: BTreeSet<AuthAction> = serde_json::from_str(r#"["produce","consume"]"#).unwrap();
        assert!(a.iter().map(|a| a.as_str()).eq(["produce", "consume"]));
        assert!(serde_json::from_str::<BTreeSet<AuthAction>>(r#"["write"]"#).is_err());
    }
}
