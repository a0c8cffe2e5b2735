//! Namespace bundles: a namespace's hash ring cut into ranges, each owned by one broker.
//!
//! A topic belongs to the bundle whose range holds the CRC-32 (IEEE, as Guava's
//! `Hashing.crc32()`) of its full name (`persistent://tenant/ns/local`, each partition hashed on
//! its own); ranges are `[lo, hi)` and the last is `[lo, 0xffffffff]` (`NamespaceBundles`).
//! Boundaries split the ring in equal segments (`PoliciesUtil.getBundles`).

use crate::documents::BundlesData;
use crate::error::{ClusterError, Result};

/// A topic name split as Pulsar's `TopicName`: `domain://tenant/ns/local`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicParts<'a> {
    /// `persistent` or `non-persistent`.
    pub domain: &'a str,
    /// Tenant.
    pub tenant: &'a str,
    /// Namespace (without the tenant).
    pub namespace: &'a str,
    /// The local name (with its `-partition-N` suffix, if any).
    pub local: &'a str,
}

impl TopicParts<'_> {
    /// `tenant/ns`.
    #[must_use]
    pub fn namespace_name(&self) -> String {
        format!("{}/{}", self.tenant, self.namespace)
    }
}

/// Splits a full topic name (`persistent://tenant/ns/local`).
///
/// # Errors
/// [`ClusterError::InvalidName`] for any other shape.
pub fn topic_parts(full: &str) -> Result<TopicParts<'_>> {
    let bad = || ClusterError::InvalidName(full.to_owned());
    let (domain, rest) = full.split_once("://").ok_or_else(bad)?;
    if domain != "persistent" && domain != "non-persistent" {
        return Err(bad());
    }
    let mut it = rest.splitn(3, '/');
    match (it.next(), it.next(), it.next()) {
        (Some(tenant), Some(namespace), Some(local))
            if !tenant.is_empty() && !namespace.is_empty() && !local.is_empty() =>
        {
            Ok(TopicParts {
                domain,
                tenant,
                namespace,
                local,
            })
        }
        _ => Err(bad()),
    }
}

/// The hash that places a topic on the ring.
#[must_use]
pub fn topic_hash(full_name: &str) -> u32 {
    crc32fast::hash(full_name.as_bytes())
}

/// The boundaries of `n` equal bundles (`n` ≥ 1), first 0, last `0xffffffff`.
#[must_use]
pub fn equal_boundaries(n: u32) -> Vec<u32> {
    let n = u64::from(n.max(1));
    let full: u64 = 1 << 32;
    let seg = full / n;
    let mut out = Vec::with_capacity(usize::try_from(n + 1).unwrap_or(0));
    for i in 0..n {
        // Every value is below 2^32: i * seg < n * seg <= 2^32.
        out.push(u32::try_from(i * seg).unwrap_or(u32::MAX));
    }
    out.push(u32::MAX);
    out
}

/// Boundaries as Pulsar writes them in `Policies.bundles`.
#[must_use]
pub fn bundles_data(boundaries: &[u32]) -> BundlesData {
    BundlesData {
        boundaries: boundaries.iter().map(|b| format!("0x{b:08x}")).collect(),
        num_bundles: boundaries.len().saturating_sub(1),
    }
}

/// Parses `Policies.bundles`: sorted hex boundaries from 0 to `0xffffffff`.
///
/// # Errors
/// [`ClusterError::InvalidName`] for boundaries that do not parse or do not cover the ring.
pub fn parse_boundaries(data: &BundlesData) -> Result<Vec<u32>> {
    let bad = |why: &str| ClusterError::InvalidName(format!("bundle boundaries: {why}"));
    let out = data
        .boundaries
        .iter()
        .map(|b| {
            let hex = b.trim_start_matches("0x").trim_start_matches("0X");
            u32::from_str_radix(hex, 16).map_err(|_| bad(b))
        })
        .collect::<Result<Vec<u32>>>()?;
    if out.len() < 2 || out[0] != 0 || out[out.len() - 1] != u32::MAX {
        return Err(bad("must run from 0x00000000 to 0xffffffff"));
    }
    if out.windows(2).any(|w| w[0] >= w[1]) {
        return Err(bad("not increasing"));
    }
    Ok(out)
}

/// One bundle: a namespace and a hash range.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Bundle {
    /// `tenant/ns`.
    pub namespace: String,
    /// First hash in the range.
    pub lo: u32,
    /// End of the range (exclusive, except `0xffffffff`, which the last bundle includes).
    pub hi: u32,
}

