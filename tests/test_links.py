"""robotgate.page_links: the links of a page as a browser reads them, bounded and linear."""

from __future__ import annotations

import asyncio
import contextlib
import time
import tracemalloc
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

import pytest
from aiohttp import web
from hypothesis import given, settings
from hypothesis import strategies as st

from robotgate import RobotGate, links, page_links
from robotgate.links import MAX_HREF_BYTES, LinkReader, link_resolver, read_links

PAGE = "http://h.example/dir/page.html?q=1"


def test_relative_links_resolve_against_the_page() -> None:
    body = b'<a href="a.html">1</a><a href=/b>2</a><a href=\'./c?x=1\'>3</a><A HREF=sub/>4</A>'
    assert page_links(body, PAGE) == [
        "http://h.example/dir/a.html", "http://h.example/b",
        "http://h.example/dir/c?x=1", "http://h.example/dir/sub/"]


def test_the_first_base_href_is_the_page_s_base() -> None:
    body = (b'<head><BASE target=_top><base href="https://other.example/docs/">'
            b'<base href="/ignored/"></head><a href="../up">1</a><a href="x">2</a>')
    assert page_links(body, PAGE) == ["https://other.example/up", "https://other.example/docs/x"]


def test_entities_quotes_case_and_spaces_in_attributes() -> None:
    body = (b'<a class=x href="/s?a=1&amp;b=2">1</a><AREA alt="y" HREF=\'/area\'>'
            b'<a\nhref\n=\n" /sp\tace ">3</a><a title="x>y" href=/after-gt>4</a>'
            b'<a href="/e&#x3f;q">5</a>')
    assert page_links(body, PAGE) == [
        "http://h.example/s?a=1&b=2", "http://h.example/area", "http://h.example/space",
        "http://h.example/after-gt", "http://h.example/e?q"]


def test_links_left_out_are_counted_by_reason() -> None:
    body = (b'<a href="javascript:void(0)">j</a><a href="mailto:a@b.example">m</a>'
            b'<a href="data:text/html,hi">d</a><a href="tel:123">t</a>'
            b'<a rel="external NoFollow" href="/nf">n</a><a href="#top">t</a><a href="">e</a>'
            b'<a href="/kept#frag">k</a><a href="/kept">again</a>'
            b'<a href="' + b"x" * (MAX_HREF_BYTES + 1) + b'">long</a>')
    found = read_links(body, PAGE)
    assert found.urls == ["http://h.example/kept"]
    assert (found.nofollow, found.other_schemes, found.invalid) == (1, 4, 1)


def test_comments_scripts_and_other_tags_hold_no_links() -> None:
    body = (b'<title><a href=/t></title><!-- <a href="/c"> --><script>"<a href=/s>"</script >'
            b'<style>a{}</style><abbr href=/no>x</abbr><textarea><a href=/ta></textarea>'
            b'<a href=/yes>ok</a>')
    assert page_links(body, PAGE) == ["http://h.example/yes"]


def test_bytes_that_are_not_utf8_are_read_as_latin1() -> None:
    assert page_links(b'<a href="/caf\xe9">', PAGE) == ["http://h.example/caf\xe9"]


@pytest.mark.parametrize("hostile", [
    b'<a x="a" ' * 50_000, b"<a " + b"x=" * 200_000, b"<!--" * 200_000,
    b"<script>" * 100_000, b'<a href="' + b"a" * 2_000_000, b"<a" + b" " * 2_000_000,
    b"<a x" + b"=" * 200_000,
])
def test_hostile_pages_are_read_in_linear_time(hostile: bytes) -> None:
    # Each input is ~1-2 MB; quadratic work would take minutes, linear takes milliseconds.
    began = time.process_time()
    read_links(hostile, PAGE)
    assert time.process_time() - began < 5.0


