"""Pulsar's limit policies on :class:`pulsar_rs.Admin`, with the Java admin's names in snake case:
on a namespace (``admin.namespaces``: ``maxProducersPerTopic``, ``maxConsumersPerTopic``,
``maxConsumersPerSubscription``, ``maxSubscriptionsPerTopic``, ``maxTopicsPerNamespace``) and on a
topic (``admin.topics``: ``maxProducers``, ``maxConsumers``, ``maxConsumersPerSubscription``,
``maxSubscriptionsPerTopic``, ``maxMessageSize``), each with ``get_``, ``set_`` and ``remove_``.

0 means unlimited at a level that sets it; a topic's policy wins over its namespace's, which wins
over the broker's setting of the same name. A getter answers ``None`` when the level does not
set the limit (``get_max_topics_per_namespace`` answers 0, as Pulsar's). The broker refuses a
negative value (412), and a topic ``maxMessageSize`` above its own ``maxMessageSize``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["NamespaceLimits", "TopicLimits"]


class _Limits:
    """``get_`` / ``set_`` / ``remove_`` of one limit, by its REST path name; the group's
    ``get_policy`` / ``set_policy`` / ``remove_policy`` (:mod:`.policies`) do the calls."""

    # Provided by the group's policy calls (:class:`.policies.PolicySetters`); annotated
    # here only, so that the mixin's order among the group's bases does not matter.
    get_policy: Callable[[str, str], Any]
    set_policy: Callable[..., None]
    remove_policy: Callable[..., None]

    def _set_limit(self, target: str, policy: str, value: int) -> None:
        self.set_policy(target, policy, int(value))


class NamespaceLimits(_Limits):
    """The namespace's limits (``/admin/v2/namespaces/{tenant}/{ns}/{policy}``)."""

    def get_max_producers_per_topic(self, namespace: str) -> int | None:
        return self.get_policy(namespace, "maxProducersPerTopic")

    def set_max_producers_per_topic(self, namespace: str, max_producers: int) -> None:
        """Producers on each topic of the namespace (0: unlimited); one more is ``ProducerBusy``."""
        self._set_limit(namespace, "maxProducersPerTopic", max_producers)

    def remove_max_producers_per_topic(self, namespace: str) -> None:
        self.remove_policy(namespace, "maxProducersPerTopic")

    def get_max_consumers_per_topic(self, namespace: str) -> int | None:
        return self.get_policy(namespace, "maxConsumersPerTopic")

    def set_max_consumers_per_topic(self, namespace: str, max_consumers: int) -> None:
        """Consumers on each topic, all subscriptions together; one more is ``ConsumerBusy``."""
        self._set_limit(namespace, "maxConsumersPerTopic", max_consumers)

    def remove_max_consumers_per_topic(self, namespace: str) -> None:
        self.remove_policy(namespace, "maxConsumersPerTopic")

    def get_max_consumers_per_subscription(self, namespace: str) -> int | None:
        return self.get_policy(namespace, "maxConsumersPerSubscription")

    def set_max_consumers_per_subscription(self, namespace: str, max_consumers: int) -> None:
        """Consumers on each subscription; one more is ``ConsumerBusy``."""
        self._set_limit(namespace, "maxConsumersPerSubscription", max_consumers)

    def remove_max_consumers_per_subscription(self, namespace: str) -> None:
        self.remove_policy(namespace, "maxConsumersPerSubscription")

    def get_max_subscriptions_per_topic(self, namespace: str) -> int | None:
        return self.get_policy(namespace, "maxSubscriptionsPerTopic")

    def set_max_subscriptions_per_topic(self, namespace: str, max_subscriptions: int) -> None:
        """Subscriptions on each topic; a new one past it is ``NotAllowedError``."""
        self._set_limit(namespace, "maxSubscriptionsPerTopic", max_subscriptions)

    def remove_max_subscriptions_per_topic(self, namespace: str) -> None:
        self.remove_policy(namespace, "maxSubscriptionsPerTopic")

    def get_max_topics_per_namespace(self, namespace: str) -> int:
        return self.get_policy(namespace, "maxTopicsPerNamespace")

    def set_max_topics_per_namespace(self, namespace: str, max_topics: int) -> None:
        """Persistent topics in the namespace, each partition counted; a new topic past it is
        refused (409, 412 for a partitioned topic, ``NotAllowedError`` on auto-creation)."""
        self._set_limit(namespace, "maxTopicsPerNamespace", max_topics)

    def remove_max_topics_per_namespace(self, namespace: str) -> None:
        self.remove_policy(namespace, "maxTopicsPerNamespace")


class TopicLimits(_Limits):
    """The topic's limits (``/admin/v2/persistent/{tenant}/{ns}/{topic}/{policy}``)."""

    def get_max_producers(self, topic: str) -> int | None:
        return self.get_policy(topic, "maxProducers")

    def set_max_producers(self, topic: str, max_producers: int) -> None:
        self._set_limit(topic, "maxProducers", max_producers)

    def remove_max_producers(self, topic: str) -> None:
        self.remove_policy(topic, "maxProducers")

    def get_max_consumers(self, topic: str) -> int | None:
        return self.get_policy(topic, "maxConsumers")

    def set_max_consumers(self, topic: str, max_consumers: int) -> None:
        self._set_limit(topic, "maxConsumers", max_consumers)

    def remove_max_consumers(self, topic: str) -> None:
        self.remove_policy(topic, "maxConsumers")

    def get_max_consumers_per_subscription(self, topic: str) -> int | None:
        return self.get_policy(topic, "maxConsumersPerSubscription")

    def set_max_consumers_per_subscription(self, topic: str, max_consumers: int) -> None:
        self._set_limit(topic, "maxConsumersPerSubscription", max_consumers)

    def remove_max_consumers_per_subscription(self, topic: str) -> None:
        self.remove_policy(topic, "maxConsumersPerSubscription")

    def get_max_subscriptions_per_topic(self, topic: str) -> int | None:
        return self.get_policy(topic, "maxSubscriptionsPerTopic")

    def set_max_subscriptions_per_topic(self, topic: str, max_subscriptions: int) -> None:
        self._set_limit(topic, "maxSubscriptionsPerTopic", max_subscriptions)

    def remove_max_subscriptions_per_topic(self, topic: str) -> None:
        self.remove_policy(topic, "maxSubscriptionsPerTopic")

    def get_max_message_size(self, topic: str) -> int | None:
        return self.get_policy(topic, "maxMessageSize")

    def set_max_message_size(self, topic: str, max_message_size: int) -> None:
        """Bytes of one message (metadata and payload) on this topic, at most the broker's
        ``maxMessageSize``; a larger SEND is refused (``NotAllowedError``, as Pulsar)."""
        self._set_limit(topic, "maxMessageSize", max_message_size)

    def remove_max_message_size(self, topic: str) -> None:
        self.remove_policy(topic, "maxMessageSize")
