"""A fleet slot's last look, on every path that sends a page (promise 3 across a fleet).

In a fleet each page request leaves within the slot Redis granted it: no later than
``asked + wait + slack`` (:class:`~robotgate.politeness.fleet_slots.Slot`), so that it
is never closer than the delay to another worker's request.  ``leaving()`` looks at the
slot before the client is called; what happens after (a connection opened or waited
for, a busy loop) must be looked at again as close to the first bytes as the client
lets robotgate: past the slot, the request is not sent (``LateSlot``), the slot is given
up and the next one taken.

Each row sends two pages through one path of a gate on Redis and stands the whole loop
still (``time.sleep``) between ``leaving()`` and the second page's first bytes, past its
slot's deadline: at its connection's open for the aiohttp paths, as httpcore's pool is
asked for a connection for httpx's, and, for crawlee's clients (which tell nothing as
their bytes go), at robotgate's last step before the request is handed to the client.
The server's kernel stamps each arrival: none may be later than its slot's deadline,
the late slot was given up (``FleetSlots.late``) and the page was answered all the same.

Scrapy's row runs Scrapy in a subprocess (tests/contract/scrapy_last_look_runner.py),
held up as Twisted's pool gives the connection.
"""

from __future__ import annotations

import asyncio

import pytest

from robotgate.store.redis import RedisStore
from testbed.server import BenchServer, HostPlan, HostStats

from .held_up_paths import PATHS, Lag, scrapy_ran

pytestmark = pytest.mark.slow

DELAY = 0.2
# How long the loop stands still before the second page's first bytes: well past the
# slack a slot starts with (0.01 s), so the slot it held is surely past.
LAG = 0.3
LATE_PAGE = "/page/2"

#: Each slot Redis granted, on the loop's clock: (asked, wait, slack).
Grants = list[tuple[float, float, float]]


def recording(store: RedisStore) -> Grants:
    """Wrap ``store.reserve``: every slot it grants is recorded."""
    grants: Grants = []
    reserve = store.reserve

    async def recorded(key: str, interval: float, slack: float = 0.0) -> float | None:
        asked = asyncio.get_running_loop().time()
        wait = await reserve(key, interval, slack)
        grants.append((asked, wait or 0.0, slack))
        return wait

    store.reserve = recorded  # type: ignore[method-assign]
    return grants


@pytest.mark.parametrize("path", list(PATHS))
async def test_a_request_held_up_past_its_slot_is_not_sent_but_in_the_next(
        path: str, redis_url: str, prefix: str, monkeypatch: pytest.MonkeyPatch) -> None:
    store = RedisStore(redis_url, prefix=prefix)
    grants = recording(store)
    lag = Lag(LAG, LATE_PAGE)
    async with BenchServer([HostPlan("allow")]) as srv:
        async with PATHS[path]({"delay": DELAY, "store": store}, monkeypatch, lag) as (gate, get):
            first = await get(srv.url(0, "/page/1"))  # robots.txt's slot, then its own
            lag.armed = True
            second = await get(srv.url(0, LATE_PAGE))
            fleet = gate._servers.fleet
            assert fleet is not None
            late = fleet.late
        host = srv.host_stats(0)
    assert lag.done, "the loop never stood still on the late page's way"
    assert (first, second) == (200, 200)
    within_slots(path, host, grants, late)


async def test_scrapy_a_request_held_up_past_its_slot_is_not_sent_but_in_the_next(
        redis_url: str, prefix: str) -> None:
    """Scrapy's row, in a subprocess (a fresh reactor): held up as Twisted's pool gives
    the connection, before anything is written on it."""
    async with BenchServer([HostPlan("allow")]) as srv:
        ran = await scrapy_ran({
            "urls": [srv.url(0, "/page/1"), srv.url(0, LATE_PAGE)], "lag": LAG,
            "settings": {"ROBOTGATE_STORE": redis_url, "ROBOTGATE_STORE_PREFIX": prefix,
                         "ROBOTGATE_DELAY": DELAY}})
        host = srv.host_stats(0)
    assert ran["statuses"] == [200, 200], ran
    within_slots("scrapy", host, [tuple(grant) for grant in ran["grants"]], ran["late"])


def within_slots(path: str, host: HostStats, grants: Grants, late: int) -> None:
    """Both pages reached the server, each within the slot it left in, and the slot the
    standing loop missed was given up for a new one.  (robots.txt's request takes a slot
    too, the first: its own last look is robots.txt's transport's, tested with it.)"""
    assert host.page_requests == 2 and host.robots_requests == 1, host
    # When each page reached the server (the kernel's stamp, on the loop's clock),
    # against the slot it left in: the last granted before it arrived (one request at a
    # time: the next is asked for only after this one's answer).
    for at in host.page_times:
        asked, wait, slack = max(grant for grant in grants if grant[0] <= at)
        assert at <= asked + wait + slack, (path, at - (asked + wait + slack), grants)
    # A loaded machine may make the loop late for more: one slot a request, one more a miss.
    assert late >= 1 and len(grants) == 3 + late, (late, grants)
