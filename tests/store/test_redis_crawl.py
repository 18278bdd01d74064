"""A named crawl in Redis: shared by the workers that crawl it, one worker per server."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import pytest

from robotgate.crawl import CrawlSummary, Frontier
from robotgate.policy.provenance import pointer_of
from robotgate.records import HostState
from robotgate.store.base import StoreError
from robotgate.store.crawl_state import Entry
from robotgate.store.leases import Leases
from robotgate.store.redis import FORMAT_VERSION, RedisStore
from robotgate.store.redis.crawl import RedisCrawlState, server_of
from robotgate.store.redis.crawl_scripts import CRAWL_SYNC, CRAWL_WRITE
from tests.support.crawl_gate import LinkGate, Page


def site(hosts: int, pages: int) -> Any:
    """Page 0 of each host links to all its pages, and to page 0 of the next host."""

    def handler(url: str, resp: Page) -> list[str]:
        host, page = url.removeprefix("http://").split("/p")
        h = int(host.removeprefix("h").removesuffix(".example"))
        if page != "0":
            return []
        return [f"http://h{h}.example/p{p}" for p in range(1, pages)] + [
            f"http://h{(h + 1) % hosts}.example/p0"]

    return handler


def entry(url: str, depth: int = 0) -> Entry:
    return Entry(url, url, depth, discovered=depth > 0)


async def crawl_with(store: RedisStore, gate: LinkGate, seeds: list[str], hosts: int,
                     pages: int, **options: Any) -> CrawlSummary:
    state = RedisCrawlState(store, "fleet", max_servers=6)
    frontier = Frontier(gate, seeds, site(hosts, pages), concurrency=8, scope="any",
                        state=state, **options)
    return await asyncio.wait_for(frontier.run(), 60)


async def test_four_workers_share_one_crawl_and_fetch_every_url_once(
        redis_url: str, prefix: str, raw: Any) -> None:
    hosts, pages = 20, 10
    stores = [RedisStore(redis_url, prefix=prefix) for _ in range(4)]
    gates = [LinkGate(latency=0.002) for _ in range(4)]
    # Each worker seeds its own part of the input (one seeds nothing).
    seeds = [[f"http://h{h}.example/p0" for h in range(w, hosts, 3)] for w in range(3)] + [[]]
    try:
        summaries = await asyncio.gather(*(
            crawl_with(store, gate, s, hosts, pages)
            for store, gate, s in zip(stores, gates, seeds, strict=True)))
        fetched = Counter(url for gate in gates for url in gate.fetched)
        assert len(fetched) == hosts * pages
        assert set(fetched.values()) == {1}  # each URL once, fleet-wide
        # Each server was crawled by one worker (no lease lapsed).
        by_server: dict[str, set[int]] = {}
        for w, gate in enumerate(gates):
            for url in gate.fetched:
                by_server.setdefault(server_of(url), set()).add(w)
        assert all(len(workers) == 1 for workers in by_server.values())
        assert sum(1 for g in gates if g.fetched) >= 2  # the work was shared
        assert sum(s.pages for s in summaries) == hosts * pages
        counts = await stores[0].crawl_state("fleet").counts()
        assert (counts.done, counts.queued, counts.in_flight) == (hosts * pages, 0, 0)
        assert await stores[1].crawl_names() == ["fleet"]
        # The crawl's keys are additive: the prefix's format is unchanged.
        assert await raw.get(f"{prefix}:meta") == f"robotgate/{FORMAT_VERSION}".encode()
    finally:
        for store in stores:
            await store.close()


async def test_a_dead_workers_servers_are_taken_over_when_its_lease_lapses(
        redis_url: str, prefix: str) -> None:
    dead = RedisStore(redis_url, prefix=prefix)
    live = RedisStore(redis_url, prefix=prefix)
    try:
        first = RedisCrawlState(dead, "c", lease=0.5)
        await first.open()
        urls = [f"http://a.example/{i}" for i in range(5)] + ["http://b.example/0"]
        assert (await first.add([entry(u) for u in urls])).new == 6
        taken = await first.take(100)
        assert sorted(e.url for e in taken) == sorted(urls)
        await first.finish(taken[0], 2, [])
        # The worker dies: no renewal, no release.
        assert first._renewer is not None
        first._renewer.cancel()
        second = RedisCrawlState(live, "c", lease=0.5)
        await second.open()
        assert await second.take(100) == []  # leased to the first
        assert second.pending == 5  # in flight with the other worker: waited for
        await asyncio.sleep(0.6)
        back = await second.take(100)
        assert sorted(e.url for e in back) == sorted(e.url for e in taken[1:])
        assert second.reaped == 5
        # The first worker's late answer for a page taken over is not counted twice.
        await first.finish(taken[1], 2, [])
        for e in back:
            await second.finish(e, 2, [])
        counts = await second.counts()
        assert (counts.done, counts.queued, counts.in_flight) == (6, 0, 0)
        await second.close()
    finally:
        await dead.close()
        await live.close()


async def test_links_written_with_the_page_reach_the_leasing_worker(
        redis_url: str, prefix: str) -> None:
    store = RedisStore(redis_url, prefix=prefix)
    try:
        state = store.crawl_state("links")
        await state.open()
        await state.add([entry("http://a.example/0")])
        [page] = await state.take(10)
        added = await state.finish(page, 2, [entry("http://a.example/1", 1),
                                             entry("http://a.example/0", 1),
                                             entry("http://b.example/0", 1)])
        assert (added.new, added.known) == (2, 1)
        # The write took them for this worker in the same request (it wanted 10).
        assert (state.pending, state.ready) == (0, 2)
        before = store.round_trips
        more = await state.take(10)
        assert store.round_trips == before
        assert sorted((e.url, e.depth, e.discovered) for e in more) == [
            ("http://a.example/1", 1, True), ("http://b.example/0", 1, True)]
        await state.release(more)
        counts = await state.counts()
        assert (counts.queued, counts.in_flight, counts.done) == (2, 0, 1)
        await state.close()
        assert await store.drop_crawl("links")
        assert await store.crawl_names() == []
        assert not await store.drop_crawl("links")
    finally:
        await store.close()


def record_calls(store: RedisStore, monkeypatch: pytest.MonkeyPatch
                 ) -> tuple[list[str], list[list[str]]]:
    """The crawl scripts ``store`` runs: those sent alone, and those sent together."""
    names = {CRAWL_SYNC.sha: "take", CRAWL_WRITE.sha: "write"}
    alone: list[str] = []
    together: list[list[str]] = []
    run_script, run_scripts = store.run_script, getattr(store, "run_scripts", None)

    async def one(script: Any, keys: list[str], args: list[Any]) -> Any:
        alone.append(names.get(script.sha, "other"))
        return await run_script(script, keys, args)

    async def many(calls: list[Any]) -> Any:
        together.append([names.get(script.sha, "other") for script, _, _ in calls])
        assert run_scripts is not None
        return await run_scripts(calls)

    monkeypatch.setattr(store, "run_script", one)
    monkeypatch.setattr(store, "run_scripts", many, raising=False)
    return alone, together


async def test_each_write_takes_the_next_urls_so_a_crawl_asks_for_urls_once(
        redis_url: str, prefix: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # 6 servers x 8 pages, page 0 of each linking to its other pages and the next
    # server's page 0: before, each page 0's write and each server's last one were
    # followed by a take of their own (at least 6).
    hosts, pages = 6, 8
    store = RedisStore(redis_url, prefix=prefix)
    alone, together = record_calls(store, monkeypatch)
    try:
        summary = await crawl_with(store, LinkGate(latency=0.005), ["http://h0.example/p0"],
                                   hosts, pages)
        assert summary.pages == hosts * pages
        # No take goes alone: the input's write takes the first URLs along (the
        # frontier said how many its first take asks for), and every write after it
        # the next (a crawl this short renews no lease on its own, and never finds
        # nothing to do for 0.25 s).
        assert alone.count("take") == 0, alone
        assert all(calls == ["write", "take"] for calls in together), together
    finally:
        await store.close()


async def test_a_write_carries_the_host_states_saved_before_it(
        redis_url: str, prefix: str) -> None:
    # No timed host-state write within the test (flush_interval 60 s).
    store = RedisStore(redis_url, prefix=prefix, flush_interval=60.0)
    other = RedisStore(redis_url, prefix=prefix)
    try:
        state = store.crawl_state("hosts")
        await state.open()
        await state.add([entry("http://a.example/0")])
        [page] = await state.take(10)
        await store.save_host(HostState("host:b.example"))
        await store.flush()  # the script is loaded
        await store.save_host(HostState("host:a.example", visits=3, last_visit=1.0))
        before = store.round_trips
        await state.finish(page, 2, [])
        assert store.round_trips - before == 1  # the page, the take, the host state
        found = await other.load_host("host:a.example")
        assert found is not None and found.visits == 3
        await state.close()
    finally:
        await store.close()
        await other.close()


async def _forget_crawls(raw: Any, prefix: str) -> None:
    """Delete the prefix's crawl keys, as a Redis restarted empty leaves them."""
    async for key in raw.scan_iter(match=f"{prefix}:crawl:*"):
        await raw.delete(key)


