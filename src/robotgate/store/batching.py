"""Host state on its way to a shared store: one batcher for SQLite and Redis.

The gate saves a host's state on every page visit.  Writing each save at once
would cost a disk transaction or a Redis round trip per page, so shared stores
keep the newest state per host in memory and write them together, every
``interval`` seconds (from the first save since the last write) or as soon as
``batch`` hosts are waiting:

- *pending*: saved, not yet sent;
- *in flight*: sent, not yet confirmed.  Both stay visible to :meth:`get`, so
  the process that saved a state always reads it back, whatever the timing.
- A failed (or cancelled) write puts its states back, unless a newer one was
  saved meanwhile; the next save, flush or close tries again.
- Writes go out one batch at a time, in order, so a later state is never
  overwritten by an earlier batch that happened to arrive last.
- :meth:`pause` raises ``next_allowed`` in the copies held here too, so a
  pause is not undone by a batch written after it.

The store supplies ``write(states)``: it raises to have the batch retried, or
returns an exception to raise once the batch counts as written (data that no
retry can fix, such as a foreign key in Redis: the other hosts were written).
A request of the store's own may carry the pending states instead
(:meth:`HostBatcher.write_along`): a batch like the others, in order with them.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import operator
from collections.abc import Awaitable, Callable
from dataclasses import fields
from typing import TypeVar

from ..records import HostState

__all__ = ["HostBatcher", "copy_state"]

_log = logging.getLogger(__name__)

_values = operator.attrgetter(*(f.name for f in fields(HostState)))


def copy_state(state: HostState) -> HostState:
    """A copy of ``state`` (a plain getter: ``dataclasses.replace`` costs several times more)."""
    return HostState(*_values(state))


Write = Callable[[list[HostState]], Awaitable[BaseException | None]]
_T = TypeVar("_T")


class HostBatcher:
    """Pending and in-flight host states of one store, written in batches.

    >>> batcher = HostBatcher(write, interval=1.0, batch=500, label="a.db")  # doctest: +SKIP
    """

    def __init__(self, write: Write, *, interval: float, batch: int, label: str) -> None:
        if interval < 0:
            raise ValueError("flush_interval must not be negative")
        if batch < 1:
            raise ValueError("flush_batch must be at least 1")
        self.interval = interval
        self.batch = batch
        self.label = label
        self._write = write
        self._pending: dict[str, HostState] = {}
        self._in_flight: dict[str, HostState] = {}
        self._timer: asyncio.Task[None] | None = None
        self._due = 0.0  # loop time the timer flushes at: an interval after the last write
        # Batches leave in order, one at a time.
        self._order: asyncio.Lock | None = None
        self._failing = False  # a timed flush failed and none has succeeded since
        self._sending: set[asyncio.Future[BaseException | None]] = set()

    def __len__(self) -> int:
        return len(self._pending)

    def get(self, key: str) -> HostState | None:
        """A copy of the newest state saved here and not yet confirmed written, if any."""
        state = self._pending.get(key)
        if state is None:
            state = self._in_flight.get(key)
        return None if state is None else copy_state(state)

    async def save(self, state: HostState) -> None:
        """Keep a copy of ``state``; write at once if the batch is full, else soon."""
        self._pending[state.origin] = copy_state(state)
        if len(self._pending) >= self.batch:
            await self.flush()
        elif self._timer is None or self._timer.done():
            self._timer = asyncio.get_running_loop().create_task(self._flush_later())

    def pause(self, key: str, until: float) -> None:
        """Raise ``next_allowed`` of the copies held for ``key`` to ``until``."""
        for table in (self._pending, self._in_flight):
            state = table.get(key)
            if state is not None and state.next_allowed < until:
                state.next_allowed = until

    async def flush(self) -> None:
        """Write every pending state; raises what the write raised (the states stay pending)."""
        while self._pending:
            batch, self._pending = self._pending, {}
            self._in_flight.update(batch)
            # A task of its own, shielded: a cancelled caller must not cut a
            # write short, and the states are put back only once it has ended.
            task = asyncio.ensure_future(self._send(list(batch.values())))
            task.add_done_callback(functools.partial(self._settle, batch))
            self._sending.add(task)
            task.add_done_callback(self._sending.discard)
            problem = await asyncio.shield(task)
            if problem is not None:
                raise problem

    async def write_along(
        self, send: Callable[[list[HostState]], Awaitable[tuple[_T, BaseException | None]]]
    ) -> _T:
        """``send(states)``'s result: a request of the store's own that carries the
        pending states as a batch (none while a batch is being written: batches leave
        in order).  ``send`` also returns what its host-state part could not write,
        told as a timed flush tells it; if ``send`` raises, the states stay pending."""
        if self._order is None:
            self._order = asyncio.Lock()
        order = self._order
        if not self._pending or order.locked():
            return (await send([]))[0]
        async with order:
            batch, self._pending = self._pending, {}
            self._in_flight.update(batch)
            written = False
            try:
                result, problem = await send(list(batch.values()))
                written = True
                # The states saved since wait an interval from here, not from the first
                # of those this write carried.
                self._due = asyncio.get_running_loop().time() + self.interval
            finally:
                self._settle_batch(batch, failed=not written)
        if problem is None:
            self._failing = False
        else:
            self._tell(problem)
        return result

    async def close(self) -> None:
        """Stop the timer and write what is pending."""
        timer, self._timer = self._timer, None
        if timer is not None and not timer.done():
            timer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await timer
        if self._sending:
            # A timed write still under way: a failure puts its states back in
            # pending, to be written below rather than after close() returned.
            await asyncio.wait(list(self._sending))
        await self.flush()

    async def _send(self, states: list[HostState]) -> BaseException | None:
        if self._order is None:
            self._order = asyncio.Lock()
        async with self._order:
            return await self._write(states)

    def _settle(self, batch: dict[str, HostState], task: asyncio.Future[object]) -> None:
        self._settle_batch(batch, failed=task.cancelled() or task.exception() is not None)

    def _settle_batch(self, batch: dict[str, HostState], *, failed: bool) -> None:
        for key, state in batch.items():
            if self._in_flight.get(key) is state:
                del self._in_flight[key]
            if failed:
                # States saved since the batch left are newer: keep them.
                self._pending.setdefault(key, state)

    async def _flush_later(self) -> None:
        loop = asyncio.get_running_loop()
        self._due = loop.time() + self.interval
        while (left := self._due - loop.time()) > 0:  # a write carried the states meanwhile
            await asyncio.sleep(left)
        try:
            await self.flush()
        except Exception as exc:
            self._tell(exc)
        else:
            self._failing = False

    def _tell(self, exc: BaseException) -> None:
        """A write that failed: the batch is back in pending (the next save, flush or
        close retries).  One warning per run of failures: a full disk must not flood
        the log."""
        if self._failing:
            _log.debug("robotgate: writing host state to %s failed again", self.label,
                       exc_info=exc)
            return
        self._failing = True
        _log.warning("robotgate: writing host state to %s failed (retried at each flush; "
                     "further failures are logged at DEBUG until a write succeeds)",
                     self.label, exc_info=exc)
