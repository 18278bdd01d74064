"""The connections of the gate's own session: how many sockets it may hold open.

Every origin a crawl meets leaves a keep-alive connection behind; with no bound, a
crawl of thousands of origins runs the process out of file descriptors (``ulimit -n``
is 1024 on most Linux systems, 256 on macOS), and a socket that cannot be opened is
no answer of the site's.  So the gate's session holds at most ``max_connections``
sockets in all, in use and idle: before a new one is opened, the least recently used
idle ones are closed to make room.  An origin asked only for its robots.txt keeps its
connection only until another needs the room.

The number in use is bounded before a request's turn begins, not here: the gate caps
its requests in flight at the same number (the scheduler's global cap), so a request
never waits for a connection after its server's turn was taken (a wait there would
move its send closer to the next request's).  The connector's own ``limit`` is the
same number, a backstop for anything sent around the turns.

A request that does wait for a free socket (one sent around the turns holds it, or a
closed one's socket is still closing) tells the session's trace
(:func:`socket_wait_trace`): a robots.txt request stops its timeout's clock while it
waits, since the wait is this process's shortage, not the site's slowness.
"""

from __future__ import annotations

import asyncio
import functools
import socket
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, NamedTuple

import aiohttp
from aiohttp.abc import AbstractResolver
from aiohttp.client_proto import ResponseHandler

from ..policy.fetch import ROUTE_ERRNOS, NoRoute
from ..politeness.robots_fetcher import open_file_limit
from ..private_parts import CONNECTOR_POOL, missing
from ..timeouts import PausableDeadline

__all__ = ["BoundedConnector", "NoRouteError", "bounded_connector", "connection_budget",
           "socket_wait_trace", "tells_socket_waits"]

#: Descriptors left to everything else a process opens (its store, log files, the
#: loop's own, a browser's pipes): a quarter of the limit, within these bounds.
_RESERVE_MIN = 32
_RESERVE_MAX = 1024
#: Fewer connections than this would serialise a crawl for no reason.
_MIN_CONNECTIONS = 8
#: The budget where the process has no open-file limit (or none can be read).
_UNLIMITED = 16_384


