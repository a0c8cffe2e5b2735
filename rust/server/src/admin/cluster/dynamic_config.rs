//! Pulsar's dynamic configuration (`/admin/v2/brokers/configuration`, `.../values`, POST
//! `.../configuration/{name}/{value}`, DELETE `.../configuration/{name}`): the keys Pulsar 4.0
//! marks dynamic that this broker also has may be given values, which are kept in the broker's
//! metadata store (`admin/configuration`, as Pulsar's `/admin/configuration`) and answered by
//! `values`. They are stored, not applied: this broker's settings are fixed when it starts, so a
//! value changes nothing until an operator puts it in the configuration file (`docs/admin.md`).
//! Other keys are refused with Pulsar's 412.

use std::collections::BTreeMap;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Json;
use serde_json::Value;

use crate::admin::machinery::access::{Access, Routes};
use crate::admin::machinery::state::Ctx;
use crate::context::ServerContext;
use crate::http::fail;

/// Where the values are kept in the metadata store.
const KEY: &str = pulsar_rs_broker::metadata_keys::DYNAMIC_CONFIGURATION;

/// The settings Pulsar 4.0.8's `ServiceConfiguration` marks `dynamic = true`.
const PULSAR_DYNAMIC: &[&str] = &[
    "allowAutoSubscriptionCreation",
    "allowAutoTopicCreation",
    "allowAutoTopicCreationType",
    "allowOverrideEntryFilters",
    "autoSkipNonRecoverableData",
    "bookkeeperUseV2WireProtocol",
    "brokerClientAuthenticationParameters",
    "brokerClientAuthenticationPlugin",
    "brokerClientTlsEnabled",
    "brokerDeleteInactivePartitionedTopicMetadataEnabled",
    "brokerDeleteInactiveTopicsEnabled",
    "brokerDeleteInactiveTopicsFrequencySeconds",
    "brokerDeleteInactiveTopicsMaxInactiveDurationSeconds",
    "brokerDeleteInactiveTopicsMode",
    "brokerPublisherThrottlingMaxByteRate",
    "brokerPublisherThrottlingMaxMessageRate",
    "brokerPublisherThrottlingTickTimeMillis",
    "brokerShutdownTimeoutMs",
    "clientLibraryVersionCheckEnabled",
    "configurationMetadataSyncEventTopic",
    "defaultNamespaceBundleSplitAlgorithm",
    "defaultNumPartitions",
    "defaultNumberOfNamespaceBundles",
    "dispatchThrottlingOnBatchMessageEnabled",
    "dispatchThrottlingOnNonBacklogConsumerEnabled",
    "dispatchThrottlingRateInByte",
    "dispatchThrottlingRateInMsg",
    "dispatchThrottlingRatePerReplicatorInByte",
    "dispatchThrottlingRatePerReplicatorInMsg",
    "dispatchThrottlingRatePerSubscriptionInByte",
    "dispatchThrottlingRatePerSubscriptionInMsg",
    "dispatchThrottlingRatePerTopicInByte",
    "dispatchThrottlingRatePerTopicInMsg",
    "dispatchThrottlingRateRelativeToPublishRate",
    "dispatcherDispatchMessagesInSubscriptionThread",
    "dispatcherEntryFilterRescheduledMessageDelay",
    "dispatcherMaxReadBatchSize",
    "dispatcherMaxReadSizeBytes",
    "dispatcherMaxRoundRobinBatchSize",
    "dispatcherMinReadBatchSize",
    "dispatcherPauseOnAckStatePersistentEnabled",
    "dispatcherReadFailureBackoffInitialTimeInMs",
    "dispatcherReadFailureBackoffMandatoryStopTimeInMs",
    "dispatcherReadFailureBackoffMaxTimeInMs",
    "entryFilterNames",
    "entryFiltersDirectory",
    "exposeBundlesMetricsInPrometheus",
    "failureDomainsEnabled",
    "flowOrQpsDifferenceThresholdPercentage",
    "forceDeleteNamespaceAllowed",
    "forceDeleteTenantAllowed",
    "httpRequestsFailOnUnknownPropertiesEnabled",
    "isAllowAutoUpdateSchemaEnabled",
    "keySharedLookAheadMsgInReplayThresholdPerConsumer",
    "keySharedLookAheadMsgInReplayThresholdPerSubscription",
    "keySharedUnblockingIntervalMs",
    "loadBalanceSheddingDelayInSeconds",
    "loadBalancerAutoBundleSplitEnabled",
    "loadBalancerAutoUnloadSplitBundlesEnabled",
    "loadBalancerAverageResourceUsageDifferenceThresholdPercentage",
    "loadBalancerAvgShedderHighThreshold",
    "loadBalancerAvgShedderHitCountHighThreshold",
    "loadBalancerAvgShedderHitCountLowThreshold",
    "loadBalancerAvgShedderLowThreshold",
    "loadBalancerBandwidthInResourceWeight",
    "loadBalancerBandwidthOutResourceWeight",
    "loadBalancerBandwithInResourceWeight",
    "loadBalancerBandwithOutResourceWeight",
    "loadBalancerBrokerLoadDataTTLInSeconds",
    "loadBalancerBrokerLoadTargetStd",
    "loadBalancerBrokerMaxTopics",
    "loadBalancerBrokerOverloadedThresholdPercentage",
    "loadBalancerBrokerThresholdShedderPercentage",
    "loadBalancerBundleUnloadMinThroughputThreshold",
    "loadBalancerCPUResourceWeight",
    "loadBalancerDebugModeEnabled",
    "loadBalancerDirectMemoryResourceWeight",
    "loadBalancerDistributeBundlesEvenlyEnabled",
    "loadBalancerHistoryResourcePercentage",
    "loadBalancerHostUsageCheckIntervalMinutes",
    "loadBalancerLoadSheddingStrategy",
    "loadBalancerMaxNumberOfBrokerSheddingPerCycle",
    "loadBalancerMaxNumberOfBundlesInBundleLoadReport",
    "loadBalancerMaxNumberOfBundlesToSplitPerCycle",
    "loadBalancerMemoryResourceWeight",
    "loadBalancerMsgRateDifferenceShedderThreshold",
    "loadBalancerMsgThroughputMultiplierDifferenceShedderThreshold",
    "loadBalancerNamespaceBundleMaxBandwidthMbytes",
    "loadBalancerNamespaceBundleMaxMsgRate",
    "loadBalancerNamespaceBundleMaxSessions",
    "loadBalancerNamespaceBundleMaxTopics",
    "loadBalancerNamespaceBundleSplitConditionHitCountThreshold",
    "loadBalancerNamespaceMaximumBundles",
    "loadBalancerReportUpdateMaxIntervalMinutes",
    "loadBalancerReportUpdateMinIntervalMillis",
    "loadBalancerReportUpdateThresholdPercentage",
    "loadBalancerServiceUnitStateMaxConcurrentOverrides",
    "loadBalancerServiceUnitTableViewSyncer",
    "loadBalancerSheddingBundlesWithPoliciesEnabled",
    "loadBalancerSheddingConditionHitCountThreshold",
    "loadBalancerSheddingEnabled",
    "loadBalancerSheddingGracePeriodMinutes",
    "loadBalancerSheddingIntervalMinutes",
    "loadBalancerTransferEnabled",
    "loadManagerClassName",
    "managedLedgerCacheEvictionTimeThresholdMillis",
    "managedLedgerCacheEvictionWatermark",
    "managedLedgerCacheSizeMB",
    "managedLedgerCursorResetLedgerCloseTimestampMaxClockSkewMillis",
    "managedLedgerForceRecovery",
    "managedLedgerInactiveLedgerRolloverTimeSeconds",
    "managedLedgerInactiveOffloadedLedgerEvictionTimeSeconds",
    "managedLedgerMaxBacklogBetweenCursorsForCaching",
    "managedLedgerMinimumBacklogCursorsForCaching",
    "managedLedgerMinimumBacklogEntriesForCaching",
    "managedLedgerTraceTaskExecution",
    "maxConcurrentLookupRequest",
    "maxConcurrentTopicLoadRequest",
    "maxMessagePublishBufferSizeInMB",
    "maxNamespacesPerTenant",
    "maxNumPartitionsPerPartitionedTopic",
    "maxPublishRatePerTopicInBytes",
    "maxPublishRatePerTopicInMessages",
    "maxTenants",
    "maxTopicsPerNamespace",
    "maxUnloadBundleNumPerShedding",
    "maxUnloadPercentage",
    "metadataSyncEventTopic",
    "minUnloadMessage",
    "minUnloadMessageThroughput",
    "namespaceBundleUnloadingTimeoutMs",
    "preciseDispatcherFlowControl",
    "preferLaterVersions",
    "replicationProducerQueueSize",
    "replicationStartAt",
    "resourceUsageTransportPublishIntervalInSecs",
    "schemaLedgerForceRecovery",
    "skipBrokerShutdownOnOOM",
    "strictlyVerifySubscriptionName",
    "subscribeRatePeriodPerConsumerInSecond",
    "subscribeThrottlingRatePerConsumer",
    "subscriptionKeySharedEnable",
    "subscriptionKeySharedUseClassicPersistentImplementation",
    "subscriptionRedeliveryTrackerEnabled",
    "subscriptionSharedUseClassicPersistentImplementation",
    "subscriptionTypesEnabled",
    "superUserRoles",
    "supportedNamespaceBundleSplitAlgorithms",
    "topicFactoryClassName",
    "topicNameCacheMaxCapacity",
    "topicPublisherThrottlingTickTimeMillis",
    "transactionLogBatchedWriteEnabled",
    "transactionPendingAckBatchedWriteEnabled",
    "unblockStuckSubscriptionEnabled",
];

