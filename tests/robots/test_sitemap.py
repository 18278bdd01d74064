"""The sitemaps protocol, read defensively: robotgate.robots.sitemap (pure, no I/O)."""

from __future__ import annotations

import contextlib
import gzip
import time
import tracemalloc
import zlib
from collections.abc import Iterator

import pytest

from robotgate.robots.sitemap import (
    MAX_BYTES,
    MAX_URLS,
    Scope,
    SitemapEntry,
    SitemapParser,
    parse_sitemap,
)

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
SITEMAP = "https://example.com/catalog/sitemap.xml"


class _Traced:
    peak = 0


@contextlib.contextmanager
def _traced() -> Iterator[_Traced]:
    """Allocations traced through the block; ``.peak`` is its peak in bytes afterwards."""
    traced = _Traced()
    tracemalloc.start()
    try:
        yield traced
        traced.peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def urlset(*items: str, head: str = "") -> bytes:
    return (f'{head}<urlset xmlns="{NS}" xmlns:image="http://www.google.com/schemas/'
            f'sitemap-image/1.1">{"".join(items)}</urlset>').encode()


def url(loc: str, lastmod: str | None = None, extra: str = "") -> str:
    mod = f"<lastmod>{lastmod}</lastmod>" if lastmod is not None else ""
    return f"<url><loc>{loc}</loc>{mod}{extra}</url>"


def urls_of(body: bytes, sitemap: str = SITEMAP, scope: Scope | None = None) -> list[str]:
    return [e.url for e in parse_sitemap(sitemap, body, scope).entries]


def test_a_urlset_gives_its_urls_lastmod_and_where_they_came_from() -> None:
    body = urlset(
        url(" https://example.com/catalog/a?x=1&amp;y=2 \n", "2024-05-01"),
        url("https://example.com/catalog/b", "2024-05-01T12:30:00+02:00",
            extra="<image:image><image:loc>https://cdn.example.net/i.png</image:loc>"
                  "</image:image><priority>0.8</priority>"),
        head='<?xml version="1.0" encoding="UTF-8"?>\n',
    )
    file = parse_sitemap(SITEMAP, body)
    assert file.kind == "urlset" and file.problems == ()
    assert file.entries == (
        SitemapEntry("https://example.com/catalog/a?x=1&y=2", "2024-05-01", SITEMAP),
        SitemapEntry("https://example.com/catalog/b", "2024-05-01T12:30:00+02:00", SITEMAP),
    )


def test_entries_outside_the_sitemaps_scope_are_dropped_and_counted() -> None:
    body = urlset(
        url("https://example.com/catalog/ok"),
        url("https://example.com/images/x"),            # another directory
        url("https://example.com/catalog"),             # not under /catalog/
        url("http://example.com/catalog/x"),            # another scheme
        url("https://example.com:8443/catalog/x"),      # another port
        url("https://sub.example.com/catalog/x"),       # another host
        url("https://example.com/catalog/../private"),  # sent as /private
        url("ftp://example.com/catalog/x"),
        url("/catalog/relative"),
    )
    file = parse_sitemap(SITEMAP, body)
    assert [e.url for e in file.entries] == ["https://example.com/catalog/ok"]
    assert any(p.startswith("6 URLs outside the sitemap's scope (https://example.com/catalog/)")
               for p in file.problems), file.problems
    assert any(p.startswith("2 URLs not absolute http(s)") for p in file.problems)


def test_a_dropped_url_is_shown_without_its_password() -> None:
    file = parse_sitemap(SITEMAP, urlset(url("https://user:secret@example.com/private/x")))
    assert file.entries == () and "secret" not in " ".join(file.problems)
    assert "https://user:***@example.com/private/x" in file.problems[0]


