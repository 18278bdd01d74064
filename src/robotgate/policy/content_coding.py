"""A robots.txt body's content codings (RFC 9110 8.4), undone within the byte limit.

Every client adapter reads the raw bytes of robots.txt (at most the limit) and
undoes the codings here, never producing more than the limit: a small body
that inflates to gigabytes costs no more than the limit, and a longer file is
cut there.

What a ``Content-Encoding`` token means:

* gzip, x-gzip, deflate, br and zstd are undone, the last applied first, at
  most :data:`MAX_CODINGS` of them (``gzip, gzip``, ``identity, gzip`` and
  ``gzip, br`` included);
* ``identity`` and tokens that name no content coding (``utf-8``, ``none``,
  ``text/plain``...) are left alone: servers that send them mean no coding,
  and browsers read the body as it is; but a body under such a token that is
  not text never reads as "no rules": one that starts as gzip or zlib data is
  inflated (what the server must have meant), any other holding NUL bytes
  raises :class:`UndecodableBody` (a UTF-16 or UTF-32 body opens with its BOM);
* a registered coding no decoder here reads (``compress``, ``aes128gcm``...),
  br without ``brotli``, zstd without Python 3.14 or ``backports.zstd``, and
  corrupt data raise :class:`UndecodableBody`: robots.txt is unreachable
  (RFC 9309 2.3.1.4), never read as an empty file that allows everything.

A stream cut short gives what it holds (the limit cuts the raw bytes too).
Standard library only; ``brotli`` and ``zstd`` are imported when a body needs them.
"""

from __future__ import annotations

import importlib
import zlib
from collections.abc import Callable, Iterable
from typing import Any

from ..error_root import Error

__all__ = ["MAX_CODINGS", "UndecodableBody", "decode_capped"]

#: Most codings undone on one body; more is refused (curl's bound, after
#: CVE-2023-23916): each layer costs up to the limit again.
MAX_CODINGS = 5

# The IANA HTTP Content Coding Registry's codings that no decoder here reads.
_UNREADABLE = frozenset({"compress", "x-compress", "pack200-gzip", "exi", "aes128gcm",
                         "dcb", "dcz"})


class UndecodableBody(Error, ValueError):
    """A body in a content coding that is corrupt or that no installed decoder reads."""


def decode_capped(body: bytes, codings: Iterable[str], limit: int) -> bytes:
    """``body`` with its ``Content-Encoding`` undone, cut to ``limit`` bytes.

    ``codings``: the header's values as sent (one per header line).  Raises
    :class:`UndecodableBody` for what cannot be undone (see the module's doc).

    >>> import gzip
    >>> decode_capped(gzip.compress(b"Disallow: /x\\n" * 1000), ["gzip"], 20)
    b'Disallow: /x\\nDisallo'
    >>> decode_capped(gzip.compress(gzip.compress(b"Disallow: /x\\n")), ["x-gzip, gzip"], 99)
    b'Disallow: /x\\n'
    >>> decode_capped(b"Disallow: /x\\n", ["utf-8"], 99)
    b'Disallow: /x\\n'
    >>> decode_capped(gzip.compress(b"Disallow: /x\\n"), ["x-unknown"], 99)
    b'Disallow: /x\\n'
    """
    if limit <= 0:
        return b""  # (zlib reads a max_length of 0 as no limit)
    tokens = [t.strip().lower() for value in codings for t in value.split(",")]
    undone = 0
    for token in reversed(tokens):
        decode = _DECODERS.get(token)
        if decode is None:
            if token in _UNREADABLE:
                raise UndecodableBody(
                    f"robots.txt came {token}-encoded, a coding robotgate does not decode")
            if token in ("", "identity"):
                continue
            decode = _sniffed(body, token)
            if decode is None:
                continue  # text under a token that names no coding: read as it is
        undone += 1
        if undone > MAX_CODINGS:
            raise UndecodableBody(
                f"robots.txt came in more than {MAX_CODINGS} content codings")
        try:
            body = decode(body, limit)
        except UndecodableBody:
            raise
        except Exception as exc:  # zlib.error, brotli.error, ZstdError: corrupt data
            raise UndecodableBody(
                f"robots.txt came {token}-encoded and could not be decoded: {exc}") from None
    return body[:limit]


def _sniffed(body: bytes, token: str) -> Callable[[bytes, int], bytes] | None:
    """How to undo ``body`` that came under ``token``, a name of no known coding:
    None for text, the inflater for gzip or zlib data.  Raises
    :class:`UndecodableBody` for any other body holding NUL bytes."""
    if body[:2] == b"\x1f\x8b":
        return _gzip  # text never starts with a control character: corrupt gzip raises
    not_text = b"\x00" in body and body[:2] not in _WIDE_BOMS and body[:4] not in _WIDE_BOMS
    if _zlib_header(body):
        # Two characters of text can look like a zlib header ("x " or "Xf"): data that
        # does not inflate is read as it came.
        def inflate_or_keep(data: bytes, limit: int) -> bytes:
            inflater = zlib.decompressobj(15)
            try:
                out = inflater.decompress(data, limit)
            except zlib.error:
                out = b""
            if out or inflater.eof:
                return out
            if not_text:
                raise UndecodableBody(f"robots.txt came {token}-encoded, a coding robotgate "
                                      "does not know, and is not text")
            return data
        return inflate_or_keep
    if not_text:
        raise UndecodableBody(f"robots.txt came {token}-encoded, a coding robotgate does "
                              "not know, and is not text")
    return None


#: Byte order marks of UTF-16 and UTF-32 text (which holds NUL bytes).
_WIDE_BOMS = frozenset({b"\xff\xfe", b"\xfe\xff", b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff"})


def _zlib_header(body: bytes) -> bool:
    """Whether ``body`` opens with a zlib header (RFC 1950: deflate, a valid check)."""
    return (len(body) >= 2 and body[0] & 0x0F == 8 and body[0] >> 4 <= 7
            and (body[0] << 8 | body[1]) % 31 == 0)


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
