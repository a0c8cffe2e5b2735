"""A client for the broker's admin REST API (Pulsar's ``/admin/v2`` paths), with the standard
library only: ``Admin(url, token=None)`` with ``clusters``, ``tenants``, ``namespaces`` and
``topics`` groups named as ``pulsar-admin``'s commands (``topics.skip``, ``topics.reset_cursor``,
``namespaces.set_retention``, ...). A message id is ``"earliest"``, ``"latest"``, ``"L:E"`` or a
``(ledger_id, entry_id)`` pair.

>>> admin = Admin("http://127.0.0.1:8080")                       # doctest: +SKIP
>>> admin.tenants.create("acme", admin_roles=["ops"])             # doctest: +SKIP
>>> admin.namespaces.create("acme/orders")                        # doctest: +SKIP
>>> admin.topics.stats("persistent://acme/orders/t")["msgInCounter"]  # doctest: +SKIP
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from ._native import PulsarRsError

__all__ = ["Admin", "AdminError"]


class AdminError(PulsarRsError):
    """The admin API refused a request: ``status`` is the HTTP code, ``reason`` Pulsar's text."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(f"{status}: {reason}")
        self.status = status
        self.reason = reason


def _topic_path(topic: str) -> str:
    """``persistent://t/ns/x`` (or ``t/ns/x``, or ``x`` in public/default) → ``persistent/t/ns/x``."""
    domain, sep, rest = topic.partition("://")
    if not sep:
        domain, rest = "persistent", topic
    parts = rest.split("/")
    if len(parts) == 1:
        parts = ["public", "default", *parts]
    if len(parts) != 3 or not all(parts):
        raise ValueError(f"invalid topic name {topic!r}")
    return "/".join([domain, *(urllib.parse.quote(p, safe="") for p in parts)])


def _message_id(message_id: str | tuple[int, int], excluded: bool = False) -> dict[str, Any]:
    """A message id as Pulsar's ``ResetCursorData`` JSON (``earliest`` is -1:-1, ``latest``
    Long.MAX_VALUE twice, as ``MessageId.earliest`` / ``MessageId.latest``)."""
    if message_id == "earliest":
        ledger, entry = -1, -1
    elif message_id == "latest":
        ledger, entry = 2**63 - 1, 2**63 - 1
    elif isinstance(message_id, str):
        parts = message_id.split(":")
        try:
            ledger, entry = int(parts[0]), int(parts[1])
        except (ValueError, IndexError):
            raise ValueError(f"a message id is earliest, latest or LEDGER:ENTRY, got {message_id!r}") from None
    else:
        ledger, entry = message_id
    return {"ledgerId": ledger, "entryId": entry, "partitionIndex": -1, "isExcluded": excluded}


def _sub(subscription: str) -> str:
    return urllib.parse.quote(subscription, safe="")


def _ns_path(namespace: str) -> str:
    tenant, sep, ns = namespace.partition("/")
    if not sep or not tenant or not ns or "/" in ns:
        raise ValueError(f"a namespace is tenant/name, got {namespace!r}")
    return f"{urllib.parse.quote(tenant, safe='')}/{urllib.parse.quote(ns, safe='')}"


