"""Property tests (hypothesis) for page directives and tdmrep.json.

* hostile headers and markup never raise, and the answer stays bounded: a
  bounded number of sources, each of bounded length;
* only the first :data:`MAX_HEAD_BYTES` of a body and :data:`MAX_FIELD_LINES`
  lines of a field count: what follows never changes the answer;
* the most restrictive wins: another header line or meta tag never lifts a
  directive, nor moves ``unavailable_after`` later;
* directives naming another robot never change this robot's answer;
* ``parse_tdmrep_json`` never raises, and ``for_path`` answers any path.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from robotgate.robots.directives import (
    MAX_FIELD_LINES,
    MAX_HEAD_BYTES,
    PageDirectives,
    page_directives,
)
from robotgate.robots.tdmrep import parse_tdmrep_json

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

NAMES = ["X-Robots-Tag", "x-robots-tag", "Robots-Tag", "tdm-reservation", "tdm-policy",
         "Content-Type", "X-Other"]
WORDS = ["noindex", "nofollow", "none", "all", "noarchive", "nosnippet", "noimageindex",
         "noai", "noimageai", "nocache", "index", "unavailable_after", "max-snippet",
         "mybot", "otherbot", "*", "robots", "1", "0", "25 Jun 2010 15:00:00 PST",
         "2020-09-21", "Wednesday", "https://p/x", "\"", "'", "\x00", "\u00e9", ""]
SEPARATORS = [",", ":", ";", "=", " ", ", ", ": ", "\t"]

word = st.sampled_from(WORDS)
value = st.one_of(
    st.lists(st.one_of(word, st.sampled_from(SEPARATORS)), max_size=12).map("".join),
    st.text(max_size=40),
)
header = st.tuples(st.sampled_from(NAMES), value)
headers = st.lists(header, max_size=8)

MARKUP = [b"<", b">", b"</", b"<!--", b"-->", b"<!doctype html>", b"<html>", b"<head>",
          b"</head>", b"<body>", b"<div>", b"<script>", b"</script>", b"<title>",
          b"</title>", b"<noscript>", b"<template>", b"<meta", b" name=", b" content=",
          b'"', b"'", b"=", b"/", b" ", b"\n", b"robots", b"mybot", b"otherbot",
          b"tdm-reservation", b"tdm-policy", b"noindex", b"nofollow, noai", b"none",
          b"1", b"&#44;", b"&amp;", b"\xc3\xa9", b"\xff", b"\x00"]
markup = st.lists(st.sampled_from(MARKUP), max_size=40).map(b"".join)
# Bodies that start as HTML, so that they are searched.
html_body = markup.map(lambda m: b"<html><head>" + m)


def bounded(page: PageDirectives) -> bool:
    return len(page.sources) <= 65 and all(len(s) < 1000 for s in page.sources)


def restricts_no_less(more: PageDirectives, base: PageDirectives) -> bool:
    if not set(base.flags()) <= set(more.flags()):
        return False
    if base.unavailable_after is None:
        return True
    return more.unavailable_after is not None and more.unavailable_after <= base.unavailable_after


@pytest.mark.slow
@SETTINGS
@given(headers, st.one_of(st.none(), html_body, st.binary(max_size=200), st.text(max_size=80)),
       st.sampled_from(["mybot", "MyBot/1.0 (+https://x)", "*", "", "otherbot", "\x00"]),
       st.one_of(st.none(), st.sampled_from(["text/html", "text/plain", "", ";;", "TEXT/HTML;x"])))
def test_never_raises_and_stays_bounded(
    pairs: list[tuple[str, str]], body: bytes | str | None, agent: str, content_type: str | None
) -> None:
    page = page_directives(pairs, body, agent=agent, content_type=content_type)
    assert bounded(page)
    assert isinstance(page.explain(), str)
    json.dumps(page.as_json())
    if page.tdm_policy is not None:
        assert page.tdm_reservation is not False  # a lifted reservation names no policy


@pytest.mark.slow
def test_many_and_long_lines_stay_bounded() -> None:
    long_value = ("mybot: noindex, " * 5000) + "unavailable_after: " + "9" * 5000
    page = page_directives([("X-Robots-Tag", long_value)] * (MAX_FIELD_LINES * 3),
                           agent="mybot")
    assert bounded(page) and page.flags() == ("noindex",)


HOSTILE_BODIES = [
    b"<a" * 200_000,
    b"<<<<" * 60_000,
    b"</ " * 80_000,
    b"<!" * 120_000,
    b"<meta " + b"a=b " * 80_000,
    b"<meta " + b'"' * 250_000,
    b"<meta name=robots content=noindex>" * 10_000,
    b"<script>" * 30_000,
    b"<!--" * 60_000,
    b"<meta name='" + b"&#44;" * 50_000 + b"'>",
    b"<meta name=robots content='" + b"none," * 50_000 + b"'>",
]


@pytest.mark.slow
def test_hostile_markup_gets_an_answer() -> None:
    for hostile in HOSTILE_BODIES:
        page = page_directives(None, b"<html><head>" + hostile, agent="mybot")
        assert bounded(page), hostile[:20]


@pytest.mark.slow
@SETTINGS
@given(html_body, st.binary(max_size=100))
def test_nothing_past_the_head_bound_counts(start: bytes, tail: bytes) -> None:
    body = (start + b" " * MAX_HEAD_BYTES)[:MAX_HEAD_BYTES]
    meta = b'<meta name=robots content="none, noai"><meta name=tdm-reservation content=1>'
    assert page_directives(None, body + meta + tail, agent="mybot") == page_directives(
        None, body, agent="mybot")


@pytest.mark.slow
@SETTINGS
@given(st.lists(st.tuples(st.just("X-Robots-Tag"), value), max_size=4))
def test_nothing_past_the_line_bound_counts(extra: list[tuple[str, str]]) -> None:
    full = [("X-Robots-Tag", "all")] * MAX_FIELD_LINES
    assert page_directives(full + extra, agent="mybot") == page_directives(full, agent="mybot")


@pytest.mark.slow
@SETTINGS
@given(headers, header, html_body, markup)
def test_another_source_never_lifts_a_directive(
    pairs: list[tuple[str, str]], more: tuple[str, str], body: bytes, extra_meta: bytes
) -> None:
    base = page_directives(pairs, agent="mybot")
    assert restricts_no_less(page_directives([*pairs, more], agent="mybot"), base)
    with_body = page_directives(pairs, body, agent="mybot")
    assert restricts_no_less(with_body, base)
    # More markup after it: every tag read before is still read.
    more_markup = page_directives(pairs, body + extra_meta, agent="mybot")
    assert restricts_no_less(more_markup, with_body)


@pytest.mark.slow
@SETTINGS
@given(headers, st.lists(value, max_size=4), html_body)
def test_another_robots_directives_change_nothing(
    pairs: list[tuple[str, str]], others: list[str], body: bytes
) -> None:
    base = page_directives(pairs, body, agent="mybot")
    said = [("X-Robots-Tag", f"otherbot: {v.replace(':', '').replace(';', '')}")
            for v in others]
    said += [("Robots-Tag", f"otherbot;{v.replace(',', '').replace(';', '')}") for v in others]
    metas = b"".join(b'<meta name=otherbot content="' + v.replace('"', "").encode() + b'">'
                     for v in others)
    page = page_directives([*pairs, *said], body + metas, agent="mybot")
    assert (page.flags(), page.unavailable_after, page.tdm_reservation) == (
        base.flags(), base.unavailable_after, base.tdm_reservation)


json_value = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=True),
              st.sampled_from(["/", "/a*", "/a$", "*", "", "0", "1", "https://p/x"]),
              st.text(max_size=10)),
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.sampled_from(["location", "tdm-reservation", "tdm-policy", "x"]),
                        children, max_size=4),
    ),
    max_leaves=20,
)
rule = st.fixed_dictionaries(
    {"location": st.one_of(st.text(alphabet="/ab*$%2", max_size=8), json_value),
     "tdm-reservation": st.one_of(st.sampled_from([0, 1, "0", "1"]), json_value)},
    optional={"tdm-policy": json_value},
)


@pytest.mark.slow
@SETTINGS
@given(st.one_of(st.lists(rule, max_size=6).map(lambda r: json.dumps(r).encode()),
                 json_value.map(lambda v: json.dumps(v).encode()),
                 st.binary(max_size=60)),
       st.text(max_size=20))
def test_tdmrep_never_raises(body: bytes, path: str) -> None:
    rep = parse_tdmrep_json(body)
    if not rep.rules and body.strip() not in (b"[]",):
        assert rep.problem is not None
    found = rep.for_path("/" + path)
    assert found is None or found in rep.rules
