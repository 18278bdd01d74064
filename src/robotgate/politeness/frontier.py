"""The crawl frontier behind ``gate.crawl``: per-host queues, workers kept busy across hosts.

A bounded worker pool over ``gate.fetch`` with URLs sorted by host blocks at
the head of the line: every worker ends up waiting on the same host's pacing
while other hosts sit idle.  The frontier instead keeps one queue per
politeness key (``gate.pace_key(url)``) and a heap of keys ordered by when
each may next be asked (``gate.host_wait(url)``); a URL is handed to a worker
only when its host is ready, so ``concurrency`` workers stay busy as long as
any host has work that may start now.

It knows no HTTP client: it uses the gate's public API only (``fetch``,
``allowed``, ``decide``, ``pace_key``, ``host_wait``, and ``usage`` when the
gate has it), so any gate-like object with those methods can drive it.

Bounds: URLs are taken from the input only while fewer than ``max_queued``
wait in the host queues, so memory follows the queued URLs, not the input's
length.  URLs a handler returns are deduplicated against a set of the URLs
seen (input and discovered) holding at most ``max_seen`` entries; once it is
full, newly discovered URLs are dropped (and counted), never crawled twice.
"""

from __future__ import annotations

import asyncio
import heapq
import inspect
import itertools
import logging
import time
from collections import deque
from collections.abc import AsyncIterable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..urls import InvalidURL, split_origin

__all__ = [
    "CrawlResult",
    "CrawlSummary",
    "Frontier",
    "Handled",
    "HostSummary",
    "crawl",
]

log = logging.getLogger("robotgate.frontier")

#: Statuses retried when ``max_retries`` > 0: the gate backs the host off first.
RETRY_STATUSES = frozenset({429, 503})


@dataclass(frozen=True, slots=True)
class Handled:
    """What a handler may return instead of a bare iterable of links.

    ``links`` join the frontier; ``bytes`` and ``info`` are copied into the
    URL's :class:`CrawlResult` (e.g. the body size read, where it was saved).
    """

    links: Iterable[str] = ()
    bytes: int | None = None
    info: Mapping[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class CrawlResult:
    """What happened to one URL; handed to ``on_result`` as each URL finishes.

    Exactly one of these holds: ``status`` is set (a response came, whatever
    its code), ``decision`` is set (robots.txt forbids the URL: skipped), or
    ``error`` is set (invalid URL, network error, timeout, handler error; a
    handler error after a response keeps ``status`` too).
    """

    url: str
    key: str | None = None
    status: int | None = None
    final_url: str | None = None
    error: str | None = None
    decision: Any = None
    bytes: int | None = None
    elapsed: float = 0.0
    usage: dict[str, bool] | None = None
    info: dict[str, Any] = field(default_factory=dict)
    discovered: bool = False
    attempts: int = 1

    @property
    def kind(self) -> str:
        """``"page"``, ``"skipped"``, ``"error"`` or ``"invalid"`` (no key: not crawlable)."""
        if self.key is None:
            return "invalid"
        if self.decision is not None:
            return "skipped"
        if self.error is not None:
            return "error"
        return "page"


@dataclass(slots=True)
class HostSummary:
    """One politeness key's tally: pages, robots.txt skips, errors, request starts."""

    pages: int = 0
    skipped: int = 0
    errors: int = 0
    starts: int = 0
    first_start: float | None = None
    last_start: float | None = None

    def mean_interval(self) -> float | None:
        """Mean seconds between two request starts (``None`` below two requests)."""
        if self.starts < 2 or self.first_start is None or self.last_start is None:
            return None
        return (self.last_start - self.first_start) / (self.starts - 1)

    def _started(self, when: float) -> None:
        if self.first_start is None:
            self.first_start = when
        self.last_start = when
        self.starts += 1


@dataclass(slots=True)
class CrawlSummary:
    """What a crawl did.  Filled in live: pass one as ``summary=`` to watch it.

    ``read`` counts input URLs taken, ``queued``/``in_flight``/``hosts_queued``
    describe the frontier right now, ``dropped`` counts discovered URLs left
    out because ``max_seen`` or ``max_queued`` was reached, ``retried`` the
    answers (429/503) retried.  ``skipped_origins`` maps each origin that
    robots.txt's fetch outcome (not a rule) ruled out to the reason.
    """

    pages: int = 0
    skipped: int = 0
    errors: int = 0
    invalid: int = 0
    discovered: int = 0
    dropped: int = 0
    retried: int = 0
    read: int = 0
    queued: int = 0
    in_flight: int = 0
    hosts_queued: int = 0
    input_done: bool = False
    stopped: bool = False
    started: float = field(default_factory=time.monotonic)
    elapsed: float = 0.0
    hosts: dict[str, HostSummary] = field(default_factory=dict)
    skipped_origins: dict[str, str] = field(default_factory=dict)

    @property
    def done(self) -> int:
        """URLs finished, whatever the result."""
        return self.pages + self.skipped + self.errors + self.invalid

    def skipped_by_reason(self) -> dict[str, list[str]]:
        """Origins skipped as a whole, grouped by reason (most origins first)."""
        groups: dict[str, list[str]] = {}
        for origin, reason in self.skipped_origins.items():
            groups.setdefault(reason, []).append(origin)
        return dict(sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])))

    def _host(self, key: str) -> HostSummary:
        tally = self.hosts.get(key)
        if tally is None:
            tally = self.hosts[key] = HostSummary()
        return tally


