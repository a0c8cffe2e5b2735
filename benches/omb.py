"""The OpenMessaging Benchmark (OMB, github.com/openmessaging/benchmark), unchanged, against
pulsar-rs and Apache Pulsar 4.0.8 in one run: OMB's own framework and Pulsar driver, OMB's own
published workload files, its own JSON results.

Nothing of OMB is kept in this repository. Its source is taken at run time from a checkout given
with ``--omb-src`` (a git repository, bare or not: ``git archive --ref``; or a plain directory),
copied into ``~/.cache/pulsar-rs/omb/<commit>/`` and built there with Maven; later runs reuse that
build (``--omb-src`` can then be left out: the cache's ``CURRENT`` names the last one prepared).
The Go module proxy, which serves pulsar-client-go to ``tools/compat/go_client_suite.py``, answers
``403 Forbidden`` ("This module version is not available") for github.com/openmessaging/benchmark
at every version (``master``, ``latest``, ``HEAD``): OMB is a Maven project with no go.mod, and no
other registry reached here serves its source.

The one change made to the copy (at run time, never committed), so that Maven builds only the
framework and the Pulsar driver: the root pom's ``<modules>`` become ``driver-api``,
``driver-pulsar`` and ``benchmark-framework``, and ``benchmark-framework/pom.xml`` loses its
``<dependency>`` on every other ``driver-*`` module. The framework imports no driver class (drivers
load by ``Class.forName(driverClass)``), so its code and the Pulsar driver's are as published. The
build::

    mvn -B -ntp -pl benchmark-framework -am -DskipTests -Dcheckstyle.skip -Dlicense.skip \\
        -Djacoco.skip -Denforcer.skip -Dspotless.check.skip -Dspotbugs.skip package \\
        [-Dpulsar.version=V]     # --client-version; default: the pom's (pulsar-client-all 2.11.0)

Runs: ``bin/benchmark --drivers DRIVER.yaml --output RESULT.json WORKLOAD.yaml`` in the copy (its
payload paths are relative to it) with ``HEAP_OPTS`` set, no ``--workers`` and no ``workers.yaml``:
OMB's ``LocalWorker``, producers and consumers in OMB's JVM. One OMB process per broker and
workload; the brokers one at a time (the order rotates each round), each started fresh on an empty
data directory and serving every workload of its round:

  pulsar-rs     the venv's ``pulsar-rs standalone``, defaults (durable: a receipt waits for fdatasync)
  pulsar-sync   Apache Pulsar 4.0.8 standalone (``tools/pulsar_reference``) with ``journalSyncData=true``
  pulsar        the same as shipped (``journalSyncData=false``)

Driver files: OMB's ``driver-pulsar/pulsar.yaml`` with only these keys changed: ``name`` (the
broker), ``client.serviceUrl`` / ``client.httpUrl`` (the broker's ports), ``client.clusterName``
``standalone`` (both brokers' cluster; the published ``local`` does not exist on a standalone),
``client.persistence`` 1/1/1 (one bookie), ``client.ioThreads`` and ``client.connectionsPerBroker``
(``--io-threads``, 2 cores). Workload files: OMB's ``workloads/<name>.yaml`` with only
``testDurationMinutes`` and ``warmupDurationMinutes`` replaced (OMB takes whole minutes) and
``producerRate`` capped at ``--rate-cap`` (not for ``max-rate-*`` files, whose published rate
stands for "as fast as it goes").

Per run, from OMB's JSON (its 10 s windows of the measured phase; the warm-up is not in it): mean
publish and consume msg/s, the sum of publish errors, the aggregated publish and end-to-end latency
p50/p99 (ms), the aggregated publish-delay p99 (us: how late OMB's load generator sent; when it is
large the client, not the broker, was the limit) and the backlog at the end. Medians over
``--runs`` rounds; every OMB JSON is kept beside ``--out``; a markdown table with the ratios
pulsar-rs / each other broker is printed.

    python benches/omb.py --omb-src /path/to/openmessaging-benchmark --build-only
    python benches/omb.py --runs 2 --duration 1 --warmup 1 --out benches/out/omb.json

Maven on this 2-core machine, busy with other builds: about 2 minutes with a cold ``~/.m2`` for the
pom's client (about 3.5 with ``--client-version 4.0.8``, which builds as well), 1 minute warm.
``tests/java/test_omb_smoke.py`` is the CI smoke run: OMB's ``simple-workload`` for OMB's shortest
measured phase (1 minute: ``testDurationMinutes`` is an integer and 0 means "run forever") against
pulsar-rs, about 75 s once built.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

#: Where prepared copies of OMB live, one directory per source commit (or tree hash).
CACHE = Path(os.environ.get("PULSAR_RS_OMB_CACHE", str(Path.home() / ".cache" / "pulsar-rs" / "omb")))
#: OMB's modules that are built; everything else of its root pom is left out of the copy's reactor.
MODULES = ("driver-api", "driver-pulsar", "benchmark-framework")
MVN_SKIPS = (
    "-DskipTests",
    "-Dcheckstyle.skip",
    "-Dlicense.skip",
    "-Djacoco.skip",
    "-Denforcer.skip",
    "-Dspotless.check.skip",
    "-Dspotbugs.skip",
)
#: OMB's standard workloads run by default (files of its ``workloads/``, without ``.yaml``).
DEFAULT_WORKLOADS = (
    "1-topic-1-partition-1kb",
    "1-topic-16-partitions-1kb",
    "simple-workload",
    "max-rate-1-topic-1-partition-1p-1c-1kb",
)
BROKERS = ("pulsar-rs", "pulsar-sync", "pulsar")


def log(*a: object) -> None:
    print(*a, file=sys.stderr, flush=True)


class OmbError(RuntimeError):
    """OMB could not be obtained or built (the message says why)."""


# --------------------------------------------------------------------------------------------------
# Source and build


def _git(src: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(src), *args], check=True, capture_output=True, text=True).stdout.strip()


def _tree_key(src: Path) -> str:
    h = hashlib.sha1()
    for p in ("pom.xml", "benchmark-framework/pom.xml", "driver-pulsar/pom.xml"):
        h.update((src / p).read_bytes())
    return "tree-" + h.hexdigest()[:12]


def trim_poms(root: Path) -> None:
    """The run-time change to the copy: the reactor holds MODULES only, and the framework no longer
    depends on the other drivers (which it never imports)."""
    pom = root / "pom.xml"
    text = pom.read_text()
    mods = "".join(f"<module>{m}</module>" for m in MODULES)
    text, n = re.subn(r"<modules>.*?</modules>", f"<modules>{mods}</modules>", text, count=1, flags=re.S)
    if n != 1:
        raise OmbError(f"{pom}: no <modules>")
    pom.write_text(text)
    fw = root / "benchmark-framework" / "pom.xml"

    def drop(m: re.Match[str]) -> str:
        art = re.search(r"<artifactId>(driver-[\w-]+)</artifactId>", m.group(0))
        return "" if art and art.group(1) not in MODULES else m.group(0)

    fw.write_text(re.sub(r"<dependency>.*?</dependency>", drop, fw.read_text(), flags=re.S))


def prepare_source(src: str | None, ref: str) -> Path:
    """Copies OMB's source into the cache (once per commit) and returns the copy."""
    CACHE.mkdir(parents=True, exist_ok=True)
    current = CACHE / "CURRENT"
    if src is None:
        if current.exists():
            d = CACHE / current.read_text().strip()
            if (d / "pom.xml").exists():
                return d
        raise OmbError(
            "no OMB source: give a checkout of github.com/openmessaging/benchmark with --omb-src "
            "(the Go module proxy refuses it: 403; no registry here serves it)"
        )
    s = Path(src).resolve()
    is_git = subprocess.run(["git", "-C", str(s), "rev-parse", "--git-dir"], capture_output=True).returncode == 0
    key = _git(s, "rev-parse", f"{ref}^{{commit}}") if is_git else _tree_key(s)
    dest = CACHE / key
    if not (dest / ".prepared").exists():
        shutil.rmtree(dest, ignore_errors=True)
        tmp = Path(tempfile.mkdtemp(prefix="omb-src-", dir=CACHE))
        if is_git:
            arch = subprocess.run(["git", "-C", str(s), "archive", key], check=True, capture_output=True).stdout
            with tempfile.TemporaryFile() as fh:
                fh.write(arch)
                fh.seek(0)
                with tarfile.open(fileobj=fh) as tar:
                    tar.extractall(tmp, filter="data")
        else:
            shutil.copytree(s, tmp, dirs_exist_ok=True, ignore=shutil.ignore_patterns("target", ".git"))
        trim_poms(tmp)
        (tmp / ".prepared").write_text(f"{s} {key}\n")
        tmp.rename(dest)
        log(f"omb: source {s} @ {key} copied to {dest} (poms trimmed to {', '.join(MODULES)})")
    current.write_text(key + "\n")
    return dest


