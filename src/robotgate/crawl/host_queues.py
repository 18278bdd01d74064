"""The frontier's queues: one per politeness key, and a heap of keys by when each may
next be asked.

A key is in the heap when it has URLs and a free slot (``per_host``); each entry is
checked against the gate's ``server_wait`` when it comes due, so back-off and
Crawl-delay learnt meanwhile push it back.  The frontier alone drives them.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from ..politeness.waits import BACKING_OFF, NO_WAIT, ServerWait
from ..store.crawl_state import Entry
from .results import CrawlSummary

__all__ = ["HostQueue", "HostQueues", "QueuedURL"]


@dataclass(slots=True)
class QueuedURL:
    """A URL in its host's queue: its entry in the crawl's state and its wait so far."""

    entry: Entry
    waited: float = 0.0  # seconds waited for its host's turn
    wait_reason: str = ""

    @property
    def url(self) -> str:
        return self.entry.url


class HostQueue:
    """One politeness key's queue and scheduling state."""

    __slots__ = ("active", "held_reason", "held_since", "key", "queue", "ready_at")

    def __init__(self, key: str) -> None:
        self.key = key
        self.queue: deque[QueuedURL] = deque()
        self.active = 0
        self.ready_at: float | None = None  # time of its live heap entry, if any
        # Since when its next URL could go but for its turn (loop time), and why not.
        self.held_since: float | None = None
        self.held_reason = ""


class HostQueues:
    """Per-key queues and the heap of keys by next allowed time (the scheduling state);
    ``server_wait`` is the gate's (:meth:`robotgate.RobotGate.server_wait`)."""

    def __init__(self, server_wait: Callable[[str], ServerWait], per_host: int,
                 summary: CrawlSummary, poke: Callable[[], None]) -> None:
        self._server_wait = server_wait
        self.per_host = per_host
        self.summary = summary
        self.poke = poke
        self.hosts: dict[str, HostQueue] = {}
        self.heap: list[tuple[float, int, HostQueue]] = []
        self.seq = itertools.count()
        self.window = 0  # URLs in the host queues
        self.loop = asyncio.get_running_loop()

    def server_wait(self, url: str) -> ServerWait:
        """How long until ``url``'s host may be asked, why, and the interval it is
        owed (no wait when the gate cannot say)."""
        try:
            return self._server_wait(url)
        except Exception:  # let the fetch wait its turn
            return NO_WAIT

    def hold(self, host: HostQueue, reason: str) -> None:
        """``host``'s next URL waits for its turn, for ``reason`` (counted live)."""
        summary = self.summary
        if not host.held_reason:
            summary.hosts_waiting += 1
        summary.hosts_backing_off += (reason in BACKING_OFF) - (host.held_reason in BACKING_OFF)
        host.held_reason = reason

    def _went(self, host: HostQueue, item: QueuedURL, now: float, due: float) -> None:
        """``item`` leaves its queue at ``now``: what it waited, and why."""
        since = host.held_since
        if since is not None and now > since:
            # The host's turn came at ``due``; after that the URL waited for a worker.
            turn_wait = max(0.0, min(due, now) - since)
            item.waited += now - since
            item.wait_reason = (
                host.held_reason if host.held_reason and turn_wait >= now - due
                else "concurrency"
            )
        if host.held_reason:
            summary = self.summary
            summary.hosts_waiting -= 1
            summary.hosts_backing_off -= host.held_reason in BACKING_OFF
            host.held_reason = ""
        host.held_since = None

    def push(self, host: HostQueue, due: float) -> None:
        """Make ``host`` due at ``due`` (an earlier entry stands)."""
        if host.held_since is None:
            host.held_since = self.loop.time()
        if host.ready_at is not None and host.ready_at <= due:
            return
        host.ready_at = due
        heapq.heappush(self.heap, (due, next(self.seq), host))
        self.poke()

    def add(self, key: str, item: QueuedURL, *, front: bool = False) -> None:
        """Queue ``item`` on ``key``; ``front`` for a URL given back or retried."""
        host = self.hosts.get(key)
        if host is None:
            host = self.hosts[key] = HostQueue(key)
        if not host.queue:
            self.summary.hosts_queued += 1
        if front:
            host.queue.appendleft(item)
        else:
            host.queue.append(item)
        self.window += 1
        if host.active < self.per_host:
            self.push(host, self.loop.time())

    def take(self) -> tuple[HostQueue, QueuedURL] | float | None:
        """A URL of the earliest ready host, or when the next host is due (or None)."""
        heap = self.heap
        now = self.loop.time()
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
            ahead = self.server_wait(host.queue[0].url)
            if ahead.wait > 0:
                self.hold(host, ahead.reason)
                self.push(host, now + ahead.wait)
                continue
            item = host.queue.popleft()
            self._went(host, item, now, due)
            host.active += 1
            if host.active == 1:
                self.summary.hosts_active += 1
            self._taken(host)
            if host.queue and host.active < self.per_host:
                self.push(host, now)
            return host, item
        return None

    def _taken(self, host: HostQueue) -> None:
        self.window -= 1
        if not host.queue:
            self.summary.hosts_queued -= 1

    def give_back(self, host: HostQueue, item: QueuedURL) -> None:
        """Put a URL taken too early back at the front (``release`` schedules it)."""
        if not host.queue:
            self.summary.hosts_queued += 1
        host.queue.appendleft(item)
        self.window += 1

    def drain(self, host: HostQueue) -> list[QueuedURL]:
        """Empty ``host``'s queue: its URLs go back to the crawl's state."""
        items = list(host.queue)
        if not items:
            return items
        host.queue.clear()
        self.window -= len(items)
        summary = self.summary
        summary.hosts_queued -= 1
        if host.held_reason:
            summary.hosts_waiting -= 1
            summary.hosts_backing_off -= host.held_reason in BACKING_OFF
            host.held_reason = ""
        host.held_since = None
        return items

    def release(self, host: HostQueue, wait: float = 0.0, reason: str = "") -> None:
        """A visit of ``host`` ended: its next URL is due after ``wait`` (for
        ``reason``) at least."""
        host.active -= 1
        if host.active == 0:
            self.summary.hosts_active -= 1
        if host.queue:
            ahead = self.server_wait(host.queue[0].url)
            if ahead.wait >= wait:
                wait, reason = ahead.wait, ahead.reason
            if wait > 0:
                self.hold(host, reason)
            self.push(host, self.loop.time() + wait)
        elif host.active == 0 and host.ready_at is None:
            del self.hosts[host.key]
        self.poke()

    def items(self) -> list[QueuedURL]:
        """The URLs waiting in the host queues."""
        return [item for host in self.hosts.values() for item in host.queue]
