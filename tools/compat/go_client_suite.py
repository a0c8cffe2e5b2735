#!/usr/bin/env python3
"""The official Go client's test suite (github.com/apache/pulsar-client-go) run unchanged against
`pulsar-rs standalone`, configured as that suite's CI configures Pulsar standalone
(scripts/pulsar-test-service-start.sh + integration-tests/conf/standalone.conf: TLS on 6651/8443,
token + TLS + Basic authentication, authorization, then a few admin calls).

The suite is not kept in this repository: it is fetched at run time from the Go module proxy
(`go mod download -json github.com/apache/pulsar-client-go@VERSION`) and copied under --out.

Usage: go_client_suite.py --broker BIN [--version v0.19.0] [--out DIR] [--packages ./pulsar,...]
                          [--run REGEX] [--test-timeout 120] [--pkg-timeout 30m] [--race]
Needs ports 6650 6651 8080 8443 free on 127.0.0.1 (the suite hard-codes them).
Prints per-package results and a last line: "go client suite: P passed, F failed of N"
(N counts top-level tests that ran and did not skip; subtests are reported on their own line).
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

MODULE = "github.com/apache/pulsar-client-go"
DEFAULT_VERSION = "v0.19.0"
PORTS = (6650, 6651, 8080, 8443)

# Top-level tests never run here, with the reason (README.md lists them too).
EXCLUDED = {
    # The client dials "pulsar://invalid-hostname:6650": resolving it sends a DNS query to the
    # nameserver, i.e. traffic beyond 127.0.0.1.
    ("pulsar", "TestConsumerConnectError"): "resolves invalid-hostname (DNS query beyond 127.0.0.1)",
    ("pulsar", "TestProducerConnectError"): "resolves invalid-hostname (DNS query beyond 127.0.0.1)",
    ("pulsar", "TestReaderConnectError"): "resolves invalid-hostname (DNS query beyond 127.0.0.1)",
    # testcontainers: a second Pulsar from the apachepulsar/pulsar image (Docker Hub) in Docker.
    ("pulsar", "TestConsumerKeepReconnectingAndThenCallClose"): "needs Docker + the apachepulsar/pulsar image",
    ("pulsar", "TestProducerKeepReconnectingAndThenCallClose"): "needs Docker + the apachepulsar/pulsar image",
    ("pulsar", "TestSendAsyncCouldTimeoutWhileReconnecting"): "needs Docker + the apachepulsar/pulsar image",
    ("pulsar", "TestReconnectConsumer"): "needs Docker + the apachepulsar/pulsar image",
    ("pulsar", "TestReconnectedBrokerSendPermits"): "needs Docker + the apachepulsar/pulsar image",
}


def log(msg: str) -> None:
    print(msg, flush=True)


def ports_busy() -> list[int]:
    busy = []
    for p in PORTS:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the broker binds: TIME-WAIT is no user
        try:
            s.bind(("127.0.0.1", p))
        except OSError:
            busy.append(p)
        finally:
            s.close()
    return busy


def wait_port(port: int, timeout: float = 60) -> bool:
    t0 = time.time()
    while time.time() - t0 < timeout:
        try:
            socket.create_connection(("127.0.0.1", port), 0.5).close()
            return True
        except OSError:
            time.sleep(0.2)
    return False


def http(method: str, path: str, body, tok: str):
    """One admin call on http://localhost:8080/admin/v2/<path>; returns (status, parsed body or text)."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request("http://127.0.0.1:8080/admin/v2/" + path, data=data, method=method)
    req.add_header("Authorization", "Bearer " + tok)
    req.add_header("Content-Type", "application/json")
    req.add_header("Accept", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            raw = r.read()
            status = r.status
    except urllib.error.HTTPError as e:
        raw, status = e.read(), e.code
    except OSError as e:
        return str(e), None
    try:
        return status, json.loads(raw) if raw else None
    except ValueError:
        return status, raw.decode(errors="replace")


def admin_setup(tok: str, out: str) -> None:
    """scripts/pulsar-test-service-start.sh's pulsar-admin calls, as the admin CLI sends them."""
    calls = []

    def call(label, method, path, body):
        st, resp = http(method, path, body, tok)
        ok = isinstance(st, int) and 200 <= st < 300
        calls.append((label, method, path, st, ok))
        log(f"setup {label:<58} {method} {path} -> {st}" + ("" if ok else f"  {str(resp)[:120]}"))
        return ok, resp

    # tenants update public -r anonymous: the CLI keeps the tenant's allowed clusters.
    st, pub = http("GET", "tenants/public", None, tok)
    clusters = (pub or {}).get("allowedClusters") if isinstance(pub, dict) else None
    call(
        "tenants update public -r anonymous",
        "POST",
        "tenants/public",
        {"adminRoles": ["anonymous"], "allowedClusters": clusters or ["standalone"]},
    )
    call(
        "namespaces grant-permission public/default (anonymous)",
        "POST",
        "namespaces/public/default/permissions/anonymous",
        ["produce", "consume"],
    )
    # tenants create private: without --allowed-clusters the CLI allows every cluster.
    st, all_clusters = http("GET", "clusters", None, tok)
    call(
        "tenants create private",
        "PUT",
        "tenants/private",
        {"adminRoles": [], "allowedClusters": all_clusters if isinstance(all_clusters, list) else ["standalone"]},
    )
    # namespaces create private/auth: the CLI PUTs a default Policies document.
    call(
        "namespaces create private/auth",
        "PUT",
        "namespaces/private/auth",
        {
            "auth_policies": {"namespace_auth": {}, "destination_auth": {}, "subscription_auth_roles": {}},
            "replication_clusters": [],
        },
    )
    call(
        "namespaces grant-permission private/auth (token-principal)",
        "POST",
        "namespaces/private/auth/permissions/token-principal",
        ["produce", "consume"],
    )
    ok = sum(c[4] for c in calls)
    log(f"setup calls accepted: {ok}/{len(calls)}")
    with open(os.path.join(out, "setup.txt"), "w") as fh:
        for label, method, path, st, good in calls:
            fh.write("{}\t{} {}\t{}\t{}\n".format(label, method, path, st, "accepted" if good else "REFUSED"))


def broker_conf(src: str, out: str) -> str:
    """Upstream's standalone.conf with the container paths mapped to the downloaded module and the
    bind address narrowed to loopback; nothing else changed."""
    it = os.path.join(src, "integration-tests")
    lines = []
    with open(os.path.join(it, "conf", "standalone.conf")) as fh:
        for line in fh:
            key = line.split("=", 1)[0].strip()
            if key == "bindAddress":
                line = "bindAddress=127.0.0.1\n"
            line = line.replace("/pulsar/certs/", it + "/certs/").replace("/pulsar/tokens/", it + "/tokens/")
            line = line.replace("/pulsar/conf/", it + "/conf/")
            lines.append(line)
    # Upstream's Dockerfile passes the Basic users file as -Dpulsar.auth.basic.conf; Pulsar's key for it:
    lines.append("\n# added by go_client_suite.py (upstream: PULSAR_EXTRA_OPTS=-Dpulsar.auth.basic.conf=...)\n")
    lines.append(f"basicAuthConf={it}/conf/.htpasswd\n")
    path = os.path.join(out, "standalone.conf")
    with open(path, "w") as fh:
        fh.write("".join(lines))
    return path


class SuiteError(RuntimeError):
    """The module could not be obtained (the message says why)."""


def download_module(version: str, env: dict, cwd: str) -> dict:
    """`go mod download -json MODULE@version` (the module alone, not its dependencies) through the Go
    module proxy into the module cache; returns go's JSON answer (`Dir`: the read-only unpacked module,
    `Sum`). Importable without running the suite (tests/admin/test_client_ci_configs.py)."""
    r = subprocess.run(
        ["go", "mod", "download", "-json", f"{MODULE}@{version}"], capture_output=True, text=True, env=env, cwd=cwd
    )
    info = json.loads(r.stdout) if r.stdout.strip() else {}
    if r.returncode != 0 or "Dir" not in info:
        raise SuiteError(
            "go_client_suite.py: cannot download {}@{}: {} {}".format(
                MODULE, version, info.get("Error", ""), r.stderr.strip()
            )
        )
    return info


def fetch_suite(version: str, out: str, env: dict) -> str:
    try:
        info = download_module(version, env, out)
    except SuiteError as e:
        sys.exit(str(e))
    src = os.path.join(out, "src")
    shutil.rmtree(src, ignore_errors=True)
    shutil.copytree(info["Dir"], src)
    for root, dirs, files in os.walk(src):  # the module cache is read-only; some tests write files
        for n in dirs + files:
            os.chmod(os.path.join(root, n), 0o755 if n in dirs else 0o644)
    os.chmod(src, 0o755)
    log("suite: {}@{} ({}), copied to {}".format(MODULE, version, info.get("Sum", "?"), src))
    r = subprocess.run(["go", "mod", "download"], cwd=src, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"go_client_suite.py: go mod download (dependencies) failed: {r.stderr[-2000:]}")
    return src


def children(pid: int) -> list[int]:
    """Child processes of `pid` (any of its threads may have started them)."""
    kids = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as fh:
                kids += [int(x) for x in fh.read().split()]
    except OSError:
        pass
    return kids


class Package:
    def __init__(self, name: str):
        self.name = name  # import path relative to the module, e.g. "pulsar/internal"
        self.results: dict[str, tuple[str, float]] = {}  # top-level test -> (pass|fail|skip, seconds)
        self.subs: dict[str, str] = {}  # subtest -> pass|fail|skip
        self.output: dict[str, list[str]] = {}  # test -> output lines (kept for failures)
        self.notes: dict[str, str] = {}  # test -> why it failed without an assertion (hang, crash)


def run_round(pkg: Package, names: list[str], a, src: str, env: dict, jsonl) -> list[str]:
    """One `go test -json` over `names`; returns the names that did not start (to run again)."""
    rx = "^({})$".format("|".join(re.escape(n) for n in names))
    cmd = ["go", "test", "-json", "-count=1", "-p", "1", "-timeout", a.pkg_timeout, "-run", rx]
    if a.race:
        cmd.append("-race")
    if a.parallel:
        cmd += ["-parallel", str(a.parallel)]
    cmd.append("./" + pkg.name)
    proc = subprocess.Popen(
        cmd, cwd=os.path.join(src), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
    )
    lines: queue.Queue = queue.Queue()

    def reader():
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=reader, daemon=True).start()
    running: dict[str, float] = {}
    killed, killed_at = None, 0.0
    while True:
        try:
            line = lines.get(timeout=1)
        except queue.Empty:
            line = ""
        if line is None:
            break
        if line:
            jsonl.write(line)
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            test, action = ev.get("Test"), ev.get("Action")
            if test:
                top = test.split("/", 1)[0]
                if action == "output":
                    buf = pkg.output.setdefault(top, [])
                    buf.append(ev.get("Output", ""))
                    del buf[:-400]
                elif action == "run" and "/" not in test:
                    running[test] = time.time()
                elif action in ("pass", "fail", "skip"):
                    if "/" in test:
                        pkg.subs[test] = action
                    else:
                        pkg.results[test] = (action, ev.get("Elapsed", 0.0))
                        running.pop(test, None)
            elif action == "output":
                pkg.output.setdefault("", []).append(ev.get("Output", ""))
                del pkg.output[""][:-400]
        # Watchdog: one top-level test running longer than --test-timeout is stopped with SIGQUIT
        # (the Go runtime prints every goroutine's stack into the JSON stream), then the rest resume.
        now = time.time()
        for t, t0 in list(running.items()):
            if killed is None and now - t0 > a.test_timeout:
                killed, killed_at = t, now
                for c in children(proc.pid):
                    os.kill(c, signal.SIGQUIT)
                log(f"  {t}: still running after {a.test_timeout}s, stopped (SIGQUIT)")
        if killed is not None and now - killed_at > 20:  # SIGQUIT ignored: make sure
            for c in children(proc.pid):
                os.kill(c, signal.SIGKILL)
            killed_at = now
    proc.wait()
    for t in running:  # started, never finished: the hung one, or killed by -timeout / a crash
        if t == killed:
            pkg.results[t] = ("fail", float(a.test_timeout))
            pkg.notes[t] = f"hung: stopped after {a.test_timeout}s (goroutine dump in go-test.jsonl)"
        elif killed is None:
            pkg.results[t] = ("fail", 0.0)
            pkg.notes[t] = f"the test binary ended while it ran (-timeout {a.pkg_timeout} or a crash)"
    # Not started, or cut short by another test's hang (t.Parallel): run again.
    return [n for n in names if n not in pkg.results]


