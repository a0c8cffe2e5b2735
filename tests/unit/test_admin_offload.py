"""Tiered storage on the admin client and the command line, without a broker: the message id
``topics offload -s SIZE`` picks from a topic's internal stats (Pulsar's
``findFirstLedgerWithinThreshold``), the flags of the offload commands, the ``OffloadPolicies``
document ``set-offload-policies`` sends, and the REST calls each :class:`Admin` method makes."""

from __future__ import annotations

from typing import Any

import pytest

from admin_recording import RecordingAdmin
from pulsar_rs.admin.offload import offload_position, offload_threshold_position
from pulsar_rs.cli.admin import run
from pulsar_rs.cli.admin.offload import offload_policies_body
from pulsar_rs.cli.command import build_parser

TOPIC = "persistent://public/default/t"
TOPIC_PATH = "/admin/v2/persistent/public/default/t"
NS_PATH = "/admin/v2/namespaces/public/default"
MB = 1 << 20


def stats(*sizes: int, current: int | None = None) -> dict[str, Any]:
    """Internal stats with ledgers 10, 11, ... of these sizes, the last one being written."""
    ledgers = [{"ledgerId": 10 + i, "entries": 1, "size": s, "offloaded": False} for i, s in enumerate(sizes)]
    doc: dict[str, Any] = {"ledgers": ledgers}
    if current is not None:
        doc["currentLedgerSize"] = current
    return doc


def parse(*argv: str) -> Any:
    """``pulsar-rs admin ARGV`` parsed."""
    return build_parser().parse_args(["admin", *argv])


# --- topics offload -s SIZE: the id from the ledger sizes ----------------------------------------


@pytest.mark.parametrize(
    ("sizes", "current", "threshold", "expected"),
    [
        # Newest first: 0 (current 13) + 30 = 30 > 25 at ledger 12: offload before its newer one, 13.
        ((10, 20, 30, 0), 0, 25, (13, 0)),
        # 0 + 30 + 20 = 50 > 40 at ledger 11: offload before 12.
        ((10, 20, 30, 0), 0, 40, (12, 0)),
        # Threshold 0: everything before the current ledger, once one closed ledger has data.
        ((10, 20, 0), 0, 0, (12, 0)),
        # The current ledger passes it alone: its own id (Pulsar's previousLedger starts there).
        ((10, 20, 5), 100, 50, (12, 0)),
        # Never passed: nothing to offload.
        ((10, 20, 0), 0, 30, None),
        ((10, 20, 0), 0, 10 * MB, None),
        # Only the current ledger, empty: nothing.
        ((0,), 0, 0, None),
    ],
)
def test_offload_threshold_walks_ledgers_from_the_newest(sizes, current, threshold, expected):
    assert offload_threshold_position(stats(*sizes, current=current), threshold) == expected


def test_offload_threshold_counts_the_current_ledgers_live_size():
    # internalStats' size of the ledger being written lags; currentLedgerSize is the live one.
    assert offload_threshold_position(stats(10, 0, current=0), 5) == (11, 0)
    assert offload_threshold_position(stats(10, 0, current=20), 5) == (11, 0)
    assert offload_threshold_position(stats(10, 0, current=20), 25) == (11, 0)
    assert offload_threshold_position(stats(10, 0, current=20), 30) is None


def test_offload_threshold_needs_a_ledger():
    with pytest.raises(ValueError, match="Topic doesn't have any data"):
        offload_threshold_position({"ledgers": []}, 0)


def test_offload_command_puts_the_id_it_found():
    admin = RecordingAdmin({f"{TOPIC_PATH}/internalStats": stats(MB, 2 * MB, 0, current=0)})
    args = parse("topics", "offload", "-s", "1M", TOPIC)
    assert args.call(admin, args) == f"Offload triggered for {TOPIC} for messages before 12:0:-1"
    assert admin.calls[-1] == ("PUT", f"{TOPIC_PATH}/offload", {"ledgerId": 12, "entryId": 0, "partitionIndex": -1})


