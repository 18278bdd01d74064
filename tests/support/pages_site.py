"""A loopback site of fixed answers (path -> status, headers, body) that notes every request."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from aiohttp import web

__all__ = ["Answer", "PagesSite", "links_in"]

_HREF_RE = re.compile(rb'href="([^"]+)"')


@dataclass
class Answer:
    body: bytes | str = b""
    headers: Mapping[str, str] = field(default_factory=dict)
    status: int = 200
    content_type: str = "text/html"
    delay: float = 0.0


def links_in(base: str, body: bytes) -> list[str]:
    """The href targets of ``body``, made absolute against ``base`` (an origin)."""
    return [base + m.decode() if m.startswith(b"/") else m.decode()
            for m in _HREF_RE.findall(body)]


class PagesSite:
    """``async with PagesSite({"/robots.txt": Answer(...), ...}) as site``; ``site.url(path)``.

    A path not in the map answers 404.  ``site.hits`` counts requests per path.
    """

    def __init__(self, answers: Mapping[str, Answer], host: str = "127.0.0.1") -> None:
        self.answers = dict(answers)
        self.host = host
        self.hits: Counter[str] = Counter()
        self._runner: web.AppRunner | None = None
        self._closing = asyncio.Event()
        self.port = 0

    @property
    def origin(self) -> str:
        return f"http://{self.host}:{self.port}"

    def url(self, path: str) -> str:
        return self.origin + path

    async def _answer(self, request: web.Request) -> web.StreamResponse:
        self.hits[request.path_qs] += 1
        answer = self.answers.get(request.path_qs)
        if answer is None:
            return web.Response(status=404, text="not here")
        if answer.delay:  # cut short when the site closes
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._closing.wait(), answer.delay)
        body = answer.body.encode() if isinstance(answer.body, str) else answer.body
        headers = {"Content-Type": answer.content_type, **answer.headers}
        return web.Response(status=answer.status, body=body, headers=headers)

    async def __aenter__(self) -> PagesSite:
        app = web.Application()
        app.router.add_route("GET", "/{tail:.*}", self._answer)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._closing.set()
        if self._runner is not None:
            await self._runner.cleanup()
