"""The robots.txt cache: one fetch per origin however many tasks ask (single flight).

It owns one :class:`~robotgate.policy.site.CachedSite` per origin, which holds the origin's
:class:`~robotgate.policy.site.SiteRules` (an immutable value, replaced by each
fetch): freshness, the recheck after N visits, the store look-ups and, in a
fleet, the store's fetch lock so that one worker fetches for all.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import replace
from typing import Literal

from ..error_root import Error
from ..events import LocalShortage, RobotsFetched
from ..policy.fetch import LocalFailure, outcome_decision
from ..policy.hops import Address
from ..policy.host_settings import HostSettings
from ..policy.site import (
    SKIPPED,
    CachedSite,
    Interpretation,
    ParsedBodies,
    SiteRules,
    interpret,
    parse_entry,
)
from ..records import HostState, Outcome, RobotsEntry
from ..redaction import logger
from ..robots import RobotsTxt
from ..store.base import AnswersAtOnce, Fleet, Store
from .emitter import Emitter
from .lock_lease import LockLease
from .robots_fetcher import PacingHooks, RobotsFetcher
from .scheduler import Scheduler
from .store_trouble import StoreTrouble

__all__ = ["CacheClosed", "RobotsCache"]

#: close() cancels a fetch up to this many times, waiting this long (s) after each.
_CLOSE_TRIES = 3
_CLOSE_WAIT = 0.25
_CLOSED_DURING = "the gate was closed during the robots.txt fetch"
#: A fleet fetch lock lasts this long (s) and is renewed every third of it while
#: the fetch goes on: the lock of a worker killed mid-fetch holds others up no longer.
#: (Longer in a process whose lock calls come back late: see lock_lease.)
_LOCK_LEASE = 10.0
#: A fetch that finds its lock taken by another worker waits for that one's fetch, this
#: many times at most; then it fetches all the same.
_LOCK_ROUNDS = 3
#: Looks, at most, that the lock is ours before the request leaves (again while each
#: answer comes too late to be sure of).
_CONFIRM_TRIES = 3

#: The first pause (s) before a fetch this machine could not send is asked again,
#: doubling up to the second.
_SHORTAGE_PAUSE = 0.05
_SHORTAGE_PAUSE_MAX = 2.0

#: A robots.txt body longer than this is parsed, and its rules for the gate's agent
#: compiled, in a worker thread: 500 KiB of rules take the parser and the compile most
#: of a second of pure Python, which on the loop would hold every other request (the
#: interpreter lets the loop run between the thread's slices).  Shorter bodies, nearly
#: every one, are parsed on the loop: a thread would cost them more than the parse.
PARSED_ASIDE = 32 * 1024

#: robots.txt fetched, taken from the store or from another worker (docs/logging.md).
log = logger("robotgate.robots")
#: A site skipped for the Crawl-delay it asks.
pacing_log = logger("robotgate.pacing")


def _tell_shortage(shortage: LocalFailure, count: int, left: float) -> None:
    """A WARNING naming the limit and what to raise: the first shortage, every tenfold
    count after it, and each given up; the others at DEBUG."""
    again = f"asking again for {left:.1f}s more" if left > 0 else "given up"
    level = (logging.WARNING if left <= 0 or count == 10 ** (len(str(count)) - 1)
             else logging.DEBUG)
    log.log(level, "%s (%s; %d such failures so far)", shortage, again, count)


@asynccontextmanager
async def _unpaced() -> AsyncIterator[PacingHooks | None]:
    yield None


def parsed_aside(entry: RobotsEntry, how: Interpretation) -> RobotsTxt:
    """The rules of a 2xx ``entry`` as :func:`~robotgate.policy.site.interpret` reads
    them, the agent's group compiled (a first question, which builds its decider, does
    it): the work of a long body done where it holds no loop."""
    rules = parse_entry(entry, how)
    rules.decide(entry.origin + "/", how.agent)
    return rules


async def _stop(lease: asyncio.Task[None] | None) -> None:
    """Stop renewing a fetch lock."""
    if lease is not None:
        lease.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await lease


def _intact(entry: RobotsEntry | None) -> RobotsEntry | None:
    """A stored entry, or None when it is damaged: an "ok" one without its body
    (robotgate never stores one) would read as "allow everything"."""
    if entry is not None and entry.outcome == Outcome.OK and entry.body is None:
        return None
    return entry


class _Flight:
    """One origin's robots.txt fetch in flight and the futures of those waiting for it."""

    __slots__ = ("checked", "guard", "task", "via", "waiters")

    def __init__(self, guard: bool = False, checked: tuple[Address, ...] = (),
                 via: object = None) -> None:
        self.task: asyncio.Task[None] | None = None
        self.waiters: list[asyncio.Future[SiteRules]] = []
        #: The asker that started it came through a public page's pointer: its
        #: connection must reach a public address (``checked``: the pointer check's).
        self.guard = guard
        self.checked = checked
        #: The route the asker that started it takes (an adapter's proxy): the fetch
        #: takes it too.
        self.via = via


