//! A namespace's bundles, as Pulsar's admin API sees them: the split a namespace is created
//! with (`namespaces create --bundles N`, or the `bundles` of the `Policies` body, else
//! `defaultNumberOfNamespaceBundles`), the boundaries every admin call reads (the metadata
//! store's in a cluster; on a broker on its own, the ones recorded at creation), and a bundle
//! range named in a call, checked against them with Pulsar's answers.
//!
//! A broker on its own serves every bundle itself: its bundles decide only what `namespaces
//! bundles`, `topics bundle-range`, `brokers namespaces` and `namespaces unload --bundle`
//! answer and touch, as on Apache Pulsar standalone.

// Checks return the ready error response; the admin path is cold.
#![allow(clippy::result_large_err)]

use std::collections::{BTreeSet, HashMap};

use axum::http::StatusCode;
use axum::response::Response;
use pulsar_rs_broker::policies::Policies;
use pulsar_rs_cluster::bundles::{bundles_data, equal_boundaries, find_bundle, parse_boundaries};
use pulsar_rs_cluster::documents::BundlesData;
use pulsar_rs_cluster::Bundle;
use serde_json::{Map, Value};

use crate::context::ServerContext;
use crate::http::{cluster_fail, fail};

/// Where the split a namespace was created with is kept in its stored policies on a broker on
/// its own (the `Policies` document's own field name; in a cluster the store's document has it).
pub(crate) const BUNDLES_FIELD: &str = "bundles";

/// The most bundles a namespace may be created with here. Pulsar takes up to 2^32 and writes
/// every boundary into the namespace's policies; past this count the policies alone would
/// weigh megabytes, so a larger count is refused (400).
pub(crate) const MAX_BUNDLES_AT_CREATION: i64 = 65_536;

/// The boundaries a namespace is created with, from the `bundles` of a creation body, as
/// Pulsar's `validatePolicies` decides: no `bundles` or a `numBundles` of 0 or less means
/// `default_count` equal bundles; a positive `numBundles` without boundaries means that many
/// equal bundles; with boundaries, those (repeats dropped, sorted), which must run from
/// `0x00000000` to `0xffffffff` (400 otherwise), whatever `numBundles` says.
///
/// # Errors
/// The 400 answer for a count over [`MAX_BUNDLES_AT_CREATION`], boundaries that are not
/// numbers, or boundaries that do not cover the hash range.
pub(crate) fn at_creation(
    doc: &Map<String, Value>,
    default_count: u32,
) -> Result<Vec<u32>, Response> {
    let given = doc.get(BUNDLES_FIELD).and_then(Value::as_object);
    let count = given
        .and_then(|b| b.get("numBundles"))
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if count <= 0 {
        return Ok(equal_boundaries(default_count.max(1)));
    }
    let boundaries: Vec<&Value> = given
        .and_then(|b| b.get("boundaries"))
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    if boundaries.is_empty() {
        if count > MAX_BUNDLES_AT_CREATION {
            return Err(fail(
                StatusCode::BAD_REQUEST,
                format!(
                    "Invalid number of bundles. Number of bundles has to be in the range of (0, {MAX_BUNDLES_AT_CREATION}]."
                ),
            ));
        }
        // In range: checked just above.
        return Ok(equal_boundaries(u32::try_from(count).unwrap_or(1)));
    }
    let mut points = std::collections::BTreeSet::new();
    for b in boundaries {
        let Some(p) = b.as_str().and_then(parse_number) else {
            return Err(fail(
                StatusCode::BAD_REQUEST,
                format!("Invalid bundle boundary {b}: a 32-bit number such as \"0x40000000\" is expected"),
            ));
        };
        points.insert(p);
    }
    let points: Vec<u32> = points.into_iter().collect();
    if points.len() > usize::try_from(MAX_BUNDLES_AT_CREATION + 1).unwrap_or(usize::MAX) {
        return Err(fail(
            StatusCode::BAD_REQUEST,
            format!(
                "Too many bundle boundaries: at most {} bundles",
                MAX_BUNDLES_AT_CREATION
            ),
        ));
    }
    let (first, last) = (points[0], points[points.len() - 1]);
    // Both ends right means at least two points: 0 and 0xffffffff.
    if first != 0 || last != u32::MAX {
        return Err(fail(
            StatusCode::BAD_REQUEST,
            format!(
                "Input bundles do not cover the whole hash range. first:0x{first:08x}, last:0x{last:08x}"
            ),
        ));
    }
    Ok(points)
}

