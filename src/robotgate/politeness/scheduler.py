"""The scheduler: when may the next request to a server start?

One :class:`Group` per politeness key (see :mod:`.grouping`) owns that
server's pacing: the time of the last request (its turn, its first bytes, its
answer's arrival, whichever is latest), a
pause (Retry-After), the adaptive back-off, the per-group cap and the visit
bookkeeping (:class:`~robotgate.records.HostState`).  Nothing else writes them.
The HostState is what a store keeps of it: ``next_allowed`` for the pause and
the interval, ``backoff`` for the back-off, so that a group made again from it
(after eviction, a restart, or in another worker) paces as this one did.

A request that is due and under every cap starts without a coroutine
(:meth:`Scheduler.try_start`); only a request that must wait awaits
(:meth:`Scheduler.start`).  The interval is kept between the requests' first bytes,
not only their turns.  One request at a time (``max_per_host=1``), the next turn
waits for this one's answer, or its end without one (:meth:`Scheduler.paced_from_now`),
both after its bytes.  With more at once, a request paced here leaves with a
:class:`PacedHere` permit, looked at as its bytes go: a request that leaves late,
after the next one's turn, would otherwise reach the server less than an interval
before it.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ..errors import GateClosed
from ..policy.fetch import parse_retry_after
from ..policy.pacing import Backoff, Pacing
from ..records import HostState
from .permits import Permit, TooSoon

if TYPE_CHECKING:
    from .fleet_slots import Slot

__all__ = ["Group", "PacedHere", "Scheduler", "Slots"]

#: Groups looked at per eviction.
_EVICT_LOOK = 8
#: The back-off of every group that has not needed one.
_CALM = Backoff()
_CLOSED_WHILE_WAITING = "the gate was closed while the request waited for its server's turn"
_ASYNCIO_TIME = asyncio.BaseEventLoop.time  # as asyncio defines it: time.monotonic()


def _clock_of(loop_time: Callable[[], float]) -> Callable[[], float]:
    """The loop's clock; asyncio's own loops' is time.monotonic, read without their
    frame (unless replaced on the loop or its class, as time-travelling test loops do)."""
    own = getattr(loop_time, "__func__", None) is _ASYNCIO_TIME
    return time.monotonic if own else loop_time


class Slots:
    """A counting cap with FIFO hand-off: a released slot goes to the oldest waiter."""

    __slots__ = ("free", "size", "waiters")

    def __init__(self, size: int) -> None:
        self.size = size
        self.free = size
        # Made by the first waiter: most servers never have one.
        self.waiters: deque[asyncio.Future[None]] | None = None

    def try_take(self) -> bool:
        if self.free > 0 and not self.waiters:
            self.free -= 1
            return True
        return False

    async def take(self) -> None:
        if self.try_take():
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiters = self.waiters
        if waiters is None:
            waiters = self.waiters = deque()
        waiters.append(fut)
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():
                self.give()  # handed a slot, then cancelled: pass it on
            elif fut in waiters:  # give() drops a cancelled waiter itself
                waiters.remove(fut)
            raise

    def give(self) -> None:
        waiters = self.waiters
        while waiters:
            fut = waiters.popleft()
            if not fut.done():
                fut.set_result(None)
                return
        self.free += 1

    @property
    def busy(self) -> int:
        return self.size - self.free


class Group(Slots):
    """Pacing state of one server (politeness key), and its cap: the group is its
    own :class:`Slots` (one object less per server)."""

    __slots__ = ("active", "backoff", "holders", "interval", "key", "last", "last_sent",
                 "paused_until", "state", "waiting")

    def __init__(self, key: str, state: HostState, cap: int, paused_until: float) -> None:
        super().__init__(cap)
        self.key = key
        self.state = state
        # Loop time of the last turn, first bytes or answer, whichever is latest (the
        # next turn is an interval after it).
        self.last = -float("inf")
        # Loop time the last paced request's first bytes went (its PacedHere look).
        self.last_sent = -float("inf")
        self.paused_until = paused_until
        self.backoff = _CALM  # its own Backoff from the first 429/503 or latency seen
        self.interval = 0.0  # interval of the last request (for describe and host_wait)
        self.active = 0
        self.waiting = 0
        # The tasks whose requests hold its slots, one entry a slot (made by the first).
        self.holders: list[asyncio.Task[Any]] | None = None

    def idle(self) -> bool:
        return self.active == 0 and self.waiting == 0


class PacedHere(Permit):
    """A request paced here (no fleet slot) leaves with this: it may go once ``gap``
    (its interval, back-off included) after the last of its server's paced requests
    went, which its turn alone does not ensure (another's bytes may have gone late,
    after this turn began, with ``max_per_host`` above 1, or on a request that got no
    answer).  ``fence``: a crawl lease's, looked at first (the lease surely held).

    Looked at too soon, it raises :class:`~robotgate.politeness.permits.TooSoon` and
    moves its server's next turn to after :meth:`due`, when the request goes instead."""

    __slots__ = ("fence", "gap", "group", "went")

    def __init__(self, group: Group, gap: float, fence: Permit | None = None) -> None:
        self.group = group
        self.gap = gap
        self.fence = fence
        self.went: float | None = None  # when a look of this permit let it go

    def due(self) -> float:
        """Loop time from which the request may go."""
        sent = self.group.last_sent
        return -float("inf") if sent == self.went else sent + self.gap

    def check(self, now: float) -> None:
        fence = self.fence
        if fence is not None:
            fence.check(now)
        group = self.group
        due = self.due()
        if now < due:
            if group.last < due:
                group.last = due  # this request goes then: the next turn after it
            raise TooSoon
        # Looked at again (Scrapy looks twice): the gap counts from the later look.
        group.last_sent = self.went = now
        if now > group.last:
            group.last = now


