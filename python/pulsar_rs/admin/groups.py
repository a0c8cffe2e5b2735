"""The smaller call groups of :class:`pulsar_rs.Admin`: ``admin.brokers``, ``admin.broker_stats``,
``admin.clusters``, ``admin.tenants`` and ``admin.schemas`` (``admin.namespaces`` and ``admin.topics`` have their own
modules), and :class:`Group`, the base of every group."""

from __future__ import annotations

import builtins
import urllib.parse
from typing import Any

from .paths import segment, topic_path
from .requester import Requester
from .types import (
    BrokerInfo,
    ClusterData,
    GetSchemaResponse,
    IsCompatibilityResponse,
    LoadReport,
    NamespaceOwnershipStatus,
    TenantInfo,
)

__all__ = ["BrokerStats", "Brokers", "Clusters", "Group", "Schemas", "Tenants"]


class Group:
    """A group of calls on one :class:`~pulsar_rs.admin.client.Admin` (``admin.topics``, ...)."""

    def __init__(self, admin: Requester) -> None:
        self._a = admin


class Brokers(Group):
    """``admin.brokers``: health, the live brokers, the leader and what a broker owns."""

    def healthcheck(self) -> str:
        """``ok`` when the broker serves (pulsar-admin's ``brokers healthcheck``)."""
        return self._a.request_raw("GET", "/admin/v2/brokers/health")[1].decode()

    def list(self, cluster: str) -> list[str]:
        """The ids (``host:webServicePort``) of the cluster's live brokers (pulsar-admin's
        ``brokers list``; 412 for another cluster's name). A broker on its own lists itself."""
        return self._a.request("GET", f"/admin/v2/brokers/{segment(cluster)}")

    def leader_broker(self) -> BrokerInfo:
        """``{"brokerId", "serviceUrl"}`` of the cluster's leader, the broker that places unowned
        bundles (pulsar-admin's ``brokers leader-broker``); a broker on its own is its leader."""
        return self._a.request("GET", "/admin/v2/brokers/leaderBroker")

    def owned_namespaces(self, cluster: str, broker_id: str) -> dict[str, NamespaceOwnershipStatus]:
        """The bundles broker ``broker_id`` (``host:port``, as :meth:`list` names it) owns:
        ``{"tenant/ns/0x..._0x...": {"broker_assignment", "is_controlled", "is_active"}}``
        (pulsar-admin's ``brokers namespaces CLUSTER --url BROKER``; 404 for an unknown broker)."""
        path = f"/admin/v2/brokers/{segment(cluster)}/{urllib.parse.quote(broker_id, safe=':')}"
        return self._a.request("GET", path + "/ownedNamespaces")


class BrokerStats(Group):
    """``admin.broker_stats``: what the broker measures of itself."""

    def load_report(self) -> LoadReport:
        """The broker's load report, as the cluster's load balancer reads it (pulsar-admin's
        ``broker-stats load-report``): the bundles it owns with their rates (``lastStats``), its
        totals, and its CPU and bandwidth as ``{"usage", "limit"}``."""
        return self._a.request("GET", "/admin/v2/broker-stats/load-report")


class Clusters(Group):
    """``admin.clusters``: the clusters (:class:`.types.ClusterData`)."""

    def list(self) -> list[str]:
        return self._a.request("GET", "/admin/v2/clusters")

    def get(self, name: str) -> ClusterData:
        return self._a.request("GET", f"/admin/v2/clusters/{segment(name)}")

    def create(self, name: str, data: ClusterData) -> None:
        self._a.request("PUT", f"/admin/v2/clusters/{segment(name)}", data)

    def update(self, name: str, data: ClusterData) -> None:
        self._a.request("POST", f"/admin/v2/clusters/{segment(name)}", data)

    def delete(self, name: str) -> None:
        self._a.request("DELETE", f"/admin/v2/clusters/{segment(name)}")


