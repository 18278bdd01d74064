"""RFC 9309 section 2.1 (protocol definition) and the line syntax of 2.2.

The public API (``RobotsTxt.parse``, ``allowed``, ``decide``, ``crawl_delay``,
``request_rate``, ``sitemaps``), how lines are read (``key: value``, comments,
whitespace, case, the key typos Google's reference accepts, whitespace in
place of the colon) and that unparseable lines are skipped, not fatal.
"""

from __future__ import annotations

import pytest

from robotgate import Decision, RequestRate, RobotsTxt, Rule

BASIC = """\
User-agent: *
Disallow: /private
Crawl-delay: 2.5
Request-rate: 10/1m
Sitemap: https://example.com/sitemap.xml
"""


# -- public API -----------------------------------------------------------


def test_parse_accepts_str_and_all_bytes_like_types() -> None:
    raw = BASIC.encode()
    for body in (BASIC, raw, bytearray(raw), memoryview(raw)):
        rules = RobotsTxt.parse(body)  # type: ignore[arg-type]  # bytes-like is accepted
        assert rules.allowed("/private/x", "MyBot") is False
        assert rules.allowed("/public", "MyBot") is True


def test_allowed_takes_absolute_urls_and_paths_with_query() -> None:
    rules = RobotsTxt.parse("User-agent: *\nDisallow: /search?q=\n")
    assert rules.allowed("https://example.com/search?q=shoes", "MyBot") is False
    assert rules.allowed("http://example.com:8080/search?q=x#frag", "MyBot") is False
    assert rules.allowed("/search?q=shoes", "MyBot") is False
    assert rules.allowed("/search", "MyBot") is True
    assert rules.allowed("https://example.com/search?page=2", "MyBot") is True
    # The host and scheme play no part: robots.txt rules are per origin already.
    assert rules.allowed("https://other.example/search?q=1", "MyBot") is False


def test_allowed_returns_a_real_bool() -> None:
    rules = RobotsTxt.parse(BASIC)
    for url in ("/", "/private", "/robots.txt"):
        assert type(rules.allowed(url, "MyBot")) is bool


def test_decide_returns_a_decision_with_the_rule() -> None:
    d = RobotsTxt.parse(BASIC).decide("https://example.com/private/x", "MyBot/1.0")
    assert isinstance(d, Decision)
    assert d.allowed is False
    assert d.rule == Rule(allow=False, pattern="/private", line=2)
    assert d.group == ("*",)


def test_crawl_delay_request_rate_and_sitemaps() -> None:
    rules = RobotsTxt.parse(BASIC)
    assert rules.crawl_delay("MyBot") == 2.5
    assert rules.request_rate("MyBot") == RequestRate(requests=10, seconds=60.0)
    assert rules.sitemaps == ["https://example.com/sitemap.xml"]


def test_full_user_agent_string_is_reduced_to_its_product_token() -> None:
    rules = RobotsTxt.parse("User-agent: MyBot\nDisallow: /\n")
    assert rules.allowed("/x", "MyBot/2.1 (+https://example.com/bot)") is False
    assert rules.allowed("/x", "OtherBot/2.1 (+https://example.com/bot)") is True


def test_empty_body_allows_everything() -> None:
    for body in ("", b"", "\n\n\n", "# only a comment\n"):
        rules = RobotsTxt.parse(body)
        assert rules.allowed("/anything", "MyBot") is True
        assert rules.crawl_delay("MyBot") is None
        assert rules.request_rate("MyBot") is None
        assert rules.sitemaps == []


def test_unknown_dialect_is_an_error() -> None:
    with pytest.raises(ValueError, match="dialect"):
        RobotsTxt.parse("", dialect="nonsense")  # type: ignore[arg-type]


# -- line syntax ----------------------------------------------------------


def test_keys_are_case_insensitive() -> None:
    rules = RobotsTxt.parse("USER-AGENT: *\nDISALLOW: /a\nallow: /a/b\nDiSaLlOw: /c\n")
    assert rules.allowed("/a/x", "MyBot") is False
    assert rules.allowed("/a/b", "MyBot") is True
    assert rules.allowed("/c", "MyBot") is False


def test_whitespace_around_keys_and_values_is_ignored() -> None:
    body = "  User-agent  :   *  \n\tDisallow\t:\t/a \t\nAllow:/a/b\nDisallow :/c\n"
    rules = RobotsTxt.parse(body)
    assert rules.allowed("/a/x", "MyBot") is False
    assert rules.allowed("/a/b", "MyBot") is True
    assert rules.allowed("/c", "MyBot") is False
    assert rules.decide("/a/x", "MyBot").rule == Rule(False, "/a", 2)


def test_whitespace_inside_a_value_is_kept() -> None:
    rules = RobotsTxt.parse("User-agent: *\nDisallow: /a b\n")
    assert rules.allowed("/a b/c", "MyBot") is False
    assert rules.allowed("/a", "MyBot") is True


@pytest.mark.parametrize(
    "body",
    [
        "# a comment on its own line\nUser-agent: *\nDisallow: /a\n",
        "User-agent: * # comment after the agent\nDisallow: /a\n",
        "User-agent: *\nDisallow: /a # comment after the value\n",
        "User-agent: *\nDisallow: /a#fragment-like text is a comment\n",
        "User-agent: *\n   # indented comment\nDisallow: /a\n",
        "User-agent: *\nDisallow: /a\n# Disallow: /b\n",
    ],
)
def test_comments_anywhere(body: str) -> None:
    rules = RobotsTxt.parse(body)
    assert rules.allowed("/a", "MyBot") is False
    assert rules.allowed("/b", "MyBot") is True
    assert rules.allowed("/", "MyBot") is True


