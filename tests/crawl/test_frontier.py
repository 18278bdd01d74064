"""The crawl frontier against a fake gate: no HTTP, real asyncio with small delays.

The fake gate keeps each host's next allowed time the way the real one does
and records how long a fetch had to wait for its host's turn: the frontier
hands a URL to a worker only when its host is ready, so that wait stays zero.
"""

from __future__ import annotations

import asyncio
import itertools
import sys
import time
from collections.abc import AsyncIterator, Iterable, Iterator
from types import TracebackType
from typing import Any

import pytest

from robotgate.crawl import (
    CrawlResult,
    CrawlSummary,
    Frontier,
    Handled,
    crawl,
)
from robotgate.decision import Decision
from robotgate.politeness.waits import ServerWait
from robotgate.urls import InvalidURL, split_origin
from testbed.crawl_gate import PlainAnswer, PlainCrawlGate

# Waits below this are scheduling noise, not a worker parked on a host.
SLACK = 0.02


class Disallowed(Exception):
    def __init__(self, url: str, decision: Decision) -> None:
        super().__init__(url)
        self.url = url
        self.decision = decision


FakeResponse = PlainAnswer


class _Fetch:
    def __init__(self, gate: FakeGate, url: str) -> None:
        self.gate = gate
        self.url = url

    async def __aenter__(self) -> FakeResponse:
        return await self.gate.request(self.url)

    async def __aexit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.gate.open -= 1


class FakeGate(PlainCrawlGate):
    """The gate's public API over a dict of hosts: pacing, robots.txt, statuses."""

    def __init__(
        self,
        delay: float = 0.05,
        latency: float = 0.002,
        robots_counts: bool = False,
        statuses: dict[str, list[int]] | None = None,
        unreachable: Iterable[str] = (),
        fail: Iterable[str] = (),
    ) -> None:
        self.delay = delay
        self.latency = latency
        self.robots_counts = robots_counts
        self.statuses = statuses or {}
        self.unreachable = set(unreachable)
        self.fail = set(fail)
        self.max_per_host = 1
        self.next_allowed: dict[str, float] = {}
        self.robots: dict[str, int] = {}
        self.starts: dict[str, list[float]] = {}
        self.fetched: list[str] = []
        self.waited = 0.0  # summed time fetches spent waiting for their host's turn
        self.open = 0
        self.max_open = 0

    def pace_key(self, url: str) -> str:
        return split_origin(url)[0]

    def host_wait(self, url: str) -> float:
        due = self.next_allowed.get(self.pace_key(url), 0.0)
        return max(0.0, due - time.monotonic())

    def server_wait(self, url: str) -> ServerWait:
        return ServerWait(self.host_wait(url), "", None)

    async def allowed(self, url: str) -> bool:
        key = self.pace_key(url)
        if key not in self.robots:
            self.robots[key] = 1
            await asyncio.sleep(self.latency)
            if self.robots_counts:  # the robots.txt request counts as one to the host
                self.next_allowed[key] = time.monotonic() + self.delay
        return (await self.decide(url)).allowed

    async def decide(self, url: str) -> Decision:
        key = self.pace_key(url)
        if key in self.unreachable:
            return Decision(False, f"robots.txt of {key} answered 503", outcome="unreachable")
        if "/private/" in url:
            return Decision(False, "disallowed by 'Disallow: /private/' (line 2)")
        return Decision(True, "allowed")

    def fetch(self, url: str) -> _Fetch:
        return _Fetch(self, url)

    async def request(self, url: str) -> FakeResponse:
        if "/private/" in url:
            raise Disallowed(url, await self.decide(url))
        key = self.pace_key(url)
        wait = self.host_wait(url)
        if wait > 0:
            self.waited += wait
            await asyncio.sleep(wait)
        now = time.monotonic()
        self.starts.setdefault(key, []).append(now)
        self.next_allowed[key] = now + self.delay
        self.open += 1
        self.max_open = max(self.max_open, self.open)
        if url in self.fail:
            self.open -= 1
            raise ConnectionResetError("connection reset by peer")
        await asyncio.sleep(self.latency)
        self.fetched.append(url)
        statuses = self.statuses.get(url)
        status = statuses.pop(0) if statuses else 200
        return FakeResponse(url, status)


def urls_for(hosts: int, pages: int) -> list[str]:
    """Sorted by host: the order that blocks a naive worker pool at the head."""
    return [f"http://h{h}.example/page/{p}" for h in range(hosts) for p in range(pages)]


