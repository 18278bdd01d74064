"""What a page says to robots: ``X-Robots-Tag`` as Google documents it, ``Robots-Tag``
and meta tags as ``draft-illyes-repext`` writes them, the AI opt-outs, and the
W3C TDMRep headers and meta tags."""

from __future__ import annotations

import email.message
import time
from datetime import datetime, timedelta, timezone
from typing import Any

import httpx
import pytest
from multidict import CIMultiDict

import robotgate
from robotgate.robots.directives import (
    MAX_FIELD_LINES,
    MAX_HEAD_BYTES,
    PageDirectives,
    page_directives,
)

UTC = timezone.utc


def flags(headers: Any, body: bytes | str | None = None, agent: str = "mybot",
          content_type: str | None = None) -> tuple[str, ...]:
    return page_directives(headers, body, agent=agent, content_type=content_type).flags()


# -- Google's X-Robots-Tag cases --------------------------------------------------


def test_noindex() -> None:
    assert flags({"X-Robots-Tag": "noindex"}) == ("noindex",)


def test_comma_separated_list() -> None:
    assert flags({"X-Robots-Tag": "noindex, nofollow"}) == ("noindex", "nofollow")
    assert flags({"X-Robots-Tag": "noarchive,nosnippet ,  noimageindex"}) == (
        "noarchive", "nosnippet", "noimageindex")


def test_several_headers_combine() -> None:
    # Google: "X-Robots-Tag: noarchive" and "X-Robots-Tag: unavailable_after: 25 Jun
    # 2010 15:00:00 PST" in one response.
    page = page_directives(
        [("X-Robots-Tag", "noarchive"),
         ("X-Robots-Tag", "unavailable_after: 25 Jun 2010 15:00:00 PST")],
        agent="mybot",
    )
    assert page.flags() == ("noarchive",)
    assert page.unavailable_after == datetime(2010, 6, 25, 23, 0, tzinfo=UTC)
    assert page.sources == (
        "`X-Robots-Tag: noarchive` (header 1)",
        "`X-Robots-Tag: unavailable_after: 25 Jun 2010 15:00:00 PST` (header 2)",
    )


def test_a_robot_named_gets_its_own_directives_only() -> None:
    # Google: "X-Robots-Tag: googlebot: nofollow" and "X-Robots-Tag: otherbot:
    # noindex, nofollow"; directives without a robot are for all.
    headers = [("X-Robots-Tag", "googlebot: nofollow"),
               ("X-Robots-Tag", "otherbot: noindex, nofollow")]
    assert flags(headers, agent="Googlebot/2.1 (+http://www.google.com/bot.html)") == (
        "nofollow",)
    assert flags(headers, agent="otherbot") == ("noindex", "nofollow")
    assert flags(headers, agent="thirdbot") == ()
    assert flags(headers, agent="*") == ()
    page = page_directives(headers, agent="otherbot")
    assert page.sources == ("`X-Robots-Tag: otherbot: noindex, nofollow` (header 2)",)


def test_a_robot_name_holds_until_the_next_one() -> None:
    value = "noarchive, mybot: noindex, nosnippet, otherbot: nofollow"
    assert flags({"X-Robots-Tag": value}, agent="mybot") == ("noindex", "noarchive", "nosnippet")
    assert flags({"X-Robots-Tag": value}, agent="otherbot") == ("nofollow", "noarchive")


def test_none_is_noindex_and_nofollow_and_all_restricts_nothing() -> None:
    assert flags({"X-Robots-Tag": "none"}) == ("noindex", "nofollow")
    page = page_directives({"X-Robots-Tag": "all"}, agent="mybot")
    assert page.flags() == ()
    assert page.sources == ("`X-Robots-Tag: all` (header 1)",)  # read, and named


def test_names_and_values_are_case_insensitive() -> None:
    assert flags({"x-robots-TAG": "NoIndex, NOFOLLOW"}) == ("noindex", "nofollow")
    assert flags({"X-Robots-Tag": "MyBot: NOARCHIVE"}, agent="mybot/1.0") == ("noarchive",)
    assert flags({"X-Robots-Tag": "NONE"}) == ("noindex", "nofollow")


