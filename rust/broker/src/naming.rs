//! Topic names: `persistent://tenant/namespace/local-name[-partition-N]`.
//!
//! Short forms are expanded as Pulsar does: `t` → `persistent://public/default/t`,
//! `tenant/ns/t` → `persistent://tenant/ns/t`.

use std::fmt;

use crate::error::BrokerError;

const PARTITION_SUFFIX: &str = "-partition-";

/// The suffix of a subscription's pending-ack log (Pulsar's `PENDING_ACK_STORE_SUFFIX`): a
/// managed ledger in the topic's namespace that is no topic of its own.
pub const PENDING_ACK_SUFFIX: &str = "__transaction_pending_ack";

/// A parsed, fully qualified topic name.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TopicName {
    /// `persistent` or `non-persistent`.
    pub domain: String,
    /// Tenant.
    pub tenant: String,
    /// Namespace inside the tenant.
    pub namespace: String,
    /// Local name, partition suffix included.
    pub local: String,
}

fn valid_part(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.=:".contains(c))
}

impl TopicName {
    /// Parses a name in any of Pulsar's forms.
    ///
    /// # Errors
    /// [`BrokerError::InvalidTopicName`] with the reason.
    pub fn parse(name: &str) -> Result<Self, BrokerError> {
        let err = |reason: &str| BrokerError::InvalidTopicName {
            name: name.to_owned(),
            reason: reason.to_owned(),
        };
        let (domain, rest) = match name.split_once("://") {
            Some((d, r)) => (d, r),
            None => ("persistent", name),
        };
        if domain != "persistent" && domain != "non-persistent" {
            return Err(err("domain must be persistent or non-persistent"));
        }
        let parts: Vec<&str> = rest.split('/').collect();
        let (tenant, namespace, local) = match parts.as_slice() {
            [t] if !name.contains("://") => ("public", "default", *t),
            [tenant, ns, local] => (*tenant, *ns, *local),
            _ => return Err(err("expected tenant/namespace/topic")),
        };
        if !valid_part(tenant) || !valid_part(namespace) {
            return Err(err(
                "tenant and namespace must be non-empty and use [A-Za-z0-9-_.=:]",
            ));
        }
        if local.is_empty()
            || local.len() > 512
            || local.chars().any(|c| c.is_control() || c == '/')
        {
            return Err(err("local name must be 1..512 printable characters"));
        }
        Ok(TopicName {
            domain: domain.into(),
            tenant: tenant.into(),
            namespace: namespace.into(),
            local: local.into(),
        })
    }

    /// Whether this is a `persistent://` topic (else `non-persistent://`).
    #[must_use]
    pub fn is_persistent(&self) -> bool {
        self.domain == "persistent"
    }

    /// `tenant/namespace`.
    #[must_use]
    pub fn namespace_name(&self) -> String {
        format!("{}/{}", self.tenant, self.namespace)
    }

    /// The managed ledger's name, Pulsar-style: `tenant/ns/persistent/local`.
    #[must_use]
    pub fn ledger_name(&self) -> String {
        format!(
            "{}/{}/{}/{}",
            self.tenant, self.namespace, self.domain, self.local
        )
    }

    /// Inverse of [`TopicName::ledger_name`]; `None` for a name that is no topic's (a
    /// subscription's pending-ack log, `...`[`PENDING_ACK_SUFFIX`]).
    #[must_use]
    pub fn from_ledger_name(ml: &str) -> Option<Self> {
        if ml.ends_with(PENDING_ACK_SUFFIX) {
            return None;
        }
        let mut it = ml.splitn(4, '/');
        let (t, n, d, l) = (it.next()?, it.next()?, it.next()?, it.next()?);
        Some(TopicName {
            domain: d.into(),
            tenant: t.into(),
            namespace: n.into(),
            local: l.into(),
        })
    }

    /// The partition index if this is `<base>-partition-<i>`.
    #[must_use]
    pub fn partition_index(&self) -> Option<u32> {
        let (_, idx) = self.local.rsplit_once(PARTITION_SUFFIX)?;
        idx.parse().ok()
    }

    /// The partitioned topic this partition belongs to (or itself).
    #[must_use]
    pub fn base(&self) -> TopicName {
        match self.local.rsplit_once(PARTITION_SUFFIX) {
            Some((base, idx)) if idx.parse::<u32>().is_ok() => TopicName {
                local: base.into(),
                ..self.clone()
            },
            _ => self.clone(),
        }
    }

    /// The name of partition `i` of this topic.
    #[must_use]
    pub fn partition(&self, i: u32) -> TopicName {
        TopicName {
            local: format!("{}{PARTITION_SUFFIX}{i}", self.local),
            ..self.clone()
        }
    }
}

impl fmt::Display for TopicName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}://{}/{}/{}",
            self.domain, self.tenant, self.namespace, self.local
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_and_long_forms() {
        assert_eq!(
            TopicName::parse("t1").unwrap().to_string(),
            "persistent://public/default/t1"
        );
        assert_eq!(
            TopicName::parse("a/b/c").unwrap().to_string(),
            "persistent://a/b/c"
        );
        let p = TopicName::parse("persistent://a/b/c-partition-3").unwrap();
        assert_eq!(p.partition_index(), Some(3));
        assert_eq!(p.base().to_string(), "persistent://a/b/c");
        assert_eq!(p.base().partition(3), p);
        assert_eq!(TopicName::from_ledger_name(&p.ledger_name()), Some(p));
        assert!(!TopicName::parse("non-persistent://a/b/c")
            .unwrap()
            .is_persistent());
        assert!(TopicName::parse("other://a/b/c").is_err());
        assert!(TopicName::parse("persistent://a/c").is_err());
        assert!(TopicName::parse("persistent:///b/c").is_err());
    }
}
