"""A KeyboardInterrupt raised while robots.txt is read, on a loop of its own: prints (as
JSON, last line) whom it reached and what the fetch's other waiter and a later ask got.
tests/politeness/test_robots_cache.py runs it.

    python -m tests.support.children.robots_interrupt
"""

from __future__ import annotations

import asyncio
import json

from robotgate.policy.fetch import FetchPolicy
from robotgate.policy.fetch_flow import RobotsRequest, RobotsResponse
from robotgate.policy.site import Interpretation
from robotgate.politeness.robots_cache import RobotsCache
from robotgate.politeness.robots_fetcher import RobotsFetcher
from robotgate.records import HostState
from robotgate.store.memory import MemoryStore
from tests.support.transports import FakeTransport

SITE = "http://site.example"
AGENT = "CacheBot/1.0"


class InterruptedOnce(FakeTransport):
    """Its first request raises KeyboardInterrupt once released; the others answer."""

    async def send(self, request: RobotsRequest) -> RobotsResponse:
        if self.requests:
            return await super().send(request)
        self.requests.append(request)
        await self.release.wait()
        raise KeyboardInterrupt


async def main(outcome: dict[str, object]) -> None:
    transport = InterruptedOnce(RobotsResponse(200, {}, b"User-agent: *\nDisallow: /x\n"),
                                held=True)
    store = MemoryStore()

    async def host_state(origin: str) -> HostState:
        return HostState(origin)

    cache = RobotsCache(RobotsFetcher(transport, FetchPolicy()), store, Interpretation(AGENT),
                        at_once=store.at_once(), host_state=host_state)
    caught: list[str] = []
    outcome["caught"] = caught

    async def asker() -> None:
        try:
            await cache.get(SITE)
        except KeyboardInterrupt:
            caught.append("asker")

    first = asyncio.ensure_future(asker())
    for _ in range(5):
        await asyncio.sleep(0)
    other = asyncio.ensure_future(cache.get(SITE))  # joins the same fetch
    for _ in range(5):
        await asyncio.sleep(0)
    transport.release.set()
    await first
    site = await other
    outcome["other_waiter"] = "answered" if not site.allowed("/x", AGENT) else "wrong"
    site = await cache.get(SITE)
    outcome["later_ask"] = "answered" if not site.allowed("/x", AGENT) else "wrong"
    outcome["requests"] = len(transport.requests)
    outcome["inflight"] = cache.inflight


if __name__ == "__main__":
    outcome: dict[str, object] = {}
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(asyncio.wait_for(main(outcome), 20))
    except KeyboardInterrupt:
        outcome.setdefault("caught", []).append("loop")  # type: ignore[union-attr]
    finally:
        loop.close()
    print(json.dumps(outcome))
