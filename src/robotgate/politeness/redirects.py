"""Redirect hops judged with a client's own resolver: the driver of the pure hop flow.

:func:`robotgate.policy.hops.hop_flow` decides; this module answers its look-ups
with the resolver the client connects with (aiohttp's connector, httpx's system
resolver, Scrapy's reactor), so that every client judges a hop the same way.
"""

from __future__ import annotations

from ..decision import Decision
from ..policy.fetch_flow import RobotsRequest, RobotsResponse
from ..policy.hops import IsPrivate, Resolve, hop_flow, is_private

__all__ = ["hop_decision", "refused_robots_hop"]


async def hop_decision(from_url: str, to_url: str, resolve: Resolve,
                       private: IsPrivate = is_private) -> Decision | None:
    """The refusal of a redirect from ``from_url`` to ``to_url`` (None: it may be
    followed), both hosts resolved with ``resolve``, the client's own resolver.

    A look-up that fails (raises, or finds nothing) reaches no address: a public
    origin counts as public, and a target is refused.
    """
    flow = hop_flow(from_url, to_url, private)
    try:
        host = next(flow)
        while True:
            try:
                found = list(await resolve(host))
            except Exception:  # the client's resolver failed: nothing reached
                found = []
            host = flow.send(found)
    except StopIteration as done:
        refused: Decision | None = done.value
        return refused


async def refused_robots_hop(request: RobotsRequest, refuse_private: bool, resolve: Resolve,
                             private: IsPrivate = is_private) -> RobotsResponse | None:
    """The answer for a robots.txt (or tdmrep.json) hop that must not be sent, or None
    to send it; every robots.txt transport asks this before it sends a hop."""
    if request.previous is None or not refuse_private:
        return None
    refused = await hop_decision(request.previous, request.url, resolve, private)
    if refused is None:
        return None
    return RobotsResponse(0, {}, None, request.url, refused=f"{request.name} {refused.reason}")
