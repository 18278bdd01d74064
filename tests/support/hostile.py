"""A small loopback server that misbehaves on purpose, for the CLI's bulk-fetch tests.

One host (``127.0.0.1``, a free port); robots.txt disallows ``/private/`` (and
may come compressed, see :class:`HostileServer`).

``/bomb/gzip/N`` and ``/bomb/br/N``   N MiB of zeros, compressed (a few hundred KB
                                      or bytes on the wire)
``/endless``                          64 KiB chunks until the client goes away
``/sized/N``                          exactly N bytes
``/trickle/S``                        one byte every 0.2 s for S seconds
``/slow/S``                           a small page after S seconds
``/page/N``                           a small HTML page

Each request's path and arrival time are kept in ``requests``.
"""

from __future__ import annotations

import asyncio
import time
import zlib
from functools import lru_cache

import brotli
from aiohttp import web

MIB = 1024 * 1024


@lru_cache(maxsize=4)
def gzip_bomb(mib: int, fill: bytes = b"\0") -> bytes:
    """``mib`` MiB of ``fill`` (zeros), gzip-compressed (about 1 KB per MiB)."""
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = fill * MIB
    return b"".join(z.compress(block) for _ in range(mib)) + z.flush()


@lru_cache(maxsize=4)
def brotli_bomb(mib: int, fill: bytes = b"\0") -> bytes:
    """``mib`` MiB of ``fill`` (zeros), brotli-compressed (a few hundred bytes)."""
    c = brotli.Compressor(quality=5)
    block = fill * MIB
    return b"".join(c.process(block) for _ in range(mib)) + c.finish()


#: The rules every robots.txt of the server starts with.
RULES = b"User-agent: *\nDisallow: /private/\n"


@lru_cache(maxsize=2)
def robots_bomb(coding: str) -> bytes:
    """:data:`RULES` then 64 MiB of comment, compressed with ``coding`` (gzip or br)."""
    # Compressed a MiB at a time: 64 MiB at once would raise this process's peak, which
    # children spawned later carry (see tests/cli/test_fetch_hostile.py).
    comments = b"#" * MIB
    if coding == "gzip":
        z = zlib.compressobj(9, zlib.DEFLATED, 31)
        return z.compress(RULES) + b"".join(z.compress(comments) for _ in range(64)) + z.flush()
    c = brotli.Compressor(quality=5)
    return c.process(RULES) + b"".join(c.process(comments) for _ in range(64)) + c.finish()


class HostileServer:
    """``async with HostileServer() as srv: srv.url("/endless")``.

    With ``robots_coding`` ("gzip" or "br") robots.txt is :func:`robots_bomb`,
    sent with that ``Content-Encoding`` whatever the client accepts.
    """

    def __init__(self, host: str = "127.0.0.1", robots_coding: str | None = None) -> None:
        self.host = host
        self.robots_coding = robots_coding
        self.port = 0
        self.requests: list[tuple[float, str]] = []
        self._runner: web.AppRunner | None = None

    def url(self, path: str) -> str:
        """The absolute URL of ``path`` on this server."""
        return f"http://{self.host}:{self.port}{path}"

    async def __aenter__(self) -> HostileServer:
        app = web.Application()
        app.router.add_get("/robots.txt", self._robots)
        app.router.add_get("/bomb/{kind}/{mib}", self._bomb)
        app.router.add_get("/endless", self._endless)
        app.router.add_get("/sized/{n}", self._sized)
        app.router.add_get("/trickle/{seconds}", self._trickle)
        app.router.add_get("/slow/{seconds}", self._slow)
        app.router.add_get("/{kind}/{n}", self._page)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await runner.setup()
        site = web.TCPSite(runner, self.host, 0)
        await site.start()
        server = site._server
        assert server is not None
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self._runner = runner
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def _note(self, request: web.Request) -> None:
        self.requests.append((time.monotonic(), request.path))

    def paths(self) -> list[str]:
        """Paths requested so far, in order."""
        return [path for _, path in self.requests]

    async def _robots(self, request: web.Request) -> web.Response:
        self._note(request)
        if self.robots_coding is not None:
            return web.Response(body=robots_bomb(self.robots_coding), headers={
                "Content-Encoding": self.robots_coding, "Content-Type": "text/plain"})
        return web.Response(body=RULES, content_type="text/plain")

    async def _bomb(self, request: web.Request) -> web.Response:
        self._note(request)
        kind, mib = request.match_info["kind"], int(request.match_info["mib"])
        body = gzip_bomb(mib) if kind == "gzip" else brotli_bomb(mib)
        encoding = "gzip" if kind == "gzip" else "br"
        return web.Response(body=body, headers={"Content-Encoding": encoding,
                                                "Content-Type": "text/html"})

    async def _endless(self, request: web.Request) -> web.StreamResponse:
        self._note(request)
        resp = web.StreamResponse(headers={"Content-Type": "application/octet-stream"})
        await resp.prepare(request)
        chunk = b"x" * 65536
        try:
            while True:
                await resp.write(chunk)
        except (ConnectionError, RuntimeError):  # the client went away
            pass
        return resp

    async def _sized(self, request: web.Request) -> web.Response:
        self._note(request)
        return web.Response(body=b"y" * int(request.match_info["n"]),
                            headers={"Content-Type": "application/octet-stream"})

    async def _trickle(self, request: web.Request) -> web.StreamResponse:
        self._note(request)
        resp = web.StreamResponse(headers={"Content-Type": "text/plain"})
        await resp.prepare(request)
        end = time.monotonic() + float(request.match_info["seconds"])
        try:
            while time.monotonic() < end:
                await resp.write(b".")
                await asyncio.sleep(0.2)
            await resp.write_eof()
        except (ConnectionError, RuntimeError):
            pass
        return resp

    async def _slow(self, request: web.Request) -> web.Response:
        self._note(request)
        await asyncio.sleep(float(request.match_info["seconds"]))
        return web.Response(text="<p>slow</p>", content_type="text/html")

    async def _page(self, request: web.Request) -> web.Response:
        self._note(request)
        return web.Response(text=f"<p>{request.path}</p>", content_type="text/html")
