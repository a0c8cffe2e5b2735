//! The replicated-subscription markers as stored entries (Pulsar's `Markers`): metadata with
//! producer `pulsar.marker`, sequence id 0, the publish time, `marker_type` and, for a marker
//! meant for one cluster, `replicate_to`; the payload is the marker message, uncompressed.

use bytes::Bytes;
use prost::Message;
use pulsar_rs_ledger::Position;
use pulsar_rs_proto::pb::{
    self, ClusterMessageId, MarkerType, MarkersMessageIdData, ReplicatedSubscriptionsSnapshot,
    ReplicatedSubscriptionsSnapshotRequest, ReplicatedSubscriptionsSnapshotResponse,
    ReplicatedSubscriptionsUpdate,
};

/// The producer name of every server marker Pulsar's `Markers` writes.
pub const MARKER_PRODUCER: &str = "pulsar.marker";

/// A position as the markers carry it (ledger and entry, no batch index).
#[must_use]
pub fn id(p: Position) -> MarkersMessageIdData {
    MarkersMessageIdData {
        ledger_id: u64::try_from(p.ledger_id).unwrap_or(0),
        entry_id: u64::try_from(p.entry_id).unwrap_or(0),
    }
}

/// The position a marker names.
#[must_use]
pub fn position(id: &MarkersMessageIdData) -> Position {
    Position::new(
        i64::try_from(id.ledger_id).unwrap_or(i64::MAX),
        i64::try_from(id.entry_id).unwrap_or(i64::MAX),
    )
}

/// `(cluster, position)` pairs as the markers list them.
#[must_use]
pub fn clusters(list: &[(String, Position)]) -> Vec<ClusterMessageId> {
    list.iter()
        .map(|(cluster, p)| ClusterMessageId {
            cluster: cluster.clone(),
            message_id: id(*p),
        })
        .collect()
}

fn entry(kind: MarkerType, replicate_to: Option<&str>, payload: &[u8], now_ms: u64) -> Bytes {
    let metadata = pb::MessageMetadata {
        producer_name: MARKER_PRODUCER.to_owned(),
        sequence_id: 0,
        publish_time: now_ms,
        marker_type: Some(kind as i32),
        replicate_to: replicate_to.map(str::to_owned).into_iter().collect(),
        ..Default::default()
    };
    pulsar_rs_proto::build_stored_entry(&metadata, payload)
}

/// A snapshot REQUEST from `source` (replicated to every remote cluster).
#[must_use]
pub fn request(snapshot_id: &str, source: &str, now_ms: u64) -> Bytes {
    let m = ReplicatedSubscriptionsSnapshotRequest {
        snapshot_id: snapshot_id.to_owned(),
        source_cluster: Some(source.to_owned()),
    };
    entry(
        MarkerType::ReplicatedSubscriptionSnapshotRequest,
        None,
        &m.encode_to_vec(),
        now_ms,
    )
}

/// `local`'s RESPONSE to `reply_to`'s request: its position `at` (replicated to `reply_to` only).
#[must_use]
pub fn response(
    snapshot_id: &str,
    reply_to: &str,
    local: &str,
    at: Position,
    now_ms: u64,
) -> Bytes {
    let m = ReplicatedSubscriptionsSnapshotResponse {
        snapshot_id: snapshot_id.to_owned(),
        cluster: Some(ClusterMessageId {
            cluster: local.to_owned(),
            message_id: id(at),
        }),
    };
    entry(
        MarkerType::ReplicatedSubscriptionSnapshotResponse,
        Some(reply_to),
        &m.encode_to_vec(),
        now_ms,
    )
}

/// A completed SNAPSHOT: this cluster's position `at` and the others' (kept here: `replicate_to`
/// names this cluster only).
#[must_use]
pub fn snapshot(
    snapshot_id: &str,
    local: &str,
    at: Position,
    others: &[(String, Position)],
    now_ms: u64,
) -> Bytes {
    let m = ReplicatedSubscriptionsSnapshot {
        snapshot_id: snapshot_id.to_owned(),
        local_message_id: Some(id(at)),
        clusters: clusters(others),
    };
    entry(
        MarkerType::ReplicatedSubscriptionSnapshot,
        Some(local),
        &m.encode_to_vec(),
        now_ms,
    )
}

