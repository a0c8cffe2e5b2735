"""The pytest-xdist groups of tests/worker_groups.py: what each test id's group is, and that a real
``pytest -n 2 --dist loadgroup`` run keeps each group on one worker while still using both (the
run tox.ini makes of every room). Without the scheduler, pytest 9.2 with pytest-xdist 3.8 spreads
a file's tests over both workers (pytest-dev/pytest-xdist#1386), which the run below tells."""

from __future__ import annotations

import collections
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from worker_groups import LONGEST_FIRST, ONE_GROUP_PER_TEST, ONE_WORKER_ROOMS, group_of, room_and_file

TESTS = Path(__file__).resolve().parents[1]


def test_group_of_a_test_id() -> None:
    assert room_and_file("tests/interop/test_x.py::test_y[a]") == ("interop", "interop/test_x.py")
    assert group_of("tests/interop/test_x.py::test_y[a]") == "interop/test_x.py"
    assert group_of("tests/interop/test_x.py::Test::test_y") == "interop/test_x.py"
    for room in ONE_WORKER_ROOMS:
        assert group_of(f"tests/{room}/test_a.py::t") == group_of(f"tests/{room}/test_b.py::u") == f"room:{room}"
    for file in ONE_GROUP_PER_TEST:
        assert group_of(f"tests/{file}::t[1]") != group_of(f"tests/{file}::t[2]")
    assert room_and_file("elsewhere/test_z.py::t") == (None, "elsewhere/test_z.py")


def test_the_named_groups_exist() -> None:
    """A renamed or removed file must not leave a stale name behind."""
    for name in LONGEST_FIRST:
        room = name.removeprefix("room:")
        assert room in ONE_WORKER_ROOMS if name.startswith("room:") else (TESTS / name).is_file(), name
    for file in ONE_GROUP_PER_TEST:
        assert (TESTS / file).is_file(), file


@pytest.mark.slow  # 4.5 s alone, 7 s beside the quick room: two pytest-xdist workers start
def test_each_file_and_each_one_worker_room_run_whole_on_one_worker(tmp_path: Path) -> None:
    """Two files of a ``ONE_WORKER_ROOMS`` room and three files of another room, three tests
    each: every file's tests, and the whole one-worker room, on one worker; both workers used."""
    shared = sorted(ONE_WORKER_ROOMS)[0]
    log = tmp_path / "ran.jsonl"
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    tree = tmp_path / "tests"
    files = [f"{shared}/test_a.py", f"{shared}/test_b.py", "unit/test_c.py", "unit/test_d.py", "unit/test_e.py"]
    body = textwrap.dedent(
        f"""
        import json, os, time
        import pytest

        @pytest.mark.parametrize("i", range(3))
        def test_t(i, request):
            time.sleep(0.02)
            with open({str(log)!r}, "a") as f:
                f.write(json.dumps([request.node.path.name, os.environ["PYTEST_XDIST_WORKER"]]) + "\\n")
        """
    )
    for f in files:
        (tree / f).parent.mkdir(parents=True, exist_ok=True)
        (tree / f).write_text(body)
    (tree / "conftest.py").write_text(
        f"import sys\nsys.path.insert(0, {str(TESTS)!r})\n"
        "from worker_groups import pytest_xdist_make_scheduler as pytest_xdist_make_scheduler\n"
    )
    pytest_args = ["-q", "-p", "no:cacheprovider", "-p", "no:pulsar_rs", "-n", "2", "--dist", "loadgroup"]
    run = subprocess.run(
        [sys.executable, "-m", "pytest", *pytest_args, str(tree)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    workers = collections.defaultdict(set)
    for line in log.read_text().splitlines():
        name, worker = json.loads(line)
        workers[name].add(worker)
    assert sorted(workers) == sorted(Path(f).name for f in files)
    for name, ran_on in workers.items():
        assert len(ran_on) == 1, f"{name} ran on {sorted(ran_on)}"
    assert workers["test_a.py"] == workers["test_b.py"], f"the {shared} room was split"
    assert len(set().union(*workers.values())) == 2, "one worker ran everything"
