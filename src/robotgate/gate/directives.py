"""A response's page directives: its headers and, for HTML, the body it has read.

For aiohttp's responses, and any with ``headers`` (a mapping or a multi-dict,
Scrapy's bytes too) when the body is passed.
"""

from __future__ import annotations

from typing import Any

import aiohttp

from ..private_parts import RESPONSE_BODY, missing
from ..robots.directives import PageDirectives, page_directives

__all__ = ["directives_of", "headers_directives"]


def directives_of(response: Any, agent: str, body: bytes | None = None) -> PageDirectives:
    """The directives of ``response`` for ``agent``: ``body`` if given, else the body
    the response has already read (``gate.fetch`` reads it; a streamed one has none)."""
    if body is None and isinstance(response, aiohttp.ClientResponse):
        # aiohttp keeps the body read() returned there; without it a page's meta tags
        # (its nofollow) would go unread, so it is refused rather than read as none.
        if not hasattr(aiohttp.ClientResponse, "_body"):
            raise missing(RESPONSE_BODY)
        read = response._body
        body = read if isinstance(read, bytes) else None
    return headers_directives(getattr(response, "headers", None) or {}, agent, body)


def headers_directives(headers: Any, agent: str, body: bytes | None) -> PageDirectives:
    """The directives of a response with ``headers`` (its Content-Type says whether
    ``body`` is HTML) for ``agent``."""
    content_type = headers.get("Content-Type")
    if isinstance(content_type, bytes):  # Scrapy's headers are bytes
        content_type = content_type.decode("latin-1")
    return page_directives(headers, body, agent=agent, content_type=content_type)