/// A boundary as Java's `Long.decode` reads it (`0x`/`#` hex, a leading `0` octal, else
/// decimal), kept when it fits in 32 bits.
fn parse_number(s: &str) -> Option<u32> {
    let s = s.trim();
    let (digits, radix) = if let Some(h) = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .or_else(|| s.strip_prefix('#'))
    {
        (h, 16)
    } else if s.len() > 1 && s.starts_with('0') {
        (&s[1..], 8)
    } else {
        (s, 10)
    };
    u32::from_str_radix(digits, radix).ok()
}

/// The split recorded in a namespace's stored policies at its creation, if any.
pub(crate) fn recorded(policies: &Policies) -> Option<Vec<u32>> {
    let data: BundlesData =
        serde_json::from_value(policies.other.get(BUNDLES_FIELD)?.clone()).ok()?;
    parse_boundaries(&data).ok()
}

/// Records the split in stored policies (a broker on its own reads it back from there).
pub(crate) fn record(policies: &mut Policies, boundaries: &[u32]) {
    if let Ok(v) = serde_json::to_value(bundles_data(boundaries)) {
        policies.other.insert(BUNDLES_FIELD.to_owned(), v);
    }
}

/// A namespace's boundaries: the metadata store's in a cluster; on a broker on its own, the
/// split it was created with, or `defaultNumberOfNamespaceBundles` equal bundles for one created
/// without a record (the default namespaces, ones made before splits were recorded).
///
/// # Errors
/// The answer for a store failure or a namespace the store does not have.
pub(crate) async fn boundaries(ctx: &ServerContext, ns: &str) -> Result<Vec<u32>, Response> {
    if let Some(m) = ctx.cluster.get() {
        return m.boundaries(ns).await.map_err(|e| cluster_fail(&e));
    }
    Ok(
        recorded(&ctx.service.policies.namespace(ns)).unwrap_or_else(|| {
            equal_boundaries(
                ctx.service
                    .config
                    .default_number_of_namespace_bundles
                    .max(1),
            )
        }),
    )
}

/// The bundles this broker owns, by name, sorted: in a cluster its locks; on its own (as
/// Pulsar's: the bundles a lookup made it own) those holding a loaded topic.
///
/// # Errors
/// The answer for a store failure reading a namespace's boundaries.
pub(crate) async fn owned_here(ctx: &ServerContext) -> Result<Vec<String>, Response> {
    if let Some(m) = ctx.cluster.get() {
        return Ok(m.owned_bundles());
    }
    let mut bounds: HashMap<String, Vec<u32>> = HashMap::new();
    let mut owned = BTreeSet::new();
    for t in ctx.service.loaded_topics() {
        let ns = t.name.namespace_name();
        if !bounds.contains_key(&ns) {
            let b = boundaries(ctx, &ns).await?;
            bounds.insert(ns.clone(), b);
        }
        let b = &bounds[&ns];
        owned.insert(find_bundle(&ns, b, &t.name.to_string()).name());
    }
    Ok(owned.into_iter().collect())
}

