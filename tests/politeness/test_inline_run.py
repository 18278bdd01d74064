"""InlineRun: a coroutine run in the awaiting task, moved to a task of its own when
that task is cancelled, when it asks to (LEAVE), or when it must be cancelled."""

from __future__ import annotations

import asyncio
import contextvars
import sys
from typing import Any

import pytest

from robotgate.politeness.inline_run import LEAVE, InlineRun, current

VAR: contextvars.ContextVar[str] = contextvars.ContextVar("VAR", default="unset")


class Fetch:
    """A coroutine that records the task each of its steps ran in."""

    def __init__(self, leave: bool = False, bare: bool = False) -> None:
        self.gate: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self.leave = leave
        self.bare = bare
        self.tasks: list[asyncio.Task[Any] | None] = []
        self.result: str | None = None
        self.error: BaseException | None = None
        self.seen_var: str | None = None

    async def __call__(self) -> None:
        self.tasks.append(asyncio.current_task())
        self.seen_var = VAR.get()
        VAR.set("set by the fetch")
        try:
            if self.bare:
                await asyncio.sleep(0)
            if self.leave:
                await LEAVE
                self.tasks.append(asyncio.current_task())
            self.result = await self.gate
        except BaseException as exc:
            self.error = exc
            raise
        self.tasks.append(asyncio.current_task())


async def test_the_run_ends_in_the_awaiting_task_with_no_task_of_its_own() -> None:
    fetch = Fetch()
    VAR.set("the asker's")
    run = InlineRun(fetch())
    asker = asyncio.ensure_future(_await(run))
    await asyncio.sleep(0.01)
    fetch.gate.set_result("answer")
    await asker
    assert fetch.result == "answer" and run.task is None
    assert fetch.tasks == [asker, asker]
    assert fetch.seen_var == "the asker's" and VAR.get() == "the asker's"  # a copy, as a task's


async def test_a_cancelled_asker_leaves_the_run_going_in_a_task() -> None:
    fetch = Fetch()
    run = InlineRun(fetch())
    asker = asyncio.ensure_future(_await(run))
    await asyncio.sleep(0.01)
    asker.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asker
    assert run.task is not None and not fetch.gate.cancelled()
    fetch.gate.set_result("answer")
    await run.task
    assert fetch.result == "answer" and fetch.error is None
    assert fetch.tasks == [asker, run.task]


async def test_a_cancel_at_a_bare_yield_moves_the_run_too() -> None:
    fetch = Fetch(bare=True)
    run = InlineRun(fetch())
    asker = asyncio.ensure_future(_await(run))
    await asyncio.sleep(0)  # the asker's first step: the fetch at its sleep(0)
    asker.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asker
    assert run.task is not None
    fetch.gate.set_result("answer")
    await run.task
    assert fetch.result == "answer" and fetch.tasks[-1] is run.task


async def test_leave_goes_on_in_a_task_and_the_asker_stops_driving() -> None:
    fetch = Fetch(leave=True)
    run = InlineRun(fetch())
    asker = asyncio.ensure_future(_await(run))
    await asker  # returns once the run moved
    assert run.task is not None and not run.task.done()
    fetch.gate.set_result("answer")
    await run.task
    assert fetch.tasks == [asker, run.task, run.task]


async def test_leave_outside_a_run_does_nothing() -> None:
    await LEAVE
    assert current() is None


async def test_expire_cancels_the_run_in_its_own_task_only() -> None:
    fetch = Fetch()
    run = InlineRun(fetch())
    asker = asyncio.ensure_future(_await(run))
    await asyncio.sleep(0.01)
    run.expire()
    await asker  # not cancelled: it only stops driving
    assert run.task is not None
    with pytest.raises(asyncio.CancelledError):
        await run.task
    assert isinstance(fetch.error, asyncio.CancelledError) and fetch.gate.cancelled()
    assert run.timed_out()
    if sys.version_info >= (3, 11):
        assert run.task.cancelling() == 0  # the cancel was the deadline's, taken back
        assert asker.cancelling() == 0


async def test_to_task_then_cancel_before_it_starts_reaches_the_coroutine() -> None:
    fetch = Fetch()
    run = InlineRun(fetch())
    asker = asyncio.ensure_future(_await(run))
    await asyncio.sleep(0.01)
    task = run.to_task()
    assert run.to_task() is task  # once
    task.cancel()  # before the task's first step
    with pytest.raises(asyncio.CancelledError):
        await task
    await asker
    assert isinstance(fetch.error, asyncio.CancelledError) and fetch.gate.cancelled()
    assert not run.timed_out()


async def test_an_error_of_the_run_reaches_the_asker_when_inline() -> None:
    async def failing() -> None:
        await asyncio.sleep(0)
        raise KeyError("boom")

    with pytest.raises(KeyError):
        await InlineRun(failing())


async def _await(run: InlineRun) -> None:
    await run
