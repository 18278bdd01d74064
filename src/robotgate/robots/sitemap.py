"""The sitemaps protocol (sitemaps.org), read defensively: feed bytes, get entries.

Pure and synchronous, standard library only.  :class:`SitemapParser` takes a
sitemap's body in chunks as it arrives and gives the URLs of a ``<urlset>`` or
a text sitemap, or the child sitemaps of a ``<sitemapindex>``, with the
problems met on the way.  Whatever the bytes, it answers in bounded time and
memory and never raises:

* gzip is inflated here (a ``.xml.gz`` file has no Content-Encoding), never past
  the protocol's 50 MB uncompressed; a file stops at 50,000 URLs;
* XML is read by expat, incrementally, with every entity declaration refused
  (no entity expansion, no external entities, no network); a single token
  longer than :data:`MAX_TOKEN` (a comment, a tag) stops the read, as does
  nesting deeper than :data:`MAX_DEPTH`;
* a URL outside the sitemap's scope is dropped, as "Sitemap file location"
  says: a sitemap at ``/catalog/sitemap.xml`` may list URLs under
  ``/catalog/`` of its own origin, and one that a site's robots.txt names may
  list any URL of that site.

A broken file gives what could be read before the break, and says why it ended.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass
from datetime import timezone
from email.utils import parsedate_to_datetime
from xml.parsers import expat

from ..urls import InvalidURL, redact, split_origin

__all__ = [
    "MAX_BYTES",
    "MAX_DEPTH",
    "MAX_TOKEN",
    "MAX_URLS",
    "MAX_URL_LENGTH",
    "Scope",
    "SitemapEntry",
    "SitemapFile",
    "SitemapParser",
    "parse_sitemap",
]

#: The protocol's limits per file: URLs listed, and bytes uncompressed.
MAX_URLS = 50_000
MAX_BYTES = 50 * 1024 * 1024
#: The protocol's limit on a URL: "less than 2,048 characters".
MAX_URL_LENGTH = 2048
#: The longest single XML token read (a URL is far shorter; expat holds a token whole).
MAX_TOKEN = 1 << 20
#: The deepest nesting of XML elements read (a sitemap needs 4 or 5; expat keeps each level).
MAX_DEPTH = 64
#: Bytes handed to expat (or inflated) at a time: what one step may hold.
_SLICE = 1 << 16
_GZIP_MAGIC = b"\x1f\x8b"
_BOM_UTF8 = b"\xef\xbb\xbf"
_BOMS_UTF16 = (b"\xff\xfe", b"\xfe\xff")
_BLANK = b" \t\r\n"
# Atom's namespaces: 1.0, then 0.3 (the sitemaps protocol accepts both).
_ATOM = ("http://www.w3.org/2005/Atom", "http://purl.org/atom/ns#")
# A W3C datetime (https://www.w3.org/TR/NOTE-datetime): YYYY[-MM[-DD[Thh:mm[:ss[.s]]TZD]]].
_W3C_DATE = re.compile(
    r"\d{4}(?:-\d{2}(?:-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?"
    r"(?:Z|[+-]\d{2}:\d{2}))?)?)?").fullmatch
# Characters of a field kept while reading it: the longest URL and some blank around it.
_FIELD_ROOM = MAX_URL_LENGTH + 1024


@dataclass(frozen=True, slots=True)
class SitemapEntry:
    """One ``<url>`` of a sitemap (or one line of a text sitemap), or one child
    ``<sitemap>`` of an index: its ``url``, its ``lastmod`` as written (a W3C
    datetime, e.g. ``2024-05-01`` or ``2024-05-01T12:00:00+00:00``) when given,
    and the ``sitemap`` that listed it."""

    url: str
    lastmod: str | None = None
    sitemap: str = ""


@dataclass(frozen=True, slots=True)
class Scope:
    """Which URLs a sitemap may list: those starting with one of ``prefixes``
    (``(origin, path prefix)`` pairs), on the ``sites`` its child sitemaps may be on."""

    prefixes: tuple[tuple[str, str], ...]
    sites: tuple[str, ...]

    @classmethod
    def of(cls, sitemap_url: str, vouched_by: str | None = None) -> Scope:
        """The scope of a sitemap at ``sitemap_url``: its own directory, and the whole
        of ``vouched_by`` (an origin whose robots.txt names it, directly or through an
        index).  Raises :class:`~robotgate.urls.InvalidURL` for a URL that is no
        http(s) URL.

        >>> Scope.of("https://example.com/catalog/sitemap.xml").admits(
        ...     "https://example.com/catalog/item?id=1")
        True
        >>> Scope.of("https://example.com/catalog/sitemap.xml").admits("https://example.com/x")
        False
        """
        origin, rest = split_origin(sitemap_url)
        path = _path_only(rest)
        prefixes = [(origin, path[: path.rfind("/") + 1] or "/")]
        sites = [origin]
        if vouched_by is not None and vouched_by != origin:
            prefixes.append((vouched_by, "/"))
            sites.append(vouched_by)
        elif vouched_by is not None:
            prefixes = [(origin, "/")]
        return cls(tuple(prefixes), tuple(sites))

    def admits(self, url: str) -> bool:
        """May the sitemap list ``url``?  (False for anything that is no http(s) URL.)"""
        try:
            origin, rest = split_origin(url)
        except InvalidURL:
            return False
        return self.admits_split(origin, rest)

    def admits_split(self, origin: str, rest: str) -> bool:
        """:meth:`admits` of a URL :func:`~robotgate.urls.split_origin` has split."""
        for o, p in self.prefixes:
            if origin == o and (p == "/" or (_path_only(rest) or "/").startswith(p)):
                return True
        return False

    def admits_sitemap(self, url: str) -> bool:
        """May an index in this scope list the sitemap at ``url`` (same site)?"""
        try:
            return split_origin(url)[0] in self.sites
        except InvalidURL:
            return False

    def __str__(self) -> str:
        return " or ".join(f"{o}{p}" for o, p in self.prefixes)


@dataclass(frozen=True, slots=True)
class SitemapFile:
    """What one sitemap gave: ``kind`` is ``"urlset"``, ``"index"``, ``"text"``, or
    ``""`` when no sitemap could be read; ``entries`` are its URLs (a urlset or text
    sitemap), ``children`` the sitemaps an index lists, ``problems`` why anything
    was left out or the read ended early, in words."""

    url: str
    kind: str = ""
    entries: tuple[SitemapEntry, ...] = ()
    children: tuple[SitemapEntry, ...] = ()
    problems: tuple[str, ...] = ()


class _Refused(Exception):
    """Raised from an expat handler: the document does what a sitemap never needs."""


class SitemapParser:
    """Reads one sitemap fed in chunks: :meth:`feed` each chunk as it arrives
    (it returns False once it wants no more), then :meth:`close`.

    >>> p = SitemapParser("https://example.com/sitemap.xml")
    >>> p.feed(b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
    ...        b'<url><loc>https://example.com/a</loc><lastmod>2024-05-01</lastmod></url>')
    True
    >>> p.close().entries
    (SitemapEntry(url='https://example.com/a', lastmod='2024-05-01', sitemap='https://example.com/sitemap.xml'),)
    """

    def __init__(self, url: str, scope: Scope | None = None, *, max_urls: int = MAX_URLS,
                 max_bytes: int = MAX_BYTES) -> None:
        self.url = url
        self.scope = scope if scope is not None else Scope.of(url)
        self.max_urls = max_urls
        self.max_bytes = max_bytes
        self.kind = ""
        self.entries: list[SitemapEntry] = []
        self.children: list[SitemapEntry] = []
        self._problems: list[str] = []
        self._stopped = False  # the read ended: nothing more is looked at
        self._head = b""  # the first bytes, until gzip or not is known
        self._coding: str | None = None  # "gzip" or "plain", from the first two bytes
        self._inflater: zlib._Decompress | None = None  # while gzip data is being read
        self._size = 0  # bytes after gzip
        self._lead = b""  # bytes before the first non-blank one, until XML or text is known
        self._at_first_byte = True  # a byte-order mark counts only there
        self._listed = 0  # URLs (or child sitemaps) met, kept or not
        self._dropped: dict[str, int] = {}
        self._dates: set[str] = set()  # lastmod values found to be W3C datetimes
        self._example: dict[str, str] = {}
        # XML
        self._xml: expat.XMLParserType | None = None
        self._fed = 0  # bytes handed to expat
        self._depth = 0
        self._item_name = ""  # the element of an entry (<url>, <sitemap>, <item>, <entry>)
        self._item_depth = 2
        self._fields: dict[str, str] = {}  # element name -> "loc" or "lastmod"
        self._atom_link = ""  # an Atom entry's <link> element, whose href is the URL
        self._item = False  # inside an entry
        self._field: str | None = None  # "loc" or "lastmod", being read
        self._text: list[str] = []
        self._room = 0
        self._loc: str | None = None
        self._lastmod: str | None = None
        self._long_loc = False
        # text
        self._line = b""
        self._skipping = False  # inside a line too long to be a URL

    # -- feeding -----------------------------------------------------------------------

    def feed(self, data: bytes) -> bool:
        """Read ``data``, the next bytes of the body; False once no more is wanted."""
        if self._stopped or not data:
            return not self._stopped
        if self._coding is None:
            data = self._head + data
            if len(data) < 2:  # the gzip magic number has two bytes
                self._head = data
                return True
            self._head = b""
            self._coding = "gzip" if data[:2] == _GZIP_MAGIC else "plain"
            if self._coding == "gzip":
                self._inflater = zlib.decompressobj(31)
        if self._coding == "gzip":
            self._inflate(data)
        else:
            self._plain(data)
        return not self._stopped

    def _inflate(self, data: bytes) -> None:
        inflater = self._inflater
        while data and inflater is not None and not self._stopped:
            room = self.max_bytes - self._size + 1  # a byte past the cap tells "longer"
            try:
                out = inflater.decompress(data, min(room, _SLICE))
            except zlib.error as exc:
                self._stop(f"the gzip data is corrupt ({exc})")
                return
            data = inflater.unconsumed_tail
            if out:
                self._plain(out)
            if inflater.eof:
                rest = inflater.unused_data
                if rest[:2] == _GZIP_MAGIC:  # another gzip member follows
                    inflater = self._inflater = zlib.decompressobj(31)
                    data = rest
                    continue
                self._inflater = None  # trailing bytes after the gzip data are ignored
                return
            if not out and not data:
                return

    def _plain(self, data: bytes) -> None:
        """Bytes after gzip: counted against the size limit, then read."""
        if self._stopped:
            return
        size = self._size + len(data)
        over = size > self.max_bytes
        if over:
            data = data[: self.max_bytes - self._size]
            size = self.max_bytes
        self._size = size
        if not self.kind:
            data = self._sniff(data)
        if data:
            if self._xml is not None:
                self._feed_xml(data, final=False)
            elif self.kind == "text":
                self._feed_text(data)
        if over and not self._stopped:
            self._stop(f"the file is larger than the protocol's {self.max_bytes:,} bytes "
                       "uncompressed: the rest is not read")

    def _sniff(self, data: bytes) -> bytes:
        """Tell XML from text by the first byte that is not blank; returns what to read."""
        lead = self._lead + data
        self._lead = b""
        if self._at_first_byte:
            if len(lead) < 3 and _BOM_UTF8.startswith(lead):
                self._lead = lead
                return b""
            self._at_first_byte = False
            if lead[:2] in _BOMS_UTF16:
                self._start_xml()
                return lead  # expat reads UTF-16 by its BOM
            if lead[:3] == _BOM_UTF8:
                lead = lead[3:]
        body = lead.lstrip(_BLANK)
        if not body:
            return b""  # blank so far: nothing is kept
        if body[:1] == b"<":
            self._start_xml()
        else:
            self.kind = "text"
        return body

    # -- XML ---------------------------------------------------------------------------

    def _start_xml(self) -> None:
        self.kind = "xml"  # until the root element says which
        parser = expat.ParserCreate(namespace_separator=" ")
        parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
        parser.EntityDeclHandler = self._refuse_entity
        parser.UnparsedEntityDeclHandler = self._refuse_entity
        parser.ExternalEntityRefHandler = self._refuse_external
        parser.StartElementHandler = self._start
        parser.EndElementHandler = self._end
        # Text is wanted only inside <loc> and <lastmod>: the handler is set there alone,
        # so that blanks between elements and the fields ignored cost no call.
        parser.buffer_text = True
        self._xml = parser

    def _feed_xml(self, data: bytes, final: bool) -> None:
        parser = self._xml
        assert parser is not None
        for start in range(0, max(len(data), 1), _SLICE):
            piece = data[start:start + _SLICE]
            last = final and start + _SLICE >= len(data)
            try:
                parser.Parse(piece, last)
            except _Refused as refused:
                self._stop(str(refused))
                return
            except expat.ExpatError as exc:
                self._stop(f"the XML is broken at line {exc.lineno}, column {exc.offset}: "
                           f"{expat.ErrorString(exc.code)}")
                return
            except RecursionError:  # pragma: no cover - expat does not recurse in handlers
                self._stop("the XML nests too deeply")
                return
            if self._stopped:
                return
            self._fed += len(piece)
            # Outside a handler, expat's position is where its last token ended: what it
            # holds past that is one token not yet complete.
            if self._fed - parser.CurrentByteIndex > MAX_TOKEN:
                self._stop(f"the XML holds a single token longer than {MAX_TOKEN:,} bytes "
                           "(a comment or a tag): the rest is not read")
                return

    def _refuse_entity(self, name: str, *_: object) -> None:
        raise _Refused(f"the XML declares the entity {name[:100]!r}: refused (entities can "
                       "expand without bound or reach outside the file)")

    def _refuse_external(self, *_: object) -> int:
        raise _Refused("the XML refers to an external entity: refused")

    def _start(self, name: str, attrs: dict[str, str]) -> None:
        self._depth = depth = self._depth + 1
        if self._item and depth == self._item_depth + 1:  # a field of an entry
            field = self._fields.get(name)
            if field is not None:
                self._field = field
                self._text = []
                self._room = _FIELD_ROOM
                parser = self._xml
                assert parser is not None
                parser.CharacterDataHandler = self._characters
            elif name == self._atom_link and self._loc is None and attrs.get(
                    "rel", "alternate") == "alternate":
                self._atom_href(attrs.get("href", ""))
        elif depth == self._item_depth:
            self._item = name == self._item_name
            if self._item:
                self._loc = self._lastmod = None
                self._long_loc = False
        elif depth == 1:
            self._root(name)
        elif depth > MAX_DEPTH:
            raise _Refused(f"the XML nests deeper than {MAX_DEPTH} elements: the rest is not read")

    def _root(self, name: str) -> None:
        """The root element says which kind of file this is, and where its entries are."""
        ns, _, local = name.rpartition(" ")
        prefix = f"{ns} " if ns else ""
        if local == "urlset":
            self.kind, item = "urlset", "url"
        elif local == "sitemapindex":
            self.kind, item = "index", "sitemap"
        elif local == "rss" and not ns:  # RSS 2.0: <rss><channel><item><link>
            self.kind, item = "feed", "item"
            self._item_depth = 3
            self._fields = {"link": "loc", "pubDate": "lastmod"}
            self._item_name = item
            return
        elif local == "feed" and ns in _ATOM:  # Atom 1.0 and 0.3: <feed><entry><link href>
            self.kind, item = "feed", "entry"
            self._atom_link = prefix + "link"
            self._fields = {prefix + ("updated" if ns == _ATOM[0] else "modified"): "lastmod"}
            self._item_name = prefix + item
            return
        else:
            raise _Refused(f"not a sitemap: the root element is <{local[:100]}>, "
                           "not <urlset> or <sitemapindex> (nor an RSS 2.0 or Atom feed)")
        self._item_name = prefix + item
        self._fields = {prefix + "loc": "loc", prefix + "lastmod": "lastmod"}

    def _atom_href(self, href: str) -> None:
        href = href.strip()
        self._long_loc = len(href) >= MAX_URL_LENGTH
        self._loc = href

    def _characters(self, data: str) -> None:
        room = self._room - len(data)
        if room >= 0:  # the common case: the field fits, blanks and all
            self._room = room
            self._text.append(data)
        elif self._room >= 0:
            # Over the room with its blanks: kept if it fits without its leading blank.
            text = ("".join(self._text) + data).lstrip()
            if len(text) > _FIELD_ROOM:
                self._room = -1  # too long: the field is dropped
                self._text = []
            else:
                self._room = _FIELD_ROOM - len(text)
                self._text = [text]

    def _end(self, name: str) -> None:
        depth = self._depth
        self._depth = depth - 1
        if self._field is not None and depth == self._item_depth + 1:
            parser = self._xml
            assert parser is not None
            parser.CharacterDataHandler = None
            value = "".join(self._text).strip() if self._room >= 0 else None
            if self._field == "loc" and self._loc is None:
                self._long_loc = value is None or len(value) >= MAX_URL_LENGTH
                self._loc = value if value is not None else ""
            elif self._field == "lastmod":
                self._lastmod = value
            self._field = None
            self._text = []
        elif depth == self._item_depth and self._item:
            self._item = False
            lastmod = self._lastmod
            if lastmod is not None and self.kind == "feed":
                lastmod = _w3c_date(lastmod)
            self._listed_one(self._loc, lastmod, self._long_loc)
        elif depth == 1:
            self._stopped = True  # the root ended: nothing after it counts

    # -- text --------------------------------------------------------------------------

    def _feed_text(self, data: bytes) -> None:
        lines = data.split(b"\n")
        lines[0] = self._line + lines[0] if not self._skipping else lines[0]
        last = lines.pop()
        for number, line in enumerate(lines):
            if number == 0 and self._skipping:
                self._skipping = False
                continue
            self._text_line(line)
            if self._stopped:
                return
        if self._skipping:
            return
        if len(last) > 4 * _FIELD_ROOM:  # longer than any URL can be, in any UTF-8
            self._listed_one(None, None, True)
            self._line = b""
            self._skipping = True
        else:
            self._line = last

    def _text_line(self, line: bytes) -> None:
        url = line.strip().decode("utf-8", "replace")
        if url:
            self._listed_one(url, None, len(url) >= MAX_URL_LENGTH)

    # -- entries -----------------------------------------------------------------------

    def _listed_one(self, url: str | None, lastmod: str | None, too_long: bool) -> None:
        """A ``<url>`` (or ``<sitemap>``, or text line) ended: keep it, or say why not."""
        if self._listed >= self.max_urls:
            self._stop(f"the file lists more than the protocol's {self.max_urls:,} URLs: "
                       "the rest is not read")
            return
        self._listed += 1
        if too_long:
            self._drop("longer than 2,048 characters", (url or "")[:100] + "...")
            return
        if not url:
            self._drop("without a <loc>", "")
            return
        try:
            origin, rest = split_origin(url)  # once: the check and the scope both use it
        except InvalidURL:
            self._drop("not absolute http(s)", url[:100])
            return
        if lastmod is not None and lastmod not in self._dates:
            if len(lastmod) > 40 or not _W3C_DATE(lastmod):
                self._drop_lastmod(lastmod)
                lastmod = None
            elif len(self._dates) < 256:  # a file repeats its dates: each checked once
                self._dates.add(lastmod)
        scope = self.scope
        if self.kind == "index":
            if origin not in scope.sites:
                self._drop("on another site than the index", url)
                return
            self.children.append(SitemapEntry(url, lastmod, self.url))
            return
        if not scope.admits_split(origin, rest):
            self._drop(f"outside the sitemap's scope ({scope})", url)
            return
        self.entries.append(SitemapEntry(url, lastmod, self.url))

    def _drop(self, why: str, example: str) -> None:
        self._dropped[why] = self._dropped.get(why, 0) + 1
        if why not in self._example:
            self._example[why] = redact(example)  # shown: never a password

    def _drop_lastmod(self, lastmod: str) -> None:
        why = "lastmod values ignored: no W3C datetime"
        self._dropped[why] = self._dropped.get(why, 0) + 1
        self._example.setdefault(why, lastmod[:60])

    def _stop(self, why: str) -> None:
        if not self._stopped:
            self._stopped = True
            self._problems.append(why)

    def take(self) -> list[SitemapEntry]:
        """The entries (or, of an index, the child sitemaps) read since the last call, handed
        out as each piece is read: the parser keeps none of them, and :meth:`close` gives
        only those not taken.

        >>> p = SitemapParser("https://example.com/urls.txt")
        >>> p.feed(b"https://example.com/a\\nhttps://example.com/b\\nhttps://exa")
        True
        >>> [e.url for e in p.take()], p.take()
        (['https://example.com/a', 'https://example.com/b'], [])
        """
        if self.kind == "index":
            taken, self.children = self.children, []
        else:
            taken, self.entries = self.entries, []
        return taken

    # -- the end -----------------------------------------------------------------------

    def close(self, cut: bool = False) -> SitemapFile:
        """The end of the body: what was read (less what :meth:`take` handed out), and every
        problem met.  ``cut``: the body ended before its end (the connection dropped), so a
        last line without its newline may be part of a URL, and is not read."""
        if not self._stopped:
            if self._coding is None and self._head:  # a body of one byte
                head, self._head = self._head, b""
                self._coding = "plain"
                self._plain(head)
            if self._inflater is not None and not self._stopped:
                self._stop("the gzip data ends early: the file is cut short")
            if self._lead and not self.kind and not self._stopped:
                lead, self._lead = self._lead, b""
                self._plain_tail(lead)
            if self._xml is not None and not self._stopped:
                self._feed_xml(b"", final=True)
            elif self.kind == "text" and not self._stopped:
                line, self._line = self._line, b""
                if cut and line.strip():
                    self._problems.append("the last line is cut short: not read")
                elif not self._skipping:
                    self._text_line(line)
        problems = list(self._problems)
        if not problems and not self.kind:
            problems.append("the file is empty")  # or blank: any other byte sets the kind
        elif not problems and self.kind == "xml":
            problems.append("no sitemap could be read")
        listing = "sitemap" if self.kind == "index" else "URL"
        for why, n in self._dropped.items():
            example = self._example.get(why)
            shown = f", e.g. {example}" if example else ""
            if why.startswith("lastmod"):
                problems.append(f"{n:,} {why}{shown}")
            else:
                problems.append(f"{n:,} {listing}{'' if n == 1 else 's'} {why} dropped{shown}")
        kind = self.kind if self.kind in ("urlset", "index", "text", "feed") else ""
        return SitemapFile(self.url, kind, tuple(self.entries), tuple(self.children),
                           tuple(problems))

    def _plain_tail(self, lead: bytes) -> None:
        body = lead[3:] if lead[:3] == _BOM_UTF8 else lead
        body = body.lstrip(_BLANK)
        if body:
            self.kind = "text"
            self._feed_text(body)


def _w3c_date(text: str) -> str:
    """A feed's date as a W3C datetime: RSS writes RFC 822 (``Wed, 01 May 2024 12:00:00
    GMT``), Atom RFC 3339 already; one not understood is left as written (and dropped)."""
    if _W3C_DATE(text):
        return text
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return text
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when.isoformat()


def _path_only(rest: str) -> str:
    """The path of what :func:`~robotgate.urls.split_origin` leaves (no query, no fragment)."""
    for mark in "?#":
        cut = rest.find(mark)
        if cut >= 0:
            rest = rest[:cut]
    return rest


def parse_sitemap(url: str, body: bytes, scope: Scope | None = None) -> SitemapFile:
    """A whole sitemap body read at once (see :class:`SitemapParser`).

    >>> parse_sitemap("https://example.com/urls.txt", b"https://example.com/a\\n").entries[0].url
    'https://example.com/a'
    """
    parser = SitemapParser(url, scope)
    for start in range(0, len(body), _SLICE):
        if not parser.feed(body[start:start + _SLICE]):
            break
    return parser.close()
