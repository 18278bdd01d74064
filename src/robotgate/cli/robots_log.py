"""The robots.txt requests of a ``robotgate fetch`` run, for its JSON lines.

A robots.txt request is a request to the server like a page's, so the story of
a host needs it.  :class:`RobotsLog` wraps the gate's robots.txt transport and
notes each request (with ``--tdmrep``, each tdmrep.json one too); the next JSON
line of the same server carries them (``"robots_txt"``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ..policy.fetch_flow import RobotsRequest, RobotsResponse
from ..politeness.robots_fetcher import RobotsTransport
from ..redaction import failure_text
from ..urls import redact, scrub

__all__ = ["RobotsLog"]

#: Requests kept per server until one of its lines carries them (a longer run of
#: robots.txt requests without a line keeps its latest).
_KEPT = 64
#: Servers with requests waiting for a line.  A robots.txt redirect to a server no
#: line is about (``example.com`` to ``www.example.com``) is never taken: past this
#: many servers the longest waiting go, so a long crawl holds no more.
_SERVERS = 10_000
#: Characters of a request's error kept (what went wrong, not a server's essay).
_ERROR_CHARS = 300


class RobotsLog:
    """Requests noted per politeness key, until :meth:`take` hands them to a line."""

    def __init__(self, key_of: Callable[[str], str]) -> None:
        self._key_of = key_of
        self._pending: dict[str, list[dict[str, Any]]] = {}

    def wrap(self, transport: RobotsTransport) -> RobotsTransport:
        """``transport``, with each request noted here."""
        return _NotingTransport(transport, self)

    def note(self, url: str, started: float, answered: float | None,
             status: int | None, error: str | None) -> None:
        try:
            key = self._key_of(url)
        except ValueError:
            return  # the flow refuses such a hop itself
        request: dict[str, Any] = {"url": redact(url), "started": round(started, 3)}
        if answered is not None:
            request["answered"] = round(answered, 3)
        if status is not None:
            request["status"] = status
        if error is not None:
            request["error"] = scrub(error, url)
        pending = self._pending.get(key)
        if pending is None:
            if len(self._pending) >= _SERVERS:
                del self._pending[next(iter(self._pending))]
            pending = self._pending[key] = []
        pending.append(request)
        if len(pending) > _KEPT:
            del pending[0]

    def take(self, key: str | None) -> list[dict[str, Any]]:
        """The requests to ``key``'s server noted since its last line."""
        if key is None:
            return []
        return self._pending.pop(key, [])


class _NotingTransport:
    def __init__(self, inner: RobotsTransport, log: RobotsLog) -> None:
        self.inner = inner
        self.log = log
        self.enforces_deadline = getattr(inner, "enforces_deadline", False)

    async def send(self, request: RobotsRequest) -> RobotsResponse:
        started = time.time()
        try:
            response = await self.inner.send(request)
        except Exception as exc:
            said = failure_text(exc)  # redacted before it is cut
            self.log.note(request.url, started, None, None, said[:_ERROR_CHARS])
            raise
        status = None if response.refused else response.status
        self.log.note(request.url, started, time.time(), status, response.refused)
        return response
