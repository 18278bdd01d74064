"""robotgate: polite crawling for asyncio.

The core (:class:`RobotsTxt`, :class:`Decision`, :class:`FetchPolicy`) is pure
and synchronous; the gate and stores are an asyncio shell on top of it, loaded
on first use so that ``from robotgate import RobotsTxt`` imports no HTTP client.
"""

from __future__ import annotations

import importlib
from importlib import metadata
from typing import TYPE_CHECKING, Any

from .decision import Decision, Rule, UsageRule
from .error_root import Error
from .links import page_links
from .policy import FetchPolicy
from .policy.fetch import LocalFailure
from .policy.host_settings import HostSettings
from .policy.pacing import Pacing
from .records import HostState, Outcome, RobotsEntry
from .robots import RequestRate, RobotsTxt
from .robots.directives import PageDirectives, page_directives
from .urls import InvalidURL

if TYPE_CHECKING:
    from .crawl.results import CrawlResult, CrawlSummary, Handled
    from .errors import (
        BodyTooLarge,
        Disallowed,
        GateClosed,
        ProxyFailed,
        TooManyRedirects,
        WaitsOnItself,
    )
    from .gate import RobotGate
    from .gate.options import Network
    from .private_parts import PrivatePartMissing
    from .robots.sitemap import SitemapEntry
    from .store import CrawlInUse, MemoryStore, SQLiteStore, Store, StoreError
    from .store.redis import RedisStore

__all__ = [
    "BodyTooLarge",
    "CrawlInUse",
    "CrawlResult",
    "CrawlSummary",
    "Decision",
    "Disallowed",
    "Error",
    "FetchPolicy",
    "GateClosed",
    "Handled",
    "HostSettings",
    "HostState",
    "InvalidURL",
    "LocalFailure",
    "MemoryStore",
    "Network",
    "Outcome",
    "Pacing",
    "PageDirectives",
    "PrivatePartMissing",
    "ProxyFailed",
    "RedisStore",
    "RequestRate",
    "RobotGate",
    "RobotsEntry",
    "RobotsTxt",
    "Rule",
    "SQLiteStore",
    "SitemapEntry",
    "Store",
    "StoreError",
    "TooManyRedirects",
    "UsageRule",
    "WaitsOnItself",
    "page_directives",
    "page_links",
]

# The asyncio shell, resolved on first use: name -> module that defines it.
_LAZY = {
    "CrawlResult": ".crawl.results",
    "CrawlSummary": ".crawl.results",
    "Handled": ".crawl.results",
    "BodyTooLarge": ".errors",
    "Disallowed": ".errors",
    "GateClosed": ".errors",
    "RobotGate": ".gate",
    "Network": ".gate.options",
    "PrivatePartMissing": ".private_parts",
    "MemoryStore": ".store",
    "SQLiteStore": ".store",
    "Store": ".store",
    "StoreError": ".store",
    "CrawlInUse": ".store",
    "RedisStore": ".store.redis",
    "SitemapEntry": ".robots.sitemap",
    "TooManyRedirects": ".errors",
    "WaitsOnItself": ".errors",
    "ProxyFailed": ".errors",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value



def _installed_version() -> str:
    try:
        return metadata.version("robotgate")
    except metadata.PackageNotFoundError:  # a source tree on sys.path, not installed
        return "0+unknown"


__version__ = _installed_version()