def build_command(client_version: str | None) -> list[str]:
    cmd = ["nice", "-n", "10", "mvn", "-B", "-ntp", "-pl", "benchmark-framework", "-am", *MVN_SKIPS, "package"]
    if client_version:
        cmd.append(f"-Dpulsar.version={client_version}")
    return cmd


def build(omb: Path, client_version: str | None) -> float:
    """Builds the copy once per client version; returns Maven's seconds (0 when cached)."""
    stamp = omb / f".built-{client_version or 'pom'}"
    if stamp.exists() and (omb / "benchmark-framework" / "target" / "classpath.txt").exists():
        return 0.0
    cmd = build_command(client_version)
    log(f"omb: build in {omb}: {' '.join(cmd)}")
    t0 = time.monotonic()
    r = subprocess.run(cmd, cwd=omb, capture_output=True, text=True)
    took = time.monotonic() - t0
    (omb / "build.log").write_text(r.stdout + r.stderr)
    if r.returncode != 0:
        errs = [ln for ln in r.stdout.splitlines() if ln.startswith("[ERROR]")][:15]
        raise OmbError(f"mvn failed after {took:.0f} s ({omb / 'build.log'}):\n" + "\n".join(errs))
    for old in omb.glob(".built-*"):
        old.unlink()
    stamp.write_text(f"{took:.0f} s\n")
    log(f"omb: built in {took:.0f} s")
    return took


