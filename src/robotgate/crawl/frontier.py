"""The crawl frontier behind ``gate.crawl``: per-host queues, workers kept busy across hosts.

A bounded worker pool over ``gate.fetch`` with URLs sorted by host blocks at
the head of the line: every worker ends up waiting on the same host's pacing
while other hosts sit idle.  The frontier instead keeps one queue per
politeness key (``gate.pace_key(url)``) and a heap of keys ordered by when
each may next be asked (``gate.server_wait(url)``); a URL is handed to a worker
only when its host is ready, so ``concurrency`` workers stay busy as long as
any host has work that may start now.

It knows no HTTP client: it asks the gate through :class:`~.gate_interface.CrawlGate`
alone (public, documented members of :class:`robotgate.RobotGate`), so any object
with those members can drive it.  Its parts: :mod:`.options`, :mod:`.host_queues`
(the queues and the heap), :mod:`.page` (one page's request, handler and links),
:mod:`.discovery` (which of those links join the crawl) and :mod:`.results` (what
it reports).

Every URL is known by its resource key (:func:`robotgate.urls.resource_key`,
or the crawl's ``url_key``): the crawl's state (:mod:`robotgate.store.crawl_state`)
queues each key once, input and discovered links alike, and records each URL's
outcome with the links its page gave.  The host queues hold a window of the queued URLs taken
from the state; a named crawl's state lives in the gate's store.

Bounds, unnamed: URLs are taken from the input only while fewer than
``max_queued`` wait, so memory follows the queued URLs, not the input's length;
at most ``max_seen`` keys are remembered, and links beyond either bound are
turned away and counted (``dropped``).  A named crawl turns nothing away.
Links a page gives are read up to ``max_links`` (pages cut there are counted).

A link resolves against its page's final URL (after redirects) and ``<base
href>``; with ``follow_links`` the crawl reads each HTML page's links itself
(:func:`robotgate.page_links`).  The page's directives are read only when
something uses them: ``nofollow`` judging links the page gave, TDMRep, or
``record_directives``.  Transient answers and errors (429, 503, connection
errors, timeouts) are asked again up to ``retries`` times, each attempt in turn
after the server's back-off and ``Retry-After``.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import AsyncIterable, Callable, Iterable
from typing import TYPE_CHECKING, Generic

from ..decision import Decision
from ..errors import GateClosed, ProxyFailed
from ..policy.provenance import INPUT, pointer_of
from ..redaction import failure_text, redact_text
from ..robots.sitemap import SitemapEntry
from ..store.crawl_state import DONE, FAILED, SKIPPED, Added, CrawlState, Entry, MemoryCrawlState
from ..store.leases import LapsedLease
from ..urls import redact, resource_key, scrub, text_url
from .discovery import Discovery
from .gate_interface import CrawlGate, Opening, ResponseT
from .host_queues import HostQueue, HostQueues, QueuedURL
from .options import (
    DEFAULT_RETRIES,
    RETRY_STATUSES,
    SCOPES,
    CrawlOptions,
    Handler,
    ScopeRule,
)
from .page import (
    LocalRetries,
    PageLinks,
    PageReader,
    drop_unsent,
    is_transient,
    route_of,
    shortage_of,
)
from .results import CrawlResult, CrawlSummary

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing's own from Python 3.11

__all__ = ["Frontier", "crawl"]

log = logging.getLogger("robotgate.frontier")

#: URLs moved from the state to the host queues at once, and input URLs added at once.
_LOAD = 1000
_ADD = 2048
#: A shared state found with nothing to hand out is asked again after its idle poll,
#: doubled after each such answer up to this many times it (a round trip each).
_IDLE_POLLS = 8


class Frontier(Generic[ResponseT]):
    """One crawl: see :func:`crawl` for the arguments.  ``await run()`` once."""

    def __init__(
        self,
        gate: CrawlGate[ResponseT],
        urls: Iterable[str | SitemapEntry] | AsyncIterable[str | SitemapEntry],
        handler: Handler[ResponseT],
        *,
        concurrency: int = 16,
        per_host: int | None = None,
        timeout: float | None = None,
        on_result: Callable[[CrawlResult], object] | None = None,
        fetch: Callable[..., Opening[ResponseT]] | None = None,
        max_queued: int = 100_000,
        max_seen: int = 100_000,
        retries: int = DEFAULT_RETRIES,
        obey_nofollow: bool = True,
        record_directives: bool = False,
        follow_links: bool = False,
        retry_statuses: Iterable[int] = RETRY_STATUSES,
        stop: asyncio.Event | None = None,
        summary: CrawlSummary | None = None,
        url_key: Callable[[str], str] | None = None,
        scope: str | ScopeRule = "host",
        max_depth: int | None = None,
        max_links: int = 1_000_000,
        state: CrawlState | None = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if timeout is not None and timeout <= 0:
            raise ValueError("timeout must be > 0 (or None)")
        if not callable(scope) and scope not in SCOPES:
            raise ValueError(f"scope must be one of {', '.join(SCOPES)} or a callable")
        if max_depth is not None and max_depth < 0:
            raise ValueError("max_depth must be >= 0 (or None)")
        if max_links < 0:
            raise ValueError("max_links must be >= 0")
        if retries < 0:
            raise ValueError("retries must be >= 0")
        self.gate = gate
        self.urls = urls
        self.concurrency = concurrency
        cap = per_host or gate.max_per_host
        self.timeout = timeout
        self.on_result = on_result
        if fetch is None:
            fetch = gate.fetch
        self.max_queued = max(1, max_queued)
        self.retries = retries
        self.retry_statuses = frozenset(retry_statuses)
        self.stop_event = stop
        self.summary = summary if summary is not None else CrawlSummary()
        #: The URLs this machine could not send (its own shortage), asked again.
        self.local = LocalRetries()
        self.queues = HostQueues(gate.server_wait, max(1, int(cap)), self.summary, self._poke)
        self.pages = PageReader(gate, handler, fetch, self.summary, retried=self._will_retry,
                                follow_links=follow_links, record_directives=record_directives,
                                obey_nofollow=obey_nofollow, max_links=max_links)
        # An unnamed crawl's own state remembers each URL by its key's digest, fixed in
        # size whatever the URL's length: no key of it is ever read back.
        digests = state is None
        if state is None:
            state = MemoryCrawlState(max_seen=max(1, max_seen), max_pending=self.max_queued)
        self.state = state
        self.discovery = Discovery(
            state, self.summary, url_key=url_key if url_key is not None else resource_key,
            scope=scope, max_depth=max_depth, max_links=max_links, is_private=gate.is_private,
            keeps_pointers="pointed_by" in inspect.signature(fetch).parameters,
            invalid=self._invalid, counted=self._counted, digests=digests)
        # Host queues hold this many URLs taken from the state at most.
        self.window = self.max_queued if state.bounded else min(self.max_queued, 20_000)
        self._adding: asyncio.Future[None] | None = None  # the input's batch being added
        self._room = asyncio.Event()  # set while the input may add URLs
        self._room.set()
        self._loading = False
        self._load_after = 0.0  # loop time before which the state is not asked again
        self._idle_wait = 0.0  # the wait after the state last had nothing more to hand out
        self._visits: dict[asyncio.Task[None], QueuedURL] = {}
        self._writing = 0  # visits whose outcome is being written
        # Outcomes being written when the crawl was stopped.
        self._settling: list[tuple[asyncio.Future[Added], QueuedURL, CrawlResult, int]] = []
        self._wakeup: asyncio.Future[None] | None = None
        self._halted = False
        self._failure: BaseException | None = None
        self._loop = asyncio.get_running_loop()

    # -- running ---------------------------------------------------------

    async def run(self) -> CrawlSummary:
        """Crawl until the input is used up and every queued URL is done."""
        summary = self.summary
        summary.started = time.monotonic()
        before = await self.state.open()
        self.state.will_take(min(_LOAD, self.window))
        summary.done_before = before.finished
        summary.queued_before = before.queued
        self._count_queued()
        feeder = self._loop.create_task(self._feed())
        feeder.add_done_callback(self._feed_done)
        watcher = None
        if self.stop_event is not None:
            watcher = self._loop.create_task(self._watch_stop(self.stop_event))
        try:
            await self._schedule()
        finally:
            self._halted = True
            cut = list(self._visits.values())
            tasks = [feeder, *self._visits, *([watcher] if watcher else [])]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            if self._adding is not None:  # input on its way into the store: let it land
                await asyncio.gather(self._adding, return_exceptions=True)
            await self._wind_up(cut)
        if self._failure is not None:
            raise self._failure
        return summary

    async def _wind_up(self, cut: list[QueuedURL]) -> None:
        """Every URL accounted for: those cut short are recorded, and go back to the
        state's queue with those left in the host queues."""
        summary = self.summary
        self.state.write_now()  # the crawl is over: no page can join a write waiting
        for finishing, item, record, links in self._settling:
            if item in cut:
                cut.remove(item)
            try:
                self._settled(await finishing, record, links)
            except Exception:  # not written: still in flight in the state
                cut.append(item)
        for item in cut:
            summary.interrupted += 1
            self._emit(CrawlResult(item.url, error="interrupted: the crawl ended before it",
                                   discovered=item.entry.discovered,
                                   attempts=max(1, item.entry.attempts), interrupted=True))
        left = [item.entry for item in self.queues.items()]
        try:
            try:
                await self.state.release([item.entry for item in cut] + left)
            finally:
                await self.state.close()  # its tasks end even if the release failed
        finally:
            self.queues.window = 0
            summary.in_flight = 0
            self._count_queued()
            summary.queued -= len(cut)  # counted as interrupted (queued again, if named)
            summary.elapsed = time.monotonic() - summary.started

    async def _watch_stop(self, event: asyncio.Event) -> None:
        await event.wait()
        self.summary.stopped = True
        self.halt()

    def halt(self, failure: BaseException | None = None) -> None:
        """End the crawl: in-flight visits are cancelled and ``failure``, if any, raised."""
        if failure is not None and self._failure is None:
            self._failure = failure
        self._halted = True
        self._poke()

    def _feed_done(self, task: asyncio.Task[None]) -> None:
        self.summary.input_done = True
        if not task.cancelled() and task.exception() is not None:
            self.halt(task.exception())
        self._poke()

    async def _schedule(self) -> None:
        """Hand ready hosts' URLs to free workers until all is done."""
        summary = self.summary
        state = self.state
        while not self._halted:
            if self.queues.window < self.window // 2 + 1 and (
                    state.ready or (state.pending and self._loop.time() >= self._load_after)):
                await self._load()
                # A state's take may not suspend: the loop gets a turn between two loads
                # (each costs _LOAD URLs' politeness keys; a window's worth would hold
                # it for a third of a second).
                await asyncio.sleep(0)
                continue
            wake: float | None = None
            # A visit keeps its place until its outcome is written: a crash costs at most
            # ``concurrency`` pages fetched again.
            if len(self._visits) < self.concurrency:
                taken = self.queues.take()
                if isinstance(taken, tuple):
                    self._start(*taken)
                    continue
                wake = taken
                if (wake is None and summary.input_done and not self._visits
                        and not state.pending and not self.queues.window):
                    return
            if state.pending and self._load_after > self._loop.time():
                wake = self._load_after if wake is None else min(wake, self._load_after)
            await self._sleep(wake)

    async def _load(self) -> None:
        """Move queued URLs from the state into the host queues."""
        most = min(_LOAD, self.window - self.queues.window)
        taken = await self.state.take(most)
        if len(taken) < most:
            # A shared state had no more to hand out (the rest is with other workers):
            # asked again later, and later still while it stays so.
            poll = self.state.idle_poll
            self._idle_wait = (min(max(poll, self._idle_wait * 2), poll * _IDLE_POLLS)
                               if not taken else poll)
            self._load_after = self._loop.time() + self._idle_wait
        for entry in taken:
            try:
                key = self.gate.pace_key(text_url(entry.url))
            except (ValueError, TypeError) as exc:  # a store edited by hand
                self._invalid(entry.url, exc, entry.discovered)
                await self.state.finish(entry, FAILED, ())
                continue
            entry.attempts += 1
            self.queues.add(key, QueuedURL(entry))
        self._count_queued()

    def _count_queued(self) -> None:
        summary = self.summary
        summary.queued = self.state.pending + self.state.ready + self.queues.window
        if not self.state.bounded or summary.queued < self.max_queued:
            self._room.set()
        else:
            self._room.clear()

    async def _sleep(self, until: float | None) -> None:
        """Until loop time ``until`` (None: no limit), or until something changes."""
        fut = self._loop.create_future()
        self._wakeup = fut
        timer = None
        if until is not None:
            timer = self._loop.call_at(until, _wake, fut)
        try:
            await fut
        finally:
            self._wakeup = None
            if timer is not None:
                timer.cancel()

    def _poke(self) -> None:
        fut = self._wakeup
        if fut is not None and not fut.done():
            fut.set_result(None)

    # -- input -----------------------------------------------------------

    async def _feed(self) -> None:
        urls = self.urls
        batch: list[Entry] = []
        if isinstance(urls, AsyncIterable):
            async for url in urls:
                await self._offer(url, batch)
        else:
            for url in urls:
                await self._offer(url, batch)
        await self._add(batch)
        if self._adding is not None:
            await self._adding

    async def _offer(self, url: str | SitemapEntry, batch: list[Entry]) -> None:
        self.summary.read += 1
        sitemap = ""
        if isinstance(url, SitemapEntry):
            sitemap = url.sitemap  # a sitemap's entry: that sitemap's pointer
            url = url.url
        try:
            text = text_url(url)
            key = self.discovery.key_of(text)[0]  # InvalidURL for what is no http(s) URL
            # A sitemap's entry carries the sitemap as its page, kept with it.
            batch.append(Entry(key, text, provenance=pointer_of(sitemap) if sitemap else INPUT))
        except (ValueError, TypeError) as exc:  # InvalidURL is a ValueError
            self._invalid(url, exc)
        if len(batch) >= _ADD or self.state.bounded:
            # Batched into a store; counted at once where room is bounded.
            await self._add(batch)
            if not self._room.is_set():
                await self._room.wait()
        if self.summary.read % 256 == 0:
            await asyncio.sleep(0)  # a long list must not starve the loop

    async def _add(self, batch: list[Entry]) -> None:
        """Add ``batch`` to the state.  Into a store, while the next batch is read: the
        one before is awaited first, so batches go in in order."""
        if not batch:
            return
        entries = batch[:]
        batch.clear()
        if self.state.bounded:
            await self._add_now(entries)  # counted before the next URL is read
            return
        if self._adding is not None:
            await self._adding
        self._adding = asyncio.ensure_future(self._add_now(entries))

    async def _add_now(self, entries: list[Entry]) -> None:
        added = await self.state.add(entries)
        self.summary.duplicates += added.known
        self._count_queued()
        self._poke()

    def _invalid(self, url: object, exc: BaseException, discovered: bool = False) -> None:
        self.summary.invalid += 1
        self.summary.invalid_links += discovered
        text = url if isinstance(url, str) else repr(url)
        self._emit(CrawlResult(text, error=redact_text(str(exc)), discovered=discovered))

    def _load_soon(self) -> None:
        """A shared state may have URLs for this worker now: asked at once."""
        self._idle_wait = 0.0
        self._load_after = 0.0

    def _counted(self, added: Added, links: int) -> None:
        if added.new:  # new URLs in a shared state: perhaps for this worker's servers
            self._load_soon()
        summary = self.summary
        summary.links += links
        summary.discovered += added.new
        summary.duplicates += added.known
        summary.dropped += added.dropped
        self._count_queued()

    # -- one URL ---------------------------------------------------------

    def _start(self, host: HostQueue, item: QueuedURL) -> None:
        task = self._loop.create_task(self._visit(host, item))
        self._visits[task] = item
        self.summary.in_flight += 1
        self._count_queued()
        task.add_done_callback(self._visit_done)

    def _visit_done(self, task: asyncio.Task[None]) -> None:
        if self._visits.pop(task, None) is not None:
            self.summary.in_flight -= 1
        if not task.cancelled() and task.exception() is not None:
            self.halt(task.exception())
        self._poke()

    async def _visit(self, host: HostQueue, item: QueuedURL) -> None:
        url = item.url
        gate = self.gate
        entry = item.entry
        record = CrawlResult(url, host.key, discovered=entry.discovered,
                             attempts=entry.attempts, waited=item.waited,
                             wait_reason=item.wait_reason)
        began = time.monotonic()
        wait = 0.0
        reason = ""
        links: Iterable[str] = ()
        resolve: Callable[[str], str | None] | None = None
        transient = False  # an error worth asking again
        unsent: list[QueuedURL] = []  # its server's lease lapsed: back to the state
        pointed_by = self.discovery.pointer_of(entry)
        unsent_request: Opening[ResponseT] | None = None  # made, not sent: let go at the end
        try:
            # The request is made first, not sent: robots.txt is asked the way it goes
            # (its proxy), never by a route of the crawl's own guessing.
            unsent_request = call = self.pages.request(url, pointed_by)
            via = route_of(call)
            # robots.txt first (one fetch per origin, shared), outside the page timeout;
            # a link's (or a sitemap entry's) as its page's pointer, as its fetch is.
            if not await self._allowed(url, pointed_by, via):
                record.decision = await self._decide(url, pointed_by, via)
                gate.report_skipped(url, record.decision)
            else:
                ahead = self.queues.server_wait(url)
                wait, reason = ahead.wait, ahead.reason
                if wait > 0:
                    # Fetching robots.txt counted as a request: not this host's turn
                    # yet, so the worker goes elsewhere and the URL waits at the front.
                    self.queues.give_back(host, item)
                    return
                record.interval = ahead.interval
                gate.report_waited(url, item.waited, item.wait_reason)
                self.summary.host(host.key).started_at(self._loop.time())
                unsent_request = None
                links, resolve = await self._page(url, record, call)
                if gate.tdmrep and record.status is not None:
                    # Once the page's slot is free: tdmrep.json waits for the server's turn.
                    # The content's own origin: a redirect may have led elsewhere, and
                    # then the redirecting page is the pointer its request is held to.
                    final = record.final_url or url
                    pointer = pointed_by if final == url else url
                    record.tdm = await (
                        gate.tdm(final, record.directives, pointed_by=pointer)
                        if via is None else
                        gate.tdm(final, record.directives, pointed_by=pointer, via=via))
        except (GateClosed, ProxyFailed) as exc:
            # No URL can be fetched any more (the gate closed, or the proxy every
            # request goes through failed: no site's fault): the crawl ends with it.
            self.halt(exc)
            return
        except LapsedLease:
            # Not sent: this URL and its server's others were handed out with a lease
            # this worker no longer surely holds; the store hands them out again.
            unsent = [item, *self.queues.drain(host)]
        except asyncio.TimeoutError as exc:
            transient = True
            record.error = (
                f"timed out: page not done within {self.timeout:g}s"
                if self.timeout is not None else failure_text(exc)
            )
        except Exception as exc:  # recorded, never raised out of the crawl
            decision = getattr(exc, "decision", None)  # Disallowed (a redirect), any fetch's
            if isinstance(decision, Decision):
                record.decision = decision
                record.final_url = getattr(exc, "url", None)
            else:
                transient = is_transient(exc)
                record.error = failure_text(exc)
                shortage = shortage_of(exc, url)
                if shortage is not None:  # this machine's, not the site's
                    record.error = self.summary.local_failure = str(shortage)
                    record.local = True
                    self.summary.local_failures += 1
                log.debug("%s: %s", redact(url), scrub(record.error, url))
        finally:
            if unsent_request is not None:
                drop_unsent(unsent_request)
            if wait <= 0:
                record.elapsed = time.monotonic() - began
            self.queues.release(host, wait, reason)
        if unsent:
            log.debug("%s: lease lapsed, %d URLs given back unsent", host.key, len(unsent))
            await self.state.release([queued.entry for queued in unsent])
            self._count_queued()
            return
        if record.local and not self._halted:
            pause = self.local.pause(url)
            if pause is not None:
                await self._again_after_shortage(host.key, entry, record, pause)
                return
        else:
            self.local.done(url)
        if (self._will_retry(record) if record.error is None
                else transient and self._may_retry(record)):
            # Asked again at the front of its server's queue: in turn, after the
            # back-off and Retry-After its answer taught the gate.
            record.retried = True
            self.summary.retried += 1
            self._emit(record)
            entry.attempts += 1
            self.queues.add(host.key, QueuedURL(entry), front=True)
            self._count_queued()
            return
        found: list[Entry] = []
        if record.error is None and record.decision is None:
            try:
                found = await self.discovery.judge(entry, links, resolve, record.final_url)
            except Exception as exc:  # an iterable of links that raises as it is read
                record.error = failure_text(exc)
        outcome = DONE if record.kind == "page" else SKIPPED if record.kind == "skipped" else FAILED
        # Once begun, the write of its outcome is seen to the end: a crawl stopped
        # meanwhile counts the page as done (wind-up waits for it), not cut short.
        finishing = asyncio.ensure_future(self.state.finish(entry, outcome, found))
        self._writing += 1
        if self._writing >= self.concurrency or (
                self._writing >= len(self._visits) and not self.queues.window
                and not self.state.ready):
            # Every place waits for it, or every visit does and none is queued here:
            # nothing more can join.
            self.state.write_now()
        try:
            added = await asyncio.shield(finishing)
        except asyncio.CancelledError:
            self._settling.append((finishing, item, record, len(found)))
            raise
        finally:
            self._writing -= 1
        if self.queues.hosts.get(host.key) is not host:
            self._load_soon()  # its server's last URL written: a shared state leases another
        self._settled(added, record, len(found))

    def _settled(self, added: Added, record: CrawlResult, links: int) -> None:
        self._counted(added, links)
        self._finish(record)

    async def _allowed(self, url: str, pointed_by: str | None, via: object) -> bool:
        """``gate.allowed``; ``pointed_by`` only for a pointer (a fake gate whose fetch
        takes no ``pointed_by`` keeps no pointer, and need not take it here either),
        ``via`` only when the page's request has a route to tell."""
        gate = self.gate
        if via is not None:
            return await gate.allowed(url, pointed_by=pointed_by, via=via)
        return await (gate.allowed(url) if pointed_by is None
                      else gate.allowed(url, pointed_by=pointed_by))

    async def _decide(self, url: str, pointed_by: str | None, via: object) -> Decision:
        gate = self.gate
        if via is not None:
            return await gate.decide(url, pointed_by=pointed_by, via=via)
        return await (gate.decide(url) if pointed_by is None
                      else gate.decide(url, pointed_by=pointed_by))

    async def _page(self, url: str, record: CrawlResult, call: Opening[ResponseT]) -> PageLinks:
        if self.timeout is None:
            return await self.pages.read(url, record, call)
        return await asyncio.wait_for(self.pages.read(url, record, call), self.timeout)

    async def _again_after_shortage(self, key: str, entry: Entry, record: CrawlResult,
                                    pause: float) -> None:
        """Ask ``entry`` again after ``pause``, this attempt not counted: its request
        was never sent, for a shortage of this machine's that frees as others end."""
        record.retried = True
        self.summary.retried += 1
        self._emit(record)
        count = self.summary.local_failures
        level = logging.WARNING if count == 10 ** (len(str(count)) - 1) else logging.DEBUG
        log.log(level, "%s (asked again in %gs; %d such failures so far)",
                record.error, pause, count)
        try:
            await asyncio.sleep(pause)
        finally:  # queued again even if the crawl ends meanwhile: the URL is not lost
            self.queues.add(key, QueuedURL(entry), front=True)
            self._count_queued()

    def _will_retry(self, record: CrawlResult) -> bool:
        return record.status in self.retry_statuses and self._may_retry(record)

    def _may_retry(self, record: CrawlResult) -> bool:
        return record.attempts <= self.retries and not self._halted

    def _finish(self, record: CrawlResult) -> None:
        self.summary.finished(record)
        self._emit(record)

    def _emit(self, record: CrawlResult) -> None:
        if self.on_result is not None:
            try:
                self.on_result(record)
            except Exception as exc:  # ends the crawl, and is raised from it, wherever
                self.halt(exc)        # the record came from (a page, a link it found)


