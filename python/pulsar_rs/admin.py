"""A client for the broker's admin REST API (Pulsar's ``/admin/v2`` paths), with the standard
library only: ``Admin(url, token=None)`` with ``brokers``, ``clusters``, ``tenants``,
``namespaces``, ``topics``, ``schemas`` and ``transactions`` groups named as ``pulsar-admin``'s
commands (``topics.skip``, ``topics.reset_cursor``, ``namespaces.set_retention``,
``brokers.leader_broker``, ...). A message id is ``"earliest"``, ``"latest"``, ``"L:E"`` or a
``(ledger_id, entry_id)`` pair.

In a cluster a broker may answer ``307 Temporary Redirect`` (a lookup of a topic another broker
owns, the unload of a bundle another broker owns): the call is repeated at the ``Location`` with
the same method, body and headers (the token too), as Pulsar's admin client follows them.

>>> admin = Admin("http://127.0.0.1:8080")                       # doctest: +SKIP
>>> admin.tenants.create("acme", admin_roles=["ops"])             # doctest: +SKIP
>>> admin.namespaces.create("acme/orders")                        # doctest: +SKIP
>>> admin.topics.stats("persistent://acme/orders/t")["msgInCounter"]  # doctest: +SKIP
"""

from __future__ import annotations

import builtins
import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from ._admin_limits import NamespaceLimits, TopicLimits
from ._admin_messages import messages_of
from ._admin_policies import PolicySetters, TopicPolicySetters
from ._admin_transactions import Transactions
from ._native import PulsarRsError, parse_topic_name

__all__ = ["Admin", "AdminError"]

#: How many redirects one call follows before it gives up (urllib's own limit).
MAX_REDIRECTS = 10


