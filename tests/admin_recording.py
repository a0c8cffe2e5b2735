"""An :class:`Admin` that records its REST calls instead of sending them, for the unit tests of
the admin client and the CLI (no broker)."""

from __future__ import annotations

import json
from typing import Any

from pulsar_rs.admin import Admin


class RecordingAdmin(Admin):
    """Records each call (method, path, JSON body) and answers a GET from ``answers`` by path."""

    def __init__(self, answers: dict[str, Any] | None = None) -> None:
        super().__init__("http://127.0.0.1:9")
        self.calls: list[tuple[str, str, Any]] = []
        self.answers = answers or {}

    def request_raw(
        self, method: str, path: str, body: Any = None, raw: bytes | None = None
    ) -> tuple[dict[str, str], bytes]:
        sent = json.loads(raw) if raw is not None else body
        self.calls.append((method, path, sent))
        answer = self.answers.get(path) if method == "GET" else None
        return {}, b"" if answer is None else json.dumps(answer).encode()
