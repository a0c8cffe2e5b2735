"""Tiered storage (offload) commands, with pulsar-admin's names and flags.

On a topic (``topics``): ``offload --size-threshold/-s SIZE T`` (as Pulsar's ``CmdTopics.Offload``:
it reads the topic's internal stats, walks its ledgers from the newest, summing their sizes, and
offloads everything before the ledger where the sum first passes ``SIZE``; ``Nothing to
offload`` when it never does) and ``offload-status [--wait-complete/-w] T`` (``-w`` polls every
second while the status is ``RUNNING``).

On a namespace (``namespaces``): ``set-offload-threshold [--size/-s SIZE] [--time/-t TIME] NS``
(``--size`` 0 offloads every ledger as it closes, -1, the default, falls back to the broker's
key), ``get-offload-threshold``, ``set-offload-deletion-lag --lag/-l TIME``,
``get-offload-deletion-lag``, ``clear-offload-deletion-lag``.

``set-offload-policies`` / ``get-offload-policies`` / ``remove-offload-policies`` on a namespace
and (``topics`` and ``topicPolicies``) on a topic, with the flags of both pulsar-admin commands:

* ``--driver/-d``: ``S3``, ``aws-s3``, ``aliyun-oss`` (Pulsar's other drivers are stored only);
* ``--region/-r``, ``--bucket/-b``, ``--endpoint/-e``: where the objects go;
* ``--aws-id/-i``, ``--aws-secret/-s``, ``--s3-role/--ro/-ro``, ``--s3-role-session-name/-rsn``:
  ``aws-s3`` credentials;
* ``--maxBlockSize/-mbs`` (``--maxBlockSizeInBytes/-m``; 64M by default) and
  ``--readBufferSize/-rbs`` (``--readBufferSizeInBytes/-rb``; 1M by default);
* ``--offloadAfterThreshold/-oat`` (``--offloadThresholdInBytes/-t``): the size threshold;
* ``--offloadAfterThresholdInSeconds/-oats`` (``--offloadThresholdInSeconds/-ts``): the age threshold;
* ``--offloadAfterElapsed/-oae`` (``--offloadDeletionLagInMillis/-dl``): the deletion lag, a time;
* ``--offloadedReadPriority/-orp``: ``tiered-storage-first`` or ``bookkeeper-first``.

The namespace command needs ``--bucket``, as Pulsar's. The document sent is Pulsar's
``OffloadPoliciesImpl.create``: the ``managedLedgerOffload*`` fields, and for ``S3`` / ``aws-s3``
the same values under ``s3ManagedLedgerOffload*`` too; thresholds and the lag are left out
unless given, so they fall back to the namespace's and the broker's.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from ...admin import Admin
from .output import NOT_SET
from .units import seconds, size

__all__ = [
    "DRIVERS",
    "READ_PRIORITIES",
    "add_namespace_commands",
    "add_policies",
    "add_topic_commands",
    "offload_policies_body",
]

#: The drivers Pulsar's offload policies accept (``OffloadPoliciesImpl.DRIVER_NAMES``), matched
#: case-insensitively; this broker offloads with ``S3``, ``aws-s3`` and ``aliyun-oss``.
DRIVERS = ("S3", "aws-s3", "google-cloud-storage", "filesystem", "azureblob", "aliyun-oss")
#: ``OffloadedReadPriority``'s values.
READ_PRIORITIES = ("bookkeeper-first", "tiered-storage-first")
#: ``OffloadPoliciesImpl``'s defaults the command sends when the flag is not given.
DEFAULT_MAX_BLOCK_SIZE = 64 << 20
DEFAULT_READ_BUFFER_SIZE = 1 << 20


def _offload(admin: Admin, a: argparse.Namespace) -> str:
    """``topics offload``: the id from the size threshold, then the PUT; the line Pulsar prints."""
    position = admin.topics.offload_by_size(a.topic, a.size_threshold)
    if position is None:
        return "Nothing to offload"
    return f"Offload triggered for {a.topic} for messages before {position[0]}:{position[1]}:-1"


def _offload_status(admin: Admin, a: argparse.Namespace) -> Any:
    """``topics offload-status``: the status document, once it is no longer ``RUNNING`` with ``-w``."""
    status = admin.topics.offload_status(a.topic)
    while a.wait_complete and status.get("status") == "RUNNING":
        time.sleep(1)  # poll every second, as pulsar-admin's -w: the broker offloads in the background
        status = admin.topics.offload_status(a.topic)
    return status


def add_topic_commands(g: Any) -> None:
    """``offload`` and ``offload-status`` on the ``topics`` sub-parsers ``g``."""
    p = g.add_parser("offload", help="offload the topic's older ledgers to tiered storage")
    p.add_argument("topic")
    p.add_argument(
        "--size-threshold",
        "-s",
        type=size,
        required=True,
        help="keep this much on the broker, newest first (e.g. 10M, 1G; 0: all but the current ledger)",
    )
    p.set_defaults(call=_offload)
    p = g.add_parser("offload-status", help="the last offload of the topic since it was loaded")
    p.add_argument("topic")
    p.add_argument("--wait-complete", "-w", action="store_true", help="wait while it runs")
    p.set_defaults(call=_offload_status)


def _set_threshold(admin: Admin, a: argparse.Namespace) -> None:
    """``namespaces set-offload-threshold``: the size always (-1 by default), the time when given."""
    admin.namespaces.set_offload_threshold(a.namespace, a.size)
    if a.time is not None:
        admin.namespaces.set_offload_threshold_in_seconds(a.namespace, a.time)


def _get_threshold(admin: Admin, a: argparse.Namespace) -> dict[str, int]:
    """``namespaces get-offload-threshold``: both thresholds, as pulsar-admin prints them."""
    return {
        "offloadThresholdInBytes": admin.namespaces.get_offload_threshold(a.namespace),
        "offloadThresholdInSeconds": admin.namespaces.get_offload_threshold_in_seconds(a.namespace),
    }


def _get_deletion_lag(admin: Admin, a: argparse.Namespace) -> Any:
    """``namespaces get-offload-deletion-lag``: milliseconds, or ``(not set)``."""
    lag = admin.namespaces.get_offload_deletion_lag(a.namespace)
    return NOT_SET if lag is None else lag


def add_namespace_commands(g: Any) -> None:
    """The namespace's threshold and deletion-lag commands on the ``namespaces`` sub-parsers."""
    p = g.add_parser("set-offload-threshold")
    p.add_argument("namespace")
    p.add_argument(
        "--size", "-s", type=size, default=-1, help="bytes kept on the broker (e.g. 10M, 16G; 0: offload at once)"
    )
    p.add_argument("--time", "-t", type=seconds, default=None, help="age before offload (e.g. 10m, 5h, 3d)")
    p.set_defaults(call=_set_threshold)
    p = g.add_parser("get-offload-threshold")
    p.add_argument("namespace")
    p.set_defaults(call=_get_threshold)
    p = g.add_parser("set-offload-deletion-lag")
    p.add_argument("namespace")
    p.add_argument(
        "--lag", "-l", type=seconds, required=True, help="keep offloaded ledgers on the broker this long (e.g. 4h)"
    )
    p.set_defaults(call=lambda admin, a: admin.namespaces.set_offload_deletion_lag(a.namespace, a.lag * 1000))
    p = g.add_parser("get-offload-deletion-lag")
    p.add_argument("namespace")
    p.set_defaults(call=_get_deletion_lag)
    p = g.add_parser("clear-offload-deletion-lag")
    p.add_argument("namespace")
    p.set_defaults(call=lambda admin, a: admin.namespaces.clear_offload_deletion_lag(a.namespace))


