"""Message search over a large topic: bounded memory and a streamed answer (issue 58, item 4).

Starts ``pulsar-rs standalone`` (a process of its own, so its RSS is the broker's alone), publishes
``--messages`` messages (batched by ``--batch``, 100; 1: an entry each; keys ``k0``..``k999``, a
property ``i``) with the official Python client, then searches the whole topic three ways through
``GET .../searchMessages``:

* a key that 0.1 % of the messages carry (``limit`` at the maximum, 10 000): every entry scanned;
* a property no message has: every entry scanned, nothing found (the whole topic read once);
* the same with ``maxEntries`` 5 000 (a bounded call: ``complete`` false).

For each it reports the wall time, the time to the answer's first byte, the entries scanned per
second, and the broker's peak RSS during the search (``/proc/PID/status`` sampled every 20 ms)
against its RSS before: the growth is the search's memory (the entry cache included).

    python benches/search_messages.py --messages 1000000 --out benches/out/search_messages.json
    python benches/search_messages.py --messages 1000000 --batch 1 --out benches/out/search_messages_unbatched.json
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pulsar

from pulsar_rs.testing.process import PulsarRsBroker


def rss_mb(pid: int, field: str = "VmRSS:") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field):
            return int(line.split()[1]) / 1024
    return 0.0


def publish(url: str, http: str, topic: str, n: int, batch: int) -> float:
    client = pulsar.Client(url)
    producer = client.create_producer(
        topic,
        batching_enabled=batch > 1,
        batching_max_messages=max(batch, 2),
        batching_max_publish_delay_ms=5,
        block_if_queue_full=True,  # else a full queue drops messages (send_async's callback is None)
    )
    t0 = time.monotonic()
    for i in range(n):
        producer.send_async(b"x" * 100, None, partition_key=f"k{i % 1000}", properties={"i": str(i)})
    producer.flush()
    elapsed = time.monotonic() - t0
    stats = json.loads(
        urllib.request.urlopen(f"{http}/admin/v2/persistent/{topic.removeprefix('persistent://')}/stats").read()
    )
    assert stats["msgInCounter"] == n, stats["msgInCounter"]
    client.close()
    return elapsed


def search(http: str, topic: str, pid: int, **query: object) -> dict:
    path = topic.removeprefix("persistent://")
    url = f"{http}/admin/v2/persistent/{path}/searchMessages?{urllib.parse.urlencode(query)}"
    before = rss_mb(pid)
    peak = [before]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], rss_mb(pid))
            time.sleep(0.02)  # RSS sampling period

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    t0 = time.monotonic()
    first = None
    body = bytearray()
    with urllib.request.urlopen(url, timeout=3600) as r:
        while chunk := r.read1(1 << 16):
            if first is None:
                first = time.monotonic() - t0
            body += chunk
    wall = time.monotonic() - t0
    done.set()
    sampler.join()
    answer = json.loads(body)
    return {
        "query": query,
        "found": len(answer["messages"]),
        "entries_scanned": answer["entriesScanned"],
        "complete": answer["complete"],
        "wall_s": round(wall, 3),
        "first_byte_s": round(first or wall, 3),
        "entries_per_s": round(answer["entriesScanned"] / wall),
        "rss_before_mb": round(before, 1),
        "rss_peak_mb": round(peak[0], 1),
        "rss_growth_mb": round(peak[0] - before, 1),
        "answer_bytes": len(body),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=1_000_000)
    ap.add_argument("--batch", type=int, default=100, help="messages per batch (1: unbatched, an entry each)")
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    topic = "persistent://public/default/search-bench"
    with tempfile.TemporaryDirectory(prefix="search-bench-") as work, PulsarRsBroker(Path(work), "search", {}) as b:
        pid = b.proc.pid
        published_s = publish(b.url, b.http, topic, a.messages, a.batch)
        runs = [
            search(b.http, topic, pid, key="k7", limit=10_000, maxEntries=10_000_000),
            search(b.http, topic, pid, properties="i=none", maxEntries=10_000_000),
            search(b.http, topic, pid, properties="i=none", maxEntries=5_000),
        ]
        result = {
            "date": time.strftime("%Y-%m-%d"),
            "messages": a.messages,
            "batch": a.batch,
            "publish_s": round(published_s, 1),
            "broker_vm_hwm_mb": round(rss_mb(pid, "VmHWM:"), 1),
            "searches": runs,
        }
    text = json.dumps(result, indent=2)
    print(text)
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
