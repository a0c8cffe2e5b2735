//! Splitting a namespace bundle, as Pulsar's `splitNamespaceBundle` decides it: the algorithms
//! of `supportedNamespaceBundleSplitAlgorithms` that place the new boundaries, and the namespace's
//! boundaries once they are in. A split point is strictly inside the bundle; an algorithm that
//! finds none leaves the bundle whole (Pulsar: "No valid boundary found", and a 204).

use crate::bundles::Bundle;

/// `range_equally_divide`: Pulsar's `defaultNamespaceBundleSplitAlgorithm`.
pub const RANGE_EQUALLY_DIVIDE: &str = "range_equally_divide";
/// `topic_count_equally_divide`.
pub const TOPIC_COUNT_EQUALLY_DIVIDE: &str = "topic_count_equally_divide";
/// `specified_positions_divide` (with `splitBoundaries`).
pub const SPECIFIED_POSITIONS_DIVIDE: &str = "specified_positions_divide";
/// `flow_or_qps_equally_divide`: in Pulsar's list, not implemented here (it weighs the topics'
/// message rates against the load balancer's bundle limits).
pub const FLOW_OR_QPS_EQUALLY_DIVIDE: &str = "flow_or_qps_equally_divide";

/// The algorithms this broker splits with (Pulsar's list without [`FLOW_OR_QPS_EQUALLY_DIVIDE`]).
pub const SUPPORTED: [&str; 3] = [
    RANGE_EQUALLY_DIVIDE,
    TOPIC_COUNT_EQUALLY_DIVIDE,
    SPECIFIED_POSITIONS_DIVIDE,
];

/// How to place the new boundaries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SplitAlgorithm {
    /// Halves the hash range.
    RangeEquallyDivide,
    /// Between the two middle topics' hashes (two topics at least).
    TopicCountEquallyDivide,
    /// At the positions given that fall inside the bundle (two topics at least, as Pulsar asks).
    SpecifiedPositionsDivide(Vec<u64>),
}

impl SplitAlgorithm {
    /// The algorithm named `name` (empty: the default, [`RANGE_EQUALLY_DIVIDE`]), with the
    /// `splitBoundaries` given.
    ///
    /// # Errors
    /// Pulsar's 412 texts: an unsupported name; `specified_positions_divide` without positions.
    pub fn parse(name: &str, positions: Vec<u64>) -> Result<SplitAlgorithm, String> {
        match name.trim() {
            "" | RANGE_EQUALLY_DIVIDE => Ok(SplitAlgorithm::RangeEquallyDivide),
            TOPIC_COUNT_EQUALLY_DIVIDE => Ok(SplitAlgorithm::TopicCountEquallyDivide),
            SPECIFIED_POSITIONS_DIVIDE if positions.is_empty() => Err(
                "With specified_positions_divide split algorithm, splitBoundaries must not be empty"
                    .into(),
            ),
            SPECIFIED_POSITIONS_DIVIDE => Ok(SplitAlgorithm::SpecifiedPositionsDivide(positions)),
            _ => Err(format!(
                "Unsupported namespace bundle split algorithm, supported algorithms are [{}]",
                SUPPORTED.join(", ")
            )),
        }
    }

    /// Where `bundle` is cut, given the hashes of the topics in it (any order); empty: nowhere.
    #[must_use]
    pub fn split_points(&self, bundle: &Bundle, topic_hashes: &[u32]) -> Vec<u32> {
        let (lo, hi) = (u64::from(bundle.lo), u64::from(bundle.hi));
        let inside = |p: u64| p > lo && p < hi;
        let points: Vec<u64> = match self {
            SplitAlgorithm::RangeEquallyDivide => vec![lo + (hi - lo) / 2],
            SplitAlgorithm::TopicCountEquallyDivide => {
                if topic_hashes.len() <= 1 {
                    return Vec::new();
                }
                let mut h: Vec<u64> = topic_hashes.iter().map(|&x| u64::from(x)).collect();
                h.sort_unstable();
                let start = h[(h.len() / 2).saturating_sub(1)];
                let end = h[h.len() / 2];
                vec![start + (end - start) / 2]
            }
            SplitAlgorithm::SpecifiedPositionsDivide(positions) => {
                if topic_hashes.len() <= 1 {
                    return Vec::new();
                }
                let mut p = positions.clone();
                p.sort_unstable();
                p.dedup();
                p
            }
        };
        points
            .into_iter()
            .filter(|&p| inside(p))
            .filter_map(|p| u32::try_from(p).ok())
            .collect()
    }
}

