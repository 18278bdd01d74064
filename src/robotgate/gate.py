"""RobotGate: the asyncio coordinator that crawl tasks share.

It keeps three promises under load:

1. each origin's robots.txt is fetched once (per-origin single-flight, then
   cached and revalidated as RFC 9309 says);
2. no disallowed URL is fetched, and every verdict explains itself;
3. no origin is hit faster than its budget (delay, Crawl-delay, Retry-After,
   per-origin and global concurrency caps).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Generator
from types import TracebackType
from typing import Any, Literal

import aiohttp
from yarl import URL

from .decision import Decision
from .pacing import HostPacer
from .policy import (
    FetchPolicy,
    entry_for_error,
    entry_for_not_modified,
    entry_for_redirect_failure,
    entry_for_response,
    outcome_decision,
    parse_retry_after,
)
from .records import HostState, Outcome, RobotsEntry
from .robots import RobotsTxt
from .store.base import Store
from .store.memory import MemoryStore
from .urls import InvalidURL, robots_url, split_origin

__all__ = ["Disallowed", "GateClosed", "RobotGate"]

_REDIRECTS = frozenset((301, 302, 303, 307, 308))
# The fleet slot of the request being sent (owned session only): the headers
# must not go out after its deadline.
_SLOT: contextvars.ContextVar[_Slot | None] = contextvars.ContextVar("robotgate_slot",
                                                                   default=None)
# Bounds on the extra spacing asked of a shared store to absorb this process's lag.
_SLACK_MIN = 0.01
_SLACK_MAX = 5.0
# What gate.fetch() tells the middleware about the request it sends (see _InFetch).
_IN_FETCH: contextvars.ContextVar[_InFetch | None] = contextvars.ContextVar(
    "robotgate_in_fetch", default=None
)
Handler = Callable[[aiohttp.ClientRequest], Awaitable[aiohttp.ClientResponse]]
Middleware = Callable[[aiohttp.ClientRequest, Handler], Awaitable[aiohttp.ClientResponse]]


class Disallowed(Exception):
    """robots.txt forbids this URL; ``decision`` says which rule or fetch outcome.

    LWP::RobotUA answered such requests with "403 Forbidden by robots.txt".
    """

    def __init__(self, url: str, decision: Decision) -> None:
        super().__init__(f"{url}: {decision.reason}")
        self.url = url
        self.decision = decision


class GateClosed(RuntimeError):
    """The gate was closed while a task was still asking it something."""


class _Slot:
    """A request slot granted by a shared store, as this process sees it.

    The store spaces the slots of an origin ``interval + margin + slack`` apart
    (on its clock), so a request that leaves no later than ``slack`` after its
    slot's start is still ``interval + margin`` from the next one, whichever
    worker holds that.  ``deadline`` is the loop time after which it may not
    leave (reckoned from when the slot was asked for, so never too late).
    """

    __slots__ = ("deadline", "slack")

    def __init__(self) -> None:
        self.deadline = float("inf")
        self.slack = 0.0

    def check(self, now: float) -> None:
        if now > self.deadline:
            raise _LateSlot


class _LateSlot(Exception):
    """The request would leave after its slot's deadline: it must not go out."""


class _InFetch:
    """The request gate.fetch() is sending: already checked, its origin's slot taken."""

    __slots__ = ("origin", "pacer", "site", "url")

    def __init__(self, url: str, origin: str, site: _Site, pacer: HostPacer) -> None:
        self.url = url
        self.origin = origin
        self.site = site
        self.pacer = pacer


