"""The ``pulsar-rs`` command line.

``pulsar-rs standalone [--config broker.toml] [--data-dir DIR] [--bind 127.0.0.1] [--port 6650]
[--admin-port 8080]`` starts a broker (DESIGN.md section 4); ``pulsar-rs export --data-dir DIR
--out OUT`` writes a Parquet snapshot of a stopped broker's data directory (spark/SCHEMA.md);
``pulsar-rs admin ...`` administers a running broker (see ``admin_cli``).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import tomllib
from collections.abc import Sequence
from pathlib import Path

from . import admin_cli


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``pulsar-rs``."""
    parser = argparse.ArgumentParser(prog="pulsar-rs", description="A broker with Apache Pulsar's semantics.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    standalone = commands.add_parser("standalone", help="run a standalone broker until Ctrl-C / SIGTERM")
    standalone.add_argument(
        "--config", type=Path, default=None, help="TOML file of broker.conf settings (Pulsar's key names)"
    )
    standalone.add_argument(
        "--data-dir", type=Path, default=None, help="data directory (default: ./data, or dataDir in the config)"
    )
    standalone.add_argument("--bind", default="127.0.0.1", help="address to listen on (default: %(default)s)")
    standalone.add_argument("--port", type=int, default=6650, help="binary protocol port (default: %(default)s)")
    standalone.add_argument("--admin-port", type=int, default=8080, help="admin HTTP port (default: %(default)s)")
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


def _load_settings(path: Path | None) -> dict[str, object]:
    if path is None:
        return {}
    with path.open("rb") as f:
        return tomllib.load(f)


def _run_standalone(args: argparse.Namespace) -> int:
    """Starts the broker and blocks until SIGINT/SIGTERM, then shuts down cleanly."""
    from . import Broker, InvalidConfigError, enable_logging

    enable_logging(os.environ.get("PULSAR_RS_LOG", "info"))
    settings = _load_settings(args.config)
    settings["bindAddress"] = args.bind
    data_dir = args.data_dir or settings.pop("dataDir", None) or Path("data")
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        broker = Broker(data_dir=data_dir, port=args.port, admin_port=args.admin_port, **settings)  # type: ignore[arg-type]
    except InvalidConfigError as e:
        print(f"pulsar-rs: {e}", file=sys.stderr)
        return 2
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
