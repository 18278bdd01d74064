"""The links of an HTML page: ``<a href>`` and ``<area href>``, as absolute URLs.

:func:`page_links` is the link reader a crawl would otherwise write with a
regular expression.  It scans the bytes with compiled patterns, in one pass, and
builds no tree: tags are found case-insensitively, attribute values may be quoted
with ``"``, ``'`` or not at all, character references in them (``&amp;``) are
expanded, and comments and raw-text elements (``<script>``, ``<style>``,
``<textarea>``, ...) are skipped, as a browser reads them.  Links resolve against
the page's URL, or its first ``<base href>``: decoded, cut at their fragment and
joined all at once (a pass in C over all of a page's links for each common shape:
paths from the root or the base's directory, ``../``, ``?query``), the rest one
at a time.

Bounded: at most :data:`MAX_PAGE_BYTES` of a page are read, :data:`MAX_HREF_BYTES`
of each ``href`` and :data:`MAX_TAG_BYTES` of each tag's attributes (a longer
``<a>``, ``<area>`` or ``<base>`` is skipped: its end is found, its links are not
read); every pattern runs in time linear in its input; a page over 256 KiB has its
tags taken one at a time, and a long tag or comment is read through a window at a
time, so that memory stays within about a copy of the page whatever the markup.
Links are stripped of C0 controls and spaces at their ends, and of tabs and
newlines inside, as the WHATWG URL parser does.

Pure, standard library only, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass
from html import unescape
from urllib.parse import urljoin

from .urls import remove_dot_segments

__all__ = ["MAX_HREF_BYTES", "MAX_PAGE_BYTES", "MAX_TAG_BYTES", "STEP_BYTES", "STEP_LINKS",
           "STEP_TAGS", "LinkReader", "PageLinks", "base_href", "link_resolver", "page_links",
           "read_links"]

#: Bytes of a page read for links (a longer page's links after that are not seen).
MAX_PAGE_BYTES = 16 * 1024 * 1024
#: Bytes of one ``href`` read (a longer one is no link).
MAX_HREF_BYTES = 8 * 1024
#: Bytes of one tag's attributes read: a longer ``<a>``, ``<area>`` or ``<base>`` is
#: skipped whole (no page a person writes has one; reading one would cost as much as
#: the rest of the page).
MAX_TAG_BYTES = 64 * 1024

_RAW = rb"script|style|textarea|title|xmp|iframe|noembed|noframes"
_END_OF_NAME = rb"(?=[\t\n\f\r />])"
# Repeated groups are bounded: the engine keeps a little state for each turn of
# one, so a tag of a million attributes is read a chunk at a time.
_TURNS = b"{0,256}"
# A tag's attributes up to its ">" (or the page's end): a quote opens a value only
# after "=", as in HTML.  Written as runs (no "=", then "=" and its value), so the
# first way through always matches: nothing backtracks.
_MORE_VALUES = rb"(?:=[\t\n\f\r ]*(?:\"[^\"]*\"|'[^']*'|)[^>=]*)" + _TURNS
_TAG_REST = rb"[^>=]*" + _MORE_VALUES
# The markup that matters, in one pass: comments and raw-text elements are matched
# whole (to their end, or the page's) so that nothing inside them counts; then the
# tags a, area and base with their attributes.  Each part either runs to a literal
# the engine skips to or always matches, so the scan stays linear; the look-ahead
# turns most tags (end tags, div, p, li) away at their first character.  A tag
# whose last group is empty short of the page's end goes on: _tag_end reads on.
_HREF_FIRST = (
    rb"[\t\n\f\r /]*(?i:href)[\t\n\f\r ]*=[\t\n\f\r ]*"
    rb"(?:\"([^\"]*)\"|'([^']*)'|([^\t\n\f\r >=\"']+)(?=[\t\n\f\r >]))"
)
_PAGE_RE = re.compile(
    rb"<(?=[!AaBbIiNnPpSsTtXx])(?:!--(?:.*?-->|.*)"
    rb"|(?i:" + _RAW + rb")" + _END_OF_NAME
    + rb"(?:.*?</(?i:" + _RAW + rb")" + _END_OF_NAME + rb"|.*)"
    rb"|(?i:plaintext)" + _END_OF_NAME + rb".*"
    rb"|((?i:a|area|base))[\t\n\f\r /]((?:" + _HREF_FIRST + rb")?(" + _TAG_REST + rb"))(>?))",
    re.DOTALL,
)
# The spaces around a tag's "="; an end tag of raw text.
_SPACES = b"\t\n\f\r "
_RAW_END_RE = re.compile(rb"</(?i:" + _RAW + rb")" + _END_OF_NAME)
# One attribute of a tag: its name and its value, quoted or not.
_ATTRIBUTE_RE = re.compile(
    rb"([^\t\n\f\r />][^\t\n\f\r />=]*)"
    rb"(?:[\t\n\f\r ]*=[\t\n\f\r ]*(?:\"([^\"]*)\"|'([^']*)'|([^\t\n\f\r >]*)))?"
)
#: The longest attributes read one by one; a longer tag's are read in chunks.
_SHORT_TAG = 4096
#: The longest page whose markup is found all at once (the fastest way; what is found
#: of a longer page is taken one piece at a time, to hold no more than one).
_ALL_AT_ONCE = 256 * 1024
# What _PAGE_RE finds: a tag (empty for a comment or raw text), its attributes, an href
# given first (quoted either way, or bare), the attributes after it, its ">".
_Tag = tuple[bytes, "bytes | memoryview", bytes, bytes, bytes, bytes, bytes]
# A tag's attributes from a position: up to 256 others skipped, then its next href
# or rel with its value, if any (group 1 empty: none in this chunk).
_ATTRIBUTE_NAME_END = rb"(?![^\t\n\f\r />=])"
_VALUE = rb"[\t\n\f\r ]*=[\t\n\f\r ]*(?:\"([^\"]*)\"|'([^']*)'|([^\t\n\f\r >]*))"
_ATTRIBUTES_RE = re.compile(
    rb"(?:[\t\n\f\r />]*(?!(?i:href|rel)" + _ATTRIBUTE_NAME_END + rb")"
    rb"[^\t\n\f\r />][^\t\n\f\r />=]*"
    rb"(?:[\t\n\f\r ]*=[\t\n\f\r ]*(?:\"[^\"]*\"|'[^']*'|[^\t\n\f\r >]*))?)" + _TURNS
    + rb"[\t\n\f\r />]*(?:((?i:href|rel))" + _ATTRIBUTE_NAME_END + rb"(?:" + _VALUE + rb")?)?"
)
_SCHEME_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
_FRAGMENT_RE = re.compile("#[^\0]*")
# The shapes of link _joined_in_bulk joins, each after the NUL before it, looked
# at ahead to the link's end: no dot segment ("/." or an escaped dot, "%2E"), and
# for relative paths no colon (no scheme).  Runs of other characters between the
# slashes and percent signs: one pass, no backtracking beyond a run.
_PLAIN = "[^\0/%]*(?:(?:/(?!\\.)|%(?!2))[^\0/%]*)*(?![^\0])"
_PLAIN_NO_COLON = "[^\0/%:]*(?:(?:/(?!\\.)|%(?!2))[^\0/%:]*)*(?![^\0])"
_ROOT_PATH_RE = re.compile("\0(?=/(?!/))(?=" + _PLAIN + ")")
_RELATIVE_PATH_RE = re.compile("\0(?=[^\0/.%?:])(?=" + _PLAIN_NO_COLON + ")")
_QUERY_RE = re.compile("\0\\?")
_PARENT_PATH_RE = re.compile("\0\\.\\./(?=[^\0/.%?:])(?=" + _PLAIN_NO_COLON + ")")
# The same where no link has a dot segment (most pages): only the colon looked for.
_ROOT_PATH_CLEAN_RE = re.compile("\0(?=/(?!/))")
_RELATIVE_PATH_CLEAN_RE = re.compile("\0(?=[^\0/.%?:][^\0:]*(?![^\0]))")
_PARENT_PATH_CLEAN_RE = re.compile("\0\\.\\./(?=[^\0/.%?:][^\0:]*(?![^\0]))")
# A link not joined yet: not empty, not absolute http(s).
_UNJOINED_RE = re.compile("\0(?!https?://)([^\0]+)")
# What the WHATWG URL parser strips from both ends of a URL: C0 controls and space
# (but NUL, which parts the links here and is dropped from them before).
_CONTROLS_AND_SPACE = "".join(map(chr, range(1, 0x21)))
_EDGES = frozenset(_CONTROLS_AND_SPACE)
# A link, among others parted by NULs, that begins or ends with one of them.
_EDGE_CONTROL_RE = re.compile("\0(?:[\x01-\x20]|(?<=[\x01-\x20]\0))")
_TABS_AND_NEWLINES = str.maketrans("", "", "\t\n\r")


@dataclass(frozen=True, slots=True)
class PageLinks:
    """What :func:`read_links` found: the links to follow and, counted, those it left out.

    ``nofollow``: links whose ``rel`` holds ``nofollow``; ``other_schemes``: links
    that are no http(s) URL (``javascript:``, ``mailto:``, ``data:``, ``tel:``, ...);
    ``invalid``: ``href`` values no URL can be made of (too long, a bad port or host).
    """

    urls: list[str]
    nofollow: int = 0
    other_schemes: int = 0
    invalid: int = 0


def page_links(body: bytes, base_url: str) -> list[str]:
    """The absolute http(s) URLs of the ``<a href>`` and ``<area href>`` of the HTML
    page ``body`` found at ``base_url`` (give the response's final URL, after
    redirects), in page order, each once, fragments cut.

    Relative links (``a.html``, ``/b``, ``./c?x=1``, ``sub/``) resolve against the
    page's first ``<base href>``, else ``base_url``.  Left out: ``javascript:``,
    ``mailto:``, ``data:`` and other non-http(s) links, links to the page itself
    (``href="#top"``, ``href=""``), and links whose ``rel`` holds ``nofollow`` (a
    per-link opt-out, as a robots meta ``nofollow`` is for the whole page, which
    this function does not read: see :func:`robotgate.page_directives`).  Bytes
    that are not UTF-8 are read as Latin-1.

    >>> page_links(b'<base href="/docs/"><a href=intro.html>1</a> <A HREF="../?a=1&amp;b=2">',
    ...            "https://example.com/x/page")
    ['https://example.com/docs/intro.html', 'https://example.com/?a=1&b=2']
    """
    return read_links(body, base_url).urls


def read_links(body: bytes, base_url: str) -> PageLinks:
    """:func:`page_links`, with the links left out counted by reason."""
    page = bytes(body[:MAX_PAGE_BYTES])
    # A short page's markup found all at once (the fastest way), unless a tag goes on
    # past one match (or to the page's end); else one piece at a time.
    found = (_links_in(_PAGE_RE.findall(page)) if len(page) <= _ALL_AT_ONCE else None) \
        or _links_in(_tags(page))
    assert found is not None  # _tags reads every tag to its end
    hrefs, base, nofollow = found
    if 0 in page:  # a NUL is no character of a link: below, NULs part them
        hrefs = [raw.replace(b"\0", b"") for raw in hrefs]
    return _resolved(hrefs, base, base_url, nofollow)


#: What one :meth:`LinkReader.step` does at most: tags read, or links resolved
#: (each a few milliseconds' work).
STEP_TAGS = 2048
STEP_LINKS = 8192
STEP_BYTES = 256 * 1024


class LinkReader:
    """:func:`read_links` a piece at a time, for a caller that must not be held long
    (an event loop): each :meth:`step` reads at most :data:`STEP_TAGS` tags of the
    page (a stretch of :data:`_WINDOW` bytes read through counting as a quarter of
    them, and a tag one more for each 64 bytes of its attributes), then resolves at
    most :data:`STEP_LINKS` of its links, of at most :data:`STEP_BYTES` in all, so that
    however much a page weighs and whatever its markup, no step takes more than a few
    tens of milliseconds.

    >>> reader = LinkReader(b'<base href="/d/"><a href=a>1</a>', "http://h.test/x")
    >>> while not reader.step():
    ...     pass
    >>> reader.links().urls, reader.base
    (['http://h.test/d/a'], 'http://h.test/d/')
    """

    def __init__(self, body: bytes, base_url: str) -> None:
        page = bytes(body[:MAX_PAGE_BYTES])
        self._nul = 0 in page  # a NUL is no character of a link: NULs part them
        self._tags: Iterator[_Tag] | None = _tags(page)
        self._base_url = base_url
        self._hrefs: list[bytes] = []
        self._base: bytes | None = None
        self._nofollow = 0
        self._resolved = 0  # hrefs resolved so far
        self._urls: dict[str, None] = {}
        self._other = 0
        self._invalid = 0

    @property
    def base(self) -> str | None:
        """The page's first ``<base href>``, as the links resolve against it (None: none,
        or not read yet)."""
        if self._base is None:
            return None
        root = _Resolver(self._base_url)(_text(self._base) or "")
        return root if root is not None and _is_http(root) else None

    def step(self) -> bool:
        """Read a piece more; True once every link is read and resolved."""
        tags = self._tags
        if tags is not None:
            piece = _Piece(tags)
            found = _links_in(piece)
            assert found is not None  # _tags reads every tag to its end
            self._hrefs += found[0]
            if self._base is None:
                self._base = found[1]
            self._nofollow += found[2]
            if piece.last:
                self._tags = None
            return False
        done = self._resolved
        if done >= len(self._hrefs):
            return True
        hrefs = self._hrefs[done:done + STEP_LINKS]
        size = 0
        for count, raw in enumerate(hrefs, 1):  # and no more than STEP_BYTES of them
            size += len(raw)
            if size > STEP_BYTES:
                del hrefs[count:]
                break
        self._resolved = done + len(hrefs)
        if self._nul:
            hrefs = [raw.replace(b"\0", b"") for raw in hrefs]
        found_links = _resolved(hrefs, self._base, self._base_url, 0)
        self._urls.update(dict.fromkeys(found_links.urls))
        self._other += found_links.other_schemes
        self._invalid += found_links.invalid
        return self._resolved >= len(self._hrefs)

    def links(self) -> PageLinks:
        """What :func:`read_links` gives, once :meth:`step` said True."""
        return PageLinks(list(self._urls), nofollow=self._nofollow,
                         other_schemes=self._other, invalid=self._invalid)


class _Piece:
    """The tags of one :meth:`LinkReader.step`: at most :data:`STEP_TAGS`, a window
    scanned through counting as :data:`_SCANNED_COST` of them; ``last`` once the
    page's tags are all read."""

    __slots__ = ("_tags", "last")

    def __init__(self, tags: Iterator[_Tag]) -> None:
        self._tags = tags
        self.last = False

    def __iter__(self) -> Iterator[_Tag]:
        budget = STEP_TAGS
        for tag in self._tags:
            yield tag
            budget -= _SCANNED_COST if tag is _SCANNED else 1 + len(tag[1]) // _TAG_BYTES_COST
            if budget <= 0:
                return
        self.last = True