class Tenants(Group):
    """``admin.tenants``: the tenants (:class:`.types.TenantInfo`)."""

    def list(self) -> list[str]:
        return self._a.request("GET", "/admin/v2/tenants")

    def get(self, name: str) -> TenantInfo:
        return self._a.request("GET", f"/admin/v2/tenants/{segment(name)}")

    def _info(
        self, admin_roles: builtins.list[str] | tuple[str, ...], allowed_clusters: builtins.list[str] | None
    ) -> TenantInfo:
        clusters = allowed_clusters if allowed_clusters is not None else self._a.request("GET", "/admin/v2/clusters")
        return {"adminRoles": list(admin_roles), "allowedClusters": list(clusters)}

    def create(
        self,
        name: str,
        admin_roles: builtins.list[str] | tuple[str, ...] = (),
        allowed_clusters: builtins.list[str] | None = None,
    ) -> None:
        """Creates a tenant; ``allowed_clusters`` defaults to every cluster (as pulsar-admin)."""
        self._a.request("PUT", f"/admin/v2/tenants/{segment(name)}", self._info(admin_roles, allowed_clusters))

    def update(
        self,
        name: str,
        admin_roles: builtins.list[str] | tuple[str, ...] = (),
        allowed_clusters: builtins.list[str] | None = None,
    ) -> None:
        self._a.request("POST", f"/admin/v2/tenants/{segment(name)}", self._info(admin_roles, allowed_clusters))

    def delete(self, name: str) -> None:
        self._a.request("DELETE", f"/admin/v2/tenants/{segment(name)}")


def schema_path(topic: str) -> str:
    """``persistent://t/ns/x`` → ``/admin/v2/schemas/t/ns/x`` (schemas are per persistent topic)."""
    return "/admin/v2/schemas/" + topic_path(topic).split("/", 1)[1]


class Schemas(Group):
    """``admin.schemas``: a topic's schema versions and compatibility checks."""

    def get(self, topic: str, version: int | None = None) -> GetSchemaResponse:
        """The latest schema (or ``version``): ``{"version", "type", "timestamp", "data", "properties"}``."""
        suffix = "/schema" if version is None else f"/schema/{int(version)}"
        return self._a.request("GET", schema_path(topic) + suffix)

    def get_all_versions(self, topic: str) -> list[GetSchemaResponse]:
        """Every version in force, oldest first."""
        return self._a.request("GET", schema_path(topic) + "/schemas")["getSchemaResponses"]

    def delete(self, topic: str) -> None:
        """Deletes the schema: the next producer's schema starts a fresh history."""
        self._a.request("DELETE", schema_path(topic) + "/schema")

    @staticmethod
    def _payload(schema_type: str, schema: str, properties: dict[str, str] | None) -> dict[str, Any]:
        return {"type": schema_type.upper(), "schema": schema, "properties": properties or {}}

    def upload(self, topic: str, schema_type: str, schema: str, properties: dict[str, str] | None = None) -> int:
        """Registers a schema version (refused with 409 when the strategy does not allow it);
        returns its version."""
        r = self._a.request("POST", schema_path(topic) + "/schema", self._payload(schema_type, schema, properties))
        return int(r["version"]["version"])

    def compatibility(self, topic: str, schema_type: str, schema: str) -> IsCompatibilityResponse:
        """``{"compatibility": True, "schemaCompatibilityStrategy": ...}`` when the schema could be
        added under the topic's strategy (pulsar-admin's ``schemas compatibility``); an
        incompatible or unreadable schema raises :class:`AdminError` (409 or 422, with why)."""
        return self._a.request("POST", schema_path(topic) + "/compatibility", self._payload(schema_type, schema, None))

    def version_of(self, topic: str, schema_type: str, schema: str) -> int:
        """The version of an identical schema in force (404 when there is none)."""
        r = self._a.request("POST", schema_path(topic) + "/version", self._payload(schema_type, schema, None))
        return int(r["version"])
