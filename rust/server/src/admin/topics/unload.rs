//! Unloading (Pulsar's `unloadTopic`, and a namespace's unload on a broker on its own): the
//! loaded topics chosen are closed and forgotten until their next use, their producers told
//! `CloseProducer` and their consumers `CloseConsumer`, so the clients reconnect and load them
//! afresh; the memory they held is released. Nothing stored changes. (A namespace's unload is
//! with the bundles', in [`crate::admin::cluster::bundles`].)

use std::collections::HashSet;

use axum::extract::State;
use axum::response::Response;
use axum::routing::put;
use pulsar_rs_broker::TopicName;

use crate::admin::machinery::access::{Access, Routes};
use crate::admin::machinery::closing::closing_producers;
use crate::admin::machinery::state::Ctx;
use crate::admin::machinery::topic_path::ExistingTopic;

/// The routes of this module.
pub(in crate::admin) fn routes() -> Routes {
    Routes::new().route(
        "/admin/v2/persistent/{tenant}/{ns}/{topic}/unload",
        Access::Tenant,
        put(unload_topic),
    )
}

/// `PUT .../{topic}/unload`: the topic, or each loaded partition of a partitioned topic (in a
/// cluster, the ones this broker serves: the call is sent on to the other partitions' owners),
/// unloaded; 404 for a topic that does not exist, 204 also when it was not loaded.
async fn unload_topic(State(ctx): Ctx, ExistingTopic(name): ExistingTopic) -> Response {
    let chosen: HashSet<TopicName> = match ctx.service.partitions(&name, false) {
        Ok(n) if n > 0 => ctx
            .service
            .partition_targets(&name, n)
            .into_iter()
            .collect(),
        _ => HashSet::from([name]),
    };
    let why = "unloaded by an admin call";
    closing_producers(&ctx, move |svc| {
        Ok(svc.unload_where(|t| chosen.contains(&t.name), why))
    })
    .await
}