class _Site:
    """What the gate knows of one origin: its robots.txt verdicts and freshness."""

    __slots__ = ("entry", "fresh_until", "host", "interval", "robots_started", "rules",
                 "verdict")

    def __init__(
        self,
        entry: RobotsEntry,
        rules: RobotsTxt | None,
        verdict: Decision | None,
        interval: float,
        host: HostState,
        robots_started: float,
    ) -> None:
        self.entry = entry  # without its body (the store keeps that)
        self.rules = rules
        self.verdict = verdict
        self.fresh_until = entry.fresh_until
        self.interval = interval
        self.host = host
        self.robots_started = robots_started  # loop time the robots.txt request started

    def decide(self, url: str, agent: str) -> Decision:
        if self.verdict is not None:
            return self.verdict
        assert self.rules is not None
        return self.rules.decide(url, agent)

    def allowed(self, url: str, agent: str) -> bool:
        if self.verdict is not None:
            return self.verdict.allowed
        assert self.rules is not None
        return self.rules.allowed(url, agent)


class _Fetch:
    """``await gate.fetch(url)`` or ``async with gate.fetch(url) as resp``."""

    __slots__ = ("_coro", "_resp")

    def __init__(self, coro: Awaitable[aiohttp.ClientResponse]) -> None:
        self._coro = coro
        self._resp: aiohttp.ClientResponse | None = None

    def __await__(self) -> Generator[Any, None, aiohttp.ClientResponse]:
        return self._coro.__await__()

    async def __aenter__(self) -> aiohttp.ClientResponse:
        self._resp = await self._coro
        return self._resp

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._resp is not None:
            self._resp.release()


