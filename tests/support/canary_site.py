"""The loopback site the secret canaries crawl: a server on ``host`` recording each
path it is asked for; what it answers is the subclass's ``_handle``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Self

from aiohttp import web


@dataclass
class CanarySite:
    host: str = "127.0.0.1"
    paths: list[str] = field(default_factory=list)
    port: int = 0
    _runner: web.AppRunner | None = None

    async def start(self) -> Self:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        # A slow answer still being written does not hold the test's end.
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
        await self._runner.setup()
        await web.TCPSite(self._runner, self.host, 0).start()
        self.port = self._runner.addresses[0][1]
        return self

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def url(self, path: str, userinfo: str = "") -> str:
        return f"http://{userinfo}{self.host}:{self.port}{path}"

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        raise NotImplementedError