async def noop(url: str, resp: FakeResponse) -> None:
    return None


async def test_every_url_once_and_a_summary_per_host() -> None:
    gate = FakeGate(delay=0.03)
    urls = [*urls_for(3, 4), "http://h0.example/private/1", "nope", "ftp://h1.example/x"]
    results: list[CrawlResult] = []
    summary = await crawl(gate, urls, noop, concurrency=4, on_result=results.append)
    assert sorted(r.url for r in results) == sorted(urls)
    assert sorted(gate.fetched) == sorted(urls_for(3, 4))
    assert (summary.pages, summary.skipped, summary.errors, summary.invalid) == (12, 1, 0, 2)
    assert summary.done == 15 and summary.read == 15 and summary.elapsed > 0
    assert summary.queued == 0 and summary.in_flight == 0 and summary.hosts_queued == 0
    h0 = summary.hosts["http://h0.example"]
    assert (h0.pages, h0.skipped, h0.errors, h0.starts) == (4, 1, 0, 4)
    interval = h0.mean_interval()
    assert interval is not None and interval >= 0.03
    by_url = {r.url: r for r in results}
    assert by_url["http://h0.example/page/0"].status == 200
    skipped = by_url["http://h0.example/private/1"]
    assert skipped.kind == "skipped" and "Disallow: /private/" in skipped.decision.reason
    assert by_url["nope"].kind == "invalid" and "scheme" in str(by_url["nope"].error)
    assert summary.skipped_origins == {}  # a rule, not the origin's robots.txt outcome


@pytest.mark.slow
async def test_workers_never_wait_on_a_host_that_is_not_ready() -> None:
    # 2 workers, 4 hosts x 5 pages sorted by host: a naive pool would park both
    # workers on host 0's pacing; the frontier spreads them over the hosts.
    gate = FakeGate(delay=0.08)
    summary = await crawl(gate, urls_for(4, 5), noop, concurrency=2)
    assert summary.pages == 20
    assert gate.waited < SLACK
    for starts in gate.starts.values():
        gaps = [b - a for a, b in itertools.pairwise(starts)]
        assert min(gaps) >= 0.08
    # Hang guard only (the politeness bound is 4 intervals per host; gate.waited above is
    # what shows no worker parked on a host).
    assert summary.elapsed < 60


async def test_a_robots_txt_request_that_counts_sends_the_worker_elsewhere() -> None:
    gate = FakeGate(delay=0.06, robots_counts=True)
    summary = await crawl(gate, urls_for(3, 2), noop, concurrency=3)
    assert summary.pages == 6 and gate.waited < SLACK
    assert gate.robots == {f"http://h{h}.example": 1 for h in range(3)}


async def test_never_more_handlers_than_concurrency() -> None:
    gate = FakeGate(delay=0.0)
    running = 0
    peak = 0

    async def handler(url: str, resp: FakeResponse) -> None:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.005)
        running -= 1

    summary = await crawl(gate, urls_for(10, 3), handler, concurrency=3)
    assert summary.pages == 30 and peak == 3
    assert gate.max_open <= 3


async def test_links_a_handler_returns_are_crawled_once() -> None:
    gate = FakeGate(delay=0.0)
    site = {
        "/page/0": ["/page/1", "/page/2", "/page/1#frag", "/private/9"],
        "/page/1": ["/page/0", "/page/2", "/page/3"],
        "/page/2": ["http://other.example/page/0"],
    }

    async def handler(url: str, resp: FakeResponse) -> list[str]:
        origin, path = split_origin(url)
        links = site.get(path, []) if origin == "http://h.example" else []
        return [link if "://" in link else origin + link for link in links]

    results: list[CrawlResult] = []
    summary = await crawl(gate, ["http://h.example/page/0"], handler, on_result=results.append,
                          scope="any")
    fetched = sorted(gate.fetched)
    assert fetched == sorted(
        ["http://h.example/page/0", "http://h.example/page/1", "http://h.example/page/2",
         "http://h.example/page/3", "http://other.example/page/0"]
    )
    assert summary.discovered == 5 and summary.skipped == 1 and summary.pages == 5
    assert all(r.discovered for r in results if r.url != "http://h.example/page/0")


async def test_handled_carries_bytes_and_info() -> None:
    async def handler(url: str, resp: FakeResponse) -> Handled:
        return Handled(links=(), bytes=123, info={"saved": "x.html"})

    results: list[CrawlResult] = []
    await crawl(FakeGate(), ["http://h.example/a"], handler, on_result=results.append)
    (record,) = results
    assert record.bytes == 123 and record.info == {"saved": "x.html"}


