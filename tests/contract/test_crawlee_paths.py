"""The request-path contract (tests/contract/test_request_paths.py), every case run
through crawlee's path too: ``RobotGateHttpClient``, whose ``crawl`` (a crawler's
requests) and ``send_request`` send through the same exchange.  Imported here so that
the contract's own module stays free of crawlee."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from robotgate import Disallowed, RobotGate
from tests.contract.test_request_paths import (
    AGENT,
    Client,
    Driver,
    Result,
    private,
    public,
    public_loopback_1,
    test_a_429_without_retry_after_backs_off,
    test_a_disallowed_url_is_refused_and_an_allowed_page_reports_its_usage,
    test_a_late_fleet_slot_is_given_up_and_asked_again,
    test_a_redirect_into_a_private_address_is_refused,
    test_close_ends_a_request_waiting_for_its_turn_promptly,
    test_each_request_gives_its_servers_slot_back_exactly_once,
    test_latency_factor_widens_the_gap_after_a_slow_answer,
    test_max_per_host_caps_the_requests_the_server_sees_at_once,
    test_private_to_private_is_followed_without_the_locations_credentials,
    test_retry_after_is_kept,
    test_robots_txt_is_fetched_once_for_concurrent_requests,
    test_the_delay_is_kept_between_requests,
)

pytest.importorskip("crawlee", reason="crawlee is not installed (pip install 'robotgate[crawlee]')")

from robotgate.integrations.crawlee import RobotGateHttpClient

__all__ = [  # the contract's sites and cases, collected here with crawlee's driver
    "private", "public", "test_a_429_without_retry_after_backs_off",
    "test_a_disallowed_url_is_refused_and_an_allowed_page_reports_its_usage",
    "test_a_late_fleet_slot_is_given_up_and_asked_again",
    "test_a_redirect_into_a_private_address_is_refused",
    "test_close_ends_a_request_waiting_for_its_turn_promptly",
    "test_each_request_gives_its_servers_slot_back_exactly_once",
    "test_latency_factor_widens_the_gap_after_a_slow_answer",
    "test_max_per_host_caps_the_requests_the_server_sees_at_once",
    "test_private_to_private_is_followed_without_the_locations_credentials",
    "test_retry_after_is_kept", "test_robots_txt_is_fetched_once_for_concurrent_requests",
    "test_the_delay_is_kept_between_requests",
]


class CrawleeClient(Client):
    def __init__(self, gate: RobotGate) -> None:
        super().__init__(gate)
        self.client = RobotGateHttpClient(gate)

    async def open(self) -> None:
        await self.client.__aenter__()

    async def get(self, url: str) -> Result:
        try:
            resp = await self.client.send_request(url)
        except Disallowed as no:
            return Result(refused=no.decision.outcome or "rule", reason=no.decision.reason)
        return Result(status=resp.status_code, usage=self.gate.usage(url, resp.headers))

    async def many(self, urls: list[str]) -> list[Result]:
        return list(await asyncio.gather(*(self.get(url) for url in urls)))

    async def close(self) -> None:
        await self.client.__aexit__(None, None, None)


class CrawleeDriver(Driver):
    @asynccontextmanager
    async def open(self, **options: Any) -> AsyncIterator[Client]:
        async with RobotGate(AGENT, is_private=public_loopback_1, **options) as gate:
            client = CrawleeClient(gate)
            await client.open()
            try:
                yield client
            finally:
                await client.close()


@pytest.fixture
def driver() -> Driver:
    return CrawleeDriver("crawlee")