class _Held:
    """A fleet fetch lock this worker holds: its token, when (on the cache's
    monotonic clock) a request that took or renewed it was sent and the lease it
    asked for: the lock is ours for that long from then, and when (wall clock, as
    entries' ``fetched_at``) this worker began to take it."""

    __slots__ = ("confirmed", "lease", "since", "token")

    def __init__(self, token: str, confirmed: float, lease: float, since: float) -> None:
        self.token = token
        self.confirmed = confirmed
        self.lease = lease
        self.since = since

    def renewed(self, asked: float, lease: float) -> None:
        """A renewal sent at ``asked`` for ``lease`` s was granted."""
        if asked >= self.confirmed:
            self.confirmed, self.lease = asked, lease


class _LockLost(Exception):
    """The fetch lock turned out to be another worker's before the request left."""


class CacheClosed(Error, RuntimeError):
    """The cache was closed while a task was waiting for it."""


class RobotsCache:
    """Per-origin robots.txt rules, fetched once, kept fresh, bounded in size.

    ``host_state(origin)`` gives the HostState that counts the origin's visits
    (its politeness group's); ``paced_by(origin)`` is held around each robots.txt
    request, which is a request to the server like any other.  ``fleet``: the
    store's fleet part (None: one process uses it), whose fetch lock makes one
    worker fetch for all; ``at_once``: the store's answers without an await;
    ``clock``: the monotonic clock that times the fetch lock's life.
    """

    def __init__(
        self,
        fetcher: RobotsFetcher,
        store: Store,
        how: Interpretation,
        *,
        fleet: Fleet | None = None,
        at_once: AnswersAtOnce | None = None,
        host_state: Callable[[str], HostState | Awaitable[HostState]],
        paced_by: Callable[[str], AbstractAsyncContextManager[PacingHooks | None]] | None = None,
        max_origins: int = 100_000,
        recheck_visits: int | None = 1000,
        events: Emitter | None = None,
        host_setting: Callable[[str], HostSettings | None] | None = None,
        trouble: StoreTrouble | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.fetcher = fetcher
        self.store = store
        self.fleet = fleet
        self.how = how
        self.max_origins = max_origins
        self.recheck_visits = recheck_visits
        self._host_state = host_state
        self._paced_by = paced_by
        self._mem = at_once  # answers without an await: one coroutine less each
        self._sites: dict[str, CachedSite] = {}
        # Sites serving the same file share its rules; never more kept than sites.
        self._bodies = ParsedBodies(min(256, max_origins))
        self._inflight: dict[str, _Flight] = {}
        self._releasing: set[str] = set()  # origins whose fleet fetch lock is being let go
        self._closed = False
        #: Who hears the events (None: nobody listens).
        self.events = events
        #: The host setting of an origin, if any applies (None: no settings).
        self.host_setting = host_setting
        #: Counts and tells the store's failures.
        self.trouble = trouble if trouble is not None else StoreTrouble(store, events)
        #: robots.txt fetches that could not be sent for a shortage of this machine's
        #: (:class:`LocalFailure`), each attempt counted.
        self.local_failures = 0
        #: The monotonic clock the fleet's fetch lock is timed by.
        self._clock = clock
        self._leases = LockLease(clock)

    # -- the hot path -------------------------------------------------------------

    def cached(self, origin: str) -> SiteRules | None:
        """The origin's rules if cached, fresh and not due for a recheck; no I/O."""
        held = self.fresh(origin)
        return held.site if held is not None else None

    def fresh(self, origin: str) -> CachedSite | None:
        """As :meth:`cached`, the cache's whole record of the origin."""
        held = self._sites.get(origin)
        if held is None or not held.usable(time.time(), self.recheck_visits):
            return None
        held.used = True
        return held

    def touch(self, held: CachedSite) -> None:
        """``held`` was asked about (the CLOCK bit: spared by the next eviction)."""
        held.used = True

    @property
    def records(self) -> Mapping[str, CachedSite]:
        """Origin -> the cache's record, to read (the hot path reads it without a call)."""
        return self._sites

    def bind(self, origin: str, host: HostState, key: str) -> None:
        """``origin``'s server is known: its politeness key and the HostState its group paces."""
        held = self._sites.get(origin)
        if held is not None:
            held.host = host
            held.key = key

    def peek(self, origin: str) -> SiteRules | None:
        """The origin's rules as cached, fresh or not (for describe and host_wait)."""
        held = self._sites.get(origin)
        return held.site if held is not None else None

    def known(self, origin: str) -> CachedSite | None:
        """The cache's record of ``origin``, fresh or not (to read, not to write)."""
        return self._sites.get(origin)

    async def get(self, origin: str) -> SiteRules:
        """The origin's rules, fetching robots.txt once for all waiters when needed."""
        site = self.cached(origin)
        if site is not None:
            return site
        return await self.fetched(origin)

    async def fetched(self, origin: str, guard: bool = False,
                      checked: tuple[Address, ...] = (), via: object = None) -> SiteRules:
        """As :meth:`get`, right after :meth:`cached` said no: joins or starts the fetch.
        ``guard``: the asker came through a public page's pointer, so the fetch must
        connect to a public address (``checked``: the addresses its check found): one
        it starts, or joins before its request leaves, is guarded for every waiter.
        ``via``: the route the asker takes, which a fetch it starts takes too."""
        flight = self._inflight.get(origin)
        loop = asyncio.get_running_loop()
        if flight is None:
            if self._closed:
                raise CacheClosed("the gate is closed")
            flight = self._inflight[origin] = _Flight(guard, checked, via)
            flight.task = loop.create_task(self._fly(origin, flight))
        # Each waiter awaits its own future: one that is cancelled cancels only
        # that, never the shared fetch (as asyncio.shield, with fewer hops).
        elif guard and not flight.guard:
            # Read as the request leaves: a fetch still waiting for the server's turn
            # is guarded from now on (one that left was the user's own request).
            flight.guard, flight.checked = True, checked
        waiter: asyncio.Future[SiteRules] = loop.create_future()
        flight.waiters.append(waiter)
        try:
            return await waiter
        except asyncio.CancelledError:
            if self._closed and flight.task is not None and flight.task.cancelled():
                raise CacheClosed(_CLOSED_DURING) from None
            raise

    async def _fly(self, origin: str, flight: _Flight) -> None:
        """The shared fetch: its answer (or error) goes to every waiter still waiting."""
        try:
            site = await self._refresh(origin, self.peek(origin), flight)
        except asyncio.CancelledError:
            self._land(origin, flight)
            for waiter in flight.waiters:
                waiter.cancel()
            raise
        except Exception as exc:
            self._land(origin, flight)
            for waiter in flight.waiters:
                if not waiter.done():
                    waiter.set_exception(exc)
            return
        except BaseException as exc:
            # KeyboardInterrupt, SystemExit: raised in the asker's task, where its try
            # sees it (raised from this task, it would stop the loop past every try).
            # One asker gets it, as a signal has one target; the others ask again.
            self._land(origin, flight)
            self._interrupted(origin, flight, exc)
            return
        self._land(origin, flight)
        for waiter in flight.waiters:
            if not waiter.done():
                waiter.set_result(site)

    def _interrupted(self, origin: str, flight: _Flight, exc: BaseException) -> None:
        """``flight`` ended with ``exc``, no Exception: the first waiter still waiting
        gets it; the others join a fetch of their own (or one started meanwhile)."""
        waiting = [waiter for waiter in flight.waiters if not waiter.done()]
        if not waiting:
            return
        waiting[0].set_exception(exc)
        if len(waiting) == 1:
            return
        if self._closed:
            for waiter in waiting[1:]:
                waiter.set_exception(CacheClosed(_CLOSED_DURING))
            return
        again = self._inflight.get(origin)
        if again is None:
            again = self._inflight[origin] = _Flight(flight.guard, flight.checked, flight.via)
            again.task = asyncio.get_running_loop().create_task(self._fly(origin, again))
        again.waiters.extend(waiting[1:])

    def _land(self, origin: str, flight: _Flight) -> None:
        if self._inflight.get(origin) is flight:
            del self._inflight[origin]

    @property
    def inflight(self) -> int:
        return len(self._inflight)

    def sites(self) -> dict[str, SiteRules]:
        return {origin: held.site for origin, held in self._sites.items()}

    async def close(self) -> None:
        """Cancel the fetches in flight; later asks raise :class:`CacheClosed`."""
        self._closed = True
        flights = list(self._inflight.values())
        origins = {f.task: origin for origin, f in self._inflight.items() if f.task is not None}
        tasks = set(origins)
        for _ in range(_CLOSE_TRIES):
            # Asked again: on 3.11 a cancel can be lost inside redis-py's wait_for.
            pending = {task for task in tasks if not task.done()}
            if not pending:
                break
            for task in pending:
                if origins[task] not in self._releasing:
                    task.cancel()
            await asyncio.wait(pending, timeout=_CLOSE_WAIT)
        for task in tasks:
            if task.done() and not task.cancelled():
                task.exception()  # retrieved: _fly gave it to its waiters
        for flight in flights:
            # A fetch cancelled before it began, or one still running, never told its waiters.
            for waiter in flight.waiters:
                if not waiter.done():
                    waiter.set_exception(CacheClosed(_CLOSED_DURING))
        self._inflight.clear()

    # -- refresh: store, fleet lock, fetch ---------------------------------------------

    async def _refresh(self, origin: str, site: SiteRules | None,
                       flight: _Flight) -> SiteRules:
        store, fleet, mem = self.store, self.fleet, self._mem
        host = self._host_state(origin)
        if not isinstance(host, HostState):
            host = await host
        token: str | None = None
        locked_at, locked_since = self._clock(), time.time()
        lease = self._lease()
        if mem is not None:
            stored = _intact(mem.get_robots(origin))
        elif fleet is not None:
            # With no entry stored, a fetch is due: the look takes the fetch lock too.
            found, token = await fleet.load_or_lock(origin, lease)
            self._leases.note(locked_at, self._clock())
            stored = _intact(found)
            log.debug("%s: looked in the store: %s, %s", origin,
                      "an entry" if found is not None else "no entry",
                      "fetch lock taken" if token is not None else "fetch lock not taken")
        else:
            stored = _intact(await store.load_robots(origin))
        limit = self.recheck_visits
        # The stored count counts too: N visits, a restart, and the first ask rechecks.
        recheck = limit is not None and host.visits_since_check >= limit
        if stored is not None and stored.is_fresh(time.time()) and not recheck:
            log.debug("%s: robots.txt from the store (%s), fresh for %.0fs", origin,
                      stored.outcome, stored.fresh_until - time.time())
            return await self._installed(origin, stored, host)
        if recheck:
            log.debug("%s: robots.txt checked again after %d visits", origin,
                      host.visits_since_check)
        previous = stored if stored is not None else (site.entry if site is not None else None)
        rounds = 0
        while True:
            rounds += 1
            if fleet is not None and token is None:
                # Other workers may fetch it: one does, the others use its entry.
                locked_at, locked_since = self._clock(), time.time()
                token, got, lease = await self._lock(fleet, origin, stored, recheck)
                if got is not None:
                    log.debug("%s: robots.txt fetched by another worker (%s)", origin,
                              got.outcome)
                    return await self._installed(origin, got, host)
            held = _Held(token, locked_at, lease, locked_since) if token is not None else None
            try:
                return await self._fetch_held(origin, site, stored, previous, host, flight,
                                              held, rounds >= _LOCK_ROUNDS)
            except _LockLost:
                # Our lock expired while this worker waited (for the server's turn, or
                # for the CPU) and another worker took it: it fetches, we wait for it.
                log.debug("%s: the robots.txt fetch lock expired under this worker and"
                          " another took it; waiting for its fetch", origin)
                token = None

    async def _fetch_held(self, origin: str, site: SiteRules | None,
                          stored: RobotsEntry | None, previous: RobotsEntry | None,
                          host: HostState, flight: _Flight, held: _Held | None,
                          last: bool) -> SiteRules:
        """Fetch in the server's turn, holding the fleet's fetch lock ``held`` (None: in
        no fleet, or without the lock), and save: the rules installed.  Raises
        :class:`_LockLost`, having sent nothing, when the lock turns out to be another
        worker's just before the request would leave (unless ``last``: then it fetches
        all the same, and saves nothing over the holder's)."""
        store, fleet, mem = self.store, self.fleet, self._mem
        lease: asyncio.Task[None] | None = None
        if held is not None and fleet is not None:
            lease = asyncio.get_running_loop().create_task(self._keep_lock(fleet, origin, held))
        try:
            pacing = self._paced_by(origin) if self._paced_by is not None else _unpaced()
            async with pacing as hooks:
                again: RobotsEntry | None = None
                if held is not None and fleet is not None:
                    again = await self._confirm(fleet, origin, held, last)
                elif fleet is not None:
                    again = _intact(await store.load_robots(origin))
                if again is not None and again.is_fresh(time.time()) and (
                    stored is None or again.fetched_at > stored.fetched_at
                ):
                    # Our lock expired while we waited for the server's turn (or
                    # we hold none) and another worker fetched it meanwhile.
                    log.debug("%s: robots.txt fetched by another worker (%s)", origin,
                              again.outcome)
                    return await self._installed(origin, again, host)
                if held is not None:
                    log.debug("%s: robots.txt request leaves, holding the fetch lock"
                              " (confirmed %.1fs ago for %.1fs%s)", origin,
                              self._clock() - held.confirmed, held.lease,
                              ", last round" if last else "")
                elif fleet is not None:
                    log.debug("%s: robots.txt request leaves without the fetch lock", origin)
                began = time.monotonic()
                try:
                    entry = await self.fetcher.fetch(origin, previous, hooks, flight.guard,
                                                     flight.checked, flight.via)
                except LocalFailure as shortage:
                    entry = await self._fetch_again(origin, previous, hooks, flight, shortage,
                                                    began + self.how.fetch.timeout)
                events = self.events
                if events is not None:
                    events.emit(RobotsFetched(
                        time.time(), origin, events.key_of(origin), entry.outcome,
                        entry.status or 0, len(entry.body or b""), time.monotonic() - began,
                        entry.detail if entry.outcome == Outcome.UNREACHABLE else ""))
            if self._closed:
                # A fetch that outlived close() stores nothing: its failure may be ours.
                raise CacheClosed(_CLOSED_DURING)
            kept: RobotsTxt | None = None
            if entry.outcome == Outcome.OK and entry.body is None and site is not None:
                # A good copy stands in whose body only our parsed rules still hold
                # (the store forgot it): keep the rules, and store nothing without them.
                kept = site.rules
            elif mem is not None:
                mem.put_robots(entry)
            elif held is not None and fleet is not None and (
                    theirs := await self._taken_over(fleet, origin, held)) is not None:
                # This worker was held up past its lock's life (stopped, starved) and
                # another took the lock and fetched meanwhile: its entry stands, ours is
                # not stored over it, and the crawl goes by it.  (The lock is let go
                # below, if LOCK_LOAD took it again for us.)
                log.debug("%s: robots.txt fetched, but the fetch lock had expired and"
                          " another worker fetched it meanwhile: its entry is kept", origin)
                entry = theirs
            elif held is not None and fleet is not None:
                # The lock ends with the save, in one request.  It is renewed until the
                # save is answered: a save queued behind a busy worker's other calls must
                # not outlive it (a renewal that comes after finds it gone).
                log.debug("%s: robots.txt fetched; saving (lock confirmed %.1fs ago)",
                          origin, self._clock() - held.confirmed)
                saved = await self._save_unlock(fleet, entry, held.token)
                log.debug("%s: saved and unlocked: %s (lock confirmed %.1fs ago)", origin,
                          saved, self._clock() - held.confirmed)
                await _stop(lease)
                lease = None
                if saved is not None:
                    held = None  # released, or another's: nothing to let go
                if saved is False:
                    log.debug("%s: robots.txt fetched, but the fetch lock had expired and"
                              " another worker took it: its entry is saved, not ours", origin)
            else:
                await self._save(entry)
        finally:
            await _stop(lease)
            if held is not None and fleet is not None:
                self._releasing.add(origin)  # close() lets this end: other workers wait on it
                try:
                    await self._unlock(fleet, origin, held.token)
                finally:
                    self._releasing.discard(origin)
        if host.visits_since_check:
            Scheduler.rechecked(host)
            await self._save_host(host)  # or the next start would recheck again
        return await self._installed(origin, entry, host, kept)

    async def _confirm(self, fleet: Fleet, origin: str, held: _Held, last: bool
                       ) -> RobotsEntry | None:
        """Make sure, as the fetch's request is about to leave, that the fetch lock is
        still ours: the entry stored meanwhile, if one was read; :class:`_LockLost` if
        another worker holds the lock (unless ``last``).  A lock renewed (or taken)
        within a third of its life is ours without a look: it has two thirds left."""
        again: RobotsEntry | None = None
        for _ in range(_CONFIRM_TRIES):
            if self._clock() - held.confirmed < held.lease / 3:
                break
            asked, lease = self._clock(), self._lease()
            try:
                ours, found = await fleet.confirm_fetch(origin, held.token, lease)
                self._leases.note(asked, self._clock())
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self.store_trouble("renew the robots.txt fetch lock", exc)
                break  # the store cannot say: fetch, as without the lock
            again = _intact(found)
            if not ours:
                if not last:
                    raise _LockLost
                break
            # Renewed for a whole lease from before it was asked: if its answer came
            # late (a starved process), the loop looks again.
            held.renewed(asked, lease)
        return again

    async def _taken_over(self, fleet: Fleet, origin: str, held: _Held) -> RobotsEntry | None:
        """The entry another worker fetched and stored after this one's lock ``held``
        may have expired (a whole lease since it was last confirmed): None while the
        lock is surely ours, or when none was stored since this worker took it.  The
        look (LOCK_LOAD with our token) takes the lock again if it is free."""
        if self._clock() - held.confirmed < held.lease:
            return None
        try:
            _, found = await fleet.confirm_fetch(origin, held.token, self._lease())
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.store_trouble("renew the robots.txt fetch lock", exc)
            return None
        found = _intact(found)
        if found is not None and found.fetched_at >= held.since and found.is_fresh(time.time()):
            return found
        return None

    async def _fetch_again(self, origin: str, previous: RobotsEntry | None,
                           hooks: PacingHooks | None, flight: _Flight,
                           shortage: LocalFailure, give_up: float) -> RobotsEntry:
        """The fetcher's entry after its fetch met ``shortage``.  A shortage of this
        machine's (:class:`LocalFailure`: no file descriptor, memory or port to send with)
        is no answer of the site's: the fetch is asked again as the resource frees,
        pausing longer each time, until ``give_up`` (the first fetch's start plus the
        fetch's timeout, on the monotonic clock); then the failure is raised, and nothing
        is kept.  (Only a fetch that met one comes here: the others take no coroutine
        for it.)"""
        pause = _SHORTAGE_PAUSE
        while True:
            self.local_failures += 1
            left = give_up - time.monotonic()
            _tell_shortage(shortage, self.local_failures, left)
            events = self.events
            if events is not None:
                events.emit(LocalShortage(time.time(), origin, events.key_of(origin),
                                          shortage.resource, str(shortage), left <= 0))
            if left <= 0:
                raise shortage
            await asyncio.sleep(min(pause, left))
            pause = min(2 * pause, _SHORTAGE_PAUSE_MAX)
            try:
                return await self.fetcher.fetch(origin, previous, hooks, flight.guard,
                                                flight.checked, flight.via)
            except LocalFailure as again:
                shortage = again

    async def _lock(self, fleet: Fleet, origin: str, stored: RobotsEntry | None, recheck: bool
                    ) -> tuple[str | None, RobotsEntry | None, float]:
        """The shared store's fetch lock (a token), or the entry another worker fetched;
        and the lease the lock was taken for."""
        timeout = self.fetcher.policy.timeout
        lease = self._lease()
        token, again = await self._take_lock(fleet, origin, lease)
        tries = 0
        while token is None and tries < 10:
            # Another worker fetches it: wait for its result, then use it.
            tries += 1
            got = _intact(await fleet.wait_robots(origin, timeout + 5))
            if got is not None and got.is_fresh(time.time()):
                return None, got, lease
            lease = self._lease()
            token, again = await self._take_lock(fleet, origin, lease)
            log.debug("%s: waited for the holder (try %d), no entry; lock %s", origin, tries,
                      "taken" if token else "not taken")
        if token is False:
            return None, None, lease  # fetched without the lock
        # Another worker may have fetched it and let go of the lock between our
        # first look and taking the lock: the look taken with the lock says.
        if token is not None and again is not None and again.is_fresh(time.time()) and (
            not recheck or stored is None or again.fetched_at > stored.fetched_at
        ):
            await self._unlock(fleet, origin, token)
            return None, again, lease
        return token, None, lease

    def _lease(self) -> float:
        """The lease a fetch lock is taken or renewed for now."""
        return self._leases.lease(min(self.fetcher.policy.timeout * 2 + 5, _LOCK_LEASE))

    async def _keep_lock(self, fleet: Fleet, origin: str, held: _Held) -> None:
        """Renew the fetch lock a third of its life after it was last renewed (or
        taken), until cancelled (the fetch saved or failed), or until it is lost."""
        while True:
            # When this renewal is due: how late it comes back tells how long to ask for.
            due = self._clock() + max(held.confirmed + held.lease / 3 - self._clock(),
                                      held.lease / 30)
            await asyncio.sleep(due - self._clock())
            asked, lease = self._clock(), self._lease()
            try:
                renewed = await fleet.renew_fetch(origin, held.token, lease)
                self._leases.note(due, self._clock())
                if not renewed:
                    # Expired: the fetch looks again before its request leaves.
                    log.debug("%s: fetch lock renewal found it expired (asked %.1fs after"
                              " the last confirmation)", origin, asked - held.confirmed)
                    held.confirmed = -math.inf
                    return
                if self._clock() - held.confirmed > held.lease / 2:
                    log.debug("%s: fetch lock renewed late: asked %.1fs, answered %.1fs"
                              " after the last confirmation", origin,
                              asked - held.confirmed, self._clock() - held.confirmed)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self.store_trouble("renew the robots.txt fetch lock", exc)
                continue
            held.renewed(asked, lease)

    async def _take_lock(self, fleet: Fleet, origin: str, ttl: float
                         ) -> tuple[str | Literal[False] | None, RobotsEntry | None]:
        """The fetch lock's token, None if another worker holds it, or False when the
        store cannot take it (a full disk, a read-only file): then this worker fetches
        alone, as the lock only spares the others a request.  With it, the entry as
        stored when the lock was taken."""
        asked = self._clock()
        try:
            token, entry = await fleet.lock_load(origin, ttl)
            self._leases.note(asked, self._clock())
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.store_trouble("take the robots.txt fetch lock", exc)
            return False, None
        return token, _intact(entry)

    async def _save(self, entry: RobotsEntry) -> None:
        # A store that cannot save (a full disk) must not cost the site a robots.txt
        # request per ask: the rules are installed in memory all the same.
        try:
            await self.store.save_robots(entry)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.store_trouble("save robots.txt", exc)

    async def _save_unlock(self, fleet: Fleet, entry: RobotsEntry, token: str) -> bool | None:
        """Save the entry and release the fetch lock: True; False when the lock was
        another worker's (nothing saved); None if the store failed (the lock is then
        released on its own)."""
        try:
            return await fleet.save_robots_unlock(entry, token)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.store_trouble("save robots.txt", exc)
            return None

    async def _save_host(self, host: HostState) -> None:
        try:
            await self.store.save_host(host)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.store_trouble("save host state", exc)

    async def _unlock(self, fleet: Fleet, origin: str, token: str) -> None:
        try:
            await fleet.unlock_fetch(origin, token)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the lock expires on its own
            self.store_trouble("release the robots.txt lock", exc)

    def store_trouble(self, what: str, exc: Exception) -> None:
        """Count a store error and tell of it (see :class:`StoreTrouble`): the crawl
        goes on without the store."""
        self.trouble(what, exc)

    @property
    def store_errors(self) -> int:
        """How many times the store failed."""
        return self.trouble.errors

    async def _installed(self, origin: str, entry: RobotsEntry, host: HostState,
                         rules: RobotsTxt | None = None) -> SiteRules:
        """:meth:`_install`, a long body parsed first in a worker thread (see
        :data:`PARSED_ASIDE`)."""
        if (rules is None and len(entry.body or b"") > PARSED_ASIDE
                and outcome_decision(entry) is None):
            rules = await asyncio.to_thread(parsed_aside, entry, self.how)
        return self._install(origin, entry, host, rules)

    def _install(self, origin: str, entry: RobotsEntry, host: HostState,
                 rules: RobotsTxt | None = None) -> SiteRules:
        how = self.how
        bodies: ParsedBodies | None = self._bodies
        setting = self.host_setting(origin) if self.host_setting is not None else None
        if setting is not None and setting.delay is not None:
            # The server's own delay; robots.txt's longer asks still win.  Not shared
            # with sites serving the same bytes: their intervals differ.
            how, bodies = replace(how, pacing=replace(how.pacing, delay=setting.delay)), None
        site = interpret(entry, how, rules, bodies)
        if site.verdict is not None and site.verdict.outcome == SKIPPED:
            pacing_log.info("%s: %s (a higher max_crawl_delay, or Pacing(on_long_delay="
                            "'honour'), crawls it)", origin, site.verdict.reason)
        sites = self._sites
        held = sites.pop(origin, None)
        if held is None:
            held = CachedSite(site, host)
        else:
            held.site, held.host, held.used = site, host, False
        sites[origin] = held
        if len(sites) > self.max_origins:
            self._evict()
        return site

    def _evict(self) -> None:
        # CLOCK: the oldest site goes unless used since the hand last passed it.
        sites = self._sites
        for _ in range(len(sites) + 1):
            origin = next(iter(sites))
            held = sites.pop(origin)
            if not held.used:
                return
            held.used = False
            sites[origin] = held
