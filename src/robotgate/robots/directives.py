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
import sys
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
# The head's markup, read as bytes (offsets are byte offsets) by compiled patterns: one
# pattern passes over everything the head may hold that is no meta tag, and stops at a
# meta tag or at what ends the search.  Each part of a pattern matches in one way only,
# so that markup never closed fails in time linear in its length.
# A repetition that gives nothing back: possessive ("*+", "++") where Python has it (3.11);
# the patterns match one way only, so that it changes how much the engine keeps (and how
# many steps it takes), not what matches.  Python 3.10 reads them as greedy ones.
_REPEATED = rb"*+"


def _compile(pattern: bytes) -> re.Pattern[bytes]:
    if sys.version_info < (3, 11):
        pattern = pattern.replace(b"*+", b"*").replace(b"++", b"+")
    return re.compile(pattern)


_NAME_END = rb"(?![^\t\n\f\r />])"  # a tag's name runs to a space, "/" or ">"
# An attribute: its name, then "=" and a value (quoted, or up to a space or ">").
_ATTRIBUTE = (
    rb"[^\t\n\f\r />][^\t\n\f\r /=>]*(?![^\t\n\f\r /=>])"
    rb"(?:[\t\n\f\r ]*=[\t\n\f\r ]*(?![\t\n\f\r ])"
    rb"""(?:"[^"]*"|'[^']*'|[^\t\n\f\r >"'][^\t\n\f\r >]*(?![^\t\n\f\r >])|(?=>))"""
    rb"|(?![\t\n\f\r ]*=))"
)
# Attributes, and the spaces and "/" around them (each run of those taken whole).
_ATTRIBUTES = rb"[\t\n\f\r /]*(?:" + _ATTRIBUTE + rb"[\t\n\f\r /]*)*"
# The rest of a tag as most are written: no "<" in it, and each quote opening a value right
# after an "=" that ends an attribute's name.  _ATTRIBUTES reads such a tag to the same ">",
# in more steps; any other tag is left to it.
_TAG_END = (rb"""(?:[^>"'=<]*+(?:=(?<=[-\w:.]=)(?:"[^"]*+"|'[^']*+')[^>"'=<]*+)*+>"""
            rb"|" + _ATTRIBUTES + rb">)")
# Elements the head may hold (HTML "in head" insertion mode) besides meta: any other
# start tag begins the body, and the search ends there.
_HEAD_TAGS = (b"html", b"head", b"link", b"noscript", b"base", b"basefont", b"bgsound")
# Elements of the head whose content is text, not markup: passed with their end tag.
_RAW_TEXT = (b"script", b"style", b"title", b"template")
# What str.strip() takes from an ASCII name before it is compared.
_STRIPPED = rb"[\t\n\x0b\x0c\r\x1c-\x1f ]*+"


def _no_case(name: bytes) -> bytes:
    """A pattern for the ASCII ``name`` in any case, its first letter a set ("[Mm](?i:eta)"):
    an alternative starting with a set or a plain byte is skipped at once when the byte
    differs, one starting with a case-blind byte is entered and tried."""
    first = name[:1]
    return rb"[" + first.upper() + first.lower() + rb"](?i:" + name[1:] + rb")"


