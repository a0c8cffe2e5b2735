"""Apache Pulsar 5.0's overload-fairness test, scaled to this machine: many publishers of
unbatched, keyed 128 B messages into one topic, Key_Shared consumers, the broker pushed past what
it can take in. Pulsar 5.0's release notes give its figures (500 publishers, 20 consumers; on
4.0.13 the consumers got 131 msg/s while publishing ran and the end-to-end p99 was 202 s; 5.0.0
kept consumption at the publish rate). The question: does the broker keep dispatching to the
consumers while the publishers saturate it, or does publishing starve dispatch?

Each broker in turn (fresh, on an empty data directory), driven by Pulsar's own ``pulsar-perf``
(the Java client, from the Apache Pulsar 4.0.8 distribution of ``tools/pulsar_reference``):

* ``pulsar-perf consume -st Key_Shared -n CONSUMERS`` subscribes first;
* ``pulsar-perf produce -n PRODUCERS -db -s 128 -mk random`` publishes unthrottled for
  ``--duration`` seconds (random keys: every message its own key hash);
* every second the bench reads the topic's stats (``msgInCounter`` and the subscription's
  ``msgOutCounter``, both brokers keep them live) and keeps the timeline;
* when the producer is done, the consumers drain for up to ``--drain`` seconds, then stop; their
  end-to-end latency (receive time - publish time, pulsar-perf's own histogram) is read from
  their aggregated stats.

Reported per broker: messages published and dispatched per second while publishing ran, their
ratio over the whole window and the lowest ratio over any 10-second window after the first 10 s
(the stats are read once a second, so shorter windows only show the sampling's jitter), the
largest backlog seen while publishing and when it stopped, and the consumers' end-to-end
p50/p99/max. pulsar-perf stamps a message's publish time when the producer takes it, before it
waits in the producer's queue: unthrottled, much of the end-to-end time is spent there, in the
client, whatever the broker. Client and broker share the machine's cores, so the absolute rates
are this machine's; the ratio is the broker's fairness.

    python benches/overload_fairness.py --rounds 3 --duration 60 --producers 100 --consumers 4 \\
        --out benches/out/overload_fairness.json        # about 6 minutes a round

With ``--rounds N`` the brokers take turns (the order rotates each round) and the table shows the
medians; every round's figures and timeline are in the JSON.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from peer_runs import record_header  # noqa: E402
from vs_pulsar import PERF_LATENCY_FIELD, UNTHROTTLED, ensure_distribution, log, start_broker  # noqa: E402

TOPIC = "persistent://public/default/overload"
SUBSCRIPTION = "fair"
#: Windows (seconds) over which the dispatch/publish ratio's lowest value is taken.
WINDOW_S = 10
LAT = {"med": "p50", "99pct": "p99", "99.9pct": "p999", "Max": "max"}


class StatsSampler(threading.Thread):
    """Reads the topic's stats every second: (epoch s, msgInCounter, the subscription's
    msgOutCounter, its msgBacklog)."""

    def __init__(self, admin_url: str) -> None:
        super().__init__(daemon=True)
        self.url = f"{admin_url}/admin/v2/persistent/{TOPIC.removeprefix('persistent://')}/stats"
        self.samples: list[tuple[float, int, int, int]] = []
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            t = time.time()
            with contextlib.suppress(OSError, ValueError, KeyError):
                with urllib.request.urlopen(self.url, timeout=5) as r:
                    s = json.loads(r.read())
                sub = s.get("subscriptions", {}).get(SUBSCRIPTION, {})
                self.samples.append(
                    (t, int(s.get("msgInCounter", 0)), int(sub.get("msgOutCounter", 0)), int(sub.get("msgBacklog", 0)))
                )
            self.stop.wait(max(0.0, 1.0 - (time.time() - t)))


def perf(home: Path, sub: str, args: list[str]) -> list[str]:
    return [str(home / "bin" / "pulsar-perf"), sub, *args, TOPIC]


def wait_for_line(path: Path, text: str, proc: subprocess.Popen[bytes], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while text not in path.read_text(errors="replace"):
        if proc.poll() is not None or time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def stop(proc: subprocess.Popen[bytes], sig: int = signal.SIGINT, timeout: float = 30) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def window_ratios(samples: list[tuple[float, int, int, int]], t0: float, t1: float) -> list[float]:
    """Dispatched / published over each WINDOW_S window in [t0 + WINDOW_S, t1]."""
    inside = [s for s in samples if t0 <= s[0] <= t1]
    out = []
    for i, a in enumerate(inside):
        if a[0] < t0 + WINDOW_S:
            continue
        b = next((s for s in inside[i + 1 :] if s[0] >= a[0] + WINDOW_S), None)
        if b is None:
            break
        published = b[1] - a[1]
        if published > 0:
            out.append((b[2] - a[2]) / published)
    return out


def run_broker(a: argparse.Namespace, home: Path, kind: str, work: Path) -> dict:
    broker = start_broker(kind, a.rs_server_bin)
    try:
        env = {**os.environ, "PULSAR_PERFTEST_CONF": str(work / "client.conf")}
        (work / "client.conf").write_text(
            f"webServiceUrl={broker.admin_url}/\nbrokerServiceUrl={broker.service_url}/\n"
        )
        cons_out, prod_out = work / f"{kind}-consume.out", work / f"{kind}-produce.out"
        ccmd = perf(home, "consume", ["-u", broker.service_url, "-ss", SUBSCRIPTION, "-st", "Key_Shared"])
        ccmd[-1:-1] = ["-n", str(a.consumers), "-q", "1000", "-i", "1", "-time", str(a.duration + a.drain + 120)]
        with cons_out.open("wb") as f:
            cons = subprocess.Popen(ccmd, stdout=f, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        sampler = StatsSampler(broker.admin_url)
        try:
            if not wait_for_line(cons_out, "Start receiving from", cons, 120):
                return {"error": "consumers did not start: " + cons_out.read_text(errors="replace")[-1500:]}
            time.sleep(2)  # every consumer of the JVM subscribed (each logs as it starts)
            pargs = ["-u", broker.service_url, "-n", str(a.producers), "-db", "-s", "128", "-mk", "random"]
            pargs += ["-r", str(UNTHROTTLED), "-time", str(a.duration), "-i", "1"]
            sampler.start()
            with prod_out.open("wb") as f:
                prod = subprocess.Popen(
                    perf(home, "produce", pargs), stdout=f, stderr=subprocess.STDOUT, env=env, start_new_session=True
                )
            if not wait_for_line(prod_out, "Created", prod, 120):
                stop(prod, signal.SIGKILL)
                return {"error": "producers did not start: " + prod_out.read_text(errors="replace")[-1500:]}
            t0 = time.time()
            wait_for_line(prod_out, "DONE (reached the maximum duration", prod, a.duration + 120)
            t1 = time.time()
            stop(prod, signal.SIGTERM, 60)
            # The consumers drain what is left, then stop (their shutdown hook prints the totals).
            deadline = time.monotonic() + a.drain
            while time.monotonic() < deadline:
                time.sleep(1)
                if sampler.samples and sampler.samples[-1][3] == 0 and sampler.samples[-1][0] > t1 + 1:
                    break
            t2 = time.time()
        finally:
            sampler.stop.set()
            stop(cons)
        samples = sampler.samples
        at = lambda t: min(samples, key=lambda s: abs(s[0] - t))  # noqa: E731
        s0, s1, s2 = at(t0), at(t1), at(t2)
        span = s1[0] - s0[0]
        published, dispatched = s1[1] - s0[1], s1[2] - s0[2]
        ratios = window_ratios(samples, t0, t1)
        c = cons_out.read_text(errors="replace")
        lat = re.search(r"Aggregated latency stats --- (.*)", c)
        r: dict = {
            "publish_span_s": round(span, 1),
            "published": published,
            "dispatched_while_publishing": dispatched,
            "pub_msg_s": published / span if span > 0 else None,
            "disp_msg_s": dispatched / span if span > 0 else None,
            "ratio": dispatched / published if published else None,
            "min_window_ratio": min(ratios) if ratios else None,
            "windows": len(ratios),
            "backlog_at_publish_end": s1[3],
            "max_backlog_while_publishing": max((s[3] for s in samples if t0 <= s[0] <= t1), default=None),
            "backlog_at_end": s2[3],
            "drain_s": round(s2[0] - s1[0], 1),
            "timeline": [(round(t - t0, 1), i, o, b) for t, i, o, b in samples],
        }
        for k, v in PERF_LATENCY_FIELD.findall(lat.group(1) if lat else ""):
            if k in LAT:
                r[f"e2e_{LAT[k]}_ms"] = float(v.replace(",", ""))
        return r
    finally:
        broker.close()


def fmt(v: object, digits: int = 0) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.{digits}f}"
    return f"{v:,}" if isinstance(v, int) else str(v)


def table(results: dict[str, dict]) -> str:
    rows = [
        ("published msg/s (while publishing)", "pub_msg_s", 0),
        ("dispatched msg/s (while publishing)", "disp_msg_s", 0),
        ("dispatched / published", "ratio", 3),
        (f"lowest over a {WINDOW_S} s window", "min_window_ratio", 3),
        ("largest backlog while publishing", "max_backlog_while_publishing", 0),
        ("backlog when publishing stopped", "backlog_at_publish_end", 0),
        ("end-to-end p50 ms", "e2e_p50_ms", 0),
        ("end-to-end p99 ms", "e2e_p99_ms", 0),
        ("end-to-end max ms", "e2e_max_ms", 0),
    ]
    kinds = list(results)
    out = ["| | " + " | ".join(kinds) + " |", "|---" * (len(kinds) + 1) + "|"]
    for label, key, d in rows:
        out.append(f"| {label} | " + " | ".join(fmt(results[k].get(key), d) for k in kinds) + " |")
    return "\n".join(out)


def medians(runs: list[dict]) -> dict:
    """The median of each numeric figure over the rounds that have it."""
    keys = {k for r in runs for k, v in r.items() if isinstance(v, int | float) and not isinstance(v, bool)}
    return {k: statistics.median(r[k] for r in runs if r.get(k) is not None) for k in sorted(keys)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=1, help="rounds; the table shows the medians")
    ap.add_argument("--duration", type=int, default=60, help="seconds of publishing")
    ap.add_argument("--drain", type=int, default=120, help="seconds the consumers may drain afterwards")
    ap.add_argument("--producers", type=int, default=100, help="publishers (one pulsar-perf JVM)")
    ap.add_argument("--consumers", type=int, default=4, help="Key_Shared consumers (one pulsar-perf JVM)")
    ap.add_argument("--brokers", default="pulsar-rs,pulsar", help="of vs_pulsar.py's: pulsar-rs, pulsar, pulsar-sync")
    ap.add_argument("--rs-server-bin", help="run pulsar-rs-server (e.g. target/release) instead of the venv's CLI")
    ap.add_argument("--out", default=str(HERE / "out" / "overload_fairness.json"))
    ap.add_argument("--logs", help="a directory to keep pulsar-perf's output in (else a temporary one)")
    a = ap.parse_args()
    home = ensure_distribution()
    started = datetime.now(UTC).isoformat(timespec="seconds")
    brokers = a.brokers.split(",")
    rounds: dict[str, list[dict]] = {k: [] for k in brokers}
    with tempfile.TemporaryDirectory(prefix="overload-", dir=os.environ.get("BENCH_TMP")) as tmp:
        work = Path(a.logs or tmp)
        work.mkdir(parents=True, exist_ok=True)
        for i in range(a.rounds):
            for kind in brokers[i % len(brokers) :] + brokers[: i % len(brokers)]:
                log(f"round {i + 1}, {kind}: {a.producers} producers, {a.consumers} Key_Shared consumers")
                r = run_broker(a, home, kind, work)
                rounds[kind].append(r)
                log(kind, {k: v for k, v in r.items() if k != "timeline"})
    results = {k: medians([r for r in runs if "error" not in r]) for k, runs in rounds.items()}
    out = {
        **record_header(started, a),
        "medians": results,
        "rounds": rounds,
    }
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(out, indent=1))
    print(table(results))


if __name__ == "__main__":
    main()
