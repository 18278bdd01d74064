"""Scrapy's last look at a request's fleet slot, as the request is written on its
connection.

:meth:`~robotgate.integrations.scrapy.RobotGateMiddleware.process_request` leaves the
request's turn (a slot already past is given up there), but the request then goes
through Scrapy's later middlewares, its downloader's queue and Twisted's connection
pool before its bytes go: held up past its slot on that way, it must not go.  Scrapy's
HTTP/1.1 handler is wrapped (:class:`SocketLook`): the slot is looked at as the
handler is handed the request, and again as Twisted writes it on the connection its
pool gave (the protocol's ``request``, called once the connection is there), the
bytes then sent at once rather than at the reactor's next turn.  Past
it: :class:`~robotgate.politeness.fleet_slots.LateSlot`, nothing written, the
connection closed, the miss counted (the slack grows), and the middleware's
``process_exception`` sends the request again, in a turn of its own.

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
from ...politeness.request_turn import RequestTurn

__all__ = ["SocketLook"]


def _look(turn: RequestTurn) -> None:
    """``turn``'s slot, looked at now: past it, the miss is counted and LateSlot raised."""
    slot = turn.slot
    if slot is None:
        return
    try:
        slot.check(asyncio.get_running_loop().time())
    except LateSlot:
        turn.gave_up()
        raise


class SocketLook:
    """Scrapy's HTTP/1.1 ``handler`` and its Twisted ``pool``, wrapped so that a request
    whose turn (``turn_of``: the turn a request is downloaded in, None: none) holds a
    fleet slot is looked at last as it is handed over and as it is written."""

    def __init__(self, handler: Any, pool: Any,
                 turn_of: Callable[[Request], RequestTurn | None]) -> None:
        self._download = handler.download_request
        self._get = pool.getConnection
        self._turn_of = turn_of
        # The turn of the request whose connection the pool is asked for next: set
        # as the handler is handed it, taken as its agent asks, in the same call.
        self._handing: RequestTurn | None = None
        handler.download_request = self.download_request
        pool.getConnection = self.get_connection

    async def download_request(self, request: Request, *args: Any, **kwargs: Any) -> Any:
        turn = self._turn_of(request)
        if turn is not None and turn.slot is not None:
            _look(turn)  # after Scrapy's queue and later middlewares
            self._handing = turn
        else:
            self._handing = None
        return await self._download(request, *args, **kwargs)

    def get_connection(self, key: Any, endpoint: Any) -> Any:
        turn, self._handing = self._handing, None
        connecting = self._get(key, endpoint)
        if turn is not None:
            connecting.addCallback(_written_in, turn)
        return connecting


def _written_in(protocol: Any, turn: RequestTurn) -> Any:
    """``protocol`` (the connection the pool gave), whose next request is looked at
    in ``turn`` as it is written."""
    write = protocol.request

    def request(sent: Any) -> Any:
        del protocol.request  # once: the connection's next requests are others'
        try:
            _look(turn)
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
