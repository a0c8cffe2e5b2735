"""``python3 -m tools.fuzz_afl [--seconds N] [target ...]``: see the package's docstring."""

from __future__ import annotations

import argparse
import sys

from tools.fuzz_afl import TARGETS, run


def main() -> int:
    parser = argparse.ArgumentParser(prog="python3 -m tools.fuzz_afl")
    parser.add_argument("--seconds", type=int, default=60, help="per target")
    parser.add_argument("targets", nargs="*", help=f"some of {', '.join(TARGETS)} (default all)")
    args = parser.parse_args()
    unknown = set(args.targets) - set(TARGETS)
    if unknown:
        parser.error(f"unknown targets {sorted(unknown)}; there are {', '.join(TARGETS)}")
    bad = 0
    for r in run(args.seconds, tuple(args.targets) or TARGETS):
        print(f"{r.target}: {r.execs} execs, {r.paths} inputs in the corpus")
        for p in r.crashes + r.hangs:
            print(f"  found: {p}")
        bad += len(r.crashes) + len(r.hangs)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