async def test_a_crawl_lost_by_redis_is_said(redis_url: str, prefix: str, raw: Any) -> None:
    store = RedisStore(redis_url, prefix=prefix)
    try:
        state = store.crawl_state("gone")
        await state.open()
        await state.add([entry("http://a.example/0")])
        await _forget_crawls(raw, prefix)
        with pytest.raises(StoreError, match="gone from Redis"):
            await state.take(10)
        assert isinstance(state, RedisCrawlState) and state.gone  # renews no more
        await state.close()
    finally:
        await store.close()


async def test_a_crawl_made_again_after_a_loss_is_not_taken_for_the_lost_one(
        redis_url: str, prefix: str, raw: Any) -> None:
    old, new = RedisStore(redis_url, prefix=prefix), RedisStore(redis_url, prefix=prefix)
    try:
        before = old.crawl_state("again")
        await before.open()
        await before.add([entry("http://a.example/0")])
        await _forget_crawls(raw, prefix)
        # Another worker starts the crawl again from its input before this one looks.
        again = new.crawl_state("again")
        await again.open()
        await again.add([entry("http://b.example/0")])
        with pytest.raises(StoreError, match="gone from Redis"):
            await before.take(10)
        assert (await again.counts()).queued == 1  # looking made nothing, took nothing
        assert (await new.crawl_state("none").counts()).total == 0
        assert await new.crawl_names() == ["again"]
        await before.close()
        await again.close()
    finally:
        await old.close()
        await new.close()


