"""The ``pulsar-rs`` command line.

``pulsar-rs standalone [--config broker.conf|broker.toml] [--data-dir DIR] [--bind 127.0.0.1]
[--port 6650] [--admin-port 8080]`` starts a broker (DESIGN.md section 4): the config file is
Pulsar's own ``broker.conf`` / ``standalone.conf`` (Java properties) or TOML with the same keys, and
flags override it; ``pulsar-rs export --data-dir DIR
--out OUT`` writes a Parquet snapshot of a stopped broker's data directory (spark/SCHEMA.md);
``pulsar-rs admin ...`` administers a running broker (see ``admin_cli``).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path

from . import admin_cli


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``pulsar-rs``."""
    parser = argparse.ArgumentParser(prog="pulsar-rs", description="A broker with Apache Pulsar's semantics.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    standalone = commands.add_parser("standalone", help="run a standalone broker until Ctrl-C / SIGTERM")
    standalone.add_argument(
        "--config",
        type=Path,
        default=None,
        help="Pulsar's broker.conf / standalone.conf (Java properties), or TOML with the same keys",
    )
    standalone.add_argument(
        "--data-dir", type=Path, default=None, help="data directory (default: ./data, or dataDir in the config)"
    )
    standalone.add_argument(
        "--bind", default=None, help="address to listen on (default: bindAddress in the config, else 127.0.0.1)"
    )
    standalone.add_argument(
        "--port", type=int, default=None, help="binary protocol port (default: brokerServicePort, else 6650)"
    )
    standalone.add_argument(
        "--admin-port", type=int, default=None, help="admin HTTP port (default: webServicePort, else 8080)"
    )
    export = commands.add_parser("export", help="write a Parquet snapshot of a data directory (broker stopped)")
    export.add_argument("--data-dir", type=Path, required=True, help="data directory of a stopped broker")
    export.add_argument("--out", type=Path, required=True, help="output directory (snapshots accumulate there)")
    export.add_argument("--broker-id", default=None, help="broker partition value (default: host name)")
    admin_cli.add_parser(commands)
    return parser


def _run_export(args: argparse.Namespace) -> int:
    from . import PulsarRsError
    from .export import write_snapshot

    try:
        manifest = write_snapshot(args.data_dir, args.out, broker_id=args.broker_id)
    except PulsarRsError as e:
        print(f"pulsar-rs export: {e}", file=sys.stderr)
        return 1
    print(manifest.read_text())
    return 0


def _run_standalone(args: argparse.Namespace) -> int:
    """Starts the broker and blocks until SIGINT/SIGTERM, then shuts down cleanly.

    Configuration problems are one line on stderr and exit status 2 (other start-up failures: 1).
    """
    from . import Broker, InvalidConfigError, PulsarRsError, enable_logging, read_config

    enable_logging(os.environ.get("PULSAR_RS_LOG", "info"))
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            settings: dict[str, object] = dict(read_config(args.config)) if args.config else {}
            if args.bind is not None:
                settings["bindAddress"] = args.bind
            port = args.port if args.port is not None else settings.get("brokerServicePort", 6650)
            admin_port = args.admin_port if args.admin_port is not None else settings.get("webServicePort", 8080)
            data_dir = args.data_dir or settings.pop("dataDir", None) or Path("data")
            broker = Broker(data_dir=data_dir, port=port, admin_port=admin_port, **settings)  # type: ignore[arg-type]
    except InvalidConfigError as e:
        print(f"pulsar-rs: {e}", file=sys.stderr)
        return 2
    except PulsarRsError as e:
        print(f"pulsar-rs: cannot start: {e}", file=sys.stderr)
        return 1
    for w in caught:
        print(f"pulsar-rs: warning: {w.message}", file=sys.stderr, flush=True)
    print(f"READY {broker.service_url} {broker.admin_url} data_dir={broker.data_dir}", flush=True)
    while not stop.wait(0.5):
        pass
    broker.stop()
    print("pulsar-rs: stopped", file=sys.stderr, flush=True)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``pulsar-rs`` script."""
    args = build_parser().parse_args(argv)
    if args.command == "standalone":
        return _run_standalone(args)
    if args.command == "export":
        return _run_export(args)
    if args.command == "admin":
        return admin_cli.run(args)
    raise AssertionError(f"unhandled command {args.command!r}")  # argparse rejects unknown commands


if __name__ == "__main__":
    raise SystemExit(main())