Handler = Callable[[str, Any], Any]


@dataclass(slots=True)
class _Item:
    url: str
    discovered: bool = False
    attempts: int = 1


class _Host:
    """One politeness key's queue and scheduling state."""

    __slots__ = ("active", "key", "queue", "ready_at")

    def __init__(self, key: str) -> None:
        self.key = key
        self.queue: deque[_Item] = deque()
        self.active = 0
        self.ready_at: float | None = None  # time of its live heap entry, if any


class _Stop(Exception):
    """Raised inside the frontier to end the crawl (stop event, failure)."""


class Frontier:
    """One crawl: see :func:`crawl` for the arguments.  ``await run()`` once."""

    def __init__(
        self,
        gate: Any,
        urls: Iterable[str] | AsyncIterable[str],
        handler: Handler,
        *,
        concurrency: int = 16,
        per_host: int | None = None,
        timeout: float | None = None,
        on_result: Callable[[CrawlResult], Any] | None = None,
        fetch: Callable[[str], Any] | None = None,
        max_queued: int = 100_000,
        max_seen: int = 100_000,
        max_retries: int = 0,
        retry_statuses: Iterable[int] = RETRY_STATUSES,
        stop: asyncio.Event | None = None,
        summary: CrawlSummary | None = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if timeout is not None and timeout <= 0:
            raise ValueError("timeout must be > 0 (or None)")
        self.gate = gate
        self.urls = urls
        self.handler = handler
        self.concurrency = concurrency
        cap: Any = per_host or getattr(gate, "max_per_host", None) or getattr(
            gate, "max_per_origin", 1
        )
        self.per_host = max(1, int(cap))
        self.timeout = timeout
        self.on_result = on_result
        self.fetch = fetch if fetch is not None else gate.fetch
        self.max_queued = max(1, max_queued)
        self.max_seen = max_seen
        self.max_retries = max_retries
        self.retry_statuses = frozenset(retry_statuses)
        self.stop_event = stop
        self.summary = summary if summary is not None else CrawlSummary()
        self._usage = getattr(gate, "usage", None)
        self._hosts: dict[str, _Host] = {}
        self._heap: list[tuple[float, int, _Host]] = []
        self._seq = itertools.count()
        self._seen: set[str] = set()
        self._visits: set[asyncio.Task[None]] = set()
        self._wakeup: asyncio.Future[None] | None = None
        self._room = asyncio.Event()
        self._room.set()
        self._halted = False
        self._failure: BaseException | None = None
        self._loop = asyncio.get_running_loop()

    # -- running ---------------------------------------------------------

    async def run(self) -> CrawlSummary:
        """Crawl until the input is used up and every queued URL is done."""
        summary = self.summary
        summary.started = time.monotonic()
        feeder = self._loop.create_task(self._feed())
        feeder.add_done_callback(self._feed_done)
        watcher = None
        if self.stop_event is not None:
            watcher = self._loop.create_task(self._watch_stop(self.stop_event))
        try:
            await self._schedule()
        finally:
            self._halted = True
            tasks = [feeder, *self._visits, *([watcher] if watcher else [])]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            summary.elapsed = time.monotonic() - summary.started
            summary.in_flight = 0
        if self._failure is not None:
            raise self._failure
        return summary

    async def _watch_stop(self, event: asyncio.Event) -> None:
        await event.wait()
        self.summary.stopped = True
        self._halt()

    def _halt(self, failure: BaseException | None = None) -> None:
        if failure is not None and self._failure is None:
            self._failure = failure
        self._halted = True
        self._poke()

    def _feed_done(self, task: asyncio.Task[None]) -> None:
        self.summary.input_done = True
        if not task.cancelled() and task.exception() is not None:
            self._halt(task.exception())
        self._poke()

    # -- the scheduler ---------------------------------------------------

    async def _schedule(self) -> None:
        """Hand ready hosts' URLs to free workers until all is done."""
        summary = self.summary
        while not self._halted:
            wake: float | None = None
            if len(self._visits) < self.concurrency:
                taken = self._take_ready()
                if isinstance(taken, tuple):
                    self._start(*taken)
                    continue
                wake = taken
                if wake is None and summary.input_done and not self._visits:
                    return
            await self._sleep(wake)

    def _take_ready(self) -> tuple[_Host, _Item] | float | None:
        """A URL of the earliest ready host, or when the next host is due (or None)."""
        heap = self._heap
        now = self._loop.time()
        while heap:
            due, _, host = heap[0]
            if host.ready_at != due:
                heapq.heappop(heap)  # superseded entry
                continue
            if due > now:
                return due
            heapq.heappop(heap)
            host.ready_at = None
            if not host.queue or host.active >= self.per_host:
                continue
            wait = self._host_wait(host.queue[0].url)
            if wait > 0:
                self._push(host, now + wait)
                continue
            item = host.queue.popleft()
            host.active += 1
            self._dequeued(host)
            if host.queue and host.active < self.per_host:
                self._push(host, now)
            return host, item
        return None

    def _host_wait(self, url: str) -> float:
        try:
            return float(self.gate.host_wait(url))
        except Exception:  # a gate that cannot say: let the fetch wait its turn
            return 0.0

    def _push(self, host: _Host, due: float) -> None:
        if host.ready_at is not None and host.ready_at <= due:
            return
        host.ready_at = due
        heapq.heappush(self._heap, (due, next(self._seq), host))
        self._poke()

    async def _sleep(self, until: float | None) -> None:
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

    # -- queues ----------------------------------------------------------

    def _enqueue(self, key: str, item: _Item, *, front: bool = False) -> None:
        host = self._hosts.get(key)
        if host is None:
            host = self._hosts[key] = _Host(key)
        if not host.queue:
            self.summary.hosts_queued += 1
        if front:
            host.queue.appendleft(item)
        else:
            host.queue.append(item)
        self.summary.queued += 1
        if self.summary.queued >= self.max_queued:
            self._room.clear()
        if host.active < self.per_host:
            self._push(host, self._loop.time())

    def _dequeued(self, host: _Host) -> None:
        summary = self.summary
        summary.queued -= 1
        if not host.queue:
            summary.hosts_queued -= 1
        if summary.queued < self.max_queued:
            self._room.set()

    def _release(self, host: _Host, wait: float = 0.0) -> None:
        host.active -= 1
        if host.queue:
            url = host.queue[0].url
            self._push(host, self._loop.time() + max(wait, self._host_wait(url)))
        elif host.active == 0 and host.ready_at is None:
            del self._hosts[host.key]
        self._poke()

    def _key(self, url: object) -> str:
        if not isinstance(url, str):
            raise InvalidURL(url, "not a string")
        return str(self.gate.pace_key(url))

    # -- input -----------------------------------------------------------

    async def _feed(self) -> None:
        urls = self.urls
        if isinstance(urls, AsyncIterable):
            async for url in urls:
                await self._offer(url)
        else:
            for n, url in enumerate(urls):
                await self._offer(url)
                if n % 256 == 255:
                    await asyncio.sleep(0)  # a long list must not starve the loop

    async def _offer(self, url: str) -> None:
        if not self._room.is_set():
            await self._room.wait()
        self.summary.read += 1
        try:
            key = self._key(url)
        except (ValueError, TypeError) as exc:  # InvalidURL is a ValueError
            self._invalid(url, exc)
            return
        if len(self._seen) < self.max_seen:
            self._seen.add(_defrag(url))
        self._enqueue(key, _Item(url))

    def _invalid(self, url: object, exc: BaseException, discovered: bool = False) -> None:
        self.summary.invalid += 1
        text = url if isinstance(url, str) else repr(url)
        self._emit(CrawlResult(text, error=str(exc), discovered=discovered))

    def _discover(self, links: Iterable[str]) -> None:
        summary = self.summary
        for link in links:
            if not isinstance(link, str):
                continue
            url = _defrag(link)
            if url in self._seen:
                continue
            if len(self._seen) >= self.max_seen or summary.queued >= self.max_queued:
                summary.dropped += 1
                continue
            self._seen.add(url)
            try:
                key = self._key(url)
            except (ValueError, TypeError) as exc:
                self._invalid(url, exc, discovered=True)
                continue
            summary.discovered += 1
            self._enqueue(key, _Item(url, discovered=True))

    # -- one URL ---------------------------------------------------------

    def _start(self, host: _Host, item: _Item) -> None:
        task = self._loop.create_task(self._visit(host, item))
        self._visits.add(task)
        self.summary.in_flight += 1
        task.add_done_callback(self._visit_done)

    def _visit_done(self, task: asyncio.Task[None]) -> None:
        self._visits.discard(task)
        self.summary.in_flight -= 1
        if not task.cancelled() and task.exception() is not None:
            self._halt(task.exception())
        self._poke()

    async def _visit(self, host: _Host, item: _Item) -> None:
        url = item.url
        gate = self.gate
        record = CrawlResult(url, host.key, discovered=item.discovered, attempts=item.attempts)
        began = time.monotonic()
        wait = 0.0
        try:
            # robots.txt first (one fetch per origin, shared), outside the page timeout.
            if not await gate.allowed(url):
                record.decision = await gate.decide(url)
            else:
                wait = self._host_wait(url)
                if wait > 0:
                    # Fetching robots.txt counted as a request: not this host's turn
                    # yet, so the worker goes elsewhere and the URL waits at the front.
                    self._enqueue_front(host, item)
                    return
                self.summary._host(host.key)._started(self._loop.time())
                await self._page(url, record)
        except asyncio.TimeoutError as exc:
            record.error = (
                f"timed out: page not done within {self.timeout:g}s"
                if self.timeout is not None else _describe(exc)
            )
        except Exception as exc:  # recorded, never raised out of the crawl
            if getattr(exc, "decision", None) is not None:  # Disallowed (a redirect)
                record.decision = exc.decision  # type: ignore[attr-defined]
                record.final_url = getattr(exc, "url", None)
            else:
                record.error = _describe(exc)
                log.debug("%s: %s", url, record.error)
        finally:
            if wait <= 0:
                record.elapsed = time.monotonic() - began
            self._release(host, wait)
        if self._retry(host, item, record):
            return
        self._finish(record)

    def _enqueue_front(self, host: _Host, item: _Item) -> None:
        if not host.queue:
            self.summary.hosts_queued += 1
        host.queue.appendleft(item)
        self.summary.queued += 1

    async def _page(self, url: str, record: CrawlResult) -> None:
        if self.timeout is None:
            await self._fetch_and_handle(url, record)
        else:
            await asyncio.wait_for(self._fetch_and_handle(url, record), self.timeout)

    async def _fetch_and_handle(self, url: str, record: CrawlResult) -> None:
        async with self.fetch(url) as resp:
            record.status = int(resp.status)
            record.final_url = str(getattr(resp, "url", url))
            if self._usage is not None:
                usage = self._usage(url, getattr(resp, "headers", {}))
                record.usage = dict(await usage if inspect.isawaitable(usage) else usage)
            if self._will_retry(record):
                return  # the handler sees the answer that counts, not the 429 before it
            returned = self.handler(url, resp)
            if inspect.isawaitable(returned):
                returned = await returned
        if isinstance(returned, Handled):
            record.bytes = returned.bytes
            record.info.update(returned.info)
            links: Iterable[str] = returned.links
        else:
            links = returned if returned is not None else ()
        if isinstance(links, (str, bytes)):
            raise TypeError("the handler returned a string, not an iterable of URLs")
        self._discover(links)

    def _will_retry(self, record: CrawlResult) -> bool:
        return (
            record.status in self.retry_statuses
            and record.attempts <= self.max_retries
            and not self._halted
        )

    def _retry(self, host: _Host, item: _Item, record: CrawlResult) -> bool:
        if record.error is None and self._will_retry(record):
            self.summary.retried += 1
            self._enqueue(host.key, _Item(item.url, item.discovered, item.attempts + 1),
                          front=True)
            return True
        return False

    def _finish(self, record: CrawlResult) -> None:
        summary = self.summary
        key = record.key
        tally = summary._host(key) if key is not None else None
        kind = record.kind
        if kind == "skipped":
            summary.skipped += 1
            decision = record.decision
            if getattr(decision, "outcome", None) is not None:
                try:
                    origin = split_origin(record.url)[0]
                except InvalidURL:
                    origin = record.url
                summary.skipped_origins.setdefault(origin, str(decision.reason))
        elif kind == "error":
            summary.errors += 1
        else:
            summary.pages += 1
        if tally is not None:
            if kind == "skipped":
                tally.skipped += 1
            elif kind == "error":
                tally.errors += 1
            else:
                tally.pages += 1
        self._emit(record)

    def _emit(self, record: CrawlResult) -> None:
        if self.on_result is not None:
            self.on_result(record)  # an exception here ends the crawl, and is raised


def _wake(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


def _defrag(url: str) -> str:
    return url.split("#", 1)[0]


def _describe(exc: BaseException) -> str:
    text = str(exc)
    name = type(exc).__name__
    return f"{name}: {text}" if text else name


async def crawl(
    gate: Any,
    urls: Iterable[str] | AsyncIterable[str],
    handler: Handler,
    *,
    concurrency: int = 16,
    **options: Any,
) -> CrawlSummary:
    """Crawl ``urls`` through ``gate`` with ``concurrency`` workers kept busy across hosts.

    ``urls`` is any iterable or async iterable, consumed lazily (at most
    ``max_queued`` URLs wait in memory).  ``handler(url, response)`` is
    awaited while the response is open; it may return an iterable of new URLs
    (or a :class:`Handled`), which join the frontier once each.  URLs that
    robots.txt forbids are skipped with their decision; invalid URLs, network
    errors, timeouts and handler errors are recorded, never raised.

    Options: ``per_host`` (requests in flight per politeness key; default the
    gate's ``max_per_origin``), ``timeout`` (seconds for one page, from its
    request to the handler's end), ``on_result`` (called with each
    :class:`CrawlResult`; an exception it raises ends the crawl), ``fetch``
    (``url -> async context manager of the response``; default
    ``gate.fetch``), ``max_queued``, ``max_seen``, ``max_retries`` and
    ``retry_statuses`` (429/503 answers retried after the gate's back-off),
    ``stop`` (an :class:`asyncio.Event`: set it to end the crawl early, in
    flight requests cancelled) and ``summary`` (a :class:`CrawlSummary` to
    fill in live, e.g. for a progress bar).

    >>> async def handler(url, resp):                          # doctest: +SKIP
    ...     html = await resp.text()
    ...     return extract_links(html, url)
    >>> summary = await gate.crawl(seeds, handler, concurrency=8)  # doctest: +SKIP
    """
    frontier = Frontier(gate, urls, handler, concurrency=concurrency, **options)
    return await frontier.run()