def test_a_sitemap_robots_txt_names_may_list_any_url_of_that_site() -> None:
    # sitemaps.org: robots.txt of www.host1.com naming a sitemap on another host proves
    # ownership of host1; the sitemap's own directory stays in scope too.
    scope = Scope.of("https://sitemaps.example.net/host1/sitemap.xml",
                     vouched_by="https://www.host1.com")
    body = urlset(url("https://www.host1.com/anywhere/x"),
                  url("https://sitemaps.example.net/host1/page"),
                  url("https://sitemaps.example.net/other/page"),
                  url("https://www.host2.com/x"))
    assert urls_of(body, "https://sitemaps.example.net/host1/sitemap.xml", scope) == [
        "https://www.host1.com/anywhere/x", "https://sitemaps.example.net/host1/page"]
    # Named by its own site's robots.txt: the whole site, whatever its directory.
    own = Scope.of("https://example.com/deep/dir/sitemap.xml", vouched_by="https://example.com")
    assert own.admits("https://example.com/elsewhere")


def test_a_gzipped_sitemap_is_inflated_whole_or_fed_byte_by_byte() -> None:
    body = urlset(*(url(f"https://example.com/catalog/{i}") for i in range(100)))
    packed = gzip.compress(body)
    assert urls_of(packed) == urls_of(body) and len(urls_of(body)) == 100
    parser = SitemapParser(SITEMAP)
    for i in range(len(packed)):
        parser.feed(packed[i:i + 1])
    assert [e.url for e in parser.close().entries] == urls_of(body)
    # Two gzip members, as `cat a.gz b.gz` makes them.
    half = len(body) // 2
    assert urls_of(gzip.compress(body[:half]) + gzip.compress(body[half:])) == urls_of(body)


def test_a_text_sitemap_gives_one_url_a_line() -> None:
    body = (b"\xef\xbb\xbfhttps://example.com/catalog/1\r\n\n  https://example.com/catalog/2  \n"
            b"not a url\nhttps://example.com/other\n" + b"https://example.com/catalog/" +
            b"x" * 5000 + b"\nhttps://example.com/catalog/3")
    file = parse_sitemap(SITEMAP, body)
    assert file.kind == "text"
    assert [e.url for e in file.entries] == [
        "https://example.com/catalog/1", "https://example.com/catalog/2",
        "https://example.com/catalog/3"]
    assert all(e.lastmod is None for e in file.entries)
    assert any("longer than 2,048 characters" in p for p in file.problems)
    assert urls_of(gzip.compress(body)) == [e.url for e in file.entries]


def test_a_text_sitemap_cut_short_keeps_no_part_of_a_url() -> None:
    parser = SitemapParser(SITEMAP)
    parser.feed(b"https://example.com/catalog/1\nhttps://example.com/catalog/22")
    file = parser.close(cut=True)  # the connection dropped: "/22" may be "/2222..."
    assert [e.url for e in file.entries] == ["https://example.com/catalog/1"]
    assert file.problems == ("the last line is cut short: not read",)


def test_an_index_lists_its_sitemaps_on_its_own_site_only() -> None:
    body = (f'<sitemapindex xmlns="{NS}"><sitemap><loc>https://example.com/s1.xml.gz</loc>'
            "<lastmod>2024-01-01</lastmod></sitemap>"
            "<sitemap><loc>https://evil.example.net/s.xml</loc></sitemap>"
            "<sitemap><loc>https://example.com/anywhere/s2.txt</loc></sitemap>"
            "</sitemapindex>").encode()
    file = parse_sitemap(SITEMAP, body)
    assert file.kind == "index" and file.entries == ()
    assert [(c.url, c.lastmod) for c in file.children] == [
        ("https://example.com/s1.xml.gz", "2024-01-01"),
        ("https://example.com/anywhere/s2.txt", None)]
    assert any("1 sitemap on another site than the index dropped" in p for p in file.problems)