def _links_in(tags: Iterable[_Tag]) -> tuple[list[bytes], bytes | None, int] | None:
    """The ``href`` values of the a and area tags of ``tags`` but those ``rel=nofollow``,
    the first base's ``href``, and the nofollow count; None at a tag not read whole."""
    hrefs: list[bytes] = []
    append = hrefs.append
    base: bytes | None = None
    nofollow = 0
    for tag, rest, double, single, bare, tail, closed in tags:
        if not tag or len(rest) > MAX_TAG_BYTES:
            continue  # a comment or raw text, or a tag too long to read
        if not closed:
            return None  # it goes on past what the match read (or to the page's end)
        if len(tag) != 4 or tag[0] not in b"bB":  # a or area
            href = double or single or bare
            # The pattern read an href given first; the rest only matters for a rel.
            # (find, not `in`: a bytes operand of `in` is first tried as an int)
            if href and (not tail or tail.lower().find(b"rel") < 0):
                append(href)
                continue
            if href:
                rel = _href_and_rel(tail)[1]
                if rel is not None and b"nofollow" in rel.lower().split():
                    nofollow += 1
                else:
                    append(href)
                continue
        found, rel = _href_and_rel(rest)
        if found is None:
            continue
        if len(tag) == 4 and tag[0] in b"bB":
            if base is None:  # the first base with an href is the page's
                base = found
        elif rel is not None and b"nofollow" in rel.lower().split():
            nofollow += 1
        else:
            append(found)
    return hrefs, base, nofollow


