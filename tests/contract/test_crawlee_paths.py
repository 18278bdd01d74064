"""The request-path contract (tests/contract/test_request_paths.py), every case run
through crawlee's paths too: ``RobotGateHttpClient``'s ``crawl`` (a crawler's requests,
each a ``Request`` the crawler was given) and ``send_request`` (a handler's).  Imported
here so that the contract's own module stays free of crawlee.

And what a link added by crawlee's own ``context.enqueue_links`` or
``context.add_requests`` comes to: it says no page (crawlee keeps only its depth), and
is judged as a public page's pointer."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import pytest

from robotgate import Disallowed, RobotGate
from robotgate.policy.hops import REFUSED, RULE
from tests.contract.test_request_paths import (
    AGENT,
    PRIVATE,
    Client,
    Driver,
    Result,
    Site,
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

from crawlee import Request

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
    """``send_request``, or with ``crawl``, a crawler's own ``Request`` (crawl depth
    ``depth``: 0 for one it was given, 1 for a link added from a page)."""

    def __init__(self, gate: RobotGate, crawl: bool = False, depth: int = 0) -> None:
        super().__init__(gate)
        self.client = RobotGateHttpClient(gate)
        self.crawl = crawl
        self.depth = depth

    async def open(self) -> None:
        await self.client.__aenter__()

    async def get(self, url: str) -> Result:
        try:
            if self.crawl:
                request = Request.from_url(url)
                request.crawl_depth = self.depth
                resp = (await self.client.crawl(request)).http_response
            else:
                resp = await self.client.send_request(url)
        except Disallowed as no:
            return Result(refused=no.decision.outcome or "rule", reason=no.decision.reason)
        return Result(status=resp.status_code, usage=self.gate.usage(url, resp.headers))

    async def many(self, urls: list[str]) -> list[Result]:
        return list(await asyncio.gather(*(self.get(url) for url in urls)))

    async def close(self) -> None:
        await self.client.__aexit__(None, None, None)


@dataclass
class CrawleeDriver(Driver):
    """``crawlee``: ``send_request``; ``crawlee-crawl``: ``crawl``, its requests at crawl
    depth ``depth``."""

    depth: int = 0

    @asynccontextmanager
    async def open(self, **options: Any) -> AsyncIterator[Client]:
        async with RobotGate(AGENT, is_private=public_loopback_1, **options) as gate:
            client = CrawleeClient(gate, crawl=self.name == "crawlee-crawl", depth=self.depth)
            await client.open()
            try:
                yield client
            finally:
                await client.close()


@pytest.fixture(params=["crawlee", "crawlee-crawl"])
def driver(request: pytest.FixtureRequest) -> Driver:
    return CrawleeDriver(request.param)


async def test_a_link_that_says_no_page_is_judged_as_a_public_pages(
        public: Site, private: Site) -> None:
    # As context.enqueue_links adds it: crawl depth 1, no provenance in its user_data.
    async with CrawleeDriver("crawlee-crawl", depth=1).open(delay=0) as client:
        allowed, disallowed, inside, private_page = await client.many([
            public.url("/page/1"), public.url("/no/x"), private.url("/secret"),
            f"http://{PRIVATE}:{private.port}/"])
    assert allowed.status == 200, allowed
    assert disallowed.refused == "rule" and "Disallow: /no/" in disallowed.reason, disallowed
    for refused in (inside, private_page):
        assert refused.refused == REFUSED and RULE in refused.reason, refused
        assert "RobotGateHttpClient.enqueue_links(context)" in refused.reason, refused
    assert public.paths() == ["/page/1"] and public.robots_hits == 1
    assert private.paths() == [] and private.robots_hits == 0
