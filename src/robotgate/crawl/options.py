"""The crawl's options: what ``gate.crawl`` takes after ``concurrency`` and ``name``,
checked by name before any request."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from difflib import get_close_matches
from typing import Any, TypedDict, TypeVar

from ..store.crawl_state import CrawlState
from .gate_interface import Opening
from .results import CrawlResult, CrawlSummary, Handled

__all__ = [
    "DEFAULT_RETRIES",
    "RETRY_STATUSES",
    "SCOPES",
    "CrawlOptions",
    "Handler",
    "HandlerResult",
    "Links",
    "ScopeRule",
    "check_options",
]

#: Statuses retried (``retries``): the gate backs the host off first.
RETRY_STATUSES = frozenset({429, 503})
#: Attempts after the first of a URL whose answer or error is transient.
DEFAULT_RETRIES = 2
#: What ``scope`` may name (or a :data:`ScopeRule`).
SCOPES = ("host", "domain", "any")

#: What a handler gives back: the page's links, a :class:`Handled`, or nothing.
Links = Iterable[str] | Handled | None
HandlerResult = Links | Awaitable[Links]
_Response = TypeVar("_Response")
#: ``handler(url, response)``, awaited while the response is open.
Handler = Callable[[str, _Response], HandlerResult]
#: ``scope(link, page_url) -> bool``: whether a link a page gave is crawled.
ScopeRule = Callable[[str, str], bool]


class CrawlOptions(TypedDict, total=False):
    """The keywords of :meth:`robotgate.RobotGate.crawl` after ``concurrency`` and
    ``name`` (see :func:`robotgate.crawl.frontier.crawl`): a misspelt one is a
    ``TypeError`` before any request, and a type checker reports it."""

    per_host: int | None
    timeout: float | None
    on_result: Callable[[CrawlResult], object] | None
    fetch: Callable[..., Opening[Any]] | None
    max_queued: int
    max_seen: int
    retries: int
    retry_statuses: Iterable[int]
    obey_nofollow: bool
    record_directives: bool
    follow_links: bool
    stop: asyncio.Event | None
    summary: CrawlSummary | None
    url_key: Callable[[str], str] | None
    scope: str | ScopeRule
    max_depth: int | None
    max_links: int
    state: CrawlState | None


def check_options(options: dict[str, object]) -> None:
    """Raise ``TypeError`` naming each keyword that is no crawl option (and the
    option it may mean) before the crawl sends anything."""
    known = CrawlOptions.__annotations__
    unknown = [name for name in options if name not in known]
    if unknown:
        hints = []
        for name in unknown:
            close = get_close_matches(name, [*known, "concurrency", "name"], n=1)
            hints.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        raise TypeError(f"crawl() got unexpected keyword argument{'s' if len(unknown) > 1 else ''}"
                        f" {', '.join(hints)}")