#: What :func:`_tags` gives for a comment or raw text (no tag), and for a window
#: of the page read through (told apart by identity).
_SKIPPED: _Tag = (b"", b"", b"", b"", b"", b"", b"")
_SCANNED: _Tag = (b"", b"", b"", b"", b"", b"", b"-")
#: Bytes of a page scanned at once (a few milliseconds), and how near a window's end a
#: match may have been cut short by it (longer than "<plaintext" and the byte after).
_WINDOW = 256 * 1024
_OVERLAP = 16
#: What a window scanned through costs a step, in tags (a tag: a few microseconds).
_SCANNED_COST = STEP_TAGS // 4
#: Bytes of a long tag read through at once (a quote in it costs a Python step).
_TAG_WINDOW = _WINDOW // 4
#: A tag's attributes cost a step one tag more for each this many bytes (reading them
#: is some hundred nanoseconds a byte at worst: a step reads at most 128 KiB of them).
_TAG_BYTES_COST = 64


def _tags(page: bytes) -> Iterator[_Tag]:
    """What ``_PAGE_RE.findall(page)`` gives, one at a time (tags' attributes as views
    of the page), each tag read to its end however many values it has; and, so that
    :class:`LinkReader` can count its steps' work, :data:`_SKIPPED` for each comment,
    raw text or tag over :data:`MAX_TAG_BYTES`, and :data:`_SCANNED` for each
    :data:`_WINDOW` bytes read through.

    The page is scanned a window at a time, so that no call reads far for nothing.
    A match that comes near a window's end may have been cut short there: it is read
    again from its start in the next window; one that starts the window (as long as a
    window, or longer) is read to its end by a plain search a window at a time."""
    view = memoryview(page)
    size = len(page)
    pos = 0
    while True:
        stop = min(size, pos + _WINDOW)
        near = stop - _OVERLAP if stop < size else size + 1  # from here a match may be cut
        following = max(pos, stop - _OVERLAP)  # where the next window starts
        for found in _PAGE_RE.finditer(page, pos, stop):
            end = found.end()
            cut = end >= near
            if cut and found.start() > pos:
                following = found.start()  # read again, whole, in the next window
                break
            tag, double, single, bare, tail, closed = found.group(1, 3, 4, 5, 6, 7)
            if not tag:  # a comment or raw text
                if cut:
                    following = yield from _markup_end(page, found.start())
                    yield _SKIPPED
                    break
                following = max(following, end)
                yield _SKIPPED
                continue
            if (closed and not cut) or end == size:  # read whole
                following = max(following, end)
                yield (tag, view[found.start(2):found.end(2)], double, single, bare,
                       tail, b">")
                continue
            # A tag of more values than the pattern reads at once, or cut by the window.
            values = found.start(2)
            values_end, following = yield from _tag_end(page, values)
            if values_end - values > MAX_TAG_BYTES:
                yield _SKIPPED
            else:
                yield tag, view[values:values_end], b"", b"", b"", b"", b">"
            break  # windows again after it
        else:
            if stop == size:
                return
            yield _SCANNED
        pos = following