@pytest.mark.parametrize("doctype", [
    # The billion laughs: ten levels of ten.
    '<!DOCTYPE lolz [<!ENTITY lol "lol">' + "".join(
        f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10 if i > 1 else "&lol;" * 10}">'
        for i in range(1, 10)) + "]>",
    # An external entity: a file of the machine, or the network.
    '<!DOCTYPE u [<!ENTITY x SYSTEM "file:///etc/passwd">]>',
    '<!DOCTYPE u [<!ENTITY x SYSTEM "http://127.0.0.1:9/x">]>',
    # A parameter entity fetching an external DTD.
    '<!DOCTYPE u [<!ENTITY % dtd SYSTEM "http://127.0.0.1:9/x.dtd"> %dtd;]>',
])
def test_entity_declarations_are_refused_before_any_expansion(doctype: str) -> None:
    body = (f'<?xml version="1.0"?>{doctype}<urlset xmlns="{NS}">'
            "<url><loc>https://example.com/catalog/&lol9;&x;</loc></url></urlset>").encode()
    started = time.perf_counter()
    file = parse_sitemap(SITEMAP, body)
    assert time.perf_counter() - started < 5  # a bound, not a speed: expansion would not end
    assert file.entries == ()
    assert len(file.problems) == 1 and "refused" in file.problems[0], file.problems


def test_an_undeclared_entity_ends_the_read_keeping_what_came_before() -> None:
    body = urlset(url("https://example.com/catalog/1"), url("https://example.com/catalog/&x;"),
                  url("https://example.com/catalog/3"))
    file = parse_sitemap(SITEMAP, body)
    assert [e.url for e in file.entries] == ["https://example.com/catalog/1"]
    assert file.problems and "undefined entity" in file.problems[0]


def test_a_broken_sitemap_gives_what_could_be_read_and_why() -> None:
    body = urlset(*(url(f"https://example.com/catalog/{i}") for i in range(10)))
    cut = body[: body.index(b"/catalog/7")]
    file = parse_sitemap(SITEMAP, cut)
    assert len(file.entries) == 7 and "the XML is broken" in file.problems[0]
    file = parse_sitemap(SITEMAP, gzip.compress(body)[:-30])
    assert "the gzip data ends early" in file.problems[0]
    corrupt = bytearray(gzip.compress(body))
    corrupt[20:40] = b"\xff" * 20
    assert "corrupt" in parse_sitemap(SITEMAP, bytes(corrupt)).problems[0]


@pytest.mark.parametrize(("body", "why"), [
    (b"", "the file is empty"),
    (b" \n\t ", "the file is empty"),
    (b"<", "the XML is broken"),
    (b"<html><body>Not found</body></html>", "not a sitemap: the root element is <html>"),
    # RSS 1.0 is no feed the protocol accepts (RSS 2.0 and Atom are, below).
    (b'<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"/>',
     "not a sitemap: the root element is <RDF>"),
    (b"\x1f\x8b", "the gzip data ends early"),
])
def test_what_is_no_sitemap_says_so(body: bytes, why: str) -> None:
    file = parse_sitemap(SITEMAP, body)
    assert file.kind == "" and file.entries == ()
    assert file.problems and file.problems[0].startswith(why), file.problems


def test_long_urls_and_bad_lastmod_are_dropped_and_said() -> None:
    body = urlset(url("https://example.com/catalog/" + "a" * 2100),
                  url("https://example.com/catalog/ok", "yesterday"),
                  url("https://example.com/catalog/ok2", "2024-1-1"),
                  "<url><lastmod>2024-01-01</lastmod></url>")
    file = parse_sitemap(SITEMAP, body)
    assert [(e.url, e.lastmod) for e in file.entries] == [
        ("https://example.com/catalog/ok", None), ("https://example.com/catalog/ok2", None)]
    text = " | ".join(file.problems)
    assert "1 URL longer than 2,048 characters dropped" in text
    assert "2 lastmod values ignored" in text and "1 URL without a <loc> dropped" in text


