"""Look-ups and robots.txt headers for adapters whose client resolves names itself.

A hop is judged by :func:`robotgate.politeness.redirects.hop_decision`; an adapter
passes the resolver its client connects with.  httpx exposes none (its
transports resolve inside httpcore with the system resolver): :func:`resolve`
asks the loop's ``getaddrinfo``, which reads the same system configuration.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Sequence

from ..policy.fetch_flow import RobotsRequest

__all__ = ["first_address", "resolve", "robots_headers"]


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


def robots_headers(request: RobotsRequest, headers: dict[str, str]) -> dict[str, str]:
    """The gate's headers, the flow's validators, and no compression: the byte cap
    counts what the server sends (a compressed body could inflate far past it)."""
    merged = {**headers, **request.headers}
    merged.setdefault("Accept-Encoding", "identity")
    return merged
