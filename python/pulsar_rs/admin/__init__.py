"""The admin REST client of a broker, as a package: ``from pulsar_rs.admin import Admin``.

:mod:`.client` is :class:`Admin` itself (requests, redirects, errors) and its groups;
:mod:`.policies`, :mod:`.limits`, :mod:`.messages` and :mod:`.transactions` are the policy calls,
the limit calls, the decoding of messages read through the API and ``admin.transactions``.
"""

from __future__ import annotations

from .client import Admin, AdminError
from .transactions import CoordinatorStats, Transactions

__all__ = ["Admin", "AdminError", "CoordinatorStats", "Transactions"]