def test_the_most_restrictive_wins() -> None:
    headers = [("X-Robots-Tag", "all"), ("X-Robots-Tag", "index, follow"),
               ("X-Robots-Tag", "nofollow")]
    assert flags(headers) == ("nofollow",)
    page = page_directives(
        [("X-Robots-Tag", "unavailable_after: 2030-01-01"),
         ("X-Robots-Tag", "unavailable_after: 2020-09-21T15:00:00+01:00"),
         ("X-Robots-Tag", "mybot: unavailable_after: 2025-01-01")],
        agent="mybot",
    )
    assert page.unavailable_after == datetime(2020, 9, 21, 14, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "when"),
    [
        ("25 Jun 2010 15:00:00 PST", datetime(2010, 6, 25, 23, 0, tzinfo=UTC)),
        ("Wednesday, 03-Nov-10 15:00:00 GMT", datetime(2010, 11, 3, 15, 0, tzinfo=UTC)),
        ("Wed, 03 Nov 2010 15:00:00 GMT", datetime(2010, 11, 3, 15, 0, tzinfo=UTC)),
        ("2020-09-21", datetime(2020, 9, 21, tzinfo=UTC)),
        ("2020-09-21T15:00:00+01:00", datetime(2020, 9, 21, 14, 0, tzinfo=UTC)),
    ],
)
def test_unavailable_after_dates(text: str, when: datetime) -> None:
    page = page_directives({"X-Robots-Tag": f"unavailable_after: {text}, noarchive"},
                           agent="mybot")
    assert page.unavailable_after == when
    assert page.flags() == ("noarchive",)  # the date's own comma did not end the list


def test_a_date_not_understood_is_ignored_and_said() -> None:
    page = page_directives({"X-Robots-Tag": "unavailable_after: next tuesday"}, agent="b")
    assert page.unavailable_after is None
    assert page.sources == ("`X-Robots-Tag: unavailable_after: next tuesday` (header 1): "
                            "date next tuesday not understood, ignored",)


def test_unknown_directives_and_other_robots_leave_no_source() -> None:
    page = page_directives({"X-Robots-Tag": "notranslate-ish, otherbot: noindex"}, agent="b")
    assert page == PageDirectives()


def test_ai_opt_outs() -> None:
    assert flags({"X-Robots-Tag": "noai, noimageai"}) == ("noai", "noimageai")
    assert flags(None, b'<html><head><meta name="robots" content="noai, noimageai">') == (
        "noai", "noimageai")


# -- every kind of headers ------------------------------------------------------------


def test_repeated_lines_of_every_kind_of_headers_are_read() -> None:
    pairs = [("Content-Type", "text/html"), ("X-Robots-Tag", "noindex"),
             ("x-robots-tag", "nofollow")]
    message = email.message.Message()
    for name, value in pairs:
        message[name] = value
    kinds: list[Any] = [pairs, CIMultiDict(pairs), httpx.Headers(pairs), message]
    for headers in kinds:
        page = page_directives(headers, agent="mybot")
        assert page.flags() == ("noindex", "nofollow"), type(headers)
        assert page.sources[1] == "`X-Robots-Tag: nofollow` (header 2)"


def test_values_of_other_types_get_an_answer() -> None:
    headers: Any = {"X-Robots-Tag": None, "tdm-reservation": 1, "Robots-Tag": "*;noai"}
    page = page_directives(headers, agent="mybot")
    assert (page.flags(), page.tdm_reservation) == (("noai",), None)


def test_only_the_first_lines_of_a_field_are_read() -> None:
    headers = [("X-Robots-Tag", "all")] * MAX_FIELD_LINES + [("X-Robots-Tag", "noindex")]
    assert flags(headers) == ()
    assert flags(headers[1:]) == ("noindex",)


# -- draft-illyes-repext ----------------------------------------------------------------


def test_robots_tag_structured_list() -> None:
    # The draft's example: noindex and nosnippet for all, no rules of ExampleBot's own.
    value = "*;noindex;nosnippet, ExampleBot;"
    assert flags({"Robots-Tag": value}, agent="otherbot") == ("noindex", "nosnippet")
    assert flags({"Robots-Tag": value}, agent="ExampleBot/1.0") == ("noindex", "nosnippet")
    value = "*;nosnippet, ExampleBot;noindex;nofollow"
    assert flags({"Robots-Tag": value}, agent="examplebot") == (
        "noindex", "nofollow", "nosnippet")
    assert flags({"Robots-Tag": value}, agent="otherbot") == ("nosnippet",)


def test_robots_tag_bare_token_names_a_robot_not_a_rule() -> None:
    # In the structured form "noindex" alone is a product token with no rules.
    assert flags({"Robots-Tag": "noindex"}) == ()
    # The historical field name in the structured form.
    assert flags({"X-Robots-Tag": "*;noindex"}) == ("noindex",)
    assert flags({"X-Robots-Tag": 'mybot;unavailable_after="2020-01-01";noarchive'}) == (
        "noarchive",)


