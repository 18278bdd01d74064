"""A store named by text, as ``robotgate fetch --store`` and Scrapy's ``ROBOTGATE_STORE``
take it: one reading for both.

``memory``; a Redis URL (``redis://``, ``rediss://``, ``unix://``, ``redis+cluster://``,
``rediss+cluster://``); or a SQLite file, ``sqlite:PATH`` or a bare ``PATH`` (``sqlite``
alone: the caller's default file, if it has one).  Other text that reads as a URL
(``redis:/HOST``, ``mongo://HOST``) is refused, never taken for a file's name.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..error_root import Error
from ..urls import redact, scrub
from .base import Store

__all__ = ["REDIS_SCHEMES", "BadStoreText", "store_from_text"]

#: The schemes of a Redis store's URL.
REDIS_SCHEMES = ("redis://", "rediss://", "unix://", "redis+cluster://", "rediss+cluster://")


#: What reads as a URL's scheme: two characters or more (``C:`` is a Windows drive).
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]+):")


class BadStoreText(Error, ValueError):
    """The text names no store this robotgate can make (its password hidden)."""


def store_from_text(text: str, *, prefix: str | None = None,
                    default_path: Path | None = None) -> Store:
    """The store ``text`` names, not opened yet; ``prefix`` names a Redis store's keys
    (None: the store's default); ``default_path``: the SQLite file ``sqlite`` alone
    names (None: it must be given).  Raises :class:`BadStoreText`."""
    from .memory import MemoryStore
    from .sqlite import SQLiteStore

    text = text.strip()
    if text == "memory":
        return MemoryStore()
    if text.startswith(REDIS_SCHEMES):
        return _redis(text, prefix)
    scheme = _SCHEME.match(text)
    if (scheme and scheme[1] != "sqlite") or "://" in text:
        # Anything else that reads as a URL is refused, not taken for a file's name: a
        # mistyped redis:/HOST would give each worker of a fleet a file of its own.
        raise BadStoreText(_not_a_store(text, scheme[1] if scheme else ""))
    path = text[len("sqlite:"):] if text.startswith("sqlite:") else text
    if path in ("", "sqlite"):
        if default_path is None:
            raise BadStoreText("give memory, a SQLite path (sqlite:PATH) or a Redis URL")
        file = default_path
    else:
        file = Path(os.path.expanduser(path))
    try:
        # A directory made here is its owner's only, as the file will be (0700).
        file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise BadStoreText(f"cannot create {str(file.parent)!r} for the store: "
                           f"{exc.strerror or exc}") from None
    return SQLiteStore(file)


def _not_a_store(text: str, scheme: str) -> str:
    """Why ``text``, which reads as a URL of ``scheme``, names no store (its secret hidden)."""
    shown = redact(text)
    if shown == text and "@" in text:  # a mistyped URL redact() does not read as one
        shown = f"{scheme}:***@{text.rsplit('@', 1)[1]}"
    redis = next((known for known in REDIS_SCHEMES if known[:-3] == scheme.lower()), None)
    if redis is not None:
        where = "/PATH/TO/SOCKET" if redis == "unix://" else "HOST[:PORT][/DB]"
        return f"{shown!r} is no Redis URL: write {redis}{where}"
    return (f"unknown store {shown!r}: use memory, sqlite:PATH or redis://HOST[:PORT][/DB]"
            " (a file whose name reads as a URL: sqlite:PATH)")


def _redis(url: str, prefix: str | None) -> Store:
    try:
        from .redis import RedisStore
    except ImportError:
        raise BadStoreText("a Redis store needs the redis package: "
                           "pip install 'robotgate[redis]'") from None
    try:
        return RedisStore(url, prefix=prefix) if prefix else RedisStore(url)
    except ValueError as exc:
        raise BadStoreText(scrub(f"bad store {url!r}: {exc}", url)) from None
