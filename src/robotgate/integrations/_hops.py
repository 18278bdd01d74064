"""Redirect hops for adapters whose client resolves names itself: only the look-up.

The decision is :func:`robotgate.policy.hops.hop_decision`'s; an adapter
passes the resolver its client connects with.  httpx exposes none (its
transports resolve inside httpcore with the system resolver): :func:`resolve`
asks the loop's ``getaddrinfo``, which reads the same system configuration.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Sequence

from ..policy.fetch_flow import RobotsRequest, RobotsResponse
from ..policy.hops import IsPrivate, Resolve, hop_decision, is_private

__all__ = ["first_address", "refused_robots_hop", "resolve", "robots_headers"]


async def resolve(host: str) -> Sequence[str]:
    """The addresses ``host`` resolves to ([] when it does not)."""
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(
            host, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return []
    return [str(info[4][0]) for info in infos]


async def first_address(host: str) -> str:
    """The address a connection to ``host`` will likely use (for ``pace_by="ip"``)."""
    found = await resolve(host)
    return found[0] if found else host


async def refused_robots_hop(request: RobotsRequest, refuse_private: bool,
                             private: IsPrivate = is_private,
                             lookup: Resolve = resolve) -> RobotsResponse | None:
    """The answer for a robots.txt (or tdmrep.json) hop that must not be sent, or None
    to send it."""
    if request.previous is None or not refuse_private:
        return None
    refused = await hop_decision(request.previous, request.url, lookup, private)
    if refused is None:
        return None
    return RobotsResponse(0, {}, None, request.url, refused=f"{request.name} {refused.reason}")


def robots_headers(request: RobotsRequest, headers: dict[str, str]) -> dict[str, str]:
    """The gate's headers, the flow's validators, and no compression: the byte cap
    counts what the server sends (a compressed body could inflate far past it)."""
    merged = {**headers, **request.headers}
    merged.setdefault("Accept-Encoding", "identity")
    return merged