def connection_budget(max_connections: int | None = None,
                      limit: int | None = None) -> int:
    """How many sockets the gate's session may hold open: ``max_connections`` if given,
    else what the open-file ``limit`` (default: the process's own) leaves after a
    reserve of a quarter of it (at least 32, at most 1024).

    >>> connection_budget(limit=1024), connection_budget(limit=256), connection_budget(50)
    (768, 192, 50)
    """
    if max_connections is not None:
        return max_connections
    if limit is None:
        limit = open_file_limit()
    if limit is None:
        return _UNLIMITED
    reserve = min(_RESERVE_MAX, max(_RESERVE_MIN, limit // 4))
    return min(_UNLIMITED, max(_MIN_CONNECTIONS, limit - reserve))


class BoundedConnector(aiohttp.TCPConnector):
    """A TCP connector holding at most ``max_connections`` sockets, in use and idle.

    aiohttp keeps every idle keep-alive connection until its timeout (15 s); this one
    closes the least recently used idle ones first whenever a new connection would
    pass the bound.  It reaches into aiohttp's pool (``_conns``, ``_acquired``,
    ``_get``, ``_release``, ``_create_connection``: aiohttp 3.12 to 3.14); the tests in
    ``tests/e2e/test_file_limits.py`` pin the behaviour down.
    """

    def __init__(self, max_connections: int, **kwargs: Any) -> None:
        if max_connections < 1:
            raise ValueError(f"max_connections must be at least 1, not {max_connections!r}")
        super().__init__(limit=max_connections, limit_per_host=0, **kwargs)
        _check_pool(self)
        self.max_connections = max_connections
        #: The idle connections, least recently released first (a value: its key).
        self._idle: OrderedDict[Any, Any] = OrderedDict()
        #: Idle connections closed to make room (how often the bound was reached).
        self.closed_for_room = 0
        #: Every connection whose socket is open, closing ones included, and how many
        #: are being opened (their sockets made before their protocol).
        self._sockets: set[_CountedHandler] = set()
        self._opening = 0
        self._socket_closed = asyncio.Event()
        self._factory = functools.partial(self._new_protocol)

    def _new_protocol(self) -> ResponseHandler:
        return _CountedHandler(self, loop=self._loop)

    def _forget(self, protocol: _CountedHandler) -> None:
        """``protocol``'s socket is closing now (the loop closes it as this returns)."""
        self._sockets.discard(protocol)
        self._socket_closed.set()

    @property
    def open_sockets(self) -> int:
        """Sockets this connector holds open: connections in use, idle or closing, and
        those being opened."""
        return len(self._sockets) + self._opening

    @property
    def open_connections(self) -> int:
        """Sockets held, in use (or being opened) and idle: an upper bound, since an idle
        connection its server closed is forgotten only when it is next looked at."""
        return len(self._acquired) + len(self._idle)

    async def _get(self, key: Any, *args: Any) -> Any:
        connection = await super()._get(key, *args)
        if connection is not None:
            self._idle.pop(connection.protocol, None)  # in use again
        return connection

    def _release(self, key: Any, protocol: Any, *args: Any, **kwargs: Any) -> None:
        super()._release(key, protocol, *args, **kwargs)
        pool = self._conns.get(key)
        if pool and pool[-1][0] is protocol:  # kept for reuse, not closed
            self._idle[protocol] = key
            self._idle.move_to_end(protocol)

    async def _create_connection(self, req: Any, traces: Any, timeout: Any) -> Any:
        # The new connection's placeholder is already among the acquired.
        self._make_room(self.max_connections)
        if self.open_sockets >= self.max_connections:
            await self._wait_for_a_socket(traces)
        self._opening += 1
        try:
            return await super()._create_connection(req, traces, timeout)
        finally:
            self._opening -= 1

    async def _wait_for_a_socket(self, traces: Any) -> None:
        """Wait until a closed connection's socket is gone (the loop closes it on its
        next pass; aiohttp's connect timeout bounds the wait): told to the traces as
        aiohttp tells its own wait for a free connection."""
        for trace in traces:
            await trace.send_connection_queued_start()
        while self.open_sockets >= self.max_connections:
            self._socket_closed.clear()
            await self._socket_closed.wait()
            self._make_room(self.max_connections)
        for trace in traces:
            await trace.send_connection_queued_end()

    async def _wrap_create_connection(self, *args: Any, addr_infos: Any, req: Any,
                                      **kwargs: Any) -> Any:
        # aiohttp tries the addresses in turn (happy eyeballs); this runs once they all
        # failed, or the rest are tried next.
        try:
            return await super()._wrap_create_connection(
                *args, addr_infos=addr_infos, req=req, **kwargs)
        except aiohttp.ClientConnectorError as exc:
            unroutable = _without_route(exc.os_error, [info[4] for info in addr_infos])
            if unroutable is None:
                raise
            raise NoRouteError(req.connection_key, unroutable) from exc

    def _make_room(self, most: int) -> None:
        """Close the least recently used idle connections until at most ``most``
        sockets are held (a connection aiohttp closed itself is only forgotten)."""
        idle = self._idle
        while idle and len(self._acquired) + len(idle) > most:
            protocol, key = idle.popitem(last=False)
            pool = self._conns.get(key)
            if pool is None:
                continue
            for item in pool:
                if item[0] is protocol:
                    pool.remove(item)
                    break
            else:
                continue  # reused or closed meanwhile: not idle here any more
            if not pool:
                del self._conns[key]
            protocol.close()
            self.closed_for_room += 1

    def _cleanup(self) -> None:
        super()._cleanup()  # idle connections past their keep-alive, closed
        conns = self._conns
        for protocol, key in list(self._idle.items()):
            pool = conns.get(key)
            if not pool or all(item[0] is not protocol for item in pool):
                del self._idle[protocol]


class NoRouteError(aiohttp.ClientConnectorError, NoRoute):
    """None of the site's addresses can be reached from this machine, which has no
    address or route of their family: the site's unreachability, not a shortage."""


def _without_route(error: OSError, addresses: Sequence[Any]) -> OSError | None:
    """The error to report when ``error`` (a connect error) means this machine has no
    address or route for any of ``addresses``; None when it may mean something else
    (an EADDRNOTAVAIL on a route the machine has: its ports ran out).

    A UDP socket's connect picks the route and source address, sending nothing."""
    if error.errno not in ROUTE_ERRNOS:
        return None
    reasons: list[str] = []
    for address in addresses:
        family = socket.AF_INET6 if len(address) == 4 else socket.AF_INET
        try:
            with socket.socket(family, socket.SOCK_DGRAM) as probe:
                probe.connect(address)
        except OSError as exc:
            if exc.errno not in ROUTE_ERRNOS:
                return None  # no answer (out of descriptors?): not known to be unroutable
            kind = "IPv6" if family == socket.AF_INET6 else "IPv4"
            reasons.append(f"{kind} {address[0]} ({exc.strerror})")
            continue
        return None  # this one has a route
    if not reasons:
        return None
    return OSError(error.errno, "this machine has no address or route for "
                   + ", ".join(reasons))


class _CountedHandler(ResponseHandler):
    """aiohttp's protocol, telling its connector when its socket opens and closes (made
    once connected: a TLS handshake that fails is no connection, counted as opening)."""

    def __init__(self, connector: BoundedConnector, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._connector = connector

    def connection_made(self, transport: Any) -> None:
        self._connector._sockets.add(self)
        super().connection_made(transport)

    def connection_lost(self, exc: BaseException | None) -> None:
        self._connector._forget(self)
        super().connection_lost(exc)


#: aiohttp's pool methods this connector overrides: renamed, the override would not run.
_POOL_METHODS = ("_get", "_release", "_create_connection", "_wrap_create_connection",
                 "_cleanup")


def _check_pool(connector: aiohttp.TCPConnector) -> None:
    """PrivatePartMissing unless aiohttp's connector still has the pool this one reaches
    into (the methods it overrides, the mappings it reads): else the bound would not
    hold and nothing would tell."""
    base = aiohttp.TCPConnector
    if not (all(callable(getattr(base, name, None)) for name in _POOL_METHODS)
            and isinstance(getattr(connector, "_conns", None), dict)
            and hasattr(connector, "_acquired")
            and callable(getattr(connector, "_factory", None))):
        raise missing(CONNECTOR_POOL)


class RequestTrace(NamedTuple):
    """What the gate's session's trace hooks are told of one request of the gate's
    (its ``trace_request_ctx``)."""

    #: A robots.txt request's timeout, whose clock stops while it waits for a socket.
    deadline: PausableDeadline | None
    #: What entitles the request to leave (a fleet slot, a lease's fence), looked at
    #: again as its headers go out (``check_slot``).
    permit: object


async def _socket_wait_starts(session: aiohttp.ClientSession, ctx: Any,
                              params: aiohttp.TraceConnectionQueuedStartParams) -> None:
    trace = ctx.trace_request_ctx
    if isinstance(trace, RequestTrace) and trace.deadline is not None:
        trace.deadline.pause()


async def _socket_wait_ends(session: aiohttp.ClientSession, ctx: Any,
                            params: aiohttp.TraceConnectionQueuedEndParams) -> None:
    trace = ctx.trace_request_ctx
    if isinstance(trace, RequestTrace) and trace.deadline is not None:
        trace.deadline.resume()


def socket_wait_trace() -> aiohttp.TraceConfig:
    """The gate's session's trace: a request whose ``trace_request_ctx`` is a
    :class:`RequestTrace` with a deadline (a robots.txt request's timeout) stops its
    clock while it waits for a free socket."""
    trace = aiohttp.TraceConfig()
    trace.on_connection_queued_start.append(_socket_wait_starts)
    trace.on_connection_queued_end.append(_socket_wait_ends)
    return trace


def tells_socket_waits(session: aiohttp.ClientSession) -> bool:
    """Whether ``session`` carries :func:`socket_wait_trace` (the gate's own session
    does; a session of the user's was made without it, and cannot be given it after)."""
    return any(_socket_wait_starts in trace.on_connection_queued_start
               for trace in session.trace_configs)


def bounded_connector(max_connections: int,
                      resolver: AbstractResolver) -> BoundedConnector:
    """The connector of the gate's own session."""
    return BoundedConnector(max_connections, resolver=resolver)