def test_comment_starting_a_value_empties_it() -> None:
    # "Disallow: # nothing" is an empty Disallow, which allows.
    rules = RobotsTxt.parse("User-agent: *\nDisallow: # nothing\n")
    assert rules.allowed("/", "MyBot") is True


@pytest.mark.parametrize(
    "key",
    ["user-agent", "User-Agent", "useragent", "user agent", "USERAGENT", "User Agent"],
)
def test_user_agent_key_spellings(key: str) -> None:
    rules = RobotsTxt.parse(f"{key}: MyBot\nDisallow: /\n")
    assert rules.allowed("/x", "MyBot") is False
    assert rules.allowed("/x", "Other") is True


@pytest.mark.parametrize(
    "key", ["disallow", "disalow", "dissallow", "dissalow", "diasllow", "disallaw", "DisAlow"]
)
def test_disallow_key_typos_the_reference_accepts(key: str) -> None:
    rules = RobotsTxt.parse(f"User-agent: *\n{key}: /secret\n")
    assert rules.allowed("/secret", "MyBot") is False
    assert rules.allowed("/public", "MyBot") is True


def test_unrelated_misspellings_are_not_rules() -> None:
    rules = RobotsTxt.parse("User-agent: *\nDisalllow: /x\nDeny: /y\nBlock: /z\nAlow: /\n")
    for path in ("/x", "/y", "/z"):
        assert rules.allowed(path, "MyBot") is True


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ("User-agent *\nDisallow /secret\n", "/secret"),
        ("User-agent\tMyBot\nDisallow\t/secret\n", "/secret"),
        ("User-agent: *\nDisallow /secret\n", "/secret"),
        ("User-agent *\nDisallow: /secret\n", "/secret"),
    ],
)
def test_whitespace_instead_of_colon(body: str, path: str) -> None:
    rules = RobotsTxt.parse(body)
    assert rules.allowed(path, "MyBot") is False
    assert rules.allowed("/public", "MyBot") is True


def test_whitespace_instead_of_colon_only_when_unambiguous() -> None:
    # Three words: which one is the value?  The line is skipped.
    rules = RobotsTxt.parse("User-agent: *\nDisallow /a /b\nDisallow: /c\n")
    assert rules.allowed("/a", "MyBot") is True
    assert rules.allowed("/b", "MyBot") is True
    assert rules.allowed("/c", "MyBot") is False


def test_lines_that_do_not_parse_are_skipped_not_fatal() -> None:
    body = """\
<html><head><title>Not a robots.txt</title></head>
just some words here
:value without key
User-agent: *
this line has no colon and many words
Disallow: /private
</html>
"""
    rules = RobotsTxt.parse(body)
    assert rules.allowed("/private", "MyBot") is False
    assert rules.allowed("/", "MyBot") is True
    assert rules.decide("/private", "MyBot").rule == Rule(False, "/private", 6)


def test_rules_before_any_user_agent_apply_to_no_one() -> None:
    rules = RobotsTxt.parse("Disallow: /\nAllow: /x\nUser-agent: *\nDisallow: /private\n")
    assert rules.allowed("/", "MyBot") is True
    assert rules.allowed("/private", "MyBot") is False


def test_last_line_without_newline_counts() -> None:
    rules = RobotsTxt.parse("User-agent: *\nDisallow: /a")
    assert rules.allowed("/a", "MyBot") is False


def test_agents_lists_the_groups_product_tokens() -> None:
    rules = RobotsTxt.parse("User-agent: FooBot\nUser-agent: *\nDisallow: /\nUser-agent: Bar\n")
    assert sorted(rules.agents) == ["*", "bar", "foobot"]
    assert "foobot" in repr(rules)


@pytest.mark.parametrize(
    ("body", "path", "allowed"),
    [
        # Google reads lines as C strings: a NUL ends the line.
        (b"User-agent: *\nDisallow: /secret\x00 junk\n", "/secret", False),
        (b"User-agent: *\x00 junk\nDisallow: /\n", "/a", False),
        # A byte that does not decode is escaped, not replaced by U+FFFD.
        (b"User-agent: *\nDisallow: /caf\xe9\n", "/caf%E9", False),
        (b"User-agent: *\nDisallow: /a\xed\xa0\x80x\n", "/a%ED%A0%80x", False),
        # Only ASCII whitespace is whitespace: U+00A0 is no colon, and no blank
        # before a product token; "key value" words are apart by spaces or tabs.
        ("User-agent: FooBot\nDisallow\u00a0/a\n".encode(), "/a", True),
        ("User-agent: \u00a0FooBot\nDisallow: /\n".encode(), "/a", True),
        ("User-agent: *\nDisallow /a\u00a0b\n".encode(), "/a%C2%A0b", False),
        (b"User-agent: *\nDisallow \t /a\n", "/a", False),
    ],
)
def test_lines_are_read_as_googles_reference_reads_them(
        body: bytes, path: str, allowed: bool) -> None:
    assert RobotsTxt.parse(body).allowed(path, "FooBot") is allowed