def _passing_pattern(token: str) -> re.Pattern[bytes]:
    """The pattern passing over what the head holds up to the first meta tag that may
    say something to the robot ``token``, or what ends the head.  It passes a meta tag
    written simply whose name is plain ASCII and none read (``robots``, TDMRep's, the
    robot's token); the tags it stops at are read whole (:meth:`_Reader.read_html`)."""
    names = [b"robots", b"tdm-reservation", b"tdm-policy"]
    if token:
        names.append(re.escape(token.encode("utf-8")))
    unread = (rb"(?!" + _STRIPPED + rb"(?i:" + b"|".join(names) + rb")" + _STRIPPED
              + rb"[\"'])")
    # A meta tag written simply (names of letters, digits and "-_:.", values quoted, spaces
    # between) whose names are plain ASCII, none of them one that is read.
    meta_unread = (
        _no_case(b"meta") + rb"""(?:[\t\n\f\r ]++(?:[Nn](?i:ame)=(?:"(?=[^"&\x80-\xff]*+")"""
        + unread + rb"""[^"]*+"|'(?=[^'&\x80-\xff]*+')""" + unread + rb"""[^']*+')"""
        rb"""|(?!(?i:name)=)[A-Za-z_:][-A-Za-z0-9_:.]*+(?:="[^"]*+"|='[^']*+'|)))"""
        + _REPEATED + rb"[\t\n\f\r ]*+/?>")
    return _compile(
        rb"(?:<(?:"
        + meta_unread
        + b"".join(rb"|" + _no_case(name) + _NAME_END + _TAG_END for name in _HEAD_TAGS)
        + b"".join(
            rb"|" + _no_case(name) + _NAME_END + _TAG_END
            + rb"[^<]*+(?:<(?!/(?i:" + name + rb")[\t\n\f\r />])[^<]*+)" + _REPEATED
            + rb"</(?i:" + name + rb")(?=[\t\n\f\r />])" + _TAG_END  # its end tag
            for name in _RAW_TEXT)
        + rb"|/(?:(?!(?i:head)" + _NAME_END + rb")[A-Za-z][^\t\n\f\r />]*+" + _NAME_END
        + _TAG_END  # an end tag other than </head>
        + rb"|(?![A-Za-z])[^>]*+>)"  # "</ x>": a bogus comment
        + rb"|!(?:--[^-]*+(?:-(?!->)[^-]*+)" + _REPEATED + rb"-->|(?!--)[^>]*+>)"  # a comment
        rb"|\?[^>]*+>"  # "<?xml": a bogus comment
        rb"|(?![!?/A-Za-z])"  # a "<" that starts no markup is text
        # Possessive where Python has it (3.11): the same matches, without keeping every
        # token passed for a backtrack that cannot succeed.
        # The text after a tag in the same turn; text before the first tag last: an
        # alternative starting with a plain byte is skipped at once where that byte is not.
        + rb")[^<]*+|[^<]++)" + _REPEATED)


_ROBOTS: dict[str, tuple[str, re.Pattern[bytes]]] = {}


def _robot(agent: str) -> tuple[str, re.Pattern[bytes]]:
    """The product token of ``agent``, and the pattern passing over the head for it."""
    robot = _ROBOTS.get(agent)
    if robot is None:
        if len(_ROBOTS) >= 64:  # a few robots per process: a bound, not a cache policy
            _ROBOTS.clear()
        token = product_token(agent)
        robot = _ROBOTS[agent] = (token, _passing_pattern(token))
    return robot


# A meta tag: the fast form first (see _TAG_END), its attributes in group 1 or 2.
_META_TAG = _compile(
    rb"<(?i:meta)" + _NAME_END
    + rb"""(?:([^>"'=<]*+(?:=(?<=[-\w:.]=)(?:"[^"]*+"|'[^']*+')[^>"'=<]*+)*+)>"""
    + rb"|(" + _ATTRIBUTES + rb")>)")
# The attributes of a meta tag's fast form: a name, and a value quoted right after "=".
_QUOTED_ATTRIBUTE = re.compile(rb"""([^\t\n\f\r /=]+)(?:="([^"]*)"|='([^']*)'|)""")
# An attribute of any other meta tag: name, and its value in one of three groups.
_ATTRIBUTE_PARTS = re.compile(
    rb"([^\t\n\f\r />][^\t\n\f\r /=>]*)"
    rb"""(?:[\t\n\f\r ]*=[\t\n\f\r ]*(?:"([^"]*)"|'([^']*)'|([^\t\n\f\r >]*)))?""")
_TOKEN_RE = re.compile(r"[a-z0-9_.-]+|\*")
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")
# Every directive name read: a list starting with one is no structured Robots-Tag value.
_DIRECTIVES = frozenset({*_IMPLIES, *_PERMISSIVE, *_VALUED})
# The meta tag names read besides the robot's own product token.
_META_NAMES = frozenset({"robots", "tdm-reservation", "tdm-policy"})
_BARE_ATTRIBUTE_RE = re.compile(r"[\s\"'=<>`]")
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


