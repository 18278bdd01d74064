"""What a page says to robots: ``X-Robots-Tag``, robots meta tags, AI opt-outs and TDMRep.

Read from a response's headers and the head of its HTML body:

* ``X-Robots-Tag`` in Google's syntax (``noindex, nofollow``,
  ``googlebot: nofollow``, ``unavailable_after: 25 Jun 2010 15:00:00 PST``),
  and ``Robots-Tag`` as ``draft-illyes-repext`` writes it, a structured list of
  product tokens whose parameters are the rules (``*;noindex;nosnippet, ExampleBot;``);
  an ``X-Robots-Tag`` value holding a ``;`` is read that way too;
* ``<meta name="robots" content="...">`` and ``<meta name="TOKEN" ...>`` in the head;
* the W3C TDM Reservation Protocol's ``tdm-reservation`` / ``tdm-policy``
  headers and meta tags (the site-wide ``/.well-known/tdmrep.json`` is
  :mod:`robotgate.robots.tdmrep`'s).

Directives naming another robot are not this robot's; directives for all robots
and for this one combine, and the most restrictive wins (any ``noindex`` is
``noindex``; the earliest ``unavailable_after`` counts).  TDMRep follows its own
precedence: a meta tag supersedes the headers (W3C TDMRep, "Processing priority").

Bounded: at most :data:`MAX_FIELD_LINES` lines of a field, :data:`MAX_FIELD_BYTES`
of each, and :data:`MAX_HEAD_BYTES` of a body are read, in one pass without
backtracking, so hostile input gets an answer in time linear in those bounds.
Pure and synchronous; standard library only (and robotgate's pure helpers).
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime

from ..agents import product_token
from .usage import field_values

__all__ = [
    "FLAGS",
    "MAX_FIELD_BYTES",
    "MAX_FIELD_LINES",
    "MAX_HEAD_BYTES",
    "PageDirectives",
    "page_directives",
]

#: The directives kept as flags, in the order they are shown.
FLAGS: tuple[str, ...] = (
    "noindex", "nofollow", "noarchive", "nosnippet", "noimageindex", "noai", "noimageai",
)
# Directives that stand for others.  "nocache" is Bing's "noarchive".
_IMPLIES: dict[str, tuple[str, ...]] = {
    **{flag: (flag,) for flag in FLAGS},
    "none": ("noindex", "nofollow"),
    "nocache": ("noarchive",),
}
# Understood and restricting nothing: a source saying only these is still named.
_PERMISSIVE = frozenset({"all", "index", "follow", "archive", "snippet", "imageindex"})
# Directives written "name: value", so that their name is not taken for a robot's.
_VALUED = frozenset({"unavailable_after", "max-snippet", "max-image-preview",
                     "max-video-preview"})

#: Lines of one header field read (``X-Robots-Tag`` and the others each).
MAX_FIELD_LINES = 64
#: Bytes of one header line's value read; ``draft-illyes-repext`` asks for at least 8 KiB.
MAX_FIELD_BYTES = 16 * 1024
#: Bytes at the start of an HTML body searched for the head's meta tags.
MAX_HEAD_BYTES = 256 * 1024
# Sources named in an explanation, and characters of a value quoted there.
_MAX_SOURCES = 64
_MAX_QUOTE = 160
# Characters of a meta tag's attribute value kept, and of a date tried.
_MAX_VALUE = 4096
_MAX_DATE = 100
_MAX_POLICY = 2048

_OWS = " \t"
_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_HTML_SIGNS = (b"<!doctype html", b"<html", b"<head", b"<meta", b"<title", b"<body")
# Elements the head may hold (HTML "in head" insertion mode); any other start tag
# begins the body, and the search ends there.
_HEAD_ELEMENTS = frozenset({"html", "head", "meta", "link", "title", "style", "script",
                            "noscript", "base", "template", "basefont", "bgsound"})
# Elements whose content is text, not markup: skipped to their end tag.
_RAW_TEXT = ("script", "style", "title", "textarea", "template", "xmp")
_END_TAG = {name: re.compile(f"</{name}[\t\n\f\r />]", re.IGNORECASE) for name in _RAW_TEXT}
# Where markup starts: a "<" not followed by one of these is text.
_MARKUP_RE = re.compile(r"<[!?/A-Za-z]")
_TAG_NAME_RE = re.compile(r"[A-Za-z][^\t\n\f\r />]*")
_ATTR_NAME_RE = re.compile(r"[^\t\n\f\r />][^\t\n\f\r /=>]*")
_UNQUOTED_RE = re.compile(r"[^\t\n\f\r >]+")
_TOKEN_RE = re.compile(r"[a-z0-9_.-]+|\*")
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")
_WEEKDAYS = frozenset({"monday", "tuesday", "wednesday", "thursday", "friday", "saturday",
                       "sunday", "mon", "tue", "wed", "thu", "fri", "sat", "sun"})

Headers = Mapping[str, str] | Iterable[tuple[str, str]]


@dataclass(frozen=True, slots=True)
class PageDirectives:
    """What one page tells this robot, and where it says so.

    ``tdm_reservation``: ``True`` when text-and-data-mining rights are reserved,
    ``False`` when they are not, ``None`` when the page does not say;
    ``tdm_policy`` is the rightsholder's policy URL, left out when the page lifts
    the reservation (a page naming only a policy keeps it: it goes with the
    reservation of the site's tdmrep.json).
    ``sources`` names each header and tag read, e.g.
    ``"`X-Robots-Tag: mybot: nofollow` (header 2)"``.
    """

    noindex: bool = False
    nofollow: bool = False
    noarchive: bool = False
    nosnippet: bool = False
    noimageindex: bool = False
    noai: bool = False
    noimageai: bool = False
    unavailable_after: datetime | None = None
    tdm_reservation: bool | None = None
    tdm_policy: str | None = None
    sources: tuple[str, ...] = ()

    def flags(self) -> tuple[str, ...]:
        """The names of the directives in force, e.g. ``("noindex", "nofollow")``."""
        return tuple(name for name in FLAGS if getattr(self, name))

    def explain(self) -> str:
        """A few lines: the directives in force, TDMRep's answer, then each source."""
        flags = self.flags()
        lines = [f"directives: {', '.join(flags) if flags else 'none'}"]
        if self.unavailable_after is not None:
            lines.append(f"unavailable after: {self.unavailable_after.isoformat()}")
        if self.tdm_reservation is not None or self.tdm_policy:
            tdm = {True: "reserved", False: "not reserved", None: "reservation not stated"}[
                self.tdm_reservation]
            if self.tdm_policy:
                tdm += f", policy {self.tdm_policy}"
            lines.append(f"text and data mining: {tdm}")
        lines.extend(f"  {source}" for source in self.sources)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.explain()

    def as_json(self) -> dict[str, object]:
        """JSON-ready: the directives in force (``true`` only), the date in ISO 8601,
        the TDMRep fields (``null`` when unsaid) and the sources."""
        out: dict[str, object] = {name: True for name in self.flags()}
        if self.unavailable_after is not None:
            out["unavailable_after"] = self.unavailable_after.isoformat()
        out["tdm_reservation"] = self.tdm_reservation
        out["tdm_policy"] = self.tdm_policy
        out["sources"] = list(self.sources)
        return out


def page_directives(
    headers: Headers | None,
    body: bytes | str | None = None,
    *,
    agent: str,
    content_type: str | None = None,
) -> PageDirectives:
    """The directives a response gives the robot ``agent`` (its product token or
    a whole User-Agent).

    ``headers``: a plain mapping, a multi-dict (every repeated line is read), or
    ``(name, value)`` pairs.  ``body`` is searched as HTML when ``content_type`` is
    HTML, or absent and the body starts like HTML; only its head is read.

    >>> page_directives({"X-Robots-Tag": "none"}, agent="MyBot/1.0").flags()
    ('noindex', 'nofollow')
    >>> page_directives([("X-Robots-Tag", "otherbot: noindex")], agent="MyBot").flags()
    ()
    """
    reader = _Reader(product_token(agent))
    if headers is not None:
        reader.read_headers(headers)
    if body is not None:
        data = _head_bytes(body)
        if _is_html(content_type, data):
            reader.read_html(data)
    return reader.result()


# -- reading -------------------------------------------------------------------


class _Reader:
    """Gathers what the sources say; :meth:`result` combines it."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.flags: set[str] = set()
        self.until: datetime | None = None
        self.sources: list[str] = []
        self.dropped = 0
        # TDMRep by technique: the headers' answer, then the meta tags'.
        self.tdm: dict[str, list[bool]] = {"header": [], "meta": []}
        self.policy: dict[str, str] = {}

    def note(self, text: str) -> None:
        if len(self.sources) < _MAX_SOURCES:
            self.sources.append(text)
        else:
            self.dropped += 1

    def read_headers(self, headers: Headers) -> None:
        for name in ("X-Robots-Tag", "Robots-Tag"):
            structured = name == "Robots-Tag"
            for n, value in _lines(headers, name):
                where = f"`{name}: {_quote(value)}` (header {n})"
                if structured or ";" in value:
                    said = _structured_rules(value)
                else:
                    said = _legacy_rules(value)
                self.apply(said, where)
        for n, value in _lines(headers, "tdm-reservation"):
            self.tdm_value(value, f"`tdm-reservation: {_quote(value)}` (header {n})", "header")
        for n, value in _lines(headers, "tdm-policy"):
            self.tdm_policy(value, f"`tdm-policy: {_quote(value)}` (header {n})", "header")

    def read_html(self, data: bytes) -> None:
        for offset, name, content in _head_metas(data):
            where = f"`<meta name={_attr(name)} content={_attr(content)}>` at byte {offset}"
            key = name.strip().lower()
            if key == "tdm-reservation":
                self.tdm_value(content, where, "meta")
            elif key == "tdm-policy":
                self.tdm_policy(content, where, "meta")
            elif key == "robots":
                self.apply(_legacy_rules(content), where)
            elif self.token and key == self.token:
                self.apply([(self.token, d, v) for _, d, v in _legacy_rules(content)], where)

    def apply(self, said: list[tuple[str | None, str, str]], where: str) -> None:
        """Take the rules for all robots (``None``, ``*``) and for this one."""
        mine = [(d, v) for who, d, v in said if who in (None, "*") or who == self.token]
        known = False
        for directive, value in mine:
            if directive in _IMPLIES:
                self.flags.update(_IMPLIES[directive])
                known = True
            elif directive == "unavailable_after":
                when = _parse_date(value)
                if when is None:
                    self.note(f"{where}: date {_quote(value)} not understood, ignored")
                    continue
                if self.until is None or when < self.until:
                    self.until = when
                known = True
            elif directive in _PERMISSIVE or directive in _VALUED:
                known = True
        if known:
            self.note(where)

    def tdm_value(self, value: str, where: str, technique: str) -> None:
        # Lines a proxy joined with commas ("1, 1") are read each.
        said = [v.strip(_OWS) for v in value.split(",")]
        if all(v in ("0", "1") for v in said):
            self.tdm[technique].extend(v == "1" for v in said)
            self.note(where)
        else:
            self.note(f"{where}: not 0 or 1, ignored (W3C TDMRep)")

    def tdm_policy(self, value: str, where: str, technique: str) -> None:
        text = value.strip(_OWS)
        if not text or len(text) > _MAX_POLICY or _CONTROL_RE.search(text) or " " in text:
            self.note(f"{where}: not a URL, ignored")
            return
        self.policy.setdefault(technique, text)
        self.note(where)

    def result(self) -> PageDirectives:
        reserved: bool | None = None
        policy: str | None = None
        # A technique read later supersedes an earlier one; one saying nothing
        # leaves the answer as it was (W3C TDMRep, "Processing priority").
        for technique in ("header", "meta"):
            said = self.tdm[technique]
            if said:
                reserved = any(said)  # one technique's own lines: the most restrictive
            policy = self.policy.get(technique, policy)
        sources = list(self.sources)
        if self.dropped:
            sources.append(f"... and {self.dropped} more")
        flags = self.flags
        return PageDirectives(
            noindex="noindex" in flags,
            nofollow="nofollow" in flags,
            noarchive="noarchive" in flags,
            nosnippet="nosnippet" in flags,
            noimageindex="noimageindex" in flags,
            noai="noai" in flags,
            noimageai="noimageai" in flags,
            unavailable_after=self.until,
            tdm_reservation=reserved,
            tdm_policy=None if reserved is False else policy,
            sources=tuple(sources),
        )


def _lines(headers: Headers, name: str) -> list[tuple[int, str]]:
    """The first lines of field ``name``, numbered from 1, each cut to the bound."""
    values = field_values(headers, name)[:MAX_FIELD_LINES]
    # A value that is no text (None in a hand-made mapping) says nothing.
    return [(n, v[:MAX_FIELD_BYTES]) for n, v in enumerate(values, 1) if isinstance(v, str)]


# -- header values ----------------------------------------------------------------


def _legacy_rules(value: str) -> list[tuple[str | None, str, str]]:
    """``(robot or None, directive, value)`` of a comma-separated list in Google's syntax.

    ``robot: directive`` names the robot the rest of the value is for;
    ``unavailable_after: DATE`` and the ``max-*: N`` directives are not robots.
    A date's own comma (``Wednesday, 03-Nov-10 15:00:00 GMT``) stays in the date.
    """
    out: list[tuple[str | None, str, str]] = []
    who: str | None = None
    pieces = value.split(",")
    i = 0
    while i < len(pieces):
        piece = pieces[i].strip(_OWS)
        i += 1
        head, colon, rest = piece.partition(":")
        key = head.strip(_OWS).lower()
        if colon and key not in _VALUED:
            if not _TOKEN_RE.fullmatch(key):
                continue  # neither a robot nor a directive
            who = key
            piece = rest.strip(_OWS)
            head, colon, rest = piece.partition(":")
            key = head.strip(_OWS).lower()
        arg = rest.strip(_OWS)
        if key == "unavailable_after" and arg.lower() in _WEEKDAYS and i < len(pieces):
            arg = f"{arg},{pieces[i]}".strip(_OWS)
            i += 1
        if key:
            out.append((who, key, arg))
    return out


def _structured_rules(value: str) -> list[tuple[str | None, str, str]]:
    """``(robot, rule, value)`` of a ``Robots-Tag`` list: ``*;noindex;nosnippet, ExampleBot;``.

    Each member is a product token (or ``*``) whose parameters are its rules.
    Read leniently: a member that is no token is skipped, not the whole field.
    """
    out: list[tuple[str | None, str, str]] = []
    for member in _split_outside_quotes(value, ","):
        item, *params = _split_outside_quotes(member, ";")
        who = item.strip(_OWS).strip('"').lower()
        if not _TOKEN_RE.fullmatch(who):
            continue
        for param in params:
            key, _, arg = param.partition("=")
            key = key.strip(_OWS).lower()
            if key:
                out.append((who, key, arg.strip(_OWS).strip('"')))
    return out


def _split_outside_quotes(text: str, sep: str) -> list[str]:
    """``text`` split at ``sep``, except inside a double-quoted string."""
    if '"' not in text:
        return text.split(sep)
    parts: list[str] = []
    start = 0
    quoted = False
    for i, c in enumerate(text):
        if c == '"':
            quoted = not quoted
        elif c == sep and not quoted:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def _parse_date(text: str) -> datetime | None:
    """An ``unavailable_after`` date: RFC 822/850/1123 or ISO 8601, in UTC.

    A date without a zone is taken as UTC.
    """
    text = text.strip(_OWS)
    if not text or len(text) > _MAX_DATE:
        return None
    when: datetime | None = None
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        try:
            when = datetime.fromisoformat(text)
        except ValueError:
            return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    try:
        return when.astimezone(timezone.utc)
    except OverflowError:  # a zone pushing year 1 or 9999 out of range
        return None


# -- HTML ------------------------------------------------------------------------


def _head_bytes(body: bytes | str) -> bytes:
    if isinstance(body, str):
        body = body[:MAX_HEAD_BYTES].encode("utf-8", "replace")
    return bytes(body[:MAX_HEAD_BYTES])


def _is_html(content_type: str | None, data: bytes) -> bool:
    if content_type:
        return content_type.split(";", 1)[0].strip(_OWS).lower() in _HTML_TYPES
    start = data[:1024].lower()
    if not start.lstrip(b"\xef\xbb\xbf \t\r\n\f").startswith(b"<"):
        return False
    return any(sign in start for sign in _HTML_SIGNS)


def _head_metas(data: bytes) -> list[tuple[int, str, str]]:
    """``(byte offset, name, content)`` of each ``<meta name=... content=...>`` in the head.

    A single forward pass: comments, doctypes and the text of ``script``,
    ``style``, ``title`` (and the like) are skipped; the head ends at ``</head>``,
    ``<body>`` or any element the head cannot hold; an unterminated tag,
    comment or text element ends the search.
    """
    s = data.decode("latin-1")  # one character per byte: offsets are byte offsets
    found: list[tuple[int, str, str]] = []
    pos = 0
    while True:
        start = _MARKUP_RE.search(s, pos)
        if start is None:
            break
        lt = start.start()
        if s.startswith("<!--", lt):
            end = s.find("-->", lt + 4)
            if end < 0:
                break
            pos = end + 3
            continue
        closing = s.startswith("</", lt)
        m = _TAG_NAME_RE.match(s, lt + 2 if closing else lt + 1)
        if m is None:  # "<!doctype", "<?xml", or a bogus comment such as "</ x>"
            end = s.find(">", lt + 2)
            if end < 0:
                break
            pos = end + 1
            continue
        name = m.group().lower()
        attrs, pos = _attributes(s, m.end())
        if pos < 0:
            break
        if closing:
            if name == "head":
                break
            continue
        if name not in _HEAD_ELEMENTS:
            break
        if name == "meta" and "name" in attrs:
            found.append((lt, _text(attrs["name"]), _text(attrs.get("content", ""))))
        elif name in _END_TAG:
            end_tag = _END_TAG[name].search(s, pos)
            if end_tag is None:
                break
            pos = end_tag.start()
    return found


def _attributes(s: str, i: int) -> tuple[dict[str, str], int]:
    """A start tag's attributes from ``i`` on, and where the tag ends (-1: it does not)."""
    attrs: dict[str, str] = {}
    n = len(s)
    while True:
        i = _skip_space(s, i)
        if i >= n:
            return attrs, -1
        c = s[i]
        if c == ">":
            return attrs, i + 1
        if c == "/":
            i += 1
            continue
        m = _ATTR_NAME_RE.match(s, i)
        if m is None:  # cannot happen: c is no space, "/" or ">"
            return attrs, -1
        name = m.group().lower()
        i = _skip_space(s, m.end())
        value = ""
        if i < n and s[i] == "=":
            i = _skip_space(s, i + 1)
            if i < n and s[i] in "\"'":
                end = s.find(s[i], i + 1)
                if end < 0:
                    return attrs, -1
                value = s[i + 1 : end]
                i = end + 1
            else:
                m = _UNQUOTED_RE.match(s, i)
                if m is not None:
                    value = m.group()
                    i = m.end()
        attrs.setdefault(name, value[:_MAX_VALUE])  # the first of a repeated attribute counts


def _skip_space(s: str, i: int) -> int:
    while i < len(s) and s[i] in "\t\n\f\r ":
        i += 1
    return i


def _text(raw: str) -> str:
    """An attribute value as the page means it: UTF-8, character references decoded."""
    text = raw.encode("latin-1").decode("utf-8", "replace")
    return html.unescape(text) if "&" in text else text


# -- explanations ------------------------------------------------------------------


def _quote(value: str) -> str:
    """``value`` fit to quote on one line: control characters shown, long values cut."""
    text = value if len(value) <= _MAX_QUOTE else value[:_MAX_QUOTE] + "..."
    if _CONTROL_RE.search(text):
        text = _CONTROL_RE.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
    return text


def _attr(value: str) -> str:
    """An attribute value as written in a quoted tag: bare when it can be."""
    text = _quote(value)
    if text and not re.search(r"[\s\"'=<>`]", text):
        return text
    return '"' + text.replace('"', "&quot;") + '"'
