"""Redirect hops into private networks, for adapters whose client resolves names itself.

The same rule as the aiohttp adapter's: a hop from a public site into a
loopback, private or link-local address is refused.  Literal addresses are
judged at once; names are resolved with the system resolver (what httpx and
Scrapy connect through by default).
"""

from __future__ import annotations

import asyncio
import socket

from ..policy.fetch_flow import RobotsRequest, RobotsResponse
from ..policy.network import Resolve
from ..policy.network import hop_refusal as refuse_hop

__all__ = ["first_address", "hop_refusal", "refused_robots_hop", "resolve",
           "robots_headers"]


async def resolve(host: str) -> list[str]:
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


async def hop_refusal(from_url: str, to_url: str, lookup: Resolve = resolve) -> str | None:
    """Why a redirect from ``from_url`` to ``to_url`` is refused (None: it may be followed)."""
    return await refuse_hop(from_url, to_url, lookup)


async def refused_robots_hop(request: RobotsRequest, refuse_private: bool) -> RobotsResponse | None:
    """The answer for a robots.txt hop that must not be sent, or None to send it."""
    if request.previous is None or not refuse_private:
        return None
    why = await hop_refusal(request.previous, request.url)
    if why is None:
        return None
    return RobotsResponse(0, {}, None, request.url, refused=f"robots.txt {why}")


def robots_headers(request: RobotsRequest, headers: dict[str, str]) -> dict[str, str]:
    """The gate's headers, the flow's validators, and no compression: the byte cap
    counts what the server sends (a compressed body could inflate far past it)."""
    merged = {**headers, **request.headers}
    merged.setdefault("Accept-Encoding", "identity")
    return merged
