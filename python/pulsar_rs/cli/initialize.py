"""``pulsar-rs initialize-cluster-metadata``: a new cluster's records in its ZooKeeper, with the flags of
Apache Pulsar's ``pulsar initialize-cluster-metadata`` (``-c``, ``-uw``, ``-md`` / ``-cms``, ...).

Its deprecated spellings are taken too (``-zk``, ``-cs``, ``-gzk``, ``--bookkeeper-metadata-service-uri``),
with Pulsar's messages for missing or conflicting stores. Not taken (refused as unknown arguments):
the cluster's proxy (``-pp``, ``-pu``), its brokers' client TLS and authentication (``-te``,
``--auth-plugin``, ``--auth-parameters``: set them later with ``clusters update``) and store config
files (``-mscp``, ``-cmscp``). ``--initial-num-stream-storage-containers`` is taken, but BookKeeper's
stream storage and Pulsar Functions' log namespace are not set up: pulsar-rs runs neither.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

COMMAND = "initialize-cluster-metadata"


def add_parser(commands: Any) -> None:
    """Adds the command to ``pulsar-rs``'s sub-command parsers."""
    p = commands.add_parser(
        COMMAND,
        allow_abbrev=False,
        help="write a new cluster's records in its ZooKeeper (Pulsar's initialize-cluster-metadata flags)",
    )
    p.add_argument("-c", "--cluster", required=True, help="cluster name")
    p.add_argument("-uw", "--web-service-url", required=True, help="web service URL of the new cluster")
    p.add_argument("-tw", "--web-service-url-tls", help="web service URL with TLS")
    p.add_argument("-ub", "--broker-service-url", help="broker service URL")
    p.add_argument("-tb", "--broker-service-url-tls", help="broker service URL with TLS")
    p.add_argument("-md", "--metadata-store", help="metadata store, e.g. zk:my-zk:2181")
    p.add_argument("-zk", "--zookeeper", help=argparse.SUPPRESS)
    p.add_argument("-cms", "--configuration-metadata-store", help="configuration metadata store")
    p.add_argument("-cs", "--configuration-store", help=argparse.SUPPRESS)
    p.add_argument("-gzk", "--global-zookeeper", help=argparse.SUPPRESS)
    p.add_argument("--zookeeper-session-timeout-ms", type=int, default=30000, help="session timeout (ms)")
    p.add_argument(
        "-bn",
        "--default-namespace-bundle-number",
        type=int,
        default=0,
        help="bundles of public/default (default 16)",
    )
    p.add_argument(
        "--initial-num-transaction-coordinators", type=int, default=16, help="transaction coordinators (default 16)"
    )
    p.add_argument("--existing-bk-metadata-service-uri", help="BookKeeper is formatted already: leave /ledgers")
    p.add_argument("--bookkeeper-metadata-service-uri", help=argparse.SUPPRESS)
    p.add_argument(
        "--initial-num-stream-storage-containers",
        type=int,
        default=16,
        help="accepted for Pulsar's scripts; BookKeeper's stream storage is not set up (pulsar-rs does not run it)",
    )


def run(args: argparse.Namespace) -> int:
    """Runs the command: 0 when the records are written, 1 (and Pulsar's message) otherwise."""
    from .. import MetadataStoreError, initialize_cluster_metadata

    def refuse(message: str) -> int:
        print(message, file=sys.stderr)
        return 1

    metadata_store = args.metadata_store or (f"zk:{args.zookeeper}" if args.zookeeper else None)
    if metadata_store is None:
        return refuse("Metadata store address argument is required (--metadata-store)")
    deprecated = args.configuration_store or args.global_zookeeper
    if args.configuration_metadata_store is None and deprecated is None:
        return refuse("Configuration metadata store address argument is required (--configuration-metadata-store)")
    if args.configuration_metadata_store is not None and deprecated is not None:
        return refuse(
            "Configuration metadata store argument (--configuration-metadata-store) supersedes the deprecated "
            "(--global-zookeeper and --configuration-store) argument"
        )
    if args.initial_num_transaction_coordinators <= 0:
        return refuse("Number of transaction coordinators must greater than 0")
    existing = args.existing_bk_metadata_service_uri or args.bookkeeper_metadata_service_uri
    try:
        formatted = initialize_cluster_metadata(
            args.cluster,
            args.web_service_url,
            metadata_store,
            args.configuration_metadata_store or deprecated,
            web_service_url_tls=args.web_service_url_tls,
            broker_service_url=args.broker_service_url,
            broker_service_url_tls=args.broker_service_url_tls,
            # Pulsar: a count of 0 or less is its default (16).
            default_namespace_bundles=max(args.default_namespace_bundle_number, 0),
            transaction_coordinators=args.initial_num_transaction_coordinators,
            existing_bookkeeper=existing is not None,
            session_timeout_ms=args.zookeeper_session_timeout_ms,
        )
    except (ValueError, MetadataStoreError) as e:
        return refuse(f"pulsar-rs {COMMAND}: {e}")
    if formatted:
        print("BookKeeper metadata formatted (/ledgers)")
    print(f"Cluster metadata for '{args.cluster}' setup correctly")
    return 0
