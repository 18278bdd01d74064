"""Storage backends for the gate: memory (default), SQLite (disk), Redis (fleet).

``RedisStore`` is imported on first use, so ``import robotgate`` never imports redis.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import HostState, Outcome, RobotsEntry, Store, StoreError
from .memory import MemoryStore
from .sqlite import SQLiteStore

if TYPE_CHECKING:
    from .redis import RedisStore

__all__ = [
    "HostState",
    "MemoryStore",
    "Outcome",
    "RedisStore",
    "RobotsEntry",
    "SQLiteStore",
    "Store",
    "StoreError",
]


def __getattr__(name: str) -> Any:
    if name == "RedisStore":
        from .redis import RedisStore

        return RedisStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
