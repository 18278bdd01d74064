"""Which requests share one server's budget: the politeness key of an origin.

robots.txt is per origin (RFC 9309), but a server's budget is not: http and
https of one host, the subdomains of one platform, the names on one address
all land on the same machine.

=========  ==========================================  =========================
pace_by    key                                         for
=========  ==========================================  =========================
host       the host name (any scheme or port)          the default; Scrapy, Nutch
origin     scheme, host and port                       robots.txt's own unit
domain     the registrable domain (ICANN suffixes)     platforms with many names
ip         the address the connection will use        hosting providers, CDNs
=========  ==========================================  =========================
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from functools import lru_cache
from typing import Literal

__all__ = ["PaceBy", "PaceKeys", "registrable_domain"]

PaceBy = Literal["host", "origin", "domain", "ip"]
PACE_BY: tuple[PaceBy, ...] = ("host", "origin", "domain", "ip")
Resolve = Callable[[str], Awaitable[str]]


def _host_of_origin(origin: str) -> str:
    rest = origin.partition("://")[2]
    if rest.startswith("["):
        return rest[: rest.index("]") + 1]
    return rest.rpartition(":")[0] if ":" in rest else rest


@lru_cache(maxsize=1)
def _suffix_list() -> object:
    # The list ships inside the package: nothing is downloaded at run time.
    from publicsuffixlist import PublicSuffixList

    # ICANN suffixes only: the subdomains of one blog platform (x.blogspot.com)
    # are one server's load, whatever the private section of the list says.
    return PublicSuffixList(only_icann=True)


def registrable_domain(host: str) -> str:
    """The registrable domain of ``host`` (the host itself for IPs and bare names).

    >>> registrable_domain("a.b.example.co.uk"), registrable_domain("127.0.0.1")
    ('example.co.uk', '127.0.0.1')
    """
    if not host or host[0] == "[" or host.replace(".", "").isdigit():
        return host
    found = _suffix_list().privatesuffix(host)  # type: ignore[attr-defined]
    return found if isinstance(found, str) else host


class PaceKeys:
    """Maps origins to politeness keys; ``ip`` keys are resolved and cached for ``ttl`` s.

    >>> keys = PaceKeys("host")
    >>> keys.cached("https://example.com:8443"), keys.cached("http://example.com")
    ('host:example.com', 'host:example.com')
    """

    __slots__ = ("_cache", "_inflight", "_resolve", "max_entries", "pace_by", "ttl")

    def __init__(self, pace_by: PaceBy = "host", *, resolve: Resolve | None = None,
                 ttl: float = 300.0, max_entries: int = 100_000) -> None:
        if pace_by not in PACE_BY:
            raise ValueError(f"pace_by must be one of {', '.join(PACE_BY)}")
        self.pace_by = pace_by
        self.ttl = ttl
        self.max_entries = max_entries
        self._resolve = resolve
        self._cache: dict[str, tuple[str, float]] = {}  # origin -> (key, expires)
        self._inflight: dict[str, asyncio.Future[str]] = {}

    def set_resolver(self, resolve: Resolve) -> None:
        """Use ``resolve(host) -> address`` for ``pace_by="ip"`` (the client's resolver)."""
        self._resolve = resolve

    def cached(self, origin: str) -> str | None:
        """The key of ``origin`` if it needs no lookup (or is cached), else None."""
        got = self._cache.get(origin)
        if got is not None and (got[1] == 0.0 or got[1] > time.monotonic()):
            return got[0]
        pace_by = self.pace_by
        if pace_by == "ip":
            return None
        if pace_by == "origin":
            key = origin
        elif pace_by == "host":
            key = "host:" + _host_of_origin(origin)
        else:
            key = "domain:" + registrable_domain(_host_of_origin(origin))
        self._remember(origin, key, 0.0)
        return key

    async def key(self, origin: str) -> str:
        """The key of ``origin``, resolving its host for ``pace_by="ip"``."""
        key = self.cached(origin)
        if key is not None:
            return key
        pending = self._inflight.get(origin)
        if pending is None:
            pending = asyncio.ensure_future(self._lookup(origin))
            self._inflight[origin] = pending
            pending.add_done_callback(lambda _f: self._inflight.pop(origin, None))
        return await asyncio.shield(pending)

    async def _lookup(self, origin: str) -> str:
        host = _host_of_origin(origin).strip("[]")
        address = host
        if self._resolve is not None and not _is_literal(host):
            try:
                address = await self._resolve(host)
            except (OSError, asyncio.TimeoutError, ValueError):
                address = host  # unresolvable: the request will fail on its own
        key = "ip:" + address
        self._remember(origin, key, time.monotonic() + self.ttl)
        return key

    def _remember(self, origin: str, key: str, expires: float) -> None:
        cache = self._cache
        if len(cache) >= self.max_entries:
            cache.clear()  # cheap and rare: keys are recomputed on demand
        cache[origin] = (key, expires)


def _is_literal(host: str) -> bool:
    return ":" in host or host.replace(".", "").isdigit()
