//! PIP-422 (Pulsar 4.1): `DELETE /admin/v2/persistent/{tenant}/{ns}/{topic}/policies`, the
//! `pulsar-admin topicPolicies delete` call: every policy set on the topic forgotten, local and
//! global (`?isGlobal=true`, as `topicPolicies -g` sends it, changes nothing: both go), also when
//! the topic itself is gone; its properties stay. Answered 204.

use axum::extract::State;
use axum::response::Response;
use axum::routing::delete;

use crate::admin::machinery::access::{Access, Routes};
use crate::admin::machinery::state::Ctx;
use crate::admin::machinery::topic_path::TopicPath;

/// The routes of this module.
pub(in crate::admin) fn routes() -> Routes {
    Routes::new().route(
        "/admin/v2/persistent/{tenant}/{ns}/{topic}/policies",
        Access::Tenant,
        delete(delete_topic_policies),
    )
}

/// `DELETE .../{topic}/policies`: no existence check (Pulsar's may be called for a deleted
/// topic); loaded topics apply their namespace's policies again at once.
async fn delete_topic_policies(State(ctx): Ctx, TopicPath(name): TopicPath) -> Response {
    crate::http::no_content(&ctx, move |svc| {
        if svc.policies.delete_topic_policies(&name)? {
            tracing::info!(topic = %name, "topic policies deleted");
            svc.refresh_policies();
        }
        Ok(())
    })
    .await
}
