"""tdmrep.json's first request is guarded as the origin's robots.txt request was: an
origin a public page's pointer led to must be reached at a public address.

Through every client, with a name rebound between the check and the connection:
tests/contract/test_tdmrep_pointers.py.
"""

from __future__ import annotations

import ipaddress

from robotgate.policy import FetchPolicy
from robotgate.policy.fetch_flow import RobotsRequest, RobotsResponse
from robotgate.policy.tdm import TDMREP_PATH
from robotgate.politeness.robots_fetcher import RobotsFetcher
from robotgate.politeness.tdmrep_cache import PointedOrigins, TdmRepCache

CHECKED = (ipaddress.ip_address("93.184.216.34"),)


class Recording:
    """A transport that answers 404 and keeps each request."""

    def __init__(self) -> None:
        self.sent: list[RobotsRequest] = []

    async def send(self, request: RobotsRequest) -> RobotsResponse:
        self.sent.append(request)
        return RobotsResponse(404, {}, None, request.url)


def wired(max_origins: int = 100) -> tuple[RobotsFetcher, TdmRepCache, Recording]:
    """A robots.txt fetcher and a tdmrep.json cache on one transport, wired as the gate does."""
    transport = Recording()
    pointed = PointedOrigins(max_origins)
    robots = RobotsFetcher(transport, FetchPolicy(), on_fetch=pointed.robots_fetched)
    cache = TdmRepCache(RobotsFetcher(transport, FetchPolicy(), TDMREP_PATH),
                        max_origins=max_origins, pointed=pointed)
    return robots, cache, transport


async def test_a_pointers_origin_has_its_tdmrep_json_asked_as_its_robots_txt() -> None:
    robots, cache, transport = wired()
    await robots.fetch("http://a.test", None, guard=True, checked=CHECKED)
    await cache.get("http://a.test")
    first, tdmrep = transport.sent
    assert first.url.endswith("/robots.txt") and first.guard
    assert tdmrep.url == "http://a.test" + TDMREP_PATH
    assert tdmrep.guard and tdmrep.checked == CHECKED


async def test_the_users_own_origin_is_not_guarded() -> None:
    robots, cache, transport = wired()
    await robots.fetch("http://a.test", None, guard=True, checked=CHECKED)
    await robots.fetch("http://a.test", None)  # asked again for the user's own request
    await robots.fetch("http://b.test", None)
    await cache.get("http://a.test")
    await cache.get("http://b.test")
    assert [(r.url, r.guard) for r in transport.sent[3:]] == [
        ("http://a.test" + TDMREP_PATH, False), ("http://b.test" + TDMREP_PATH, False)]


async def test_the_pointed_origins_kept_are_bounded() -> None:
    robots, cache, transport = wired(max_origins=2)
    for name in ("a", "b", "c"):
        await robots.fetch(f"http://{name}.test", None, guard=True)
    for name in ("a", "c"):
        await cache.get(f"http://{name}.test")
    assert [r.guard for r in transport.sent[3:]] == [False, True]  # a.test went first
