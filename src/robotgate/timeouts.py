"""Bounding an await in time, the cheapest way the running Python offers."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import TypeVar

__all__ = ["PausableDeadline", "bounded"]

_T = TypeVar("_T")


async def bounded(aw: Awaitable[_T], seconds: float) -> _T:
    """``await aw``, cut off with :class:`asyncio.TimeoutError` after ``seconds``.

    >>> await bounded(asyncio.sleep(0, "done"), 1.0)  # doctest: +SKIP
    'done'
    """
    if sys.version_info >= (3, 11):
        async with asyncio.timeout(seconds):  # no task, unlike wait_for
            return await aw
    return await asyncio.wait_for(aw, seconds)


class PausableDeadline:
    """``async with PausableDeadline(seconds, most, overdue)``: the block cut off with
    :class:`asyncio.TimeoutError` once it has run ``seconds``, its pauses not counted.

    Between :meth:`pause` and :meth:`resume` the block waits for this process's own
    resource (a free socket), which is no slowness of the server's: each such wait is
    bounded on its own, by ``most`` seconds, past which the block is cut off with
    ``overdue()`` instead.  One timer handle at a time, no task.
    """

    __slots__ = ("_cancelling", "_cut", "_handle", "_left", "_loop", "_most", "_overdue",
                 "_paused", "_since", "_task")

    def __init__(self, seconds: float, most: float,
                 overdue: Callable[[], BaseException]) -> None:
        self._left = seconds
        self._most = most
        self._overdue = overdue
        self._handle: asyncio.TimerHandle | None = None
        self._cut: Callable[[], BaseException] | None = None  # what ended the block
        self._paused = False
        self._since = 0.0
        self._cancelling = 0

    async def __aenter__(self) -> PausableDeadline:
        self._loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("PausableDeadline needs a task")
        self._task = task
        if sys.version_info >= (3, 11):
            self._cancelling = task.cancelling()
        self._run()
        return self

    def _run(self) -> None:
        self._since = self._loop.time()
        self._handle = self._loop.call_later(self._left, self._end, asyncio.TimeoutError)

    def _end(self, cut: Callable[[], BaseException]) -> None:
        self._handle = None
        self._cut = cut
        self._task.cancel()

    def pause(self) -> None:
        """The block waits for this process's resource from now: its clock stops,
        and the wait may last ``most`` seconds."""
        handle = self._handle
        if handle is None or self._paused:
            return
        handle.cancel()
        self._paused = True
        self._left -= self._loop.time() - self._since
        self._handle = self._loop.call_later(self._most, self._end, self._overdue)

    def resume(self) -> None:
        """The resource came: the block's clock runs on."""
        handle = self._handle
        if handle is None or not self._paused:
            return
        handle.cancel()
        self._paused = False
        self._run()

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        cut = self._cut
        if cut is None or exc_type is None or not issubclass(exc_type, asyncio.CancelledError):
            return
        if sys.version_info >= (3, 11) and self._task.uncancel() > self._cancelling:
            return  # cancelled from outside as well: that cancellation goes on
        raise cut() from exc
