"""Storage backends for the gate: memory (default), SQLite (disk), Redis (fleet), and
their interfaces (base.py: the base store and the part it hands out per capability).

``RedisStore`` is imported on first use, so ``import robotgate`` never imports redis.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import (
    AnswersAtOnce,
    CrawlInUse,
    Crawls,
    Fleet,
    HostState,
    Outcome,
    RobotsEntry,
    SharedCrawls,
    Slots,
    Store,
    StoreError,
)
from .crawl_state import NamedCrawlsUnsupported
from .memory import MemoryStore
from .sqlite import SQLiteStore

if TYPE_CHECKING:
    from .redis import RedisStore

__all__ = [
    "AnswersAtOnce",
    "CrawlInUse",
    "Crawls",
    "Fleet",
    "HostState",
    "MemoryStore",
    "NamedCrawlsUnsupported",
    "Outcome",
    "RedisStore",
    "RobotsEntry",
    "SQLiteStore",
    "SharedCrawls",
    "Slots",
    "Store",
    "StoreError",
]


def __getattr__(name: str) -> Any:
    if name == "RedisStore":
        from .redis import RedisStore

        return RedisStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