async def test_errors_are_recorded_and_the_crawl_goes_on() -> None:
    gate = FakeGate(delay=0.0, fail={"http://h.example/boom"})

    async def handler(url: str, resp: FakeResponse) -> None:
        if url.endswith("/bad-handler"):
            raise KeyError("no such thing")

    urls = ["http://h.example/boom", "http://h.example/bad-handler", "http://h.example/ok",
            "http://[bad/x", 42]
    results: list[CrawlResult] = []
    summary = await crawl(gate, urls, handler, on_result=results.append)  # type: ignore[arg-type]
    by_url = {r.url: r for r in results}
    assert by_url["http://h.example/boom"].error == (
        "ConnectionResetError: connection reset by peer"
    )
    handler_error = by_url["http://h.example/bad-handler"]
    assert handler_error.status == 200 and "KeyError" in str(handler_error.error)
    assert by_url["http://h.example/ok"].kind == "page"
    assert by_url["http://[bad/x"].kind == "invalid" and by_url["42"].kind == "invalid"
    assert (summary.errors, summary.invalid, summary.pages) == (2, 2, 1)


async def test_a_page_that_takes_too_long_times_out() -> None:
    async def handler(url: str, resp: FakeResponse) -> None:
        await asyncio.sleep(10 if url.endswith("slow") else 0)

    results: list[CrawlResult] = []
    began = time.monotonic()
    await crawl(FakeGate(delay=0), ["http://h.example/slow", "http://h.example/fast"], handler,
                timeout=0.1, on_result=results.append)
    assert time.monotonic() - began < 5
    by_url = {r.url: r for r in results}
    assert by_url["http://h.example/slow"].error == "timed out: page not done within 0.1s"
    assert by_url["http://h.example/fast"].kind == "page"


async def test_origins_ruled_out_by_their_robots_txt_are_grouped() -> None:
    gate = FakeGate(unreachable={"http://h1.example", "http://h2.example"})
    summary = await crawl(gate, urls_for(3, 2), noop)
    # Unreachable, not refused by a rule: counted apart, with what went wrong.
    assert (summary.unreachable, summary.skipped, summary.pages) == (4, 0, 2)
    assert summary.skipped_by_reason() == {
        "robots.txt of http://h1.example answered 503": ["http://h1.example"],
        "robots.txt of http://h2.example answered 503": ["http://h2.example"],
    }


@pytest.mark.slow
async def test_input_is_consumed_lazily_with_back_pressure() -> None:
    gate = FakeGate(delay=0.0)
    taken = 0
    done = 0
    ahead = 0

    async def source() -> AsyncIterator[str]:
        nonlocal taken, ahead
        for url in urls_for(20, 10):
            taken += 1
            ahead = max(ahead, taken - done)
            yield url

    def count(record: CrawlResult) -> None:
        nonlocal done
        done += 1

    summary = await crawl(gate, source(), noop, concurrency=4, max_queued=10, on_result=count)
    assert summary.pages == 200
    # Queued URLs + URLs in flight + the one being offered.
    assert ahead <= 10 + 4 + 1


async def test_a_plain_generator_is_consumed_lazily_too() -> None:
    taken = 0

    def source() -> Iterable[str]:
        nonlocal taken
        for url in urls_for(1, 50):
            taken += 1
            yield url

    stop = asyncio.Event()
    results: list[CrawlResult] = []

    def on_result(record: CrawlResult) -> None:
        results.append(record)
        if len(results) == 3:
            stop.set()

    summary = await crawl(FakeGate(delay=0.01), source(), noop, max_queued=5, stop=stop,
                          on_result=on_result)
    assert summary.stopped and 3 <= len(results) < 50
    assert taken <= len(results) + 5 + 2


