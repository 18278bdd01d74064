"""robotgate: polite crawling for asyncio.

The core (:class:`RobotsTxt`, :class:`Decision`) is pure and synchronous; the
gate and stores are a thin asyncio shell on top.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .decision import Decision, Rule
from .gate import Disallowed, GateClosed, RobotGate
from .policy import FetchPolicy
from .robotstxt import RequestRate, RobotsTxt
from .store import HostState, MemoryStore, Outcome, RobotsEntry, SQLiteStore, Store, StoreError
from .urls import InvalidURL

if TYPE_CHECKING:
    from .store.redis import RedisStore

__all__ = [
    "Decision",
    "Disallowed",
    "FetchPolicy",
    "GateClosed",
    "HostState",
    "InvalidURL",
    "MemoryStore",
    "Outcome",
    "RedisStore",
    "RequestRate",
    "RobotGate",
    "RobotsEntry",
    "RobotsTxt",
    "Rule",
    "SQLiteStore",
    "Store",
    "StoreError",
]


def __getattr__(name: str) -> Any:
    # RedisStore is imported on first use so that `import robotgate` never imports redis.
    if name == "RedisStore":
        from .store.redis import RedisStore

        return RedisStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__version__ = "0.1.0"
