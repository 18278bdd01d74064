"""The ``robotgate demo`` site: dozens of small hosts on loopback, each with its robots.txt.

Every host is its own address (``127.0.X.1``, ``127.0.X.2``, ...; Linux routes
all of 127.0.0.0/8 to the loopback interface), all on one port.  Hosts play
the kinds in :data:`KINDS` in turn, serve a home page linking to five pages
and two private ones, and record what reached them, so the demo can show
what a site would see: robots.txt requests, page requests and their spacing,
requests for paths robots.txt forbids.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import socket
import time
from dataclasses import dataclass, field

from aiohttp import web

#: (kind, what its robots.txt says), in the order hosts take them.
KINDS: tuple[tuple[str, str], ...] = (
    ("open", "allows everything"),
    ("private", "Disallow: /private/"),
    ("slow", "Crawl-delay > delay, Disallow: /private/"),
    ("down", "robots.txt answers 503"),
    ("busy", "a page answers 429, Retry-After: 1"),
    ("none", "no robots.txt (404)"),
    ("greedy", "Crawl-delay: 600, only / allowed"),
)
PAGES = 5


@dataclass
class DemoHost:
    """One host: its kind and what reached it."""

    address: str
    kind: str
    crawl_delay: float | None = None
    robots_requests: int = 0
    page_times: list[float] = field(default_factory=list)
    forbidden_requests: int = 0
    answered_429: int = 0

    def robots_txt(self) -> str | None:
        """The robots.txt body (``None``: the kind answers with an error status)."""
        if self.kind in ("private", "busy"):
            return "User-agent: *\nDisallow: /private/\n"
        if self.kind == "slow":
            return f"User-agent: *\nCrawl-delay: {self.crawl_delay:g}\nDisallow: /private/\n"
        if self.kind == "greedy":
            return f"User-agent: *\nCrawl-delay: {self.crawl_delay:g}\nAllow: /$\nDisallow: /\n"
        if self.kind == "open":
            return "User-agent: *\nAllow: /\n"
        return None

    def forbids(self, path: str) -> bool:
        """Whether robots.txt (or its absence) keeps a polite crawler from ``path``."""
        if self.kind == "down":
            return True
        if self.kind == "greedy":
            return path != "/"
        return self.kind in ("private", "slow", "busy") and path.startswith("/private/")

    def min_gap(self) -> float | None:
        """The smallest interval between two page requests, as the server saw them."""
        times = sorted(self.page_times)
        gaps = [b - a for a, b in itertools.pairwise(times)]
        return min(gaps) if gaps else None


class DemoServer:
    """``hosts`` hosts on one port of 127.0.X.0/24 (X picked at random, retried)."""

    def __init__(self, hosts: int, delay: float) -> None:
        self.delay = delay
        self.count = min(hosts, 254)
        self.hosts: list[DemoHost] = []
        self.port = 0
        self._by_address: dict[str, DemoHost] = {}
        self._runner: web.ServerRunner | None = None
        self._servers: list[asyncio.AbstractServer] = []

    def base_url(self, host: DemoHost) -> str:
        """``http://127.0.X.Y:PORT``."""
        return f"http://{host.address}:{self.port}"

    async def start(self) -> None:
        """Bind every host's address on one port and serve."""
        socks = self._bind()
        server = web.Server(self._handle, access_log=None)
        self._runner = web.ServerRunner(server, shutdown_timeout=0.5)
        await self._runner.setup()
        loop = asyncio.get_running_loop()
        for sock in socks:
            self._servers.append(await loop.create_server(server, sock=sock))

    def _bind(self) -> list[socket.socket]:
        error: OSError | None = None
        for _ in range(8):
            block = random.randrange(100, 250)
            addresses = [f"127.0.{block}.{i}" for i in range(1, self.count + 1)]
            socks: list[socket.socket] = []
            try:
                port = 0
                for address in addresses:
                    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                    socks.append(sock)
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    sock.bind((address, port))
                    port = sock.getsockname()[1]
                    sock.setblocking(False)
            except OSError as exc:
                error = exc
                for sock in socks:
                    sock.close()
                continue
            self.port = port
            self._make_hosts(addresses)
            return socks
        raise OSError(f"no free port on 127.0.X.1-{self.count}: {error}")

    def _make_hosts(self, addresses: list[str]) -> None:
        for i, address in enumerate(addresses):
            kind = KINDS[i % len(KINDS)][0]
            host = DemoHost(address, kind)
            if kind == "slow":
                host.crawl_delay = round(self.delay * 2.5, 3)
            elif kind == "greedy":
                host.crawl_delay = 600.0
            self.hosts.append(host)
            self._by_address[address] = host

    async def close(self) -> None:
        """Stop listening and close connections."""
        for server in self._servers:
            server.close()
        self._servers.clear()
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()

    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        now = time.monotonic()
        transport = request.transport
        local = transport.get_extra_info("sockname") if transport is not None else None
        host = self._by_address.get(local[0]) if local else None
        path = request.path
        if host is None:
            return web.Response(status=404)
        if path == "/robots.txt":
            host.robots_requests += 1
            body = host.robots_txt()
            if body is not None:
                return web.Response(text=body)
            return web.Response(status=503 if host.kind == "down" else 404)
        if host.forbids(path):
            host.forbidden_requests += 1
        host.page_times.append(now)
        if host.kind == "busy" and path == "/page/2" and not host.answered_429:
            host.answered_429 += 1
            return web.Response(status=429, headers={"Retry-After": "1"}, text="slow down")
        return web.Response(text=_page(path), content_type="text/html")


def _page(path: str) -> str:
    if path == "/":
        targets = [f"/page/{i}" for i in range(1, PAGES + 1)] + ["/private/1", "/private/2"]
    else:
        number = path.rsplit("/", 1)[-1]
        nxt = int(number) + 1 if number.isdigit() else 1
        targets = ["/", f"/page/{nxt}"] if nxt <= PAGES else ["/"]
    links = "".join(f'<li><a href="{t}">{t}</a></li>' for t in targets)
    return f"<!doctype html><title>{path}</title><h1>{path}</h1><ul>{links}</ul>\n"
