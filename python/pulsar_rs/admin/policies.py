"""The policy calls :class:`pulsar_rs.Admin` offers on a namespace (``admin.namespaces``) and on a
topic (``admin.topics``, Pulsar's topic-level policies), written once: the group names the REST
path of a policy (``_policy_path``); the topic level differs from the namespace level only in
the deduplication path (``deduplicationEnabled``) and in sending the TTL as ``?messageTTL=N``.

Policies go by their REST path names (``retention``, ``messageTTL``, ``backlogQuota`` /
``backlogQuotaMap``, ``deduplication`` / ``deduplicationEnabled``, ``publishRate``,
``dispatchRate``, ``subscriptionDispatchRate``, ``replicatorDispatchRate``, ``compactionThreshold``,
``inactiveTopicPolicies``, ``persistence``, PIP-437's ``maxDelayedDeliveryTime`` and
``fixedDelayedDeliveryTime``); a getter answers ``None`` when the policy is not set.
"""

from __future__ import annotations

from typing import Any

from .types import BacklogQuota

__all__ = ["PolicySetters", "TopicPolicySetters"]


class PolicySetters:
    """``get_policy`` / ``set_policy`` / ``remove_policy`` and the typed setters, on a target
    (a namespace ``tenant/name`` or a topic) the group's ``_policy_path`` turns into a path."""

    _a: Any
    #: The REST path name of the deduplication flag at this level.
    DEDUPLICATION = "deduplication"

    def _policy_path(self, target: str, policy: str) -> str:
        raise NotImplementedError

    def get_policy(self, target: str, policy: str) -> Any:
        return self._a.request("GET", self._policy_path(target, policy))

    def set_policy(self, target: str, policy: str, value: Any, query: str = "") -> None:
        self._a.request("POST", self._policy_path(target, policy) + query, value)

    def remove_policy(self, target: str, policy: str, query: str = "") -> None:
        self._a.request("DELETE", self._policy_path(target, policy) + query)

    def set_retention(self, target: str, time_in_minutes: int, size_in_mb: int) -> None:
        """-1 is unlimited, 0 no retention (as Pulsar's ``RetentionPolicies``)."""
        body = {"retentionTimeInMinutes": time_in_minutes, "retentionSizeInMB": size_in_mb}
        self.set_policy(target, "retention", body)

    def set_persistence(
        self, target: str, ensemble: int, write_quorum: int, ack_quorum: int, mark_delete_max_rate: float = 0.0
    ) -> None:
        """E, Qw and Qa of the new ledgers of a namespace's (or a topic's) topics on BookKeeper
        (Pulsar's ``PersistencePolicies``): each ledger created from now on, including the
        next rollover of a loaded topic, takes them."""
        body = {
            "bookkeeperEnsemble": ensemble,
            "bookkeeperWriteQuorum": write_quorum,
            "bookkeeperAckQuorum": ack_quorum,
            "managedLedgerMaxMarkDeleteRate": mark_delete_max_rate,
        }
        self.set_policy(target, "persistence", body)

    def set_message_ttl(self, target: str, seconds: int) -> None:
        self.set_policy(target, "messageTTL", seconds)

    def set_backlog_quota(
        self,
        target: str,
        limit_size: int = -1,
        limit_time: int = -1,
        policy: str = "producer_request_hold",
        quota_type: str = "destination_storage",
    ) -> None:
        """``policy``: producer_request_hold, producer_exception or consumer_backlog_eviction;
        ``quota_type``: destination_storage (``limit_size`` bytes) or message_age
        (``limit_time`` seconds)."""
        body = {"limitSize": limit_size, "limitTime": limit_time, "policy": policy}
        self.set_policy(target, "backlogQuota", body, f"?backlogQuotaType={quota_type}")

    def get_backlog_quotas(self, target: str) -> dict[str, BacklogQuota]:
        """Quota type → ``{"limitSize", "limitTime", "policy"}``."""
        return self.get_policy(target, "backlogQuotaMap") or {}

    def remove_backlog_quota(self, target: str, quota_type: str = "destination_storage") -> None:
        self.remove_policy(target, "backlogQuota", f"?backlogQuotaType={quota_type}")

    def set_deduplication(self, target: str, enabled: bool) -> None:
        self.set_policy(target, self.DEDUPLICATION, enabled)

    def set_publish_rate(self, target: str, msg_rate: int = -1, byte_rate: int = -1) -> None:
        body = {"publishThrottlingRateInMsg": msg_rate, "publishThrottlingRateInByte": byte_rate}
        self.set_policy(target, "publishRate", body)

    def set_dispatch_rate(
        self,
        target: str,
        msg_rate: int = -1,
        byte_rate: int = -1,
        period_seconds: int = 1,
        relative_to_publish_rate: bool = False,
        subscription: bool = False,
    ) -> None:
        """The topic-wide dispatch rate, or each subscription's with ``subscription``."""
        body = {
            "dispatchThrottlingRateInMsg": msg_rate,
            "dispatchThrottlingRateInByte": byte_rate,
            "ratePeriodInSecond": period_seconds,
            "relativeToPublishRate": relative_to_publish_rate,
        }
        self.set_policy(target, "subscriptionDispatchRate" if subscription else "dispatchRate", body)

    def set_replicator_dispatch_rate(
        self, target: str, msg_rate: int = -1, byte_rate: int = -1, period_seconds: int = 1
    ) -> None:
        """The rate geo-replication sends this namespace's (or topic's) messages to each remote
        cluster at (Pulsar's ``replicatorDispatchRate``): a topic's wins over its namespace's,
        which is this cluster's entry of the namespace's per-cluster map, and wins over the
        broker's ``dispatchThrottlingRatePerReplicatorIn{Msg,Byte}``; -1 is unlimited."""
        body = {
            "dispatchThrottlingRateInMsg": msg_rate,
            "dispatchThrottlingRateInByte": byte_rate,
            "ratePeriodInSecond": period_seconds,
        }
        self.set_policy(target, "replicatorDispatchRate", body)

    def get_replicator_dispatch_rate(self, target: str) -> dict[str, Any] | None:
        """The ``replicatorDispatchRate`` set here (``None``: not set)."""
        return self.get_policy(target, "replicatorDispatchRate")

    def remove_replicator_dispatch_rate(self, target: str) -> None:
        self.remove_policy(target, "replicatorDispatchRate")

    def set_compaction_threshold(self, target: str, threshold_bytes: int) -> None:
        self.set_policy(target, "compactionThreshold", threshold_bytes)

    def set_inactive_topic_policies(
        self,
        target: str,
        delete_while_inactive: bool,
        max_inactive_duration_seconds: int,
        delete_mode: str = "delete_when_no_subscriptions",
    ) -> None:
        """``delete_mode``: delete_when_no_subscriptions or delete_when_subscriptions_caught_up."""
        body = {
            "deleteWhileInactive": delete_while_inactive,
            "maxInactiveDurationSeconds": max_inactive_duration_seconds,
            "inactiveTopicDeleteMode": delete_mode,
        }
        self.set_policy(target, "inactiveTopicPolicies", body)

    def set_max_delivery_delay(self, target: str, seconds: int) -> None:
        """PIP-437 (Pulsar 4.2, ``set-max-delivery-delay``): a SEND asking for a delivery more
        than ``seconds`` ahead is refused (``NotAllowedError``); the topic's value wins over the
        namespace's, which wins over the broker's ``delayedDeliveryMaxDelayInMillis``."""
        self.set_policy(target, "maxDelayedDeliveryTime", int(seconds))

    def get_max_delivery_delay(self, target: str) -> int | None:
        """The ``maxDelayedDeliveryTime`` set here, in seconds (``None``: not set)."""
        return self.get_policy(target, "maxDelayedDeliveryTime")

    def remove_max_delivery_delay(self, target: str) -> None:
        self.remove_policy(target, "maxDelayedDeliveryTime")

    def set_fixed_delivery_delay(self, target: str, seconds: int) -> None:
        """PIP-437 (``set-fixed-delivery-delay``): every message is delivered ``seconds`` after
        the broker takes it, whatever delay its producer asked for (the maximum then does not
        apply); 0 turns it off. Shared and Key_Shared subscriptions only, as delayed delivery."""
        self.set_policy(target, "fixedDelayedDeliveryTime", int(seconds))

    def get_fixed_delivery_delay(self, target: str) -> int | None:
        """The ``fixedDelayedDeliveryTime`` set here, in seconds (``None``: not set)."""
        return self.get_policy(target, "fixedDelayedDeliveryTime")

    def remove_fixed_delivery_delay(self, target: str) -> None:
        self.remove_policy(target, "fixedDelayedDeliveryTime")


class TopicPolicySetters(PolicySetters):
    """Topic-level policies (``/admin/v2/persistent/{t}/{ns}/{topic}/{policy}``)."""

    DEDUPLICATION = "deduplicationEnabled"

    def delete_topic_policies(self, topic: str) -> None:
        """PIP-422 (``pulsar-admin topicPolicies delete``): every policy set on the topic, local and
        global, forgotten; also for a topic that no longer exists. Its properties stay."""
        self.remove_policy(topic, "policies")

    def set_message_ttl(self, target: str, seconds: int) -> None:
        """Pulsar sends a topic's TTL as ``?messageTTL=N`` (no body)."""
        self.set_policy(target, "messageTTL", None, f"?messageTTL={int(seconds)}")
