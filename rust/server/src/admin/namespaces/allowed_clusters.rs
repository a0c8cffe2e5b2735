//! Which clusters a tenant's namespaces may name (Pulsar's `validateClusterForTenant`): checked
//! when a namespace's replication clusters are set ([`super::replication`]) and when a namespace
//! is created with them ([`super::lifecycle`]).

use axum::http::StatusCode;
use axum::response::Response;

use crate::context::ServerContext;
use crate::http::fail;

/// Pulsar's `validateClusterForTenant` for each of `clusters`: 403 for a cluster that is not
/// registered, or that the tenant's `allowedClusters` leave out (an empty list allows every
/// cluster). Also what a namespace's creation checks of the replication clusters its body
/// names (Pulsar's `validatePolicies`).
///
/// # Errors
/// The refusal, as a response.
pub(super) fn allowed_for_tenant<'a>(
    ctx: &ServerContext,
    tenant: &str,
    clusters: impl IntoIterator<Item = &'a String>,
) -> Result<(), Response> {
    let known = ctx.resources.clusters();
    let allowed = ctx
        .resources
        .tenant(tenant)
        .map(|t| t.allowed_clusters)
        .unwrap_or_default();
    for c in clusters {
        if !known.contains(c) {
            return Err(fail(
                StatusCode::FORBIDDEN,
                format!("Invalid cluster id: {c}"),
            ));
        }
        if !allowed.is_empty() && !allowed.contains(c) {
            return Err(fail(
                StatusCode::FORBIDDEN,
                format!("Cluster [{c}] is not in the list of allowed clusters list for tenant [{tenant}]"),
            ));
        }
    }
    Ok(())
}
