"""Loopback proxies: one that forwards plain-http requests (and asks for its
credentials), one answering a status to every request (forwarded or CONNECT), and a port
nothing listens on."""

from __future__ import annotations

import asyncio
import base64
import socket
from dataclasses import dataclass, field
from typing import TypeVar

#: The header a :class:`ForwardingProxy` adds to each request it forwards: a site tells
#: what came through it from what came direct.
VIA = "X-Via-Test-Proxy"


_Proxy = TypeVar("_Proxy", bound="_LoopbackProxy")


class _LoopbackProxy:
    """What both proxies share: a listener on ``host``, closed at the end, and a URL
    carrying the credentials (``user``:``password``)."""

    host: str
    password: str
    port: int
    _server: asyncio.Server | None

    async def start(self: _Proxy) -> _Proxy:
        self._server = await asyncio.start_server(self._serve, self.host, 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    @property
    def url(self) -> str:
        """Its URL, the credentials in it."""
        return f"http://user:{self.password}@{self.host}:{self.port}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        raise NotImplementedError


@dataclass
class FailingProxy(_LoopbackProxy):
    """A proxy on ``host`` answering ``status`` to every request (a 407 asks for Basic
    credentials), recording each request's target; its URL carries ``password``."""

    status: int
    host: str = "127.0.0.1"
    password: str = "secret"
    targets: list[str] = field(default_factory=list)
    port: int = 0
    _server: asyncio.Server | None = None

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


@dataclass
class ForwardingProxy(_LoopbackProxy):
    """A forward proxy on ``host`` for plain-http requests: it asks for Basic credentials
    (``user``:``password``, a 407 without them), forwards each request it takes to the
    host and port of its URL with :data:`VIA` set to ``name``, one request per connection,
    and records each target it forwarded."""

    name: str = "proxy"
    host: str = "127.0.0.1"
    password: str = "secret"
    forwarded: list[str] = field(default_factory=list)
    refused: int = 0
    port: int = 0
    _server: asyncio.Server | None = None

    @property
    def address(self) -> str:
        """Its URL without credentials (give them as ``proxy_auth``)."""
        return f"http://{self.host}:{self.port}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
            line, *lines = head.decode("latin-1").split("\r\n")
            method, target, version = line.split(" ")
            headers = [h for h in lines if h]
            wanted = "Basic " + base64.b64encode(f"user:{self.password}".encode()).decode()
            if f"proxy-authorization: {wanted.lower()}" not in (h.lower() for h in headers):
                self.refused += 1
                writer.write(b"HTTP/1.1 407 Proxy Authentication Required\r\n"
                             b"Proxy-Authenticate: Basic realm=\"test\"\r\n"
                             b"Content-Length: 0\r\nConnection: close\r\n\r\n")
                await writer.drain()
                return
            authority, _, path = target.split("://", 1)[1].partition("/")
            host, _, port = authority.rpartition(":")
            self.forwarded.append(target)
            kept = [h for h in headers if not h.lower().startswith(
                ("connection", "proxy-", "keep-alive"))]
            up_reader, up_writer = await asyncio.open_connection(host, int(port))
            up_writer.write(f"{method} /{path} {version}\r\n".encode("latin-1")
                            + "".join(f"{h}\r\n" for h in kept).encode("latin-1")
                            + f"{VIA}: {self.name}\r\nConnection: close\r\n\r\n".encode())
            await up_writer.drain()
            answer = await asyncio.wait_for(up_reader.read(), 5)
            up_writer.close()
            writer.write(answer)
            await writer.drain()
        except (OSError, asyncio.IncompleteReadError, TimeoutError, ValueError):
            pass
        finally:
            writer.close()
