"""Named crawls: kept in the gate's store, resumed where they stopped, at least once."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import signal
import sys
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from robotgate import RobotGate
from robotgate.crawl import Frontier
from robotgate.crawl.results import CrawlResult, CrawlSummary
from robotgate.decision import Decision
from robotgate.robots.sitemap import SitemapEntry
from robotgate.store.base import Store, StoreError, crawl_store
from robotgate.store.crawl_state import CrawlCounts, CrawlState, NamedCrawlsUnsupported
from robotgate.store.memory import MemoryStore
from robotgate.store.sqlite import SQLiteStore
from testbed.children import child_env
from testbed.crawl_resume import kill_and_resume
from testbed.server import BenchServer, HostPlan
from tests.support.crawl_gate import LinkGate, Page
from tests.support.plain_store import PlainStore

AGENT = "NamedCrawlTest/1.0 (+https://example.com/bot)"


def tree(pages: int) -> Any:
    """Page i links to 2i+1 and 2i+2: every page but the first is a discovered link."""

    def handler(url: str, resp: Page) -> list[str]:
        i = int(url.rsplit("/p", 1)[1])
        return [f"http://h{j % 5}.example/p{j}" for j in (2 * i + 1, 2 * i + 2) if j < pages]

    return handler


async def run_until(gate: LinkGate, state: CrawlState, pages: int, stop_after: int | None,
                    concurrency: int = 4) -> CrawlSummary:
    """Crawl the tree from its root; stop once ``stop_after`` results came."""
    stop = asyncio.Event()
    results: list[CrawlResult] = []

    def on_result(record: CrawlResult) -> None:
        results.append(record)
        if stop_after is not None and len(results) >= stop_after:
            stop.set()

    frontier = Frontier(gate, ["http://h0.example/p0"], tree(pages), concurrency=concurrency,
                        scope="any", state=state, stop=stop, on_result=on_result)
    return await asyncio.wait_for(frontier.run(), 60)


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_a_stopped_named_crawl_resumes_and_fetches_nothing_done_again(
        tmp_path: Path, kind: str) -> None:
    pages = 200
    memory = MemoryStore()
    path = tmp_path / "crawl.sqlite3"

    def store() -> Store:
        return memory if kind == "memory" else SQLiteStore(path)

    gate = LinkGate(latency=0.002)
    first = store()
    summary = await run_until(gate, first.crawl_state("news"), pages, stop_after=50)
    assert summary.stopped and summary.pages >= 50
    counts = await first.crawl_state("news").counts()
    assert counts.in_flight == 0  # what was in flight went back to the queue
    assert counts.done == summary.pages and counts.queued > 0
    assert summary.interrupted + summary.pages == len(gate.fetched)
    await first.close()
    done_first = summary.pages

    again = store()
    summary = await run_until(gate, again.crawl_state("news"), pages, stop_after=None)
    counts = await again.crawl_state("news").counts()
    assert counts == CrawlCounts(done=pages)
    assert summary.done_before == done_first and summary.pages == pages - done_first
    assert summary.queued_before > 0 and summary.unaccounted() == 0
    assert summary.duplicates == 1  # the root, given again, is known
    assert sorted(set(gate.fetched)) == sorted(f"http://h{i % 5}.example/p{i}"
                                               for i in range(pages))
    # At least once: only what the stop cut short is fetched twice.
    assert len(gate.fetched) - pages <= 4
    await again.close()


@pytest.mark.soak  # a crawl killed and restarted: CI runs it every time
@pytest.mark.slow
async def test_three_kill_9s_of_a_600_page_sqlite_crawl_lose_nothing(tmp_path: Path) -> None:
    figures = await asyncio.to_thread(
        kill_and_resume, str(tmp_path / "crawl.sqlite3"), str(tmp_path / "requests.log"),
        pages=600, hosts=20, concurrency=8, kills=3, latency=0.02, seed=1)
    assert figures.fetched == 600 and figures.done == 600  # no link lost
    assert figures.most_duplicates_per_kill <= figures.concurrency
    assert figures.duplicates <= figures.kills * figures.concurrency


async def test_input_given_again_is_not_added_twice(tmp_path: Path) -> None:
    urls = [f"http://h.example/{i}" for i in range(10)]
    gate = LinkGate()
    async with SQLiteStore(tmp_path / "c.sqlite3") as store:
        state = store.crawl_state("list")
        first = await Frontier(gate, urls[:6], lambda u, r: None, state=state).run()
        second = await Frontier(gate, urls, lambda u, r: None,
                                state=store.crawl_state("list")).run()
        assert first.pages == 6 and second.pages == 4 and second.duplicates == 6
        assert second.done_before == 6
        assert sorted(gate.fetched) == sorted(urls)
        assert await store.crawl_names() == ["list"]
        assert await store.drop_crawl("list") and await store.crawl_names() == []
        assert not await store.drop_crawl("list")


async def test_a_store_without_named_crawls_says_so() -> None:
    store = PlainStore()
    assert store.crawls() is None
    with pytest.raises(NamedCrawlsUnsupported, match=r"PlainStore.*SQLiteStore") as caught:
        crawl_store(store)
    assert isinstance(caught.value, NotImplementedError)
    assert crawl_store(MemoryStore()) is not None
    async with RobotGate(AGENT, store=store) as gate:
        with pytest.raises(NamedCrawlsUnsupported):
            await gate.crawl(["http://127.0.0.1:9/"], lambda url, resp: None, name="news")
        assert await gate.crawl_status("news") is None
        assert not await gate.drop_crawl("news")
    assert store.robots == {}  # refused before any request


async def test_gate_crawl_with_a_name_keeps_and_reports_the_crawl(tmp_path: Path) -> None:
    async with BenchServer([HostPlan("allow", pages=20)] * 2) as srv:
        urls = [srv.url(h, f"/page/{p}") for h in range(2) for p in range(3)]

        async def handler(url: str, resp: Any) -> list[str]:
            await resp.read()
            # Each host's page 0 links to its page 5 (and again by another spelling).
            if url.endswith("/page/0"):
                return [url.replace("/page/0", "/page/5"), url.replace("/page/0", "/./page/5")]
            return []

        store = SQLiteStore(tmp_path / "gate.sqlite3")
        async with RobotGate(AGENT, delay=0, store=store) as gate:
            assert await gate.crawl_status("news") is None
            summary = await gate.crawl(urls, handler, concurrency=4, name="news")
            assert summary.pages == 8 and summary.discovered == 2 and summary.duplicates == 2
            assert await gate.crawl_status("news") == CrawlCounts(done=8)
        async with RobotGate(AGENT, delay=0, store=SQLiteStore(tmp_path / "gate.sqlite3")) as g:
            again = await g.crawl(urls, handler, name="news")
            assert again.pages == 0 and again.done_before == 8 and again.duplicates == 6
            assert await g.drop_crawl("news")
            assert await g.crawl_status("news") is None
        pages = sum(h.page_requests for h in srv.stats().values())
    assert pages == 8


@pytest.mark.slow
async def test_a_named_crawl_holds_a_window_of_its_queue_and_turns_nothing_away(
        tmp_path: Path) -> None:
    urls = [f"http://h{i % 500}.example/{i}" for i in range(5000)]
    links = [f"http://h0.example/link/{i}" for i in range(300)]
    async with SQLiteStore(tmp_path / "c.sqlite3") as store:
        window: list[int] = []
        frontier: Frontier | None = None

        def on_result(record: CrawlResult) -> None:
            assert frontier is not None
            window.append(frontier.queues.window + len(frontier.queues.hosts))
            if len(window) == 1000:
                stop.set()

        def handler(url: str, resp: Page) -> list[str]:
            return links if url == urls[0] else []

        stop = asyncio.Event()
        frontier = Frontier(LinkGate(), urls, handler, concurrency=8, max_queued=100,
                            max_seen=10, state=store.crawl_state("big"), stop=stop,
                            on_result=on_result)
        summary = await asyncio.wait_for(frontier.run(), 60)
        # The process held at most max_queued URLs (and their hosts) of the queue...
        assert max(window) <= 2 * 100
        # ...the rest waited in the file, and no link was turned away for room.
        counts = await store.crawl_state("big").counts()
        assert counts.total == 5300 and counts.done == summary.pages
        assert summary.dropped == 0 and summary.discovered == 300
        assert summary.unaccounted() == 0


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_twelve_spellings_give_three_requests_in_a_named_crawl_too(
        tmp_path: Path, kind: str) -> None:
    from tests.crawl.test_frontier_keys import SPELLINGS

    store: Store = MemoryStore() if kind == "memory" else SQLiteStore(tmp_path / "c.sqlite3")
    gate = LinkGate()
    async with store:
        summary = await Frontier(gate, SPELLINGS, lambda u, r: None,
                                 state=store.crawl_state("s")).run()
        assert len(gate.fetched) == 3 and summary.duplicates == 9
        assert await store.crawl_state("s").counts() == CrawlCounts(done=3)


async def test_a_page_of_many_links_is_written_in_chunks_and_all_kept(tmp_path: Path) -> None:
    n = 10_000  # over two chunks before the page's own outcome

    def handler(url: str, resp: Page) -> Any:
        return (f"http://h.example/{i}" for i in range(n)) if url == "http://h.example/" else None

    async with SQLiteStore(tmp_path / "c.sqlite3") as store:
        stop = asyncio.Event()
        frontier = Frontier(LinkGate(), ["http://h.example/"], handler, concurrency=16,
                            state=store.crawl_state("big"), stop=stop,
                            on_result=lambda r: stop.set())
        summary = await asyncio.wait_for(frontier.run(), 60)
        counts = await store.crawl_state("big").counts()
    assert summary.links == n and summary.discovered == n and summary.unaccounted() == 0
    assert counts.total == n + 1 and counts.done == summary.pages >= 1


# -- provenance kept: a resumed run asks each link as the run that found it did ------------

REFUSED = Decision(False, "a public page's pointer into a private address (the test's rule)",
                   outcome="redirect-refused")


class PointerRuleGate(LinkGate):
    """Judges pointers as the gate's private-network rule does, on literal addresses: a
    pointer of a public page (``""``, or a page on a public address) into a private
    address is refused.  ``asked`` keeps each URL's ``pointed_by``; a URL in ``hold``
    is never judged (its visit waits until the crawl is stopped)."""

    def __init__(self, latency: float = 0.0, hold: frozenset[str] = frozenset()) -> None:
        super().__init__(latency)
        self.asked: dict[str, str | None] = {}
        self.hold = hold

    def _private(self, url: str) -> bool:
        try:
            address = ipaddress.ip_address(urlsplit(url).hostname or "")
        except ValueError:
            return False  # a name: this fake resolves none
        return bool(self.is_private(address))

    def _refused(self, url: str, pointed_by: str | None) -> bool:
        if pointed_by is None:
            return False
        return (pointed_by == "" or not self._private(pointed_by)) and self._private(url)

    async def allowed(self, url: str, *, pointed_by: str | None = None) -> bool:
        if url in self.hold:
            await asyncio.Event().wait()
        self.asked[url] = pointed_by
        return not self._refused(url, pointed_by)

    async def decide(self, url: str, *, pointed_by: str | None = None) -> Decision:
        return REFUSED if self._refused(url, pointed_by) else Decision(True, "allowed")

    def fetch(self, url: str, *, pointed_by: str | None = None) -> Any:
        # Made before robots.txt is asked (its route read); a refused one is never sent.
        return _NeverSent() if self._refused(url, pointed_by) else super().fetch(url)


class _NeverSent:
    async def __aenter__(self) -> Page:
        raise AssertionError("a refused pointer was sent")

    async def __aexit__(self, *exc: object) -> None:
        return None


class _Answered:
    def __init__(self, page: Page) -> None:
        self.page = page

    async def __aenter__(self) -> Page:
        return self.page

    async def __aexit__(self, *exc: object) -> None:
        return None


def intranet(pages: int) -> Any:
    """A tree over five private hosts: page i links to 2i+1 and 2i+2."""

    def handler(url: str, resp: Page) -> list[str]:
        i = int(url.rsplit("/p", 1)[1])
        return [intranet_url(j) for j in (2 * i + 1, 2 * i + 2) if j < pages]

    return handler


def intranet_url(i: int) -> str:
    return f"http://10.0.0.{i % 5 + 1}/p{i}"


def named_state(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> Store:
    if kind == "memory":
        return MemoryStore()
    if kind == "sqlite":
        return SQLiteStore(tmp_path / "crawl.sqlite3")
    from robotgate.store.redis import RedisStore

    return RedisStore(request.getfixturevalue("redis_url"),
                      prefix=request.getfixturevalue("prefix"))


@pytest.mark.parametrize("kind", ["memory", "sqlite", "redis"])
async def test_a_stopped_intranet_crawl_resumes_and_fetches_every_page(
        kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    pages = 600
    store = named_state(kind, tmp_path, request)
    gate = PointerRuleGate(latency=0.001)
    skipped: list[CrawlResult] = []
    try:
        for stop_after in (150, 150, None):  # stopped twice, then to the end
            stop = asyncio.Event()
            seen: list[CrawlResult] = []

            def on_result(record: CrawlResult, stop: asyncio.Event = stop,
                          seen: list[CrawlResult] = seen, limit: int | None = stop_after) -> None:
                seen.append(record)
                if record.kind == "skipped":
                    skipped.append(record)
                if limit is not None and len(seen) >= limit:
                    stop.set()

            summary = await asyncio.wait_for(Frontier(
                gate, [intranet_url(0)], intranet(pages), concurrency=8, scope="any",
                state=store.crawl_state("intranet"), stop=stop, on_result=on_result).run(), 60)
            assert summary.unaccounted() == 0
        assert skipped == []
        assert set(gate.fetched) == {intranet_url(i) for i in range(pages)}
        assert await store.crawl_state("intranet").counts() == CrawlCounts(done=pages)
        # Every link asked as a pointer of its (private) page: no address looked up.
        assert {gate.asked[intranet_url(i)] for i in range(1, pages)} == {None}
    finally:
        await store.close()


@pytest.mark.parametrize("kind", ["memory", "sqlite", "redis"])
async def test_a_resumed_run_asks_a_link_and_a_sitemap_entry_as_their_pages_pointers(
        kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    public_page, sitemap = "http://93.184.216.34/", "http://93.184.216.34/sitemap.xml"
    named, entry, private = ("http://intranet.example/a", "http://10.1.1.1/entry",
                             "http://10.0.0.1/secret")
    store = named_state(kind, tmp_path, request)
    try:
        # The first run reads the public page and stops while the others are held.
        first = PointerRuleGate(hold=frozenset({named, entry}))
        stop = asyncio.Event()
        pages = {public_page: [named, private]}
        summary = await asyncio.wait_for(Frontier(
            first, [public_page, SitemapEntry(entry, sitemap=sitemap)],
            lambda u, r: pages.get(u, []), scope="any", state=store.crawl_state("mixed"),
            stop=stop, on_result=lambda r: stop.set() if r.url == public_page else None,
        ).run(), 60)
        assert summary.private_links == 1  # a literal private address: left out at once
        again = PointerRuleGate()
        found: list[CrawlResult] = []
        await asyncio.wait_for(Frontier(
            again, [], lambda u, r: [], scope="any", state=store.crawl_state("mixed"),
            on_result=found.append).run(), 60)
        # A name is asked as the public page's pointer (the gate looks both up), the
        # sitemap's entry as the sitemap's: refused, as in the run that found them.
        assert again.asked == {named: public_page, entry: sitemap}
        assert {r.url: r.kind for r in found} == {named: "page", entry: "skipped"}
        assert private not in again.fetched + first.fetched
    finally:
        await store.close()


async def test_a_link_of_a_private_page_that_redirected_to_a_public_one_is_a_public_pointer(
        ) -> None:
    # A page asked on a private address whose answer came from a public one: its links
    # are the public page's, judged so.
    start, landed = "http://10.0.0.1/", "http://93.184.216.34/landed"

    class Redirected(PointerRuleGate):
        def fetch(self, url: str, *, pointed_by: str | None = None) -> Any:
            if url != start:
                return super().fetch(url, pointed_by=pointed_by)
            self.fetched.append(url)
            return _Answered(Page(landed))  # the answer's URL, after redirects

    gate = Redirected()
    summary = await crawl_links(gate, start, ["http://10.0.0.2/inner", "http://93.184.216.35/"])
    assert summary.private_links == 1
    assert gate.fetched == [start, "http://93.184.216.35/"]
    assert gate.asked["http://93.184.216.35/"] == landed


async def crawl_links(gate: LinkGate, start: str, links: list[str]) -> CrawlSummary:
    return await asyncio.wait_for(Frontier(
        gate, [start], lambda u, r: links if u == start else [], scope="any").run(), 60)


# -- the same through the gate, on loopback: 127.0.0.2 and .3 are private (the default rule)

_INTRANET_CHILD = r"""
import asyncio, sys
from robotgate import RobotGate
from robotgate.store.sqlite import SQLiteStore
from tests.crawl.test_named_crawl import loopback_tree

