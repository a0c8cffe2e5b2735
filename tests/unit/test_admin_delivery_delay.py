"""PIP-437's delivery-delay commands without a broker: the REST call each ``pulsar-rs admin``
command and each :class:`Admin` method makes (path, method, body in seconds)."""

from __future__ import annotations

import json
from typing import Any

from pulsar_rs.admin import Admin
from pulsar_rs.cli.command import build_parser

TOPIC = "persistent://public/default/t"
TOPIC_PATH = "/admin/v2/persistent/public/default/t"
NS_PATH = "/admin/v2/namespaces/public/default"


class _Recording(Admin):
    """Records each call (method, path, JSON body)."""

    def __init__(self) -> None:
        super().__init__("http://127.0.0.1:9")
        self.calls: list[tuple[str, str, Any]] = []

    def request_raw(
        self, method: str, path: str, body: Any = None, raw: bytes | None = None
    ) -> tuple[dict[str, str], bytes]:
        self.calls.append((method, path, json.loads(raw) if raw is not None else body))
        return {}, b""


def test_commands_at_both_levels_send_seconds():
    admin = _Recording()
    for argv in (
        ("namespaces", "set-max-delivery-delay", "public/default", "-d", "1h"),
        ("namespaces", "get-max-delivery-delay", "public/default"),
        ("namespaces", "remove-max-delivery-delay", "public/default"),
        ("topics", "set-fixed-delivery-delay", TOPIC, "--delay", "30s"),
        ("topicPolicies", "get-fixed-delivery-delay", TOPIC),
        ("topics", "remove-fixed-delivery-delay", TOPIC),
    ):
        args = build_parser().parse_args(["admin", *argv])
        args.call(admin, args)
    assert admin.calls == [
        ("POST", f"{NS_PATH}/maxDelayedDeliveryTime", 3600),
        ("GET", f"{NS_PATH}/maxDelayedDeliveryTime", None),
        ("DELETE", f"{NS_PATH}/maxDelayedDeliveryTime", None),
        ("POST", f"{TOPIC_PATH}/fixedDelayedDeliveryTime", 30),
        ("GET", f"{TOPIC_PATH}/fixedDelayedDeliveryTime", None),
        ("DELETE", f"{TOPIC_PATH}/fixedDelayedDeliveryTime", None),
    ]


def test_admin_methods():
    admin = _Recording()
    admin.topics.set_max_delivery_delay(TOPIC, 10)
    admin.namespaces.set_fixed_delivery_delay("public/default", 0)
    assert admin.calls == [
        ("POST", f"{TOPIC_PATH}/maxDelayedDeliveryTime", 10),
        ("POST", f"{NS_PATH}/fixedDelayedDeliveryTime", 0),
    ]
