"""CPU and wall time of one durable journal round, written through the page cache or with
``O_DIRECT``, over zeros written earlier (issue 14, ``journalDirectWrites``).

Each round is a ``pwrite`` of ROUND bytes (direct: widened to whole 4 KiB blocks, as the journal
does) followed by ``fdatasync``; medians of 3 runs of 400 rounds.

    python benches/direct_round_cost.py --dir /tmp
"""

from __future__ import annotations

import argparse
import mmap
import os
import resource
import statistics
import time
from pathlib import Path

BLOCK = 4096


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def run(path: Path, direct: bool, size: int, rounds: int = 400) -> tuple[float, float]:
    total = size * rounds + (1 << 20)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC)
    zeros = mmap.mmap(-1, 1 << 20)
    off = 0
    while off < total:
        os.pwrite(fd, zeros, off)
        off += 1 << 20
    os.fsync(fd)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    wfd = os.open(path, os.O_RDWR | (os.O_DIRECT if direct else 0))
    buf = mmap.mmap(-1, (size + 2 * BLOCK) // BLOCK * BLOCK)  # page-aligned memory
    buf.write(b"x" * len(buf))
    c0, t0, off = cpu(), time.perf_counter(), 0
    for _ in range(rounds):
        if direct:
            start = off // BLOCK * BLOCK
            end = (off + size + BLOCK - 1) // BLOCK * BLOCK
            os.pwrite(wfd, memoryview(buf)[: end - start], start)
        else:
            os.pwrite(wfd, memoryview(buf)[:size], off)
        os.fdatasync(wfd)
        off += size
    c, w = cpu() - c0, time.perf_counter() - t0
    os.close(wfd)
    os.close(fd)
    path.unlink()
    return 1e6 * c / rounds, 1e6 * w / rounds


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default="/tmp")
    a = ap.parse_args()
    path = Path(a.dir) / "direct_round_cost.dat"
    print("round KiB | buffered CPU / wall µs | direct CPU / wall µs")
    for kib in (6, 30, 150):
        out = []
        for direct in (False, True):
            runs = [run(path, direct, kib << 10) for _ in range(3)]
            out.append((statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)))
        print(f"{kib} | {out[0][0]:.1f} / {out[0][1]:.1f} | {out[1][0]:.1f} / {out[1][1]:.1f}")


if __name__ == "__main__":
    main()