async def test_429_is_retried_after_the_back_off_and_the_handler_sees_the_answer() -> None:
    url = "http://h.example/a"
    gate = FakeGate(delay=0.0, statuses={url: [429, 200]})
    seen: list[int] = []

    async def handler(u: str, resp: FakeResponse) -> None:
        seen.append(resp.status)

    results: list[CrawlResult] = []
    summary = await crawl(gate, [url], handler, retries=1, on_result=results.append)
    assert seen == [200] and summary.retried == 1
    # Each attempt has its record; only the last is the URL's outcome.
    first, record = results
    assert (first.kind, first.status, first.attempts) == ("retried", 429, 1)
    assert record.status == 200 and record.attempts == 2 and record.kind == "page"
    assert summary.pages == 1 and summary.errors == 0
    # Without retries the 429 is the answer: the URL failed, it was not fetched.
    gate = FakeGate(delay=0.0, statuses={url: [429, 200]})
    summary = await crawl(gate, [url], handler, retries=0)
    assert (summary.pages, summary.failed) == (0, 1) and seen == [200, 429]


async def test_an_exception_from_on_result_ends_the_crawl() -> None:
    def on_result(record: CrawlResult) -> None:
        raise BrokenPipeError("reader left")

    with pytest.raises(BrokenPipeError):
        await crawl(FakeGate(delay=0.01), urls_for(2, 5), noop, on_result=on_result)


async def test_usage_is_recorded_as_the_gate_says() -> None:
    class UsageGate(FakeGate):
        def usage(self, url: str, headers: Any = None) -> dict[str, bool]:
            return {"train-ai": False}

    results: list[CrawlResult] = []
    await crawl(UsageGate(), ["http://h.example/a"], noop, on_result=results.append)
    assert results[0].usage == {"train-ai": False}


async def test_discovered_links_beyond_max_seen_are_dropped() -> None:
    async def handler(url: str, resp: FakeResponse) -> list[str]:
        return [f"http://h.example/page/{i}" for i in range(10)]

    summary = await crawl(FakeGate(delay=0), ["http://h.example/"], handler, max_seen=4)
    assert summary.pages == 4 and summary.dropped > 0


async def test_an_endless_iterable_of_links_is_read_only_up_to_max_links() -> None:
    read = []

    def endless() -> Iterator[str]:
        for i in itertools.count():
            read.append(i)
            if i > 10_000:  # would go on for ever: a failure, not a hang
                raise AssertionError("read far past the bounds")
            yield f"http://h.example/page/{i}"

    async def handler(url: str, resp: FakeResponse) -> Iterator[str] | None:
        return endless() if url == "http://h.example/" else None

    summary = await asyncio.wait_for(
        crawl(FakeGate(delay=0), ["http://h.example/"], handler, max_seen=50, max_queued=20,
              max_links=60), 30)
    assert len(read) == 61  # max_links links, and one more to see the page was cut
    assert summary.links == 60 and summary.links_cut == 1
    assert summary.pages == 21 and summary.dropped == 40  # every link turned away counted
    assert summary.unaccounted() == 0


async def test_an_on_result_error_for_a_discovered_link_ends_the_crawl() -> None:
    # Raised for the record of a link the handler returned (an invalid one), not
    # only for a page's record: the crawl ends, and raises it.
    async def handler(url: str, resp: FakeResponse) -> list[str]:
        return ["http://[::1/file"]  # no valid URL

    def on_result(record: CrawlResult) -> None:
        if record.kind == "invalid":
            raise BrokenPipeError("reader left")

    with pytest.raises(BrokenPipeError):
        await crawl(FakeGate(delay=0), ["http://h.example/"], handler, on_result=on_result)


@pytest.mark.skipif(sys.version_info < (3, 11), reason="needs Task.cancelling (Python 3.11)")
async def test_a_handler_that_raises_cancelled_error_is_recorded() -> None:
    # A task of the handler's own was cancelled and it let that out: the URL is
    # recorded as an error, not lost (the crawl itself is not being cancelled).
    async def handler(url: str, resp: FakeResponse) -> None:
        raise asyncio.CancelledError

    results: list[CrawlResult] = []
    summary = await crawl(FakeGate(), ["http://h.example/a"], handler, on_result=results.append)
    assert summary.errors == 1 and [r.kind for r in results] == ["error"]
    assert "CancelledError" in str(results[0].error)


async def test_a_live_summary_and_a_string_of_links_is_an_error() -> None:
    async def handler(url: str, resp: FakeResponse) -> str:
        return "http://h.example/oops"

    live = CrawlSummary()
    frontier = Frontier(FakeGate(), ["http://h.example/a"], handler, summary=live)
    assert await frontier.run() is live
    assert live.errors == 1 and live.input_done


async def test_per_host_cap_follows_the_gate() -> None:
    gate = FakeGate(delay=0.0, latency=0.01)
    gate.max_per_host = 2
    summary = await crawl(gate, urls_for(1, 8), noop, concurrency=8)
    assert summary.pages == 8 and gate.max_open == 2


