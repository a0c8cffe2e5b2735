"""Cold sequential reads of a large file: through the page cache against ``O_DIRECT`` (issue 14).

A consumer catching up on a backlog the entry cache does not hold reads the journal's segment
files. Before reading them past the page cache into our own buffers, this measures whether the
disk serves such reads faster: it writes a file of ``--mb`` MiB, makes it durable and drops it
from the page cache, then reads it sequentially in each mode (dropping it again before each) and
prints MB/s and the CPU seconds per GB this process spent. ``O_DIRECT`` reads are run at one
to four reads in flight (threads), since a direct read gets no read-ahead from the kernel.

    python benches/cold_read_modes.py --dir /tmp --mb 1024 --rounds 2
"""

from __future__ import annotations

import argparse
import mmap
import os
import resource
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def drop_cache(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def buffered(path: str, chunk: int, _depth: int) -> int:
    fd = os.open(path, os.O_RDONLY)
    total = 0
    try:
        while b := os.pread(fd, chunk, total):
            total += len(b)
    finally:
        os.close(fd)
    return total


def direct(path: str, chunk: int, depth: int) -> int:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    try:
        size = os.fstat(fd).st_size
        offsets = list(range(0, size, chunk))
        # Anonymous mappings are page aligned, as O_DIRECT needs.
        bufs = [mmap.mmap(-1, chunk) for _ in range(depth)]
        total = 0
        with ThreadPoolExecutor(depth) as pool:
            for i in range(0, len(offsets), depth):
                reads = [pool.submit(os.preadv, fd, [bufs[j]], o) for j, o in enumerate(offsets[i : i + depth])]
                total += sum(r.result() for r in reads)
        return total
    finally:
        os.close(fd)


MODES = {
    "buffered 5 MB preads": (buffered, 5 << 20, 1),
    "O_DIRECT 4 MiB, 1 in flight": (direct, 4 << 20, 1),
    "O_DIRECT 4 MiB, 2 in flight": (direct, 4 << 20, 2),
    "O_DIRECT 1 MiB, 4 in flight": (direct, 1 << 20, 4),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", default=tempfile.gettempdir())
    ap.add_argument("--mb", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    fd, path = tempfile.mkstemp(dir=args.dir, suffix=".cold")
    try:
        block = os.urandom(1 << 20)
        for _ in range(args.mb):
            os.write(fd, block)
        os.fsync(fd)
        os.close(fd)
        results: dict[str, list[tuple[float, float]]] = {m: [] for m in MODES}
        for _ in range(args.rounds):
            for name, (fn, chunk, depth) in MODES.items():
                drop_cache(path)
                c0, t0 = cpu_s(), time.perf_counter()
                n = fn(path, chunk, depth)
                wall, cpu = time.perf_counter() - t0, cpu_s() - c0
                results[name].append((n / wall / 1e6, cpu / (n / 1e9)))
        for name, runs in results.items():
            mb = statistics.median(r[0] for r in runs)
            cpu = statistics.median(r[1] for r in runs)
            each = ", ".join(f"{r[0]:.0f}" for r in runs)
            print(f"{name:30} {mb:7.0f} MB/s (runs {each})  CPU {cpu:.3f} s/GB")
    finally:
        os.unlink(path)


if __name__ == "__main__":
    main()