# --------------------------------------------------------------------------------------------------
# OMB's yaml files, edited key by key (the rest of each file stays as published)


def set_keys(text: str, values: dict[str, str]) -> str:
    """Replaces the values of the dotted keys in `values` (``client.serviceUrl``) in a block-style
    yaml text; a top-level key that is missing is appended, a nested one is an error."""
    out: list[str] = []
    stack: list[tuple[int, str]] = []
    seen: set[str] = set()
    for line in text.splitlines():
        m = re.match(r"^(\s*)([A-Za-z_][\w-]*):(\s*)(.*)$", line)
        if m and not line.lstrip().startswith("#"):
            ind = len(m.group(1))
            while stack and stack[-1][0] >= ind:
                stack.pop()
            path = ".".join([k for _, k in stack] + [m.group(2)])
            stack.append((ind, m.group(2)))
            if path in values:
                line = f"{m.group(1)}{m.group(2)}: {values[path]}"
                seen.add(path)
        out.append(line)
    for k in values:
        if k not in seen:
            if "." in k:
                raise OmbError(f"key {k} not in the yaml")
            out.append(f"{k}: {values[k]}")
    return "\n".join(out) + "\n"


def get_key(text: str, key: str) -> str | None:
    m = re.search(rf"^{re.escape(key)}:\s*(.*?)\s*$", text, flags=re.M)
    return m.group(1) if m else None


def driver_yaml(omb: Path, name: str, service_url: str, http_url: str, io_threads: int) -> str:
    return set_keys(
        (omb / "driver-pulsar" / "pulsar.yaml").read_text(),
        {
            "name": name,
            "client.serviceUrl": service_url,
            "client.httpUrl": http_url,
            "client.clusterName": "standalone",
            "client.ioThreads": str(io_threads),
            "client.connectionsPerBroker": str(io_threads),
            "client.persistence.ensembleSize": "1",
            "client.persistence.writeQuorum": "1",
            "client.persistence.ackQuorum": "1",
        },
    )


def workload_yaml(omb: Path, name: str, duration: int, warmup: int, rate_cap: int) -> tuple[str, dict[str, str]]:
    """The published workload with the scaled keys; returns the text and what was changed."""
    text = (omb / "workloads" / f"{name}.yaml").read_text()
    changes = {"testDurationMinutes": str(duration), "warmupDurationMinutes": str(warmup)}
    rate = int(get_key(text, "producerRate") or 0)
    if not name.startswith("max-rate") and rate > rate_cap:
        changes["producerRate"] = str(rate_cap)
    return set_keys(text, changes), changes


# --------------------------------------------------------------------------------------------------
# Runs


def start_broker(kind: str) -> Any:
    sys.path.insert(0, str(HERE))
    from vs_pulsar import JavaBroker, RsBroker  # imported here: needs the venv's pulsar_rs

    if kind == "pulsar-rs":
        return RsBroker(None)
    if kind == "pulsar-sync":
        return JavaBroker({"journalSyncData": True})
    if kind == "pulsar":
        return JavaBroker({})
    raise SystemExit(f"unknown broker {kind}")


