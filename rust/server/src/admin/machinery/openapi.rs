//! The OpenAPI 3 description of the admin REST API (v2, and v3's transactions), served at
//! `/admin/v2/openapi.json` (where Pulsar serves its Swagger files under
//! `/admin/v2/swagger.json`-style paths).
//!
//! [`OPERATIONS`] lists every routed path with its methods, grouped by the module that routes
//! it; the document is built from it. It cannot drift silently: `tests/fuzz/test_admin_openapi.py`
//! checks it against the `.route(...)` calls of the admin modules (paths and methods)
//! and against the running router (each listed method is routed, every other one answers 405).
//! Parameters are the path's `{names}`, strings with an example naming what a standalone broker
//! has; a PUT or POST takes the body Pulsar's clients send there ([`body_schema`]).

use axum::response::IntoResponse;
use axum::Json;
use serde_json::{json, Map, Value};

/// `(module, path, methods)` of every admin route; the module, the operation's tag, is the name
/// of the resource module that routes it, as the modules were named before the admin rooms:
/// `topics`, `namespaces`, `cluster` and `transactions` are now the rooms' `lifecycle`,
/// `lifecycle`, `bundles` and `stats`.
pub(in crate::admin) const OPERATIONS: &[(&str, &str, &[&str])] = &[
    (
        "dynamic_config",
        "/admin/v2/brokers/configuration",
        &["GET"],
    ),
    (
        "brokers",
        "/admin/v2/brokers/configuration/runtime",
        &["GET"],
    ),
    (
        "dynamic_config",
        "/admin/v2/brokers/configuration/values",
        &["GET"],
    ),
    (
        "dynamic_config",
        "/admin/v2/brokers/configuration/{name}",
        &["DELETE"],
    ),
    (
        "dynamic_config",
        "/admin/v2/brokers/configuration/{name}/{value}",
        &["POST"],
    ),
    ("cluster", "/admin/v2/brokers", &["GET"]),
    (
        "broker_stats",
        "/admin/v2/broker-stats/load-report",
        &["GET"],
    ),
    ("brokers", "/admin/v2/brokers/health", &["GET"]),
    ("cluster", "/admin/v2/brokers/leaderBroker", &["GET"]),
    ("cluster", "/admin/v2/brokers/{cluster}", &["GET"]),
    (
        "cluster",
        "/admin/v2/brokers/{cluster}/{broker}/ownedNamespaces",
        &["GET"],
    ),
    (
        "cluster",
        "/admin/v2/namespaces/{tenant}/{ns}/bundles",
        &["GET"],
    ),
    (
        "cluster",
        "/admin/v2/namespaces/{tenant}/{ns}/unload",
        &["PUT"],
    ),
    (
        "cluster",
        "/admin/v2/namespaces/{tenant}/{ns}/{bundle}/unload",
        &["PUT"],
    ),
    (
        "cluster",
        "/admin/v2/namespaces/{tenant}/{ns}/{bundle}/split",
        &["PUT"],
    ),
    (
        "cluster",
        "/lookup/v2/topic/{domain}/{tenant}/{ns}/{topic}/bundle",
        &["GET"],
    ),
    ("clusters", "/admin/v2/clusters", &["GET"]),
    (
        "clusters",
        "/admin/v2/clusters/{cluster}",
        &["GET", "PUT", "POST", "DELETE"],
    ),
    (
        "compaction",
        "/admin/v2/persistent/{tenant}/{ns}/{topic}/compaction",
        &["PUT", "GET"],
    ),
    (
        "compaction",
        "/admin/v2/non-persistent/{tenant}/{ns}/{topic}/compaction",
        &["PUT", "GET"],
    ),
    (
        "iceberg_table",
        "/admin/v2/namespaces/{tenant}/{ns}/icebergTable",
        &["GET", "POST", "PUT", "DELETE"],
    ),
    (
        "iceberg_table",
        "/admin/v2/persistent/{tenant}/{ns}/{topic}/icebergTable",
        &["GET", "POST", "PUT", "DELETE"],
    ),
    (
        "offload",
        "/admin/v2/persistent/{tenant}/{ns}/{topic}/offload",
        &["PUT", "GET"],
    ),
    (
        "offload",
        "/admin/v2/non-persistent/{tenant}/{ns}/{topic}/offload",
        &["PUT", "GET"],
    ),
    (
        "internal_stats",
        "/admin/v2/persistent/{tenant}/{ns}/{topic}/internalStats",
        &["GET"],
    ),
    (
        "internal_stats",
        "/admin/v2/persistent/{tenant}/{ns}/{topic}/partitioned-internalStats",
        &["GET"],
    ),
    (
        "lookup",
        "/lookup/v2/topic/{domain}/{tenant}/{ns}/{topic}",
        &["GET"],
    ),
    (
        "lookup",
        "/admin/v2/namespaces/{tenant}/{ns}/topics",
        &["GET"],
    ),
    (
        "messages",
        "/admin/v2/persistent/{tenant}/{ns}/{topic}/subscription/{sub}/position/{n}",
        &["GET"],
    ),
    (
        "messages",
        "/admin/v2/persistent/{tenant}/{ns}/{topic}/examinemessage",
        &["GET"],
    ),
    (
        "messages",
        "/admin/v2/persistent/{tenant}/{ns}/{topic}/ledger/{ledger}/entry/{entry}",
        &["GET"],
    ),
    (
        "messages",
        "/admin/v2/persistent/{tenant}/{ns}/{topic}/lastMessageId",
        &["GET"],
    ),
    (
        "messages",
        "/admin/v2/persistent/{tenant}/{ns}/{topic}/messageid/{timestamp}",
        &["GET"],
    ),
    ("mod", "/metrics", &["GET"]),
    ("namespaces", "/admin/v2/namespaces/{tenant}", &["GET"]),
    (
        "namespaces",
        "/admin/v2/namespaces/{tenant}/{ns}",
        &["GET", "PUT", "DELETE"],
    ),
    (
        "non_persistent",
        "/admin/v2/non-persistent/{tenant}/{ns}",
        &["GET"],
    ),
    (
        "non_persistent",
        "/admin/v2/non-persistent/{tenant}/{ns}/partitioned",
        &["GET"],
    ),
    (
        "non_persistent",
        "/admin/v2/non-persistent/{tenant}/{ns}/{topic}/stats",
        &["GET"],
    ),
    (
        "non_persistent",
        "/admin/v2/non-persistent/{tenant}/{ns}/{topic}/partitions",
        &["GET", "PUT"],
    ),
    (
        "non_persistent",
        "/admin/v2/non-persistent/{tenant}/{ns}/{topic}",
        &["DELETE"],
    ),
    (
        "non_persistent",
        "/admin/v2/non-persistent/{tenant}/{ns}/{topic}/unload",
        &["PUT"],
    ),
    (
        "permissions",
        "/admin/v2/namespaces/{tenant}/{ns}/permissions",
        &["GET"],
    ),
    (
        "permissions",
        "/admin/v2/namespaces/{tenant}/{ns}/permissions/{role}",
        &["POST", "DELETE"],
    ),
    (
        "permissions",
        "/admin/v2/namespaces/{tenant}/{ns}/permissions/subscription",
        &["GET"],
    ),
    (
        "permissions",
        "/admin/v2/namespaces/{tenant}/{ns}/permissions/subscription/{sub}",
        &["POST", "DELETE"],
    ),
    (
        "permissions",
        "/admin/v2/namespaces/{tenant}/{ns}/permissions/{sub}/{role}",
        &["DELETE"],
    ),
    (
        "permissions",
        "/admin/v2/namespaces/{tenant}/{ns}/subscriptionAuthMode",
        &["GET", "POST"],
    ),
    (
        "permissions",
        "/admin/v2/persistent/{tenant}/{ns}/{topic}/permissions",
        &["GET"],
    ),
    (
        "permissions",
        "/admin/v2/persistent/{tenant}/{ns}/{topic}/permissions/{role}",
        &["POST", "DELETE"],
    ),
    (
        "ns_policies",
        "/admin/v2/namespaces/{tenant}/{ns}/subscriptionExpirationTime",
        &["GET", "POST", "DELETE"],
    ),
    (
        "ns_policies",
        "/admin/v2/namespaces/{tenant}/{ns}/offloadThreshold",
        &["GET", "PUT"],
    ),
    (
        "ns_policies",
        "/admin/v2/namespaces/{tenant}/{ns}/offloadPolicies",
        &["GET", "POST"],
    ),
    (
        "ns_policies",
        "/admin/v2/namespaces/{tenant}/{ns}/removeOffloadPolicies",
        &["DELETE"],
    ),
    (
        "ns_policies",
        "/admin/v2/namespaces/{tenant}/{ns}/offloadThresholdInSeconds",
        &["GET", "PUT"],
    ),
    (
        "ns_policies",
        "/admin/v2/namespaces/{tenant}/{ns}/offloadDeletionLagMs",
        &["GET", "PUT", "DELETE"],
    ),
    (
        "ns_policies",
        "/admin/v2/namespaces/{tenant}/{ns}/properties",
        &["GET", "PUT", "DELETE"],
    ),
    (
        "ns_policies",
        "/admin/v2/namespaces/{tenant}/{ns}/property/{key}",
        &["GET", "DELETE"],
    ),
    (
        "ns_policies",
        "/admin/v2/namespaces/{tenant}/{ns}/property/{key}/{value}",
        &["PUT"],
    ),
    (
        "ns_policies",
        "/admin/v2/namespaces/{tenant}/{ns}/autoTopicCreation",
        &["GET", "POST", "DELETE"],
    ),
    (
        "ns_policies",
        "/admin/v2/namespaces/{tenant}/{ns}/persistence/bookieAffinity",
        &["GET", "POST", "DELETE"],
    ),
    (
        "metric_labels",
        "/admin/v2/namespaces/{tenant}/{ns}/allowedTopicPropertyKeysForMetrics",
        &["GET", "POST", "DELETE"],
    ),
    (
        "replication",
        "/admin/v2/namespaces/{tenant}/{ns}/replication",
        &["GET", "POST"],
    ),
    (
        "policies",
        "/admin/v2/namespaces/{tenant}/{ns}/{policy}",
        &["GET", "POST", "PUT", "DELETE"],
    ),
    (
        "policies",
        "/admin/v2/persistent/{tenant}/{ns}/{topic}/{policy}",
        &["GET", "POST", "PUT", "DELETE"],
    ),
    (
        "schemas",
        "/admin/v2/schemas/{tenant}/{ns}/{topic}/schema",
        &["GET", "POST", "DELETE"],
    ),
    (
        "schemas",
        "/admin/v2/schemas/{tenant}/{ns}/{topic}/schema/{version}",
        &["GET"],
    ),
    (
        "schemas",
        "/admin/v2/schemas/{tenant}/{ns}/{topic}/schemas",
        &["GET"],
    ),
    (
        "schemas",
        "/admin/v2/schemas/{tenant}/{ns}/{topic}/version",
        &["POST"],
    ),
    (
        "schemas",
        "/admin/v2/schemas/{tenant}/{ns}/{topic}/compatibility",
        &["POST"],
    ),
    (
        "stats",
        "/admin/v2/persistent/{tenant}/{ns}/{topic}/stats",
        &["GET"],
    ),
    (
        "stats",
        "/admin/v2/persistent/{tenant}/{ns}/{topic}/partitioned-stats",
        &["GET"],
    ),
    (
        "subscriptions",
        "/admin/v2/persistent/{tenant}/{ns}/{topic}/subscriptions",
        &["GET"],
    ),
    (
        "subscriptions",
        "/admin/v2/persistent/{tenant}/{ns}/{topic}/subscription/{sub}",
        &["PUT", "DELETE"],
    ),
    (
        "subscriptions",
        "/admin/v2/persistent/{tenant}/{ns}/{topic}/subscription/{sub}/skip_all",
        &["POST"],
    ),
    (
        "subscriptions",
        "/admin/v2/persistent/{tenant}/{ns}/{topic}/subscription/{sub}/skip/{n}",
        &["POST"],
    ),
    (
        "subscriptions",
        "/admin/v2/persistent/{tenant}/{ns}/{topic}/subscription/{sub}/resetcursor/{ts}",
        &["POST"],
    ),
    (
        "subscriptions",
        "/admin/v2/persistent/{tenant}/{ns}/{topic}/subscription/{sub}/resetcursor",
        &["POST"],
    ),
    (
        "subscriptions",
        "/admin/v2/persistent/{tenant}/{ns}/{topic}/subscription/{sub}/expireMessages/{secs}",
        &["POST"],
    ),
    (
        "subscriptions",
        "/admin/v2/persistent/{tenant}/{ns}/{topic}/subscription/{sub}/expireMessages",
        &["POST"],
    ),
    (
        "subscriptions",
        "/admin/v2/persistent/{tenant}/{ns}/{topic}/all_subscription/expireMessages/{secs}",
        &["POST"],
    ),
    (
        "subscriptions",
        "/admin/v2/persistent/{tenant}/{ns}/{topic}/subscription/{sub}/replicatedSubscriptionStatus",
        &["GET", "POST"],
    ),
    (
        "subscriptions",
        "/admin/v2/persistent/{tenant}/{ns}/{topic}/subscription/{sub}/diagnosis",
        &["GET"],
    ),
    (
        "subscriptions",
        "/admin/v2/persistent/{tenant}/{ns}/{topic}/subscription/{sub}/unackedMessages",
        &["GET"],
    ),
    (
        "search",
        "/admin/v2/persistent/{tenant}/{ns}/{topic}/searchMessages",
        &["GET"],
    ),
    ("tenants", "/admin/v2/tenants", &["GET"]),
    (
        "tenants",
        "/admin/v2/tenants/{tenant}",
        &["GET", "PUT", "POST", "DELETE"],
    ),
    ("topics", "/admin/v2/persistent/{tenant}/{ns}", &["GET"]),
    (
        "topics",
        "/admin/v2/persistent/{tenant}/{ns}/partitioned",
        &["GET"],
    ),
    (
        "topics",
        "/admin/v2/persistent/{tenant}/{ns}/{topic}/partitions",
        &["GET", "PUT", "POST", "DELETE"],
    ),
    (
        "topics",
        "/admin/v2/persistent/{tenant}/{ns}/{topic}",
        &["PUT", "DELETE"],
    ),
    (
        "transactions",
        "/admin/v3/transactions/coordinatorStats",
        &["GET"],
    ),
    (
        "transactions",
        "/admin/v3/transactions/coordinatorInternalStats/{coordinatorId}",
        &["GET"],
    ),
    (
        "transactions",
        "/admin/v3/transactions/pendingAckStats/{tenant}/{ns}/{topic}/{sub}",
        &["GET"],
    ),
    (
        "transactions",
        "/admin/v3/transactions/pendingAckInternalStats/{tenant}/{ns}/{topic}/{sub}",
        &["GET"],
    ),
    (
        "transactions",
        "/admin/v3/transactions/transactionBufferStats/{tenant}/{ns}/{topic}",
        &["GET"],
    ),
    (
        "transactions",
        "/admin/v3/transactions/slowTransactions/{timeout}",
        &["GET"],
    ),
    (
        "transactions",
        "/admin/v3/transactions/transactionInBufferStats/{tenant}/{ns}/{topic}/{most}/{least}",
        &["GET"],
    ),
    (
        "transactions",
        "/admin/v3/transactions/transactionInPendingAckStats/{tenant}/{ns}/{topic}/{sub}/{most}/{least}",
        &["GET"],
    ),
    (
        "transactions",
        "/admin/v3/transactions/transactionMetadata/{most}/{least}",
        &["GET"],
    ),
    (
        "transactions",
        "/admin/v3/transactions/positionStatsInPendingAck/{tenant}/{ns}/{topic}/{sub}/{ledgerId}/{entryId}",
        &["GET"],
    ),
    (
        "coordinators",
        "/admin/v3/transactions/coordinators",
        &["GET"],
    ),
    (
        "coordinators",
        "/admin/v3/transactions/transactionCoordinator/replicas",
        &["POST"],
    ),
    (
        "coordinators",
        "/admin/v3/transactions/abortTransaction/{most}/{least}",
        &["POST"],
    ),
    ("openapi", "/admin/v2/openapi.json", &["GET"]),
    (
        "terminate",
        "/admin/v2/persistent/{tenant}/{ns}/{topic}/terminate",
        &["POST"],
    ),
    (
        "terminate",
        "/admin/v2/persistent/{tenant}/{ns}/{topic}/terminate/partitions",
        &["POST"],
    ),
    (
        "terminate",
        "/admin/v2/non-persistent/{tenant}/{ns}/{topic}/terminate",
        &["POST"],
    ),
    (
        "unload",
        "/admin/v2/persistent/{tenant}/{ns}/{topic}/unload",
        &["PUT"],
    ),
    (
        "policies_delete",
        "/admin/v2/persistent/{tenant}/{ns}/{topic}/policies",
        &["DELETE"],
    ),
];