class RobotGate:
    """A polite gate in front of an aiohttp crawler.

    >>> async def crawl(urls):                                   # doctest: +SKIP
    ...     async with RobotGate("MyBot/1.0 (+https://example.com/bot)",
    ...                          from_="ops@example.com", delay=1.0) as gate:
    ...         for url in urls:
    ...             try:
    ...                 async with gate.fetch(url) as resp:
    ...                     print(url, resp.status, len(await resp.read()))
    ...             except Disallowed as no:
    ...                 print(url, "skipped:", no.decision)

    ``delay`` is the minimum interval (seconds) between the starts of two
    requests to one origin, raised to robots.txt's ``Crawl-delay`` or
    ``Request-rate`` when those ask for more (capped at ``max_crawl_delay``).
    ``max_per_origin`` caps requests in flight per origin and
    ``max_concurrency`` (optional) across all origins.

    The gate owns its ``aiohttp.ClientSession`` unless ``session`` is given
    (then it is not closed).  ``store`` keeps robots.txt entries and host
    state (memory by default; :class:`~robotgate.SQLiteStore` on disk,
    :class:`~robotgate.RedisStore` for a fleet); the gate closes it on
    :meth:`close`.
    """

    def __init__(
        self,
        user_agent: str,
        *,
        from_: str | None = None,
        delay: float = 1.0,
        max_per_origin: int = 1,
        max_concurrency: int | None = None,
        session: aiohttp.ClientSession | None = None,
        store: Store | None = None,
        policy: FetchPolicy | None = None,
        dialect: Literal["rfc9309", "classic"] = "rfc9309",
        lwp_conventions: bool | None = None,
        max_origins: int = 100_000,
        max_crawl_delay: float = 60.0,
        respect_crawl_delay: bool = True,
        recheck_visits: int | None = 1000,
        max_backoff: float = 3600.0,
        pacing_margin: float = 0.0,
    ) -> None:
        if not user_agent or not user_agent.strip():
            raise ValueError("user_agent must name the robot, e.g. 'MyBot/1.0'")
        if delay < 0:
            raise ValueError("delay must be >= 0")
        if max_per_origin < 1:
            raise ValueError("max_per_origin must be at least 1")
        if max_concurrency is not None and max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1 (or None)")
        self.user_agent = user_agent
        self.from_ = from_
        self.delay = float(delay)
        self.max_per_origin = max_per_origin
        self.max_concurrency = max_concurrency
        self.dialect = dialect
        #: LWP::RobotUA's conventions: a robots.txt that is not text, or has no
        #: Disallow line, counts as empty; with them, the 1996 draft's rule that
        #: 401/403 keep out of the whole site (LWP itself read those as empty).
        self.lwp_conventions = dialect == "classic" if lwp_conventions is None else lwp_conventions
        if policy is None:
            policy = FetchPolicy(forbidden_disallows_all=self.lwp_conventions)
        self.policy = policy
        self.max_origins = max_origins
        self.max_crawl_delay = max_crawl_delay
        self.respect_crawl_delay = respect_crawl_delay
        self.recheck_visits = recheck_visits
        self.max_backoff = max_backoff
        #: Seconds added to every non-zero interval. Requests are paced from when the
        #: previous answer arrived, which already keeps them an interval apart at the
        #: server; a margin helps where that does not hold (max_per_origin > 1, a
        #: fleet's slots) and the server queues requests before handling them.
        self.pacing_margin = pacing_margin
        self.store: Store = store if store is not None else MemoryStore(max_origins)
        self._headers = {"User-Agent": user_agent}
        if from_:
            self._headers["From"] = from_
        self._session = session
        self._owns_session = session is None
        self._sites: OrderedDict[str, _Site] = OrderedDict()
        self._inflight: dict[str, asyncio.Task[_Site]] = {}
        self._pacers: dict[str, HostPacer] = {}
        self._global = asyncio.Semaphore(max_concurrency) if max_concurrency else None
        self._closed = False
        self.stats = {"robots_requests": 0, "pages": 0, "disallowed": 0, "backoffs": 0,
                      "late_slots": 0}
        # Fleet pacing: the spacing asked beyond interval + margin, grown when this
        # process is too slow to use its slots on time (event loop lag).
        self._slack = _SLACK_MIN

    # -- lifecycle -----------------------------------------------------------

    async def __aenter__(self) -> RobotGate:
        await self.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def open(self) -> None:
        """Open the store (and the owned session); ``async with`` does this."""
        await self.store.open()
        self._ensure_session()

    def _ensure_session(self) -> aiohttp.ClientSession:
        if self._closed:
            raise GateClosed("the gate is closed")
        if self._session is None:
            # No total connection limit: the per-origin and global caps are ours.
            connector = aiohttp.TCPConnector(limit=0, limit_per_host=0)
            trace = aiohttp.TraceConfig()
            trace.on_request_headers_sent.append(_check_slot)
            self._session = aiohttp.ClientSession(
                headers=self._headers, connector=connector, trace_configs=[trace]
            )
        return self._session

    async def close(self) -> None:
        """Cancel robots.txt fetches in flight, close an owned session and the store."""
        if self._closed:
            return
        self._closed = True
        tasks = list(self._inflight.values())
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        self._inflight.clear()
        if self._owns_session and self._session is not None:
            await self._session.close()
        await self.store.close()

    @property
    def session(self) -> aiohttp.ClientSession:
        """The session requests go through (created on first use if the gate owns it)."""
        return self._ensure_session()

    # -- questions -----------------------------------------------------------

    async def allowed(self, url: str) -> bool:
        """May the robot fetch ``url``?  Fetches robots.txt once per origin if needed."""
        origin, rest = split_origin(url)
        site = self._sites.get(origin)
        if site is None or site.fresh_until <= time.time() or self._recheck_due(origin):
            site = await self._site(origin)
        else:
            self._sites.move_to_end(origin)
        # The rest of the URL is its path (cheaper to match than the whole URL),
        # unless it starts with "//", which would read as a host.
        return site.allowed(url if rest.startswith("//") else rest, self.user_agent)

    async def decide(self, url: str) -> Decision:
        """The verdict for ``url`` with its reason: the rule and line, or the fetch outcome.

        >>> str(await gate.decide("https://down.example/x"))     # doctest: +SKIP
        'robots.txt answered 503: robots.txt is unreachable, so the site counts as ...'
        """
        origin, _ = split_origin(url)
        return (await self._site(origin)).decide(url, self.user_agent)

    async def rules(self, url: str) -> RobotsTxt | None:
        """The parsed robots.txt of ``url``'s origin (``None`` when the fetch outcome decides)."""
        origin, _ = split_origin(url)
        return (await self._site(origin)).rules

    async def robots_entry(self, url: str) -> RobotsEntry:
        """What is known of the origin's robots.txt fetch: status, freshness, failures,
        and the body as fetched (from the store)."""
        origin, _ = split_origin(url)
        site = await self._site(origin)
        stored = await self.store.load_robots(origin)
        if stored is not None and stored.fetched_at == site.entry.fetched_at:
            return stored
        return site.entry

    def pace_key(self, url: str) -> str:
        """The politeness key of ``url``: requests with the same key share one budget."""
        return split_origin(url)[0]

    async def crawl(
        self,
        urls: Any,
        handler: Any,
        *,
        concurrency: int = 16,
        **options: Any,
    ) -> Any:
        """Crawl ``urls`` with ``concurrency`` workers kept busy across hosts.

        See :func:`robotgate.politeness.frontier.crawl`.
        """
        from .politeness.frontier import crawl

        return await crawl(self, urls, handler, concurrency=concurrency, **options)

    def host_wait(self, url: str) -> float:
        """Seconds until the next request to ``url``'s origin may start (0 if now)."""
        origin, _ = split_origin(url)
        pacer = self._pacers.get(origin)
        if pacer is not None:
            return pacer.wait_seconds()
        # No request yet in this process: the stored next allowed time (a restart,
        # or another process) still holds.
        site = self._sites.get(origin)
        return max(0.0, site.host.next_allowed - time.time()) if site is not None else 0.0

    def host_state(self, url: str) -> HostState | None:
        """Visits, last visit and next allowed time of ``url``'s origin, if known."""
        origin, _ = split_origin(url)
        pacer = self._pacers.get(origin)
        if pacer is not None:
            return pacer.state
        site = self._sites.get(origin)
        return site.host if site is not None else None

    def describe(self) -> str:
        """A readable account of the gate's state, for debugging."""
        now = time.time()
        lines = [
            f"RobotGate for {self.user_agent!r}: {len(self._sites)} origins cached, "
            f"{len(self._inflight)} robots.txt fetches in flight, delay {self.delay}s, "
            f"max {self.max_per_origin} per origin"
            + (f", {self.max_concurrency} in all" if self.max_concurrency else ""),
        ]
        for origin, site in self._sites.items():
            entry = site.entry
            fresh = site.fresh_until - now
            pacer = self._pacers.get(origin)
            host = pacer.state if pacer is not None else site.host
            wait = pacer.wait_seconds() if pacer is not None else 0.0
            lines.append(
                f"  {origin}: robots.txt {entry.outcome} ({entry.detail or entry.status}), "
                f"{'fresh for ' + _duration(fresh) if fresh > 0 else 'stale'}, "
                f"interval {site.interval:g}s, visits {host.visits}, "
                f"next request {'now' if wait <= 0 else 'in ' + _duration(wait)}"
                + (f", {pacer.active} in flight, {pacer.waiting} waiting" if pacer else "")
            )
        return "\n".join(lines)

    # -- requests ------------------------------------------------------------

    def fetch(self, url: str, *, method: str = "GET", **kwargs: Any) -> _Fetch:
        """Fetch ``url`` politely; raises :class:`Disallowed` if robots.txt forbids it.

        Returns the :class:`aiohttp.ClientResponse` with its body already read
        (the per-origin slot is held until then); usable as ``await`` or
        ``async with``.  Redirects are checked and paced hop by hop.
        """
        return _Fetch(self._fetch(url, method, kwargs))

    async def _fetch(self, url: str, method: str, kwargs: dict[str, Any]) -> aiohttp.ClientResponse:
        origin, _ = split_origin(url)
        site = await self._site(origin)
        self._check(url, site)
        pacer = self._pacer(origin, site)
        # The origin's slot is taken here, before aiohttp builds the request: with
        # thousands of tasks per origin, only the ones allowed to go cost anything
        # (and a ClientTimeout does not count the wait for the origin's turn).
        pacer.waiting += 1
        try:
            await pacer.semaphore.acquire()
        finally:
            pacer.waiting -= 1
        pacer.active += 1
        token = _IN_FETCH.set(_InFetch(url, origin, site, pacer))
        try:
            return await self._ensure_session().request(
                method, url, middlewares=(self._middleware,), **kwargs
            )
        finally:
            _IN_FETCH.reset(token)
            pacer.active -= 1
            pacer.semaphore.release()

    def _check(self, url: str, site: _Site) -> None:
        """Raise :class:`Disallowed` if ``url`` is forbidden; the reason is built only then."""
        if not site.allowed(url, self.user_agent):
            self.stats["disallowed"] += 1
            raise Disallowed(url, site.decide(url, self.user_agent))

    @property
    def middleware(self) -> Middleware:
        """An aiohttp client middleware: every request is checked and paced.

        >>> session = aiohttp.ClientSession(middlewares=[gate.middleware])  # doctest: +SKIP

        A forbidden URL raises :class:`Disallowed` from the request call.  The
        per-origin slot is held until the response headers arrive.
        """
        return self._middleware

    async def _middleware(
        self, req: aiohttp.ClientRequest, handler: Handler
    ) -> aiohttp.ClientResponse:
        url = str(req.url)
        fetching = _IN_FETCH.get()
        if fetching is not None and fetching.url == url:
            # gate.fetch() has just checked it and holds its origin's slot.
            origin, pacer = fetching.origin, fetching.pacer
        else:
            origin, _ = split_origin(url)
            site = await self._site(origin)
            self._check(url, site)
            pacer = self._pacer(origin, site)
        req.headers["User-Agent"] = self.user_agent
        if self.from_:
            req.headers["From"] = self.from_
        store = self.store
        reserve = None
        slot: _Slot | None = None
        if store.paces:
            slot = _Slot()
            reserve = functools.partial(self._reserve, origin, pacer, slot)
        # Inside gate.fetch() the per-origin slot is already taken (and counted)
        # there. A redirect hop to another origin is paced but does not wait for
        # that origin's slot: two fetches redirecting into each other's origins
        # would otherwise each hold what the other waits for.
        mine = fetching is None
        if mine:
            pacer.waiting += 1
        started = False
        gsem = self._global
        held = False
        try:
            async with pacer.semaphore if mine else contextlib.nullcontext():
                try:
                    if gsem is not None and reserve is not None:
                        # A fleet slot must be used the moment it is due, so the
                        # global slot is taken first.
                        await gsem.acquire()
                        held = True
                    granted = await pacer.wait_turn(reserve)
                    if gsem is not None and not held:
                        await gsem.acquire()
                        held = True
                    await pacer.begin(granted)
                    started = True
                    if mine:
                        pacer.waiting -= 1
                        pacer.active += 1
                    slot_cell = _SLOT.set(slot)
                    try:
                        self.stats["pages"] += 1
                        await store.save_host(pacer.state)
                        while True:
                            try:
                                if slot is not None:
                                    slot.check(asyncio.get_running_loop().time())
                                resp = await handler(req)
                                break
                            except _LateSlot:
                                # Too late for its fleet slot (the loop lagged):
                                # not sent; ask for a new slot, with more slack.
                                assert slot is not None
                                self.stats["late_slots"] += 1
                                self._grow_slack(slot)
                                await pacer.begin(await pacer.wait_turn(reserve))
                        if slot is not None:
                            self._slack = max(_SLACK_MIN, self._slack * 0.999)
                        # The next request is paced from when this one's answer
                        # arrived, not from when it was allowed to start: the server
                        # saw it before answering, so however late the server (or
                        # this loop) handled it, the next one reaches the server at
                        # least the interval later.
                        pacer.sent(asyncio.get_running_loop().time())
                        if fetching is not None:
                            await resp.read()
                    finally:
                        _SLOT.reset(slot_cell)
                        if mine:
                            pacer.active -= 1
                finally:
                    if held and gsem is not None:
                        gsem.release()
        finally:
            if mine and not started:
                pacer.waiting -= 1
        await self._after_response(origin, pacer, resp)
        return resp

    async def _reserve(self, origin: str, pacer: HostPacer, slot: _Slot) -> float | None:
        """Ask the shared store for ``origin``'s next slot; set the slot's deadline."""
        loop = asyncio.get_running_loop()
        slack = self._slack if pacer.interval > 0 else 0.0
        gap = pacer.interval + pacer.margin + slack if pacer.interval > 0 else 0.0
        asked = loop.time()
        wait = await self.store.reserve(origin, gap)
        slot.slack = slack
        # The slot starts no earlier than `asked + wait`, whatever the clocks say.
        slot.deadline = asked + max(0.0, wait) + slack if wait is not None and gap > 0 else (
            float("inf")
        )
        return wait

    def _grow_slack(self, slot: _Slot) -> None:
        # As much as that request was late (not compounded: a lag spike makes
        # every slot in flight late at once); it shrinks again as sends are on time.
        late = asyncio.get_running_loop().time() - (slot.deadline - slot.slack)
        self._slack = min(_SLACK_MAX, max(self._slack, late))

    async def _after_response(
        self, origin: str, pacer: HostPacer, resp: aiohttp.ClientResponse
    ) -> None:
        status = resp.status
        if status == 429 or status == 503:
            pacer.backoff_failures += 1
            wait = parse_retry_after(resp.headers.get("Retry-After"), time.time())
            if wait is None:
                wait = max(pacer.interval, 1.0) * 2 ** min(pacer.backoff_failures - 1, 20)
            wait = min(wait, self.max_backoff)
            pacer.pause(wait)
            self.stats["backoffs"] += 1
            await self.store.pause(origin, time.time() + wait)
        elif pacer.backoff_failures:
            pacer.backoff_failures = 0

    def _pacer(self, origin: str, site: _Site) -> HostPacer:
        pacer = self._pacers.get(origin)
        if pacer is None:
            if len(self._pacers) >= self.max_origins:
                self._sweep_pacers()
            pacer = HostPacer(site.host, site.interval, self.max_per_origin, self.pacing_margin)
            # The robots.txt request counts as a request to the origin.
            pacer.last_start = site.robots_started
            self._pacers[origin] = pacer
        return pacer

    def _sweep_pacers(self) -> None:
        for origin in [o for o, p in self._pacers.items() if p.idle()]:
            del self._pacers[origin]

    def _recheck_due(self, origin: str) -> bool:
        limit = self.recheck_visits
        if limit is None:
            return False
        pacer = self._pacers.get(origin)
        return pacer is not None and pacer.state.visits_since_check >= limit

    # -- robots.txt: single-flight, store, fetch -----------------------------

    async def _site(self, origin: str) -> _Site:
        site = self._sites.get(origin)
        if site is not None and site.fresh_until > time.time() and not self._recheck_due(origin):
            self._sites.move_to_end(origin)
            return site
        task = self._inflight.get(origin)
        if task is None:
            if self._closed:
                raise GateClosed("the gate is closed")
            task = asyncio.get_running_loop().create_task(self._refresh(origin, site))
            self._inflight[origin] = task
            task.add_done_callback(functools.partial(self._forget, origin))
        try:
            # shield: a waiter that is cancelled must not cancel the shared fetch.
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            if self._closed and task.cancelled():
                raise GateClosed("the gate was closed during the robots.txt fetch") from None
            raise

    def _forget(self, origin: str, task: asyncio.Task[_Site]) -> None:
        if self._inflight.get(origin) is task:
            del self._inflight[origin]
        if not task.cancelled():
            task.exception()  # retrieved: waiters got it; no "never retrieved" warning

    async def _refresh(self, origin: str, site: _Site | None) -> _Site:
        loop = asyncio.get_running_loop()
        store = self.store
        host = site.host if site is not None else await store.load_host(origin)
        if host is None:
            host = HostState(origin)
        stored = await store.load_robots(origin)
        limit = self.recheck_visits
        # The stored count counts too: N visits, a restart, and the first ask rechecks.
        recheck = self._recheck_due(origin) or (
            limit is not None and host.visits_since_check >= limit
        )
        if stored is not None and stored.is_fresh(time.time()) and not recheck:
            return self._install(origin, stored, host, -float("inf"))
        previous = stored if stored is not None else (site.entry if site is not None else None)
        token = await store.lock_fetch(origin, self.policy.timeout * 2 + 5)
        tries = 0
        while token is None and tries < 10:
            # Another worker fetches it: wait for its result, then use it.
            tries += 1
            got = await store.wait_robots(origin, self.policy.timeout + 5)
            if got is not None and got.is_fresh(time.time()):
                return self._install(origin, got, host, -float("inf"))
            token = await store.lock_fetch(origin, self.policy.timeout * 2 + 5)
        if token is not None and store.shared:
            # Another worker may have fetched it and let go of the lock between our
            # first look and taking the lock: look again before fetching.
            again = await store.load_robots(origin)
            if again is not None and again.is_fresh(time.time()) and (
                not recheck or stored is None or again.fetched_at > stored.fetched_at
            ):
                await store.unlock_fetch(origin, token)
                return self._install(origin, again, host, -float("inf"))
        started = loop.time()
        try:
            try:
                entry = await self._fetch_robots(origin, previous)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a bug must still give every waiter an answer
                entry = entry_for_error(origin, f"robots.txt check failed: {exc!r}",
                                        time.time(), self.policy, previous)
            kept: RobotsTxt | None = None
            if entry.outcome == Outcome.OK and entry.body is None and site is not None:
                # A good copy stands in whose body only our parsed rules still hold
                # (the store forgot it): keep the rules, and store nothing without them.
                kept = site.rules
            else:
                await store.save_robots(entry)
        finally:
            if token is not None:
                await store.unlock_fetch(origin, token)
        if host.visits_since_check:
            host.visits_since_check = 0
            await store.save_host(host)  # or the next start would recheck again
        return self._install(origin, entry, host, started, kept)

    def _install(
        self,
        origin: str,
        entry: RobotsEntry,
        host: HostState,
        started: float,
        rules: RobotsTxt | None = None,
    ) -> _Site:
        verdict = outcome_decision(entry)
        if verdict is None and rules is None:
            rules = self._parse(entry)
        interval = self._interval(rules)
        # The body is not kept here: the store has it, the parsed rules stand for it.
        site = _Site(entry.copy(body=None), rules, verdict, interval, host, started)
        sites = self._sites
        sites[origin] = site
        sites.move_to_end(origin)
        while len(sites) > self.max_origins:
            sites.popitem(last=False)
        pacer = self._pacers.get(origin)
        if pacer is not None:
            pacer.set_interval(interval)
            pacer.state.visits_since_check = 0
        return site

    def _parse(self, entry: RobotsEntry) -> RobotsTxt:
        body = _recode(entry.body or b"", entry.content_type)
        if self.lwp_conventions:
            from .robots.classic import classic_body_usable

            text = body[: self.policy.max_bytes].decode("utf-8", "replace")
            if not classic_body_usable(entry.content_type, text):
                body = b""
        return RobotsTxt.parse(body, dialect=self.dialect, max_bytes=self.policy.max_bytes,
                               url=robots_url(entry.origin))

    def _interval(self, rules: RobotsTxt | None) -> float:
        interval = self.delay
        if rules is not None and self.respect_crawl_delay:
            asked = rules.crawl_delay(self.user_agent)
            rate = rules.request_rate(self.user_agent)
            if rate is not None:
                asked = max(asked or 0.0, rate.delay)
            if asked is not None:
                interval = max(interval, min(asked, self.max_crawl_delay))
        return interval

    async def _fetch_robots(self, origin: str, previous: RobotsEntry | None) -> RobotsEntry:
        policy = self.policy
        self.stats["robots_requests"] += 1
        try:
            return await asyncio.wait_for(self._fetch_chain(origin, previous), policy.timeout)
        except asyncio.TimeoutError:
            why = f"robots.txt did not answer within {policy.timeout:g}s"
        except (aiohttp.ClientError, OSError) as exc:
            why = f"robots.txt could not be fetched ({type(exc).__name__}: {exc})"
        return entry_for_error(origin, why, time.time(), policy, previous)

    async def _fetch_chain(self, origin: str, previous: RobotsEntry | None) -> RobotsEntry:
        policy = self.policy
        session = self._ensure_session()
        url = robots_url(origin)
        headers = dict(self._headers)
        conditional = previous is not None and previous.outcome == Outcome.OK and (
            previous.body is not None
        )
        if conditional and previous is not None:
            if previous.etag:
                headers["If-None-Match"] = previous.etag
            if previous.last_modified:
                headers["If-Modified-Since"] = previous.last_modified
        seen = {url}
        for _hop in range(policy.max_redirects + 1):
            async with session.get(
                url, headers=headers, allow_redirects=False, middlewares=(_once(),)
            ) as resp:
                status = resp.status
                location = resp.headers.get("Location")
                if status in _REDIRECTS and location:
                    target = str(resp.url.join(URL(location)))
                    try:
                        split_origin(target)
                    except InvalidURL:
                        return entry_for_redirect_failure(
                            origin, f"robots.txt redirected to {target!r}", time.time(), policy
                        )
                    if target in seen:
                        return entry_for_redirect_failure(
                            origin, f"robots.txt redirect loop at {target}", time.time(), policy
                        )
                    seen.add(target)
                    url = target
                    headers = dict(self._headers)  # validators belong to the first URL
                    continue
                now = time.time()
                if status == 304 and conditional and previous is not None:
                    return entry_for_not_modified(previous, resp.headers, now, policy)
                body = await _read_capped(resp, policy.max_bytes) if 200 <= status < 300 else None
                return entry_for_response(origin, status, resp.headers, body, time.time(), policy,
                                          previous, final_url=url)
        return entry_for_redirect_failure(
            origin, f"robots.txt redirected more than {policy.max_redirects} times",
            time.time(), policy, final_url=url,
        )


