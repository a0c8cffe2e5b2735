"""The ``pulsar-rs`` command: its argument parser and the ``standalone``, ``broker``, ``export`` and
``perf`` commands (``admin`` is :mod:`pulsar_rs.cli.admin`, ``initialize-cluster-metadata``
:mod:`pulsar_rs.cli.initialize`).

``pulsar-rs standalone [--config broker.conf|broker.toml] [--data-dir DIR] [--bind 127.0.0.1]
[--port 6650] [--admin-port 8080] [--export-every 60s --export-out OUT]`` starts a broker (DESIGN.md
section 4): the config file is Pulsar's own ``broker.conf`` / ``standalone.conf`` (Java properties)
or TOML with the same keys, and flags override it; it can write live snapshots periodically.
``pulsar-rs broker [--config broker.conf] [same options]`` starts a broker of a cluster: as
``standalone``, with the config's ``metadataStoreUrl`` (``zk:host:port``) and ``clusterName`` required
(Pulsar's ``bin/pulsar broker``; the config defaults to ``$PULSAR_BROKER_CONF``).
``pulsar-rs export --data-dir DIR --out OUT [--every 60s [--count N]]`` writes Parquet snapshots of a
data directory, opened read-only (spark/SCHEMA.md), with a progress line on a terminal;
``--metadata-store-url zk:HOST:PORT`` (or ``etcd:http://HOST:PORT`` with
``--bookkeeper-metadata-service-uri``) instead of ``--data-dir`` snapshots every topic a cluster
keeps on BookKeeper, fencing nothing.
``--log-format text|json`` on both. ``pulsar-rs admin ...`` administers a running broker (see
:mod:`pulsar_rs.cli.admin`). ``pulsar-rs perf produce|consume [options]`` is the load generator of ``rust/perf``
(pulsar-perf's options; a line per second, a summary at the end).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

from ..progress import ExportProgress, cli_logger, parse_duration
from . import admin, initialize


def _duration(text: str) -> float:
    try:
        return parse_duration(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _broker_options(p: argparse.ArgumentParser, config_help: str) -> None:
    """The options ``standalone`` and ``broker`` share."""
    p.add_argument("--config", type=Path, default=None, help=config_help)
    p.add_argument(
        "--data-dir", type=Path, default=None, help="data directory (default: ./data, or dataDir in the config)"
    )
    p.add_argument(
        "--bind", default=None, help="address to listen on (default: bindAddress in the config, else 127.0.0.1)"
    )
    p.add_argument(
        "--port", type=int, default=None, help="binary protocol port (default: brokerServicePort, else 6650)"
    )
    p.add_argument("--admin-port", type=int, default=None, help="admin HTTP port (default: webServicePort, else 8080)")
    p.add_argument(
        "--export-every", type=_duration, default=None, metavar="DURATION", help="write a live snapshot this often"
    )
    p.add_argument("--export-out", type=Path, default=None, help="where --export-every writes snapshots")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``pulsar-rs``."""
    parser = argparse.ArgumentParser(prog="pulsar-rs", description="A broker with Apache Pulsar's semantics.")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--log-format", choices=("text", "json"), default="text", help="log lines as text or JSON (default: text)"
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    standalone = commands.add_parser(
        "standalone", parents=[common], help="run a standalone broker until Ctrl-C / SIGTERM"
    )
    _broker_options(standalone, "Pulsar's broker.conf / standalone.conf (Java properties), or TOML with the same keys")
    broker = commands.add_parser(
        "broker",
        parents=[common],
        help="run a broker of a cluster (its config's metadataStoreUrl names the cluster's ZooKeeper) until Ctrl-C",
    )
    _broker_options(broker, "Pulsar's broker.conf (default: $PULSAR_BROKER_CONF); it must set metadataStoreUrl")
    export = commands.add_parser(
        "export",
        parents=[common],
        help="write a Parquet snapshot of a data directory (broker stopped) or of a cluster's topics on BookKeeper",
    )
    source = export.add_mutually_exclusive_group(required=True)
    source.add_argument("--data-dir", type=Path, help="data directory of a stopped broker")
    source.add_argument(
        "--metadata-store-url",
        metavar="zk:HOST:PORT",
        help="a cluster's metadataStoreUrl (zk:HOST:PORT or etcd:http://HOST:PORT): every topic it keeps on "
        "BookKeeper, read without fencing (brokers running)",
    )
    export.add_argument(
        "--bookkeeper-metadata-service-uri",
        metavar="URI",
        default=None,
        help="the cluster's bookkeeperMetadataServiceUri (BookKeeper's metadata; needed with an etcd store)",
    )
    export.add_argument("--out", type=Path, required=True, help="output directory (snapshots accumulate there)")
    export.add_argument(
        "--config",
        type=Path,
        default=None,
        help="the broker's configuration file: its tiered-storage keys let offloaded ledgers be read",
    )
    export.add_argument("--broker-id", default=None, help="broker partition value (default: host name)")
    export.add_argument(
        "--every",
        type=_duration,
        default=None,
        metavar="DURATION",
        help="repeat: one snapshot per period (60s, 5m, 1h) until Ctrl-C, each in its own snapshot_ms=... dir",
    )
    export.add_argument("--count", type=int, default=None, help="with --every: stop after this many snapshots")
    perf = commands.add_parser(
        "perf",
        add_help=False,
        help="load generator (pulsar-perf): perf produce|consume [--rate R --size S --batch B --topics T"
        " --num-producers N (per topic) --producers N (in all) --consumers N --duration SECS --sub-type TYPE"
        " --url URL ...] (--help for all; --json)",
    )
    perf.add_argument("mode", choices=("produce", "consume"))
    perf.add_argument("args", nargs=argparse.REMAINDER)
    admin.add_parser(commands)
    initialize.add_parser(commands)
    return parser


