"""robots.txt bodies to text: charsets, BOMs and the size cap (robotgate.robots.body).

Issue 12 items 2 and 3.  Before, the gate re-encoded a body by its declared
charset with ``body.decode(charset, "replace")``, catching only LookupError:
``charset=idna`` or ``undefined`` raised UnicodeError on every question about
the origin, and ``charset=utf-16`` (or ``utf-32``, ``punycode``) on ASCII bytes
turned every line into CJK or replacement characters, so the site counted as
fully allowed.  ``decode_body`` is the one place bytes become text now.
"""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from robotgate import RobotsTxt
from robotgate.robots.body import (
    DEFAULT_MAX_BYTES,
    ESCAPE_INVALID,
    body_text,
    charset_of,
    decode_body,
)

BODY = b"User-agent: *\nDisallow: /private\nAllow: /private/press\n"
URL = "http://example.com/robots.txt"

# Declared charsets a server may send that must not be used as such.
HOSTILE = [
    "idna",
    "undefined",
    "punycode",
    "utf-7",
    "unicode_escape",
    "raw_unicode_escape",
    "rot13",
    "rot_13",
    "base64",
    "base64_codec",
    "zip",
    "zlib",
    "bz2",
    "hex",
    "uu",
    "quopri",
    "no-such-charset",
    "utf-8\x00",
    "x" * 5000,
    "é",
    "",
]
# Declared charsets that decode, but not these ASCII bytes into robots.txt lines.
MISFITS = ["utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-be", "cp500", "cp037"]


def _rules_hold(text: str) -> None:
    for dialect in ("rfc9309", "classic"):
        rules = RobotsTxt.parse(text, dialect=dialect, url=URL)
        assert not rules.allowed("http://example.com/private/x", "FooBot"), dialect


@pytest.mark.parametrize("charset", HOSTILE)
def test_unusable_charset_falls_back_to_utf8(charset: str) -> None:
    text = decode_body(BODY, f"text/plain; charset={charset}", DEFAULT_MAX_BYTES)
    assert text == BODY.decode()
    _rules_hold(text)


@pytest.mark.parametrize("charset", MISFITS)
def test_charset_that_yields_no_robots_line_falls_back_to_utf8(charset: str) -> None:
    text = decode_body(BODY, f"text/plain; charset={charset}", DEFAULT_MAX_BYTES)
    assert text == BODY.decode()
    _rules_hold(text)


@pytest.mark.parametrize("charset", ["utf-16", "utf-16-be", "utf-32", "cp500", "cp1252"])
def test_a_declared_charset_that_fits_is_used(charset: str) -> None:
    source = "User-agent: *\nDisallow: /café\n"
    raw = source.encode(charset)
    text = decode_body(raw, f"text/plain; charset={charset}", DEFAULT_MAX_BYTES)
    assert text == source
    rules = RobotsTxt.parse(text)
    assert not rules.allowed("/caf%C3%A9", "FooBot")


def test_latin1_paths_are_read_by_their_charset() -> None:
    raw = "User-agent: *\nDisallow: /ä\n".encode("latin-1")
    text = decode_body(raw, "text/plain; charset=ISO-8859-1", DEFAULT_MAX_BYTES)
    assert text == "User-agent: *\nDisallow: /ä\n"
    # Read as UTF-8, the lone 0xE4 would be U+FFFD and match another path.
    assert decode_body(raw, None, DEFAULT_MAX_BYTES) == "User-agent: *\nDisallow: /\ufffd\n"


def test_a_file_without_rules_keeps_its_declared_charset() -> None:
    # No known line either way: nothing to prefer, the declaration stands.
    raw = "# nothing here\n".encode("utf-16-le")
    assert decode_body(raw, "text/plain; charset=utf-16-le", 100) == "# nothing here\n"


@pytest.mark.parametrize(
    ("content_type", "charset"),
    [
        ("text/plain; charset=utf-8", "utf-8"),
        ('text/plain; Charset="ISO-8859-1"', "iso-8859-1"),
        ("text/plain;CHARSET = 'Windows-1252' ", "windows-1252"),
        ("text/plain; format=flowed; charset=latin1; delsp=yes", "latin1"),
        ('text/plain; foo="a;charset=x"; charset=latin1', "latin1"),
        ('text/plain; charset="utf\\-8"', "utf-8"),
        ("text/plain; charset=latin1; charset=utf-16", "latin1"),  # the first counts
        ('text/plain; charset="koi8-r', "koi8-r"),  # unterminated quote
        ("text/plain;;; ;charset=koi8-r", "koi8-r"),
        ("text/plain; charset=", None),
        ("text/plain; charset=\"\"", None),
        ("text/plain; charset", None),
        ("text/plain", None),
        ("charset=latin1", None),  # no media type: no parameters
        ("", None),
        (None, None),
        ("text/plain; charset=" + "x" * 41, None),
        ("text/plain; charset=utf-ä", None),
        ("text/plain; charsets=latin1", None),
        ("text/plain; xcharset=latin1", None),
    ],
)
def test_charset_parameter(content_type: str | None, charset: str | None) -> None:
    assert charset_of(content_type) == charset