/// `(path, method, name, description)` of the query parameters an operation takes, beside its
/// path's `{names}`: Pulsar's, where a route's meaning depends on one.
pub(in crate::admin) const QUERY_PARAMETERS: &[(&str, &str, &str, &str)] = &[
    (
        "/admin/v2/persistent/{tenant}/{ns}",
        "GET",
        "properties",
        "PIP-452: key=value pairs separated by ',' (URL-encoded) the topics are listed by, as \
         pulsarResourcesExtendedClassName chooses (Pulsar's default ignores them)",
    ),
    (
        "/admin/v2/persistent/{tenant}/{ns}/{topic}/policies",
        "DELETE",
        "isGlobal",
        "PIP-422: sent by topicPolicies -g; the local and the global policies go either way",
    ),
];

/// The OpenAPI 3.0 document of [`OPERATIONS`].
pub(in crate::admin) fn document() -> Value {
    let mut paths = Map::new();
    for (module, path, methods) in OPERATIONS {
        let parameters: Vec<Value> = path_parameters(path)
            .map(|name| {
                json!({
                    "name": name,
                    "in": "path",
                    "required": true,
                    "schema": {"type": "string"},
                    "example": example(name),
                })
            })
            .collect();
        let item = paths.entry((*path).to_owned()).or_insert_with(|| json!({}));
        for method in *methods {
            let mut parameters = parameters.clone();
            parameters.extend(
                QUERY_PARAMETERS
                    .iter()
                    .filter(|(p, m, _, _)| p == path && m == method)
                    .map(|(_, _, name, description)| {
                        json!({
                            "name": name,
                            "in": "query",
                            "required": false,
                            "description": description,
                            "schema": {"type": "string"},
                        })
                    }),
            );
            let mut op = json!({
                "tags": [module],
                "summary": format!("{method} {path}"),
                "operationId": format!("{}{}", method.to_lowercase(), operation_suffix(path)),
                "parameters": parameters,
                "responses": {"default": {"description": "Pulsar's answer for this operation"}},
            });
            if matches!(*method, "PUT" | "POST") {
                op["requestBody"] = json!({
                    "required": false,
                    "content": {"application/json": {"schema": body_schema(path)}},
                });
            }
            item[method.to_lowercase()] = op;
        }
    }
    json!({
        "openapi": "3.0.3",
        "info": {
            "title": "pulsar_rs admin REST API",
            "description": "The subset of Apache Pulsar's admin API v2 that pulsar_rs serves.",
            "version": env!("CARGO_PKG_VERSION"),
        },
        "paths": paths,
    })
}

