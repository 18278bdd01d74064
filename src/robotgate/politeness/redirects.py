"""Pointers (redirect hops, links, sitemaps) judged with a client's own resolver:
the driver of the pure pointer flow.

:func:`robotgate.policy.hops.pointer_flow` decides; this module answers its look-ups
with the resolver the client connects with (aiohttp's connector, getaddrinfo for
httpx and Scrapy, both address families), so that every client judges a pointer
the same way.  The verdict's ``guard`` tells the adapter to check the address its
connection reaches too (see :mod:`robotgate.policy.hops`).
"""

from __future__ import annotations

from ..decision import Decision
from ..policy.fetch_flow import RobotsRequest, RobotsResponse
from ..policy.hops import (
    A_REDIRECT,
    UNGUARDED,
    IsPrivate,
    PointerVerdict,
    Resolve,
    is_private,
    pointer_flow,
)
from ..policy.provenance import Provenance

__all__ = ["hop_decision", "pointer_verdict", "provenance_verdict", "refused_answer",
           "refused_robots_hop", "robots_hop"]


async def pointer_verdict(from_url: str, to_url: str, resolve: Resolve,
                          private: IsPrivate = is_private,
                          what: str = A_REDIRECT) -> PointerVerdict:
    """The verdict on a pointer of ``from_url`` to ``to_url``, both hosts resolved with
    ``resolve``, the client's own resolver.

    A look-up that fails (raises, or finds nothing) reaches no address: a public
    origin counts as public, and a target is refused.
    """
    flow = pointer_flow(from_url, to_url, private, what)
    try:
        host = next(flow)
        while True:
            try:
                found = list(await resolve(host))
            except Exception:  # the client's resolver failed: nothing reached
                found = []
            host = flow.send(found)
    except StopIteration as done:
        verdict: PointerVerdict = done.value
        return verdict


async def provenance_verdict(provenance: Provenance, to_url: str, resolve: Resolve,
                             private: IsPrivate = is_private,
                             what: str = A_REDIRECT) -> PointerVerdict | None:
    """The verdict on a request of ``provenance`` to ``to_url`` (None: not judged: the
    caller's own input, or a pointer of a page known to be private).  A page known to
    be public is not looked up; one not judged yet is, with ``resolve``."""
    page = provenance.from_url
    if page is None:
        return None
    return await pointer_verdict(page, to_url, resolve, private, what)


async def hop_decision(from_url: str, to_url: str, resolve: Resolve,
                       private: IsPrivate = is_private) -> Decision | None:
    """The refusal of a redirect from ``from_url`` to ``to_url`` (None: it may be
    followed), both hosts resolved with ``resolve``, the client's own resolver.

    A look-up that fails (raises, or finds nothing) reaches no address: a public
    origin counts as public, and a target is refused.
    """
    return (await pointer_verdict(from_url, to_url, resolve, private)).refused


async def robots_hop(request: RobotsRequest, refuse_private: bool, resolve: Resolve,
                     private: IsPrivate = is_private) -> PointerVerdict:
    """The verdict on a robots.txt (or tdmrep.json) request: a hop of its redirects is
    a pointer of the site; the first request is the origin's own file (not judged)."""
    if request.previous is None or not refuse_private:
        return UNGUARDED
    return await pointer_verdict(request.previous, request.url, resolve, private)


def refused_answer(request: RobotsRequest, refused: Decision) -> RobotsResponse:
    """The answer for a robots.txt (or tdmrep.json) request that was not sent."""
    return RobotsResponse(0, {}, None, request.url, refused=f"{request.name} {refused.reason}")


async def refused_robots_hop(request: RobotsRequest, refuse_private: bool, resolve: Resolve,
                             private: IsPrivate = is_private) -> RobotsResponse | None:
    """The answer for a robots.txt (or tdmrep.json) hop that must not be sent, or None
    to send it; every robots.txt transport asks this before it sends a hop."""
    verdict = await robots_hop(request, refuse_private, resolve, private)
    return refused_answer(request, verdict.refused) if verdict.refused is not None else None