def _positive(name: str, value: int) -> int:
    """``value``, refused (``ValueError``, as pulsar-admin's ``positiveCheck``) unless it is
    between 1 and Integer.MAX_VALUE."""
    if value <= 0:
        raise ValueError(f"{name} is not be negative or 0!")
    if value > 2**31 - 1:
        raise ValueError(f"{name} is not bigger than {2**31 - 1}!")
    return value


def offload_policies_body(a: argparse.Namespace) -> dict[str, Any]:
    """The ``OffloadPolicies`` document of a ``set-offload-policies`` command, as Pulsar's
    ``OffloadPoliciesImpl.create`` builds it (fields not given are left out). ``ValueError`` for
    an unknown driver, an S3 driver with neither region nor endpoint, or a block or buffer size
    that is not positive, with pulsar-admin's messages."""
    driver = next((d for d in DRIVERS if d.lower() == a.driver.lower()), None)
    if driver is None:
        raise ValueError(f"The driver {a.driver} is not supported, (Possible values: {','.join(DRIVERS)}).")
    s3 = driver in ("S3", "aws-s3")
    if s3 and not a.region and not a.endpoint:
        raise ValueError(
            "Either s3ManagedLedgerOffloadRegion or s3ManagedLedgerOffloadServiceEndpoint must be set"
            " if s3 offload enabled"
        )
    block = _positive("MaxBlockSize", DEFAULT_MAX_BLOCK_SIZE if a.max_block_size is None else a.max_block_size)
    buffer = _positive("ReadBufferSize", DEFAULT_READ_BUFFER_SIZE if a.read_buffer_size is None else a.read_buffer_size)
    fields: dict[str, Any] = {
        "managedLedgerOffloadDriver": a.driver,
        "managedLedgerOffloadThresholdInBytes": a.threshold_bytes,
        "managedLedgerOffloadThresholdInSeconds": a.threshold_seconds,
        "managedLedgerOffloadDeletionLagInMillis": None if a.deletion_lag is None else a.deletion_lag * 1000,
        "managedLedgerOffloadBucket": a.bucket,
        "managedLedgerOffloadRegion": a.region,
        "managedLedgerOffloadServiceEndpoint": a.endpoint,
        "managedLedgerOffloadMaxBlockSizeInBytes": block,
        "managedLedgerOffloadReadBufferSizeInBytes": buffer,
        "managedLedgerOffloadedReadPriority": a.read_priority or "tiered-storage-first",
    }
    if s3:
        fields.update(
            {
                "s3ManagedLedgerOffloadRole": a.s3_role,
                "s3ManagedLedgerOffloadRoleSessionName": a.s3_role_session_name,
                "s3ManagedLedgerOffloadCredentialId": a.aws_id,
                "s3ManagedLedgerOffloadCredentialSecret": a.aws_secret,
                "s3ManagedLedgerOffloadRegion": a.region,
                "s3ManagedLedgerOffloadBucket": a.bucket,
                "s3ManagedLedgerOffloadServiceEndpoint": a.endpoint,
                "s3ManagedLedgerOffloadMaxBlockSizeInBytes": block,
                "s3ManagedLedgerOffloadReadBufferSizeInBytes": buffer,
            }
        )
    return {k: v for k, v in fields.items() if v is not None}


