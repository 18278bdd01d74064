"""A store named by text, as ``robotgate fetch --store`` and Scrapy's ``ROBOTGATE_STORE``
take it: one reading for both.

``memory``; a Redis URL (``redis://``, ``rediss://``, ``unix://``, ``redis+cluster://``,
``rediss+cluster://``); or a SQLite file, ``sqlite:PATH`` or a bare ``PATH`` (``sqlite``
alone: the caller's default file, if it has one).
"""

from __future__ import annotations

import os
from pathlib import Path

from ..error_root import Error
from ..urls import redact, scrub
from .base import Store

__all__ = ["REDIS_SCHEMES", "BadStoreText", "store_from_text"]

#: The schemes of a Redis store's URL.
REDIS_SCHEMES = ("redis://", "rediss://", "unix://", "redis+cluster://", "rediss+cluster://")


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
    if "://" in text:
        raise BadStoreText(f"unknown store {redact(text)!r}: use memory, sqlite:PATH or "
                           "redis://HOST[:PORT][/DB]")
    path = text[len("sqlite:"):] if text.startswith("sqlite:") else text
    if path in ("", "sqlite"):
        if default_path is None:
            raise BadStoreText("give memory, a SQLite path (sqlite:PATH) or a Redis URL")
        file = default_path
    else:
        file = Path(os.path.expanduser(path))
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BadStoreText(f"cannot create {str(file.parent)!r} for the store: "
                           f"{exc.strerror or exc}") from None
    return SQLiteStore(file)


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