async def test_after_a_loss_a_server_first_leased_waits_out_the_lost_crawls_leases(
        redis_url: str, prefix: str, raw: Any) -> None:
    store = RedisStore(redis_url, prefix=prefix)
    leases = Leases()
    try:
        lost = RedisCrawlState(store, "l", leases=leases, lease=4.0)
        await lost.open()
        await lost.add([entry("http://a.example/0")])
        [page] = await lost.take(10)
        assert page.url == "http://a.example/0"
        # A server never leased before: nobody asked it, it may be asked at once.
        first = leases.get("a.example", 0.0)
        assert first is not None and first.free_at == float("-inf")
        async for key in raw.scan_iter(match=f"{prefix}:crawl:*"):
            await raw.delete(key)
        with pytest.raises(StoreError, match="gone from Redis"):
            await lost.finish(page, 2, [])
        assert store.unrecorded_until > 0
        await lost.close()
        again = RedisCrawlState(store, "l", leases=leases, lease=4.0)
        await again.open()
        await again.add([entry("http://b.example/0")])
        await again.take(10)
        now = asyncio.get_running_loop().time()
        # Whoever held it in the lost crawl may ask it until its lease ends.
        lease = leases.get("b.example", now)
        assert lease is not None and now + 3.5 < lease.free_at <= now + 4.0
        await again.close()
    finally:
        await store.close()


async def test_the_servers_a_worker_leases_have_their_host_states_read_ahead(
        redis_url: str, prefix: str) -> None:
    store = RedisStore(redis_url, prefix=prefix)
    try:
        state = RedisCrawlState(store, "ahead", leases=Leases(),
                                server=lambda url: "host:" + server_of(url))
        await state.open()
        # A first take loads the scripts (a round trip each, on a fresh server).
        await state.add([entry(f"http://w{i}.example/0") for i in range(10)])
        assert len(await state.take(100)) == 10
        before = store.round_trips
        await state.add([entry(f"http://h{i}.example/0") for i in range(10)])
        # The write with the take it carries, and one read of the ten host states.
        assert store.round_trips - before == 2
        assert len(await state.take(100)) == 10
        before = store.round_trips
        for i in range(10):
            assert await store.load_host(f"host:h{i}.example") is None
        assert store.round_trips == before
        await state.close()
    finally:
        await store.close()


