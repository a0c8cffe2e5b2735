"""``admin.namespaces`` of :class:`pulsar_rs.Admin`: creating and deleting namespaces, their
policies document, permissions, schema settings, topics, bundles and unloading (the policy and
limit setters come from :mod:`.policies` and :mod:`.limits`, the offload settings from
:mod:`.offload`)."""

from __future__ import annotations

import builtins
import urllib.parse
from typing import Any

from .groups import Group
from .limits import NamespaceLimits
from .offload import NamespaceOffload
from .paths import ns_path, segment
from .policies import PolicySetters
from .tables import NamespaceTables
from .types import BundlesData, Policies

__all__ = ["Namespaces"]


class Namespaces(Group, PolicySetters, NamespaceLimits, NamespaceOffload, NamespaceTables):
    """``admin.namespaces``: namespaces ``tenant/name`` and their policies."""

    def list(self, tenant: str) -> list[str]:
        return self._a.request("GET", f"/admin/v2/namespaces/{segment(tenant)}")

    def create(
        self, namespace: str, policies: Policies | dict[str, Any] | None = None, bundles: int | None = None
    ) -> None:
        """Creates ``tenant/name``, optionally with a Pulsar ``Policies`` document, split into
        ``bundles`` bundles (pulsar-admin's ``namespaces create --bundles``; the broker's
        ``defaultNumberOfNamespaceBundles`` when neither it nor the document's ``bundles`` says)."""
        if bundles is not None:
            policies = {**(policies or {}), "bundles": {"numBundles": bundles}}
        self._a.request("PUT", f"/admin/v2/namespaces/{ns_path(namespace)}", policies)

    def delete(self, namespace: str, force: bool = False) -> None:
        """Deletes an empty namespace (409 while it has topics); ``force`` deletes its topics
        first, closing their clients, where the broker's ``forceDeleteNamespaceAllowed`` allows
        it (else 405)."""
        path = f"/admin/v2/namespaces/{ns_path(namespace)}"
        self._a.request("DELETE", path + ("?force=true" if force else ""))

    def policies(self, namespace: str) -> Policies:
        """The namespace's ``Policies`` document."""
        return self._a.request("GET", f"/admin/v2/namespaces/{ns_path(namespace)}")

    def permissions(self, namespace: str) -> dict[str, builtins.list[str]]:
        return self._a.request("GET", f"/admin/v2/namespaces/{ns_path(namespace)}/permissions")

    def grant_permission(self, namespace: str, role: str, actions: builtins.list[str]) -> None:
        self._a.request("POST", f"/admin/v2/namespaces/{ns_path(namespace)}/permissions/{segment(role)}", actions)

    def revoke_permission(self, namespace: str, role: str) -> None:
        self._a.request("DELETE", f"/admin/v2/namespaces/{ns_path(namespace)}/permissions/{segment(role)}")

    def get_schema_compatibility_strategy(self, namespace: str) -> str:
        """The namespace's strategy (``UNDEFINED``: the broker's ``schemaCompatibilityStrategy``)."""
        return self._a.request("GET", f"/admin/v2/namespaces/{ns_path(namespace)}/schemaCompatibilityStrategy")

    def set_schema_compatibility_strategy(self, namespace: str, strategy: str) -> None:
        """``ALWAYS_INCOMPATIBLE``, ``ALWAYS_COMPATIBLE``, ``BACKWARD``, ``FORWARD``, ``FULL`` or a
        ``*_TRANSITIVE`` one; ``UNDEFINED`` inherits the broker's."""
        path = f"/admin/v2/namespaces/{ns_path(namespace)}/schemaCompatibilityStrategy"
        self._a.request("PUT", path, strategy.upper())

    def get_is_allow_auto_update_schema(self, namespace: str) -> bool:
        """Whether producers may register new schema versions here (unset: the broker's
        ``isAllowAutoUpdateSchemaEnabled``, as Pulsar answers)."""
        return self._a.request("GET", f"/admin/v2/namespaces/{ns_path(namespace)}/isAllowAutoUpdateSchema")

    def set_is_allow_auto_update_schema(self, namespace: str, enabled: bool) -> None:
        """Whether producers may register new schema versions in this namespace."""
        self._a.request("POST", f"/admin/v2/namespaces/{ns_path(namespace)}/isAllowAutoUpdateSchema", enabled)

    def get_schema_validation_enforce(self, namespace: str) -> bool:
        return self._a.request("GET", f"/admin/v2/namespaces/{ns_path(namespace)}/schemaValidationEnforced")

    def set_schema_validation_enforce(self, namespace: str, enabled: bool) -> None:
        """Whether producers without a schema are refused on topics that have one."""
        self._a.request("POST", f"/admin/v2/namespaces/{ns_path(namespace)}/schemaValidationEnforced", enabled)

    def subscription_permissions(self, namespace: str) -> dict[str, builtins.list[str]]:
        """Subscription → the only roles that may subscribe with it."""
        return self._a.request("GET", f"/admin/v2/namespaces/{ns_path(namespace)}/permissions/subscription")

    def grant_subscription_permission(self, namespace: str, subscription: str, roles: builtins.list[str]) -> None:
        path = f"/admin/v2/namespaces/{ns_path(namespace)}/permissions/subscription/{segment(subscription)}"
        self._a.request("POST", path, roles)

    def revoke_subscription_permission(self, namespace: str, subscription: str, role: str) -> None:
        path = f"/admin/v2/namespaces/{ns_path(namespace)}/permissions/{segment(subscription)}/{segment(role)}"
        self._a.request("DELETE", path)

    def get_subscription_auth_mode(self, namespace: str) -> str:
        return self._a.request("GET", f"/admin/v2/namespaces/{ns_path(namespace)}/subscriptionAuthMode")

    def set_subscription_auth_mode(self, namespace: str, mode: str) -> None:
        """``"None"`` or ``"Prefix"`` (subscription names must start with the role)."""
        self._a.request("POST", f"/admin/v2/namespaces/{ns_path(namespace)}/subscriptionAuthMode", mode)

    def get_clusters(self, namespace: str) -> builtins.list[str]:
        """The clusters the namespace is replicated to (only this broker's cluster when none are
        set): pulsar-admin's ``namespaces get-clusters``."""
        return self._a.request("GET", f"/admin/v2/namespaces/{ns_path(namespace)}/replication")

    def set_clusters(self, namespace: str, clusters: builtins.list[str]) -> None:
        """Replicates the namespace to ``clusters`` (registered ones the tenant allows; 403 or
        412 otherwise): pulsar-admin's ``namespaces set-clusters``."""
        self._a.request("POST", f"/admin/v2/namespaces/{ns_path(namespace)}/replication", clusters)

    def get_allowed_topic_property_keys_for_metrics(self, namespace: str) -> builtins.list[str]:
        """PIP-447: the topic property keys this namespace's topics carry as metric labels (with
        ``exposeCustomTopicMetricLabelsEnabled``); ``[]``: the broker's
        ``allowedTopicPropertyKeysForMetrics``."""
        return self._a.request("GET", self._policy_path(namespace, "allowedTopicPropertyKeysForMetrics"))

    def set_allowed_topic_property_keys_for_metrics(self, namespace: str, keys: builtins.list[str]) -> None:
        """PIP-447: the topic property keys allowed as metric labels in this namespace."""
        self._a.request("POST", self._policy_path(namespace, "allowedTopicPropertyKeysForMetrics"), keys)

    def remove_allowed_topic_property_keys_for_metrics(self, namespace: str) -> None:
        """PIP-447: back to the broker's ``allowedTopicPropertyKeysForMetrics``."""
        self._a.request("DELETE", self._policy_path(namespace, "allowedTopicPropertyKeysForMetrics"))

    def topics(self, namespace: str) -> builtins.list[str]:
        """Every topic of the namespace, persistent and non-persistent, partitions by name
        (pulsar-admin's ``namespaces topics``)."""
        return self._a.request("GET", f"/admin/v2/namespaces/{ns_path(namespace)}/topics")

    def bundles(self, namespace: str) -> BundlesData:
        """The namespace's bundles: ``{"boundaries": ["0x00000000", ..., "0xffffffff"],
        "numBundles": N}`` (pulsar-admin's ``namespaces bundles``): those it was created with,
        ``defaultNumberOfNamespaceBundles`` (4) unless a count or boundaries were given."""
        return self._a.request("GET", f"/admin/v2/namespaces/{ns_path(namespace)}/bundles")

    def unload(self, namespace: str, bundle: str | None = None, destination_broker: str | None = None) -> None:
        """Unloads the namespace, or only its ``bundle`` (``0x..._0x...``), from the brokers that
        own it: their topics close and the next lookup places the bundles again (pulsar-admin's
        ``namespaces unload [--bundle] [--destinationBroker]``). A bundle another broker owns is
        unloaded there (307). ``destination_broker`` (a broker id, ``host:port``, with a
        ``bundle`` only) asks that the bundle be placed on that broker next."""
        path = f"/admin/v2/namespaces/{ns_path(namespace)}"
        if bundle is not None:
            path += f"/{segment(bundle)}"
        elif destination_broker is not None:
            raise ValueError("destination_broker needs a bundle")
        path += "/unload"
        if destination_broker is not None:
            path += "?" + urllib.parse.urlencode({"destinationBroker": destination_broker})
        self._a.request("PUT", path)

    def split_bundle(
        self,
        namespace: str,
        bundle: str,
        unload: bool = False,
        split_algorithm_name: str | None = None,
        split_boundaries: builtins.list[int] | None = None,
    ) -> None:
        """Splits ``bundle`` (``0x..._0x...``) in two, or at ``split_boundaries`` with
        ``specified_positions_divide`` (pulsar-admin's ``namespaces split-bundle --bundle
        [--unload] [--split-algorithm-name] [--split-boundaries]``): ``range_equally_divide`` (the
        default) halves the hash range, ``topic_count_equally_divide`` cuts between the middle
        topics. The owner keeps both halves (the call goes to it: 307), unless ``unload``."""
        query: dict[str, str] = {"unload": "true" if unload else "false"}
        if split_algorithm_name is not None:
            query["splitAlgorithmName"] = split_algorithm_name
        path = f"/admin/v2/namespaces/{ns_path(namespace)}/{segment(bundle)}/split?" + urllib.parse.urlencode(query)
        self._a.request("PUT", path, split_boundaries)

    def _policy_path(self, namespace: str, policy: str) -> str:
        return f"/admin/v2/namespaces/{ns_path(namespace)}/{policy}"
