"""``pulsar-rs admin brokers``: ``healthcheck`` (``ok`` when the broker's admin service answers),
``list CLUSTER`` (the live brokers' ids, ``host:port``), ``leader-broker`` (the leader's
``brokerId`` and ``serviceUrl``) and ``namespaces CLUSTER --url BROKER`` (the bundles that broker
owns), with pulsar-admin's names and flags."""

from __future__ import annotations

from typing import Any


def add(groups: Any) -> None:
    g = groups.add_parser("brokers", help="brokers").add_subparsers(dest="action", required=True)
    g.add_parser("healthcheck").set_defaults(call=lambda admin, a: admin.brokers.healthcheck())
    p = g.add_parser("list", help="the cluster's live brokers")
    p.add_argument("cluster", help="the cluster's name (the broker's clusterName)")
    p.set_defaults(call=lambda admin, a: admin.brokers.list(a.cluster))
    g.add_parser("leader-broker", help="the cluster's leader broker").set_defaults(
        call=lambda admin, a: admin.brokers.leader_broker()
    )
    p = g.add_parser("namespaces", help="the namespace bundles a broker owns")
    p.add_argument("cluster", help="the cluster's name")
    p.add_argument("--url", "-u", dest="broker", required=True, help="the broker's id, host:port (brokers list)")
    p.set_defaults(call=lambda admin, a: admin.brokers.owned_namespaces(a.cluster, a.broker))