def _markup_end(page: bytes, start: int) -> Generator[_Tag, None, int]:
    """Where the comment, raw text or plaintext at ``start`` ends (as ``_PAGE_RE`` reads
    it), found a window at a time: :data:`_SCANNED` for each."""
    size = len(page)
    if page.startswith(b"<!--", start):  # an unclosed comment runs to the end: windowed too
        pos = start + 4
        while True:
            stop = min(size, pos + _WINDOW)
            end = page.find(b"-->", pos, min(size, stop + 2))
            if end >= 0:
                return end + 3
            if stop == size:
                return size
            pos = stop
            yield _SCANNED
    if page[start + 1:start + 10].lower() == b"plaintext":
        return size
    pos = start + 1  # raw text ends at the first end tag of a raw-text element
    while True:
        stop = min(size, pos + _WINDOW)
        found = _RAW_END_RE.search(page, pos, min(size, stop + _OVERLAP))
        if found is not None:
            return found.end()
        if stop == size:
            return size
        pos = stop
        yield _SCANNED


def _tag_end(page: bytes, pos: int) -> Generator[_Tag, None, tuple[int, int]]:
    """Where the values of the tag that go on at ``pos`` end, and the tag: at its ">"
    and after it, or at the page's end; read as ``_PAGE_RE`` reads them (a quote opens a
    value only after "=" and spaces, and only if it is closed), a window at a time:
    :data:`_SCANNED` for each.  Linear, in C: finds of ">" and of each quote, each
    position found once; only quotes cost a step in Python."""
    size = len(page)
    after_equals = False  # the last byte before pos but spaces is an "="
    while True:
        stop = min(size, pos + _TAG_WINDOW)
        close = page.find(b">", pos, stop)
        limit = stop if close < 0 else close
        double = page.find(b'"', pos, limit)
        single = page.find(b"'", pos, limit)
        while double >= 0 or single >= 0:
            quote = double if single < 0 or 0 <= double < single else single
            before = page[pos:quote].rstrip(_SPACES)
            opens = before[-1:] == b"=" if before else after_equals
            end = page.find(page[quote:quote + 1], quote + 1) if opens else -1
            pos = quote + 1 if end < 0 else end + 1
            after_equals = False
            if pos > limit:
                break  # a quoted value went on past the ">" or the window: look again
            if 0 <= double < pos:
                double = page.find(b'"', pos, limit)
            if 0 <= single < pos:
                single = page.find(b"'", pos, limit)
        else:
            if close >= 0:
                return close, close + 1
            rest = page[pos:stop].rstrip(_SPACES)
            after_equals = rest[-1:] == b"=" if rest else after_equals
            pos = stop
            if stop == size:
                return size, size
        yield _SCANNED


