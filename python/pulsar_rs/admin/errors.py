"""The error of a refused admin call: :class:`AdminError` (HTTP status and Pulsar's reason), and
how an HTTP error answer becomes one."""

from __future__ import annotations

import json
import urllib.error

from .._native import PulsarRsError

__all__ = ["AdminError"]


class AdminError(PulsarRsError):
    """The admin API refused a request: ``status`` is the HTTP code, ``reason`` Pulsar's text."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(f"{status}: {reason}")
        self.status = status
        self.reason = reason


def admin_error(e: urllib.error.HTTPError) -> AdminError:
    """The broker's refusal: its status and Pulsar's ``reason`` (or the body as it came)."""
    text = e.read().decode(errors="replace")
    try:
        reason = json.loads(text).get("reason", text)
    except (ValueError, AttributeError):
        reason = text or e.reason
    return AdminError(e.code, str(reason))
