"""A TCP proxy on loopback that counts the round trips its clients make.

A round trip is a burst of bytes a client sends once the server has answered (or
on a new connection): a pipeline counts once, as it costs one wait; a connection's
own set-up (``HELLO``, ``CLIENT SETINFO``, ``SELECT``) counts as Redis sees it.
So what it counts is what a fleet costs the wire, whatever the client library
says of itself.

It also reads the commands each round trip carries (RESP arrays) and counts the round
trips by what they carried (:attr:`CountingProxy.kinds`): ``EVALSHA``/``EVAL`` by the
name :attr:`CountingProxy.scripts` gives the script's SHA-1, a pipeline as its
commands joined by ``+`` (``x n``: one repeated n times), each prefixed with
:attr:`CountingProxy.phase` as it was when the round trip opened.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections import Counter
from dataclasses import dataclass, field

_CHUNK = 65536


@dataclass
class _Exchange:
    """One connection's state: whether the server has answered since the client
    last sent (its next bytes then open a round trip); the round trip open, its
    phase and commands; the client's bytes not yet read as a whole command."""

    answered: bool = True
    phase: str = ""
    commands: list[str] = field(default_factory=list)
    unread: bytes = b""


def _command(buffer: bytes, start: int) -> tuple[list[bytes], int] | None:
    """The RESP array of bulk strings at ``start`` and where the next begins; None if
    it is not all there yet (an inline command: its line as one word)."""
    end = buffer.find(b"\r\n", start)
    if end < 0:
        return None
    if buffer[start:start + 1] != b"*":
        return [buffer[start:end].split(b" ", 1)[0]], end + 2
    parts: list[bytes] = []
    at = end + 2
    for _ in range(int(buffer[start + 1:end])):
        end = buffer.find(b"\r\n", at)
        if end < 0:
            return None
        size = int(buffer[at + 1:end])
        if len(buffer) < end + 2 + size + 2:
            return None
        parts.append(buffer[end + 2:end + 2 + size])
        at = end + 2 + size + 2
    return parts, at


@dataclass
class CountingProxy:
    """Forwards ``127.0.0.1:port`` to ``target_host:target_port`` and counts
    :attr:`round_trips` and :attr:`connections`."""

    target_host: str
    target_port: int
    round_trips: int = 0
    connections: int = 0
    port: int = 0
    #: Script SHA-1 -> the name its calls are counted under (:meth:`name_scripts`).
    scripts: dict[str, str] = field(default_factory=dict)
    #: Prefixed to the kind of each round trip opened from now on.
    phase: str = ""
    #: Round trips by phase and what they carried (those still open not yet counted).
    kinds: Counter[str] = field(default_factory=Counter)
    _server: asyncio.Server | None = None
    _pipes: set[asyncio.Task[None]] = field(default_factory=set)

    async def start(self) -> CountingProxy:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def name_scripts(self, named: dict[str, str]) -> None:
        """Count calls of each script source of ``named`` (name -> source) by its name."""
        for name, source in named.items():
            self.scripts[hashlib.sha1(source.encode()).hexdigest()] = name

    def _kind(self, parts: list[bytes]) -> str:
        verb = parts[0].decode(errors="replace").upper() if parts else "?"
        if verb in ("EVALSHA", "EVAL") and len(parts) > 1:
            sha = (parts[1].decode(errors="replace") if verb == "EVALSHA"
                   else hashlib.sha1(parts[1]).hexdigest())
            return f"{verb} {self.scripts.get(sha, sha[:8])}"
        if verb in ("CLIENT", "CONFIG", "SCRIPT", "CLUSTER") and len(parts) > 1:
            return f"{verb} {parts[1].decode(errors='replace').upper()}"
        return verb

    def _close_trip(self, exchange: _Exchange) -> None:
        if exchange.commands:
            # A pipeline of one script called n times reads "EVALSHA NAME x n".
            runs: list[tuple[str, int]] = []
            for command in exchange.commands:
                if runs and runs[-1][0] == command:
                    runs[-1] = (command, runs[-1][1] + 1)
                else:
                    runs.append((command, 1))
            carried = "+".join(c if n == 1 else f"{c} x{n}" for c, n in runs)
            self.kinds[f"{exchange.phase}{carried}"] += 1
            exchange.commands = []

    def _read_commands(self, exchange: _Exchange, data: bytes) -> None:
        buffer = exchange.unread + data
        at = 0
        while at < len(buffer):
            try:
                found = _command(buffer, at)
            except ValueError:  # not RESP: counted as it is, read no further
                exchange.commands.append("?")
                buffer, at = b"", 0
                break
            if found is None:
                break
            parts, at = found
            exchange.commands.append(self._kind(parts))
        exchange.unread = buffer[at:]

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
        self._close_trip(exchange)

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                    exchange: _Exchange, *, upstream: bool) -> None:
        while data := await reader.read(_CHUNK):
            if upstream:
                if exchange.answered:
                    self._close_trip(exchange)
                    self.round_trips += 1
                    exchange.answered = False
                    exchange.phase = self.phase
                self._read_commands(exchange, data)
            else:
                exchange.answered = True
            writer.write(data)
            await writer.drain()
