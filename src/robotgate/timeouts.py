"""Bounding an await in time, the cheapest way the running Python offers."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable
from typing import TypeVar

__all__ = ["bounded"]

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