def _href_and_rel(rest: bytes | memoryview) -> tuple[bytes | None, bytes | None]:
    """A tag's first ``href`` and first ``rel`` (the first of a repeated attribute counts)."""
    href: bytes | None = None
    rel: bytes | None = None
    if len(rest) <= _SHORT_TAG:  # every attribute at once (the common tag, fastest)
        for name, double, single, bare in _ATTRIBUTE_RE.findall(rest):
            name = name.lower()
            if name == b"href":
                if href is None:
                    href = double or single or bare
            elif name == b"rel" and rel is None:
                rel = double or single or bare
        return href, rel
    pos = 0
    while pos < len(rest):  # a chunk of attributes at a time
        found = _ATTRIBUTES_RE.match(rest, pos)
        assert found is not None  # every part of it may match nothing
        pos = found.end()
        name = found[1]
        if name is None:
            continue  # a chunk of other attributes
        value = found[2] or found[3] or found[4] or b""
        if name.lower() == b"href":
            if href is None:
                href = value
        elif rel is None:
            rel = value
        if href is not None and rel is not None:
            break
    return href, rel


def link_resolver(page_url: str, body: bytes | None,
                  base: str | None = None) -> Callable[[str], str | None]:
    """``resolve(link)``: ``link`` absolute, against ``page_url`` or the first ``<base
    href>`` of ``body`` (looked for at the first link that needs it; ``base``: that
    href found already, see :func:`base_href`); None for what no URL can be made of.
    Fragments are cut."""
    resolver: _Resolver | None = None

    def resolve(link: str) -> str | None:
        nonlocal resolver
        if resolver is None:
            resolver = _Resolver(page_url)
            found = base if base is not None or not body else base_href(body)
            if found:
                root = resolver(found)
                if root is not None and _is_http(root):
                    resolver = _Resolver(root)
        text = link.strip(_CONTROLS_AND_SPACE)
        if "\t" in text or "\n" in text or "\r" in text:
            text = text.translate(_TABS_AND_NEWLINES)
        return resolver(text)

    return resolve


