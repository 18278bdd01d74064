"""User-agent product tokens: the part of a User-Agent that robots.txt groups name."""

from __future__ import annotations

import re

__all__ = ["product_token"]

# RFC 9309 2.2.1: the product token is [a-zA-Z_-]+; matching is case-insensitive.
_TOKEN_RE = re.compile(r"[A-Za-z_-]*")
_ASCII_WS = " \t\n\v\f\r"
_CACHE: dict[str, str] = {}
# Longer strings (a 16 KiB "User-agent:" line of a hostile file) are not kept.
_MAX_CACHED = 256


def product_token(user_agent: str) -> str:
    """The lower-cased product token of a User-Agent string.

    >>> product_token("MyBot/2.1 (+https://example.com/bot)")
    'mybot'
    """
    token = _CACHE.get(user_agent)
    if token is None:
        m = _TOKEN_RE.match(user_agent.strip(_ASCII_WS))  # as Google: not U+00A0
        token = m.group(0).lower() if m else ""
        if len(user_agent) <= _MAX_CACHED:
            if len(_CACHE) >= 4096:
                _CACHE.clear()
            _CACHE[user_agent] = token
    return token