def summarize(res: dict[str, Any]) -> dict[str, float]:
    def mean(k: str) -> float:
        v = res.get(k) or []
        return float(statistics.fmean(v)) if v else 0.0

    return {
        "publish_msg_s": mean("publishRate"),
        "consume_msg_s": mean("consumeRate"),
        "publish_errors": float(sum(res.get("publishErrorRate") or [])) * 10,  # per-second rate per 10 s
        "publish_p50_ms": float(res.get("aggregatedPublishLatency50pct", 0.0)),
        "publish_p99_ms": float(res.get("aggregatedPublishLatency99pct", 0.0)),
        "e2e_p50_ms": float(res.get("aggregatedEndToEndLatency50pct", 0.0)),
        "e2e_p99_ms": float(res.get("aggregatedEndToEndLatency99pct", 0.0)),
        "publish_delay_p99_us": float(res.get("aggregatedPublishDelayLatency99pct", 0.0)),
        "backlog_end": float((res.get("backlog") or [0])[-1]),
    }


def run_omb(
    omb: Path, driver: Path, workload: Path, result: Path, heap: str, timeout_s: float, logfile: Path
) -> dict[str, Any]:
    """``bin/benchmark`` in the copy; returns OMB's JSON."""
    cmd = ["bin/benchmark", "--drivers", str(driver), "--output", str(result), str(workload)]
    log(f"omb: (cd {omb} && HEAP_OPTS='{heap}' {' '.join(cmd)})")
    with contextlib.suppress(FileNotFoundError):
        (omb / "workers.yaml").unlink()  # its presence would switch OMB to remote workers
    with logfile.open("w") as out:
        proc = subprocess.Popen(
            cmd,
            cwd=omb,
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "HEAP_OPTS": heap},
            start_new_session=True,
        )
        try:
            rc = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()
            raise OmbError(f"OMB ran over {timeout_s:.0f} s (log: {logfile})") from None
    if rc != 0 or not result.exists():
        tail = "\n".join(logfile.read_text(errors="replace").splitlines()[-30:])
        raise OmbError(f"OMB exited {rc} without a result (log: {logfile}):\n{tail}")
    data: dict[str, Any] = json.loads(result.read_text())
    return data


@contextlib.contextmanager
def broker(kind: str) -> Iterator[Any]:
    b = start_broker(kind)
    try:
        yield b
    finally:
        b.close()


def one_broker(a: argparse.Namespace, omb: Path, kind: str, rnd: int, work: Path) -> list[dict[str, Any]]:
    rows = []
    with broker(kind) as b:
        log(f"omb: round {rnd} {kind}: {b.service_url} {b.admin_url} ({' '.join(b.cmd)})")
        drv = work / f"driver-{kind}.yaml"
        drv.write_text(driver_yaml(omb, kind, b.service_url, b.admin_url, a.io_threads))
        for w in a.workloads:
            text, changes = workload_yaml(omb, w, a.duration, a.warmup, a.rate_cap)
            wf = work / f"{w}.yaml"
            wf.write_text(text)
            res_path = work / f"{w}-{kind}-r{rnd}.json"
            timeout = 60 * (a.duration + a.warmup) + 300
            t0 = time.time()
            res = run_omb(omb, drv, wf, res_path, a.heap, timeout, work / f"{w}-{kind}-r{rnd}.log")
            s = summarize(res)
            log(f"omb:   {w} {kind}: " + ", ".join(f"{k}={v:.4g}" for k, v in s.items()))
            rows.append(
                {
                    "round": rnd,
                    "broker": kind,
                    "workload": w,
                    "changed": changes,
                    "started": datetime.fromtimestamp(t0, UTC).isoformat(timespec="seconds"),
                    "loadavg": list(os.getloadavg()),
                    "omb_json": str(res_path),
                    **s,
                }
            )
    return rows


# --------------------------------------------------------------------------------------------------
# Table

METRICS = (
    ("publish_msg_s", "publish msg/s"),
    ("consume_msg_s", "consume msg/s"),
    ("publish_p50_ms", "publish p50 ms"),
    ("publish_p99_ms", "publish p99 ms"),
    ("e2e_p50_ms", "end-to-end p50 ms"),
    ("e2e_p99_ms", "end-to-end p99 ms"),
    ("publish_delay_p99_us", "publish delay p99 us"),
)


