"""A TCP proxy on loopback that counts the round trips its clients make.

A round trip is a burst of bytes a client sends once the server has answered (or
on a new connection): a pipeline counts once, as it costs one wait; a connection's
own set-up (``HELLO``, ``CLIENT SETINFO``, ``SELECT``) counts as Redis sees it.
So what it counts is what a fleet costs the wire, whatever the client library
says of itself.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field

_CHUNK = 65536


@dataclass
class _Exchange:
    """One connection's state: whether the server has answered since the client
    last sent (its next bytes then open a round trip)."""

    answered: bool = True


@dataclass
class CountingProxy:
    """Forwards ``127.0.0.1:port`` to ``target_host:target_port`` and counts
    :attr:`round_trips` and :attr:`connections`."""

    target_host: str
    target_port: int
    round_trips: int = 0
    connections: int = 0
    port: int = 0
    _server: asyncio.Server | None = None
    _pipes: set[asyncio.Task[None]] = field(default_factory=set)

    async def start(self) -> CountingProxy:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}"

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._pipes):
            task.cancel()
        for task in list(self._pipes):
            with contextlib.suppress(asyncio.CancelledError, OSError):
                await task
        if self._server is not None:
            await self._server.wait_closed()

    async def _serve(self, client_in: asyncio.StreamReader,
                     client_out: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            server_in, server_out = await asyncio.open_connection(
                self.target_host, self.target_port)
        except OSError:
            client_out.close()
            return
        exchange = _Exchange()
        up = asyncio.ensure_future(self._pipe(client_in, server_out, exchange, upstream=True))
        down = asyncio.ensure_future(self._pipe(server_in, client_out, exchange, upstream=False))
        for task in (up, down):
            self._pipes.add(task)
            task.add_done_callback(self._pipes.discard)
        with contextlib.suppress(asyncio.CancelledError, OSError):
            await asyncio.wait((up, down), return_when=asyncio.FIRST_COMPLETED)
        for task, writer in ((up, server_out), (down, client_out)):
            task.cancel()
            writer.close()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                    exchange: _Exchange, *, upstream: bool) -> None:
        while data := await reader.read(_CHUNK):
            if upstream:
                if exchange.answered:
                    self.round_trips += 1
                    exchange.answered = False
            else:
                exchange.answered = True
            writer.write(data)
            await writer.drain()
