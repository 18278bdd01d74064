"""RFC 9309 section 2.2.4: other records.

``Crawl-delay`` (seconds, float), ``Request-rate`` (n/period with s, m, h, d
units), ``Sitemap`` (file-wide, absolute URLs, order kept, no duplicates) and
unknown keys.  None of them ends a group: a group holding only
``Crawl-delay`` merges with the rules that follow.
"""

from __future__ import annotations

import sys

import pytest

from robotgate import RequestRate, RobotsTxt

# -- Crawl-delay ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("10", 10.0),
        ("2.5", 2.5),
        (".5", 0.5),
        ("0", 0.0),
        ("  7  ", 7.0),
        ("3 # seconds", 3.0),
        ("5 seconds", 5.0),
        ("", None),
        ("abc", None),
        ("-1", None),
        ("9" * 400, sys.float_info.max),  # past a float: longer than any finite delay
    ],
)
def test_crawl_delay_values(value: str, expected: float | None) -> None:
    rules = RobotsTxt.parse(f"User-agent: *\nCrawl-delay: {value}\n")
    assert rules.crawl_delay("MyBot") == expected


def test_crawl_delay_is_a_float() -> None:
    delay = RobotsTxt.parse("User-agent: *\nCrawl-delay: 4\n").crawl_delay("MyBot")
    assert isinstance(delay, float)


def test_crawl_delay_belongs_to_its_group() -> None:
    body = """\
User-agent: *
Disallow: /tmp
Crawl-delay: 1

User-agent: SlowBot
Crawl-delay: 30
Disallow: /x

User-agent: NoDelayBot
Disallow: /y
"""
    rules = RobotsTxt.parse(body)
    assert rules.crawl_delay("SlowBot/2.0") == 30.0
    assert rules.crawl_delay("slowbot") == 30.0
    assert rules.crawl_delay("Unknown") == 1.0
    # A named group without Crawl-delay does not borrow the "*" one.
    assert rules.crawl_delay("NoDelayBot") is None


def test_crawl_delay_key_spellings_and_case() -> None:
    for key in ("Crawl-delay", "crawl-delay", "CRAWL-DELAY", "Crawl delay", "crawldelay"):
        rules = RobotsTxt.parse(f"User-agent: *\n{key}: 3\n")
        assert rules.crawl_delay("MyBot") == 3.0, key


def test_slowest_crawl_delay_of_a_group_wins() -> None:
    rules = RobotsTxt.parse("User-agent: *\nCrawl-delay: 3\nCrawl-delay: 9\n")
    assert rules.crawl_delay("MyBot") == 9.0


def test_crawl_delay_in_merged_groups() -> None:
    body = "User-agent: a\nDisallow: /x\n\nUser-agent: a\nCrawl-delay: 4\n"
    assert RobotsTxt.parse(body).crawl_delay("a") == 4.0


def test_crawl_delay_before_any_group_is_ignored() -> None:
    rules = RobotsTxt.parse("Crawl-delay: 5\nUser-agent: *\nDisallow: /x\n")
    assert rules.crawl_delay("MyBot") is None


def test_no_group_no_delay() -> None:
    assert RobotsTxt.parse("User-agent: a\nCrawl-delay: 5\n").crawl_delay("b") is None


# -- Request-rate ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("10/1m", RequestRate(10, 60.0)),
        ("1/5", RequestRate(1, 5.0)),
        ("1/5s", RequestRate(1, 5.0)),
        ("3/2m", RequestRate(3, 120.0)),
        ("100/1h", RequestRate(100, 3600.0)),
        ("1000/1d", RequestRate(1000, 86400.0)),
        ("10/1M", RequestRate(10, 60.0)),
        ("10 / 1 m", RequestRate(10, 60.0)),
        ("2/m", RequestRate(2, 60.0)),
        ("1/0.5s", RequestRate(1, 0.5)),
        ("1/10s 0600-0845", RequestRate(1, 10.0)),  # a time window is ignored
        ("", None),
        ("fast", None),
        ("0/1m", None),
        ("10/0s", None),
        ("10", None),
        ("9" * 5000 + "/1m", None),  # never raises, even past int()'s digit limit
    ],
)
def test_request_rate_values(value: str, expected: RequestRate | None) -> None:
    rules = RobotsTxt.parse(f"User-agent: *\nRequest-rate: {value}\n")
    assert rules.request_rate("MyBot") == expected


def test_request_rate_delay() -> None:
    assert RequestRate(10, 60.0).delay == 6.0
    rules = RobotsTxt.parse("User-agent: *\nRequest-rate: 10/1m\n")
    rate = rules.request_rate("MyBot/1.0")
    assert rate is not None
    assert rate.delay == 6.0