/// `boundaries` with `points` (inside `bundle`, one of its ranges) added; the new bundles.
#[must_use]
pub fn split_boundaries(
    boundaries: &[u32],
    bundle: &Bundle,
    points: &[u32],
) -> (Vec<u32>, Vec<Bundle>) {
    let mut all: Vec<u32> = boundaries.to_vec();
    all.extend(
        points
            .iter()
            .copied()
            .filter(|p| bundle.lo < *p && *p < bundle.hi),
    );
    all.sort_unstable();
    all.dedup();
    let children = all
        .windows(2)
        .filter(|w| w[0] >= bundle.lo && w[1] <= bundle.hi)
        .map(|w| Bundle {
            namespace: bundle.namespace.clone(),
            lo: w[0],
            hi: w[1],
        })
        .collect();
    (all, children)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bundle(lo: u32, hi: u32) -> Bundle {
        Bundle {
            namespace: "t/n".into(),
            lo,
            hi,
        }
    }

    #[test]
    fn pulsars_algorithms_place_the_boundaries_as_pulsar_does() {
        let range = SplitAlgorithm::parse("", Vec::new()).unwrap();
        assert_eq!(
            range.split_points(&bundle(0, 0x4000_0000), &[]),
            [0x2000_0000]
        );
        // The last bundle ends at 0xffffffff, included: its middle is one below a power of two.
        assert_eq!(
            range.split_points(&bundle(0xc000_0000, u32::MAX), &[]),
            [0xdfff_ffff]
        );
        assert!(
            range.split_points(&bundle(7, 8), &[]).is_empty(),
            "too small"
        );

        let count = SplitAlgorithm::parse(TOPIC_COUNT_EQUALLY_DIVIDE, Vec::new()).unwrap();
        assert!(count.split_points(&bundle(0, 100), &[10]).is_empty());
        assert_eq!(count.split_points(&bundle(0, 100), &[90, 10, 20, 80]), [50]);
        assert_eq!(count.split_points(&bundle(0, 100), &[10, 20, 80]), [15]);

        let at =
            SplitAlgorithm::parse(SPECIFIED_POSITIONS_DIVIDE, vec![300, 50, 0, 50, 60]).unwrap();
        assert_eq!(at.split_points(&bundle(0, 100), &[1, 2]), [50, 60]);
        assert!(
            at.split_points(&bundle(0, 100), &[1]).is_empty(),
            "one topic"
        );

        assert!(
            SplitAlgorithm::parse(SPECIFIED_POSITIONS_DIVIDE, Vec::new())
                .unwrap_err()
                .contains("splitBoundaries must not be empty")
        );
        let e = SplitAlgorithm::parse(FLOW_OR_QPS_EQUALLY_DIVIDE, Vec::new()).unwrap_err();
        assert!(
            e.starts_with("Unsupported namespace bundle split algorithm"),
            "{e}"
        );
    }

    #[test]
    fn a_split_adds_the_points_inside_the_bundle_only() {
        let bounds = [0, 0x4000_0000, 0x8000_0000, u32::MAX];
        let b = bundle(0x4000_0000, 0x8000_0000);
        let (all, children) = split_boundaries(&bounds, &b, &[0x6000_0000, 0x9000_0000]);
        assert_eq!(all, [0, 0x4000_0000, 0x6000_0000, 0x8000_0000, u32::MAX]);
        assert_eq!(
            children,
            [
                bundle(0x4000_0000, 0x6000_0000),
                bundle(0x6000_0000, 0x8000_0000)
            ]
        );
    }
}
