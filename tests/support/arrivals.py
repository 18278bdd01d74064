"""A small loopback server that notes when each request arrives, across ports and names.

Several listeners (ports, plain or TLS) share one log, so the test sees what the
machine behind them sees: the gaps between any two requests it received.
"""

from __future__ import annotations

import itertools
import ssl
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from aiohttp import web

__all__ = ["Arrivals", "Noted", "self_signed"]


class Noted:
    """A loopback site's log of what it received: each request's path, when it came
    (monotonic) and its User-Agent, in ``arrivals``."""

    arrivals: list[tuple[str, float, str]]

    def note(self, request: web.Request) -> str:
        """Note ``request``; its path."""
        self.arrivals.append((request.path, time.monotonic(),
                              request.headers.get("User-Agent", "")))
        return request.path

    def paths(self) -> list[str]:
        return [path for path, _, _ in self.arrivals]

    def times(self, prefix: str) -> list[float]:
        return [t for path, t, _ in self.arrivals if path.startswith(prefix)]


@dataclass
class Arrivals:
    """Runs listeners on 127.0.0.1; ``robots`` is every origin's robots.txt.

    ``rate_limit`` (seconds): a page arriving sooner than that after the last
    page let through is answered 429 without Retry-After.
    """

    robots: str = "User-agent: *\nAllow: /\n"
    rate_limit: float | None = None
    times: list[float] = field(default_factory=list)
    hosts: list[str] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)
    robots_requests: int = 0
    _runners: list[web.AppRunner] = field(default_factory=list)
    _last_ok: float = -1e9

    async def listen(self, tls: ssl.SSLContext | None = None, host: str = "127.0.0.1") -> int:
        app = web.Application()
        app.router.add_get("/robots.txt", self._robots)
        app.router.add_get("/{tail:.*}", self._page)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, host, 0, ssl_context=tls)
        await site.start()
        self._runners.append(runner)
        server = site._server
        assert server is not None and server.sockets  # type: ignore[attr-defined]
        port: int = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]
        return port

    async def close(self) -> None:
        for runner in self._runners:
            await runner.cleanup()

    async def _robots(self, request: web.Request) -> web.Response:
        self.robots_requests += 1
        self._note(request, 200)
        return web.Response(text=self.robots)

    async def _page(self, request: web.Request) -> web.Response:
        now = time.monotonic()
        status = 200
        if self.rate_limit is not None:
            if now - self._last_ok < self.rate_limit:
                status = 429
            else:
                self._last_ok = now
        self._note(request, status, now)
        return web.Response(status=status, text="page")

    def _note(self, request: web.Request, status: int, now: float | None = None) -> None:
        self.times.append(time.monotonic() if now is None else now)
        self.hosts.append(request.headers.get("Host", ""))
        self.statuses.append(status)

    def gaps(self) -> list[float]:
        """Gaps between consecutive requests the machine received (robots.txt included)."""
        times = sorted(self.times)
        return [b - a for a, b in itertools.pairwise(times)]


def self_signed(directory: Path) -> tuple[ssl.SSLContext, Path]:
    """A throwaway certificate for 127.0.0.1: the server's context and the cert file."""
    key, cert = directory / "key.pem", directory / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    return context, cert
