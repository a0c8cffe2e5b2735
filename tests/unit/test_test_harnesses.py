"""Every library and binary of the Rust workspace either has unit tests or is marked ``test =
false`` in its Cargo.toml, and none marked so has any: ``cargo test --workspace`` (CI) compiles and
links a test harness for each target it tests, a whole extra build of the server's binary for a
harness that runs nothing, while a test written in a target marked ``test = false`` would never
run. Read from the sources (``#[test]``, ``#[tokio::test]``), no build."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TEST_ATTR = re.compile(r"#\[(?:tokio::)?test\b")
FILE_MOD = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", re.M)


def members() -> list[Path]:
    ws = tomllib.loads((ROOT / "Cargo.toml").read_text())["workspace"]
    return [ROOT / m for m in ws["members"]]


def bin_files(path: Path) -> set[Path]:
    """A binary's root file and the file modules it declares (``mod x;`` beside it)."""
    files, todo = set(), [path]
    while todo:
        f = todo.pop()
        if f in files or not f.exists():
            continue
        files.add(f)
        for name in FILE_MOD.findall(f.read_text()):
            todo += [f.parent / f"{name}.rs", f.parent / name / "mod.rs"]
    return files


def targets(crate: Path) -> list[tuple[str, bool, set[Path]]]:
    """(target, whether cargo tests it, its source files) for the crate's library and binaries."""
    manifest = tomllib.loads((crate / "Cargo.toml").read_text())
    src = crate / "src"
    bins = [
        (b["name"], crate / b.get("path", f"src/bin/{b['name']}.rs"), b.get("test", True))
        for b in manifest.get("bin", [])
    ]
    declared = {p for _, p, _ in bins}
    if (src / "main.rs").exists() and src / "main.rs" not in declared:
        bins.append((manifest["package"]["name"], src / "main.rs", True))
    for f in sorted((src / "bin").glob("*.rs")) if (src / "bin").exists() else []:
        if f not in declared:
            bins.append((f.stem, f, True))
    out = [(f"{crate.name} bin {name}", test, bin_files(path)) for name, path, test in bins]
    if (src / "lib.rs").exists():
        in_bins = set().union(*(files for _, _, files in out)) if out else set()
        lib = {f for f in src.rglob("*.rs") if f not in in_bins and (src / "bin") not in f.parents}
        out.append((f"{crate.name} lib", manifest.get("lib", {}).get("test", True), lib))
    return out


def has_tests(files: set[Path]) -> bool:
    return any(TEST_ATTR.search(f.read_text()) for f in files)


def test_each_target_is_tested_exactly_when_it_has_unit_tests():
    seen = [(name, tested, has_tests(files)) for crate in members() for name, tested, files in targets(crate)]
    assert any(t for _, _, t in seen) and any(not t for _, _, t in seen), seen
    skipped = [name for name, tested, found in seen if not tested and found]
    assert not skipped, f"unit tests that `test = false` keeps from running: {skipped}"
    empty = [name for name, tested, found in seen if tested and not found]
    assert not empty, f"no unit tests, yet a test harness is built (add `test = false`): {empty}"