async def test_a_crawl_of_a_newer_layout_is_refused(redis_url: str, prefix: str,
                                                    raw: Any) -> None:
    store = RedisStore(redis_url, prefix=prefix)
    try:
        await raw.hset(f"{prefix}:crawl:{{crawl/new}}:meta", "v", 99)
        with pytest.raises(StoreError, match=r"layout 99.*Upgrade robotgate"):
            await store.crawl_state("new").open()
    finally:
        await store.close()


@pytest.mark.slow
async def test_on_a_cluster_a_crawl_is_shared_and_a_page_written_with_its_links(
        redis_cluster: str, prefix: str) -> None:
    # Every key of a crawl carries one hash tag: each script runs in one slot.
    stores = [RedisStore(redis_cluster, prefix=prefix, cluster=True) for _ in range(2)]
    try:
        first, second = (RedisCrawlState(s, "c", max_servers=1) for s in stores)
        await first.open()
        await second.open()
        await first.add([entry("http://a.example/0"), entry("http://b.example/0")])
        mine, theirs = await first.take(10), await second.take(10)
        assert [e.url for e in mine] == ["http://a.example/0"]
        assert [e.url for e in theirs] == ["http://b.example/0"]
        added = await first.finish(mine[0], 2, [entry("http://a.example/1", 1),
                                                entry("http://b.example/0", 1)])
        assert (added.new, added.known) == (1, 1)
        assert [e.url for e in await first.take(10)] == ["http://a.example/1"]
        counts = await second.counts()
        assert (counts.done, counts.in_flight, counts.queued) == (1, 2, 0)
        await first.close()
        await second.close()
        assert await stores[0].drop_crawl("c")
    finally:
        for store in stores:
            await store.close()


async def test_a_crawl_whose_redis_lost_it_ends_saying_so(redis_url: str, prefix: str,
                                                          raw: Any) -> None:
    store = RedisStore(redis_url, prefix=prefix)
    gate = LinkGate()
    pages = 0

    async def handler(url: str, resp: Page) -> list[str]:
        nonlocal pages
        pages += 1
        if pages == 1:  # Redis restarted empty under the crawl
            async for key in raw.scan_iter(match=f"{prefix}:crawl:*"):
                await raw.delete(key)
        return [f"http://h{pages % 3}.example/p{pages}"]

    try:
        frontier = Frontier(gate, ["http://h0.example/p0"], handler, concurrency=2,
                            scope="any", state=store.crawl_state("lost"))
        with pytest.raises(StoreError, match=r"gone from Redis.*start it again"):
            await asyncio.wait_for(frontier.run(), 30)
        assert len(gate.fetched) <= 2
    finally:
        await store.close()


async def test_each_url_keeps_who_pointed_at_it(redis_url: str, prefix: str) -> None:
    from tests.store.test_sqlite_crawl import KINDS

    # A page URL with "|" in it, and a URL after it, read back whole.
    kinds = [*KINDS, pointer_of("http://a.example/x|y?z=|1|")]
    entries = [Entry(f"http://h.example/{n}|", f"http://h.example/{n}|", 1, n > 0, 0, kind)
               for n, kind in enumerate(kinds)]
    store = RedisStore(redis_url, prefix=prefix)
    try:
        state = store.crawl_state("c")
        await state.open()
        await state.add(entries[:2])
        page, = await state.take(1)
        await state.finish(page, 2, entries[2:])
        await state.close()
        other = store.crawl_state("c")  # another worker, as one taking the crawl over
        await other.open()
        taken = await other.take(100)
        await other.close()
    finally:
        await store.close()
    assert sorted((e.url, str(e.provenance)) for e in taken) == sorted(
        (e.url, str(e.provenance)) for e in entries[1:])
    assert {e.url: e.provenance for e in taken} == {e.url: e.provenance for e in entries[1:]}