/// `GET /admin/v2/openapi.json`.
pub(in crate::admin) async fn serve() -> impl IntoResponse {
    Json(document())
}

/// The JSON body a PUT or POST on `path` takes, as Pulsar's clients send it; any JSON where
/// the body depends on the path's `{policy}`.
fn body_schema(path: &str) -> Value {
    let message_id = json!({
        "type": "object",
        "properties": {
            "ledgerId": {"type": "integer"},
            "entryId": {"type": "integer"},
            "partitionIndex": {"type": "integer"},
            "batchIndex": {"type": "integer"},
            "isExcluded": {"type": "boolean"},
        },
    });
    let names = json!({"type": "array", "items": {"type": "string"}});
    let last = path.rsplit('/').next().unwrap_or_default();
    match last {
        "{tenant}" if path.starts_with("/admin/v2/tenants/") => json!({
            "type": "object",
            "properties": {"adminRoles": names, "allowedClusters": names},
        }),
        "{cluster}" => json!({
            "type": "object",
            "properties": {
                "serviceUrl": {"type": "string"},
                "brokerServiceUrl": {"type": "string"},
            },
        }),
        "partitions" if !path.ends_with("/terminate/partitions") => json!({"type": "integer"}),
        "replicas" => json!({"type": "integer"}),
        "replicatedSubscriptionStatus" => json!({"type": "boolean"}),
        "resetcursor" | "expireMessages" => message_id,
        "{sub}" if path.contains("/subscription/") && !path.contains("/permissions/") => message_id,
        "{role}" | "{sub}" | "replication" | "allowedTopicPropertyKeysForMetrics" => names,
        "subscriptionAuthMode" => json!({"type": "string", "enum": ["None", "Prefix"]}),
        "schema" | "version" | "compatibility" => json!({
            "type": "object",
            "properties": {
                "type": {"type": "string", "enum": ["STRING", "JSON", "AVRO", "BYTES", "INT64"]},
                "schema": {"type": "string"},
                "properties": {"type": "object", "additionalProperties": {"type": "string"}},
            },
        }),
        _ => json!({}),
    }
}

