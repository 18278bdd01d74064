"""A robots.txt body as the parsers read it: bytes to text, in one place.

Both dialects read what this module returns: the first ``max_bytes`` octets
(cut at a whole line), a byte order mark dropped, and the bytes decoded by
the charset the response declares, falling back to UTF-8 whenever that
charset is unknown, unusable or does not yield robots.txt lines.  Never
raises on content.
"""

from __future__ import annotations

import codecs
import re
from typing import TypeVar

__all__ = ["DEFAULT_MAX_BYTES", "ESCAPE_INVALID", "body_text", "charset_of", "cut_utf8",
           "decode_body"]

#: RFC 9309 2.5: crawlers must parse at least 500 KiB.
DEFAULT_MAX_BYTES = 500 * 1024

_Text = TypeVar("_Text", str, bytes)

_UTF8_BOM = b"\xef\xbb\xbf"
_UTF16_BOMS = {b"\xff\xfe": "utf-16-le", b"\xfe\xff": "utf-16-be"}
_UTF32_BOMS = {b"\xff\xfe\x00\x00": "utf-32-le"}
# Charsets that are UTF-8 or a subset of it: the bytes are read as UTF-8.
_UTF8_NAMES = frozenset({"utf-8", "utf8", "us-ascii", "ascii", "utf-8-sig"})
# Python codecs that are not character sets a server could mean: they
# transform text (or raise) instead of decoding a document.  UTF-7 turns
# "+...-" runs into other characters, and WHATWG decoders refuse it too.
_NOT_CHARSETS = frozenset(
    {"idna", "punycode", "undefined", "unicode-escape", "raw-unicode-escape", "utf-7"}
)
# A longer charset name is garbage; looking it up is not worth it.
_MAX_CHARSET_NAME = 40
# "; name=value" with a quoted or bare value (a quoted one may hold ";").
_PARAM = re.compile(r';\s*([^\s=;]+)\s*=\s*("(?:[^"\\]|\\.)*"?|[^;]*)')
# A line a robots.txt reader recognises, in either dialect (typos aside).
_KNOWN_LINE = re.compile(
    r"^[ \t]*(?:user[- ]?agent|disallow|allow|sitemap|crawl-?delay)[ \t]*:",
    re.IGNORECASE | re.MULTILINE,
)


def charset_of(content_type: str | None) -> str | None:
    """The ``charset`` parameter of a Content-Type, lower-cased and unquoted, or None.

    The first ``charset`` parameter counts (as in the WHATWG MIME type
    parser); quotes (double or single), blanks and case are tolerated, and a
    value that cannot be a charset name counts as absent.

    >>> charset_of('text/plain; format=flowed; Charset="ISO-8859-1"')
    'iso-8859-1'
    """
    if not content_type or ";" not in content_type:
        return None
    for m in _PARAM.finditer(content_type):
        if m.group(1).lower() != "charset":
            continue
        value = m.group(2).strip()
        if value[:1] == '"':
            value = re.sub(r"\\(.)", r"\1", value[1:].removesuffix('"'))
        value = value.strip().strip("'").strip().lower()
        if not value or len(value) > _MAX_CHARSET_NAME or not value.isascii():
            return None
        return value
    return None


def _text_codec(charset: str) -> str | None:
    """The Python codec for a declared charset, or None if it is not a usable text encoding."""
    if charset in _UTF8_NAMES:
        return "utf-8"
    try:
        info = codecs.lookup(charset)
    except (LookupError, ValueError, TypeError):
        return None
    if info.name in _NOT_CHARSETS or not _decodes_text(info.name):
        return None
    return "utf-8" if info.name in _UTF8_NAMES else info.name


def _decodes_text(name: str) -> bool:
    """Whether ``bytes.decode`` takes the codec ``name``: it refuses, with LookupError,
    the registered codecs that are not text encodings (rot13, base64, zip, hex).  (An
    empty body is decoded without a look at the codec: hence a byte.)"""
    try:
        b"a".decode(name, "ignore")
    except LookupError:
        return False
    except ValueError:  # a text encoding that will not take this byte or handler
        pass
    return True


def _cap(body: bytes, max_bytes: int, unit: int = 1) -> tuple[bytes, bool]:
    if len(body) <= max_bytes:
        return body, False
    return body[: max_bytes - max_bytes % unit], True


#: A codec error handler: each byte that does not decode becomes ``%XX``, as Google's
#: reference escapes it in a pattern (``Disallow: /caf\xe9`` matches ``/caf%E9``).
ESCAPE_INVALID = "robotgate.escape"


def _escape_invalid(exc: UnicodeError) -> tuple[str, int]:
    if not isinstance(exc, UnicodeDecodeError):
        raise exc
    return "".join(f"%{b:02X}" for b in exc.object[exc.start:exc.end]), exc.end


codecs.register_error(ESCAPE_INVALID, _escape_invalid)


#: Runs of the bytes ``surrogateescape`` set aside (as U+DC80 to U+DCFF).
_SET_ASIDE = re.compile("[\udc80-\udcff]+")


def _percent_escaped(run: re.Match[str]) -> str:
    """A run of bytes set aside, as :data:`ESCAPE_INVALID` writes it: ``%XX`` a byte."""
    return "%" + run[0].encode("utf-8", "surrogateescape").hex("%").upper()