def test_bad_arguments() -> None:
    async def go(**kw: Any) -> None:
        await crawl(FakeGate(), [], noop, **kw)

    with pytest.raises(ValueError, match="concurrency"):
        asyncio.run(go(concurrency=0))
    with pytest.raises(ValueError, match="timeout"):
        asyncio.run(go(timeout=0))
    assert issubclass(InvalidURL, ValueError)


async def test_a_crawl_on_a_closed_gate_ends_at_once_whatever_the_wait() -> None:
    from robotgate import GateClosed, MemoryStore, RobotGate, RobotsEntry
    from robotgate.records import HostState, Outcome

    store = MemoryStore()
    now = time.time()
    await store.save_robots(RobotsEntry("http://127.0.0.1:9", Outcome.OK, now, now + 3600, 200,
                                        b"User-agent: *\nAllow: /\n", "text/plain"))
    await store.save_host(HostState("host:127.0.0.1", next_allowed=now + 20))
    gate = RobotGate("T/1", store=store, delay=0)
    await gate.open()
    assert (await gate.decide("http://127.0.0.1:9/x")).allowed
    assert gate.host_wait("http://127.0.0.1:9/x") > 15
    await gate.close()

    async def handler(url: str, resp: Any) -> None:
        raise AssertionError("nothing is fetched from a closed gate")

    with pytest.raises(GateClosed):
        await asyncio.wait_for(gate.crawl(["http://127.0.0.1:9/x"], handler), 5)


class LoopTurns:
    """Counts the event loop's turns while the block runs (a callback put back each turn)."""

    def __init__(self) -> None:
        self.count = 0
        self._ticking = False

    def _tick(self) -> None:
        self.count += 1
        if self._ticking:
            asyncio.get_running_loop().call_soon(self._tick)

    def __enter__(self) -> LoopTurns:
        self._ticking = True
        asyncio.get_running_loop().call_soon(self._tick)
        return self

    def __exit__(self, *exc: object) -> None:
        self._ticking = False


async def test_the_scheduler_gives_the_loop_a_turn_between_two_loads(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A page of 400,000 links queues them all at once: the scheduler then moved them
    into the host queues a thousand at a time up to its window (10,000 politeness keys)
    in one step, holding the loop.  Counted in loop turns: no two loads share one."""
    turns = LoopTurns()
    loads: list[int] = []
    real = Frontier._load

    async def load(self: Frontier[Any]) -> None:
        loads.append(turns.count)
        await real(self)

    monkeypatch.setattr(Frontier, "_load", load)
    pages = [f"http://h.example/p{i}" for i in range(6000)]

    async def handler(url: str, resp: FakeResponse) -> list[str]:
        return pages if url.endswith("/seed") else []

    stop = asyncio.Event()
    seen = 0

    def on_result(record: CrawlResult) -> None:
        nonlocal seen
        seen += 1
        if seen >= 3:
            stop.set()

    with turns:
        await crawl(FakeGate(delay=0.0, latency=0.0), ["http://h.example/seed"], handler,
                    concurrency=1, stop=stop, on_result=on_result)
    assert len(loads) >= 4
    assert len(set(loads)) == len(loads), loads


async def test_a_page_s_links_are_judged_a_bounded_number_a_loop_turn(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Each link's key and host cost tens of microseconds: 4,096 of them between two
    turns held the loop a tenth of a second (more under load).  Counted in loop turns."""
    from collections import Counter

    from robotgate.crawl.discovery import Discovery

    turns = LoopTurns()
    judged: Counter[int] = Counter()
    real = Discovery._judge_one

    def judge_one(self: Discovery, *args: Any) -> None:
        judged[turns.count] += 1
        real(self, *args)

    monkeypatch.setattr(Discovery, "_judge_one", judge_one)
    pages = [f"http://h.example/p{i}" for i in range(5000)]

    async def handler(url: str, resp: FakeResponse) -> list[str]:
        return pages if url.endswith("/seed") else []

    stop = asyncio.Event()
    with turns:
        await crawl(FakeGate(delay=0.0, latency=0.0), ["http://h.example/seed"], handler,
                    concurrency=1, stop=stop, on_result=lambda record: stop.set())
    assert sum(judged.values()) == len(pages)  # the seeds go in another way
    assert max(judged.values()) <= 1024, judged.most_common(3)  # discovery.LINKS_A_TURN