/// A value that names something a fresh standalone broker has (or a plausible one), so a
/// client exploring the API reaches past "not found".
fn example(parameter: &str) -> &'static str {
    match parameter {
        "tenant" => "public",
        "ns" => "default",
        "cluster" => "standalone",
        "domain" => "persistent",
        "policy" => "retention",
        "topic" => "openapi-example",
        "sub" => "openapi-sub",
        "role" => "openapi-role",
        "ledger" | "entry" | "ledgerId" | "entryId" | "version" | "ts" | "coordinatorId" => "0",
        _ => "1",
    }
}

/// The `{name}` segments of a path.
fn path_parameters(path: &str) -> impl Iterator<Item = &str> {
    path.split('/')
        .filter_map(|s| s.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
}

/// A unique, readable id suffix: the path's segments in camel case.
fn operation_suffix(path: &str) -> String {
    path.split(['/', '-', '_', '.', '{', '}'])
        .filter(|s| !s.is_empty())
        .map(|s| {
            let mut c = s.chars();
            c.next()
                .map(|f| f.to_uppercase().chain(c).collect::<String>())
                .unwrap_or_default()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operation_is_in_the_document_once_with_its_path_parameters() {
        let doc = document();
        let mut ids = std::collections::HashSet::new();
        let mut count = 0;
        for (_, path, methods) in OPERATIONS {
            for m in *methods {
                let op = &doc["paths"][*path][m.to_lowercase()];
                assert!(
                    ids.insert(op["operationId"].as_str().unwrap().to_owned()),
                    "{m} {path}"
                );
                let params = op["parameters"].as_array().unwrap();
                let in_path = params.iter().filter(|p| p["in"] == "path").count();
                assert_eq!(in_path, path.matches('{').count(), "{path}");
                count += 1;
            }
        }
        assert_eq!(ids.len(), count);
        assert_eq!(
            doc["paths"]["/admin/v2/tenants/{tenant}"]["put"]["parameters"][0]["name"],
            "tenant"
        );
        assert!(doc["paths"]["/admin/v2/tenants"].get("put").is_none());
        // Every query parameter is on a listed operation.
        for (path, method, name, _) in QUERY_PARAMETERS {
            let op = &doc["paths"][*path][method.to_lowercase()];
            let params = op["parameters"].as_array().expect(path);
            assert!(
                params
                    .iter()
                    .any(|p| p["in"] == "query" && p["name"] == *name),
                "{method} {path} ?{name}"
            );
        }
    }
}
