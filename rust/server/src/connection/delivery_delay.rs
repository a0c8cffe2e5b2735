//! A SEND held to its topic's delivery-delay policies (PIP-437, Pulsar 4.2): refused with
//! `NotAllowedError` when it asks for a longer delay than the topic's maximum (the text of
//! Pulsar's PIP-315 check), or stored with the topic's fixed delay in place of the one its
//! producer asked for. Replicated messages keep what their own cluster decided.

use std::sync::atomic::Ordering;

use pulsar_rs_broker::policies::delivery_delay::Verdict;
use pulsar_rs_broker::Topic;
use pulsar_rs_proto::{build_stored_entry, PayloadFrame, ServerError as Wire};

/// Applies the topic's delivery-delay policies to `payload` (its stored entry rewritten for a
/// fixed delay), unless it comes from another cluster's `replicator`; the SEND_ERROR to answer
/// when it is refused.
pub(super) fn hold(
    topic: &Topic,
    replicator: bool,
    payload: &mut PayloadFrame,
) -> Result<(), (Wire, String)> {
    if replicator {
        return Ok(());
    }
    let Some(delay) = topic.delivery_delay() else {
        return Ok(());
    };
    let now = i64::try_from(pulsar_rs_clock::system_time_ms(
        pulsar_rs_clock::system_now(),
    ))
    .unwrap_or(i64::MAX);
    match delay.verdict(payload.metadata.deliver_at_time, now) {
        Verdict::AsSent => Ok(()),
        Verdict::TooLate { max_ms } => {
            // Relaxed: a counter for `/metrics`.
            topic.delayed_rejected.fetch_add(1, Ordering::Relaxed);
            Err((
                Wire::NotAllowedError,
                format!("Exceeds max allowed delivery delay of {max_ms} milliseconds"),
            ))
        }
        Verdict::DeliverAt(at) => {
            let mut md = payload
                .full_metadata()
                .map_err(|e| (Wire::NotAllowedError, e.to_string()))?;
            md.deliver_at_time = Some(at);
            payload.stored = build_stored_entry(&md, &payload.payload);
            payload.metadata.deliver_at_time = Some(at);
            Ok(())
        }
    }
}