def _latency(summary: dict[str, float]) -> str:
    if not summary.get("count"):
        return "-"
    return " ".join(f"{k} {summary[k]:.2f}" for k in ("p50", "p95", "p99", "p999", "max"))


def _run_perf(args: argparse.Namespace) -> int:
    from .. import PerfError, _native

    argv = list(args.args)
    as_json = "--json" in argv
    argv = [a for a in argv if a != "--json"]
    try:
        raw = _native.perf(args.mode, argv)
    except ValueError as e:
        print(str(e).rstrip(), file=sys.stderr)
        return 2
    except PerfError as e:
        print(f"pulsar-rs perf: {e}", file=sys.stderr)
        return 1
    if raw is None:  # --help
        return 0
    result = json.loads(raw)
    if as_json:
        print(json.dumps(result, indent=2))
    else:
        pub, con = result["publish"], result["consume"]
        if result["config"]["producers"] > 0:
            print(
                f"Aggregated publish: {pub['messages']} msgs in {pub['duration_s']:.1f} s,"
                f" {pub['msg_per_s']:.1f} msg/s,"
                f" {pub['mb_per_s']:.2f} MB/s, {pub['send_errors']} errors, latency ms {_latency(pub['latency_ms'])}"
            )
        if result["config"]["consumers"] > 0:
            print(
                f"Aggregated consume: {con['messages']} msgs in {con['duration_s']:.1f} s,"
                f" {con['msg_per_s']:.1f} msg/s,"
                f" {con['mb_per_s']:.2f} MB/s, e2e latency ms {_latency(con['e2e_latency_ms'])}"
            )
    for err in result["errors"]:
        print(f"pulsar-rs perf: {err}", file=sys.stderr)
    return 1 if result["errors"] else 0


def _stop_on_signals() -> threading.Event:
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    return stop


def _snapshots(
    write: Callable[[int], Path], every: float, stop: threading.Event, log: logging.Logger, count: int | None = None
) -> int:
    """Calls ``write(snapshot_ms)`` every ``every`` seconds (strictly increasing ``snapshot_ms``)
    until ``stop`` is set or ``count`` snapshots are written; returns how many failed."""
    from .. import PulsarRsError

    done = failed = 0
    last_ms = 0
    next_at = time.monotonic()
    while not stop.is_set() and (count is None or done + failed < count):
        snapshot_ms = max(int(time.time() * 1000), last_ms + 1)
        last_ms = snapshot_ms
        try:
            manifest = write(snapshot_ms)
        except (PulsarRsError, OSError) as e:
            failed += 1
            log.error("snapshot failed", extra={"fields": {"snapshot_ms": snapshot_ms, "error": str(e)}})
        else:
            done += 1
            info = json.loads(manifest.read_text())
            log.info(
                "snapshot written",
                extra={"fields": {"snapshot_ms": snapshot_ms, "manifest": str(manifest), "rows": info["tables"]}},
            )
        next_at += every
        if count is not None and done + failed >= count:
            break
        stop.wait(max(0.0, next_at - time.monotonic()))
    return failed