def test_bom_decides_the_encoding() -> None:
    utf8 = b"\xef\xbb\xbf" + BODY
    assert decode_body(utf8, "text/plain; charset=latin-1", 1000) == BODY.decode()
    le = "\ufeffUser-agent: *\nDisallow: /ü\n".encode("utf-16-le")
    assert decode_body(le, None, 1000) == "User-agent: *\nDisallow: /ü\n"
    assert body_text(le, 1000) == "User-agent: *\nDisallow: /ü\n"
    be = "\ufeffUser-agent: *\nDisallow: /ü\n".encode("utf-16-be")
    assert decode_body(be, "text/plain; charset=latin1", 1000) == "User-agent: *\nDisallow: /ü\n"
    assert not RobotsTxt.parse(be).allowed("/%C3%BC", "FooBot")
    for codec in ("utf-32-le", "utf-32-be"):
        raw = "\ufeffUser-agent: *\nDisallow: /ü\n".encode(codec)
        assert decode_body(raw, None, 1000) == "User-agent: *\nDisallow: /ü\n", codec


@pytest.mark.parametrize("charset", [None, "latin1", "utf-16-le", "utf-16-be", "utf-32-le"])
def test_cap_cuts_at_a_whole_line(charset: str | None) -> None:
    source = "User-agent: *\nDisallow: /a\nAllow: /private/press\n"
    codec = charset or "utf-8"
    raw = source.encode(codec)
    unit = len("x".encode(codec))
    # Cut inside the last line: "Allow: /pri" must not survive.
    limit = len("User-agent: *\nDisallow: /a\nAllow: /pri".encode(codec)) + unit // 2
    ct = f"text/plain; charset={charset}" if charset else None
    assert decode_body(raw, ct, limit) == "User-agent: *\nDisallow: /a\n"
    assert decode_body(raw, ct, len(raw)) == source
    assert decode_body(raw, ct, 0) == ""
    assert decode_body(raw, ct, -5) == ""


def test_bytes_that_do_not_decode_can_be_escaped() -> None:
    raw = b"User-agent: *\nDisallow: /caf\xe9/\xff\xfe\n"
    assert decode_body(raw, None, 100, ESCAPE_INVALID) == (
        "User-agent: *\nDisallow: /caf%E9/%FF%FE\n")
    assert decode_body(raw, "text/plain; charset=utf-16-le", 100, ESCAPE_INVALID) == (
        "User-agent: *\nDisallow: /caf%E9/%FF%FE\n")  # no robots.txt line as UTF-16: UTF-8
    assert decode_body(raw, None, 100) == "User-agent: *\nDisallow: /caf\ufffd/\ufffd\ufffd\n"


def test_no_charset_is_the_rfc_reading() -> None:
    # Unchanged: UTF-8, BOM dropped, invalid bytes replaced, cut at a whole line.
    raw = b"\xef\xbb\xbfUser-agent: *\nDisallow: /\xff\nDisallow: /b\n"
    assert decode_body(raw, None, 10**6) == "User-agent: *\nDisallow: /\ufffd\nDisallow: /b\n"
    assert decode_body(raw, "text/plain", 30) == "User-agent: *\nDisallow: /\ufffd\n"
    assert decode_body(raw, None, 30) == body_text(raw, 30)


_CONTENT_TYPES = st.one_of(
    st.none(),
    st.text(max_size=60),
    st.builds(
        lambda cs, q: f"text/plain; charset={q}{cs}{q}",
        st.sampled_from(HOSTILE + MISFITS + ["utf-8", "latin1", "shift_jis", "gb18030", "cp1252"]),
        st.sampled_from(["", '"', "'"]),
    ),
)


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(body=st.binary(max_size=300), content_type=_CONTENT_TYPES, max_bytes=st.integers(-5, 400))
def test_never_raises_and_stays_within_the_cap(
    body: bytes, content_type: str | None, max_bytes: int
) -> None:
    text = decode_body(body, content_type, max_bytes)
    assert isinstance(text, str)
    assert len(text) <= max(max_bytes, 0)  # every encoding here spends >= 1 octet a character
    RobotsTxt.parse(text)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(body=st.binary(max_size=200), max_bytes=st.integers(0, 250))
def test_without_charset_bytes_read_as_before(body: bytes, max_bytes: int) -> None:
    # The decoding RobotsTxt.parse always did (UTF-16 and UTF-32 BOMs aside, new).
    if body[:2] in (b"\xff\xfe", b"\xfe\xff") or body[:4] == b"\x00\x00\xfe\xff":
        return
    cut = body
    if len(cut) > max_bytes:
        cut = cut[:max_bytes]
        cut = cut[: max(cut.rfind(b"\n"), cut.rfind(b"\r")) + 1]
    if cut[:3] == b"\xef\xbb\xbf":
        cut = cut[3:]
    assert decode_body(body, None, max_bytes) == cut.decode("utf-8", "replace")
    assert body_text(body, max_bytes) == cut.decode("utf-8", "replace")


@pytest.mark.parametrize("charset", ["idna", "utf-16", "utf-32", "cp500", "gb18030", "undefined"])
def test_big_hostile_bodies_decode_quickly(charset: str) -> None:
    body = (b"Disallow: /" + b"\xe9\xff\x00a" * 40 + b"\n") * 4000  # ~700 KB, over the cap
    start = time.monotonic()
    text = decode_body(body, f"text/plain; charset={charset}", DEFAULT_MAX_BYTES)
    RobotsTxt.parse(text)
    assert time.monotonic() - start < 10  # a hang guard, not a timing
    assert len(text) <= DEFAULT_MAX_BYTES