_NOTHING = PageDirectives()


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
    token, passing = _robot(agent)
    reader = _Reader(token)
    if headers is not None:
        reader.read_headers(headers)
    if body is not None:
        data, end = _head_window(body)
        if _is_html(content_type, data):
            reader.read_html(_head_metas(data, end, passing))
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
        fields = _fields(headers)
        if not fields:
            return
        for name in ("X-Robots-Tag", "Robots-Tag"):
            structured = name == "Robots-Tag"
            for n, value in _lines(fields.get(name.lower(), [])):
                where = f"`{name}: {_quote(value)}` (header {n})"
                if structured or (";" in value and _names_a_robot_first(value)):
                    said = _structured_rules(value)
                else:
                    said, where = _legacy_rules(value), _semicolons_said(value, where)
                self.apply(said, where)
        for n, value in _lines(fields.get("tdm-reservation", [])):
            self.tdm_value(value, f"`tdm-reservation: {_quote(value)}` (header {n})", "header")
        for n, value in _lines(fields.get("tdm-policy", [])):
            self.tdm_policy(value, f"`tdm-policy: {_quote(value)}` (header {n})", "header")

    def read_html(self, metas: list[tuple[int, bytes, bytes]]) -> None:
        for offset, raw_name, raw_content in metas:
            name = _text(raw_name)
            key = name.strip().lower()
            if key not in _META_NAMES and not (self.token and key == self.token):
                continue  # the head's other metas say nothing to robots: not even decoded
            content = _text(raw_content)
            # Written only for the tags read: most of a head's metas say nothing to robots.
            where = f"`<meta name={_attr(name)} content={_attr(content)}>` at byte {offset}"
            if key == "tdm-reservation":
                self.tdm_value(content, where, "meta")
            elif key == "tdm-policy":
                self.tdm_policy(content, where, "meta")
            elif key == "robots":
                self.apply(_legacy_rules(content), _semicolons_said(content, where))
            else:
                self.apply([(self.token, d, v) for _, d, v in _legacy_rules(content)],
                           _semicolons_said(content, where))

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
        if not (self.sources or self.dropped or self.flags or self.until is not None
                or self.policy or self.tdm["header"] or self.tdm["meta"]):
            return _NOTHING  # immutable: one value serves every page that says nothing
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


# The fields read, by their lower-cased names.
_FIELD_NAMES = ("x-robots-tag", "robots-tag", "tdm-reservation", "tdm-policy")
_MULTI_DICT_METHODS = ("getall", "get_list", "getlist", "get_all")


def _fields(headers: Headers) -> dict[str, list[object]]:
    """The values of the fields read (lower-cased names), each in order; absent ones left out.

    A plain mapping, ``(name, value)`` pairs or httpx's ``Headers`` (``multi_items()``: each
    line) are gone through once; another multi-dict is asked for each field it holds (see
    :func:`~robotgate.robots.usage.field_values`).
    """
    out: dict[str, list[object]] = {}
    each_line = getattr(headers, "multi_items", None)
    if callable(each_line):  # cheaper than asking httpx's Headers for each field
        headers = each_line()
    elif any(hasattr(headers, method) for method in _MULTI_DICT_METHODS):
        for name in _FIELD_NAMES:
            try:
                present = name in headers
            except TypeError:  # a multi-dict that cannot tell: asked all the same
                present = True
            if present:
                values = field_values(headers, name)
                if values:
                    out[name] = list(values)
        return out
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    for key, value in pairs:
        name = (key.decode("latin-1") if isinstance(key, (bytes, bytearray)) else key).lower()
        if name in _FIELD_NAMES:
            out.setdefault(name, []).append(
                value.decode("latin-1") if isinstance(value, (bytes, bytearray)) else value)
    return out


def _lines(values: list[object]) -> list[tuple[int, str]]:
    """The first lines of a field, numbered from 1, each cut to the bound."""
    # A value that is no text (None in a hand-made mapping) says nothing.
    return [(n, v[:MAX_FIELD_BYTES]) for n, v in enumerate(values[:MAX_FIELD_LINES], 1)
            if isinstance(v, str)]


# -- header values ----------------------------------------------------------------


def _legacy_rules(value: str) -> list[tuple[str | None, str, str]]:
    """``(robot or None, directive, value)`` of a comma-separated list in Google's syntax.

    ``robot: directive`` names the robot the rest of the value is for;
    ``unavailable_after: DATE`` and the ``max-*: N`` directives are not robots.
    A date's own comma (``Wednesday, 03-Nov-10 15:00:00 GMT``) stays in the date.
    A semicolon separates as a comma does (``noindex; nofollow``): pages write it,
    and no directive's value holds one.
    """
    out: list[tuple[str | None, str, str]] = []
    who: str | None = None
    pieces = (value.replace(";", ",") if ";" in value else value).split(",")
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


def _semicolons_said(value: str, where: str) -> str:
    """``where``, saying so when the list's semicolons were read as commas."""
    return f"{where}, semicolons read as commas" if ";" in value else where