def test_links_of_every_shape_resolve_as_one_at_a_time() -> None:
    # Joined in bulk or one at a time, each link resolves as the resolver has it.
    body = (b'<a href="/a/../b">1</a><a href="../../up">2</a><a href="../side">3</a>'
            b'<a href="?q=1">4</a><a href="//other.example/x">5</a><a href="a:b">6</a>'
            b'<a href="./c">7</a><a href="%2E%2E/d">8</a><a href="HTTP://H.example/e">9</a>'
            b'<a href="plain">10</a><a href="/root">11</a>')
    base = "http://h.example/one/two/page?x=1"
    hrefs = [part.split(b'"')[0].decode() for part in body.split(b'href="')[1:]]
    assert page_links(body, base) == _one_at_a_time(hrefs, base)
    assert page_links(body, base)[:4] == [
        "http://h.example/b", "http://h.example/up", "http://h.example/one/side",
        "http://h.example/one/two/page?q=1"]


def test_a_base_written_in_capitals_keeps_its_scheme_for_a_query() -> None:
    assert page_links(b'<a href="?q">', "HTTP://h.example/p?x") == ["HTTP://h.example/p?q"]
    assert page_links(b'<a href="../x">', "https://h.example/a/b/") == [
        "https://h.example/a/x"]


def test_a_base_href_holding_a_nul_does_not_part_the_links() -> None:
    found = page_links(b'<base href="http://h.example/a\0b/"><a href="c">1</a><a href="/d">',
                       PAGE)
    assert found == ["http://h.example/a\0b/c", "http://h.example/d"]


def _one_at_a_time(hrefs: list[str], base: str) -> list[str]:
    """The links as read one by one through the resolver the crawl uses."""
    resolve = link_resolver(base, None)
    out = []
    for href in hrefs:
        href = href.strip(" ")
        if not href or href[0] == "#":
            continue
        if href.startswith(("http://", "https://")):
            url: str | None = href.partition("#")[0]
        else:
            url = resolve(href)
            if url is None or not url.lower().startswith(("http://", "https://")):
                continue
        out.append(url)
    return list(dict.fromkeys(out))


_HREF_PART = st.sampled_from(
    ["/", ".", "..", "./", "../", "%2E", "%2e", "%", "?", "#", ":", "a", "b.html", "//",
     "http://x.example/", "HTTP://", "mailto:", "[::1]", ":80", " ", "x=1"])
_BASES = st.sampled_from(
    ["http://h.example/dir/page.html?q=1", "https://h.example", "https://h.example/a.b/c/",
     "http://h.example/%2E/x/", "HTTP://H.example/A/", "ftp://h.example/x/", "http://u:p@h:81/"])


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(_HREF_PART, max_size=6).map("".join), max_size=12), _BASES)
def test_links_joined_in_bulk_equal_links_joined_one_at_a_time(
        hrefs: list[str], base: str) -> None:
    body = "".join(f'<a href="{href}">x</a>' for href in hrefs).encode()
    assert page_links(body, base) == _one_at_a_time(hrefs, base)


@pytest.mark.parametrize("href", [b"/a" * 4000, b"a%" * 4000, b"../" * 2700, b"a/." * 2700])
def test_links_of_many_slashes_or_escapes_are_joined_in_linear_time(href: bytes) -> None:
    began = time.process_time()
    read_links(b'<a href="' + href + b'">x</a> ' * 200, PAGE)
    assert time.process_time() - began < 5.0


class _Counted:
    """A compiled pattern whose ``match`` calls are counted."""

    def __init__(self, pattern: Any) -> None:
        self.pattern = pattern
        self.calls = 0

    def match(self, *args: Any) -> Any:
        self.calls += 1
        return self.pattern.match(*args)


