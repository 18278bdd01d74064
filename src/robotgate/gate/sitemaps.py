"""The aiohttp side of ``gate.sitemaps``: a sitemap is opened as ``gate.fetch`` opens a page.

So it is checked against robots.txt (:class:`~robotgate.errors.Disallowed`, nothing
sent), a sitemap that robots.txt or an index names is its pointer (``pointed_by``,
refused from a public site into a private address), it waits for its server's
turn, and each redirect hop is checked and paced;
the body is read as it streams in, aiohttp undoing any Content-Encoding.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from types import TracebackType
from typing import Any

import aiohttp

from ..politeness.sitemaps import SitemapReader
from ..robots import RobotsTxt
from .aiohttp_client import FetchCall

__all__ = ["GateSitemapTransport", "sitemap_reader"]


def sitemap_reader(fetch: Callable[..., FetchCall],
                   rules_of: Callable[[str], Awaitable[RobotsTxt | None]]) -> SitemapReader:
    """A gate's sitemap reader: sitemaps through its ``fetch`` (``gate.fetch``), named by
    the robots.txt ``rules_of`` an origin gives (``gate.rules``)."""

    async def named(origin: str) -> Sequence[str]:
        rules = await rules_of(origin)
        return rules.sitemaps if rules is not None else ()

    return SitemapReader(GateSitemapTransport(fetch), named)


class GateSitemapTransport:
    """Opens sitemaps through ``fetch`` (``gate.fetch``), streamed."""

    def __init__(self, fetch: Callable[..., FetchCall]) -> None:
        self._fetch = fetch

    def open(self, url: str, timeout: float, pointed_by: str | None) -> _Opened:
        return _Opened(self._fetch(url, stream=True, pointed_by=pointed_by,
                                   timeout=aiohttp.ClientTimeout(total=timeout)))


class _Body:
    __slots__ = ("_content", "status")

    def __init__(self, resp: aiohttp.ClientResponse) -> None:
        self.status = resp.status
        self._content = resp.content

    async def read(self, n: int) -> bytes:
        return await self._content.read(n)


class _Opened:
    """``async with``: the streamed answer; leaving closes what was not read."""

    __slots__ = ("_call", "_resp")

    def __init__(self, call: FetchCall) -> None:
        self._call = call
        self._resp: aiohttp.ClientResponse | None = None

    async def __aenter__(self) -> _Body:
        self._resp = await self._call.__aenter__()
        return _Body(self._resp)

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> Any:
        resp = self._resp
        if resp is not None and not resp.content.at_eof():
            resp.close()  # the rest is not wanted: the connection is not reused
        await self._call.__aexit__(exc_type, exc, tb)
