"""The admin API's OpenAPI description (``GET /admin/v2/openapi.json``) against the code, and
schemathesis over it.

* The document lists exactly the ``.route(...)`` calls of ``rust/server/src/admin/**/*.rs``, paths
  and methods, so a route added without its description (or the reverse) fails here.
* Against a running broker, every listed method of every path is routed (neither axum's bare 404
  nor its bare 405) and every other method gets axum's 405.
* schemathesis generates requests from the document (a bounded number per operation), with
  authorization off and on (as the superuser and as an anonymous caller): no 5xx, every answer within a deadline, the
  broker's resident memory bounded, and the broker still healthy at the end.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ADMIN_SOURCES = ROOT / "rust" / "server" / "src" / "admin"
METHODS = ("GET", "PUT", "POST", "DELETE")
#: schemathesis's examples per operation, and the answer deadline (seconds).
MAX_EXAMPLES = 25
#: For the caller without credentials fewer: a role that owns nothing, so nearly every operation
#: ends at the authorization check and more examples mostly repeat the refusal (5 instead of 25:
#: about 40 s less in CI; the other two callers keep 25).
MAX_EXAMPLES_ANONYMOUS = 5
DEADLINE_S = 5
#: Growth of the test process's resident memory (the broker runs in it) allowed per run.
RSS_GROWTH_LIMIT = 512 << 20


def routes_in_sources() -> set[tuple[str, str]]:
    """``(path, method)`` of every ``.route(path, get(..).put(..))`` call in the admin modules."""
    found = set()
    for f in sorted(ADMIN_SOURCES.rglob("*.rs")):
        # Whole-line comments may mention `.route(...)` too.
        src = re.sub(r"^\s*//.*$", "", f.read_text(), flags=re.MULTILINE)
        base = re.search(r'let base = "([^"]+)"', src)
        for m in re.finditer(r"\.route\(", src):
            depth, j = 1, m.end()
            while depth:
                depth += {"(": 1, ")": -1}.get(src[j], 0)
                j += 1
            call = src[m.end() : j - 1]
            if re.fullmatch(r"\s*\w+\s*,\s*\w+\s*", call):
                continue  # the route builder's own plumbing (`self.router.route(path, methods)`)
            path = re.search(r'"([^"]+)"', call)
            assert path, call
            p = path.group(1)
            if p.startswith("{base}"):
                assert base, f.name
                p = base.group(1) + p.removeprefix("{base}")
            p = p.replace("{{", "{").replace("}}", "}")
            rest = call[path.end() :]
            for method in re.findall(r"(?:^|[.:\s])(get|put|post|delete|patch|head)\(", rest):
                found.add((p, method.upper()))
    return found


def fetch(url: str, method: str = "GET", token: str | None = None) -> tuple[int, bytes]:
    req = urllib.request.Request(url, method=method)
    if token is not None:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def document(admin_url: str, token: str | None = None) -> dict:
    status, body = fetch(f"{admin_url}/admin/v2/openapi.json", token=token)
    assert status == 200, (status, body)
    return json.loads(body)


def operations(doc: dict) -> set[tuple[str, str]]:
    return {(p, m.upper()) for p, item in doc["paths"].items() for m in item}


def test_the_document_lists_exactly_the_routes_of_the_sources(pulsar_broker):
    doc = document(pulsar_broker.admin_url)
    assert doc["openapi"].startswith("3.")
    in_sources = routes_in_sources()
    assert len(in_sources) > 50
    documented = operations(doc)
    assert documented - in_sources == set(), "described but not routed"
    assert in_sources - documented == set(), "routed but not described"


def test_every_described_method_is_routed_and_no_other(pulsar_broker):
    doc = document(pulsar_broker.admin_url)
    for path, item in doc["paths"].items():
        concrete = re.sub(r"\{[^}]+\}", "openapi-probe", path)
        url = pulsar_broker.admin_url + concrete
        for method in METHODS:
            status, body = fetch(url, method)
            # axum answers an unrouted path or method with an empty 404 or 405; a handler's
            # refusal (Pulsar's own 404s and 405s) carries a reason.
            unrouted = status in (404, 405) and not body
            if method.lower() in item:
                assert not unrouted, f"{method} {path}: {status}, not routed"
            else:
                assert unrouted and status == 405, (method, path, status, body)


def rss() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def schemathesis_cmd() -> list[str] | None:
    st = shutil.which("st") or str(Path(sys.executable).with_name("st"))
    return [st] if Path(st).exists() else None


@pytest.mark.slow  # about 15 s here for each caller (2 733 requests)
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("caller", ["no-authorization", "superuser", "anonymous"])
def test_schemathesis_finds_no_server_error_hang_or_growth(pulsar_broker_factory, tmp_path, caller):
    """``no-authorization``: a broker without it; ``superuser`` and ``anonymous``: token
    authentication and authorization on, requests with the superuser's token or with none."""
    cmd = schemathesis_cmd()
    if cmd is None:
        pytest.skip("schemathesis is not installed (the test extras have it)")
    headers: list[str] = []
    token = None
    # Transactions on, so the v3 endpoints answer rather than Pulsar's 503 for a broker without them.
    if caller == "no-authorization":
        broker = pulsar_broker_factory(transactionCoordinatorEnabled=True)
    else:
        # The security suite's token helpers (tests/security).
        sys.path.insert(0, str(ROOT / "tests" / "security"))
        from token_util import ADMIN, token_authz_settings

        broker = pulsar_broker_factory(**token_authz_settings("anonymous"), transactionCoordinatorEnabled=True)
        token = ADMIN
        if caller == "superuser":
            headers = ["-H", f"Authorization: Bearer {ADMIN}"]
    spec = tmp_path / "openapi.json"
    spec.write_text(json.dumps(document(broker.admin_url, token)))
    before = peak = rss()
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.wait(0.2):
            peak = max(peak, rss())

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    started = time.monotonic()
    try:
        run = subprocess.run(
            [
                *cmd,
                "run",
                str(spec),
                "--url",
                broker.admin_url,
                *headers,
                "--checks",
                "not_a_server_error",
                "--max-response-time",
                str(DEADLINE_S),
                "--request-timeout",
                str(DEADLINE_S * 2),
                "--max-examples",
                str(MAX_EXAMPLES_ANONYMOUS if caller == "anonymous" else MAX_EXAMPLES),
                "--generation-deterministic",
                "--no-color",
            ],
            cwd=tmp_path,  # whatever schemathesis keeps on disk stays out of the work tree
            capture_output=True,
            text=True,
            timeout=1100,
            check=False,
        )
    finally:
        done.set()
        sampler.join()
    print(f"schemathesis ran {time.monotonic() - started:.0f} s; RSS peak +{(peak - before) >> 20} MiB")
    print(run.stdout[-6000:])
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    assert peak - before < RSS_GROWTH_LIMIT, f"RSS grew by {(peak - before) >> 20} MiB"
    status, _ = fetch(f"{broker.admin_url}/admin/v2/brokers/health", token=token)
    assert status == 200
