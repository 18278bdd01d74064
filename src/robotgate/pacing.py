"""Per-origin pacing: a minimum interval between request starts, pauses, back-off.

Built on :class:`aiolimiter.AsyncLimiter` (a leaky bucket of capacity one is a
minimum interval), plus a final guard on the actual start times so that a
request delayed elsewhere (a global concurrency cap) cannot bunch up with the
next one.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from aiolimiter import AsyncLimiter

from .records import HostState

__all__ = ["HostPacer"]


class HostPacer:
    """Pacing state of one origin.

    ``interval`` is the minimum number of seconds between the starts of two
    requests; ``max_active`` caps requests in flight at once.
    """

    __slots__ = (
        "_limiter",
        "_loop",
        "active",
        "backoff_failures",
        "interval",
        "last_start",
        "margin",
        "paused_until",
        "semaphore",
        "state",
        "waiting",
    )

    def __init__(
        self, state: HostState, interval: float, max_active: int, margin: float = 0.0
    ) -> None:
        self._loop = asyncio.get_running_loop()
        self.state = state
        self.margin = margin
        self.interval = interval
        self.semaphore = asyncio.Semaphore(max_active)
        self._limiter: AsyncLimiter | None = (
            AsyncLimiter(1, interval) if interval > 0 else None
        )
        self.last_start = -float("inf")  # loop time of the last request start
        # A stored next_allowed (a restart, or another process) is honoured.
        self.paused_until = self._loop.time() + max(0.0, state.next_allowed - time.time())
        self.backoff_failures = 0
        self.waiting = 0
        self.active = 0

    def set_interval(self, interval: float) -> None:
        """Change the interval (robots.txt's Crawl-delay became known or changed)."""
        if interval != self.interval:
            self.interval = interval
            self._limiter = AsyncLimiter(1, interval) if interval > 0 else None

    def pause(self, seconds: float) -> None:
        """No request starts for ``seconds`` from now (Retry-After, back-off)."""
        self.paused_until = max(self.paused_until, self._loop.time() + seconds)

    def wait_seconds(self) -> float:
        """Seconds until the next request may start (LWP::RobotUA's ``host_wait``)."""
        now = self._loop.time()
        return max(0.0, self.paused_until - now, self.last_start + self.interval - now)

    async def wait_turn(
        self, fleet_reserve: Callable[[], Awaitable[float | None]] | None = None
    ) -> bool:
        """Wait until this origin's next slot is due; then call :meth:`begin`.

        ``fleet_reserve`` asks a shared store for a slot (fleet-wide pacing);
        returns True when the store granted it, False when the local limiter paced.
        """
        loop = self._loop
        while (delay := self.paused_until - loop.time()) > 0:
            await asyncio.sleep(delay)
        if fleet_reserve is not None:
            wait = await fleet_reserve()
            if wait is not None:
                if wait > 0:
                    await asyncio.sleep(wait)
                return True
        limiter = self._limiter
        if limiter is not None:
            await limiter.acquire()
        return False

    async def begin(self, granted_by_fleet: bool = False) -> None:
        """Record a request start, right before it goes out.

        Locally paced starts are checked once more against the last actual start
        (plus a margin for queueing on the way to the server): a request held up
        elsewhere, e.g. by a global concurrency cap, cannot bunch up with the next.
        """
        loop = self._loop
        if not granted_by_fleet:
            gap = self.interval + self.margin if self.interval > 0 else 0.0
            while (delay := self.last_start + gap - loop.time()) > 0 or (
                (delay := self.paused_until - loop.time()) > 0
            ):
                await asyncio.sleep(delay)
        self._started(loop.time())

    def sent(self, when: float) -> None:
        """The request that started last went out at ``when`` (loop time)."""
        if when > self.last_start:
            self.last_start = when

    def _started(self, now: float) -> None:
        self.last_start = now
        wall = time.time()
        state = self.state
        state.visits += 1
        state.visits_since_check += 1
        state.last_visit = wall
        gap = self.interval + self.margin if self.interval > 0 else 0.0
        state.next_allowed = wall + max(gap, self.paused_until - now)

    def idle(self) -> bool:
        """No request in flight or waiting, and no pause or interval pending."""
        return self.active == 0 and self.waiting == 0 and self.wait_seconds() == 0
