"""A shared fetch run in the task of its first asker, moved to a task of its own
only when that asker is cancelled, the fetch must be cancelled, or it asks to be.

Why: on CPython 3.11 and 3.12 a fetch in a task of its own costs the collector
about as much as the rest of a new host's work (the turns of the loop between
the fetch and its asker split frees from allocations); the first asker usually
waits for the fetch anyway.

How it stays safe: the asker drives the fetch's coroutine itself and waits for
each future the fetch waits for through a future of its own (a relay), so a
cancel of the asker reaches only the relay; the fetch then goes on in a task,
in the same context.  Nothing cancels the asker's task on the fetch's behalf:
the fetch's own deadline and ``close()`` move it to a task and cancel that.
Code that would cancel the task it runs in (a timer of aiohttp's, the
scheduler's wait, a user's hook) must run after :data:`LEAVE`::

    await LEAVE  # from here on, in a task of its own

The transport asks for inline runs with ``runs_inline = True`` and then
enforces its deadline with :meth:`InlineRun.expire`, not with a timer that
cancels the current task.
"""

from __future__ import annotations

import asyncio
import contextvars
import sys
from collections.abc import Coroutine, Generator
from typing import Any

__all__ = ["LEAVE", "InlineRun", "current"]

_RUN: contextvars.ContextVar[InlineRun | None] = contextvars.ContextVar(
    "robotgate_inline_run", default=None)
_MOVE = object()  # what LEAVE yields to the driving asker


def current() -> InlineRun | None:
    """The run the calling code is part of while it is still driven inline, else None."""
    run = _RUN.get()
    return run if run is not None and run.task is None else None


class _Leave:
    """``await LEAVE``: go on in a task of its own (nothing when already in one)."""

    __slots__ = ()

    def __await__(self) -> Generator[Any, None, None]:
        if current() is not None:
            yield _MOVE


LEAVE = _Leave()


class InlineRun:
    """Runs ``coro`` in the awaiting task: ``await run`` returns when the coroutine
    ended (its result goes wherever it puts it) or moved to :attr:`task`.

    Example (the robots.txt cache's first asker)::

        run = InlineRun(fly(origin))
        await run          # a CancelledError here cancelled the asker only
        if run.task is not None:
            ...            # the fetch goes on there: wait for its answer
    """

    __slots__ = ("_coro", "_ctx", "_relay", "_waiting", "expired", "task")

    def __init__(self, coro: Coroutine[Any, Any, None]) -> None:
        self._coro = coro
        self._ctx = ctx = contextvars.copy_context()  # as a task would run it
        ctx.run(_RUN.set, self)
        self._relay: asyncio.Future[None] | None = None
        self._waiting: asyncio.Future[Any] | None = None  # what the coroutine waits for
        self.task: asyncio.Task[None] | None = None
        self.expired = False

    def __await__(self) -> Generator[Any, None, None]:
        coro, ctx = self._coro, self._ctx
        while self.task is None:
            try:
                yielded = ctx.run(coro.send, None)
            except StopIteration:
                return
            if yielded is None:  # a bare yield (asyncio.sleep(0)): one turn of the loop
                try:
                    yield None
                except asyncio.CancelledError:
                    self._move(None)
                    raise
                continue
            if yielded is _MOVE:
                self._move(None)
                return
            yielded._asyncio_future_blocking = False
            self._waiting = yielded
            relay = self._relay = asyncio.get_running_loop().create_future()
            yielded.add_done_callback(self._wake)
            try:
                yield from relay.__await__()
            except asyncio.CancelledError:
                if self.task is None:  # the asker's own cancel: the fetch is not
                    self._move(yielded)
                raise
            self._waiting = None

    def _wake(self, _: object) -> None:
        relay = self._relay
        if relay is not None and not relay.done():
            relay.set_result(None)

    def _move(self, waiting: asyncio.Future[Any] | None) -> asyncio.Task[None]:
        if waiting is not None:
            waiting.remove_done_callback(self._wake)
            waiting._asyncio_future_blocking = True
        self._waiting = None
        # Run in (a copy of) the run's context, as its steps so far (3.10: no context=).
        task = self.task = self._ctx.run(asyncio.get_running_loop().create_task,
                                         _Resume(self._coro, waiting))
        return task

    def to_task(self) -> asyncio.Task[None]:
        """Move the run to a task now (from outside it: close(), a deadline); the
        asker stops driving it at its next step.  Returns the task."""
        task = self.task
        if task is None:
            task = self._move(self._waiting)
            self._wake(None)
        return task

    def expire(self) -> None:
        """The fetch's deadline passed: cancel it in its own task (see :attr:`expired`)."""
        self.expired = True
        self.to_task().cancel()

    def timed_out(self) -> bool:
        """After a CancelledError in the fetch: was it :meth:`expire`'s?  Then the
        task's cancel is taken back, as ``asyncio.timeout`` does."""
        if not self.expired:
            return False
        task = self.task
        if task is not None and sys.version_info >= (3, 11):
            task.uncancel()
        return True


class _Resume(Coroutine[Any, Any, None]):
    """A started coroutine handed to a task: first waits for the future the
    coroutine was waiting for (a cancel cancels that future, as a task's does),
    then passes every step through."""

    __slots__ = ("_coro", "_waiting")

    def __init__(self, coro: Coroutine[Any, Any, None],
                 waiting: asyncio.Future[Any] | None) -> None:
        self._coro = coro
        self._waiting = waiting

    def send(self, value: Any) -> Any:
        waiting = self._waiting
        if waiting is not None:
            self._waiting = None
            if not waiting.done():
                waiting._asyncio_future_blocking = True
                return waiting  # the task waits for it, then sends None on
        return self._coro.send(None if waiting is not None else value)

    def throw(self, typ: Any, val: Any = None, tb: Any = None) -> Any:
        waiting, self._waiting = self._waiting, None
        if waiting is not None:
            waiting.cancel()  # cancelled before its first step: the fetch's future too
        exc = typ if isinstance(typ, BaseException) else typ() if val is None else val
        return self._coro.throw(exc)

    def close(self) -> None:
        self._coro.close()

    def __await__(self) -> Generator[Any, None, None]:
        return self._coro.__await__()
