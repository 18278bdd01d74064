"""Redirect hops into private networks, for adapters whose client resolves names itself.

The same rule as the aiohttp adapter's: a hop from a public site into a
loopback, private or link-local address is refused.  Literal addresses are
judged at once; names are resolved with the system resolver (what httpx and
Scrapy connect through by default).
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from ..policy.network import address_is_public, host_is_public, refusal

__all__ = ["first_address", "hop_refusal", "resolve"]

Resolve = Callable[[str], Awaitable[list[str]]]


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


def _host(url: str) -> str:
    try:
        return urlsplit(url).hostname or ""
    except ValueError:
        return ""


async def hop_refusal(from_url: str, to_url: str, lookup: Resolve = resolve) -> str | None:
    """Why a redirect from ``from_url`` to ``to_url`` is refused (None: it may be followed)."""
    why = refusal(from_url, to_url)
    to_host = _host(to_url)
    if why is not None or host_is_public(to_host) is not None:
        return why
    from_host = _host(from_url)
    from_public = host_is_public(from_host)
    if from_public is None:
        from_public = all(address_is_public(a) for a in await lookup(from_host))
    if not from_public:
        return None
    private = [a for a in await lookup(to_host) if not address_is_public(a)]
    if private:
        return (f"refused a redirect from a public site to {to_host}, which resolves to "
                f"a non-public address ({private[0]})")
    return None