@pytest.mark.slow
def test_no_more_than_50000_urls_are_read_from_one_file() -> None:
    items = "".join(f"<url><loc>https://example.com/catalog/{i}</loc></url>"
                    for i in range(MAX_URLS + 5))
    file = parse_sitemap(SITEMAP, urlset(items))
    assert len(file.entries) == MAX_URLS
    assert file.entries[-1].url == f"https://example.com/catalog/{MAX_URLS - 1}"
    assert any("more than the protocol's 50,000 URLs" in p for p in file.problems)


def _sixty_megabytes(gzipped: bool) -> Iterator[bytes]:
    """A 60 MB sitemap in 64 KiB pieces: a URL, then blank padding, again and again."""
    pad = b" " * 65_000
    packer = zlib.compressobj(9, zlib.DEFLATED, 31) if gzipped else None
    sent = 0
    i = 0
    pieces = [f'<urlset xmlns="{NS}">'.encode()]
    while sent < 60 * 1024 * 1024:
        pieces.append(f"<url><loc>https://example.com/catalog/{i}</loc></url>".encode() + pad)
        i += 1
        for piece in pieces:
            sent += len(piece)
            yield packer.compress(piece) if packer is not None else piece
        pieces = []
    if packer is not None:
        yield packer.flush()


@pytest.mark.slow
@pytest.mark.parametrize("gzipped", [False, True])
def test_a_60_mb_sitemap_is_read_to_50_mb_in_bounded_memory(gzipped: bool) -> None:
    parser = SitemapParser(SITEMAP)
    with _traced() as traced:
        for chunk in _sixty_megabytes(gzipped):
            if chunk and not parser.feed(chunk):
                break
        file = parser.close()
    peak = traced.peak
    # Each URL and its padding is 65,000 + ~55 bytes: the first 50 MB hold 806 of them.
    per_url = 65_000 + len(b"<url><loc>https://example.com/catalog/0</loc></url>")
    assert 800 <= len(file.entries) <= MAX_BYTES // per_url + 1
    assert file.entries[0].url == "https://example.com/catalog/0"
    assert any("larger than the protocol's 52,428,800 bytes" in p for p in file.problems)
    assert peak < 4 * 1024 * 1024, f"peak {peak:,} bytes"  # the stated bound: 4 MiB


@pytest.mark.slow
def test_a_gzip_bomb_inflates_no_further_than_the_limit() -> None:
    packer = zlib.compressobj(1, zlib.DEFLATED, 31)
    bomb = packer.compress(urlset(url("https://example.com/catalog/1")).replace(b"</urlset>", b""))
    bomb += b"".join(packer.compress(b" " * (1 << 20)) for _ in range(40)) + packer.flush()
    assert len(bomb) < 1024 * 1024  # 40 MB inflated
    parser = SitemapParser(SITEMAP, max_bytes=8 * 1024 * 1024)
    with _traced() as traced:
        parser.feed(bomb)
        file = parser.close()
    peak = traced.peak
    assert [e.url for e in file.entries] == ["https://example.com/catalog/1"]
    assert "larger than the protocol's 8,388,608 bytes" in file.problems[0]
    assert peak < 4 * 1024 * 1024, f"peak {peak:,} bytes"


def test_a_token_too_long_to_be_a_sitemaps_ends_the_read_in_bounded_memory() -> None:
    parser = SitemapParser(SITEMAP)
    with _traced() as traced:
        parser.feed(urlset(url("https://example.com/catalog/1")).replace(b"</urlset>", b""))
        comment = b"<!--" + b"x" * 65536
        for _ in range(100):  # 6.5 MB of one comment, which expat would hold whole
            if not parser.feed(comment[4:] if _ else comment):
                break
        file = parser.close()
    peak = traced.peak
    assert [e.url for e in file.entries] == ["https://example.com/catalog/1"]
    assert "a single token longer than 1,048,576 bytes" in file.problems[0]
    assert peak < 8 * 1024 * 1024, f"peak {peak:,} bytes"