def base_href(body: bytes) -> str | None:
    """The ``href`` of the page's first ``<base>`` that has one (linear in the page)."""
    for tag, rest, *_ in _tags(bytes(body[:MAX_PAGE_BYTES])):
        if len(tag) == 4 and tag.lower() == b"base":
            href = _href_and_rel(rest)[0]
            if href is not None:
                return _text(href) or None
    return None


def _resolved(hrefs: list[bytes], base: bytes | None, page_url: str,
              nofollow: int) -> PageLinks:
    resolve = _Resolver(page_url)
    if base is not None:
        found = _text(base)
        if found:
            root = resolve(found)
            if root is not None and _is_http(root):
                resolve = _Resolver(root)
    invalid = 0
    if hrefs and max(map(len, hrefs)) > MAX_HREF_BYTES:
        kept = [raw for raw in hrefs if len(raw) <= MAX_HREF_BYTES]
        invalid = len(hrefs) - len(kept)
        hrefs = kept
    # All values decoded, cleaned and cut at their fragment at once (C loops), then
    # split at the NULs that part them.
    text = _text(b"\0".join(hrefs))
    if _EDGE_CONTROL_RE.search(text) is not None:
        text = "\0".join(href.strip(_CONTROLS_AND_SPACE) for href in text.split("\0"))
    if "#" in text:
        text = _FRAGMENT_RE.sub("", text)
    other = 0

    def joined(href: str) -> str:
        nonlocal other, invalid
        url = resolve(href)
        if url is None:
            invalid += 1
            return ""
        if not _is_http(url):
            other += 1
            return ""
        return url

    if "\0" in resolve.base:  # the separator in the base itself: one link at a time
        pieces = [href if href.startswith(("http://", "https://")) or not href
                  else joined(href) for href in text.split("\0")]
    else:
        if resolve.plain:
            text = _joined_in_bulk(text, resolve)
        # What is not absolute yet, one link at a time: dot segments, schemes, "//host".
        text = _UNJOINED_RE.sub(lambda found: "\0" + joined(found[1]), "\0" + text)
        pieces = text.split("\0")
    urls = dict.fromkeys(pieces)
    urls.pop("", None)  # the page itself ("", "#top"), and what was left out
    return PageLinks(list(urls), nofollow=nofollow, other_schemes=other, invalid=invalid)


