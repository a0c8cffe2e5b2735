"""A client for the broker's admin REST API (Pulsar's ``/admin/v2`` paths), with the standard
library only: ``Admin(url, token=None)`` with ``brokers``, ``clusters``, ``tenants``,
``namespaces``, ``topics``, ``schemas`` and ``transactions`` groups named as ``pulsar-admin``'s
commands (``topics.skip``, ``topics.reset_cursor``, ``namespaces.set_retention``,
``brokers.leader_broker``, ...). A message id is ``"earliest"``, ``"latest"``, ``"L:E"`` or a
``(ledger_id, entry_id)`` pair.

In a cluster a broker may answer ``307 Temporary Redirect`` (a lookup of a topic another broker
owns, the unload of a bundle another broker owns): the call is repeated at the ``Location`` with
the same method, body and headers (the token too), as Pulsar's admin client follows them.

>>> admin = Admin("http://127.0.0.1:8080")                       # doctest: +SKIP
>>> admin.tenants.create("acme", admin_roles=["ops"])             # doctest: +SKIP
>>> admin.namespaces.create("acme/orders")                        # doctest: +SKIP
>>> admin.topics.stats("persistent://acme/orders/t")["msgInCounter"]  # doctest: +SKIP
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from .errors import AdminError, admin_error
from .groups import Brokers, BrokerStats, Clusters, Schemas, Tenants
from .namespaces import Namespaces
from .topics import Topics
from .transactions import Transactions

__all__ = ["MAX_REDIRECTS", "Admin", "AdminError"]

#: How many redirects one call follows before it gives up (urllib's own limit).
MAX_REDIRECTS = 10


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Leaves 307 and 308 to :meth:`Admin.request_raw`, which repeats the call with its method
    and body (urllib follows them for GET only, and drops the body)."""

    def http_error_307(self, req: Any, fp: Any, code: int, msg: str, headers: Any) -> None:
        return None

    http_error_308 = http_error_307


class Admin:
    """The admin REST API of a broker at ``url``; ``token`` is sent as a Bearer token."""

    def __init__(self, url: str, token: str | None = None, timeout: float = 10.0) -> None:
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self._opener = urllib.request.build_opener(_NoRedirect)
        self.clusters = Clusters(self)
        self.tenants = Tenants(self)
        self.namespaces = Namespaces(self)
        self.topics = Topics(self)
        self.brokers = Brokers(self)
        self.broker_stats = BrokerStats(self)
        self.schemas = Schemas(self)
        self.transactions = Transactions(self)

    def request(self, method: str, path: str, body: Any = None, raw: bytes | None = None) -> Any:
        """One call; returns the parsed JSON answer (``None`` when empty). Raises
        :class:`AdminError` for a 4xx/5xx answer."""
        text = self.request_raw(method, path, body, raw)[1].decode()
        return json.loads(text) if text.strip() else None

    def request_raw(
        self, method: str, path: str, body: Any = None, raw: bytes | None = None
    ) -> tuple[dict[str, str], bytes]:
        """One call; returns the answer's headers and body bytes (messages, health checks).
        A 307 or 308 answer is followed: the same call again at its ``Location``."""
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        url, status = self.url + path, 0
        for _ in range(MAX_REDIRECTS + 1):
            req = urllib.request.Request(url, data=data, method=method)
            if data is not None:
                req.add_header("Content-Type", "application/json")
            if self.token:
                req.add_header("Authorization", f"Bearer {self.token}")
            try:
                with self._opener.open(req, timeout=self.timeout) as r:
                    return dict(r.headers.items()), r.read()
            except urllib.error.HTTPError as e:
                with e:
                    location = e.headers.get("Location") if e.code in (307, 308) else None
                    if not location:
                        raise admin_error(e) from None
                    url = urllib.parse.urljoin(url, location)
                    status = e.code
        raise AdminError(status, f"more than {MAX_REDIRECTS} redirects, the last to {url}")