def test_what_follows_the_root_element_is_not_read() -> None:
    parser = SitemapParser(SITEMAP)
    assert parser.feed(urlset(url("https://example.com/catalog/1"))) is False
    assert parser.feed(b"<junk/>" * 10) is False
    file = parser.close()
    assert [e.url for e in file.entries] == ["https://example.com/catalog/1"]
    assert file.problems == ()


def test_a_utf16_sitemap_with_its_bom_is_read() -> None:
    body = ('<?xml version="1.0" encoding="UTF-16"?>' + urlset(
        url("https://example.com/catalog/caf\u00e9")).decode()).encode("utf-16")
    assert urls_of(body) == ["https://example.com/catalog/caf\u00e9"]


def test_elements_nested_past_the_limit_end_the_read_in_bounded_memory() -> None:
    parser = SitemapParser(SITEMAP)
    with _traced() as traced:
        parser.feed(urlset(url("https://example.com/catalog/1")).replace(b"</urlset>", b""))
        nested = b"<a:x xmlns:a='urn:x'>" * 3000
        for _ in range(100):  # 6 MB of elements each inside the last
            if not parser.feed(nested):
                break
        file = parser.close()
    peak = traced.peak
    assert [e.url for e in file.entries] == ["https://example.com/catalog/1"]
    assert file.problems == ("the XML nests deeper than 64 elements: the rest is not read",)
    assert peak < 4 * 1024 * 1024, f"peak {peak:,} bytes"


# -- entries handed out as they are read ----------------------------------------------------


def test_entries_are_handed_out_as_each_piece_is_read_and_kept_by_no_one() -> None:
    body = urlset(*(url(f"https://example.com/catalog/{i}") for i in range(300)))
    parser = SitemapParser(SITEMAP)
    taken: list[str] = []
    pieces = [body[i:i + 1000] for i in range(0, len(body), 1000)]
    for n, piece in enumerate(pieces):
        parser.feed(piece)
        got = parser.take()
        taken += [e.url for e in got]
        if n == 0:
            assert got, "the first piece's entries come out with it"
    file = parser.close()
    assert file.entries == () and file.problems == ()  # all were taken
    assert taken == urls_of(body)
    # An index hands out its sitemaps the same way.
    parser = SitemapParser(SITEMAP)
    parser.feed(f'<sitemapindex xmlns="{NS}"><sitemap><loc>https://example.com/s1.xml</loc>'
                "</sitemap>".encode())
    assert [c.url for c in parser.take()] == ["https://example.com/s1.xml"]


@pytest.mark.slow
def test_iterating_a_50000_url_file_as_it_is_read_holds_no_more_than_a_piece() -> None:
    items = "".join(f"<url><loc>https://example.com/catalog/item-{i:07d}-a-long-slug.html</loc>"
                    f"<lastmod>2024-05-01</lastmod><changefreq>weekly</changefreq>"
                    "<priority>0.5</priority></url>\n" for i in range(MAX_URLS))
    body = urlset(items)
    pieces = [body[i:i + 65536] for i in range(0, len(body), 65536)]
    parser = SitemapParser(SITEMAP)
    seen = 0
    with _traced() as traced:
        for piece in pieces:
            parser.feed(piece)
            seen += len(parser.take())
        file = parser.close()
    assert seen == MAX_URLS and file.problems == ()
    assert traced.peak < 4 * 1024 * 1024, f"peak {traced.peak:,} bytes"


# -- feeds: RSS 2.0 and Atom, as the protocol allows ----------------------------------------


def test_an_rss_feed_gives_its_items_links_and_dates() -> None:
    body = b"""<?xml version="1.0"?>
<rss version="2.0"><channel><title>News</title><link>https://example.com/catalog/</link>
<item><title>A</title><link>https://example.com/catalog/a</link>
  <pubDate>Wed, 01 May 2024 12:00:00 GMT</pubDate></item>
<item><link> https://example.com/catalog/b?x=1&amp;y=2 </link><pubDate>soon</pubDate></item>
<item><link>https://elsewhere.example/x</link></item>
<item><title>no link</title></item>
</channel></rss>"""
    file = parse_sitemap(SITEMAP, body)
    assert file.kind == "feed"
    assert [(e.url, e.lastmod) for e in file.entries] == [
        ("https://example.com/catalog/a", "2024-05-01T12:00:00+00:00"),
        ("https://example.com/catalog/b?x=1&y=2", None)]
    text = " | ".join(file.problems)
    assert "1 URL outside the sitemap's scope" in text and "1 URL without a <loc>" in text
    assert "1 lastmod values ignored: no W3C datetime, e.g. soon" in text


