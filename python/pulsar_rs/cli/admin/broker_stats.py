"""``pulsar-rs admin broker-stats``: ``load-report`` (the broker's load report, as the cluster's
load balancer reads it), with pulsar-admin's names."""

from __future__ import annotations

from typing import Any


def add(groups: Any) -> None:
    g = groups.add_parser("broker-stats", help="what a broker measures of itself").add_subparsers(
        dest="action", required=True
    )
    g.add_parser("load-report", help="the broker's load report").set_defaults(
        call=lambda admin, a: admin.broker_stats.load_report()
    )
