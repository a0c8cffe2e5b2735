"""A client for the broker's admin REST API (Pulsar's ``/admin/v2`` paths), with the standard
library only: ``Admin(url, token=None)`` with ``clusters``, ``tenants``, ``namespaces`` and
``topics`` and ``schemas`` groups named as ``pulsar-admin``'s commands.

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
        self.schemas = _Schemas(self)

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
