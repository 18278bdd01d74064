"""Drives the pure robots.txt flow over whatever HTTP client an adapter brings.

An adapter implements :class:`RobotsTransport` (one method: send a GET without
following redirects, read at most ``max_bytes`` of a 2xx body); everything
else (redirects, validators, 304, what failures mean) is the flow's.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Callable
from typing import Protocol

from ..errors import GateClosed, ProxyFailed
from ..policy.fetch import FetchPolicy, entry_for_error, local_failure
from ..policy.fetch_flow import RobotsRequest, RobotsResponse, resource_name, robots_flow
from ..policy.hops import Address
from ..records import RobotsEntry
from ..redaction import failure_text, logger
from ..store.leases import LapsedLease
from ..timeouts import bounded
from .fleet_slots import LateSlot

__all__ = ["PacingHooks", "RobotsFetcher", "RobotsTransport"]

log = logger("robotgate.robots")


class RobotsTransport(Protocol):
    """What a client adapter provides to fetch robots.txt.

    A transport may also set ``enforces_deadline = True`` when it ends each
    request at its :attr:`RobotsRequest.deadline` (raising ``TimeoutError``);
    the fetcher then adds no timer of its own.
    """

    async def send(self, request: RobotsRequest) -> RobotsResponse:
        """Send one GET (no redirects followed) and return its answer."""
        ...


class PacingHooks(Protocol):
    """What the servers' turns hear of a robots.txt fetch: each server is paced
    by its answers, and a redirect hop waits for its own server's turn."""

    async def before_hop(self, url: str) -> float:
        """A redirect hop to ``url`` is about to be sent: wait for its server's turn;
        returns the seconds waited (not counted against the fetch's timeout)."""
        ...

    def heard(self, request: RobotsRequest, response: RobotsResponse) -> None:
        """The answer to ``request`` (the first one or a hop) arrived."""
        ...

    def permit(self, request: RobotsRequest) -> object:
        """What entitles ``request`` to leave (its :attr:`RobotsRequest.permit`): in a
        fleet, the first request's slot or lease fence; None: nothing to check."""
        ...

    async def missed(self) -> float:
        """The transport found the permit past as the bytes were to go out (nothing
        was sent): the next slot is reserved and awaited; returns the seconds waited."""
        ...


class RobotsFetcher:
    """Fetches one origin's robots.txt through ``transport``: always returns an entry.

    Timeouts, network errors and bugs in the transport become an
    "unreachable" entry (RFC 9309 2.3.1.4); only cancellation, this machine's
    own shortages (:class:`~robotgate.policy.fetch.LocalFailure`: out of file
    descriptors, memory or ports) and a proxy's failure
    (:class:`~robotgate.errors.ProxyFailed`, which the transport raises) propagate:
    those say nothing of the site.
    """

    def __init__(self, transport: RobotsTransport, policy: FetchPolicy,
                 path: str = "/robots.txt", *,
                 on_fetch: Callable[[str, bool, tuple[Address, ...]], None] | None = None
                 ) -> None:
        self.transport = transport
        self.policy = policy
        #: The file fetched: robots.txt, or another well-known file by its rules.
        self.path = path
        #: The file's name in accounts of its fetch: "robots.txt", "tdmrep.json".
        self.name = resource_name(path)
        self.requests = 0
        #: Told of each fetch as it starts: ``(origin, guard, checked)`` (the tdmrep.json
        #: cache guards the first request of an origin a pointer led to alike).
        self.on_fetch = on_fetch

    async def fetch(self, origin: str, previous: RobotsEntry | None,
                    hooks: PacingHooks | None = None, guard: bool = False,
                    checked: tuple[Address, ...] = (), via: object = None) -> RobotsEntry:
        """The origin's entry; ``guard``: a public page's pointer led to the origin, so
        the first request's connection must reach a public address (``checked``: the
        addresses the pointer check found public); ``via``: the route the asking page
        takes (see :class:`~robotgate.policy.fetch_flow.RobotsRequest`)."""
        policy = self.policy
        self.requests += 1
        if self.on_fetch is not None:
            self.on_fetch(origin, guard, checked)
        path = self.path
        flow = robots_flow(origin, previous, policy, time.time(), clock=time.time, path=path,
                           guard=guard, checked=checked, via=via)
        transport = self.transport
        timed = not getattr(transport, "enforces_deadline", False)
        waited = 0.0
        began = time.monotonic()
        try:
            # The flow driven here, not in a coroutine of its own (once per origin).
            # Each request carries the deadline (a transport without its own timer gets
            # one per request): a redirect hop's wait for its server's turn is not
            # the server's slowness, and moves the deadline on.
            request: RobotsRequest = next(flow)
            while True:
                if hooks is not None and request.previous is not None:
                    waited += await hooks.before_hop(request.url)
                while True:
                    sending = _sending(request, waited, hooks)
                    try:
                        if timed and sending.deadline is not None:
                            response = await bounded(transport.send(sending),
                                                     max(sending.deadline - time.time(), 0.0))
                        else:
                            response = await transport.send(sending)
                        break
                    except LateSlot:  # nothing was sent: it leaves in the next slot
                        assert hooks is not None
                        waited += await hooks.missed()
                if hooks is not None:
                    hooks.heard(request, response)
                try:
                    request = flow.send(response)
                except StopIteration as done:
                    entry: RobotsEntry = done.value
                    break
        except asyncio.TimeoutError:
            why = f"{self.name} did not answer within {policy.timeout:g}s"
        except (asyncio.CancelledError, GateClosed, ProxyFailed, LapsedLease):
            # The gate's own end, its proxy's failure, a crawl lease lost: no answer of
            # the server's.
            raise
        except Exception as exc:  # every waiter must still get an answer
            shortage = local_failure(exc, f"{origin}{path}", open_file_limit())
            if shortage is not None:
                raise shortage from exc  # this machine's, not the site's: no entry made
            why = f"{self.name} could not be fetched ({failure_text(exc)})"
        else:
            _log_fetched(origin + path, entry, time.monotonic() - began)
            return entry
        failed = entry_for_error(origin, why, time.time(), policy, previous)
        _log_fetched(origin + path, failed, time.monotonic() - began)
        return failed


def _sending(request: RobotsRequest, waited: float, hooks: PacingHooks | None
             ) -> RobotsRequest:
    """``request`` as it is sent: its deadline moved on by the waits for its servers'
    turns (not the server's slowness), with its permit to leave."""
    permit = hooks.permit(request) if hooks is not None else None
    if not waited and permit is None:
        return request
    deadline = request.deadline
    if waited and deadline is not None:
        deadline += waited
    return dataclasses.replace(request, deadline=deadline, permit=permit)


def open_file_limit() -> int | None:
    """The process's soft open-file limit (``ulimit -n``), named in an EMFILE's
    account; None: unlimited or unknown."""
    try:
        import resource
    except ImportError:  # Windows
        return None
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return None if soft == resource.RLIM_INFINITY or soft <= 0 else int(soft)


def _log_fetched(url: str, entry: RobotsEntry, seconds: float) -> None:
    """One INFO line per fetch: the outcome, what the server said, its size and time.
    ``url`` is an origin's (no user information) and the file's fixed path."""
    if log.isEnabledFor(logging.INFO):
        size = f", {len(entry.body)} bytes" if entry.body is not None else ""
        said = f" ({entry.detail})" if entry.detail else ""
        log.info("%s: %s%s%s in %.2fs", url, entry.outcome, said, size, seconds)