def test_offload_command_says_when_there_is_nothing_to_offload():
    admin = RecordingAdmin({f"{TOPIC_PATH}/internalStats": stats(MB, 0, current=0)})
    args = parse("topics", "offload", "--size-threshold", "1G", TOPIC)
    assert args.call(admin, args) == "Nothing to offload"
    assert [c[0] for c in admin.calls] == ["GET"]


@pytest.mark.parametrize(("text", "expected"), [("10M", 10 * MB), ("1G", 1 << 30), ("0", 0), ("4096", 4096)])
def test_offload_size_threshold_units(text, expected):
    assert parse("topics", "offload", "-s", text, TOPIC).size_threshold == expected


def test_offload_needs_a_size_threshold():
    with pytest.raises(SystemExit):
        parse("topics", "offload", TOPIC)


def test_offload_status_waits_while_running(monkeypatch):
    answers = iter(["RUNNING", "RUNNING", "SUCCESS"])
    admin = RecordingAdmin()
    monkeypatch.setattr(admin.topics, "offload_status", lambda _t: {"status": next(answers)})
    monkeypatch.setattr("pulsar_rs.cli.admin.offload.time.sleep", lambda _s: None)
    args = parse("topics", "offload-status", "-w", TOPIC)
    assert args.call(admin, args) == {"status": "SUCCESS"}
    assert parse("topics", "offload-status", TOPIC).wait_complete is False


# --- namespace thresholds and deletion lag ------------------------------------------------------


def test_set_offload_threshold_sends_bare_numbers():
    admin = RecordingAdmin()
    args = parse("namespaces", "set-offload-threshold", "-s", "10M", "-t", "2h", "public/default")
    args.call(admin, args)
    assert admin.calls == [
        ("PUT", f"{NS_PATH}/offloadThreshold", 10 * MB),
        ("PUT", f"{NS_PATH}/offloadThresholdInSeconds", 7200),
    ]
    admin.calls.clear()
    args = parse("namespaces", "set-offload-threshold", "public/default")
    args.call(admin, args)
    assert admin.calls == [("PUT", f"{NS_PATH}/offloadThreshold", -1)]


def test_offload_deletion_lag_commands():
    admin = RecordingAdmin({f"{NS_PATH}/offloadDeletionLagMs": 14400000})
    args = parse("namespaces", "set-offload-deletion-lag", "--lag", "4h", "public/default")
    args.call(admin, args)
    assert admin.calls[-1] == ("PUT", f"{NS_PATH}/offloadDeletionLagMs", 14400000)
    args = parse("namespaces", "get-offload-deletion-lag", "public/default")
    assert args.call(admin, args) == 14400000
    args = parse("namespaces", "clear-offload-deletion-lag", "public/default")
    args.call(admin, args)
    assert admin.calls[-1] == ("DELETE", f"{NS_PATH}/offloadDeletionLagMs", None)


def test_get_offload_threshold_shows_both():
    admin = RecordingAdmin({f"{NS_PATH}/offloadThreshold": 1024, f"{NS_PATH}/offloadThresholdInSeconds": -1})
    args = parse("namespaces", "get-offload-threshold", "public/default")
    assert args.call(admin, args) == {"offloadThresholdInBytes": 1024, "offloadThresholdInSeconds": -1}


# --- set-offload-policies: Pulsar's flags, OffloadPoliciesImpl.create's document ---------------