def _target(admin: Admin, a: argparse.Namespace) -> tuple[Any, str]:
    """``admin.topics`` and the topic, or ``admin.namespaces`` and the namespace."""
    topic = getattr(a, "topic", None)
    return (admin.topics, topic) if topic is not None else (admin.namespaces, a.namespace)


def _set_policies(admin: Admin, a: argparse.Namespace) -> None:
    """``set-offload-policies`` on the command's namespace or topic."""
    group, target = _target(admin, a)
    group.set_offload_policies(target, offload_policies_body(a))


def _get_policies(admin: Admin, a: argparse.Namespace) -> Any:
    """``get-offload-policies``: the document, or ``(not set)``."""
    group, target = _target(admin, a)
    policies = group.get_offload_policies(target)
    return NOT_SET if policies is None else policies


def _remove_policies(admin: Admin, a: argparse.Namespace) -> None:
    """``remove-offload-policies`` on the command's namespace or topic."""
    group, target = _target(admin, a)
    group.remove_offload_policies(target)


def _policy_flags(p: Any, target: str) -> None:
    """The flags of pulsar-admin's ``namespaces set-offload-policies`` and of its topic-level
    ``set-offload-policies`` (each takes the other's spellings too)."""
    p.add_argument("--driver", "-d", required=True, help=f"one of {', '.join(DRIVERS)}")
    p.add_argument("--region", "-r", default=None, help="the bucket's region")
    p.add_argument(
        "--bucket", "-b", required=target == "namespace", default=None, help="the bucket offloaded ledgers go into"
    )
    p.add_argument("--endpoint", "-e", default=None, help="the S3 endpoint, e.g. http://127.0.0.1:48837")
    p.add_argument("--aws-id", "-i", default=None, help="AWS credential id (aws-s3)")
    p.add_argument("--aws-secret", "-s", default=None, help="AWS credential secret (aws-s3)")
    p.add_argument("--s3-role", "--ro", "-ro", dest="s3_role", default=None, help="S3 role to assume (aws-s3)")
    p.add_argument("--s3-role-session-name", "-rsn", default=None, help="S3 role session name (aws-s3)")
    p.add_argument(
        "--maxBlockSize",
        "-mbs",
        "--maxBlockSizeInBytes",
        "-m",
        dest="max_block_size",
        type=size,
        default=None,
        help="largest block of an object (e.g. 32M, 64M; default 64M)",
    )
    p.add_argument(
        "--readBufferSize",
        "-rbs",
        "--readBufferSizeInBytes",
        "-rb",
        dest="read_buffer_size",
        type=size,
        default=None,
        help="read buffer (e.g. 1M, 5M; default 1M)",
    )
    p.add_argument(
        "--offloadAfterThreshold",
        "-oat",
        "--offloadThresholdInBytes",
        "-t",
        dest="threshold_bytes",
        type=size,
        default=None,
        help="offload past this many bytes on the broker (e.g. 10M; 0: at once)",
    )
    p.add_argument(
        "--offloadAfterThresholdInSeconds",
        "-oats",
        "--offloadThresholdInSeconds",
        "-ts",
        dest="threshold_seconds",
        type=seconds,
        default=None,
        help="offload ledgers closed this long ago (e.g. 100m, 3h, 2d)",
    )
    p.add_argument(
        "--offloadAfterElapsed",
        "-oae",
        "--offloadDeletionLagInMillis",
        "-dl",
        dest="deletion_lag",
        type=seconds,
        default=None,
        help="delete the broker's copy this long after the offload (e.g. 10s, 100m, 3h)",
    )
    p.add_argument(
        "--offloadedReadPriority",
        "-orp",
        dest="read_priority",
        choices=READ_PRIORITIES,
        default=None,
        help="where offloaded ledgers still on the broker are read from (default tiered-storage-first)",
    )


def add_policies(g: Any, target: str) -> None:
    """``set-`` / ``get-`` / ``remove-offload-policies`` on a ``namespace`` or a ``topic``
    positional."""
    p = g.add_parser("set-offload-policies")
    p.add_argument(target)
    _policy_flags(p, target)
    p.set_defaults(call=_set_policies)
    p = g.add_parser("get-offload-policies")
    p.add_argument(target)
    p.set_defaults(call=_get_policies)
    p = g.add_parser("remove-offload-policies")
    p.add_argument(target)
    p.set_defaults(call=_remove_policies)