class Admin:
    """The admin REST API of a broker at ``url``; ``token`` is sent as a Bearer token."""

    def __init__(self, url: str, token: str | None = None, timeout: float = 10.0) -> None:
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.clusters = _Clusters(self)
        self.tenants = _Tenants(self)
        self.namespaces = _Namespaces(self)
        self.topics = _Topics(self)

    def request(self, method: str, path: str, body: Any = None, raw: bytes | None = None) -> Any:
        """One call; returns the parsed JSON answer (``None`` when empty). Raises
        :class:`AdminError` for a 4xx/5xx answer."""
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        req = urllib.request.Request(self.url + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if self.token:
            req.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                text = r.read().decode()
        except urllib.error.HTTPError as e:
            text = e.read().decode(errors="replace")
            try:
                reason = json.loads(text).get("reason", text)
            except (ValueError, AttributeError):
                reason = text or e.reason
            raise AdminError(e.code, str(reason)) from None
        return json.loads(text) if text.strip() else None


class _Group:
    def __init__(self, admin: Admin) -> None:
        self._a = admin


class _Clusters(_Group):
    def list(self) -> list[str]:
        return self._a.request("GET", "/admin/v2/clusters")

    def get(self, name: str) -> dict[str, Any]:
        return self._a.request("GET", f"/admin/v2/clusters/{name}")

    def create(self, name: str, data: dict[str, Any]) -> None:
        self._a.request("PUT", f"/admin/v2/clusters/{name}", data)

    def update(self, name: str, data: dict[str, Any]) -> None:
        self._a.request("POST", f"/admin/v2/clusters/{name}", data)

    def delete(self, name: str) -> None:
        self._a.request("DELETE", f"/admin/v2/clusters/{name}")


class _Tenants(_Group):
    def list(self) -> list[str]:
        return self._a.request("GET", "/admin/v2/tenants")

    def get(self, name: str) -> dict[str, Any]:
        return self._a.request("GET", f"/admin/v2/tenants/{name}")

    def _info(self, admin_roles: list[str] | tuple[str, ...], allowed_clusters: list[str] | None) -> dict[str, Any]:
        clusters = allowed_clusters if allowed_clusters is not None else self._a.clusters.list()
        return {"adminRoles": list(admin_roles), "allowedClusters": list(clusters)}

    def create(
        self, name: str, admin_roles: list[str] | tuple[str, ...] = (), allowed_clusters: list[str] | None = None
    ) -> None:
        """Creates a tenant; ``allowed_clusters`` defaults to every cluster (as pulsar-admin)."""
        self._a.request("PUT", f"/admin/v2/tenants/{name}", self._info(admin_roles, allowed_clusters))

    def update(
        self, name: str, admin_roles: list[str] | tuple[str, ...] = (), allowed_clusters: list[str] | None = None
    ) -> None:
        self._a.request("POST", f"/admin/v2/tenants/{name}", self._info(admin_roles, allowed_clusters))

    def delete(self, name: str) -> None:
        self._a.request("DELETE", f"/admin/v2/tenants/{name}")


class _Namespaces(_Group):
    def list(self, tenant: str) -> list[str]:
        return self._a.request("GET", f"/admin/v2/namespaces/{tenant}")

    def create(self, namespace: str, policies: dict[str, Any] | None = None) -> None:
        """Creates ``tenant/name``, optionally with a Pulsar ``Policies`` document."""
        self._a.request("PUT", f"/admin/v2/namespaces/{_ns_path(namespace)}", policies)

    def delete(self, namespace: str) -> None:
        self._a.request("DELETE", f"/admin/v2/namespaces/{_ns_path(namespace)}")

    def policies(self, namespace: str) -> dict[str, Any]:
        """The namespace's ``Policies`` document."""
        return self._a.request("GET", f"/admin/v2/namespaces/{_ns_path(namespace)}")

    def permissions(self, namespace: str) -> dict[str, list[str]]:
        return self._a.request("GET", f"/admin/v2/namespaces/{_ns_path(namespace)}/permissions")

    def grant_permission(self, namespace: str, role: str, actions: list[str]) -> None:
        self._a.request("POST", f"/admin/v2/namespaces/{_ns_path(namespace)}/permissions/{role}", actions)

    def revoke_permission(self, namespace: str, role: str) -> None:
        self._a.request("DELETE", f"/admin/v2/namespaces/{_ns_path(namespace)}/permissions/{role}")

    def subscription_permissions(self, namespace: str) -> dict[str, list[str]]:
        """Subscription → the only roles that may subscribe with it."""
        return self._a.request("GET", f"/admin/v2/namespaces/{_ns_path(namespace)}/permissions/subscription")

    def grant_subscription_permission(self, namespace: str, subscription: str, roles: list[str]) -> None:
        path = f"/admin/v2/namespaces/{_ns_path(namespace)}/permissions/subscription/{_sub(subscription)}"
        self._a.request("POST", path, roles)

    def revoke_subscription_permission(self, namespace: str, subscription: str, role: str) -> None:
        path = f"/admin/v2/namespaces/{_ns_path(namespace)}/permissions/{_sub(subscription)}/{role}"
        self._a.request("DELETE", path)

    def get_subscription_auth_mode(self, namespace: str) -> str:
        return self._a.request("GET", f"/admin/v2/namespaces/{_ns_path(namespace)}/subscriptionAuthMode")

    def set_subscription_auth_mode(self, namespace: str, mode: str) -> None:
        """``"None"`` or ``"Prefix"`` (subscription names must start with the role)."""
        self._a.request("POST", f"/admin/v2/namespaces/{_ns_path(namespace)}/subscriptionAuthMode", mode)

    # Policies, by their REST path names (``retention``, ``messageTTL``, ``backlogQuotaMap``,
    # ``deduplication``, ``publishRate``, ``dispatchRate``, ``subscriptionDispatchRate``,
    # ``compactionThreshold``, ``inactiveTopicPolicies``); ``None`` when not set.
    def get_policy(self, namespace: str, policy: str) -> Any:
        return self._a.request("GET", f"/admin/v2/namespaces/{_ns_path(namespace)}/{policy}")

    def set_policy(self, namespace: str, policy: str, value: Any, query: str = "") -> None:
        self._a.request("POST", f"/admin/v2/namespaces/{_ns_path(namespace)}/{policy}{query}", value)

    def remove_policy(self, namespace: str, policy: str, query: str = "") -> None:
        self._a.request("DELETE", f"/admin/v2/namespaces/{_ns_path(namespace)}/{policy}{query}")

    def set_retention(self, namespace: str, time_in_minutes: int, size_in_mb: int) -> None:
        """-1 is unlimited, 0 no retention (as Pulsar's ``RetentionPolicies``)."""
        body = {"retentionTimeInMinutes": time_in_minutes, "retentionSizeInMB": size_in_mb}
        self.set_policy(namespace, "retention", body)

    def set_message_ttl(self, namespace: str, seconds: int) -> None:
        self.set_policy(namespace, "messageTTL", seconds)

    def set_backlog_quota(
        self,
        namespace: str,
        limit_size: int = -1,
        limit_time: int = -1,
        policy: str = "producer_request_hold",
        quota_type: str = "destination_storage",
    ) -> None:
        """``policy``: producer_request_hold, producer_exception or consumer_backlog_eviction;
        ``quota_type``: destination_storage (``limit_size`` bytes) or message_age
        (``limit_time`` seconds)."""
        body = {"limitSize": limit_size, "limitTime": limit_time, "policy": policy}
        self.set_policy(namespace, "backlogQuota", body, f"?backlogQuotaType={quota_type}")

    def remove_backlog_quota(self, namespace: str, quota_type: str = "destination_storage") -> None:
        self.remove_policy(namespace, "backlogQuota", f"?backlogQuotaType={quota_type}")

    def set_deduplication(self, namespace: str, enabled: bool) -> None:
        self.set_policy(namespace, "deduplication", enabled)

    def set_publish_rate(self, namespace: str, msg_rate: int = -1, byte_rate: int = -1) -> None:
        body = {"publishThrottlingRateInMsg": msg_rate, "publishThrottlingRateInByte": byte_rate}
        self.set_policy(namespace, "publishRate", body)

    def set_dispatch_rate(
        self,
        namespace: str,
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
        self.set_policy(namespace, "subscriptionDispatchRate" if subscription else "dispatchRate", body)

    def set_compaction_threshold(self, namespace: str, threshold_bytes: int) -> None:
        self.set_policy(namespace, "compactionThreshold", threshold_bytes)

    def set_inactive_topic_policies(
        self,
        namespace: str,
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
        self.set_policy(namespace, "inactiveTopicPolicies", body)


class _Topics(_Group):
    def list(self, namespace: str) -> list[str]:
        return self._a.request("GET", f"/admin/v2/persistent/{_ns_path(namespace)}")

    def list_partitioned(self, namespace: str) -> list[str]:
        return self._a.request("GET", f"/admin/v2/persistent/{_ns_path(namespace)}/partitioned")

    def create(self, topic: str, partitions: int = 0) -> None:
        """Creates a topic, partitioned when ``partitions`` > 0."""
        path = f"/admin/v2/{_topic_path(topic)}"
        if partitions > 0:
            self._a.request("PUT", path + "/partitions", raw=str(partitions).encode())
        else:
            self._a.request("PUT", path)

    def delete(self, topic: str, partitioned: bool = False) -> None:
        path = f"/admin/v2/{_topic_path(topic)}"
        self._a.request("DELETE", path + "/partitions" if partitioned else path)

    def stats(self, topic: str) -> dict[str, Any]:
        return self._a.request("GET", f"/admin/v2/{_topic_path(topic)}/stats")

    def internal_stats(self, topic: str) -> dict[str, Any]:
        return self._a.request("GET", f"/admin/v2/{_topic_path(topic)}/internalStats")

    def subscriptions(self, topic: str) -> list[str]:
        return self._a.request("GET", f"/admin/v2/{_topic_path(topic)}/subscriptions")

    def partitioned_stats(self, topic: str, per_partition: bool = True) -> dict[str, Any]:
        """The partitions' stats summed, with ``metadata.partitions`` and (``per_partition``)
        each partition's own under ``partitions``."""
        flag = "true" if per_partition else "false"
        return self._a.request("GET", f"/admin/v2/{_topic_path(topic)}/partitioned-stats?perPartition={flag}")

    def create_partitioned_topic(self, topic: str, partitions: int) -> None:
        self._a.request("PUT", f"/admin/v2/{_topic_path(topic)}/partitions", raw=str(partitions).encode())

    def get_partitioned_topic_metadata(self, topic: str) -> dict[str, Any]:
        """``{"partitions": N}``, 0 for a topic that is not partitioned."""
        return self._a.request("GET", f"/admin/v2/{_topic_path(topic)}/partitions")

    def update_partitioned_topic(self, topic: str, partitions: int) -> None:
        """Raises the partition count (it never shrinks)."""
        self._a.request("POST", f"/admin/v2/{_topic_path(topic)}/partitions", raw=str(partitions).encode())

    def delete_partitioned_topic(self, topic: str) -> None:
        self.delete(topic, partitioned=True)

    def create_subscription(self, topic: str, subscription: str, message_id: str | tuple[int, int] = "latest") -> None:
        """A durable subscription starting at ``message_id`` (default ``latest``)."""
        body = _message_id(message_id)
        self._a.request("PUT", f"/admin/v2/{_topic_path(topic)}/subscription/{_sub(subscription)}", body)

    def unsubscribe(self, topic: str, subscription: str) -> None:
        """Deletes a subscription (refused while it has consumers)."""
        self._a.request("DELETE", f"/admin/v2/{_topic_path(topic)}/subscription/{_sub(subscription)}")

    def skip(self, topic: str, subscription: str, count: int) -> None:
        """Skips (acknowledges) the next ``count`` messages of the subscription's backlog."""
        self._a.request("POST", f"/admin/v2/{_topic_path(topic)}/subscription/{_sub(subscription)}/skip/{count}")

    def clear_backlog(self, topic: str, subscription: str) -> None:
        """Skips the whole backlog (pulsar-admin's ``clear-backlog`` / ``skip-all``)."""
        self._a.request("POST", f"/admin/v2/{_topic_path(topic)}/subscription/{_sub(subscription)}/skip_all")

    skip_all = clear_backlog

    def reset_cursor(
        self,
        topic: str,
        subscription: str,
        timestamp_ms: int | None = None,
        message_id: str | tuple[int, int] | None = None,
        excluded: bool = False,
    ) -> None:
        """Moves the subscription to the first message published at or after ``timestamp_ms``,
        or to ``message_id`` (the one after it when ``excluded``); consumers are disconnected."""
        path = f"/admin/v2/{_topic_path(topic)}/subscription/{_sub(subscription)}/resetcursor"
        if (timestamp_ms is None) == (message_id is None):
            raise ValueError("reset_cursor takes one of timestamp_ms and message_id")
        if timestamp_ms is not None:
            self._a.request("POST", f"{path}/{timestamp_ms}")
        else:
            self._a.request("POST", path, _message_id(message_id, excluded))  # type: ignore[arg-type]

    def expire_messages(
        self,
        topic: str,
        subscription: str,
        seconds: int | None = None,
        *,
        message_id: str | tuple[int, int] | None = None,
        excluded: bool = False,
        batch_index: int = -1,
    ) -> None:
        """Acknowledges the subscription's messages published more than ``seconds`` ago, or those
        up to ``message_id`` (``LEDGER:ENTRY``; Pulsar's ``expireMessages`` by position, with its
        ``isExcluded`` and ``batchIndex``). Not issued (409): a position past the last message."""
        if (seconds is None) == (message_id is None):
            raise ValueError("expire_messages takes one of seconds and message_id")
        path = f"/admin/v2/{_topic_path(topic)}/subscription/{_sub(subscription)}/expireMessages"
        if seconds is not None:
            self._a.request("POST", f"{path}/{seconds}")
        else:
            body = _message_id(message_id, excluded)  # type: ignore[arg-type]
            self._a.request("POST", path, {**body, "batchIndex": batch_index})

    def expire_messages_all_subscriptions(self, topic: str, seconds: int) -> None:
        self._a.request("POST", f"/admin/v2/{_topic_path(topic)}/all_subscription/expireMessages/{seconds}")

    def permissions(self, topic: str) -> dict[str, list[str]]:
        return self._a.request("GET", f"/admin/v2/{_topic_path(topic)}/permissions")

    def grant_permission(self, topic: str, role: str, actions: list[str]) -> None:
        self._a.request("POST", f"/admin/v2/{_topic_path(topic)}/permissions/{role}", actions)

    def revoke_permission(self, topic: str, role: str) -> None:
        self._a.request("DELETE", f"/admin/v2/{_topic_path(topic)}/permissions/{role}")
