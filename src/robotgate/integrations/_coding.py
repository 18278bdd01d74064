"""A robots.txt body's content codings, undone within the byte limit.

robots.txt is asked for with ``Accept-Encoding: identity``; a server that
compresses it anyway could send a small body that inflates to gigabytes.  The
httpx and Scrapy adapters read the raw bytes (at most the limit) and undo the
codings here, never producing more than the limit: a longer file is cut, as
the aiohttp adapter cuts it.  (aiohttp inflates while it reads, chunk by chunk.)
"""

from __future__ import annotations

import importlib
import zlib
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["UndecodableBody", "decode_capped"]


class UndecodableBody(ValueError):
    """A body in a content coding that is corrupt or that no installed decoder reads."""


def decode_capped(body: bytes, codings: Iterable[str], limit: int) -> bytes:
    """``body`` with its ``Content-Encoding`` undone, cut to ``limit`` bytes.

    ``codings``: the header's values as sent.  gzip, deflate, br and zstd are
    undone, the last applied first; ``identity`` and tokens no decoder knows
    are left alone, as browsers and aiohttp do (servers that send
    ``Content-Encoding: utf-8`` mean no coding).  A truncated stream gives what
    it holds.  Raises :class:`UndecodableBody` for corrupt data or a coding
    whose decoder is not installed (br needs ``brotli``, zstd Python 3.14 or
    ``backports.zstd``).

    >>> import gzip
    >>> decode_capped(gzip.compress(b"Disallow: /x\\n" * 1000), ["gzip"], 20)
    b'Disallow: /x\\nDisallo'
    """
    if limit <= 0:
        return b""  # (zlib reads a max_length of 0 as no limit)
    tokens = [t.strip().lower() for value in codings for t in value.split(",")]
    for token in reversed(tokens):
        decode = _DECODERS.get(token)
        if decode is None:
            continue
        try:
            body = decode(body, limit)
        except UndecodableBody:
            raise
        except Exception as exc:  # zlib.error, brotli.error, ZstdError: corrupt data
            raise UndecodableBody(
                f"robots.txt came {token}-encoded and could not be decoded: {exc}") from None
    return body[:limit]


def _inflate(body: bytes, limit: int, wbits: int) -> bytes:
    return zlib.decompressobj(wbits).decompress(body, limit)


def _gzip(body: bytes, limit: int) -> bytes:
    return _inflate(body, limit, 47)  # a gzip or zlib header, whichever it has


def _deflate(body: bytes, limit: int) -> bytes:
    try:
        return _inflate(body, limit, 15)
    except zlib.error:  # raw deflate without the zlib wrapper, as some servers send
        return _inflate(body, limit, -15)


def _module(*names: str) -> Any:
    for name in names:
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    return None


def _brotli(body: bytes, limit: int) -> bytes:
    brotli = _module("brotli", "brotlicffi")
    if brotli is None:
        raise UndecodableBody("robots.txt came br-encoded and no brotli decoder is installed")
    try:
        out: bytes = brotli.Decompressor().process(body, output_buffer_limit=limit)
    except TypeError:  # a brotli without an output limit: refuse rather than inflate
        raise UndecodableBody(
            "robots.txt came br-encoded and the installed brotli cannot decode "
            "within a limit") from None
    return out


def _zstd(body: bytes, limit: int) -> bytes:
    zstd = _module("compression.zstd", "backports.zstd")
    if zstd is None:
        raise UndecodableBody("robots.txt came zstd-encoded and no zstd decoder is installed")
    out: bytes = zstd.ZstdDecompressor().decompress(body, max_length=limit)
    return out


_DECODERS: dict[str, Callable[[bytes, int], bytes]] = {
    "gzip": _gzip, "x-gzip": _gzip, "deflate": _deflate, "br": _brotli, "zstd": _zstd,
}
