"""Scrapy's last look at what entitles a request to leave, as the request is written
on its connection.

:meth:`~robotgate.integrations.scrapy.RobotGateMiddleware.process_request` leaves the
request's turn (a slot already past is given up there), but the request then goes
through Scrapy's later middlewares, its downloader's queue and Twisted's connection
pool before its bytes go: held up past its slot on that way, it must not go.  So must
not a robots.txt request the gate sends through Scrapy's engine, held up past its
permit.  Scrapy's HTTP/1.1 handler is wrapped (:class:`SocketLook`): the request is
looked at as the handler is handed it, and again as Twisted writes it on the
connection its pool gave (the protocol's ``request``, called once the connection is
there), the bytes then sent at once rather than at the reactor's next turn.  Past
it: :class:`~robotgate.politeness.fleet_slots.LateSlot`, nothing written, the
connection closed; a page's miss is counted (the slack grows), and the middleware's
``process_exception`` sends it again, in a turn of its own; a robots.txt request's
fetch waits for its next permit and sends it again.

The pool is told which request a connection is for as Scrapy's agent asks for it:
Scrapy's handler asks its pool for the connection synchronously, in the call that is
handed the request (``tests/test_private_parts.py`` checks it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from scrapy import Request

from ...politeness.fleet_slots import LateSlot
from ...politeness.permits import Permit
from ...politeness.request_turn import RequestTurn

__all__ = ["Look", "SocketLook", "look_at_permit", "look_at_turn"]

#: A request's last look: returns if it may leave now, else raises LateSlot.
Look = Callable[[], None]


def look_at_turn(turn: RequestTurn) -> None:
    """``turn``'s slot, looked at now: past it, the miss is counted and LateSlot raised."""
    slot = turn.slot
    if slot is None:
        return
    try:
        slot.check(asyncio.get_running_loop().time())
    except LateSlot:
        turn.gave_up()
        raise


def look_at_permit(permit: Permit) -> None:
    """A robots.txt request's ``permit``, looked at now (LateSlot: it may not leave)."""
    permit.check(asyncio.get_running_loop().time())


class SocketLook:
    """Scrapy's HTTP/1.1 ``handler`` and its Twisted ``pool``, wrapped so that a request
    with something to look at (``look_of``: its :data:`Look`, None: nothing) is looked
    at last as it is handed over and as it is written."""

    def __init__(self, handler: Any, pool: Any,
                 look_of: Callable[[Request], Look | None]) -> None:
        self._download = handler.download_request
        self._get = pool.getConnection
        self._look_of = look_of
        # The look of the request whose connection the pool is asked for next: set
        # as the handler is handed it, taken as its agent asks, in the same call.
        self._handing: Look | None = None
        handler.download_request = self.download_request
        pool.getConnection = self.get_connection

    async def download_request(self, request: Request, *args: Any, **kwargs: Any) -> Any:
        look = self._look_of(request)
        if look is not None:
            look()  # after Scrapy's queue and later middlewares
        self._handing = look
        return await self._download(request, *args, **kwargs)

    def get_connection(self, key: Any, endpoint: Any) -> Any:
        look, self._handing = self._handing, None
        connecting = self._get(key, endpoint)
        if look is not None:
            connecting.addCallback(_written_in, look)
        return connecting


def _written_in(protocol: Any, look: Look) -> Any:
    """``protocol`` (the connection the pool gave), whose next request is looked at
    with ``look`` as it is written."""
    write = protocol.request

    def request(sent: Any) -> Any:
        del protocol.request  # once: the connection's next requests are others'
        try:
            look()
        except BaseException:
            protocol.transport.loseConnection()  # handed out, never given back unused
            raise
        sending = write(sent)
        # Twisted sends what is written at its reactor's next turn, which a busy loop
        # makes late: sent now, within the look (a TLS connection has no descriptor of
        # its own here, and keeps that turn).
        flush = getattr(protocol.transport, "doWrite", None)
        if callable(flush):
            flush()
        return sending

    protocol.request = request
    return protocol
