"""Script calls made close together, sent to Redis in one request.

The robots.txt of a crawl's new servers is looked up (and its fetch lock taken) by
several visits at once, and saved as their fetches end, a few milliseconds apart:
one request each would cost a fleet two round trips an origin.  A call here waits
``window`` seconds from the first one waiting for others to join, then all go in one
pipeline (:meth:`RedisStore.run_scripts`, which carries the pending host states
too).  Each call's reply, or the error it alone met, goes to its caller; a failure of
the request goes to them all.  A call whose caller was cancelled before the request
left is not sent.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from .scripts import Script

__all__ = ["Together"]

Call = tuple[Script, list[str], list[Any]]
Send = Callable[[list[Call]], Awaitable[list[Any]]]


class Together:
    """Calls gathered for ``window`` seconds, sent by ``send`` (replies in order,
    a call's own failure as an exception in its place)."""

    def __init__(self, send: Send, window: float) -> None:
        self.window = window
        self._send = send
        self._waiting: list[tuple[Call, asyncio.Future[Any]]] = []
        self._sender: asyncio.Task[None] | None = None

    async def run(self, script: Script, keys: list[str], args: list[Any]) -> Any:
        """The reply of ``script`` on ``keys`` with ``args``, sent with the others."""
        loop = asyncio.get_running_loop()
        sender = self._sender
        if sender is not None and sender.get_loop() is not loop:
            # The store is used from another event loop now: the calls of the one
            # before have nobody to answer.
            self._waiting, sender = [], None
        reply: asyncio.Future[Any] = loop.create_future()
        self._waiting.append(((script, keys, args), reply))
        if sender is None or sender.done():
            self._sender = loop.create_task(self._send_all())
        return await reply

    async def _send_all(self) -> None:
        while self._waiting:
            await asyncio.sleep(self.window)
            batch = [(call, reply) for call, reply in self._waiting if not reply.done()]
            self._waiting = []
            if not batch:
                continue
            try:
                replies = await self._send([call for call, _ in batch])
            except Exception as exc:
                for _, reply in batch:
                    if not reply.done():
                        reply.set_exception(exc)
                continue
            except BaseException:
                for _, reply in batch:
                    reply.cancel()
                raise
            for (_, reply), answer in zip(batch, replies, strict=True):
                if reply.done():
                    continue
                if isinstance(answer, BaseException):
                    reply.set_exception(answer)
                else:
                    reply.set_result(answer)

    async def close(self) -> None:
        """Send what waits, and wait for it."""
        sender = self._sender
        if sender is not None and not sender.done():
            await asyncio.gather(sender, return_exceptions=True)
