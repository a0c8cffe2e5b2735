"""A minimal W3C WebDriver client over ``urllib`` for the console's browser test: starts
Debian's ``chromedriver`` on an ephemeral port and drives a headless ``chromium`` through it.

Only what the tests use: navigate, find elements by CSS, read text, type, click, run a script,
take a screenshot. Errors from the driver raise ``WebDriverError`` with the driver's message.
"""

from __future__ import annotations

import base64
import contextlib
import json
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

#: The key W3C WebDriver uses for element references.
ELEMENT = "element-6066-11e4-a52e-4f735466cecf"


class WebDriverError(RuntimeError):
    pass


def find_browser() -> tuple[str, str] | None:
    """(chromium, chromedriver) paths, or None when either is missing."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    return (browser, driver) if browser and driver else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Session:
    """One browser session."""

    def __init__(self, url: str, session_id: str) -> None:
        self.base = f"{url}/session/{session_id}"

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return json.loads(r.read())["value"]
        except urllib.error.HTTPError as e:
            with e:
                raise WebDriverError(e.read().decode(errors="replace")) from None

    def get(self, url: str) -> None:
        self._call("POST", "/url", {"url": url})

    def find_all(self, css: str) -> list[str]:
        found = self._call("POST", "/elements", {"using": "css selector", "value": css})
        return [e[ELEMENT] for e in found]

    def text(self, element: str) -> str:
        return self._call("GET", f"/element/{element}/text")

    def click(self, element: str) -> None:
        self._call("POST", f"/element/{element}/click", {})

    def type(self, element: str, text: str) -> None:
        self._call("POST", f"/element/{element}/value", {"text": text})

    def script(self, source: str, *args: Any) -> Any:
        return self._call("POST", "/execute/sync", {"script": source, "args": list(args)})

    def screenshot(self, path: Path) -> None:
        path.write_bytes(base64.b64decode(self._call("GET", "/screenshot")))

    def wait_text(self, css: str, pred: Callable[[str], bool], timeout: float = 20) -> str:
        """Waits until the first element matching ``css`` has text satisfying ``pred``."""
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            with contextlib.suppress(WebDriverError):
                found = self.find_all(css)
                if found:
                    last = self.text(found[0])
                    if pred(last):
                        return last
            time.sleep(0.2)  # poll: the browser renders asynchronously
        raise AssertionError(f"{css!r}: text never matched within {timeout} s (last: {last!r})")


@contextlib.contextmanager
def browser(width: int = 1440, height: int = 1000) -> Iterator[Session]:
    """A headless Chromium session (skip the test first when ``find_browser`` is None)."""
    found = find_browser()
    assert found is not None, "chromium/chromedriver not installed"
    chromium, chromedriver = found
    port = _free_port()
    proc = subprocess.Popen(
        [chromedriver, f"--port={port}", "--allowed-ips=127.0.0.1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                with urllib.request.urlopen(url + "/status", timeout=2) as r:
                    if json.loads(r.read())["value"]["ready"]:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise WebDriverError("chromedriver did not become ready")
            time.sleep(0.1)  # poll: chromedriver (a separate process) starts up
        caps = {
            "capabilities": {
                "alwaysMatch": {
                    "browserName": "chrome",
                    "goog:chromeOptions": {
                        "binary": chromium,
                        "args": [
                            "--headless=new",
                            "--no-sandbox",
                            "--disable-gpu",
                            "--disable-dev-shm-usage",
                            f"--window-size={width},{height}",
                        ],
                    },
                }
            }
        }
        req = urllib.request.Request(url + "/session", data=json.dumps(caps).encode(), method="POST")
        req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                session_id = json.loads(r.read())["value"]["sessionId"]
        except urllib.error.HTTPError as e:
            with e:
                raise WebDriverError(e.read().decode(errors="replace")) from None
        session = Session(url, session_id)
        try:
            yield session
        finally:
            with contextlib.suppress(Exception):
                session._call("DELETE", "")
    finally:
        proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10)
        if proc.poll() is None:
            proc.kill()