def _joined_in_bulk(text: str, resolve: _Resolver) -> str:
    """The links of ``text`` (parted by NULs) in the common shapes joined against an
    http(s) base, each shape in one C pass: paths from the root or the base's
    directory with no dot segment and no colon, ``../`` and one such path, ``?query``.
    What :class:`_Resolver` gives them, without a Python call per link."""
    def template(prefix: str) -> str:
        return "\0" + prefix.replace("\\", "\\\\")

    text = "\0" + text
    clean = "/." not in text and "%2" not in text  # no link has a dot segment
    text = (_ROOT_PATH_CLEAN_RE if clean else _ROOT_PATH_RE).sub(
        template(resolve.origin), text)
    text = (_RELATIVE_PATH_CLEAN_RE if clean else _RELATIVE_PATH_RE).sub(
        template(resolve.origin + resolve.directory), text)
    if resolve.base.startswith(("http://", "https://")):  # its scheme as written is kept
        text = _QUERY_RE.sub(template(resolve.base.partition("?")[0] + "?"), text)
    if "." not in resolve.directory and "%" not in resolve.directory:
        parent = resolve("../x")
        if parent is not None:
            text = (_PARENT_PATH_CLEAN_RE if clean else _PARENT_PATH_RE).sub(
                template(parent[:-1]), text)
    return text[1:]