@pytest.mark.parametrize(("ns", "updated"), [
    ("http://www.w3.org/2005/Atom", "updated"),  # Atom 1.0
    ("http://purl.org/atom/ns#", "modified"),    # Atom 0.3
])
def test_an_atom_feed_gives_its_entries_links_and_dates(ns: str, updated: str) -> None:
    body = f"""<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="{ns}"><title>News</title><link href="https://example.com/catalog/"/>
<entry><title>A</title><link rel="alternate" href="https://example.com/catalog/a"/>
  <link rel="edit" href="https://example.com/catalog/edit/a"/>
  <{updated}>2024-05-01T12:00:00Z</{updated}></entry>
<entry><link rel="enclosure" href="https://example.com/catalog/a.mp3"/>
  <link href="https://example.com/catalog/b"/></entry>
</feed>""".encode()
    file = parse_sitemap(SITEMAP, body)
    assert file.kind == "feed" and file.problems == ()
    assert [(e.url, e.lastmod) for e in file.entries] == [
        ("https://example.com/catalog/a", "2024-05-01T12:00:00Z"),
        ("https://example.com/catalog/b", None)]


def test_a_feed_keeps_the_sitemaps_guarantees() -> None:
    # Entities refused, scope kept, a feed of another vocabulary read as no sitemap.
    body = (b'<?xml version="1.0"?><!DOCTYPE rss [<!ENTITY x "y">]><rss version="2.0">'
            b"<channel><item><link>https://example.com/catalog/&x;</link></item></channel></rss>")
    file = parse_sitemap(SITEMAP, body)
    assert file.entries == () and "refused" in file.problems[0]
    file = parse_sitemap(SITEMAP, b'<feed xmlns="urn:other"><entry/></feed>')
    assert file.kind == "" and file.problems[0].startswith("not a sitemap: the root element is")


def test_a_field_is_measured_without_its_leading_blank() -> None:
    blank = " \n" * 3000
    body = urlset(url(blank + "https://example.com/catalog/a" + blank[:100]),
                  url("https://example.com/catalog/" + "b" * 3000))
    file = parse_sitemap(SITEMAP, body)
    assert [e.url for e in file.entries] == ["https://example.com/catalog/a"]
    assert any("1 URL longer than 2,048 characters dropped" in p for p in file.problems)
    parser = SitemapParser(SITEMAP)  # the same, the blank fed a byte at a time
    for i in range(len(body)):
        parser.feed(body[i:i + 1])
    assert [e.url for e in parser.close().entries] == ["https://example.com/catalog/a"]


@pytest.mark.parametrize("pieces", [
    [b"\xef\xbb\xbf", b"\xef\xbb\xbf"],  # a second mark is a byte of text, not a mark
    [b"\n\n\n", b"\xff\xfe<\x00"],  # a UTF-16 mark after a blank is no mark
    [b"\xef", b"\xbb", b"\xbf", b"https://example.com/catalog/a\n"],
], ids=["two-utf8-marks", "utf16-mark-after-a-blank", "a-mark-a-byte-at-a-time"])
def test_a_byte_order_mark_counts_only_at_the_first_byte_however_the_body_is_cut(
        pieces: list[bytes]) -> None:
    parser = SitemapParser(SITEMAP)
    for piece in pieces:
        parser.feed(piece)
    assert parser.close() == parse_sitemap(SITEMAP, b"".join(pieces))
