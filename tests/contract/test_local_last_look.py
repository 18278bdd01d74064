"""The interval between the requests' first bytes, on every path that sends a page
(promise 3 without a fleet).

A server's turns are an interval apart, but a request's bytes may leave well after its
turn (its process off the CPU, a slow connect).  With ``max_per_host`` above 1 the next
request's turn does not wait for that one's answer: without a look as the bytes go, it
would reach the server less than an interval after the late one (found at load: 41.6 ms
apart at ``delay`` 0.1).  Each request paced here leaves with its server's interval as
its permit (:class:`~robotgate.politeness.scheduler.PacedHere`), looked at where the
fleet's slot is.

Each row sends one page (robots.txt first), then two at once through one path of a gate
with no store, ``max_per_host=3``; the first of them is held up on its way, after its
turn and before its bytes (where tests/contract/held_up_paths.py says), in two ways:

- **the loop stands still** (``time.sleep``) for part of the interval: the second
  page's turn, due before the first page's bytes went, must wait for an interval
  after them (the server's next turn counts from the first bytes);
- **that request alone is slow** (a slow connect) for longer than the interval: the
  second page's turn comes and its bytes go first, and the first page, looked at as
  its bytes would go, must wait for an interval after the second's.

The server answers after longer than the interval, so no answer paces the pages.  By
the server's kernel stamps, no two pages arrive closer than the interval.  crawlee's
clients are looked at as the request is handed to them (they tell nothing as their
bytes go): their row holds the loop up only.  Scrapy's rows run in a subprocess
(tests/contract/scrapy_last_look_runner.py).
"""

from __future__ import annotations

import asyncio

import pytest

from testbed.server import BenchServer, HostPlan

from .held_up_paths import PATHS, Lag, scrapy_ran

pytestmark = pytest.mark.slow

DELAY = 0.2
# The loop's stand-still, under the interval: the second page's turn is due after the
# first page's bytes went, as it would be without it (a longer one would hold both).
STAND_STILL = 0.12
# One request's slow way, past the interval: the second page's turn comes meanwhile.
SLOW_WAY = 0.35
HELD_UP = {"loop": (STAND_STILL, True), "request": (SLOW_WAY, False)}
TOGETHER = ["/page/2", "/page/3"]
# The first of them on its way is held up (whichever's turn came first).
HELD_PAGE = "/page/"
# The server answers each page after this: longer than the interval.
ANSWER_AFTER = 0.5
OPTIONS = {"delay": DELAY, "max_per_host": 3}


@pytest.mark.parametrize("held", list(HELD_UP))
@pytest.mark.parametrize("path", list(PATHS))
async def test_a_request_whose_bytes_leave_late_keeps_the_next_an_interval_away(
        path: str, held: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if path == "crawlee" and held == "request":
        pytest.skip("crawlee's clients are looked at as they are handed the request")
    seconds, blocking = HELD_UP[held]
    lag = Lag(seconds, HELD_PAGE, blocking)
    async with BenchServer([HostPlan("allow", page_delay=ANSWER_AFTER)]) as srv:
        async with PATHS[path](dict(OPTIONS), monkeypatch, lag) as (_, get):
            first = await get(srv.url(0, "/page/1"))
            lag.armed = True
            rest = await asyncio.gather(*(get(srv.url(0, page)) for page in TOGETHER))
        host = srv.host_stats(0)
    assert lag.done, "the loop never stood still on the late page's way"
    assert [first, *rest] == [200, 200, 200]
    assert host.page_requests == 3 and host.robots_requests == 1, host
    assert host.min_interval is not None and host.min_interval >= DELAY, \
        (path, host.page_times)


@pytest.mark.parametrize("held", list(HELD_UP))
async def test_scrapy_a_request_whose_bytes_leave_late_keeps_the_next_an_interval_away(
        held: str) -> None:
    """Scrapy's rows, in a subprocess (a fresh reactor): the first of the two pages held
    up as Twisted's pool gives its connection."""
    seconds, blocking = HELD_UP[held]
    async with BenchServer([HostPlan("allow", page_delay=ANSWER_AFTER)]) as srv:
        ran = await scrapy_ran({
            "urls": [srv.url(0, "/page/1")], "together": [srv.url(0, p) for p in TOGETHER],
            "lag": seconds, "blocking": blocking,
            "settings": {"ROBOTGATE_DELAY": DELAY, "ROBOTGATE_MAX_PER_HOST": 3}})
        host = srv.host_stats(0)
    assert ran["statuses"] == [200, 200, 200], ran
    assert host.page_requests == 3 and host.robots_requests == 1, host
    assert host.min_interval is not None and host.min_interval >= DELAY, host.page_times