def test_request_rate_belongs_to_its_group() -> None:
    body = "User-agent: *\nDisallow:\nRequest-rate: 1/1s\n\nUser-agent: a\nRequest-rate: 1/1m\n"
    rules = RobotsTxt.parse(body)
    assert rules.request_rate("a") == RequestRate(1, 60.0)
    assert rules.request_rate("b") == RequestRate(1, 1.0)


# -- Sitemap ------------------------------------------------------------------------


def test_sitemaps_are_file_wide_in_order_without_duplicates() -> None:
    body = """\
Sitemap: https://example.com/a.xml
User-agent: FooBot
Sitemap: https://example.com/b.xml
Disallow: /x
sitemap: https://example.com/a.xml
User-agent: *
SITEMAP:   http://example.com/c.xml   # trailing comment
Site-map: https://example.com/d.xml
"""
    rules = RobotsTxt.parse(body)
    assert rules.sitemaps == [
        "https://example.com/a.xml",
        "https://example.com/b.xml",
        "http://example.com/c.xml",
        "https://example.com/d.xml",
    ]


def test_sitemaps_must_be_absolute() -> None:
    body = "Sitemap: /sitemap.xml\nSitemap: sitemap.xml\nSitemap:\nSitemap: https://example.com/s.xml\n"
    assert RobotsTxt.parse(body).sitemaps == ["https://example.com/s.xml"]


def test_sitemaps_returns_a_copy() -> None:
    rules = RobotsTxt.parse("Sitemap: https://example.com/s.xml\n")
    rules.sitemaps.append("https://evil.example/")
    assert rules.sitemaps == ["https://example.com/s.xml"]


def test_sitemaps_do_not_depend_on_the_agent_groups() -> None:
    rules = RobotsTxt.parse("User-agent: a\nDisallow: /\nSitemap: https://example.com/s.xml\n")
    assert rules.sitemaps == ["https://example.com/s.xml"]


# -- other records never end a group ---------------------------------------------------


@pytest.mark.parametrize(
    "record",
    [
        "Crawl-delay: 5",
        "Request-rate: 1/5s",
        "Sitemap: https://example.com/sitemap.xml",
        "Host: example.com",
        "Noindex: /x",
        "Clean-param: ref /articles/",
        "Unknown-key: value",
    ],
)
def test_other_records_do_not_end_the_user_agent_lines(record: str) -> None:
    # RFC 9309 2.2.4: a group holding only such a record merges with the
    # rules that follow.
    body = f"User-agent: a\n{record}\nUser-agent: b\nDisallow: /private\n"
    rules = RobotsTxt.parse(body)
    assert rules.allowed("/private", "a") is False
    assert rules.allowed("/private", "b") is False
    assert rules.allowed("/private", "c") is True


@pytest.mark.parametrize(
    "record",
    ["Crawl-delay: 5", "Sitemap: https://example.com/sitemap.xml", "Host: example.com"],
)
def test_other_records_between_rules_do_not_end_the_group(record: str) -> None:
    body = f"User-agent: a\nDisallow: /x\n{record}\nDisallow: /y\n"
    rules = RobotsTxt.parse(body)
    assert rules.allowed("/x", "a") is False
    assert rules.allowed("/y", "a") is False


def test_group_of_crawl_delays_shares_the_following_rules() -> None:
    # The pattern of many real files: "delayed" bots listed with only a
    # Crawl-delay each, then a group that disallows everything.
    body = """\
User-agent: *
Disallow: /search

User-agent: bingbot
Crawl-delay: 10
User-agent: SemrushBot
Crawl-delay: 15

User-agent: Yandex
Disallow: /
"""
    rules = RobotsTxt.parse(body)
    assert rules.crawl_delay("bingbot") == 10.0
    # One group for the rules; each Crawl-delay for the User-agent lines it follows.
    assert rules.crawl_delay("SemrushBot") == 15.0
    assert rules.crawl_delay("Yandex") is None
    for bot in ("bingbot", "SemrushBot", "Yandex"):
        assert rules.allowed("/", bot) is False
    assert rules.allowed("/", "Googlebot") is True
    assert rules.allowed("/search", "Googlebot") is False


def test_unknown_keys_are_not_rules() -> None:
    rules = RobotsTxt.parse("User-agent: *\nNoindex: /a\nHost: /b\nBlock: /c\n")
    for path in ("/a", "/b", "/c"):
        assert rules.allowed(path, "MyBot") is True
    assert rules.crawl_delay("MyBot") is None