def test_meta_tags_of_the_draft() -> None:
    body = b'<html><head><meta name="robots" content="noindex">\n' \
           b'<meta name="examplebot" content="nosnippet"></head><body></body></html>'
    assert flags(None, body, agent="ExampleBot") == ("noindex", "nosnippet")
    assert flags(None, body, agent="otherbot") == ("noindex",)
    page = page_directives(None, body, agent="examplebot")
    assert page.sources == ("`<meta name=robots content=noindex>` at byte 12",
                            "`<meta name=examplebot content=nosnippet>` at byte 51")
    assert body[12:17] == b"<meta" and body[51:56] == b"<meta"


def test_headers_and_meta_tags_combine() -> None:
    body = b'<!DOCTYPE html><head><meta name=robots content=nofollow></head>'
    page = page_directives({"X-Robots-Tag": "noindex"}, body, agent="b",
                           content_type="text/html; charset=utf-8")
    assert page.flags() == ("noindex", "nofollow")
    assert page.sources == ("`X-Robots-Tag: noindex` (header 1)",
                            "`<meta name=robots content=nofollow>` at byte 21")


# -- the head of an HTML body ------------------------------------------------------------


def test_only_the_head_is_read() -> None:
    head = b'<html><head><title>t</title><meta name=robots content=noarchive>'
    for rest in (b'</head><meta name=robots content=noindex>',
                 b'<body><meta name=robots content=noindex>',
                 b'<div><meta name=robots content=noindex>'):
        assert flags(None, head + rest) == ("noarchive",), rest


def test_markup_that_hides_a_meta_tag() -> None:
    hidden = [
        b'<!-- <meta name=robots content=noindex> -->',
        b'<script>document.write("<meta name=robots content=noindex>")</script>',
        b'<style>/* <meta name=robots content=noindex> */</style>',
        b'<title><meta name=robots content=noindex></title>',
        b'<template><meta name=robots content=noindex></template>',
        b'<link rel=x title="<meta name=robots content=noindex>">',
        b'</ <meta name=robots content=noindex>',  # a bogus comment, to the first ">"
        b'<?php <meta name=robots content=noindex>',
    ]
    for markup in hidden:
        body = b'<html><head>' + markup + b'<meta name=robots content=nofollow></head>'
        assert flags(None, body) == ("nofollow",), markup


def test_attribute_syntax() -> None:
    cases = {
        b"<meta name='robots' content='noindex'>": ("noindex",),
        b'<META NAME=ROBOTS CONTENT=NOINDEX />': ("noindex",),
        b'<meta\ncontent="noindex,nofollow"\tname = "robots" >': ("noindex", "nofollow"),
        b'<meta name="robots" content="noindex&#44;nofollow">': ("noindex", "nofollow"),
        b'<meta name="robots" content="x > y, noarchive">': ("noarchive",),
        b'<meta name="robots" name="mybot" content="nosnippet">': ("nosnippet",),
        b'<meta name="robots">': (),
        b'<meta content="noindex">': (),
        b'<noscript><meta name="robots" content="noindex"></noscript>': ("noindex",),
    }
    for markup, expected in cases.items():
        assert flags(None, b"<html><head>" + markup) == expected, markup


def test_unterminated_markup_ends_the_search() -> None:
    for tail in (b'<!-- <meta name=robots content=noindex>',
                 b'<script><meta name=robots content=noindex>',
                 b'<meta name="robots content=noindex>'):
        body = b'<html><head><meta name=robots content=nofollow>' + tail
        assert flags(None, body) == ("nofollow",), tail


def test_when_the_body_is_read_as_html() -> None:
    body = b'<html><head><meta name=robots content=noindex>'
    assert flags(None, body) == ("noindex",)
    assert flags(None, body, content_type="text/html; charset=UTF-8") == ("noindex",)
    assert flags(None, body, content_type="application/xhtml+xml") == ("noindex",)
    assert flags(None, body, content_type="text/plain") == ()
    assert flags(None, body, content_type="application/json") == ()
    assert flags(None, b'{"x": "<meta name=robots content=noindex>"}') == ()
    assert flags(None, b'  \xef\xbb\xbf<!doctype html><meta name=robots content=noindex>') == (
        "noindex",)


def test_a_text_body_is_read_too_offsets_in_utf8() -> None:
    body = '<html><head><title>caf\u00e9</title><meta name=robots content=noindex>'
    page = page_directives(None, body, agent="b")
    assert page.flags() == ("noindex",)
    assert page.sources == ("`<meta name=robots content=noindex>` at byte 32",)
    assert body.encode().index(b"<meta") == 32  # not 31, the character offset


