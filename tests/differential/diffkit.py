"""Differential tests' kit: a broker under comparison (:class:`Target`) and :func:`compare`."""

from __future__ import annotations

import contextlib
import json
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pulsar


@dataclass
class Target:
    """One broker under comparison, as a client and an operator see it."""

    name: str
    service_url: str
    admin_url: str
    namespace: str = ""
    _clients: list[Any] = field(default_factory=list)

    def client(self, **kwargs: Any) -> Any:
        c = pulsar.Client(
            self.service_url,
            operation_timeout_seconds=10,
            logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error),
            **kwargs,
        )
        self._clients.append(c)
        return c

    def topic(self, stem: str, kind: str = "persistent") -> str:
        return f"{kind}://{self.namespace}/{stem}"

    def rest(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        """An admin REST call: (status, parsed JSON body or text or None)."""
        data = None
        headers = {"Accept": "application/json"}
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(self.admin_url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, _parse(r.read())
        except urllib.error.HTTPError as e:
            return e.code, _parse(e.read())

    def close_clients(self) -> None:
        for c in self._clients:
            with contextlib.suppress(Exception):
                c.close()
        self._clients.clear()


def _parse(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode(errors="replace")


def compare(pair: tuple[Target, Target], scenario: Callable[[Target], Any]) -> Any:
    """Runs ``scenario`` on both brokers and asserts pulsar-rs observed what Apache Pulsar observed."""
    ref, rs = pair
    expected = _normalize(scenario(ref), ref.namespace)
    ref.close_clients()
    actual = _normalize(scenario(rs), rs.namespace)
    rs.close_clients()
    assert actual == expected, f"pulsar-rs observed\n  {actual!r}\nApache Pulsar observed\n  {expected!r}"
    return expected


def _normalize(value: Any, namespace: str) -> Any:
    """``value`` with the target's namespace (and the tenant names made from it) written as ``{ns}``."""
    if isinstance(value, str):
        return value.replace(namespace.split("/")[1], "{ns}")
    if isinstance(value, list | tuple):
        return type(value)(_normalize(v, namespace) for v in value)
    if isinstance(value, dict):
        return {_normalize(k, namespace): _normalize(v, namespace) for k, v in value.items()}
    return value


def error_name(exc: BaseException) -> str:
    """The client's name for a failure (``pulsar.ConsumerBusy``, ...), comparable across brokers."""
    return type(exc).__name__