/// The routes of this module.
pub(in crate::admin) fn routes() -> Routes {
    Routes::new()
        .route(
            "/admin/v2/brokers/configuration",
            Access::Superuser,
            get(names),
        )
        .route(
            "/admin/v2/brokers/configuration/values",
            Access::Superuser,
            get(values),
        )
        .route(
            "/admin/v2/brokers/configuration/{name}",
            Access::Superuser,
            axum::routing::delete(remove),
        )
        .route(
            "/admin/v2/brokers/configuration/{name}/{value}",
            Access::Superuser,
            post(update),
        )
}

/// The dynamic keys: Pulsar's that this broker's configuration has.
fn dynamic(ctx: &ServerContext) -> Vec<&'static str> {
    let Ok(Value::Object(settings)) = serde_json::to_value(&*ctx.service.config) else {
        return Vec::new();
    };
    PULSAR_DYNAMIC
        .iter()
        .copied()
        .filter(|k| settings.contains_key(*k))
        .collect()
}

/// The stored values.
fn stored(ctx: &ServerContext) -> Result<BTreeMap<String, String>, Response> {
    let internal = |e: String| fail(StatusCode::INTERNAL_SERVER_ERROR, e);
    match ctx.service.meta_store().get(KEY) {
        Ok(Some(bytes)) => serde_json::from_slice(&bytes).map_err(|e| internal(e.to_string())),
        Ok(None) => Ok(BTreeMap::new()),
        Err(e) => Err(internal(e.to_string())),
    }
}

