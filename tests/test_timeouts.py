"""bounded(): the awaited value within the time, TimeoutError past it."""

from __future__ import annotations

import asyncio

import pytest

from robotgate.timeouts import bounded


async def test_an_await_within_its_time_gives_its_value() -> None:
    assert await bounded(asyncio.sleep(0, "done"), 5.0) == "done"


async def test_an_await_past_its_time_is_cut_off() -> None:
    never = asyncio.Event()
    task = asyncio.ensure_future(bounded(never.wait(), 0.05))
    try:
        done, _ = await asyncio.wait({task}, timeout=5)
        assert done, "not cut off"
        with pytest.raises(asyncio.TimeoutError):
            task.result()
    finally:
        task.cancel()
