"""Reading an aiohttp response's body within a limit: ``gate.fetch``'s ``max_bytes``,
``robotgate fetch --max-bytes`` and the robots.txt transport's cap.  (The aiohttp
adapter's modules: :mod:`robotgate.gate.aiohttp_client`.)"""

from __future__ import annotations

from collections.abc import Awaitable

import aiohttp

from ..errors import BodyTooLarge, GateClosed
from ..private_parts import RESPONSE_BODY, missing
from ..urls import redact

__all__ = ["MAX_BODY", "read_body"]


#: ``gate.fetch``'s default ``max_bytes``: a decoded body longer than this raises
#: :class:`BodyTooLarge` (a gzip bomb inflates only as far as it is read).
MAX_BODY = 64 << 20
_CHUNK = 1 << 16


#: Whether aiohttp keeps a response's body where gate.fetch can hand it the body it read
#: (private_parts.RESPONSE_BODY).
_BODY_KEPT = hasattr(aiohttp.ClientResponse, "_body")


async def read_body(resp: aiohttp.ClientResponse, limit: int,
                    keep: bool) -> tuple[bytes, int, bool]:
    """Up to ``limit`` bytes of the decoded body, read chunk by chunk: (body, size, cut).
    (``gate.fetch``'s ``max_bytes``, and ``robotgate fetch --max-bytes``.)

    Memory stays within ``limit`` whatever the server sends (a gzip or brotli
    bomb inflates only as fast as it is read).  ``keep=False`` counts without
    keeping.
    """
    chunks: list[bytes] = []
    size = 0
    truncated = False
    content = resp.content
    while not truncated:
        # One byte past the cap tells a body of exactly `limit` bytes from a longer one.
        chunk = await content.read(min(_CHUNK, limit + 1 - size))
        if not chunk:
            break
        size += len(chunk)
        if size > limit:
            chunk = chunk[: len(chunk) - (size - limit)]
            size = limit
            truncated = True
        if keep:
            chunks.append(chunk)
    if size == 0 and not truncated:
        # A gate that read the body before handing the response over: take it from there.
        body = await resp.read()
        if body:
            truncated = len(body) > limit
            body = body[:limit]
            return (body if keep else b""), len(body), truncated
    return b"".join(chunks), size, truncated


async def _read_within(resp: aiohttp.ClientResponse, limit: int, url: str) -> None:
    """``resp.read()``, but past ``limit`` decoded bytes :class:`BodyTooLarge`."""
    body, _, cut = await read_body(resp, limit, keep=True)
    if cut:
        raise BodyTooLarge(url, limit)
    if not _BODY_KEPT:  # the body read could not be handed over: read() would lose it
        raise missing(RESPONSE_BODY)
    resp._body = body
    await resp.read()  # as aiohttp ends a read (the connection goes back to the pool)


def _read(resp: aiohttp.ClientResponse, url: str, max_bytes: int | None,
          unheard: bool) -> Awaitable[object]:
    """Read the body, within ``max_bytes`` decoded bytes when not None.  A body already
    whole and within the limit (most pages: they come with their headers) is taken
    from the stream at once when ``unheard`` (no trace hears the read), not through
    aiohttp's read of the stream (coroutines a chunk); ``resp.read()`` then only ends
    the read as aiohttp does, and returns the body kept.  Any other is read in chunks."""
    content = resp.content
    if content.is_eof() and (max_bytes is None or content.total_bytes <= max_bytes):
        if unheard and _BODY_KEPT:
            resp._body = content.read_nowait()
        return resp.read()
    if max_bytes is None:
        return resp.read()
    return _read_within(resp, max_bytes, url)


def _closed_reading(url: str) -> GateClosed:
    return GateClosed(f"the gate was closed while reading {redact(url)}")


async def _read_capped(resp: aiohttp.ClientResponse, limit: int) -> bytes:
    """At most ``limit`` bytes of the body; the rest is not read."""
    chunks: list[bytes] = []
    size = 0
    while size < limit:
        chunk = await resp.content.read(min(65536, limit - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)