class Scheduler:
    """Paces requests per politeness key, caps them per key and in all; :meth:`start`
    may wait for a shared store's fleet-wide slot instead of the local interval."""

    def __init__(
        self,
        policy: Pacing,
        *,
        max_per_group: int = 1,
        max_concurrency: int | None = None,
        max_groups: int = 100_000,
        clock: Callable[[], float] | None = None,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.policy = policy
        self.max_per_group = max_per_group
        self.max_groups = max_groups
        self._wall = wall
        self._groups: dict[str, Group] = {}
        # Evicted groups whose server may not be asked yet, oldest eviction first: a
        # group made again for the key keeps their pacing, whatever the store kept.
        self._evicted: dict[str, Group] = {}
        self.global_slots = Slots(max_concurrency) if max_concurrency else None
        self.pages = self.backoffs = 0
        # The gap is the interval itself unless back-off, latency or a margin apply.
        self._plain = not policy.latency_factor and not policy.margin
        # The longest wait this policy asks of a server (Retry-After and back-off are
        # capped at max_backoff): a stored next_allowed past it is not waited out.
        self.longest_wait = max(policy.max_backoff, policy.delay, policy.max_crawl_delay)
        self._time: Callable[[], float] | None = clock
        self._waiting: set[asyncio.Task[object]] = set()  # in start(): close() ends them
        self.closed = False

    @property
    def stats(self) -> dict[str, int]:
        return {"pages": self.pages, "backoffs": self.backoffs}

    def now(self) -> float:
        time_ = self._time
        if time_ is None:
            time_ = self._time = _clock_of(asyncio.get_running_loop().time)
        return time_()

    # -- groups ----------------------------------------------------------------

    @property
    def groups_by_key(self) -> dict[str, Group]:
        """The live table (read-only for others: the scheduler adds and evicts)."""
        return self._groups

    def get(self, key: str) -> Group | None:
        return self._groups.get(key)

    def add(self, key: str, state: HostState, last: float = -float("inf")) -> Group:
        """The group of ``key``, created from its stored state if new.

        A stored ``next_allowed`` and back-off (a restart, another process) are
        honoured; ``last`` is when a request to it last went out (its robots.txt).
        """
        groups = self._groups
        group = groups.get(key)
        if group is not None:
            return group
        if len(groups) >= self.max_groups:
            self._evict()
        now = self.now()
        wait = self.stored_wait(state)
        group = Group(key, state, self.max_per_group, now + wait if wait > 0 else -float("inf"))
        group.last = last
        if state.backoff_peak:  # backed off before
            group.backoff = Backoff.stored(state.backoff, state.backoff_peak, self.policy)
        gone = self._evicted.pop(key, None) if self._evicted else None
        if gone is not None:
            # Its last request, pause, interval and back-off, as if never evicted.
            group.last = max(group.last, gone.last)
            group.paused_until = max(group.paused_until, gone.paused_until)
            group.interval = gone.interval
            if gone.backoff is not _CALM:
                group.backoff = gone.backoff
        groups[key] = group
        return group

    def stored_wait(self, state: HostState) -> float:
        """Seconds until ``state.next_allowed`` (negative if past), but no longer than
        this policy could ask: a time further ahead is damage or a clock far off."""
        return min(state.next_allowed - self._wall(), self.longest_wait)

    def _evict(self) -> None:
        # Bounded work per add (O(1)): of the few oldest groups, the first idle one with
        # no wait pending goes, else the first idle one; a busy one goes to the back.  A
        # group evicted with a wait pending is kept aside until no wait of its server can
        # be pending: the store may have dropped its HostState meanwhile, and its last
        # request (a robots.txt one too) is known only here.
        groups = self._groups
        now = self.now()
        self._forget_evicted(now)
        fallback: str | None = None
        for _ in range(min(_EVICT_LOOK, len(groups))):
            key = next(iter(groups))
            group = groups[key]
            if not group.idle():
                groups[key] = groups.pop(key)
                continue
            if self.held_until(group) <= now:
                del groups[key]
                return
            if fallback is None:
                fallback = key
            groups[key] = groups.pop(key)
        if fallback is not None:
            self._evicted[fallback] = groups.pop(fallback)

    def held_until(self, group: Group) -> float:
        """Loop time until which a request to the group's server may still have to wait.

        A group with no page yet (its robots.txt only) may learn a Crawl-delay up
        to ``max_crawl_delay``: that long, then."""
        interval = group.interval or max(self.policy.delay, self.policy.max_crawl_delay)
        return max(group.paused_until, group.last + self.gap(group, interval))

    def _forget_evicted(self, now: float) -> None:
        # Oldest first, a few per eviction: each is kept about one wait past its
        # eviction, so the table holds what one longest wait of evictions adds.
        evicted = self._evicted
        for _ in range(min(_EVICT_LOOK, len(evicted))):
            key = next(iter(evicted))
            if self.held_until(evicted[key]) > now:
                return
            del evicted[key]

    def __len__(self) -> int:
        return len(self._groups)

    def groups(self) -> list[Group]:
        return list(self._groups.values())

    # -- starting a request ------------------------------------------------------

    def gap(self, group: Group, interval: float) -> float:
        """The least time from the group's last request to one with ``interval``."""
        backoff = group.backoff
        if self._plain and not backoff.extra:
            return interval
        return backoff.gap(self.policy, interval)

    def wait_seconds(self, group: Group, interval: float | None = None) -> float:
        """Seconds until a request with ``interval`` may start (0 if now)."""
        now = self.now()
        gap = self.gap(group, group.interval if interval is None else interval)
        return max(0.0, group.paused_until - now, group.last + gap - now)

    def why_wait(self, group: Group, interval: float, least: float) -> tuple[float, str]:
        """Seconds until a request with ``interval`` may start, and why it waits
        (the reasons of :mod:`.waits`); ``(0.0, "")`` when it may start now.
        ``least``: the server's own least interval (its host setting's delay, else the
        gate's): an interval above it is the site's ``Crawl-delay``."""
        now = self.now()
        gap = self.gap(group, interval)
        paced = group.last + gap
        paused = group.paused_until
        if paused > now and paused >= paced:
            # A pause comes from a 429/503's Retry-After, else from the store (another run).
            return paused - now, "retry-after" if group.backoff is not _CALM else "stored"
        if paced <= now:
            return 0.0, ""
        if gap > interval + self.policy.margin:
            return paced - now, "back-off"
        return paced - now, "crawl-delay" if interval > least else "delay"

    def try_start(self, group: Group, interval: float, page: bool = True) -> bool:
        """Start a request now if it is due and under every cap; no coroutine.

        ``page`` False: a robots.txt request (see :meth:`start`).
        """
        # The group's slot is taken last: a request that is not due gives nothing back.
        if group.waiting or group.free <= 0 or group.waiters:
            return False
        now = self.now()
        gap = self.gap(group, interval)
        if now < group.paused_until or now < group.last + gap:
            return False
        glob = self.global_slots
        if glob is not None and not glob.try_take():
            return False
        group.try_take()
        try:
            self._started(group, interval, now, page, gap)
        except BaseException:
            group.give()  # never a slot lost: the host would wait for it for good
            if glob is not None:
                glob.give()
            raise
        return True

    async def start(
        self,
        group: Group,
        interval: float,
        reserve: Callable[[str, float], Awaitable[Slot | None]] | None = None,
        page: bool = True,
    ) -> Slot | None:
        """Wait until a request with ``interval`` may start, then count it as started.

        ``reserve`` is a coroutine function asking a shared store for a slot
        (None when the store does not pace, or paces the server here); the slot,
        waited for, is returned: the request holds it.
        ``page`` False: a robots.txt request, paced and capped like a page but
        not counted as a visit.
        """
        task = self._begin_wait(group)
        glob = self.global_slots
        held_group = held_global = False
        try:
            await group.take()
            held_group = True
            if reserve is not None:
                if glob is not None:
                    # A fleet slot must be used the moment it is due: the global slot first.
                    await glob.take()
                    held_global = True
                await self._wait_paused(group)
                slot = await reserve(group.key, self.gap(group, interval))
                if slot is not None:
                    if slot.wait > 0:
                        await asyncio.sleep(slot.wait)
                    self._started(group, interval, self.now(), page)
                    return slot
            while True:
                now = self.now()
                gap = self.gap(group, interval)
                wait = max(group.paused_until, group.last + gap) - now
                if wait > 0:
                    await asyncio.sleep(wait)
                    continue
                if glob is not None and not held_global:
                    await glob.take()
                    held_global = True
                    continue  # the wait for the global slot may have let another start
                break
            self._started(group, interval, now, page, gap)
            return None
        except BaseException as exc:
            if not self._gave_back(group, held_group, held_global, exc, task):
                raise
        finally:
            self._end_wait(group, task)
        # Raised here, not while the cancellation is handled: it is no cause of this.
        raise GateClosed(_CLOSED_WHILE_WAITING)

    # -- an unpaced request (a browser's subresource) -----------------------------------

    def rests_until(self, group: Group) -> float:
        """Loop time until which the group's server rests after a 429 or 503: its
        pause (``Retry-After``, or one stored), and its back-off's extra interval from
        its last request or answer.  What an unpaced request waits for; not the interval."""
        extra = group.backoff.extra
        paused = group.paused_until
        return max(paused, group.last + extra) if extra else paused

    def try_start_unpaced(self, group: Group) -> bool:
        """Start an unpaced request now if its server does not rest and it is under
        every cap; no coroutine.  It holds a cap slot, and leaves the server's pacing
        (its last request, the next page's interval) as it was."""
        if group.waiting or group.free <= 0 or group.waiters:
            return False
        if self.now() < self.rests_until(group):
            return False
        glob = self.global_slots
        if glob is not None and not glob.try_take():
            return False
        group.try_take()
        group.active += 1
        return True

    async def start_unpaced(self, group: Group) -> None:
        """Wait until the group's server does not rest and a cap slot is free, then
        start an unpaced request (see :meth:`try_start_unpaced`)."""
        task = self._begin_wait(group)
        glob = self.global_slots
        held_group = held_global = False
        try:
            while True:
                wait = self.rests_until(group) - self.now()
                if wait > 0:
                    await asyncio.sleep(wait)  # the rest is waited out holding no slot
                    continue
                await group.take()
                held_group = True
                if glob is not None:
                    await glob.take()
                    held_global = True
                if self.rests_until(group) <= self.now():
                    break
                # A 429 came while it waited for a slot: the slots go back meanwhile.
                group.give()
                held_group = False
                if glob is not None:
                    glob.give()
                    held_global = False
            group.active += 1
            return
        except BaseException as exc:
            if not self._gave_back(group, held_group, held_global, exc, task):
                raise
        finally:
            self._end_wait(group, task)
        raise GateClosed(_CLOSED_WHILE_WAITING)

    def _begin_wait(self, group: Group) -> asyncio.Task[object] | None:
        """Count a wait for a turn in the group, and keep its task for :meth:`close`."""
        if self.closed:
            raise GateClosed("the gate is closed")
        group.waiting += 1
        task = asyncio.current_task()
        if task is not None:
            self._waiting.add(task)
        return task

    def _end_wait(self, group: Group, task: asyncio.Task[object] | None) -> None:
        group.waiting -= 1
        self._waiting.discard(task)

    def _gave_back(self, group: Group, held_group: bool, held_global: bool,
                   exc: BaseException, task: asyncio.Task[object] | None) -> bool:
        """A wait for a turn ended with ``exc``: the slots it held go back.  True when
        :meth:`close` alone ended it (the caller raises GateClosed); False: it re-raises."""
        if held_group:
            group.give()
        glob = self.global_slots
        if held_global and glob is not None:
            glob.give()
        return isinstance(exc, asyncio.CancelledError) and self.closed and _only_ours(task)

    def close(self) -> None:
        """End every wait for a turn: the waiting requests get :class:`GateClosed`,
        and so does every later :meth:`start`."""
        self.closed = True
        for task in list(self._waiting):
            task.cancel()

    async def _wait_paused(self, group: Group) -> None:
        while (wait := group.paused_until - self.now()) > 0:
            await asyncio.sleep(wait)

    def _started(self, group: Group, interval: float, now: float, page: bool = True,
                 gap: float | None = None) -> None:
        if page:
            # The visit's bookkeeping first: if it fails (a store's garbage), the
            # request has not counted as started and the caller gives its slot back.
            state = group.state
            wall = self._wall()
            state.visits += 1
            state.visits_since_check += 1
            state.last_visit = wall
            if gap is None:
                gap = self.gap(group, interval)
            state.next_allowed = wall + max(gap, group.paused_until - now)
            group.interval = interval
            self.pages += 1
        group.active += 1
        group.last = now

    # -- after the answer ----------------------------------------------------------

    def answered(self, group: Group, status: int, retry_after: str | None,
                 sent_at: float | None = None) -> float | None:
        """The answer's headers arrived: pace from now, apply back-off.

        Returns the Unix time the group is paused until when a shared store
        must hear of it (a 429/503), else None.
        """
        now = self.now()
        if now > group.last:
            # Paced from the answer's arrival: the next request reaches it an interval later.
            group.last = now
        backoff = group.backoff
        if backoff is _CALM and self._plain and status != 429 and status != 503:
            # Most answers: nothing to widen, narrow or observe; the gap is the interval.
            group.state.next_allowed = self._wall() + max(group.interval, group.paused_until - now)
            return None
        policy = self.policy
        if (status == 429 or status == 503 or policy.latency_factor) and backoff is _CALM:
            backoff = group.backoff = Backoff()  # _CALM is shared: never changed
        if policy.latency_factor and sent_at is not None:
            backoff.observe(now - sent_at)
        wall = self._wall()
        if status == 429 or status == 503:
            self.backoffs += 1
            wait = parse_retry_after(retry_after, wall)
            if wait is not None:
                wait = min(wait, policy.max_backoff)
                group.paused_until = max(group.paused_until, now + wait)
            else:
                wait = backoff.widen(policy, group.interval)
                group.state.backoff, group.state.backoff_peak = backoff.extra, backoff.peak
            group.state.next_allowed = max(group.state.next_allowed, wall + wait)
            return wall + wait
        if backoff.extra or backoff.failures:
            backoff.narrow(policy)
            group.state.backoff = backoff.extra
        gap = self.gap(group, group.interval)
        group.state.next_allowed = wall + max(gap, group.paused_until - now)
        return None

    @staticmethod
    def hold(group: Group, task: asyncio.Task[Any]) -> None:
        """A request of ``task`` holds one of ``group``'s slots (until :meth:`done`)."""
        holders = group.holders
        if holders is None:
            group.holders = [task]
        else:
            holders.append(task)

    @staticmethod
    def waits_on_itself(group: Group, task: asyncio.Task[Any] | None) -> bool:
        """Whether a request of ``task`` could never start in ``group``: the task's
        own requests hold every one of its slots (they end only once it goes on)."""
        holders = group.holders
        return (task is not None and holders is not None
                and holders.count(task) >= group.size)

    def done(self, group: Group, holder: asyncio.Task[Any] | None = None) -> None:
        """The request no longer holds its slots (answered, failed or cancelled);
        ``holder``: its task, if :meth:`hold` was told."""
        if holder is not None:
            holders = group.holders
            if holders is not None:
                holders.remove(holder)
        group.active -= 1
        group.give()
        glob = self.global_slots
        if glob is not None:
            glob.give()

    @staticmethod
    def rechecked(state: HostState) -> None:
        """robots.txt was fetched again for the server of ``state``: its count restarts."""
        state.visits_since_check = 0

    def pause(self, group: Group, seconds: float) -> None:
        """No request of ``group`` starts for ``seconds`` from now."""
        group.paused_until = max(group.paused_until, self.now() + seconds)

    def paced_here(self, group: Group, interval: float, fence: Permit | None = None
                   ) -> Permit | None:
        """The permit a request with ``interval`` paced here leaves with (see
        :class:`PacedHere`), ``fence`` (its crawl lease's) checked first.  Only
        ``fence`` when there is no interval to keep, or when the group sends one request
        at a time: its next turn waits for this request's answer or end, after its
        bytes (see the module)."""
        if group.size <= 1:
            return fence
        gap = self.gap(group, interval)
        return PacedHere(group, gap, fence) if gap > 0 else fence

    def paced_from_now(self, group: Group) -> float:
        """A request to the group's server leaves or is answered now (a robots.txt
        request, or one that got no answer): its next request waits from now.
        Returns now (loop time)."""
        now = self.now()
        if now > group.last:
            group.last = now
        return now

    def set_cap(self, group: Group, size: int) -> None:
        """The group's own cap on requests at once (a host setting), set while it is new."""
        group.size = group.free = size


def _only_ours(task: asyncio.Task[object] | None) -> bool:
    """Was ``task`` cancelled by :meth:`Scheduler.close` alone (not by its owner too)?"""
    if task is None or sys.version_info < (3, 11):
        return True  # no count of cancellations to tell them apart
    return task.uncancel() == 0
