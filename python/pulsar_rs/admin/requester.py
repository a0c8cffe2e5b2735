"""What the call groups need of :class:`pulsar_rs.Admin`: its two request methods, named here as
a protocol so the groups do not import the client that holds them (no import circle)."""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["Requester"]


class Requester(Protocol):
    """:class:`pulsar_rs.Admin` as its call groups see it."""

    def request(self, method: str, path: str, body: Any = None, raw: bytes | None = None) -> Any:
        """One call; the parsed JSON answer."""
        ...

    def request_raw(
        self, method: str, path: str, body: Any = None, raw: bytes | None = None
    ) -> tuple[dict[str, str], bytes]:
        """One call; the answer's headers and body bytes."""
        ...