/// The bundle `range` (`0xLOW_0xHIGH`) names among `bounds`, checked as Pulsar's
/// `validateNamespaceBundleRange` checks it, each refusal a 412 with its text: a lower end that is
/// no boundary, an upper end that is not the next one. A range that is not two numbers is a 412
/// `Invalid bundle range` too (Pulsar's is an unexpected-error 500; the fault is the request's).
///
/// # Errors
/// Those answers.
pub(crate) fn named(ns: &str, bounds: &[u32], range: &str) -> Result<Bundle, Response> {
    let ends = range
        .split_once('_')
        .and_then(|(lo, hi)| Some((parse_number(lo)?, parse_number(hi)?)));
    let Some((lo, hi)) = ends else {
        return Err(fail(
            StatusCode::PRECONDITION_FAILED,
            "Invalid bundle range",
        ));
    };
    let asked = Bundle {
        namespace: ns.to_owned(),
        lo,
        hi,
    };
    let Ok(i) = bounds[..bounds.len().saturating_sub(1)].binary_search(&lo) else {
        return Err(fail(
            StatusCode::PRECONDITION_FAILED,
            "Cannot find bundle in the bundles list",
        ));
    };
    let found = Bundle {
        namespace: ns.to_owned(),
        lo,
        hi: bounds[i + 1],
    };
    if found.hi != hi {
        return Err(fail(
            StatusCode::PRECONDITION_FAILED,
            format!(
                "Invalid upper boundary for bundle {}. Expected upper boundary of {}",
                asked.name(),
                found.name()
            ),
        ));
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn creation(body: Value) -> Result<Vec<u32>, u16> {
        let Value::Object(doc) = body else {
            unreachable!()
        };
        at_creation(&doc, 4).map_err(|r| r.status().as_u16())
    }

    #[test]
    fn creation_follows_pulsars_validate_policies() {
        let four = equal_boundaries(4);
        assert_eq!(creation(json!({})), Ok(four.clone()));
        assert_eq!(
            creation(json!({"bundles": {"numBundles": 0}})),
            Ok(four.clone())
        );
        assert_eq!(
            creation(json!({"bundles": {"numBundles": -3}})),
            Ok(four.clone())
        );
        assert_eq!(
            creation(json!({"bundles": {"numBundles": 8}})),
            Ok(equal_boundaries(8))
        );
        // Boundaries without a positive count are not read (Pulsar's default split).
        let some = json!(["0x00000000", "0x10", "0x80000000", "0xffffffff"]);
        assert_eq!(creation(json!({"bundles": {"boundaries": some}})), Ok(four));
        // With one, they are: sorted, repeats dropped, whatever the count says.
        assert_eq!(
            creation(
                json!({"bundles": {"numBundles": 1, "boundaries": ["0xffffffff", "0x80000000", "0x80000000", "0x00000000"]}})
            ),
            Ok(vec![0, 0x8000_0000, u32::MAX])
        );
        assert_eq!(
            creation(
                json!({"bundles": {"numBundles": 1, "boundaries": ["0x00000000", "0x80000000"]}})
            ),
            Err(400)
        );
        assert_eq!(
            creation(
                json!({"bundles": {"numBundles": 1, "boundaries": ["0x00000000", "x", "0xffffffff"]}})
            ),
            Err(400)
        );
        assert_eq!(
            creation(json!({"bundles": {"numBundles": 1 << 20}})),
            Err(400)
        );
    }

    #[test]
    fn a_named_range_must_be_one_of_the_bundles() {
        let b = equal_boundaries(4);
        let ok = named("t/n", &b, "0x40000000_0x80000000").unwrap();
        assert_eq!((ok.lo, ok.hi), (0x4000_0000, 0x8000_0000));
        assert!(named("t/n", &b, "0xc0000000_0xffffffff").is_ok());
        let status = |r: &str| named("t/n", &b, r).unwrap_err().status().as_u16();
        assert_eq!(status("0x00000000_0x00000010"), 412);
        assert_eq!(status("0x00000010_0x40000000"), 412);
        assert_eq!(status("0xffffffff_0xffffffff"), 412);
        assert_eq!(status("notarange"), 412);
    }
}
