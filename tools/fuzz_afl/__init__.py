"""Runs the AFL++ fuzz targets of ``fuzz/`` (the binary protocol's decoders) for a bounded time.

``python3 -m tools.fuzz_afl --seconds 60`` installs ``cargo afl`` when missing (the version the
``afl`` crate in ``fuzz/Cargo.toml`` is pinned to; ``cargo install`` caches it in ``~/.cargo``),
builds the targets with AFL++'s instrumentation, writes the seed corpus and fuzzes each target in
turn. Crashes and hangs are copied to ``fuzz/findings/<target>/`` and listed; the exit status is
1 when there are any. The corpus AFL grows is kept in ``fuzz/out/<target>/`` (not committed).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FUZZ = ROOT / "fuzz"
TARGETS = ("frames", "stored_entry", "decompress")
#: Must match the ``afl`` crate pinned in fuzz/Cargo.toml (cargo-afl builds its AFL++ runtime).
CARGO_AFL_VERSION = "0.18.2"
#: Per-input timeout in milliseconds; an input slower than this is a hang.
HANG_MS = 1000

AFL_ENV = {
    # Shared CI machines: no CPU frequency tuning, no core pinning, no core_pattern change.
    "AFL_SKIP_CPUFREQ": "1",
    "AFL_NO_AFFINITY": "1",
    "AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES": "1",
    "AFL_NO_UI": "1",
}


@dataclass
class Result:
    """What one target's run found."""

    target: str
    execs: int = 0
    paths: int = 0
    crashes: list[Path] = field(default_factory=list)
    hangs: list[Path] = field(default_factory=list)


def _cargo(*args: str, env: dict[str, str] | None = None) -> None:
    subprocess.run(["cargo", *args], cwd=FUZZ, check=True, env=env)


def ensure_cargo_afl() -> None:
    """Installs cargo-afl (pinned) unless this version is already there."""
    got = subprocess.run(["cargo", "afl", "--version"], capture_output=True, text=True, check=False)
    if got.returncode != 0 or CARGO_AFL_VERSION not in got.stdout:
        _cargo("install", "cargo-afl", "--locked", "--version", CARGO_AFL_VERSION)


def build() -> None:
    """Builds the instrumented targets and writes the seed corpus to fuzz/out/seeds."""
    # The fuzz crate's own target directory, named: a CARGO_TARGET_DIR in the environment would
    # put the instrumented binaries elsewhere (and mix their flags with the workspace's builds).
    _cargo("afl", "build", "--release", "--locked", "--target-dir", str(FUZZ / "target"))
    seeds = FUZZ / "out" / "seeds"
    shutil.rmtree(seeds, ignore_errors=True)
    subprocess.run([str(FUZZ / "target/release/seeds"), str(seeds)], check=True)


def _stat(stats: Path, key: str) -> int:
    for line in stats.read_text().splitlines() if stats.exists() else []:
        name, _, value = line.partition(":")
        if name.strip() == key:
            return int(value.strip())
    return 0


def _findings(directory: Path) -> list[Path]:
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.iterdir() if p.name.startswith("id:"))


def fuzz(target: str, seconds: int) -> Result:
    """Fuzzes ``target`` for ``seconds``, starting from the seeds and the corpus of past runs."""
    out = FUZZ / "out" / target
    corpus = FUZZ / "out" / "corpus" / target
    # The queue of the previous run (which holds its own starting corpus) joins the seeds: runs
    # add up instead of starting over, and the corpus does not pile up copies.
    shutil.rmtree(corpus, ignore_errors=True)
    corpus.mkdir(parents=True)
    # Named by content: AFL names an input after its origin, which would nest run after run.
    for p in _findings(out / "default" / "queue"):
        data = p.read_bytes()
        (corpus / hashlib.sha256(data).hexdigest()[:20]).write_bytes(data)
    for p in (FUZZ / "out" / "seeds" / target).iterdir():
        shutil.copy(p, corpus / p.name)
    shutil.rmtree(out, ignore_errors=True)
    cmd = ["cargo", "afl", "fuzz", "-V", str(seconds), "-t", str(HANG_MS)]
    cmd += ["-i", str(corpus), "-o", str(out), str(FUZZ / "target/release" / target)]
    log = FUZZ / "out" / f"{target}.log"
    with log.open("w") as f:
        subprocess.run(
            cmd,
            cwd=FUZZ,
            env={**os.environ, **AFL_ENV},
            stdout=f,
            stderr=subprocess.STDOUT,
            check=True,
            timeout=seconds + 300,
        )
    stats = out / "default" / "fuzzer_stats"
    result = Result(target, _stat(stats, "execs_done"), _stat(stats, "corpus_count"))
    findings = FUZZ / "findings" / target
    for kind, found in (
        ("crash", _findings(out / "default" / "crashes")),
        ("hang", _findings(out / "default" / "hangs")),
    ):
        for p in found:
            findings.mkdir(parents=True, exist_ok=True)
            kept = findings / f"{kind}-{p.name.split(',')[0].replace(':', '')}"
            shutil.copy(p, kept)
            (result.crashes if kind == "crash" else result.hangs).append(kept)
    return result


@contextlib.contextmanager
def _exclusive():
    """One run at a time on this checkout: runs share fuzz/out (two would clobber each other)."""
    (FUZZ / "out").mkdir(exist_ok=True)
    with (FUZZ / "out" / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def run(seconds: int, targets: tuple[str, ...] = TARGETS) -> list[Result]:
    """Installs, builds and fuzzes each target for ``seconds`` (waiting for another run to end)."""
    with _exclusive():
        ensure_cargo_afl()
        build()
        return [fuzz(t, seconds) for t in targets]
