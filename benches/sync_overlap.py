"""How much a durable round gains when the next round's write overlaps this round's sync
(issue 14: a syncer thread beside the journal flusher, measured and not kept).

Over zeros written earlier, with ``O_DIRECT`` (as the journal's durable rounds):

* ``serial``: one thread, each round a ``pwrite`` of ROUND bytes then ``fdatasync``;
* ``pipelined``: a writer thread writes round k+1 while a syncer thread syncs round k (the
  writer waits once a written round is not yet taken, as the tried flusher did); a round counts
  when its sync returns.

Rounds per second, medians of ``--runs`` runs of ``--seconds`` each, alternating.

    python benches/sync_overlap.py --dir /tmp --round 65536
"""

from __future__ import annotations

import argparse
import mmap
import os
import statistics
import threading
import time
from pathlib import Path

SPAN = 256 << 20


def prepare(path: Path) -> None:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC)
    zeros = mmap.mmap(-1, 4 << 20)
    off = 0
    while off < SPAN:
        os.pwrite(fd, zeros, off)
        off += len(zeros)
    os.fsync(fd)
    os.close(fd)


def serial(fd: int, buf: mmap.mmap, seconds: float) -> float:
    end = time.monotonic() + seconds
    n = off = 0
    while time.monotonic() < end:
        os.pwrite(fd, buf, off)
        os.fdatasync(fd)
        off = (off + len(buf)) % SPAN
        n += 1
    return n / seconds


def pipelined(fd: int, buf: mmap.mmap, seconds: float) -> float:
    cv = threading.Condition()
    state = {"written": 0, "taken": 0, "synced": 0, "stop": False}

    def syncer() -> None:
        while True:
            with cv:
                while state["written"] == state["taken"] and not state["stop"]:
                    cv.wait()
                if state["written"] == state["taken"]:
                    return
                state["taken"] = state["written"]
                cv.notify_all()
            os.fdatasync(fd)
            with cv:
                state["synced"] = state["taken"]

    t = threading.Thread(target=syncer)
    t.start()
    end = time.monotonic() + seconds
    off = k = 0
    while time.monotonic() < end:
        with cv:
            while state["written"] != state["taken"]:
                cv.wait()
        os.pwrite(fd, buf, off)
        off = (off + len(buf)) % SPAN
        k += 1
        with cv:
            state["written"] = k
            cv.notify_all()
    with cv:
        state["stop"] = True
        cv.notify_all()
    t.join()
    return state["synced"] / seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", default="/tmp")
    ap.add_argument("--round", type=int, default=65536, help="bytes per round (whole 4 KiB blocks)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=2.0)
    a = ap.parse_args()
    path = Path(a.dir) / "sync_overlap.bin"
    prepare(path)
    fd = os.open(path, os.O_RDWR | os.O_DIRECT)
    buf = mmap.mmap(-1, a.round)  # page-aligned memory
    buf.write(b"x" * a.round)
    results: dict[str, list[float]] = {"serial": [], "pipelined": []}
    try:
        for _ in range(a.runs):
            results["serial"].append(serial(fd, buf, a.seconds))
            results["pipelined"].append(pipelined(fd, buf, a.seconds))
    finally:
        os.close(fd)
        path.unlink()
    s, p = (statistics.median(results[k]) for k in ("serial", "pipelined"))
    print(f"round {a.round} B: serial {[round(x) for x in results['serial']]} rounds/s")
    print(f"round {a.round} B: pipelined {[round(x) for x in results['pipelined']]} rounds/s")
    print(f"median serial {s:.0f}, pipelined {p:.0f}, ratio {p / s:.2f}")


if __name__ == "__main__":
    main()