def _text(raw: bytes) -> str:
    """Attribute values as text: decoded, references expanded, without the tabs and
    newlines URL parsers drop, stripped of C0 controls and spaces at both ends."""
    try:
        text = raw.decode()
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
    if "&" in text:
        bare = text.replace("&amp;", "&")  # the common reference, without a regex
        text = unescape(text) if "&" in text.replace("&amp;", "") else bare
    if text[:1] in _EDGES or text[-1:] in _EDGES:
        text = text.strip(_CONTROLS_AND_SPACE)
    if "\t" in text or "\n" in text or "\r" in text:
        text = text.translate(_TABS_AND_NEWLINES)
    return text


class _Resolver:
    """Resolves links against one base URL (RFC 3986 5.2), fragments cut.

    The common shapes (``/b``, ``a.html``, ``./c?x=1``, ``//host/x``, ``?q``) are
    joined by hand, several times faster than ``urljoin``; the rest go to it."""

    __slots__ = ("base", "directory", "origin", "plain", "scheme")

    def __init__(self, base: str) -> None:
        self.base = base.partition("#")[0]
        scheme, sep, rest = self.base.partition("://")
        self.plain = bool(sep) and _is_http(self.base)
        self.scheme = scheme.lower()
        ends = [i for i in (rest.find("/"), rest.find("?")) if i >= 0]
        cut = min(ends) if ends else len(rest)
        self.origin = f"{self.scheme}://{rest[:cut]}"
        path = rest[cut:].partition("?")[0] or "/"
        self.directory = path[: path.rfind("/") + 1]

    def __call__(self, href: str) -> str | None:
        href = href.partition("#")[0]
        if not self.plain:
            return _join(self.base, href)
        first = href[:1]
        plain = "/." not in href and "%2" not in href  # no dot segment to remove
        if first == "/":
            if href[1:2] == "/":
                return _join(self.base, href)  # another host: its authority checked
            return self.origin + (href if plain else remove_dot_segments(href))
        if first == "?":
            return self.base.partition("?")[0] + href
        if not href:
            return self.base
        if _SCHEME_RE.match(href) is not None:
            return _join(self.base, href)  # a scheme of its own, or "http:path"
        if plain and first != "." and first != "%":
            return self.origin + self.directory + href
        return self.origin + remove_dot_segments(self.directory + href)


def _join(base: str, href: str) -> str | None:
    try:
        return urljoin(base, href).partition("#")[0]
    except ValueError:  # a bad port or IPv6 address
        return None


def _is_http(url: str) -> bool:
    return url[:8].lower().startswith(("http://", "https://"))