def test_only_the_first_bytes_of_the_body_are_read() -> None:
    meta = b'<meta name=robots content=noindex>'
    pad = b'<html><head>' + b' ' * (MAX_HEAD_BYTES - 12 - len(meta))
    assert flags(None, pad + meta) == ("noindex",)
    assert flags(None, pad + b' ' + meta) == ()


def test_non_ascii_content_is_decoded() -> None:
    body = '<head><meta name="tdm-policy" content="https://ex.com/p\u00f6licy">'.encode()
    page = page_directives({"tdm-reservation": "1"}, body, agent="b")
    assert page.tdm_policy == "https://ex.com/p\u00f6licy"


# -- W3C TDMRep: headers and meta tags -----------------------------------------------------


def test_tdm_headers_of_the_report() -> None:
    page = page_directives([("Content-type", "image/jpg"), ("tdm-reservation", "1")],
                           agent="b")
    assert (page.tdm_reservation, page.tdm_policy) == (True, None)
    page = page_directives([("Content-type", "text/html"), ("tdm-reservation", "1"),
                            ("tdm-policy", "https://provider.com/policies/policy.json")],
                           agent="b")
    assert (page.tdm_reservation, page.tdm_policy) == (
        True, "https://provider.com/policies/policy.json")
    assert page.flags() == ()


def test_tdm_meta_tags_of_the_report() -> None:
    body = b"""<!DOCTYPE html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="tdm-reservation" content="1">
    <meta name="tdm-policy" content="https://provider.com/policies/policy.json">
    <title>Document title</title>
  </head>
  <body>
    <meta name="tdm-reservation" content="0">
  </body>
</html>"""
    page = page_directives(None, body, agent="b")
    assert (page.tdm_reservation, page.tdm_policy) == (
        True, "https://provider.com/policies/policy.json")


def test_tdm_meta_tags_supersede_the_headers() -> None:
    headers = {"tdm-reservation": "1", "tdm-policy": "https://p.example/policy"}
    page = page_directives(headers, b'<head><meta name=tdm-reservation content=0>', agent="b")
    assert (page.tdm_reservation, page.tdm_policy) == (False, None)
    page = page_directives({"tdm-reservation": "0"},
                           b'<head><meta name=tdm-reservation content=1>', agent="b")
    assert page.tdm_reservation is True
    # A technique that says nothing of the policy keeps the earlier one's.
    page = page_directives(headers, b'<head><meta name=tdm-reservation content=1>', agent="b")
    assert (page.tdm_reservation, page.tdm_policy) == (True, "https://p.example/policy")


def test_tdm_values_other_than_0_or_1_leave_it_unset() -> None:
    for value in ("2", "yes", "", "01", "1;q"):
        page = page_directives({"tdm-reservation": value}, agent="b")
        assert page.tdm_reservation is None, value
        assert page.sources[0].endswith("not 0 or 1, ignored (W3C TDMRep)")
    # Not reserved: the policy is not for processing.
    page = page_directives({"tdm-reservation": "0", "tdm-policy": "https://p/x"}, agent="b")
    assert (page.tdm_reservation, page.tdm_policy) == (False, None)
    # Within the headers, the most restrictive line wins, lines joined by a proxy too.
    page = page_directives([("tdm-reservation", "0"), ("tdm-reservation", "1")], agent="b")
    assert page.tdm_reservation is True
    assert page_directives({"tdm-reservation": "0, 1"}, agent="b").tdm_reservation is True
    assert page_directives({"tdm-reservation": "0,0"}, agent="b").tdm_reservation is False


def test_a_policy_without_a_reservation_is_kept_for_the_files() -> None:
    # "The absence of tdm-reservation ... must not reset current values": the
    # policy goes with whatever reservation the site's tdmrep.json states.
    page = page_directives({"tdm-policy": "https://p/x"}, agent="b")
    assert (page.tdm_reservation, page.tdm_policy) == (None, "https://p/x")
    assert "text and data mining: reservation not stated, policy https://p/x" in page.explain()


# -- the answer ------------------------------------------------------------------------------


