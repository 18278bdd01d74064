"""Loopback proxies that fail: one answering a status to every request (forwarded or
CONNECT), and a port nothing listens on."""

from __future__ import annotations

import asyncio
import socket
from dataclasses import dataclass, field


@dataclass
class FailingProxy:
    """A proxy on ``host`` answering ``status`` to every request (a 407 asks for Basic
    credentials), recording each request's target; its URL carries ``password``."""

    status: int
    host: str = "127.0.0.1"
    password: str = "secret"
    targets: list[str] = field(default_factory=list)
    port: int = 0
    _server: asyncio.Server | None = None

    async def start(self) -> FailingProxy:
        self._server = await asyncio.start_server(self._serve, self.host, 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    @property
    def url(self) -> str:
        return f"http://user:{self.password}@{self.host}:{self.port}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            for _ in range(20):  # requests on one connection, bounded
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
                self.targets.append(head.split(b" ", 2)[1].decode("latin-1"))
                extra = (b"Proxy-Authenticate: Basic realm=\"test\"\r\n"
                         if self.status == 407 else b"")
                writer.write(b"HTTP/1.1 %d Proxy Says No\r\n%sContent-Length: 0\r\n\r\n"
                             % (self.status, extra))
                await writer.drain()
        except (OSError, asyncio.IncompleteReadError, TimeoutError):
            pass
        finally:
            writer.close()


def closed_port(host: str = "127.0.0.1") -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])
