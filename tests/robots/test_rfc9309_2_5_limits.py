"""RFC 9309 section 2.5 (limits), and what the parser survives.

At most 500 KiB of a body is parsed (configurable, counted in UTF-8
octets); Google's line-length limit; huge, binary and adversarial bodies (500
KiB of patterns with thousands of ``*`` queried with a 100 KiB path must
answer); a UTF-8 BOM; LF, CR and CRLF line ends; invalid UTF-8 never raises.

The adversarial tests assert verdicts, not timings; a generous watchdog
turns a blow-up into a failure instead of a hung test run.
"""

from __future__ import annotations

import random
import signal
import string
from collections.abc import Iterator
from itertools import islice, product

import pytest

import robotgate.agents
import robotgate.robots.rfc9309
from robotgate import RobotsTxt, Rule
from robotgate.robots.rfc9309 import DEFAULT_MAX_BYTES, MAX_LINE_LENGTH

KIB = 1024
WATCHDOG_SECONDS = 120


@pytest.fixture
def watchdog() -> Iterator[None]:
    """Fail (rather than hang) if the test does not complete."""
    if not hasattr(signal, "setitimer"):
        yield
        return

    def on_alarm(signum: int, frame: object) -> None:
        raise TimeoutError(f"did not complete within {WATCHDOG_SECONDS} s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, WATCHDOG_SECONDS)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def fill(line: str, size: int = 500 * KIB) -> str:
    """``line`` (newline-terminated) repeated to about ``size`` characters."""
    return line * (size // len(line))


# -- the parsing limit --------------------------------------------------------------


def test_default_limit_is_500_kib() -> None:
    assert DEFAULT_MAX_BYTES == 500 * KIB


def padded(before: int, rule: str = "Disallow: /late\n") -> str:
    """A body whose ``rule`` line starts at octet ``before``."""
    head = "User-agent: *\n"
    filler = "#" * (before - len(head) - 1) + "\n"
    return head + filler + rule


@pytest.mark.parametrize("as_bytes", [False, True])
def test_rules_past_the_limit_are_ignored(as_bytes: bool) -> None:
    inside = padded(DEFAULT_MAX_BYTES - 100)
    outside = padded(DEFAULT_MAX_BYTES + 10)
    for body, expected in ((inside, False), (outside, True)):
        rules = RobotsTxt.parse(body.encode() if as_bytes else body)
        assert rules.allowed("/late", "MyBot") is expected


def test_limit_is_configurable() -> None:
    body = padded(DEFAULT_MAX_BYTES + 10)
    assert RobotsTxt.parse(body, max_bytes=600 * KIB).allowed("/late", "MyBot") is False
    small = "User-agent: *\nDisallow: /a\nDisallow: /b\n"
    rules = RobotsTxt.parse(small, max_bytes=len("User-agent: *\nDisallow: /a\n"))
    assert rules.allowed("/a", "MyBot") is False
    assert rules.allowed("/b", "MyBot") is True
    assert RobotsTxt.parse(small, max_bytes=0).allowed("/a", "MyBot") is True
    assert RobotsTxt.parse(small, max_bytes=-5).allowed("/a", "MyBot") is True


@pytest.mark.parametrize("as_bytes", [False, True])
def test_limit_counts_utf8_octets(as_bytes: bool) -> None:
    # 300 000 "é" are 600 000 octets but only 300 000 characters: the rule
    # after them is past 500 KiB whether the body is given as text or bytes.
    body = "User-agent: *\n# " + "é" * 300_000 + "\nDisallow: /late\n"
    rules = RobotsTxt.parse(body.encode() if as_bytes else body)
    assert rules.allowed("/late", "MyBot") is True


def test_limit_cutting_a_multibyte_character_does_not_raise() -> None:
    body = "User-agent: *\nDisallow: /ツツツツ\n"
    for limit in range(len(body.encode()) + 1):
        for form in (body, body.encode()):
            RobotsTxt.parse(form, max_bytes=limit).allowed("/ツ", "MyBot")


# -- the line-length limit (Google's) --------------------------------------------------


def test_line_length_limit_value() -> None:
    assert MAX_LINE_LENGTH == 2083 * 8 - 1


def test_a_line_at_the_limit_is_whole() -> None:
    pattern = "/" + "a" * (MAX_LINE_LENGTH - len("Disallow: /") - 1) + "b"
    line = "Disallow: " + pattern
    assert len(line) == MAX_LINE_LENGTH
    rules = RobotsTxt.parse(f"User-agent: *\n{line}\n")
    assert rules.allowed(pattern, "MyBot") is False
    assert rules.allowed(pattern[:-1] + "c", "MyBot") is True


def test_characters_past_the_line_limit_are_ignored() -> None:
    line = "Disallow: /x" + "a" * 20_000 + "/secret"
    kept = line[len("Disallow: ") : MAX_LINE_LENGTH]
    rules = RobotsTxt.parse(f"User-agent: *\n{line}\nDisallow: /next-line\n")
    # The pattern was cut, so it matches paths that lack the "/secret" tail.
    assert rules.allowed("/x" + "a" * 20_000, "MyBot") is False
    assert rules.decide("/x" + "a" * 20_000, "MyBot").rule == Rule(False, kept, 2)
    assert rules.allowed(kept[:-1], "MyBot") is True
    # The next line is read normally.
    assert rules.allowed("/next-line", "MyBot") is False


def test_line_limit_counts_octets() -> None:
    # "Disallow: /" is 11 octets; each "é" is 2: 8326 of them fit in the limit.
    line = "Disallow: /" + "é" * 9000
    fits = (MAX_LINE_LENGTH - len("Disallow: /")) // 2
    rules = RobotsTxt.parse(f"User-agent: *\n{line}\n")
    assert rules.allowed("/" + "é" * fits, "MyBot") is False
    assert rules.allowed("/" + "é" * (fits - 1), "MyBot") is True


def test_a_long_comment_does_not_hide_the_rule() -> None:
    rules = RobotsTxt.parse("User-agent: *\nDisallow: /a # " + "c" * 50_000 + "\n")
    assert rules.allowed("/a", "MyBot") is False


# -- huge and adversarial bodies -----------------------------------------------------


@pytest.mark.usefixtures("watchdog")
def test_500_kib_of_stars_queried_with_a_100_kib_path() -> None:
    body = "User-agent: *\n" + fill("Disallow: /" + "*a" * 2000 + "b\n")
    assert len(body) > 490 * KIB
    rules = RobotsTxt.parse(body)
    path = "/" + "a" * (100 * KIB)
    assert rules.allowed(path, "MyBot") is True
    assert rules.decide(path, "MyBot").rule is None
    assert rules.allowed(path + "b", "MyBot") is False
    assert rules.decide(path + "b", "MyBot").allowed is False
    assert rules.allowed("/ab", "MyBot") is True  # too few "a"s for 2000 stars


@pytest.mark.usefixtures("watchdog")
def test_500_kib_of_anchored_stars() -> None:
    body = "User-agent: *\n" + fill("Disallow: /*" + "a*" * 2500 + "b$\n")
    rules = RobotsTxt.parse(body.encode())
    path = "/" + "a" * (100 * KIB)
    assert rules.allowed(path + "b", "MyBot") is False
    assert rules.allowed(path + "bc", "MyBot") is True
    assert rules.allowed(path, "MyBot") is True


@pytest.mark.usefixtures("watchdog")
def test_500_kib_of_nothing_but_stars() -> None:
    body = "User-agent: *\nDisallow: /\n" + fill("Allow: " + "*" * 5000 + "\n")
    rules = RobotsTxt.parse(body)
    path = "/" + "x" * (100 * KIB)
    assert rules.allowed(path, "MyBot") is True
    assert rules.decide(path, "MyBot").rule == Rule(True, "*" * 5000, 3)


@pytest.mark.usefixtures("watchdog")
def test_thousands_of_distinct_wildcard_rules() -> None:
    lines = [f"Disallow: /*{'x*' * 40}{i}z\n" for i in range(4000)]
    body = "User-agent: *\n" + "".join(lines)
    rules = RobotsTxt.parse(body)
    path = "/" + "x" * (100 * KIB)
    assert rules.allowed(path, "MyBot") is True
    assert rules.allowed(path + "1234z", "MyBot") is False
    assert rules.decide(path + "1234z", "MyBot").rule == Rule(False, f"/*{'x*' * 40}1234z", 1236)


@pytest.mark.usefixtures("watchdog")
def test_thousands_of_nested_literal_prefixes() -> None:
    body = "User-agent: *\n" + "".join(
        f"{'Allow' if n % 2 else 'Disallow'}: /{'a' * n}\n" for n in range(1, 1000)
    )
    rules = RobotsTxt.parse(body)
    assert rules.allowed("/" + "a" * (100 * KIB), "MyBot") is True  # n = 999 is an Allow
    assert rules.allowed("/" + "a" * 998, "MyBot") is False
    # The longest prefix rule wins: n = 499 (an Allow, line 500), n = 500 (a Disallow).
    assert rules.decide("/" + "a" * 499 + "b", "MyBot").rule == Rule(True, "/" + "a" * 499, 500)
    assert rules.decide("/" + "a" * 500 + "b", "MyBot").rule == Rule(False, "/" + "a" * 500, 501)


def names(n: int) -> list[str]:
    """``n`` distinct valid product tokens."""
    return ["".join(t) for t in islice(product(string.ascii_lowercase, repeat=4), n)]


@pytest.mark.usefixtures("watchdog")
def test_thousands_of_agents_in_repeated_groups() -> None:
    # Every agent is named by two groups, so every one of them gets a merged group.
    agents = "".join(f"User-agent: {a}\n" for a in names(8000))
    body = agents + "Disallow: /x\n" + agents + "Disallow: /y\n"
    assert len(body) < 500 * KIB
    rules = RobotsTxt.parse(body)
    for agent in ("aaaa", "aazz", names(8000)[-1]):
        assert rules.allowed("/x", agent) is False
        assert rules.allowed("/y", agent) is False
        assert rules.allowed("/z", agent) is True
    assert rules.allowed("/x", "zzzz") is True


@pytest.mark.slow
@pytest.mark.usefixtures("watchdog")
@pytest.mark.parametrize("solo_first", [True, False])
def test_thousands_of_agents_each_in_a_different_pair_of_groups(solo_first: bool) -> None:
    # Every agent is in one big group and in a small group of its own: as many
    # distinct merges as agents.  "solo" is only in the big group, so that
    # group is also compiled on its own; asking about it first must not take
    # its rules away from the merged groups.
    many = names(6000)
    big = "User-agent: solo\n" + "".join(f"User-agent: {a}\n" for a in many)
    big += "".join(f"Disallow: /p{i}\n" for i in range(6000))
    small = "".join(f"User-agent: {a}\nAllow: /p{i}\n" for i, a in enumerate(many))
    rules = RobotsTxt.parse(big + small)
    if solo_first:
        assert rules.allowed("/p7", "solo") is False
    for agent in (many[7], many[-1]):
        i = many.index(agent)
        assert rules.allowed(f"/p{i}", agent) is True  # its own Allow ties and wins
        assert rules.allowed(f"/p{i + 1}", agent) is False
        assert rules.allowed("/q", agent) is True
        d = rules.decide(f"/p{i}", agent)
        assert d.rule == Rule(True, f"/p{i}", 12003 + 2 * i)  # after 12001 lines
        assert d.group is not None and d.group[:2] == ("solo", many[0]) and agent in d.group
    assert rules.allowed("/p7", "solo") is False
    assert rules.decide("/p7", "solo").rule == Rule(False, "/p7", 6002 + 7)


def test_long_keys_and_agent_lines_are_not_remembered() -> None:
    # Parsing caches short keys and agent tokens across files; a hostile file
    # must not fill those caches with 16 KiB strings.
    key = "X-Hostile-" + "k" * 10_000
    agent = "Hostile" + "a" * 10_000
    rules = RobotsTxt.parse(f"{key}: v\nUser-agent: {agent}\nDisallow: /\n")
    assert rules.allowed("/x", agent) is False
    assert rules.allowed("/x", "Other") is True
    assert key.lower() not in robotgate.robots.rfc9309._KEYS
    assert agent not in robotgate.agents._CACHE


@pytest.mark.usefixtures("watchdog")
def test_tens_of_thousands_of_sitemaps() -> None:
    body = "".join(f"Sitemap: https://example.com/s{i}.xml\n" for i in range(12_000))
    body += "Sitemap: https://example.com/s0.xml\n"
    assert len(body) < 500 * KIB
    rules = RobotsTxt.parse(body)
    assert len(rules.sitemaps) == 12_000
    assert rules.sitemaps[0] == "https://example.com/s0.xml"
    assert rules.sitemaps[-1] == "https://example.com/s11999.xml"


@pytest.mark.slow
@pytest.mark.usefixtures("watchdog")
@pytest.mark.parametrize(
    "body",
    [
        "x" * (600 * KIB),
        "Disallow: /" + "a" * (600 * KIB),
        "\n" * (600 * KIB),
        "\r" * (600 * KIB),
        "\r\n" * (300 * KIB),
        "#" * (600 * KIB),
        "User-agent: *\n" * (40 * KIB),
        ":" * (600 * KIB),
        " " * (600 * KIB),
        "User-agent: *\nDisallow: " + "%" * (500 * KIB),
        "User-agent: *\nDisallow: " + "%e3%83%84" * (50 * KIB),
    ],
    ids=lambda b: repr(b[:16]),
)
def test_degenerate_bodies(body: str) -> None:
    for form in (body, body.encode()):
        rules = RobotsTxt.parse(form)
        rules.allowed("/" + "a" * (100 * KIB), "MyBot")
        rules.decide("/%e3" * 1000, "MyBot")


# -- binary content and encodings ------------------------------------------------------


@pytest.mark.slow
def test_random_binary_bodies_parse() -> None:
    rng = random.Random(9309)
    for size in (0, 1, 2, 3, 10, 100, 10_000, 200_000):
        body = rng.randbytes(size)
        rules = RobotsTxt.parse(body)
        assert isinstance(rules.allowed("/", "MyBot"), bool)
        rules.decide("/x", "MyBot")
        rules.crawl_delay("MyBot")
        rules.request_rate("MyBot")


def test_nul_bytes_do_not_end_the_file() -> None:
    rules = RobotsTxt.parse(b"\x00\x00\nUser-agent: *\nDisallow: /a\x00b\nDisallow: /c\n")
    assert rules.allowed("/c", "MyBot") is False
    assert rules.allowed("/a\x00b", "MyBot") is False


def test_utf16_body_parses_without_error() -> None:
    body = "User-agent: *\nDisallow: /\n".encode("utf-16")
    rules = RobotsTxt.parse(body)
    assert isinstance(rules.allowed("/x", "MyBot"), bool)


@pytest.mark.parametrize(
    "bad",
    [b"\xff", b"\xfe\xff", b"\xc3", b"\xe3\x83", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80", b"\x80"],
)
def test_invalid_utf8_never_raises_and_the_rest_still_counts(bad: bytes) -> None:
    body = b"User-agent: *\nDisallow: /x" + bad + b"y\n" + bad + b"\nDisallow: /z\n"
    rules = RobotsTxt.parse(body)
    assert rules.allowed("/z", "MyBot") is False
    assert rules.decide("/z", "MyBot").rule == Rule(False, "/z", 4)
    assert rules.allowed("/x", "MyBot") is True  # the damaged pattern is longer than "/x"
    rules.decide("/xy", "MyBot")


def test_latin1_pattern_does_not_raise() -> None:
    rules = RobotsTxt.parse("User-agent: *\nDisallow: /caf\xe9\nDisallow: /b\n".encode("latin-1"))
    assert rules.allowed("/b", "MyBot") is False
    assert isinstance(rules.allowed("/café", "MyBot"), bool)


# -- the byte-order mark -------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        b"\xef\xbb\xbfUser-agent: *\nDisallow: /a\n",
        b"\xef\xbb\xbfUser-agent: *\r\nDisallow: /a\r\n",
        b"\xef\xbb\xbfUser-agent: *\rDisallow: /a\r",
        "\ufeffUser-agent: *\nDisallow: /a\n",
        "\ufeffUser-agent: *\r\nDisallow: /a\r\n",
    ],
)
def test_bom_is_skipped_and_the_first_line_counts(body: str | bytes) -> None:
    rules = RobotsTxt.parse(body)
    assert rules.allowed("/a", "MyBot") is False
    assert rules.decide("/a", "MyBot").rule == Rule(False, "/a", 2)


def test_bom_before_a_first_line_rule() -> None:
    rules = RobotsTxt.parse(b"\xef\xbb\xbfSitemap: https://example.com/s.xml\n")
    assert rules.sitemaps == ["https://example.com/s.xml"]


def test_bom_alone() -> None:
    assert RobotsTxt.parse(b"\xef\xbb\xbf").allowed("/", "MyBot") is True
    assert RobotsTxt.parse("\ufeff").allowed("/", "MyBot") is True


# -- line ends -------------------------------------------------------------------------------


@pytest.mark.parametrize("eol", ["\n", "\r", "\r\n"])
@pytest.mark.parametrize("as_bytes", [False, True])
def test_line_ends(eol: str, as_bytes: bool) -> None:
    text = eol.join(["User-agent: a", "Disallow: /x", "", "User-agent: b", "Disallow: /y", ""])
    rules = RobotsTxt.parse(text.encode() if as_bytes else text)
    assert rules.allowed("/x", "a") is False
    assert rules.allowed("/y", "a") is True
    assert rules.allowed("/y", "b") is False
    assert rules.decide("/y", "b").rule == Rule(False, "/y", 5)


def test_mixed_line_ends() -> None:
    rules = RobotsTxt.parse(
        "User-agent: *\rDisallow: /a\r\nDisallow: /b\nDisallow: /c\n\rDisallow: /d"
    )
    for path, line in (("/a", 2), ("/b", 3), ("/c", 4), ("/d", 6)):
        assert rules.decide(path, "MyBot").rule == Rule(False, path, line)


def test_no_line_end_at_all() -> None:
    rules = RobotsTxt.parse("User-agent: * Disallow: /a")
    # One line: "User-agent" with the value "* Disallow: /a": no rules.
    assert rules.allowed("/a", "MyBot") is True


@pytest.mark.parametrize("as_bytes", [True, False])
def test_partial_last_line_at_the_limit_is_dropped(as_bytes: bool) -> None:
    # "Allow: /private/press" cut to "Allow: /pri" would allow more than written.
    head = "User-agent: *\nDisallow: /private\n"
    text = head + "Allow: /private/press\n"
    limit = len(head) + len("Allow: /pri")
    body: str | bytes = text.encode() if as_bytes else text
    rules = RobotsTxt.parse(body, max_bytes=limit)
    assert not rules.allowed("/private/x", "bot")
    assert not rules.allowed("/private/press", "bot")
    assert RobotsTxt.parse(body, max_bytes=len(text)).allowed("/private/press", "bot")


def test_rules_past_line_65535_keep_their_lines_and_kinds() -> None:
    # A group's rules keep each line number with its kind in small integers;
    # numbers past what two bytes hold must still come back whole.
    body = "User-agent: *\n" + "\n" * 70_000 + "Disallow: /a\nAllow: /a/b\n"
    rules = RobotsTxt.parse(body)
    assert rules.decide("/a/x", "bot").rule == Rule(False, "/a", 70_002)
    assert rules.decide("/a/b", "bot").rule == Rule(True, "/a/b", 70_003)
