"""A request whose server's crawl lease lapsed is not sent: the frontier hands it back
to the crawl's state unsent, with the URLs of that server it still held, and records
no result for them; the state hands them out again."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from robotgate.crawl import CrawlResult, crawl
from robotgate.store.crawl_state import Added, Entry, MemoryCrawlState
from robotgate.store.leases import LapsedLease
from tests.support.crawl_gate import LinkGate, Page, _Fetch


class _Lapsing(_Fetch):
    async def __aenter__(self) -> Page:
        gate = self.gate
        assert isinstance(gate, LapsingGate)
        key = gate.pace_key(self.url)
        if key in gate.lapse:
            gate.lapse.discard(key)  # once: then leased again through the state
            raise LapsedLease(key)
        return await super().__aenter__()


class LapsingGate(LinkGate):
    """Its first request to each server of ``lapse`` finds the server's lease lapsed."""

    def __init__(self, lapse: set[str]) -> None:
        super().__init__()
        self.lapse = lapse

    def fetch(self, url: str) -> _Fetch:
        return _Lapsing(self, url)


class Releasing(MemoryCrawlState):
    def __init__(self) -> None:
        super().__init__()
        self.released: list[list[str]] = []

    async def release(self, entries: Sequence[Entry]) -> None:
        if entries:
            self.released.append([e.url for e in entries])
        await super().release(entries)


async def handler(url: str, resp: Any) -> None:
    return None


async def test_a_lapsed_lease_hands_its_servers_urls_back_unsent() -> None:
    a = [f"http://a.example/{i}" for i in range(5)]
    gate = LapsingGate({"http://a.example"})
    state = Releasing()
    results: list[CrawlResult] = []
    summary = await crawl(gate, [*a, "http://b.example/0"], handler, concurrency=1,
                          per_host=1, state=state, on_result=results.append)
    # The first request to a.example went back with every URL of it queued here ...
    assert state.released[0] == a
    # ... none recorded as done or failed for it, and each fetched once, handed out again.
    assert sorted(gate.fetched) == sorted([*a, "http://b.example/0"])
    assert sorted(r.url for r in results) == sorted(gate.fetched)
    assert all(r.error is None for r in results)
    assert summary.pages == 6 and summary.errors == 0


class HeldWrites(MemoryCrawlState):
    """Holds each outcome's write until ``write_now`` (or 2 s), as a shared state that
    batches them may; records how many writes each ``write_now`` let go."""

    def __init__(self) -> None:
        super().__init__()
        self.held: list[asyncio.Future[None]] = []
        self.told: list[int] = []

    def write_now(self) -> None:
        # Once the writes just begun are held too (their tasks start next).
        asyncio.get_running_loop().call_soon(self._let_go)

    def _let_go(self) -> None:
        held, self.held = self.held, []
        self.told.append(len(held))
        for write in held:
            write.set_result(None)

    async def finish(self, entry: Entry, outcome: int, links: Sequence[Entry]) -> Added:
        write = asyncio.get_running_loop().create_future()
        self.held.append(write)
        try:
            await asyncio.wait_for(write, 2.0)  # never told: goes alone
        except asyncio.TimeoutError:
            self.held.remove(write)
        return await super().finish(entry, outcome, links)


async def test_a_state_holding_writes_is_told_once_every_place_waits_for_one() -> None:
    state = HeldWrites()
    urls = [f"http://h{i}.example/0" for i in range(6)]
    summary = await asyncio.wait_for(
        crawl(LinkGate(), urls, handler, concurrency=3, state=state), 20)
    assert summary.pages == 6
    # Told each time its three places all waited for their writes, never sooner; and
    # at the crawl's end, when none waited.
    assert state.told == [3, 3, 0]