def _run_export(args: argparse.Namespace) -> int:
    from .. import PulsarRsError
    from ..export import is_metadata_store_url, write_snapshot

    log = cli_logger(args.log_format)
    source = args.data_dir if args.data_dir is not None else args.metadata_store_url
    if args.metadata_store_url is not None and not is_metadata_store_url(args.metadata_store_url):
        wrong = args.metadata_store_url
        print(
            f"pulsar-rs export: --metadata-store-url must be zk:host:port or etcd:http://host:port, not {wrong!r}",
            file=sys.stderr,
        )
        return 2
    if args.every is None:
        if args.count is not None:
            print("pulsar-rs export: --count needs --every", file=sys.stderr)
            return 2
        progress = ExportProgress()
        started = time.monotonic()
        try:
            manifest = write_snapshot(
                source,
                args.out,
                broker_id=args.broker_id,
                progress=progress,
                bookkeeper_metadata_service_uri=args.bookkeeper_metadata_service_uri,
                config=args.config,
            )
        except PulsarRsError as e:
            progress.finish("")
            print(f"pulsar-rs export: {e}", file=sys.stderr)
            return 1
        tables = json.loads(manifest.read_text())["tables"]
        progress.finish(
            f"export: {tables['topics']} topics, {sum(tables.values())} rows in {time.monotonic() - started:.1f} s"
        )
        print(manifest.read_text())
        return 0
    stop = _stop_on_signals()

    def write(snapshot_ms: int) -> Path:
        progress = ExportProgress()
        try:
            return write_snapshot(
                source,
                args.out,
                broker_id=args.broker_id,
                snapshot_ms=snapshot_ms,
                progress=progress,
                bookkeeper_metadata_service_uri=args.bookkeeper_metadata_service_uri,
                config=args.config,
            )
        finally:
            progress.finish(f"export: snapshot_ms={snapshot_ms}, {progress.rows} rows")

    failed = _snapshots(write, args.every, stop, log, args.count)
    return 1 if failed else 0


def _cluster_broker_refusal(args: argparse.Namespace, settings: dict[str, object]) -> str | None:
    """Why ``broker`` cannot start with these settings (None: it can; ``standalone`` always can).
    Pulsar's broker needs the cluster's metadata store and its name (``clusterName`` is required
    in its ``ServiceConfiguration``)."""
    if args.command != "broker":
        return None
    # Pulsar's deprecated zookeeperServers names the store too; the broker refuses stores it
    # cannot use (Oxia) itself.
    if not (settings.get("metadataStoreUrl") or settings.get("zookeeperServers")):
        return (
            "metadataStoreUrl must name the cluster's ZooKeeper (zk:host:port) or etcd "
            "(etcd:http://host:port); `pulsar-rs standalone` runs alone"
        )
    if not settings.get("clusterName"):
        return "clusterName must be set: the name of the cluster this broker joins"
    return None


def _run_standalone(args: argparse.Namespace) -> int:
    """Starts the broker and blocks until SIGINT/SIGTERM, then shuts down cleanly (``standalone``, or
    ``broker``: the same with a cluster's metadata store required, its config from
    ``$PULSAR_BROKER_CONF`` when ``--config`` is not given).

    Configuration problems are one line on stderr and exit status 2 (other start-up failures: 1).
    """
    from .. import Broker, InvalidConfigError, PulsarRsError, enable_logging, read_config
    from ..export import write_snapshot

    if (args.export_every is None) != (args.export_out is None):
        print("pulsar-rs: --export-every and --export-out go together", file=sys.stderr)
        return 2
    if args.command == "broker" and args.config is None and os.environ.get("PULSAR_BROKER_CONF"):
        args.config = Path(os.environ["PULSAR_BROKER_CONF"])
    enable_logging(os.environ.get("PULSAR_RS_LOG", "info"), args.log_format)
    log = cli_logger(args.log_format)
    stop = _stop_on_signals()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            settings: dict[str, object] = dict(read_config(args.config)) if args.config else {}
            refused = _cluster_broker_refusal(args, settings)
            if refused:
                print(f"pulsar-rs broker: {refused}", file=sys.stderr)
                return 2
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
    exporter = None
    if args.export_every is not None:
        out = args.export_out

        def write(snapshot_ms: int) -> Path:
            return write_snapshot(broker, out, snapshot_ms=snapshot_ms)

        exporter = threading.Thread(
            target=_snapshots, args=(write, args.export_every, stop, log), name="pulsar-rs-export", daemon=True
        )
        exporter.start()
    while not stop.wait(0.5):
        pass
    if exporter is not None:
        exporter.join()
    broker.stop()
    print("pulsar-rs: stopped", file=sys.stderr, flush=True)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``pulsar-rs`` script."""
    args = build_parser().parse_args(argv)
    if args.command in ("standalone", "broker"):
        return _run_standalone(args)
    if args.command == "export":
        return _run_export(args)
    if args.command == "admin":
        return admin.run(args)
    if args.command == "perf":
        return _run_perf(args)
    if args.command == initialize.COMMAND:
        return initialize.run(args)
    raise AssertionError(f"unhandled command {args.command!r}")  # argparse rejects unknown commands