impl Bundle {
    /// `0xLOW_0xHIGH`, Pulsar's bundle range name.
    #[must_use]
    pub fn range(&self) -> String {
        format!("0x{:08x}_0x{:08x}", self.lo, self.hi)
    }

    /// `tenant/ns/0xLOW_0xHIGH`.
    #[must_use]
    pub fn name(&self) -> String {
        format!("{}/{}", self.namespace, self.range())
    }

    /// Whether `hash` falls in this bundle's range.
    #[must_use]
    pub fn holds(&self, hash: u32) -> bool {
        self.lo <= hash && (hash < self.hi || (self.hi == u32::MAX && hash == u32::MAX))
    }

    /// Whether the topic (a full name) belongs to this bundle.
    #[must_use]
    pub fn contains_topic(&self, full_name: &str) -> bool {
        topic_parts(full_name).is_ok_and(|p| p.namespace_name() == self.namespace)
            && self.holds(topic_hash(full_name))
    }

    /// Parses `tenant/ns/0xLOW_0xHIGH`.
    ///
    /// # Errors
    /// [`ClusterError::InvalidName`].
    pub fn parse(name: &str) -> Result<Bundle> {
        let bad = || ClusterError::InvalidName(name.to_owned());
        let (namespace, range) = name.rsplit_once('/').ok_or_else(bad)?;
        let (lo, hi) = range.split_once('_').ok_or_else(bad)?;
        let hex = |s: &str| {
            s.strip_prefix("0x")
                .and_then(|h| u32::from_str_radix(h, 16).ok())
                .ok_or_else(bad)
        };
        if !namespace.contains('/') {
            return Err(bad());
        }
        Ok(Bundle {
            namespace: namespace.to_owned(),
            lo: hex(lo)?,
            hi: hex(hi)?,
        })
    }
}

/// The bundle of `full_name` among `boundaries` (sorted, from 0 to `0xffffffff`).
#[must_use]
pub fn find_bundle(namespace: &str, boundaries: &[u32], full_name: &str) -> Bundle {
    let h = topic_hash(full_name);
    // Index of the last boundary <= h, kept below the last boundary (which closes the ring).
    let i = boundaries
        .partition_point(|b| *b <= h)
        .saturating_sub(1)
        .min(boundaries.len().saturating_sub(2));
    Bundle {
        namespace: namespace.to_owned(),
        lo: boundaries[i],
        hi: boundaries[i + 1],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn four_bundles_as_pulsar_cuts_them() {
        let b = bundles_data(&equal_boundaries(4));
        assert_eq!(
            b.boundaries,
            [
                "0x00000000",
                "0x40000000",
                "0x80000000",
                "0xc0000000",
                "0xffffffff"
            ]
        );
        assert_eq!(b.num_bundles, 4);
        assert_eq!(equal_boundaries(16)[1], 0x1000_0000);
        assert_eq!(parse_boundaries(&b).unwrap(), equal_boundaries(4));
    }

    #[test]
    fn topics_land_in_the_bundle_holding_their_crc32() {
        let bounds = equal_boundaries(4);
        let name = "persistent://public/default/my-topic";
        let b = find_bundle("public/default", &bounds, name);
        assert!(b.holds(topic_hash(name)));
        assert!(b.contains_topic(name));
        assert!(
            !b.contains_topic("persistent://other/default/my-topic")
                || b.namespace == "other/default"
        );
        // CRC-32 (IEEE) of "123456789" is the standard check value.
        assert_eq!(topic_hash("123456789"), 0xcbf4_3926);
        let last = Bundle {
            namespace: "t/n".into(),
            lo: 0xc000_0000,
            hi: u32::MAX,
        };
        assert!(last.holds(u32::MAX));
        assert_eq!(Bundle::parse(&last.name()).unwrap(), last);
    }

    #[test]
    fn malformed_names_and_boundaries_are_refused() {
        assert!(topic_parts("persistent://t/n").is_err());
        assert!(topic_parts("http://t/n/x").is_err());
        assert!(Bundle::parse("t/n/0x1-0x2").is_err());
        let gap = BundlesData {
            boundaries: vec!["0x00000000".into(), "0x10".into()],
            num_bundles: 1,
        };
        assert!(parse_boundaries(&gap).is_err());
    }
}
