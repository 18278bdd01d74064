"""Where an aiohttp request may connect: the peer guard (the address a connection
reached, judged before anything is sent on it) and the look-ups by the resolver a
session connects with.  (The aiohttp adapter's modules:
:mod:`robotgate.gate.aiohttp_client`.)"""

from __future__ import annotations

import socket
from collections.abc import Awaitable, Callable

import aiohttp

from ..errors import Disallowed
from ..policy.hops import A_REDIRECT, IsPrivate, Resolve, judge_peer, parse_hop
from ..private_parts import CONNECTOR_RESOLVER, missing

__all__ = ["Handler", "Middleware"]


Handler = Callable[[aiohttp.ClientRequest], Awaitable[aiohttp.ClientResponse]]
Middleware = Callable[[aiohttp.ClientRequest, Handler], Awaitable[aiohttp.ClientResponse]]


def _peer_guard(private: IsPrivate, what: str = A_REDIRECT) -> Middleware:
    """A middleware that checks the address the request's connection reached before
    anything is sent on it (:func:`_check_peer`)."""

    async def middleware(req: aiohttp.ClientRequest, handler: Handler) -> aiohttp.ClientResponse:
        _check_peer(req, what, private)
        return await handler(req)

    return middleware


def _check_peer(req: aiohttp.ClientRequest, what: str, private: IsPrivate) -> None:
    """Make ``req`` refuse to be sent on a connection to a private address: the
    address judged is the socket's peer, whichever look-up (or pooled connection)
    gave it, so that a name answering public to the pointer check and private to
    the connector (DNS rebinding) is refused too.  The connection is closed, not
    pooled.  Through a proxy the proxy connects: the check's look-up judged.
    """
    if req.proxy is not None:
        return
    send = req.send
    host = req.url.host or ""

    async def send_checked(conn: aiohttp.connector.Connection) -> aiohttp.ClientResponse:
        transport = conn.transport
        peer = transport.get_extra_info("peername") if transport is not None else None
        address = str(peer[0]) if isinstance(peer, tuple) and peer else repr(peer)
        refused = judge_peer(host, address, private, what)
        if refused is not None:
            hop = parse_hop(str(req.url))
            raise Disallowed(hop.url if hop is not None else str(req.url), refused)
        return await send(conn)

    req.send = send_checked  # type: ignore[method-assign]


def _resolver_of(session: aiohttp.ClientSession) -> aiohttp.abc.AbstractResolver | None:
    """The resolver ``session``'s connections are made with (None: not a TCP connector).
    A TCP connector without it raises
    :class:`~robotgate.private_parts.PrivatePartMissing` (aiohttp has no public way to
    ask): every hop would be refused, and ``pace_by="ip"`` pace by name."""
    connector = session.connector
    if not isinstance(connector, aiohttp.TCPConnector):
        return None
    try:
        return connector._resolver
    except AttributeError:
        raise missing(CONNECTOR_RESOLVER) from None


def _resolve_with(session: aiohttp.ClientSession | None) -> Resolve:
    """Look-ups by ``session``'s connector, the resolver it connects with (none: a hop's
    target reaches nothing, and is refused)."""
    resolver = _resolver_of(session) if session is not None else None

    async def resolve(host: str) -> list[str]:
        if resolver is None:
            return []
        infos = await resolver.resolve(host, 0, socket.AF_UNSPEC)
        return [info["host"] for info in infos]

    return resolve
