"""A robots.txt body's content codings (RFC 9110 8.4), undone within the byte limit.

Every client adapter reads the raw bytes of robots.txt (at most the limit) and
undoes the codings here, never producing more than the limit: a small body
that inflates to gigabytes costs no more than the limit, and a longer file is
cut there.

What a ``Content-Encoding`` token means:

* gzip, x-gzip, deflate, br and zstd are undone, the last applied first, at
  most :data:`MAX_CODINGS` of them (``gzip, gzip``, ``identity, gzip`` and
  ``gzip, br`` included);
* ``identity``, no header, and tokens that name no content coding (``utf-8``,
  ``none``, ``text/plain``...) mean no coding, and browsers read the body as it
  is; but such a body that is not text never reads as "no rules": its first
  bytes say what it is.  gzip, zlib, bzip2, xz and zstd data (by their magic
  numbers) are undone, and so are brotli (a whole stream decoding to text) and
  raw deflate when the body is not text; any other body that is not text
  (control bytes in its first KiB, a NUL anywhere, a UTF-8 continuation byte
  first; a UTF-16 or UTF-32 body opens with its BOM) raises
  :class:`UndecodableBody`.  What the declared codings give is undone too when
  it opens with a magic number or a zlib header (``gzip`` over gzip data twice),
  and a body its declared coding cannot undo is read as what it is (brotli sent
  as ``gzip``); what decoding gives is judged as a body sent plain is: no text
  (NUL bytes gzipped, a gzip bomb of them) raises :class:`UndecodableBody`, and so
  does data that stops before giving a byte (a gzip header alone);
* a registered coding no decoder here reads (``compress``, ``aes128gcm``...),
  br without ``brotli``, zstd without Python 3.14 or ``backports.zstd``, and
  corrupt data raise :class:`UndecodableBody`: robots.txt is unreachable
  (RFC 9309 2.3.1.4), never read as an empty file that allows everything.

Every decoder's output stops at the limit; xz's memory is bounded too
(:data:`MAX_XZ_MEMORY`).  A stream cut short gives what it holds (the limit cuts the raw bytes too).
Standard library only; ``brotli`` and ``zstd`` are imported when a body needs them.
"""

from __future__ import annotations

import bz2
import importlib
import lzma
import zlib
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..error_root import Error

__all__ = ["MAX_CODINGS", "MAX_XZ_MEMORY", "UndecodableBody", "decode_capped"]

#: Most codings undone on one body; more is refused (curl's bound, after
#: CVE-2023-23916): each layer costs up to the limit again.
MAX_CODINGS = 5
#: Most memory the xz decoder may take (its header asks for its dictionary's size).
MAX_XZ_MEMORY = 64 * 1024 * 1024

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
    tokens: Sequence[str] = ()  # most bodies come with no coding: no list made for them
    if codings:
        tokens = [t.strip().lower() for value in codings for t in value.split(",")]
    undone = 0
    # What the body came as, for a message: a token naming no coding, or the last undone.
    came = "with no content coding"
    for token in reversed(tokens):
        decode = _DECODERS.get(token)
        if decode is None:
            if token in _UNREADABLE:
                raise UndecodableBody(
                    f"robots.txt came {token}-encoded, a coding robotgate does not decode")
            if token not in ("", "identity"):
                came = f"{token}-encoded, a coding robotgate does not know,"
            continue  # names no coding: what the body is, its first bytes say (below)
        undone += 1
        if undone > MAX_CODINGS:
            raise UndecodableBody(
                f"robots.txt came in more than {MAX_CODINGS} content codings")
        try:
            body = decode(body, limit)
        except UndecodableBody:
            raise
        except Exception as exc:  # zlib.error, brotli.error, ZstdError: corrupt data
            # Data of another format under the label (brotli sent as gzip) is undone
            # as what it is; anything else is corrupt.
            error = UndecodableBody(
                f"robots.txt came {token}-encoded and could not be decoded: {exc}")
            try:
                sniffed = _sniffed(body, limit, f"{token}-encoded", as_sent=True)
            except UndecodableBody:
                sniffed = None
            if sniffed is None:
                raise error from None
            body = sniffed
        came = f"{token}-encoded"
    while True:  # data whatever the header said: undone, as many layers as allowed
        decoded = _sniffed(body, limit, came, as_sent=undone == 0)
        if decoded is None:
            body = body[:limit]
            if undone and _not_text(body):
                # What decoding gives is judged as a body sent plain is: NUL bytes
                # gzipped say no more than NUL bytes (never "no rules").
                raise UndecodableBody(f"robots.txt came {came} and is not text once decoded")
            return body
        undone += 1
        if undone > MAX_CODINGS:
            raise UndecodableBody(
                f"robots.txt came in more than {MAX_CODINGS} content codings")
        body = decoded
        came = "as compressed data"