@pytest.mark.parametrize("hostile", [
    b"<a href" + b"=" * 3_000_000 + b">",  # issue 77: 1.8 GB
    b"<a " + b"x=1 " * 2_000_000 + b"href=/late>",  # 1.45 GB
    b"<a " * 3_000_000,  # 363 MB
    # a quarter of a million tags: none held at once (the longest: CI runs it every time)
    pytest.param(b"<a >" * 250_000, marks=pytest.mark.soak),
    b'<a x="a" ' * 100_000,
])
def test_hostile_pages_are_read_in_bounded_memory_and_work(
        hostile: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    more = _Counted(getattr(links, "_TAG_MORE_RE", None))
    attributes = _Counted(getattr(links, "_ATTRIBUTES_RE", None))
    monkeypatch.setattr(links, "_TAG_MORE_RE", more, raising=False)
    monkeypatch.setattr(links, "_ATTRIBUTES_RE", attributes, raising=False)
    tracemalloc.start()
    try:
        found = read_links(hostile, PAGE)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # At most a copy of one value (the page's bytes themselves are not counted).
    assert peak < len(hostile) + 2**20, f"peak {peak:,} bytes"
    # Each step of a long tag reads up to 256 values or attributes, in C.
    assert more.calls + attributes.calls <= len(hostile) // 256 + 10
    assert found.urls in ([], ["http://h.example/late"])


def test_links_are_stripped_of_controls_and_spaces_as_the_url_parser_does() -> None:
    body = (b'<a href="\x01javascript:x">j</a><a href="\x1f /a \x0b">a</a>'
            b'<a href=" \x02/b\x03">b</a><a href="/c\td\ne\x1c">c</a>')
    found = read_links(body, PAGE)
    assert found.urls == ["http://h.example/a", "http://h.example/b",
                          "http://h.example/cde"]
    assert found.other_schemes == 1
    assert link_resolver(PAGE, None)("\x01javascript:x") == "javascript:x"
    assert page_links(b'<base href="\x05https://other.example/d/"><a href=x>', PAGE) == [
        "https://other.example/d/x"]


@contextlib.asynccontextmanager
async def html_site(pages: dict[str, bytes]) -> AsyncIterator[tuple[int, list[str]]]:
    """A loopback site with no robots.txt serving ``pages`` (any other path: ``end``):
    its port, and the paths asked of it."""
    asked: list[str] = []

    async def answer(request: web.Request) -> web.Response:
        asked.append(request.path)
        if request.path == "/robots.txt":
            return web.Response(status=404)
        return web.Response(body=pages.get(request.path, b"end"), content_type="text/html")

    app = web.Application()
    app.router.add_get("/{tail:.*}", answer)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield site._server.sockets[0].getsockname()[1], asked  # type: ignore[union-attr]
    finally:
        await runner.cleanup()


#: A heavy page: 16 MB, 260,000 links (to another host: counted, not crawled), all
#: read (MAX_PAGE_BYTES).
HEAVY = (b"<html><body>"
         + b"".join(b'<p><a href="http://other.test/p/%d?x#f">link %d</a></p>\n' % (i, i)
                    for i in range(260_000)))


@pytest.mark.slow
async def test_a_heavy_page_s_links_are_all_read_and_counted() -> None:
    # That they are read without holding the loop is counted, not timed: LinkReader's
    # steps (above) and the links judged a loop turn (tests/crawl/test_frontier.py);
    # benchmarks/stalls.py measures the stall.
    pages = {"/": HEAVY}
    seen: list[int] = []

    async def handler(url: str, resp: Any) -> None:
        seen.append(len(await resp.read()))

    async with (html_site(pages) as (port, _),
                RobotGate("LinkTest/1.0 (+https://example.com/bot)", delay=0) as gate):
        summary = await asyncio.wait_for(gate.crawl(
            [f"http://127.0.0.1:{port}/"], handler, follow_links=True), 120)  # hang guard
    assert seen == [len(HEAVY)]
    assert summary.links == 260_000 and summary.out_of_scope == 260_000


async def test_a_long_page_s_base_resolves_its_handler_s_links() -> None:
    # The handler returns a relative link of a long page: it resolves against the
    # page's <base href>, looked for a step at a time.
    big = b"<p>" + b"x" * (1 << 20) + b'<base href="/deep/">'

    async def handler(url: str, resp: Any) -> list[str]:
        await resp.read()
        return ["next"] if urlsplit(url).path == "/" else []

    async with (html_site({"/": big}) as (port, asked),
                RobotGate("LinkTest/1.0 (+https://example.com/bot)", delay=0) as gate):
        await asyncio.wait_for(gate.crawl([f"http://127.0.0.1:{port}/"], handler), 30)
    assert "/deep/next" in asked, asked


def test_a_page_read_a_step_at_a_time_gives_the_same_links(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(links, "_WINDOW", 64)  # windows cut through every kind of markup
    parts = [b"<a href=x>", b"<a href='y z'>", b"<!-- c -->", b"<script>s</script>", b"<p>",
             b"text ", b"<base href=/b/>", b'<area href="q">', b"<a\nhref=w\n", b"<!--",
             b"</script>", b"<a rel=nofollow href=n>", b'<a x=1 y=2 href="a long value">',
             b"<a " + b"v=1 " * 300 + b"href=/long>", b"<plaintext>"]
    for seed in range(400):
        body = b"".join(parts[(seed * 7 + i * i) % len(parts)] for i in range(seed % 50))
        reader = links.LinkReader(body, PAGE)
        for _ in range(len(body) + 10):  # bounded: each step reads on
            if reader.step():
                break
        assert reader.links() == read_links(body, PAGE), body


@pytest.mark.parametrize("body", [
    b'<base href="/d/"><a class=x href="a">1</a><!-- <a href=/c> --><A HREF=\'/b\' rel=nofollow>'
    b'<script><a href=/s></script><area alt="x>y" href="../e"><a href=/f rel="x">'
    b'<a x="' + b"=" * 300 + b'" href="/g"><a ' + b"v=1 " * 600 + b'href="/h" rel=nofollow>'
    b'<a ' + b"v=1 " * 600 + b'href="/i"><a href="/last"',
    b'<a title="' + b"=" * 5000 + b'">x</a><a href=/after>',
])
def test_a_page_read_at_once_or_a_piece_at_a_time_gives_the_same_links(
        body: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    at_once = read_links(body, PAGE)
    monkeypatch.setattr(links, "_ALL_AT_ONCE", 0)
    assert read_links(body, PAGE) == at_once
    assert at_once.urls[-1] in ("http://h.example/last", "http://h.example/after")


def test_a_rel_after_an_href_given_first_is_read_as_an_attribute() -> None:
    body = (b'<a href=/x class="related">1</a><a href="/y" title="a rel=nofollow" rel=up>2</a>'
            b'<a href=/z href=/other REL="NoFollow">3</a><a href=\'/w\' data-rel="nofollow">4</a>')
    found = read_links(body, PAGE)
    assert found.urls == ["http://h.example/x", "http://h.example/y", "http://h.example/w"]
    assert found.nofollow == 1


# A hostile tag over MAX_TAG_BYTES is skipped, and reading it costs a bounded number of
# steps: each _SCANNED is one window of the page read through, so the count is linear.
@pytest.mark.parametrize("tag", [
    b"<a href" + b"=" * 3_000_000 + b">",
    b"<a " + b"x=1 " * 700_000 + b"href=/late>",
    b"<a " + b"x='' " * 300_000 + b"href=/late>",
    b"<a x" + b" =" * 1_000_000 + b"href=/late>",
])
def test_a_hostile_tag_is_skipped_in_steps_linear_in_its_size(tag: bytes) -> None:
    from robotgate.links import _TAG_WINDOW, _tags

    page = tag + b'<a href="/after">'
    pieces = list(_tags(page))
    assert len(pieces) <= 2 * len(page) // _TAG_WINDOW + 4
    assert page_links(page, "http://h.test/") == ["http://h.test/after"]
    reader = LinkReader(page, "http://h.test/")
    steps = 0
    while not reader.step():
        steps += 1
        assert steps < 1000
    assert reader.links().urls == ["http://h.test/after"]


# An unclosed comment runs to the page's end; it is read a window a step, not in one
# find over the whole page (which held the loop 0.15 s on a 50 MB page).
def test_an_unclosed_comment_is_read_a_window_a_step() -> None:
    from robotgate.links import _SCANNED, _WINDOW, _tags

    page = b'<a href="/before"><!--' + b"x" * (8 * _WINDOW) + b'<a href="/inside">'
    scanned = sum(1 for piece in _tags(page) if piece is _SCANNED)
    assert scanned >= 8
    assert page_links(page, "http://h.test/") == ["http://h.test/before"]
    closed = page + b'--><a href="/after">'
    assert page_links(closed, "http://h.test/") == ["http://h.test/before", "http://h.test/after"]
