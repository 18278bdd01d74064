"""bounded(): the awaited value within the time, TimeoutError past it."""

from __future__ import annotations

import asyncio

from robotgate.timeouts import bounded
from tests.support.waits import assert_cut_off


async def test_an_await_within_its_time_gives_its_value() -> None:
    assert await bounded(asyncio.sleep(0, "done"), 5.0) == "done"


async def test_an_await_past_its_time_is_cut_off() -> None:
    never = asyncio.Event()
    await assert_cut_off(bounded(never.wait(), 0.05), within=5)
