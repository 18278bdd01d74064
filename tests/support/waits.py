"""Asserting that an await is cut off in time."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

import pytest


async def assert_cut_off(aw: Awaitable[object], within: float) -> None:
    """``aw`` ends with :class:`asyncio.TimeoutError` within ``within`` seconds."""
    task = asyncio.ensure_future(aw)
    try:
        done, _ = await asyncio.wait({task}, timeout=within)
        assert done, "not cut off"
        with pytest.raises(asyncio.TimeoutError):
            task.result()
    finally:
        task.cancel()