class AdminError(PulsarRsError):
    """The admin API refused a request: ``status`` is the HTTP code, ``reason`` Pulsar's text."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(f"{status}: {reason}")
        self.status = status
        self.reason = reason


def _topic_path(topic: str) -> str:
    """``persistent://t/ns/x`` (or ``t/ns/x``, or ``x`` in public/default) → ``persistent/t/ns/x``,
    by the broker's own parser (``InvalidNameError``, a ``ValueError``, for a name it refuses)."""
    domain, *parts = parse_topic_name(topic)
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


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Leaves 307 and 308 to :meth:`Admin.request_raw`, which repeats the call with its method
    and body (urllib follows them for GET only, and drops the body)."""

    def http_error_307(self, req: Any, fp: Any, code: int, msg: str, headers: Any) -> None:
        return None

    http_error_308 = http_error_307


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
        self._opener = urllib.request.build_opener(_NoRedirect)
        self.clusters = _Clusters(self)
        self.tenants = _Tenants(self)
        self.namespaces = _Namespaces(self)
        self.topics = _Topics(self)
        self.brokers = _Brokers(self)
        self.schemas = _Schemas(self)
        self.transactions = Transactions(self)

    def request(self, method: str, path: str, body: Any = None, raw: bytes | None = None) -> Any:
        """One call; returns the parsed JSON answer (``None`` when empty). Raises
        :class:`AdminError` for a 4xx/5xx answer."""
        text = self.request_raw(method, path, body, raw)[1].decode()
        return json.loads(text) if text.strip() else None

    def request_raw(
        self, method: str, path: str, body: Any = None, raw: bytes | None = None
    ) -> tuple[dict[str, str], bytes]:
        """One call; returns the answer's headers and body bytes (messages, health checks).
        A 307 or 308 answer is followed: the same call again at its ``Location``."""
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        url, status = self.url + path, 0
        for _ in range(MAX_REDIRECTS + 1):
            req = urllib.request.Request(url, data=data, method=method)
            if data is not None:
                req.add_header("Content-Type", "application/json")
            if self.token:
                req.add_header("Authorization", f"Bearer {self.token}")
            try:
                with self._opener.open(req, timeout=self.timeout) as r:
                    return dict(r.headers.items()), r.read()
            except urllib.error.HTTPError as e:
                with e:
                    location = e.headers.get("Location") if e.code in (307, 308) else None
                    if not location:
                        raise _admin_error(e) from None
                    url = urllib.parse.urljoin(url, location)
                    status = e.code
        raise AdminError(status, f"more than {MAX_REDIRECTS} redirects, the last to {url}")


def _admin_error(e: urllib.error.HTTPError) -> AdminError:
    """The broker's refusal: its status and Pulsar's ``reason`` (or the body as it came)."""
    text = e.read().decode(errors="replace")
    try:
        reason = json.loads(text).get("reason", text)
    except (ValueError, AttributeError):
        reason = text or e.reason
    return AdminError(e.code, str(reason))


class _Group:
    def __init__(self, admin: Admin) -> None:
        self._a = admin


class _Brokers(_Group):
    def healthcheck(self) -> str:
        """``ok`` when the broker serves (pulsar-admin's ``brokers healthcheck``)."""
        return self._a.request_raw("GET", "/admin/v2/brokers/health")[1].decode()

    def list(self, cluster: str) -> list[str]:
        """The ids (``host:webServicePort``) of the cluster's live brokers (pulsar-admin's
        ``brokers list``; 412 for another cluster's name). A broker on its own lists itself."""
        return self._a.request("GET", f"/admin/v2/brokers/{urllib.parse.quote(cluster, safe='')}")

    def leader_broker(self) -> dict[str, str]:
        """``{"brokerId", "serviceUrl"}`` of the cluster's leader, the broker that places unowned
        bundles (pulsar-admin's ``brokers leader-broker``); a broker on its own is its leader."""
        return self._a.request("GET", "/admin/v2/brokers/leaderBroker")

    def owned_namespaces(self, cluster: str, broker_id: str) -> dict[str, dict[str, Any]]:
        """The bundles broker ``broker_id`` (``host:port``, as :meth:`list` names it) owns:
        ``{"tenant/ns/0x..._0x...": {"broker_assignment", "is_controlled", "is_active"}}``
        (pulsar-admin's ``brokers namespaces CLUSTER --url BROKER``; 404 for an unknown broker)."""
        path = f"/admin/v2/brokers/{urllib.parse.quote(cluster, safe='')}/{urllib.parse.quote(broker_id, safe=':')}"
        return self._a.request("GET", path + "/ownedNamespaces")


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

    def _info(
        self, admin_roles: builtins.list[str] | tuple[str, ...], allowed_clusters: builtins.list[str] | None
    ) -> dict[str, Any]:
        clusters = allowed_clusters if allowed_clusters is not None else self._a.clusters.list()
        return {"adminRoles": list(admin_roles), "allowedClusters": list(clusters)}

    def create(
        self,
        name: str,
        admin_roles: builtins.list[str] | tuple[str, ...] = (),
        allowed_clusters: builtins.list[str] | None = None,
    ) -> None:
        """Creates a tenant; ``allowed_clusters`` defaults to every cluster (as pulsar-admin)."""
        self._a.request("PUT", f"/admin/v2/tenants/{name}", self._info(admin_roles, allowed_clusters))

    def update(
        self,
        name: str,
        admin_roles: builtins.list[str] | tuple[str, ...] = (),
        allowed_clusters: builtins.list[str] | None = None,
    ) -> None:
        self._a.request("POST", f"/admin/v2/tenants/{name}", self._info(admin_roles, allowed_clusters))

    def delete(self, name: str) -> None:
        self._a.request("DELETE", f"/admin/v2/tenants/{name}")


class _Namespaces(_Group, PolicySetters, NamespaceLimits):
    def list(self, tenant: str) -> list[str]:
        return self._a.request("GET", f"/admin/v2/namespaces/{tenant}")

    def create(self, namespace: str, policies: dict[str, Any] | None = None) -> None:
        """Creates ``tenant/name``, optionally with a Pulsar ``Policies`` document."""
        self._a.request("PUT", f"/admin/v2/namespaces/{_ns_path(namespace)}", policies)

    def delete(self, namespace: str, force: bool = False) -> None:
        """Deletes an empty namespace (409 while it has topics); ``force`` deletes its topics
        first, closing their clients, where the broker's ``forceDeleteNamespaceAllowed`` allows
        it (else 405)."""
        path = f"/admin/v2/namespaces/{_ns_path(namespace)}"
        self._a.request("DELETE", path + ("?force=true" if force else ""))

    def policies(self, namespace: str) -> dict[str, Any]:
        """The namespace's ``Policies`` document."""
        return self._a.request("GET", f"/admin/v2/namespaces/{_ns_path(namespace)}")

    def permissions(self, namespace: str) -> dict[str, builtins.list[str]]:
        return self._a.request("GET", f"/admin/v2/namespaces/{_ns_path(namespace)}/permissions")

    def grant_permission(self, namespace: str, role: str, actions: builtins.list[str]) -> None:
        self._a.request("POST", f"/admin/v2/namespaces/{_ns_path(namespace)}/permissions/{role}", actions)

    def revoke_permission(self, namespace: str, role: str) -> None:
        self._a.request("DELETE", f"/admin/v2/namespaces/{_ns_path(namespace)}/permissions/{role}")

    def get_schema_compatibility_strategy(self, namespace: str) -> str:
        """The namespace's strategy (``UNDEFINED``: the broker's ``schemaCompatibilityStrategy``)."""
        return self._a.request("GET", f"/admin/v2/namespaces/{_ns_path(namespace)}/schemaCompatibilityStrategy")

    def set_schema_compatibility_strategy(self, namespace: str, strategy: str) -> None:
        """``ALWAYS_INCOMPATIBLE``, ``ALWAYS_COMPATIBLE``, ``BACKWARD``, ``FORWARD``, ``FULL`` or a
        ``*_TRANSITIVE`` one; ``UNDEFINED`` inherits the broker's."""
        path = f"/admin/v2/namespaces/{_ns_path(namespace)}/schemaCompatibilityStrategy"
        self._a.request("PUT", path, strategy.upper())

    def get_is_allow_auto_update_schema(self, namespace: str) -> bool | None:
        return self._a.request("GET", f"/admin/v2/namespaces/{_ns_path(namespace)}/isAllowAutoUpdateSchema")

    def set_is_allow_auto_update_schema(self, namespace: str, enabled: bool) -> None:
        """Whether producers may register new schema versions in this namespace."""
        self._a.request("POST", f"/admin/v2/namespaces/{_ns_path(namespace)}/isAllowAutoUpdateSchema", enabled)

    def get_schema_validation_enforce(self, namespace: str) -> bool:
        return self._a.request("GET", f"/admin/v2/namespaces/{_ns_path(namespace)}/schemaValidationEnforced")

    def set_schema_validation_enforce(self, namespace: str, enabled: bool) -> None:
        """Whether producers without a schema are refused on topics that have one."""
        self._a.request("POST", f"/admin/v2/namespaces/{_ns_path(namespace)}/schemaValidationEnforced", enabled)

    def subscription_permissions(self, namespace: str) -> dict[str, builtins.list[str]]:
        """Subscription → the only roles that may subscribe with it."""
        return self._a.request("GET", f"/admin/v2/namespaces/{_ns_path(namespace)}/permissions/subscription")

    def grant_subscription_permission(self, namespace: str, subscription: str, roles: builtins.list[str]) -> None:
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

    def topics(self, namespace: str) -> builtins.list[str]:
        """Every topic of the namespace, persistent and non-persistent, partitions by name
        (pulsar-admin's ``namespaces topics``)."""
        return self._a.request("GET", f"/admin/v2/namespaces/{_ns_path(namespace)}/topics")

    def bundles(self, namespace: str) -> dict[str, Any]:
        """The namespace's bundles: ``{"boundaries": ["0x00000000", ..., "0xffffffff"],
        "numBundles": N}`` (pulsar-admin's ``namespaces bundles``; one bundle on a broker on its
        own)."""
        return self._a.request("GET", f"/admin/v2/namespaces/{_ns_path(namespace)}/bundles")

    def unload(self, namespace: str, bundle: str | None = None, destination_broker: str | None = None) -> None:
        """Unloads the namespace, or only its ``bundle`` (``0x..._0x...``), from the brokers that
        own it: their topics close and the next lookup places the bundles again (pulsar-admin's
        ``namespaces unload [--bundle] [--destinationBroker]``). A bundle another broker owns is
        unloaded there (307). ``destination_broker`` (a broker id, ``host:port``, with a
        ``bundle`` only) asks that the bundle be placed on that broker next."""
        path = f"/admin/v2/namespaces/{_ns_path(namespace)}"
        if bundle is not None:
            path += f"/{urllib.parse.quote(bundle, safe='')}"
        elif destination_broker is not None:
            raise ValueError("destination_broker needs a bundle")
        path += "/unload"
        if destination_broker is not None:
            path += "?" + urllib.parse.urlencode({"destinationBroker": destination_broker})
        self._a.request("PUT", path)

    def _policy_path(self, namespace: str, policy: str) -> str:
        return f"/admin/v2/namespaces/{_ns_path(namespace)}/{policy}"


class _Topics(_Group, TopicPolicySetters, TopicLimits):
    def list(self, namespace: str) -> list[str]:
        return self._a.request("GET", f"/admin/v2/persistent/{_ns_path(namespace)}")

    def list_partitioned(self, namespace: str) -> builtins.list[str]:
        return self._a.request("GET", f"/admin/v2/persistent/{_ns_path(namespace)}/partitioned")

    def create(self, topic: str, partitions: int = 0) -> None:
        """Creates a topic, partitioned when ``partitions`` > 0."""
        path = f"/admin/v2/{_topic_path(topic)}"
        if partitions > 0:
            self._a.request("PUT", path + "/partitions", raw=str(partitions).encode())
        else:
            self._a.request("PUT", path)

    def delete(self, topic: str, partitioned: bool = False, force: bool = False) -> None:
        """Deletes a topic (``partitioned``: the partitioned topic and its partitions): refused
        (412) while producers or consumers are connected, unless ``force``, which closes them."""
        path = f"/admin/v2/{_topic_path(topic)}" + ("/partitions" if partitioned else "")
        self._a.request("DELETE", path + ("?force=true" if force else ""))

    def stats(self, topic: str) -> dict[str, Any]:
        return self._a.request("GET", f"/admin/v2/{_topic_path(topic)}/stats")

    def internal_stats(self, topic: str, metadata: bool = False) -> dict[str, Any]:
        """Pulsar's ``PersistentTopicInternalStats``; with ``metadata``, each ledger on BookKeeper
        carries its ``metadata`` (quorums, state, ensembles) as Pulsar shows it."""
        query = "?metadata=true" if metadata else ""
        return self._a.request("GET", f"/admin/v2/{_topic_path(topic)}/internalStats{query}")

    def subscriptions(self, topic: str) -> builtins.list[str]:
        return self._a.request("GET", f"/admin/v2/{_topic_path(topic)}/subscriptions")

    def partitioned_internal_stats(self, topic: str) -> dict[str, Any]:
        """``{"metadata": {"partitions": N, ...}, "partitions": {name: internal stats}}`` for the
        partitions that exist (pulsar-admin's ``topics partitioned-stats-internal``)."""
        return self._a.request("GET", f"/admin/v2/{_topic_path(topic)}/partitioned-internalStats")

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

    def delete_partitioned_topic(self, topic: str, force: bool = False) -> None:
        self.delete(topic, partitioned=True, force=force)

    def create_subscription(self, topic: str, subscription: str, message_id: str | tuple[int, int] = "latest") -> None:
        """A durable subscription starting at ``message_id`` (default ``latest``)."""
        body = _message_id(message_id)
        self._a.request("PUT", f"/admin/v2/{_topic_path(topic)}/subscription/{_sub(subscription)}", body)

    def unsubscribe(self, topic: str, subscription: str, force: bool = False) -> None:
        """Deletes a subscription: refused (412) while it has consumers, unless ``force``, which
        disconnects them first."""
        query = "?force=true" if force else ""
        self._a.request("DELETE", f"/admin/v2/{_topic_path(topic)}/subscription/{_sub(subscription)}{query}")

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

    def permissions(self, topic: str) -> dict[str, builtins.list[str]]:
        return self._a.request("GET", f"/admin/v2/{_topic_path(topic)}/permissions")

    def grant_permission(self, topic: str, role: str, actions: builtins.list[str]) -> None:
        self._a.request("POST", f"/admin/v2/{_topic_path(topic)}/permissions/{role}", actions)

    def revoke_permission(self, topic: str, role: str) -> None:
        self._a.request("DELETE", f"/admin/v2/{_topic_path(topic)}/permissions/{role}")

    def _policy_path(self, topic: str, policy: str) -> str:
        return f"/admin/v2/{_topic_path(topic)}/{policy}"

    def _messages(self, path: str) -> builtins.list[dict[str, Any]]:
        headers, body = self._a.request_raw("GET", f"/admin/v2/{path}")
        return messages_of(headers, body)

    def peek_messages(self, topic: str, subscription: str, count: int = 1) -> builtins.list[dict[str, Any]]:
        """The first ``count`` messages of the subscription's backlog, without consuming them
        (a batch counts each of its messages); see :mod:`pulsar_rs._admin_messages` for a
        message's keys. Not on a partitioned topic's base name (405): peek a partition."""
        out: list[dict[str, Any]] = []
        sub = _sub(subscription)
        n = 1
        while len(out) < count:
            try:
                out.extend(self._messages(f"{_topic_path(topic)}/subscription/{sub}/position/{n}"))
            except AdminError as e:
                if e.status == 404 and e.reason == "Message not found" and out:
                    break
                raise
            n += 1
        return out[:count]

    def examine_message(
        self, topic: str, initial_position: str = "latest", message_position: int = 1
    ) -> dict[str, Any]:
        """The ``message_position``-th entry from the ``earliest`` or the ``latest`` end (its
        first message when it is a batch)."""
        query = f"initialPosition={initial_position}&messagePosition={int(message_position)}"
        return self._messages(f"{_topic_path(topic)}/examinemessage?{query}")[0]

    def get_message_by_id(self, topic: str, ledger_id: int, entry_id: int) -> builtins.list[dict[str, Any]]:
        """The messages of entry ``ledger_id:entry_id`` (several for a batch)."""
        return self._messages(f"{_topic_path(topic)}/ledger/{int(ledger_id)}/entry/{int(entry_id)}")

    def last_message_id(self, topic: str) -> dict[str, Any]:
        """``{"ledgerId", "entryId", "partitionIndex"}`` of the last message (with ``batchIndex``
        when it ends a batch; -1:-1 when the topic is empty)."""
        return self._a.request("GET", f"/admin/v2/{_topic_path(topic)}/lastMessageId")

    def unload(self, topic: str) -> None:
        """Unloads the topic, or each partition of a partitioned topic, from the broker serving
        it: it is closed until its next use, its producers and consumers reconnect (pulsar-admin's
        ``topics unload``). Nothing stored changes."""
        self._a.request("PUT", f"/admin/v2/{_topic_path(topic)}/unload")

    def compact(self, topic: str) -> None:
        """Starts a compaction run (409 while one runs)."""
        self._a.request("PUT", f"/admin/v2/{_topic_path(topic)}/compaction")

    def compaction_status(self, topic: str) -> dict[str, Any]:
        """``{"status": "NOT_RUN" | "RUNNING" | "SUCCESS" | "ERROR", "lastError": ...}``."""
        return self._a.request("GET", f"/admin/v2/{_topic_path(topic)}/compaction")

    def lookup(self, topic: str) -> dict[str, Any]:
        """The broker serving the topic: ``{"brokerUrl", "brokerUrlTls", "httpUrl", "httpUrlTls",
        "nativeUrl"}`` (the REST lookup; in a cluster the broker asked may redirect, 307, to the
        leader or the owner, and the redirects are followed)."""
        return self._a.request("GET", f"/lookup/v2/topic/{_topic_path(topic)}")

    def bundle_range(self, topic: str) -> str:
        """The range of the namespace bundle the topic falls in, ``0x..._0x...`` (pulsar-admin's
        ``topics bundle-range``, at Pulsar's ``/lookup/v2/topic/.../bundle``, which answers the
        bare range; ``0x00000000_0xffffffff`` on a broker on its own)."""
        body = self._a.request_raw("GET", f"/lookup/v2/topic/{_topic_path(topic)}/bundle")[1]
        text = body.decode().strip()
        return json.loads(text) if text.startswith('"') else text


def _schema_path(topic: str) -> str:
    """``persistent://t/ns/x`` → ``/admin/v2/schemas/t/ns/x`` (schemas are per persistent topic)."""
    return "/admin/v2/schemas/" + _topic_path(topic).split("/", 1)[1]


class _Schemas(_Group):
    def get(self, topic: str, version: int | None = None) -> dict[str, Any]:
        """The latest schema (or ``version``): ``{"version", "type", "timestamp", "data", "properties"}``."""
        suffix = "/schema" if version is None else f"/schema/{int(version)}"
        return self._a.request("GET", _schema_path(topic) + suffix)

    def get_all_versions(self, topic: str) -> list[dict[str, Any]]:
        """Every version in force, oldest first."""
        return self._a.request("GET", _schema_path(topic) + "/schemas")["getSchemaResponses"]

    def delete(self, topic: str) -> None:
        """Deletes the schema: the next producer's schema starts a fresh history."""
        self._a.request("DELETE", _schema_path(topic) + "/schema")

    @staticmethod
    def _payload(schema_type: str, schema: str, properties: dict[str, str] | None) -> dict[str, Any]:
        return {"type": schema_type.upper(), "schema": schema, "properties": properties or {}}

    def upload(self, topic: str, schema_type: str, schema: str, properties: dict[str, str] | None = None) -> int:
        """Registers a schema version (refused with 409 when the strategy does not allow it);
        returns its version."""
        r = self._a.request("POST", _schema_path(topic) + "/schema", self._payload(schema_type, schema, properties))
        return int(r["version"]["version"])

    def compatibility(self, topic: str, schema_type: str, schema: str) -> dict[str, Any]:
        """``{"compatibility": bool, "schemaCompatibilityStrategy": ...}`` (and ``reason`` when not)."""
        return self._a.request("POST", _schema_path(topic) + "/compatibility", self._payload(schema_type, schema, None))

    def version_of(self, topic: str, schema_type: str, schema: str) -> int:
        """The version of an identical schema in force (404 when there is none)."""
        r = self._a.request("POST", _schema_path(topic) + "/version", self._payload(schema_type, schema, None))
        return int(r["version"])
