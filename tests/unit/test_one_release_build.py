"""The wheel's build and ``cargo test --release --workspace`` share one release build (tox.ini,
docs/wheel.md) only while both resolve every crate of the extension's graph with the same
features: a feature that only the workspace's other crates or a dev-dependency turns on (tokio's
``test-util``, libc's ``extra_traits``) builds that crate and everything above it a second time,
about ten minutes of CI. This compares the two unit graphs cargo would build (no build: cargo's
``--unit-graph``, an unstable flag, read through ``RUSTC_BOOTSTRAP=1``; ``cargo tree`` cannot
tell, as it resolves every member's dev-dependencies even for ``-p``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def units(*args: str) -> dict[tuple[str, str, str], set[tuple[str, ...]]]:
    """(package, target, optimisation level) -> the feature sets of its library builds (the level
    tells a build script's or proc macro's dependency, built unoptimised, from the target's)."""
    out = subprocess.run(
        ["cargo", *args, "--release", "--locked", "-Z", "unstable-options", "--unit-graph"],
        cwd=ROOT,
        env={**os.environ, "RUSTC_BOOTSTRAP": "1"},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    found: dict[tuple[str, str, str], set[tuple[str, ...]]] = {}
    for unit in json.loads(out)["units"]:
        if unit["mode"] != "build" or "custom-build" in unit["target"]["kind"]:
            continue
        key = (unit["pkg_id"], unit["target"]["name"], unit["profile"]["opt_level"])
        found.setdefault(key, set()).add(tuple(unit["features"]))
    return found


@pytest.mark.skipif(shutil.which("cargo") is None, reason="no cargo")
def test_the_extensions_crates_resolve_as_in_the_workspaces_test_build() -> None:
    extension = units("build", "-p", "pulsar-rs-py", "--lib")
    workspace = units("test", "--workspace", "--no-run")
    differ = {
        key[0].rsplit("#", 1)[-1]: (sorted(sets), sorted(workspace[key]))
        for key, sets in extension.items()
        if key in workspace and sets != workspace[key]
    }
    assert not differ, (
        "crates the extension's build and `cargo test --workspace` resolve differently (extension, "
        f"workspace): {differ}; turn the feature on in the workspace's dependency (Cargo.toml) or drop it"
    )
    # Every crate of the extension's graph but the extension itself is in the workspace's build.
    missing = {key[0].rsplit("#", 1)[-1] for key in extension if key not in workspace}
    assert missing == {"pulsar-rs-py@0.1.0"}, missing
