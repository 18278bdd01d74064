"""The crawl frontier (being written: helper E replaces this placeholder)."""

from __future__ import annotations

from typing import Any


async def crawl(gate: Any, urls: Any, handler: Any, *, concurrency: int, **options: Any) -> Any:
    raise NotImplementedError