def test_explain_and_json() -> None:
    page = page_directives(
        [("X-Robots-Tag", "mybot: none"), ("X-Robots-Tag", "unavailable_after: 2030-01-02"),
         ("tdm-reservation", "1"), ("tdm-policy", "https://p.example/policy")],
        agent="MyBot/2.0",
    )
    assert page.explain() == str(page) == "\n".join([
        "directives: noindex, nofollow",
        "unavailable after: 2030-01-02T00:00:00+00:00",
        "text and data mining: reserved, policy https://p.example/policy",
        "  `X-Robots-Tag: mybot: none` (header 1)",
        "  `X-Robots-Tag: unavailable_after: 2030-01-02` (header 2)",
        "  `tdm-reservation: 1` (header 1)",
        "  `tdm-policy: https://p.example/policy` (header 1)",
    ])
    assert page.as_json() == {
        "noindex": True,
        "nofollow": True,
        "unavailable_after": "2030-01-02T00:00:00+00:00",
        "tdm_reservation": True,
        "tdm_policy": "https://p.example/policy",
        "sources": list(page.sources),
    }
    assert PageDirectives().as_json() == {"tdm_reservation": None, "tdm_policy": None,
                                          "sources": []}
    assert PageDirectives().explain() == "directives: none"


def test_quoted_values_show_control_characters_and_are_cut() -> None:
    page = page_directives({"X-Robots-Tag": "noindex,\x1b[31m" + "x" * 500}, agent="b")
    (source,) = page.sources
    assert "\x1b" not in source and "\\x1b" in source
    assert len(source) < 250


def test_exported_from_the_package() -> None:
    assert robotgate.page_directives is page_directives
    assert robotgate.PageDirectives is PageDirectives
    assert "page_directives" in robotgate.__all__ and "PageDirectives" in robotgate.__all__


def test_the_value_is_frozen() -> None:
    page = PageDirectives(noindex=True, unavailable_after=datetime(2030, 1, 1, tzinfo=UTC))
    with pytest.raises(AttributeError):
        page.noindex = False  # type: ignore[misc]
    assert page.unavailable_after is not None
    assert page.unavailable_after - timedelta(days=1) < page.unavailable_after


# -- semicolons, as pages write them --------------------------------------------------------


def test_a_header_list_written_with_semicolons_is_read_and_said() -> None:
    page = page_directives({"X-Robots-Tag": "noindex; nofollow"}, agent="mybot")
    assert page.flags() == ("noindex", "nofollow")
    assert page.sources == (
        "`X-Robots-Tag: noindex; nofollow` (header 1), semicolons read as commas",)
    assert flags({"X-Robots-Tag": "mybot: noarchive; nosnippet"}) == ("noarchive", "nosnippet")
    assert flags({"X-Robots-Tag": "otherbot: noindex; nofollow"}) == ()
    # The structured form starts with a robot, and stays what the draft says.
    assert flags({"X-Robots-Tag": "*;noindex"}) == ("noindex",)
    assert flags({"X-Robots-Tag": "otherbot;noindex"}) == ()
    assert flags({"Robots-Tag": "noindex; nofollow"}) == ()  # the draft's field: robots named


def test_a_robots_meta_written_with_semicolons_is_read_and_said() -> None:
    body = b'<html><head><meta name="robots" content="noindex; nofollow"></head>'
    page = page_directives(None, body, agent="mybot")
    assert page.flags() == ("noindex", "nofollow")
    assert page.sources == ('`<meta name=robots content="noindex; nofollow">` at byte 12, '
                            "semicolons read as commas",)
    body = b'<html><head><meta name="mybot" content="noindex;noarchive">'
    assert flags(None, body) == ("noindex", "noarchive")


# -- the head read as bytes -------------------------------------------------------------


@pytest.mark.parametrize("markup", [
    b"<meta " + b"a " * 100_000,  # never closed, many attributes
    b"<link " + b"a  =  " * 40_000,
    b"<link " + b"/" * 200_000,
    b"<!--" + b"-" * 200_000,
    b"<script>" + b"</scrip" * 30_000,
    b"<meta name=x content=y>" * 10_000,
])
def test_hostile_heads_are_read_in_time_linear_in_the_window(markup: bytes) -> None:
    started = time.perf_counter()
    page = page_directives(None, b"<html><head>" + markup, agent="mybot")
    assert time.perf_counter() - started < 5  # a bound, not a speed: backtracking would not end
    assert page.flags() == ()


@pytest.mark.parametrize("name", [
    b"ROBOTS", b" robots\x1f", b"&#114;obots", b"Robots ", b"\xef\xbb\xbfrobots",
])
def test_a_robots_meta_name_is_read_as_the_page_means_it(name: bytes) -> None:
    # Upper case, spaces and a character reference still name it; a BOM does not.
    body = b'<html><head><meta name="' + name + b'" content="noindex">'
    expected = () if name.startswith(b"\xef") else ("noindex",)
    assert flags(None, body) == expected, name
    assert flags(None, body.replace(b'"', b"'")) == expected, name
