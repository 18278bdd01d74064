"""Hostile XML and text never raise out of the sitemap parser, and stay bounded.

Whatever the bytes (random, XML-shaped from hostile pieces, gzipped, cut
anywhere, fed in any pieces): ``close()`` answers a :class:`SitemapFile`, every
entry is an http(s) URL in the sitemap's scope, no more than the limits allow.
"""

from __future__ import annotations

import gzip
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from robotgate.robots.sitemap import MAX_URL_LENGTH, SitemapFile, SitemapParser, parse_sitemap

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FEW = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])

SITEMAP = "https://example.com/catalog/sitemap.xml"
NS = "http://www.sitemaps.org/schemas/sitemap/0.9"

# Pieces a hostile or broken sitemap is made of.
PIECES = st.sampled_from([
    f'<urlset xmlns="{NS}">', "</urlset>", f'<sitemapindex xmlns="{NS}">', "</sitemapindex>",
    "<url>", "</url>", "<sitemap>", "</sitemap>", "<loc>", "</loc>", "<lastmod>", "</lastmod>",
    "https://example.com/catalog/a", "https://example.com/catalog/b?x=1&amp;y=2",
    "https://example.com/other", "https://evil.example/catalog/x", "javascript:alert(1)",
    "2024-05-01", "2024-05-01T12:00:00Z", "&lol;", "&#0;", "&#x10FFFF;", "&amp;", "&", "<",
    '<?xml version="1.0" encoding="UTF-8"?>', '<?xml version="1.0" encoding="ISO-8859-1"?>',
    '<!DOCTYPE u [<!ENTITY lol "lollollol">]>', '<!DOCTYPE u SYSTEM "http://127.0.0.1:9/x">',
    '<!DOCTYPE u [<!ENTITY x SYSTEM "file:///etc/passwd">]>', "<!ELEMENT u ANY>",
    "<![CDATA[https://example.com/catalog/c]]>", "<!-- c -->", "<?pi x?>", "\x00", "\ufeff",
    "\n", " ", "\t", "<a:url xmlns:a='urn:x'>", "</a:url>", "<loc xmlns='urn:y'>",
    "<image:loc>", "</image:loc>", "é", "\u2028", "x" * 300,
])


def xmlish() -> st.SearchStrategy[bytes]:
    return st.lists(PIECES, max_size=60).map("".join).map(str.encode)


def splits(body: bytes) -> st.SearchStrategy[list[bytes]]:
    """``body`` cut into pieces at random points."""
    return st.lists(st.integers(0, len(body)), max_size=8).map(
        lambda cuts: [body[a:b] for a, b in zip([0, *sorted(cuts)], [*sorted(cuts), len(body)],
                                                strict=True)])


def check(file: SitemapFile, max_urls: int = 50_000) -> None:
    assert isinstance(file, SitemapFile)
    assert file.kind in ("", "urlset", "index", "text")
    assert len(file.entries) + len(file.children) <= max_urls
    for entry in file.entries:
        assert entry.url.startswith("https://example.com/catalog/"), entry
        assert len(entry.url) < MAX_URL_LENGTH and entry.sitemap == SITEMAP
    for child in file.children:
        assert child.url.startswith("https://example.com/"), child
    if file.kind == "":
        assert file.entries == () and file.children == () and file.problems
    assert all(isinstance(p, str) and p for p in file.problems)


@pytest.mark.slow
@SETTINGS
@given(st.binary(max_size=4096))
def test_random_bytes_never_raise(body: bytes) -> None:
    check(parse_sitemap(SITEMAP, body))
    check(parse_sitemap(SITEMAP, gzip.compress(body)))


@pytest.mark.slow
@SETTINGS
@given(xmlish())
def test_hostile_xml_never_raises_and_keeps_to_scope(body: bytes) -> None:
    check(parse_sitemap(SITEMAP, body))


@pytest.mark.slow
@SETTINGS
@given(st.lists(st.sampled_from([
    "https://example.com/catalog/a", "https://example.com/elsewhere", "ftp://x/y", "", " ",
    "\r", "\x00", "https://example.com/catalog/" + "é" * 3, "x" * 3000, "\ufeff", "\x1b[2J",
]), max_size=50).map("\n".join).map(str.encode))
def test_hostile_text_never_raises_and_keeps_to_scope(body: bytes) -> None:
    check(parse_sitemap(SITEMAP, body))


@pytest.mark.slow
@SETTINGS
@given(st.data())
def test_any_pieces_read_as_the_whole(data: st.DataObject) -> None:
    body = data.draw(st.one_of(xmlish(), xmlish().map(gzip.compress)))
    whole = parse_sitemap(SITEMAP, body)
    parser = SitemapParser(SITEMAP)
    for piece in data.draw(splits(body)):
        if not parser.feed(piece):
            break
    assert parser.close() == whole


@pytest.mark.slow
@SETTINGS
@given(xmlish(), st.integers(0, 5), st.integers(1, 4096))
def test_smaller_limits_hold(body: bytes, max_urls: int, max_bytes: int) -> None:
    parser = SitemapParser(SITEMAP, max_urls=max_urls, max_bytes=max_bytes)
    parser.feed(body)
    check(parser.close(), max_urls)


@pytest.mark.slow
@FEW
@given(PIECES, st.integers(1, 2))
def test_one_piece_repeated_to_megabytes_stays_bounded(piece: str, copies: int) -> None:
    """A piece repeated to 1-2 MB, inside an urlset: memory stays near a chunk's worth
    (an element nested in itself 40,000 times once took 9 MB: expat keeps each level)."""
    unit = piece.encode()
    chunk = unit * (65536 // len(unit) + 1)
    parser = SitemapParser(SITEMAP)
    tracemalloc.start()
    try:
        parser.feed(f'<urlset xmlns="{NS}"><url><loc>'.encode())
        for _ in range(16 * copies):
            if not parser.feed(chunk):
                break
        file = parser.close()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    check(file)
    assert peak < 8 * 1024 * 1024, f"peak {peak:,} bytes for {piece!r}"
