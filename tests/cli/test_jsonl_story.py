"""The JSON lines tell a crawl's story: which server, when each request went and came
back, what it waited for and why, the interval owed, and the robots.txt requests."""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path

import pytest

from robotgate.cli import main
from robotgate.cli.report import record_json
from robotgate.crawl.results import CrawlResult
from robotgate.policy.pacing import Pacing
from robotgate.politeness.scheduler import Scheduler
from robotgate.records import HostState
from testbed.server import BenchServer, HostPlan
from tests.support.clock import WALL0, Clock

AGENT = "TestBot/1.0 (+https://example.com/bot)"
#: The lines give times to the millisecond.
MS = 0.0015


# -- why a turn waits: the scheduler says -----------------------------------------------


def scheduler(clock: Clock) -> Scheduler:
    return Scheduler(Pacing(delay=1.0), clock=clock, wall=clock.now_wall)


def test_the_scheduler_says_why_a_request_waits() -> None:
    clock = Clock()
    s = scheduler(clock)
    g = s.add("host:a", HostState("host:a"))
    assert s.why_wait(g, 1.0, 1.0) == (0.0, "")
    assert s.try_start(g, 1.0)
    s.done(g)
    assert s.why_wait(g, 1.0, 1.0) == (1.0, "delay")
    assert s.why_wait(g, 3.0, 1.0) == (3.0, "crawl-delay")  # robots.txt asks more than --delay
    # A host setting's own delay of 3 s is that server's least interval: "delay".
    assert s.why_wait(g, 3.0, 3.0) == (3.0, "delay")
    clock.advance(1.0)
    assert s.why_wait(g, 1.0, 1.0) == (0.0, "")
    s.answered(g, 429, None)  # no Retry-After: the interval widens
    wait, reason = s.why_wait(g, 1.0, 1.0)
    assert reason == "back-off" and wait > 1.0
    s.answered(g, 503, "30")
    assert s.why_wait(g, 1.0, 1.0) == (30.0, "retry-after")


def test_a_pause_the_store_kept_is_said_to_be_stored() -> None:
    clock = Clock()
    s = scheduler(clock)
    state = HostState("host:b")
    state.next_allowed = WALL0 + 0.5  # another run asked it just now
    g = s.add("host:b", state)
    assert s.why_wait(g, 1.0, 1.0) == (0.5, "stored")


def test_an_invalid_url_keeps_its_short_line() -> None:
    assert record_json(CrawlResult("nope", error="invalid URL 'nope'")) == {
        "url": "nope", "error": "invalid URL 'nope'"}


def test_a_line_says_its_wait_only_when_there_was_one() -> None:
    page = CrawlResult("http://a.example/", "host:a.example", status=200, started=10.0,
                       answered=10.25, waited=0.0004, wait_reason="delay", interval=1.0)
    line = record_json(page)
    assert line["key"] == "host:a.example" and line["waited"] == 0.0
    assert "wait_reason" not in line  # under a millisecond: no wait to speak of
    assert (line["started"], line["answered"], line["interval"]) == (10.0, 10.25, 1.0)
    page.waited = 0.75
    assert record_json(page)["wait_reason"] == "delay"


# -- a crawl over loopback ------------------------------------------------------------------


async def crawl(tmp_path: Path, plans: list[HostPlan], paths: list[str],
                *options: str) -> tuple[BenchServer, list[dict[str, object]]]:
    out = tmp_path / "crawl.jsonl"
    async with BenchServer(plans) as srv:
        urls = [srv.url(h, path) for path in paths for h in range(len(plans))]
        code = await asyncio.to_thread(main, [
            "fetch", "--agent", AGENT, "--store", "memory", "-q", "-o", str(out),
            *options, *urls])
    assert code == 0
    return srv, [json.loads(line) for line in out.read_text().splitlines()]


def by_host(lines: list[dict[str, object]], srv: BenchServer, h: int) -> list[dict[str, object]]:
    mine = [line for line in lines if line["key"] == f"host:{srv.hosts[h]}"]
    return sorted(mine, key=lambda line: float(line.get("started", 0.0)))  # type: ignore[arg-type]