def test_namespace_offload_policies_for_s3():
    args = parse(
        "namespaces", "set-offload-policies", "public/default",
        "-d", "S3", "-b", "pulsar-offload", "-e", "http://127.0.0.1:48837",
        "-mbs", "32M", "-rbs", "2M", "-oat", "1G", "-oats", "1h", "-oae", "10m", "-orp", "bookkeeper-first",
    )  # fmt: skip
    assert offload_policies_body(args) == {
        "managedLedgerOffloadDriver": "S3",
        "managedLedgerOffloadThresholdInBytes": 1 << 30,
        "managedLedgerOffloadThresholdInSeconds": 3600,
        "managedLedgerOffloadDeletionLagInMillis": 600000,
        "managedLedgerOffloadBucket": "pulsar-offload",
        "managedLedgerOffloadServiceEndpoint": "http://127.0.0.1:48837",
        "managedLedgerOffloadMaxBlockSizeInBytes": 32 * MB,
        "managedLedgerOffloadReadBufferSizeInBytes": 2 * MB,
        "managedLedgerOffloadedReadPriority": "bookkeeper-first",
        "s3ManagedLedgerOffloadBucket": "pulsar-offload",
        "s3ManagedLedgerOffloadServiceEndpoint": "http://127.0.0.1:48837",
        "s3ManagedLedgerOffloadMaxBlockSizeInBytes": 32 * MB,
        "s3ManagedLedgerOffloadReadBufferSizeInBytes": 2 * MB,
    }


def test_offload_policies_defaults_and_aws_credentials():
    args = parse(
        "namespaces", "set-offload-policies", "public/default",
        "-d", "aws-s3", "-r", "eu-west-1", "-b", "b", "-i", "AKIA", "-s", "secret",
    )  # fmt: skip
    body = offload_policies_body(args)
    assert body["managedLedgerOffloadMaxBlockSizeInBytes"] == 64 * MB
    assert body["managedLedgerOffloadReadBufferSizeInBytes"] == MB
    assert body["managedLedgerOffloadedReadPriority"] == "tiered-storage-first"
    assert body["s3ManagedLedgerOffloadRegion"] == "eu-west-1"
    assert body["s3ManagedLedgerOffloadCredentialId"] == "AKIA"
    assert body["s3ManagedLedgerOffloadCredentialSecret"] == "secret"
    # Not given: left to the namespace's scalars and the broker's keys.
    for unset in ("Threshold", "ThresholdInBytes", "ThresholdInSeconds", "DeletionLagInMillis", "ServiceEndpoint"):
        assert f"managedLedgerOffload{unset}" not in body


def test_topic_offload_policies_take_the_topic_level_spellings():
    args = parse(
        "topics", "set-offload-policies", TOPIC,
        "-d", "aliyun-oss", "-b", "b", "-e", "http://oss",
        "-m", "8M", "-rb", "512K", "-t", "0", "-ts", "30m", "-dl", "10s",
    )  # fmt: skip
    body = offload_policies_body(args)
    assert body["managedLedgerOffloadMaxBlockSizeInBytes"] == 8 * MB
    assert body["managedLedgerOffloadReadBufferSizeInBytes"] == 512 << 10
    assert body["managedLedgerOffloadThresholdInBytes"] == 0
    assert body["managedLedgerOffloadThresholdInSeconds"] == 1800
    assert body["managedLedgerOffloadDeletionLagInMillis"] == 10000
    assert not any(k.startswith("s3") for k in body)
    # Same command under topicPolicies; the topic level does not need a bucket in the flags.
    assert parse("topicPolicies", "set-offload-policies", TOPIC, "-d", "filesystem").driver == "filesystem"


def test_offload_policies_refused_as_pulsar_admin_refuses_them():
    with pytest.raises(ValueError, match="The driver nope is not supported"):
        offload_policies_body(parse("namespaces", "set-offload-policies", "a/b", "-d", "nope", "-b", "b"))
    with pytest.raises(ValueError, match="Either s3ManagedLedgerOffloadRegion or"):
        offload_policies_body(parse("namespaces", "set-offload-policies", "a/b", "-d", "s3", "-b", "b"))
    with pytest.raises(ValueError, match="MaxBlockSize is not be negative or 0!"):
        offload_policies_body(
            parse("namespaces", "set-offload-policies", "a/b", "-d", "S3", "-b", "b", "-e", "x", "-mbs", "0")
        )
    with pytest.raises(SystemExit):  # the namespace command needs --bucket
        parse("namespaces", "set-offload-policies", "a/b", "-d", "S3")
    with pytest.raises(SystemExit):
        parse("namespaces", "set-offload-policies", "a/b", "-d", "S3", "-b", "b", "-orp", "somewhere")


