"""User-agent product tokens: the part of a User-Agent that robots.txt groups name,
and the robot's name in a User-Agent that starts as a browser's."""

from __future__ import annotations

import re
from typing import TypeVar

__all__ = ["BROWSER_TOKENS", "product_token", "robot_name"]

# RFC 9309 2.2.1: the product token is [a-zA-Z_-]+; matching is case-insensitive.
_TOKEN_RE = re.compile(r"[A-Za-z_-]*")
_ASCII_WS = " \t\n\v\f\r"
_T = TypeVar("_T")
_CACHE: dict[str, str] = {}
# Longer strings (a 16 KiB "User-agent:" line of a hostile file) are not kept,
# and a cache holding _CACHE_SIZE of them starts afresh.
_MAX_CACHED = 256
_CACHE_SIZE = 4096


def _remember(cache: dict[str, _T], user_agent: str, value: _T) -> None:
    if len(user_agent) <= _MAX_CACHED:
        if len(cache) >= _CACHE_SIZE:
            cache.clear()
        cache[user_agent] = value


def product_token(user_agent: str) -> str:
    """The lower-cased product token of a User-Agent string.

    >>> product_token("MyBot/2.1 (+https://example.com/bot)")
    'mybot'
    """
    token = _CACHE.get(user_agent)
    if token is None:
        m = _TOKEN_RE.match(user_agent.strip(_ASCII_WS))  # as Google: not U+00A0
        token = m.group(0).lower() if m else ""
        _remember(_CACHE, user_agent, token)
    return token


#: Product tokens of browsers and their engines: a User-Agent starting with one of
#: them names no robot by its first token, and a comment element naming one is no robot.
BROWSER_TOKENS = frozenset({
    "mozilla", "opera", "chrome", "chromium", "safari", "applewebkit", "webkit", "gecko",
    "firefox", "msie", "trident", "edge", "edg", "konqueror", "khtml", "presto", "version",
    "mobile",
})
# A comment holds no parentheses (RFC 9110 5.6.5 allows nested ones; no robot uses them).
_COMMENT_RE = re.compile(r"\(([^()]*)\)")
# "Name/1.0": a product in a comment, as Googlebot, bingbot and Applebot put theirs;
# the name is a whole product token (a device's "SM-S908B/DS" is none).
_PRODUCT_RE = re.compile(r"[A-Za-z_-]+/[^\s/]*")
# "Name" alone, right after "compatible" ("Mozilla/5.0 (compatible; MyBot)").
_NAME_RE = re.compile(r"[A-Za-z_-]+")
_NAMES: dict[str, str | None] = {}


def robot_name(user_agent: str) -> str | None:
    """The name robots.txt groups are matched against for ``user_agent``.

    The User-Agent itself when its product token is a robot's; the robot's
    product inside a comment when it starts as a browser's (the form Googlebot,
    bingbot and Applebot use); None when it is a browser's and names no robot.

    >>> robot_name("MyBot/2.1 (+https://example.com/bot)")
    'MyBot/2.1 (+https://example.com/bot)'
    >>> robot_name("Mozilla/5.0 (compatible; MyBot/1.0; +https://example.com/bot)")
    'MyBot/1.0'
    >>> robot_name("Mozilla/5.0 (X11; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0")
    """
    if product_token(user_agent) not in BROWSER_TOKENS:
        return user_agent
    try:
        return _NAMES[user_agent]
    except KeyError:
        pass
    name = _named_in_comment(user_agent)
    _remember(_NAMES, user_agent, name)
    return name


def _named_in_comment(user_agent: str) -> str | None:
    """The first robot product in the User-Agent's comments: ``Name/version``, or
    any name right after ``compatible``; browsers and their engines are none."""
    for comment in _COMMENT_RE.finditer(user_agent):
        after_compatible = False
        for part in comment.group(1).split(";"):
            element = part.strip(_ASCII_WS)
            if element.lower() == "compatible":
                after_compatible = True
                continue
            named = _PRODUCT_RE.fullmatch(element) or (
                _NAME_RE.fullmatch(element) if after_compatible else None)
            after_compatible = False
            if named is not None and product_token(element) not in BROWSER_TOKENS:
                return element
    return None
