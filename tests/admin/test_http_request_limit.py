"""Pulsar's admin request limit (``httpRequestsLimitEnabled`` / ``httpRequestsMaxPerSecond``): requests
above the rate get 429 before any handler runs, and the budget refills."""

from __future__ import annotations

import time

from conftest import admin


def test_requests_above_the_rate_get_429(pulsar_broker_factory) -> None:
    b = pulsar_broker_factory(httpRequestsLimitEnabled=True, httpRequestsMaxPerSecond=5)
    answers = [admin(b.admin_url, "GET", "/admin/v2/clusters") for _ in range(30)]
    statuses = [status for status, _ in answers]
    assert statuses.count(200) >= 5, statuses
    assert statuses.count(429) >= 15, statuses
    assert set(statuses) <= {200, 429}, statuses
    assert all(body == {"reason": "Too Many Requests"} for status, body in answers if status == 429)
    time.sleep(1.5)  # the request-rate window is real (machine) time: let the budget refill
    assert admin(b.admin_url, "GET", "/admin/v2/clusters")[0] == 200


def test_off_by_default(pulsar_broker) -> None:
    statuses = {admin(pulsar_broker.admin_url, "GET", "/admin/v2/clusters")[0] for _ in range(200)}
    assert statuses == {200}