def test_refused_policies_exit_1_with_one_line(capsys):
    args = parse("--admin-url", "http://127.0.0.1:9", "namespaces", "set-offload-policies", "a/b", "-d", "x", "-b", "b")
    assert run(args) == 1
    assert capsys.readouterr().err.startswith("pulsar-rs admin: The driver x is not supported")


def test_offload_policies_commands_at_both_levels():
    admin = RecordingAdmin()
    for argv, call in (
        (("namespaces", "set-offload-policies", "public/default", "-d", "S3", "-b", "b", "-e", "e"), "POST"),
        (("namespaces", "get-offload-policies", "public/default"), "GET"),
        (("namespaces", "remove-offload-policies", "public/default"), "DELETE"),
        (("topics", "set-offload-policies", TOPIC, "-d", "S3", "-b", "b", "-e", "e"), "POST"),
        (("topicPolicies", "get-offload-policies", TOPIC), "GET"),
        (("topics", "remove-offload-policies", TOPIC), "DELETE"),
    ):
        args = parse(*argv)
        args.call(admin, args)
        assert admin.calls[-1][0] == call
    assert [c[1] for c in admin.calls] == [
        f"{NS_PATH}/offloadPolicies",
        f"{NS_PATH}/offloadPolicies",
        f"{NS_PATH}/removeOffloadPolicies",
        f"{TOPIC_PATH}/offloadPolicies",
        f"{TOPIC_PATH}/offloadPolicies",
        f"{TOPIC_PATH}/offloadPolicies",
    ]


# --- Admin: the message id forms and the calls --------------------------------------------------


@pytest.mark.parametrize(
    "message_id",
    [{"ledgerId": 7, "entryId": 0}, {"ledgerId": 7, "entryId": 0, "partitionIndex": -1}, (7, 0), "7:0", "7:0:-1"],
)
def test_offload_takes_every_message_id_form(message_id):
    admin = RecordingAdmin()
    admin.topics.offload(TOPIC, message_id)
    assert admin.calls == [("PUT", f"{TOPIC_PATH}/offload", {"ledgerId": 7, "entryId": 0, "partitionIndex": -1})]


@pytest.mark.parametrize("bad", [{"ledgerId": 7}, "7", "x:y", {"ledgerId": "a", "entryId": 0}])
def test_offload_position_refuses_what_is_not_an_id(bad):
    with pytest.raises(ValueError):
        offload_position(bad)


def test_admin_offload_calls():
    status = {"status": "NOT_RUN", "lastError": "", "firstUnoffloadedMessage": {"ledgerId": -1, "entryId": -1}}
    admin = RecordingAdmin({f"{TOPIC_PATH}/offload": status, f"{NS_PATH}/offloadThreshold": -1})
    assert admin.topics.offload_status(TOPIC) == status
    assert admin.namespaces.get_offload_threshold("public/default") == -1
    assert admin.namespaces.get_offload_policies("public/default") is None  # 204: not set
    admin.namespaces.set_offload_threshold_in_seconds("public/default", 60)
    admin.namespaces.set_offload_policies("public/default", {"managedLedgerOffloadDriver": "S3"})
    admin.topics.set_offload_policies(TOPIC, {"managedLedgerOffloadDriver": "S3"})
    assert admin.calls[3:] == [
        ("PUT", f"{NS_PATH}/offloadThresholdInSeconds", 60),
        ("POST", f"{NS_PATH}/offloadPolicies", {"managedLedgerOffloadDriver": "S3"}),
        ("POST", f"{TOPIC_PATH}/offloadPolicies", {"managedLedgerOffloadDriver": "S3"}),
    ]