path, pages, bases = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
url, handler = loopback_tree(bases, pages)

async def main():
    async with RobotGate("IntranetTest/1.0", delay=0, store=SQLiteStore(path)) as gate:
        await gate.crawl([url(0)], handler, name="intranet", scope="any", concurrency=4)

asyncio.run(main())
"""


def loopback_tree(bases: list[str], pages: int) -> tuple[Any, Any]:
    """The tree's URLs over ``bases``, and the handler giving each page's links."""

    def url(i: int) -> str:
        return f"{bases[i % len(bases)]}/p{i}"

    async def handler(page: str, resp: Any) -> list[str]:
        await resp.read()
        i = int(page.rsplit("/p", 1)[1])
        return [url(j) for j in (2 * i + 1, 2 * i + 2) if j < pages]

    return url, handler


@contextlib.asynccontextmanager
async def private_hosts(latency: float) -> AsyncIterator[tuple[list[str], Counter[str]]]:
    """Two servers on private loopback addresses; each page request counted by path."""
    from aiohttp import web
    from aiohttp.test_utils import unused_port

    asked: Counter[str] = Counter()

    async def page(request: web.Request) -> web.Response:
        asked[request.path] += 1
        await asyncio.sleep(latency)
        return web.Response(text="<p>page</p>", content_type="text/html")

    async def no_robots(request: web.Request) -> web.Response:
        return web.Response(status=404)

    app = web.Application()
    app.router.add_get("/robots.txt", no_robots)
    app.router.add_get("/{page}", page)
    runner = web.AppRunner(app)
    await runner.setup()
    bases = []
    try:
        for host in ("127.0.0.2", "127.0.0.3"):
            port = unused_port()
            await web.TCPSite(runner, host, port).start()
            bases.append(f"http://{host}:{port}")
        yield bases, asked
    finally:
        await runner.cleanup()


async def resume_through_a_gate(path: Path, bases: list[str], pages: int) -> CrawlSummary:
    url, handler = loopback_tree(bases, pages)
    async with RobotGate(AGENT, delay=0, store=SQLiteStore(path)) as gate:
        return await asyncio.wait_for(gate.crawl(
            [url(0)], handler, name="intranet", scope="any", concurrency=4), 120)


@pytest.mark.slow
async def test_an_intranet_crawl_stopped_then_resumed_through_the_gate_fetches_every_page(
        tmp_path: Path) -> None:
    pages, path = 400, tmp_path / "crawl.sqlite3"
    async with private_hosts(latency=0.002) as (bases, asked):
        url, handler = loopback_tree(bases, pages)
        stop = asyncio.Event()
        async with RobotGate(AGENT, delay=0, store=SQLiteStore(path)) as gate:
            first = await asyncio.wait_for(gate.crawl(
                [url(0)], handler, name="intranet", scope="any", concurrency=4, stop=stop,
                on_result=lambda r: stop.set() if len(asked) >= 60 else None), 120)
        assert first.stopped and first.skipped == 0 and first.pages < pages
        again = await resume_through_a_gate(path, bases, pages)
    assert again.skipped == 0 and again.errors == 0
    assert first.pages + again.pages == pages
    assert set(asked) == {f"/p{i}" for i in range(pages)}


@pytest.mark.soak  # a crawl killed and resumed: CI runs it every time
@pytest.mark.slow
async def test_an_intranet_crawl_killed_then_resumed_through_the_gate_fetches_every_page(
        tmp_path: Path) -> None:
    pages, path = 400, tmp_path / "crawl.sqlite3"
    async with private_hosts(latency=0.01) as (bases, asked):
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", _INTRANET_CHILD, str(path), str(pages), *bases,
            env=child_env())
        try:
            for _ in range(2400):  # until a quarter of the pages were asked for (60 s)
                if len(asked) >= pages // 4 or proc.returncode is not None:
                    break
                await asyncio.sleep(0.025)
        finally:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
        assert proc.returncode == -signal.SIGKILL and len(asked) < pages
        again = await resume_through_a_gate(path, bases, pages)
    assert again.skipped == 0 and again.errors == 0
    assert again.done_before + again.pages == pages
    assert set(asked) == {f"/p{i}" for i in range(pages)}


async def test_a_link_queued_before_pages_were_kept_is_judged_only_where_its_page_is_known(
        tmp_path: Path) -> None:
    from tests.store.test_sqlite_crawl import schema_6_file

    path = tmp_path / "old.sqlite3"
    schema_6_file(path)
    async with SQLiteStore(path) as store:
        # Under scope "any" its page could have been anywhere: the crawl ends saying so,
        # and the link stays queued (never skipped on a guess).
        gate = PointerRuleGate()
        with pytest.raises(StoreError, match=r"older robotgate.*scope='host'.*drop it"):
            await asyncio.wait_for(Frontier(gate, [], lambda u, r: [], scope="any",
                                            state=store.crawl_state("old")).run(), 60)
        counts = await store.crawl_state("old").counts()
        assert counts.skipped == 0 and counts.queued + counts.in_flight >= 2
        # Under scope "host" every link is on its page's host: asked as that page's.
        gate = PointerRuleGate()
        summary = await asyncio.wait_for(Frontier(
            gate, [], lambda u, r: [], state=store.crawl_state("old")).run(), 60)
        assert summary.skipped == 0
        assert await store.crawl_state("old").counts() == CrawlCounts(done=4)
    for link in ("http://h.example/a", "http://h.example/b"):
        assert gate.asked[link] == link