def penv(tenv: dict, pkg: str) -> dict:
    """oauth2 runs without the proxy guard: its one real request (TestAuth, "errors when the get
    errors") goes to https://.well-known/..., which the Go resolver refuses locally (not a domain
    name: no DNS query), and the spec compares the exact dial error; everything else there is mocked."""
    if pkg != "oauth2":
        return tenv
    return {k: v for k, v in tenv.items() if k not in ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY")}


def list_tests(pkg: str, src: str, env: dict) -> list[str] | None:
    r = subprocess.run(["go", "test", "-list", ".", "./" + pkg], cwd=src, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        log(f"{pkg}: go test -list failed:\n{(r.stdout + r.stderr)[-3000:]}")
        return None
    return [x for x in r.stdout.split() if re.match(r"^(Test|Example|Fuzz)", x)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--broker", required=True, help="the pulsar-rs command")
    ap.add_argument("--version", default=DEFAULT_VERSION, help="pulsar-client-go module version (%(default)s)")
    ap.add_argument("--out", default=None, help="logs, go-test.jsonl, failures.txt (default: a temp dir)")
    ap.add_argument(
        "--packages",
        default="",
        help="comma-separated packages, e.g. pulsar,pulsaradmin/pkg/admin "
        "(default: every package of the module, as upstream's `go test ./...`)",
    )
    ap.add_argument("--run", default=None, help="only top-level tests matching this regexp")
    ap.add_argument("--test-timeout", type=int, default=120, help="seconds one top-level test may run")
    ap.add_argument("--pkg-timeout", default="30m", help="go test -timeout for one go test run")
    ap.add_argument("--parallel", type=int, default=0, help="go test -parallel (default: GOMAXPROCS)")
    ap.add_argument("--race", action="store_true", help="go test -race, as upstream's CI (slow on 2 cores)")
    a = ap.parse_args()
    t_start = time.time()
    busy = ports_busy()
    if busy:
        sys.exit(
            "go_client_suite.py: port(s) {} busy on 127.0.0.1; the suite hard-codes localhost:6650, 6651, "
            "8080 and 8443: stop whatever listens there first".format(", ".join(map(str, busy)))
        )
    out = os.path.abspath(a.out or tempfile.mkdtemp(prefix="go-client-suite-"))
    os.makedirs(out, exist_ok=True)
    env = dict(os.environ, GOTOOLCHAIN="local", GOFLAGS="-buildvcs=false")
    src = fetch_suite(a.version, out, env)
    # The test processes: no module downloads, and any HTTP client honouring the proxy variables is
    # pointed at a closed loopback port for every host but localhost (a second guard; the first is
    # the exclusion list).
    tenv = dict(
        env,
        GOPROXY="off",
        HTTP_PROXY="http://127.0.0.1:9",
        HTTPS_PROXY="http://127.0.0.1:9",
        NO_PROXY="localhost,127.0.0.1",
        PULSAR_IMAGE="none",
        GODEBUG="netdns=go",  # Go's own resolver: names that are not domain names fail without a query
    )
    conf = broker_conf(src, out)
    it = os.path.join(src, "integration-tests")
    with open(os.path.join(it, "tokens", "admin-token")) as fh:
        admin_token = fh.read().strip()

    if a.packages:
        pkgs = [p.strip().strip("./") for p in a.packages.split(",") if p.strip()]
    else:
        r = subprocess.run(
            ["go", "list", "-f", "{{.ImportPath}} {{len .TestGoFiles}} {{len .XTestGoFiles}}", "./..."],
            cwd=src,
            env=tenv,
            capture_output=True,
            text=True,
            check=True,
        )
        pkgs = []
        for line in r.stdout.splitlines():
            path, n1, n2 = line.split()
            if int(n1) + int(n2):
                pkgs.append(path[len(MODULE) + 1 :] if path != MODULE else ".")
    log(f"building the test binaries of {len(pkgs)} package(s) ...")
    listed: dict[str, list[str] | None] = {}
    for p in pkgs:
        listed[p] = list_tests(p, src, tenv)
    log(f"built in {time.time() - t_start:.0f} s")

    blog = open(os.path.join(out, "broker.log"), "ab")  # noqa: SIM115 (the broker's stdout while it runs)
    benv = dict(os.environ, PULSAR_EXTRA_OPTS=f"-Dpulsar.auth.basic.conf={it}/conf/.htpasswd")
    data = os.path.join(out, "data")
    shutil.rmtree(data, ignore_errors=True)
    proc = subprocess.Popen(
        [a.broker, "standalone", "--config", conf, "--data-dir", data],
        stdout=blog,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        env=benv,
        cwd=out,
    )
    packages: list[Package] = []
    try:
        if not all(wait_port(p) for p in PORTS):
            blog.flush()
            with open(os.path.join(out, "broker.log"), errors="replace") as fh:
                log(fh.read()[-3000:])
            log("go client suite: broker did not open 6650/6651/8080/8443 (0 passed, 0 failed of 0)")
            sys.exit(1)
        t0 = time.time()
        while time.time() - t0 < 60:  # upstream: until curl http://localhost:8080/metrics
            try:
                urllib.request.urlopen("http://127.0.0.1:8080/metrics", timeout=5).read()
                break
            except urllib.error.HTTPError:
                break
            except OSError:
                time.sleep(0.5)
        admin_setup(admin_token, out)
        jsonl = open(os.path.join(out, "go-test.jsonl"), "w")  # noqa: SIM115 (written across rounds)
        for p in pkgs:
            pkg = Package(p)
            packages.append(pkg)
            names = listed[p]
            t0 = time.time()
            if names is None:
                pkg.results["(build)"] = ("fail", 0.0)
                pkg.notes["(build)"] = "the package's tests did not build"
                continue
            names = [n for n in names if (p, n) not in EXCLUDED]
            if a.run:
                names = [n for n in names if re.search(a.run, n)]
            rounds = 0
            while names and rounds < 20:
                rounds += 1
                before = len(names)
                names = run_round(pkg, names, a, src, penv(tenv, p), jsonl)
                jsonl.flush()
                if len(names) == before:  # no progress: the binary does not run
                    break
            for n in names:
                pkg.results[n] = ("fail", 0.0)
                pkg.notes[n] = "never started"
            c = {k: sum(1 for v in pkg.results.values() if v[0] == k) for k in ("pass", "fail", "skip")}
            log(
                f"{p:<32} {c['pass']:4d} passed {c['fail']:4d} failed {c['skip']:4d} skipped"
                f"  ({time.time() - t0:.0f} s)"
            )
        jsonl.close()
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=20)
        except Exception:
            os.killpg(proc.pid, signal.SIGKILL)

    passed = failed = skipped = 0
    sp = sf = ss = 0
    with open(os.path.join(out, "failures.txt"), "w") as fh:
        for pkg in packages:
            for t, (res, secs) in pkg.results.items():
                passed += res == "pass"
                failed += res == "fail"
                skipped += res == "skip"
                if res == "fail":
                    fh.write(
                        "=== {} {} ({:.1f} s){}\n".format(
                            pkg.name, t, secs, f"  [{pkg.notes[t]}]" if t in pkg.notes else ""
                        )
                    )
                    body = [x for x in pkg.output.get(t, []) if not x.startswith(("=== RUN", "=== PAUSE", "=== CONT"))]
                    fh.write("".join(body[-60:]))
                    fh.write("\n")
            for r in pkg.subs.values():
                sp += r == "pass"
                sf += r == "fail"
                ss += r == "skip"
    for pkg in packages:
        for t, (res, _) in pkg.results.items():
            if res == "fail":
                log("FAIL {} {}{}".format(pkg.name, t, f"  [{pkg.notes[t]}]" if t in pkg.notes else ""))
    log(f"excluded (not run): {sum(1 for k in EXCLUDED if k[0] in pkgs)} top-level tests (README.md)")
    log(f"skipped by the tests themselves: {skipped}")
    log(f"subtests: {sp} passed, {sf} failed, {ss} skipped")
    log(f"results in {out} (go-test.jsonl, failures.txt, broker.log, setup.txt); {time.time() - t_start:.0f} s")
    log(f"go client suite: {passed} passed, {failed} failed of {passed + failed}")


if __name__ == "__main__":
    main()
