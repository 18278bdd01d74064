"""bounded(): the awaited value within the time, TimeoutError past it; PausableDeadline:
the same, its pauses (a wait for a free socket) bounded on their own."""

from __future__ import annotations

import asyncio

import pytest

from robotgate.timeouts import PausableDeadline, bounded
from tests.support.waits import assert_cut_off


async def test_an_await_within_its_time_gives_its_value() -> None:
    assert await bounded(asyncio.sleep(0, "done"), 5.0) == "done"


async def test_an_await_past_its_time_is_cut_off() -> None:
    never = asyncio.Event()
    await assert_cut_off(bounded(never.wait(), 0.05), within=5)


class Overdue(Exception):
    pass


async def test_a_pause_is_not_counted_against_the_deadline() -> None:
    # 0.2 s of running time; a 0.5 s pause in the middle does not use it up.
    async with PausableDeadline(0.2, 5.0, Overdue) as deadline:
        deadline.pause()
        await asyncio.sleep(0.5)
        deadline.resume()
        await asyncio.sleep(0.05)


async def test_the_running_time_is_cut_off_with_a_timeout() -> None:
    never = asyncio.Event()
    with pytest.raises(asyncio.TimeoutError):
        async with PausableDeadline(0.05, 5.0, Overdue):
            await asyncio.wait_for(never.wait(), 10)  # hang guard


async def test_a_pause_past_its_bound_is_cut_off_with_overdue() -> None:
    never = asyncio.Event()
    with pytest.raises(Overdue):
        async with PausableDeadline(5.0, 0.05, Overdue) as deadline:
            deadline.pause()
            await asyncio.wait_for(never.wait(), 10)  # hang guard


async def test_a_cancellation_from_outside_stays_a_cancellation() -> None:
    async def waits() -> None:
        async with PausableDeadline(5.0, 5.0, Overdue):
            await asyncio.Event().wait()

    task = asyncio.ensure_future(waits())
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