/// An UPDATE of `subscription`: each other cluster's position to move its mark-delete to.
#[must_use]
pub fn update(subscription: &str, others: &[(String, Position)], now_ms: u64) -> Bytes {
    let m = ReplicatedSubscriptionsUpdate {
        subscription_name: subscription.to_owned(),
        clusters: clusters(others),
    };
    entry(
        MarkerType::ReplicatedSubscriptionUpdate,
        None,
        &m.encode_to_vec(),
        now_ms,
    )
}

/// A replicated-subscription marker as read from an entry.
#[derive(Debug, Clone, PartialEq)]
pub enum Marker {
    /// REQUEST.
    Request(ReplicatedSubscriptionsSnapshotRequest),
    /// RESPONSE.
    Response(ReplicatedSubscriptionsSnapshotResponse),
    /// SNAPSHOT.
    Snapshot(ReplicatedSubscriptionsSnapshot),
    /// UPDATE.
    Update(ReplicatedSubscriptionsUpdate),
}

/// Decodes the payload of a marker of type `marker_type`; `None` for another kind of marker
/// (a transaction's) or a payload that does not decode.
#[must_use]
pub fn decode(marker_type: i32, payload: &[u8]) -> Option<Marker> {
    Some(match MarkerType::try_from(marker_type).ok()? {
        MarkerType::ReplicatedSubscriptionSnapshotRequest => {
            Marker::Request(Message::decode(payload).ok()?)
        }
        MarkerType::ReplicatedSubscriptionSnapshotResponse => {
            Marker::Response(Message::decode(payload).ok()?)
        }
        MarkerType::ReplicatedSubscriptionSnapshot => {
            Marker::Snapshot(Message::decode(payload).ok()?)
        }
        MarkerType::ReplicatedSubscriptionUpdate => Marker::Update(Message::decode(payload).ok()?),
        _ => return None,
    })
}

/// Whether `marker_type` is one of the replicated-subscription markers.
#[must_use]
pub fn is_replicated_subscription_marker(marker_type: i32) -> bool {
    (MarkerType::ReplicatedSubscriptionSnapshotRequest as i32
        ..=MarkerType::ReplicatedSubscriptionUpdate as i32)
        .contains(&marker_type)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(entry: &Bytes) -> (pb::MessageMetadata, Marker) {
        let (md, payload) = pulsar_rs_proto::parse_stored_entry(entry).unwrap();
        let m = decode(md.marker_type.unwrap(), &payload).unwrap();
        (md, m)
    }

    #[test]
    fn each_marker_reads_back_with_pulsars_metadata() {
        let (md, m) = read(&request("s1", "east", 5));
        assert_eq!(
            (md.producer_name.as_str(), md.sequence_id, md.publish_time),
            ("pulsar.marker", 0, 5)
        );
        assert_eq!(md.marker_type, Some(10));
        assert!(md.replicate_to.is_empty());
        assert!(
            matches!(m, Marker::Request(r) if r.snapshot_id == "s1" && r.source_cluster.as_deref() == Some("east"))
        );

        let (md, m) = read(&response("s1", "east", "west", Position::new(3, 4), 6));
        assert_eq!(
            (md.marker_type, md.replicate_to),
            (Some(11), vec!["east".to_owned()])
        );
        let Marker::Response(r) = m else { panic!() };
        let c = r.cluster.unwrap();
        assert_eq!(
            (c.cluster.as_str(), position(&c.message_id)),
            ("west", Position::new(3, 4))
        );

        let others = vec![("west".to_owned(), Position::new(3, 4))];
        let (md, m) = read(&snapshot("s1", "east", Position::new(7, 8), &others, 7));
        assert_eq!(
            (md.marker_type, md.replicate_to),
            (Some(12), vec!["east".to_owned()])
        );
        let Marker::Snapshot(s) = m else { panic!() };
        assert_eq!(position(&s.local_message_id.unwrap()), Position::new(7, 8));
        assert_eq!(s.clusters, clusters(&others));

        let (md, m) = read(&update("sub", &others, 8));
        assert_eq!((md.marker_type, md.replicate_to.len()), (Some(13), 0));
        assert!(
            matches!(m, Marker::Update(u) if u.subscription_name == "sub" && u.clusters == clusters(&others))
        );
    }

    #[test]
    fn only_the_replicated_subscription_markers_decode() {
        assert!(decode(21, b"").is_none(), "a transaction's marker");
        assert!(decode(10, b"\xff\xff").is_none(), "garbage");
        assert!(is_replicated_subscription_marker(13));
        assert!(!is_replicated_subscription_marker(21));
    }
}