async def test_a_crawl_of_an_older_layout_is_refused_naming_the_remedy(
        redis_url: str, prefix: str, raw: Any) -> None:
    store = RedisStore(redis_url, prefix=prefix)
    try:
        base = f"{prefix}:crawl:{{crawl/old}}"
        await raw.hset(f"{base}:meta", mapping={"v": 1, "created": "1.0"})
        await raw.hset(f"{base}:e", "http://h.example/a", "1|1|http://h.example/a")
        with pytest.raises(StoreError, match=r"layout 1, kept by an older robotgate.*"
                                             r"which does\. Finish .* drop it"):
            await store.crawl_state("old").open()
        assert await raw.hget(f"{base}:meta", "v") == b"1"  # left as it was
        assert await store.drop_crawl("old")
        await store.crawl_state("old").open()  # started again, in this layout
    finally:
        await store.close()


async def test_an_entry_robotgate_never_writes_is_refused(redis_url: str, prefix: str,
                                                          raw: Any) -> None:
    store = RedisStore(redis_url, prefix=prefix)
    try:
        state = store.crawl_state("c")
        await state.open()
        await state.add([entry("http://h.example/a")])
        # As layout 1 wrote it: no provenance.
        await raw.hset(f"{prefix}:crawl:{{crawl/c}}:e", "http://h.example/a",
                       "0|0|http://h.example/a")
        with pytest.raises(StoreError, match=r"entry of 'http://h.example/a' is not one"):
            await state.take(10)
        await state.close()
    finally:
        await store.close()


async def test_the_last_pages_write_goes_when_nothing_more_can_join(
        redis_url: str, prefix: str) -> None:
    # Pages finishing wait for others to share their write (up to the linger, here
    # far longer than the crawl); once every visit waits for its write and no URL is
    # queued, none can join: the write goes at once.
    store = RedisStore(redis_url, prefix=prefix)
    try:
        state = RedisCrawlState(store, "tail", linger=600.0)
        told: list[int] = []
        write_now = state.write_now

        def record() -> None:
            told.append(len(frontier._visits))
            write_now()

        state.write_now = record  # type: ignore[method-assign]
        urls = [f"http://h0.example/p{p}" for p in range(1, 5)]
        frontier = Frontier(LinkGate(latency=0.002), urls, site(1, 5), concurrency=8,
                            state=state)
        summary = await asyncio.wait_for(frontier.run(), 60)  # a hang guard only
        assert summary.pages == 4
        # Told by the last of the four visits to finish, then by the crawl's end and
        # the state's close (nothing waits by then).
        assert told == [4, 0, 0]
        counts = await store.crawl_state("tail").counts()
        assert (counts.done, counts.queued, counts.in_flight) == (4, 0, 0)
    finally:
        await store.close()


class _LastPageHangs(LinkGate):
    """p4's answer never comes."""

    def fetch(self, url: str) -> Any:
        fetch = super().fetch(url)
        if url.endswith("/p4"):
            fetch.gate = LinkGate(latency=3600.0)
        return fetch


async def test_a_crawl_stopped_while_pages_wait_for_their_write_writes_them_at_once(
        redis_url: str, prefix: str) -> None:
    # Three pages wait for the write they share (the linger, far longer than the
    # test), the fourth for its answer; the crawl is stopped: nothing more can join
    # the write, which goes at once, and the fourth goes back to the queue.
    store = RedisStore(redis_url, prefix=prefix)
    try:
        state = RedisCrawlState(store, "stopped", linger=600.0)
        stop = asyncio.Event()
        urls = [f"http://h0.example/p{p}" for p in range(1, 5)]
        frontier = Frontier(_LastPageHangs(latency=0.002), urls, site(1, 5), concurrency=8,
                            state=state, stop=stop)
        crawl = asyncio.ensure_future(frontier.run())
        for _ in range(2000):  # a hang guard only
            if frontier._writing == 3:
                break
            await asyncio.sleep(0.005)
        assert frontier._writing == 3
        stop.set()
        summary = await asyncio.wait_for(crawl, 60)  # a hang guard only
        assert (summary.pages, summary.interrupted) == (3, 1)
        counts = await store.crawl_state("stopped").counts()
        assert (counts.done, counts.queued, counts.in_flight) == (3, 1, 0)
    finally:
        await store.close()
