"""robotgate.page_links: the links of a page as a browser reads them, bounded and linear."""

from __future__ import annotations

import time

import pytest

from robotgate import page_links
from robotgate.links import MAX_HREF_BYTES, read_links

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
