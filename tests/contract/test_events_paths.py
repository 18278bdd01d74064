"""The gate's events, every client path: ``gate.fetch``, ``gate.middleware``, the httpx
transport, the Scrapy middleware and ``gate.crawl`` tell the same story of a crawl.

The events come from the client-free core, so the paths emit the same kinds in the
same order for each URL; a listener that raises or dawdles changes nothing fetched.
The servers and drivers are those of tests/contract/test_request_paths.py.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import time
from typing import Any

import pytest

from robotgate.events import Event, ResponseAnswered, TurnWaited
from robotgate.urls import redact
from tests.contract.test_request_paths import (
    ROOT,
    Driver,
    Result,
    Site,
    _gaps,
    public,  # noqa: F401  (the fixture)
    public_loopback_1,
)

PATHS = ["fetch", "middleware", "httpx", "scrapy", "crawl"]
#: One page, one forbidden URL, a 429 (back-off starts), a page after it (back-off eases).
PAGES = ["/a", "/no/x", "/status/429", "/b"]


def _told(event: Event) -> list[str]:
    reason = event.reason if isinstance(event, TurnWaited) else ""
    return [type(event).__name__, getattr(event, "url", event.origin), reason]


async def _events(driver: Driver, urls: list[str], **options: Any
                  ) -> tuple[list[Result], list[list[str]]]:
    """Run ``urls`` one after the other on ``driver``'s path; its results and events
    as ``[kind, url (origin for an origin's event), wait reason]``."""
    if driver.in_process:
        heard: list[Event] = []
        async with driver.open(on_event=heard.append, **options) as client:
            results = [await client.get(url) for url in urls]
        return results, [_told(event) for event in heard]
    settings = {"ROBOTGATE_IS_PRIVATE": f"{public_loopback_1.__module__}.public_loopback_1",
                "CONCURRENT_REQUESTS_PER_DOMAIN": 16, "DOWNLOAD_DELAY": 0,
                "ROBOTGATE_DELAY": options["delay"]}
    config = json.dumps({"urls": urls, "sequential": True, "settings": settings})
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.contract.scrapy_events_runner", config, cwd=ROOT,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()[-3000:]
    lines = out.decode().strip().splitlines()
    assert len(lines) >= 2, err.decode()[-3000:]
    results = [Result(**entry) if entry is not None else Result(error="no answer")
               for entry in json.loads(lines[-2])]
    return results, json.loads(lines[-1])


@pytest.mark.slow
@pytest.mark.parametrize("path", PATHS)
async def test_every_path_tells_the_same_events_in_the_same_order(path: str,
                                                                 public: Site) -> None:  # noqa: F811
    urls = [public.url(p) for p in PAGES]
    origin = public.url("")
    results, events = await _events(Driver(path), urls, delay=0.2)
    assert [r.status for r in results] == [200, None, 429, 200], results
    assert results[1].refused == "rule"
    kinds = [[kind, where] for kind, where, _ in events]
    assert kinds == [
        ["RobotsFetched", origin],
        # robots.txt was a request to the server: the first page waits the delay after it.
        ["TurnWaited", urls[0]], ["ResponseAnswered", urls[0]],
        ["UrlSkipped", urls[1]],
        ["TurnWaited", urls[2]], ["ResponseAnswered", urls[2]], ["BackoffStarted", origin],
        ["TurnWaited", urls[3]], ["ResponseAnswered", urls[3]], ["BackoffEased", origin],
    ], (events, public.arrivals)  # a turn tells TurnWaited only when it waited: see when
    reasons = [reason for kind, _, reason in events if kind == "TurnWaited"]
    assert reasons[0] == "delay" and reasons[2] == "back-off", reasons
    # The page after the 429 went no sooner than the back-off (at least 0.5 s) allowed.
    assert _gaps(public.times("/"))[-1] >= 0.45


class Raises:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, event: Event) -> None:
        self.calls += 1
        raise RuntimeError("a listener's bug")


def dawdles(event: Event) -> None:
    time.sleep(0.02)  # the user's problem (docs/operators.md), but no harm to pacing


@pytest.mark.slow
@pytest.mark.parametrize("path", ["fetch", "middleware", "httpx", "crawl"])
async def test_a_listener_that_raises_or_sleeps_changes_nothing_fetched(
        path: str, public: Site, caplog: pytest.LogCaptureFixture) -> None:  # noqa: F811
    urls = [public.url(p) for p in ["/a", "/no/x", "/b", "/c"]]
    raises = Raises()
    driver = Driver(path)
    caplog.set_level(logging.WARNING, logger="robotgate.events")
    async with driver.open(delay=0.2, on_event=raises) as client:
        first = [await client.get(url) for url in urls]
        assert client.gate.stats["event_errors"] == raises.calls >= 5
    assert len([r for r in caplog.records if r.name == "robotgate.events"]) == 1  # once
    plain = public.paths()
    async with driver.open(delay=0.2, on_event=dawdles) as client:
        second = [await client.get(url) for url in urls]
        assert client.gate.stats["event_errors"] == 0
    assert [r.status for r in first] == [r.status for r in second] == [200, None, 200, 200]
    assert public.paths() == plain + plain  # the same requests, in the same order
    assert min(_gaps(public.times("/"))) >= 0.19  # and the delay kept throughout


@pytest.mark.slow
@pytest.mark.parametrize("path", ["fetch", "middleware", "httpx", "crawl"])
async def test_each_answer_event_names_its_own_request(path: str,
                                                       public: Site) -> None:  # noqa: F811
    # Two requests to one server at once, answered out of order: the slow one
    # (200 after 0.4 s) was sent first, the fast one (404 at once) second.
    # An event is said: a query's value is a digest there (docs/secrets.md).
    slow, fast = public.url("/slow?hold=0.2"), public.url("/status/404")
    said = {redact(slow): slow, redact(fast): fast}
    heard: list[Event] = []
    async with Driver(path).open(delay=0, max_per_host=2, on_event=heard.append) as client:
        results = await client.many([slow, fast])
    assert [r.status for r in results] == [200, 404], results
    assert public.peak == 2  # they were out together
    answered = {said.get(e.url, e.url): e for e in heard if isinstance(e, ResponseAnswered)}
    assert sorted(answered) == sorted([slow, fast]), heard
    assert (answered[slow].status, answered[fast].status) == (200, 404)
    # Each event times its own request: the fast one, sent after the slow one and answered
    # before it, took less (however long either took under load).
    assert answered[slow].seconds >= 0.35, answered
    assert answered[fast].seconds < answered[slow].seconds, answered
    assert answered[fast].time < answered[slow].time  # told as each answer came
    assert all(e.origin == public.url("") for e in answered.values())