/// Changes the stored values (one admin call at a time per broker: the admin path is cold).
fn change(
    ctx: &ServerContext,
    f: impl FnOnce(&mut BTreeMap<String, String>),
) -> Result<(), Response> {
    static LOCK: parking_lot::Mutex<()> = parking_lot::Mutex::new(());
    let _held = LOCK.lock();
    let mut values = stored(ctx)?;
    f(&mut values);
    let bytes = serde_json::to_vec(&values)
        .map_err(|e| fail(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
    ctx.service
        .meta_store()
        .put(KEY, &bytes)
        .map_err(|e| fail(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))
}

async fn names(State(ctx): Ctx) -> Response {
    Json(dynamic(&ctx)).into_response()
}

async fn values(State(ctx): Ctx) -> Response {
    match stored(&ctx) {
        Ok(v) => Json(v).into_response(),
        Err(r) => r,
    }
}

/// Pulsar's `updateDynamicConfiguration`: 200, or 412 for a key that is not dynamic.
async fn update(State(ctx): Ctx, Path((name, value)): Path<(String, String)>) -> Response {
    if !dynamic(&ctx).contains(&name.as_str()) {
        return fail(
            StatusCode::PRECONDITION_FAILED,
            "Can't update non-dynamic configuration",
        );
    }
    match change(&ctx, |m| {
        m.insert(name, value);
    }) {
        Ok(()) => StatusCode::OK.into_response(),
        Err(r) => r,
    }
}

/// Pulsar's `deleteDynamicConfiguration`: 412 for a key that is not dynamic.
async fn remove(State(ctx): Ctx, Path(name): Path<String>) -> Response {
    if !dynamic(&ctx).contains(&name.as_str()) {
        return fail(
            StatusCode::PRECONDITION_FAILED,
            "Can't delete non-dynamic configuration",
        );
    }
    match change(&ctx, |m| {
        m.remove(&name);
    }) {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(r) => r,
    }
}