def _sniffed(body: bytes, limit: int, came: str, *, as_sent: bool) -> bytes | None:
    """``body`` undone as what its first bytes say it is; None for text, read as it
    came.  Raises :class:`UndecodableBody` for data that does not decode and, for a
    body ``as_sent`` (no coding undone yet), one that is no text and no data decoded
    here; what a coding gave is only looked at for data with a header."""
    if not body:
        return None
    first = body[0]
    known = _MAGIC.get(first)
    if known is not None and body.startswith(known[0]):
        _, name, decode = known
        try:
            return decode(body, limit)
        except UndecodableBody:
            raise
        except Exception as exc:  # corrupt: no text starts with these bytes either
            raise UndecodableBody(f"robots.txt came {came} and is {name} data that "
                                  f"could not be decoded: {exc}") from None
    # The whole check only for a first byte a zlib header can have (text seldom has one).
    if first & 0x0F == 8 and _zlib_header(body):
        # Two characters of text can look like a zlib header ("x " or "Xf"): data that
        # does not inflate is read as it came.
        inflated = _whole(zlib.decompressobj(15), body, limit)
        if inflated is not None:
            return inflated
    if not as_sent or not _not_text(body):
        return None  # text is read as it came
    brotli = _module("brotli", "brotlicffi")
    if brotli is not None:  # no magic number: a whole stream that gives text
        try:
            decoder = brotli.Decompressor()
            out: bytes = decoder.process(body, output_buffer_limit=limit)
            if (decoder.is_finished() or len(out) >= limit) and not _not_text(out):
                return out
        except Exception:  # not brotli (or a brotli without an output limit)
            pass
    if _zlib_header(body):
        raise UndecodableBody(f"robots.txt came {came} and is not text")
    inflated = _whole(zlib.decompressobj(-15), body, limit)  # raw deflate
    if inflated is not None:
        return inflated
    raise UndecodableBody(f"robots.txt came {came} and is not text")


def _whole(inflater: Any, body: bytes, limit: int) -> bytes | None:
    """What ``inflater`` makes of ``body``: None unless it reads to the stream's end,
    or gives text (a stream cut short ends early), or fills the limit."""
    try:
        out: bytes = inflater.decompress(body, limit)
    except zlib.error:
        return None
    if inflater.eof or len(out) >= limit or (out and not _not_text(out)):
        return out
    return None


# Bytes no text holds: C0 controls but tab, newline, form feed, carriage return
# and the old end-of-file mark (0x1a).
_CONTROLS = frozenset([*range(0x00, 0x09), 0x0B, *range(0x0E, 0x1A), *range(0x1B, 0x20)])
#: A translation table that makes each of those bytes a NUL and keeps every other.
_CONTROLS_TO_NUL = bytes(0 if byte in _CONTROLS else byte for byte in range(256))


def _not_text(body: bytes) -> bool:
    """Whether ``body`` is no text: control bytes in its first KiB, a NUL anywhere,
    or a UTF-8 continuation byte first; UTF-16 and UTF-32 text (NULs) open with a BOM."""
    if not body:
        return False
    # bytes.translate maps in C: several times quicker than a regular expression.
    # A NUL is looked for as an int: a bytes operand of `in` is first tried as an
    # int, and the TypeError that makes costs ten times the search.
    if (0x80 <= body[0] < 0xC0 or 0 in body[:1024].translate(_CONTROLS_TO_NUL)
            or 0 in body):
        return body[:2] not in _WIDE_BOMS and body[:4] not in _WIDE_BOMS
    return False


#: Byte order marks of UTF-16 and UTF-32 text (which holds NUL bytes).
_WIDE_BOMS = frozenset({b"\xff\xfe", b"\xfe\xff", b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff"})


def _zlib_header(body: bytes) -> bool:
    """Whether ``body`` opens with a zlib header (RFC 1950: deflate, a valid check)."""
    return (len(body) >= 2 and body[0] & 0x0F == 8 and body[0] >> 4 <= 7
            and (body[0] << 8 | body[1]) % 31 == 0)


def _gave(out: bytes, ended: bool, body: bytes) -> bytes:
    """``out``, unless data (``body``) that gave nothing stopped short of its end: a
    header alone is no robots.txt, empty or not, so it is no "no rules" either."""
    if body and not out and not ended:
        raise UndecodableBody("robots.txt is compressed data that ends before its content")
    return out


def _inflate(body: bytes, limit: int, wbits: int) -> bytes:
    inflater = zlib.decompressobj(wbits)
    return _gave(inflater.decompress(body, limit), inflater.eof, body)


def _gzip(body: bytes, limit: int) -> bytes:
    return _inflate(body, limit, 47)  # a gzip or zlib header, whichever it has


def _bzip2(body: bytes, limit: int) -> bytes:
    decoder = bz2.BZ2Decompressor()
    return _gave(decoder.decompress(body, limit), decoder.eof, body)


def _xz(body: bytes, limit: int) -> bytes:
    decoder = lzma.LZMADecompressor(lzma.FORMAT_XZ, MAX_XZ_MEMORY)
    return _gave(decoder.decompress(body, limit), decoder.eof, body)


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

# The first bytes of data in a format decoded here, keyed by the first byte (bzip2: "BZh",
# the block size, then a block's or the stream end's magic).
_MAGIC: dict[int, tuple[bytes | tuple[bytes, ...], str, Callable[[bytes, int], bytes]]] = {
    0x1F: (b"\x1f\x8b", "gzip", _gzip),
    ord("B"): (tuple(b"BZh" + bytes([level]) + block for level in b"123456789"
                     for block in (b"1AY&SY", b"\x17rE8P\x90")), "bzip2", _bzip2),
    0xFD: (b"\xfd7zXZ\x00", "xz", _xz),
    0x28: (b"\x28\xb5\x2f\xfd", "zstd", _zstd),
}