def _names_a_robot_first(value: str) -> bool:
    """Is an ``X-Robots-Tag`` value holding a ``;`` the structured form (``*;noindex``,
    ``mybot;nofollow``) rather than a list written with semicolons (``noindex; nofollow``)?
    The structured form starts with a robot: ``*`` or a product token naming no directive."""
    first = value.split(",", 1)[0].split(";", 1)[0].strip(_OWS).strip('"').lower()
    return first == "*" or (_TOKEN_RE.fullmatch(first) is not None and first not in _DIRECTIVES)


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


def _head_window(body: bytes | str) -> tuple[bytes, int]:
    """The body as bytes, and where its searched window ends (no copy of a bytes body)."""
    if isinstance(body, str):
        data = body[:MAX_HEAD_BYTES].encode("utf-8", "replace")
    elif isinstance(body, bytes):
        data = body
    else:
        data = bytes(body[:MAX_HEAD_BYTES])
    return data, min(len(data), MAX_HEAD_BYTES)


def _is_html(content_type: str | None, data: bytes) -> bool:
    if content_type:
        return content_type.split(";", 1)[0].strip(_OWS).lower() in _HTML_TYPES
    start = data[:1024].lower()
    if not start.lstrip(b"\xef\xbb\xbf \t\r\n\f").startswith(b"<"):
        return False
    return any(sign in start for sign in _HTML_SIGNS)


def _head_metas(data: bytes, end: int,
                passing: re.Pattern[bytes]) -> list[tuple[int, bytes, bytes]]:
    """``(byte offset, name, content)`` of the ``<meta name=... content=...>`` tags in the
    head (``data`` up to ``end``) that ``passing`` (a :func:`_passing_pattern`) does not
    pass over, as written: bytes, character references not decoded.

    A single forward pass: comments, doctypes and the text of ``script``,
    ``style``, ``title`` and ``template`` are passed over; the head ends at
    ``</head>``, ``<body>`` or any element the head cannot hold; an unterminated
    tag, comment or text element ends the search.
    """
    found: list[tuple[int, bytes, bytes]] = []
    passed = passing.match
    meta = _META_TAG.match
    pos = 0
    while True:
        pos = passed(data, pos, end).end()  # type: ignore[union-attr]  # it matches "" at worst
        # Only a meta tag lets the search go on: anything else the pattern stops at ends
        # the head, or is never closed.
        tag = meta(data, pos, end)
        if tag is None:
            return found
        if tag.start(1) >= 0:  # the fast form
            attributes = [(a, b or c) for a, b, c in _QUOTED_ATTRIBUTE.findall(
                data, tag.start(1), tag.end(1))]
        else:
            attributes = [(a, b or c or d) for a, b, c, d in _ATTRIBUTE_PARTS.findall(
                data, tag.start(2), tag.end(2))]
        name, content = _name_and_content(attributes)
        if name is not None:
            found.append((pos, name, content or b""))
        pos = tag.end()


def _name_and_content(
        attributes: Iterable[tuple[bytes, bytes]]) -> tuple[bytes | None, bytes | None]:
    """The first ``name`` and ``content`` of ``(attribute, value)`` pairs (the first of a
    repeated attribute counts), each value cut to :data:`_MAX_VALUE` bytes."""
    name: bytes | None = None
    content: bytes | None = None
    for attribute, value in attributes:
        key = attribute.lower()
        if key == b"name":
            if name is None:
                name = value[:_MAX_VALUE]
        elif key == b"content" and content is None:
            content = value[:_MAX_VALUE]
    return name, content


def _text(raw: bytes) -> str:
    """An attribute value as the page means it: UTF-8, character references decoded."""
    text = raw.decode("utf-8", "replace")
    return html.unescape(text) if "&" in text else text


# -- explanations ------------------------------------------------------------------


def _quote(value: str) -> str:
    """``value`` fit to quote on one line: control characters shown, long values cut."""
    text = value if len(value) <= _MAX_QUOTE else value[:_MAX_QUOTE] + "..."
    if not text.isprintable():  # control characters are not; most values are all printable
        text = _CONTROL_RE.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
    return text


def _attr(value: str) -> str:
    """An attribute value as written in a quoted tag: bare when it can be."""
    text = _quote(value)
    if text and not _BARE_ATTRIBUTE_RE.search(text):
        return text
    return '"' + text.replace('"', "&quot;") + '"'