def _wake(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


async def crawl(
    gate: CrawlGate[ResponseT],
    urls: Iterable[str | SitemapEntry] | AsyncIterable[str | SitemapEntry],
    handler: Handler[ResponseT],
    *,
    concurrency: int = 16,
    **options: Unpack[CrawlOptions],
) -> CrawlSummary:
    """Crawl ``urls`` through ``gate`` with ``concurrency`` workers kept busy across hosts.

    ``urls`` is any iterable or async iterable, consumed lazily (at most
    ``max_queued`` URLs wait in memory).  ``handler(url, response)`` is
    awaited while the response is open; it may return an iterable of new URLs
    (or a :class:`Handled`), which join the frontier once per resource key
    when in scope (see ``docs/crawl.md``).  URLs that
    robots.txt forbids are skipped with their decision; invalid URLs, network
    errors, timeouts and handler errors are recorded, never raised.

    Options: ``per_host`` (requests in flight per politeness key; default the
    gate's ``max_per_host``), ``timeout`` (seconds for one page, from its
    request to the handler's end), ``on_result`` (called with each
    :class:`CrawlResult`; an exception it raises ends the crawl), ``fetch``
    (``url -> async context manager of the response``; default
    ``gate.fetch``: ``partial(gate.fetch, proxy=...)`` sends the pages through a
    proxy; each page's request is made before its robots.txt is asked, which goes
    the way the request tells, its ``via``: a ``gate.fetch`` call's proxy; a request
    that tells none, by the gate's own session, never a guess; see ``docs/crawl.md``,
    "A proxy"), ``max_queued``, ``max_seen``, ``retries`` (default
    :data:`DEFAULT_RETRIES`, 2: a URL whose answer is in ``retry_statuses``, 429
    and 503, or whose request ends in a connection error or a timeout is asked
    again up to that many times, each time in its server's turn, after the
    back-off and ``Retry-After`` the answer taught the gate; each attempt gets a
    :class:`CrawlResult`, those asked again with ``retried`` set),
    ``obey_nofollow`` (default True: the links a page returns are not followed
    when its directives say ``nofollow``; they are counted in ``not_followed``),
    ``record_directives`` (default False: each page's directives are read into its
    record; without it they are read only when ``obey_nofollow`` judges links
    the page gave, or for TDMRep), ``follow_links`` (default False: True adds the
    links of each 2xx HTML page, read with :func:`robotgate.page_links` from the
    body ``gate.fetch`` read or the ``Handled.head`` a handler hands back, to
    those the handler returns; links marked ``rel="nofollow"`` are counted in
    ``rel_nofollow``),
    ``stop`` (an :class:`asyncio.Event`: set it to end the crawl early, in
    flight requests cancelled and recorded as interrupted), ``summary`` (a
    :class:`CrawlSummary` to fill in live, e.g. for a progress bar),
    ``url_key`` (``url -> str``: URLs with one key are one resource; default
    :func:`robotgate.urls.resource_key`), ``scope`` (``"host"``, ``"domain"``,
    ``"any"`` or ``(link, page_url) -> bool``) and ``max_depth`` for the links
    pages give, ``max_links`` (links read per page) and ``state`` (a
    :class:`~robotgate.store.crawl_state.CrawlState`: a named crawl's, from the store; see
    ``docs/crawl.md``).  A gate closed under the crawl
    ends it at once with :class:`~robotgate.errors.GateClosed`.

    A link the handler returns may be relative: it resolves against the page's
    final URL (after redirects) and its ``<base href>``; links that are no
    http(s) URL (``mailto:``, ``javascript:``) are counted in ``other_schemes``.
    Unknown keywords raise ``TypeError`` before any request.

    >>> async def handler(url, resp):                          # doctest: +SKIP
    ...     return page_links(await resp.read(), str(resp.url))
    >>> summary = await gate.crawl(seeds, handler, concurrency=8)  # doctest: +SKIP
    """
    frontier = Frontier(gate, urls, handler, concurrency=concurrency, **options)
    return await frontier.run()

