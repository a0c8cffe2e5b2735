"""Names into URL paths: each cluster, tenant, namespace, topic, subscription, role or broker
name is percent-quoted as one path segment (``segment``), so that a name holding ``/``, ``%``,
``?``, ``#`` or a space reaches the broker as the name it is, never as another path."""

from __future__ import annotations

import urllib.parse

from .._native import parse_topic_name

__all__ = ["ns_path", "persistent_path", "segment", "topic_path"]


def segment(name: str) -> str:
    """One path segment: every character but the unreserved ones percent-quoted (``/`` too)."""
    return urllib.parse.quote(name, safe="")


def topic_path(topic: str) -> str:
    """``persistent://t/ns/x`` (or ``t/ns/x``, or ``x`` in public/default) → ``persistent/t/ns/x``,
    by the broker's own parser (``InvalidNameError``, a ``ValueError``, for a name it refuses)."""
    domain, *parts = parse_topic_name(topic)
    return "/".join([domain, *(segment(p) for p in parts)])


def ns_path(namespace: str) -> str:
    tenant, sep, ns = namespace.partition("/")
    if not sep or not tenant or not ns or "/" in ns:
        raise ValueError(f"a namespace is tenant/name, got {namespace!r}")
    return f"{segment(tenant)}/{segment(ns)}"


def persistent_path(topic: str) -> str:
    """``persistent://t/ns/x`` (or ``t/ns/x``) → ``t/ns/x``, each part quoted (the transaction
    paths, which carry no domain)."""
    name = topic.split("://", 1)[1] if "://" in topic else topic
    return "/".join(segment(p) for p in name.split("/"))