def _utf8(body: bytes, max_bytes: int, errors: str) -> str:
    """UTF-8 with a BOM dropped and invalid bytes replaced (or by ``errors``)."""
    if len(body) > max_bytes:
        body = whole_lines(body[:max_bytes])
    if body[:3] == _UTF8_BOM:
        body = body[3:]
    if errors == ESCAPE_INVALID:
        # The handler is a Python call a bad byte (8,534 in one icon served as robots.txt):
        # the bytes are set aside in C, then written as %XX a run.  UTF-8 decodes to no
        # surrogate, and a byte it cannot decode is never ASCII (which surrogateescape keeps).
        try:
            return body.decode("utf-8")
        except UnicodeDecodeError:
            return _SET_ASIDE.sub(_percent_escaped, body.decode("utf-8", "surrogateescape"))
    return body.decode("utf-8", errors)


def decode_body(body: bytes, content_type: str | None, max_bytes: int,
                errors: str = "replace") -> str:
    """The text of a robots.txt response body, for either dialect; never raises.

    * Only the first ``max_bytes`` octets are read, and a last line cut by
      that limit is dropped (a cut ``Allow: /private/press`` would read
      ``Allow: /pri``).
    * A byte order mark decides the encoding (UTF-8, UTF-16 or UTF-32) and is
      dropped, whatever the Content-Type says (as WHATWG decoding does).
    * Otherwise the Content-Type's ``charset`` is used, when it names a text
      encoding Python has; UTF-8 otherwise (unknown names, ``idna``,
      ``punycode``, ``undefined``, ``utf-7``, ``rot13``, ``base64``...).  Bytes that do
      not decode are replaced with U+FFFD, or as the codec error handler ``errors``
      says (:data:`ESCAPE_INVALID`, the RFC 9309 dialect's reading: ``%XX``).
    * A declared charset is trusted only if it yields robots.txt lines: when
      its text has no ``User-agent``, ``Allow``, ``Disallow``, ``Sitemap`` or
      ``Crawl-delay`` line while the UTF-8 reading has one, the UTF-8 reading
      is used (``charset=utf-16`` on an ASCII file would otherwise lose every
      rule and allow the whole site).
    """
    max_bytes = max(max_bytes, 0)
    if body[:3] == _UTF8_BOM:
        return _utf8(body, max_bytes, errors)
    head = body[:4]
    if head[:2] in _UTF16_BOMS:
        # UTF-32's little-endian BOM starts like UTF-16's: test it first.
        return _declared(body, _UTF32_BOMS.get(head) or _UTF16_BOMS[head[:2]], max_bytes,
                         errors)
    if head == b"\x00\x00\xfe\xff":
        return _declared(body, "utf-32-be", max_bytes, errors)
    charset = charset_of(content_type)
    codec = None if charset is None else _text_codec(charset)
    if codec is None or codec == "utf-8":
        return _utf8(body, max_bytes, errors)
    return _declared(body, codec, max_bytes, errors)


def _declared(body: bytes, codec: str, max_bytes: int, errors: str) -> str:
    """``body`` read in a declared encoding, or as UTF-8 if that yields no robots.txt line."""
    wide = 4 if codec.startswith("utf-32") else 2 if codec.startswith("utf-16") else 1
    raw, cut = _cap(body, max_bytes, wide)
    try:
        text = raw.decode(codec, errors)
    except Exception:  # a codec may raise anything on hostile bytes
        return _utf8(body, max_bytes, errors)
    if cut:
        text = whole_lines(text)
    if text[:1] == "\ufeff":
        text = text[1:]
    if _KNOWN_LINE.search(text) is None:
        fallback = _utf8(body, max_bytes, errors)
        if _KNOWN_LINE.search(fallback) is not None:
            return fallback
    return text


def body_text(body: str | bytes | bytearray | memoryview, max_bytes: int,
              errors: str = "replace") -> str:
    """What a parser reads of a body given without a Content-Type.

    Bytes are decoded as :func:`decode_body` does with no charset declared.
    Text is cut to ``max_bytes`` UTF-8 octets at a whole line, and a leading
    BOM dropped.
    """
    max_bytes = max(max_bytes, 0)
    if isinstance(body, (bytes, bytearray, memoryview)):
        raw = bytes(body)
        if raw[:2] in _UTF16_BOMS or raw[:4] == b"\x00\x00\xfe\xff":
            return decode_body(raw, None, max_bytes, errors)
        return _utf8(raw, max_bytes, errors)
    text = body[:max_bytes]
    if len(text) > max_bytes >> 2 and not text.isascii():
        # The limit counts UTF-8 octets, as for bytes.
        text = cut_utf8(text, max_bytes)
    if len(text) < len(body):
        text = whole_lines(text)
    if text[:1] == "\ufeff":
        text = text[1:]
    return text


def whole_lines(cut: _Text) -> _Text:
    """A body cut at the size limit, without its last, partial line.

    A cut ``Allow: /private/press`` would read ``Allow: /pri`` and allow more
    than the site wrote, so an unterminated last line is dropped.
    """
    nl, cr = ("\n", "\r") if isinstance(cut, str) else (b"\n", b"\r")
    end = max(cut.rfind(nl), cut.rfind(cr))
    return cut[: end + 1]


def cut_utf8(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` UTF-8 octets, at a character boundary."""
    raw = text.encode("utf-8", "surrogatepass")
    if len(raw) <= limit:
        return text
    while limit > 0 and (raw[limit] & 0xC0) == 0x80:
        limit -= 1
    return raw[:limit].decode("utf-8", "surrogatepass")
