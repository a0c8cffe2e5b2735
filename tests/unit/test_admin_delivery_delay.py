"""PIP-437's delivery-delay commands without a broker: the REST call each ``pulsar-rs admin``
command and each :class:`Admin` method makes (path, method, body in seconds)."""

from __future__ import annotations

from admin_recording import RecordingAdmin
from pulsar_rs.cli.command import build_parser

TOPIC = "persistent://public/default/t"
TOPIC_PATH = "/admin/v2/persistent/public/default/t"
NS_PATH = "/admin/v2/namespaces/public/default"


def test_commands_at_both_levels_send_seconds():
    admin = RecordingAdmin()
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
    admin = RecordingAdmin()
    admin.topics.set_max_delivery_delay(TOPIC, 10)
    admin.namespaces.set_fixed_delivery_delay("public/default", 0)
    assert admin.calls == [
        ("POST", f"{TOPIC_PATH}/maxDelayedDeliveryTime", 10),
        ("POST", f"{NS_PATH}/fixedDelayedDeliveryTime", 0),
    ]