def fmt(v: float | None) -> str:
    if v is None:
        return "-"
    if abs(v) >= 1000:
        return f"{v:,.0f}".replace(",", " ")
    return f"{v:.3g}"


def medians(rows: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, float]]:
    med: dict[tuple[str, str], dict[str, float]] = {}
    keys = {(r["workload"], r["broker"]) for r in rows}
    for wk in keys:
        runs = [r for r in rows if (r["workload"], r["broker"]) == wk]
        med[wk] = {k: float(statistics.median(r[k] for r in runs)) for k, _ in METRICS}
    return med


def table(med: dict[tuple[str, str], dict[str, float]], workloads: list[str], brokers: list[str]) -> str:
    others = [b for b in brokers if b != "pulsar-rs"]
    head = ["workload", "metric", *brokers] + ([f"pulsar-rs / {o}" for o in others] if "pulsar-rs" in brokers else [])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for w in workloads:
        for k, label in METRICS:
            vals = [med.get((w, b), {}).get(k) for b in brokers]
            cells = [w, label, *(fmt(v) for v in vals)]
            if "pulsar-rs" in brokers:
                rs = med.get((w, "pulsar-rs"), {}).get(k)
                for o in others:
                    ov = med.get((w, o), {}).get(k)
                    cells.append(f"{rs / ov:.2f}x" if rs is not None and ov else "-")
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--omb-src", help="a checkout of github.com/openmessaging/benchmark (default: the cache's CURRENT)")
    ap.add_argument("--ref", default="HEAD", help="the commit of a git --omb-src to take")
    ap.add_argument("--client-version", help="-Dpulsar.version for the driver (default: the pom's)")
    ap.add_argument("--build-only", action="store_true")
    ap.add_argument("--workloads", default=",".join(DEFAULT_WORKLOADS), help="OMB workload names, comma-separated")
    ap.add_argument("--brokers", default="pulsar-rs,pulsar-sync", help=f"comma-separated, of {', '.join(BROKERS)}")
    ap.add_argument("--runs", type=int, default=1, help="rounds (the broker order rotates)")
    ap.add_argument("--duration", type=int, default=1, help="testDurationMinutes")
    ap.add_argument("--warmup", type=int, default=1, help="warmupDurationMinutes")
    ap.add_argument("--rate-cap", type=int, default=10_000, help="producerRate ceiling (not max-rate-*)")
    ap.add_argument("--io-threads", type=int, default=1, help="client.ioThreads and connectionsPerBroker")
    ap.add_argument("--heap", default="-Xms512m -Xmx1g", help="HEAP_OPTS of OMB's JVM")
    ap.add_argument("--out", default=str(ROOT / "benches" / "out" / "omb.json"))
    a = ap.parse_args()
    a.workloads = [w for w in a.workloads.split(",") if w]
    brokers = [b for b in a.brokers.split(",") if b]
    try:
        omb = prepare_source(a.omb_src, a.ref)
        build_s = build(omb, a.client_version)
    except (OmbError, subprocess.CalledProcessError) as e:
        raise SystemExit(f"omb.py: {e}") from None
    if a.build_only:
        print(omb)
        return
    out = Path(a.out).resolve()  # OMB runs in its copy: every path given to it is absolute
    work = out.with_suffix("")
    work.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    t0 = datetime.now(UTC)

    def save() -> str:
        med = medians(rows)
        md = table(med, a.workloads, brokers)
        report = {
            "command": " ".join([Path(sys.executable).name, *sys.argv]),
            "omb": (omb / ".prepared").read_text().strip(),
            "omb_build": " ".join(build_command(a.client_version)),
            "omb_build_s": build_s,
            "started": t0.isoformat(timespec="seconds"),
            "finished": datetime.now(UTC).isoformat(timespec="seconds"),
            "args": dict(vars(a)),
            "runs": rows,
            "medians": {f"{w}|{b}": v for (w, b), v in sorted(med.items())},
            "table": md,
        }
        out.write_text(json.dumps(report, indent=1) + "\n")  # after every broker: a partial run is kept
        return md

    for rnd in range(a.runs):
        order = brokers[rnd % len(brokers) :] + brokers[: rnd % len(brokers)]
        for kind in order:
            rows += one_broker(a, omb, kind, rnd, work)
            save()
    print(save())
    log(f"omb: {out}; OMB's own JSON in {work}")


if __name__ == "__main__":
    main()