async def _check_slot(
    session: aiohttp.ClientSession, ctx: object, params: aiohttp.TraceRequestHeadersSentParams
) -> None:
    slot = _SLOT.get()
    if slot is not None:
        # Called just before the request's first bytes are written (after any
        # connection set-up): the last moment it can still be held back.
        slot.check(asyncio.get_running_loop().time())


def _once() -> Middleware:
    """A middleware that lets a request go out once: aiohttp would silently retry
    a GET after a dropped connection, a second robots.txt request we don't want."""
    sent = False

    async def middleware(req: aiohttp.ClientRequest, handler: Handler) -> aiohttp.ClientResponse:
        nonlocal sent
        if sent:
            raise aiohttp.ServerDisconnectedError("connection dropped; not retried")
        sent = True
        return await handler(req)

    return middleware


async def _read_capped(resp: aiohttp.ClientResponse, limit: int) -> bytes:
    """At most ``limit`` bytes of the body; the rest is not read."""
    chunks: list[bytes] = []
    size = 0
    while size < limit:
        chunk = await resp.content.read(min(65536, limit - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _recode(body: bytes, content_type: str | None) -> bytes:
    """Bodies in a declared non-UTF-8 charset are re-encoded to UTF-8 for the parser."""
    if not content_type or "charset=" not in content_type.lower():
        return body
    charset = content_type.lower().split("charset=", 1)[1].split(";")[0].strip().strip("\"'")
    if charset in ("utf-8", "utf8", "us-ascii", "ascii", ""):
        return body
    try:
        return body.decode(charset, "replace").encode("utf-8")
    except LookupError:
        return body


def _duration(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.1f}h"
    if seconds >= 60:
        return f"{seconds / 60:.1f}m"
    return f"{seconds:.2f}s"