@pytest.mark.slow
async def test_lines_carry_when_each_request_went_and_why_it_waited(tmp_path: Path) -> None:
    plans = [
        HostPlan("crawl_delay", crawl_delay=0.3),
        HostPlan("allow", page_status=429, page_status_times=1),
        HostPlan("503_retry", retry_after=1),
    ]
    srv, lines = await crawl(tmp_path, plans, [f"/page/{i}" for i in range(4)],
                             "--delay", "0.1")
    assert len(lines) == 13  # the 429's attempt has a line of its own

    # The Crawl-delay host: each page owed 0.3 s, and no start closer than that to the last
    # request (its robots.txt's included).
    slow = by_host(lines, srv, 0)
    assert [line["status"] for line in slow] == [200] * 4
    robots = slow[0]["robots_txt"]
    assert isinstance(robots, list) and len(robots) == 1
    assert robots[0]["url"] == srv.url(0, "/robots.txt") and robots[0]["status"] == 200
    starts = [float(robots[0]["started"])] + [float(line["started"]) for line in slow]
    assert all(b - a >= 0.3 - MS for a, b in itertools.pairwise(starts))
    for line in slow:
        assert line["interval"] == 0.3
        assert float(line["started"]) <= float(line["answered"])  # type: ignore[arg-type]
    assert [line["wait_reason"] for line in slow[1:]] == ["crawl-delay"] * 3
    assert all(float(line["waited"]) > 0.1 for line in slow[1:])  # type: ignore[arg-type]
    assert "robots_txt" not in slow[1]  # one robots.txt request, on the host's first line

    # The 429 host: its URL is asked again (--retries), after the back-off, and says so.
    throttled = by_host(lines, srv, 1)
    assert [line["status"] for line in throttled] == [429, 200, 200, 200, 200]
    assert throttled[0]["retried"] is True and throttled[0]["attempt"] == 1
    assert throttled[1]["url"] == throttled[0]["url"] and throttled[1]["attempt"] == 2
    assert throttled[1]["wait_reason"] == "back-off"
    assert float(throttled[1]["waited"]) > 0.1  # type: ignore[arg-type]
    assert all(line["interval"] == 0.1 for line in throttled)

    # robots.txt answered 503: every URL skipped, no page request; the 503 is on a line.
    down = [line for line in lines if line["key"] == f"host:{srv.hosts[2]}"]
    assert all(line["skipped"] == "disallowed" and "started" not in line for line in down)
    told = [r for line in down for r in line.get("robots_txt", [])]  # type: ignore[attr-defined]
    assert told and all(r["status"] == 503 for r in told)
    assert srv.host_stats(2).robots_requests == len(told)


async def test_a_robots_request_is_told_once_even_without_a_page(tmp_path: Path) -> None:
    # Whatever the outcome, each robots.txt request the server saw is on exactly one line.
    plans = [HostPlan("partial"), HostPlan("allow")]
    srv, lines = await crawl(tmp_path, plans, ["/private/1", "/page/1", "/private/2"],
                             "--delay", "0.05")
    for h in range(2):
        told = [r for line in by_host(lines, srv, h)
                for r in line.get("robots_txt", [])]  # type: ignore[attr-defined]
        assert len(told) == srv.host_stats(h).robots_requests == 1


@pytest.mark.parametrize("reason", ["delay", "crawl-delay", "back-off", "retry-after"])
def test_each_reason_is_written_as_the_scheduler_said_it(reason: str) -> None:
    page = CrawlResult("http://a.example/", "host:a.example", waited=2.0, wait_reason=reason)
    assert record_json(page)["wait_reason"] == reason


def test_requests_no_line_takes_are_held_for_a_bounded_number_of_servers() -> None:
    from robotgate.cli import robots_log

    log = robots_log.RobotsLog(lambda url: "host:" + url.split("/")[2])
    # robots.txt redirected to a server no line is about, origin after origin.
    for n in range(robots_log._SERVERS + 50):
        log.note(f"https://www{n}.example/robots.txt", 1.0, 1.1, 200, None)
    assert len(log._pending) == robots_log._SERVERS
    assert log.take("host:www0.example") == []  # the longest waiting went
    last = f"https://www{robots_log._SERVERS + 49}.example/robots.txt"
    assert [r["url"] for r in log.take(f"host:www{robots_log._SERVERS + 49}.example")] == [last]
