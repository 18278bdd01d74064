"""The delays a robots.txt asks are read in full, never shorter than written.

A ``Crawl-delay`` or ``Request-rate`` belongs to the User-agent lines it
follows, not to the whole group those lines share with others (groups with
no rule merge, as in Google's parser); where several apply to one robot the
slowest wins; a value that is not a clean number is read in full or ignored
with a reason, never cut to its leading digits.  Over the shared corpus, no
(file, robot) pair gets a shorter delay than the file writes for that robot.
"""

from __future__ import annotations

import re
import sys
import tracemalloc
from pathlib import Path

import pytest

from robotgate import RequestRate, RobotsTxt
from robotgate.agents import product_token
from robotgate.policy.pacing import Pacing
from robotgate.policy.site import Interpretation, paced
from robotgate.politeness.scheduler import Scheduler
from robotgate.records import HostState
from robotgate.robots import DelayLine
from tests.support.clock import Clock

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "robots"

FAST_SLOW = """\
User-agent: fastbot
Crawl-delay: 1

User-agent: slowbot
Crawl-delay: 3
"""


# -- whose delay it is ----------------------------------------------------------------


def test_each_delay_belongs_to_the_user_agent_lines_it_follows() -> None:
    rules = RobotsTxt.parse(FAST_SLOW)
    assert rules.crawl_delay("SlowBot/1.0") == 3.0  # the first Crawl-delay gave 1
    assert rules.crawl_delay("FastBot/1.0") == 1.0
    assert rules.crawl_delay("OtherBot") is None


def test_each_request_rate_belongs_to_the_user_agent_lines_it_follows() -> None:
    body = """\
User-agent: one
Request-rate: 1/1s
User-agent: two
Request-rate: 1/5s
User-agent: three
Request-rate: 1/1m
Disallow: /private
"""
    rules = RobotsTxt.parse(body)
    assert rules.request_rate("one") == RequestRate(1, 1.0)
    assert rules.request_rate("two") == RequestRate(1, 5.0)
    assert rules.request_rate("three") == RequestRate(1, 60.0)
    for agent in ("one", "two", "three"):  # the rules are still the merged group's
        assert rules.allowed("/private", agent) is False


def test_a_run_of_user_agent_lines_shares_its_delay() -> None:
    body = "User-agent: a\nUser-agent: b\nCrawl-delay: 5\nUser-agent: c\nCrawl-delay: 1\n"
    rules = RobotsTxt.parse(body)
    assert (rules.crawl_delay("a"), rules.crawl_delay("b"), rules.crawl_delay("c")) == (5, 5, 1)


def test_a_delay_after_the_rules_belongs_to_the_latest_user_agent_lines() -> None:
    body = "User-agent: a\nCrawl-delay: 1\nUser-agent: b\nDisallow: /x\nCrawl-delay: 7\n"
    rules = RobotsTxt.parse(body)
    assert rules.crawl_delay("a") == 1.0
    assert rules.crawl_delay("b") == 7.0


def test_unknown_lines_and_sitemaps_do_not_split_user_agent_lines() -> None:
    body = ("User-agent: a\nHost: example.com\nSitemap: https://example.com/s.xml\n"
            "User-agent: b\nCrawl-delay: 4\n")
    rules = RobotsTxt.parse(body)
    assert rules.crawl_delay("a") == 4.0
    assert rules.crawl_delay("b") == 4.0


def test_a_named_robot_does_not_take_the_star_delay() -> None:
    body = "User-agent: *\nCrawl-delay: 9\n\nUser-agent: a\nCrawl-delay: 1\n\nUser-agent: b\n"
    rules = RobotsTxt.parse(body)
    assert rules.crawl_delay("a") == 1.0
    assert rules.crawl_delay("zz") == 9.0
    # "b" shares the group of "a" (no rule between them) but no delay follows it.
    assert rules.crawl_delay("b") is None


# -- the slowest wins ---------------------------------------------------------------------


def test_two_star_groups_give_the_longer_delay() -> None:
    body = "User-agent: *\nDisallow: /a\nCrawl-delay: 2\n\nUser-agent: *\nCrawl-delay: 4\n"
    assert RobotsTxt.parse(body).crawl_delay("MyBot") == 4.0


def test_groups_naming_one_robot_give_its_longest_delay() -> None:
    body = ("User-agent: a\nCrawl-delay: 6\nDisallow: /x\n\n"
            "User-agent: a\nDisallow: /y\nCrawl-delay: 2\n")
    assert RobotsTxt.parse(body).crawl_delay("a") == 6.0


def test_groups_merged_lazily_give_the_longest_delay() -> None:
    # Each robot is named by all groups but one: too many merged copies to make,
    # so the merged groups read their parts' lines in place.
    def name(i: int) -> str:
        return "bot" + "".join("abcdefghij"[int(c)] for c in str(i))

    groups = 60
    body = "".join(
        "".join(f"User-agent: {name(i)}\n" for i in range(200) if i % groups != g)
        + f"Disallow: /a\nCrawl-delay: {g}\nCrawl-delay: 0.5\n"
        for g in range(groups)
    )
    rules = RobotsTxt.parse(body)
    assert rules.crawl_delay(name(5)) == 59.0
    assert rules.crawl_delay(name(59)) == 58.0
    assert len(rules.delay_lines(name(5))) == 2 * (groups - 1)


def test_repeated_lines_give_the_slowest() -> None:
    body = ("User-agent: *\nCrawl-delay: 1\nCrawl-delay: 3\nCrawl-delay: 2\n"
            "Request-rate: 1/10s\nRequest-rate: 5/1m\nRequest-rate: 1/20s\n")
    rules = RobotsTxt.parse(body)
    assert rules.crawl_delay("MyBot") == 3.0
    assert rules.request_rate("MyBot") == RequestRate(1, 20.0)


# -- values read in full -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("1e9", 1e9),  # not 1: the exponent is read
        ("2E1", 20.0),
        ("+5", 5.0),
        ("1.", 1.0),
        ("10s", 10.0),
        ("10 sec", 10.0),
        ("10 Seconds", 10.0),
        ("5 \ufeff", 5.0),  # a stray BOM is a blank
        ("1" + "0" * 400, sys.float_info.max),  # more than a float holds: the longest
        ("1,5", None),  # 1.5 or 15: not read as 1
        ("5-10", None),
        ("1 000", None),
        ("10 minutes", None),  # not 10 s
        ("10ms", None),
        ("[5]", None),
        ("-1", None),
        ("inf", None),
        ("nan", None),
        ("0x10", None),
        ("1" * 5000 + "x", None),  # a definite answer, however long the value
    ],
)
def test_crawl_delay_is_read_in_full_or_ignored(value: str, expected: float | None) -> None:
    rules = RobotsTxt.parse(f"User-agent: *\nCrawl-delay: {value}\n")
    assert rules.crawl_delay("MyBot") == expected
    (line,) = rules.delay_lines("MyBot")
    assert line.delay == expected
    assert (line.ignored is None) == (expected is not None)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("1/-5", None),  # not 1 a second
        ("1/5x", None),
        ("1/5s/2", None),
        ("1/", None),
        ("1/1e3", RequestRate(1, 1000.0)),
        ("1/10 seconds", RequestRate(1, 10.0)),
        ("2/1 minute", RequestRate(2, 60.0)),
        ("1/1e400", RequestRate(1, sys.float_info.max)),
        ("1/5" + " " * 5000 + "0600-x", None),
    ],
)
def test_request_rate_is_read_in_full_or_ignored(
    value: str, expected: RequestRate | None
) -> None:
    rules = RobotsTxt.parse(f"User-agent: *\nRequest-rate: {value}\n")
    assert rules.request_rate("MyBot") == expected
    (line,) = rules.delay_lines("MyBot")
    assert (line.ignored is None) == (expected is not None)


@pytest.mark.slow
def test_a_file_of_user_agent_and_delay_lines_is_read_in_bounded_memory() -> None:
    # Each delay line belongs to all 5000 agents above it: one set of them, shared.
    body = "User-agent: a\n" * 2000 + "".join(f"User-agent: {c}\n" for c in "bcdefg") * 500
    body += "Crawl-delay: 1\n" * 4999 + "Crawl-delay: 2\n"
    tracemalloc.start()
    try:
        rules = RobotsTxt.parse(body)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 20_000_000  # one tuple of the agents per line would be 200 MB
    assert rules.crawl_delay("g") == 2.0


def test_an_ignored_line_does_not_hide_a_valid_one() -> None:
    rules = RobotsTxt.parse("User-agent: *\nCrawl-delay: 1,5\nCrawl-delay: 2\n")
    assert rules.crawl_delay("MyBot") == 2.0


def test_delay_lines_name_each_line_and_why_it_is_ignored() -> None:
    body = ("User-agent: *\nCrawl-delay: 1e9x\nCrawl delay: 3 # s\n"
            "User-agent: other\nRequest-rate: 1/-5\n")
    rules = RobotsTxt.parse(body)
    assert rules.delay_lines("MyBot") == (
        DelayLine(2, "Crawl-delay", "1e9x", None, None, "not a number of seconds"),
        DelayLine(3, "Crawl-delay", "3", 3.0),
    )
    assert rules.delay_lines("other") == (
        DelayLine(5, "Request-rate", "1/-5", None, None, "not a rate such as 1/10s"),
    )
    found = rules.delay_line("MyBot")
    assert found is not None and found.line == 3 and str(found) == "Crawl-delay: 3 (line 3)"
    assert rules.delay_line("MyBot", "Request-rate") is None


def test_the_classic_dialect_reads_no_delay_lines() -> None:
    rules = RobotsTxt.parse(FAST_SLOW, dialect="classic")
    assert rules.delay_lines("slowbot") == ()
    assert rules.delay_line("slowbot") is None


# -- what the pacing makes of it ---------------------------------------------------------


def test_slowbot_is_paced_at_its_own_delay() -> None:
    rules = RobotsTxt.parse(FAST_SLOW)
    verdict, interval = paced(rules, Interpretation("SlowBot/1.0"), None)
    assert verdict is None and interval == 3.0
    clock = Clock()
    scheduler = Scheduler(Pacing(delay=0.1), clock=clock, wall=clock.now_wall)
    group = scheduler.add("host:example.com", HostState("host:example.com"))
    assert scheduler.try_start(group, interval)
    scheduler.answered(group, 200, None)
    scheduler.done(group)
    clock.advance(2.9)  # past fastbot's 1 s
    assert not scheduler.try_start(group, interval)
    clock.advance(0.1)
    assert scheduler.try_start(group, interval)


def test_a_long_delay_read_in_full_meets_max_crawl_delay() -> None:
    rules = RobotsTxt.parse("User-agent: *\nCrawl-delay: 1e9\n")
    verdict, interval = paced(rules, Interpretation("MyBot"), None)
    assert verdict is not None and not verdict.allowed  # the origin is skipped
    assert interval == 1.0
    assert "Crawl-delay 1e+09 s exceeds max_crawl_delay 60 s" in verdict.reason
    honour = Interpretation("MyBot", pacing=Pacing(on_long_delay="honour"))
    assert paced(rules, honour, None) == (None, 1e9)


# -- the shared corpus ------------------------------------------------------------------------

ROBOTS = ("bingbot", "yandex", "slurp", "msnbot", "ahrefsbot", "semrushbot", "baiduspider", "mybot")
_LINE = re.compile(r"[ \t]*([A-Za-z-]+)[ \t]*:[ \t]*(.*?)[ \t]*")
_PLAIN = re.compile(r"[0-9]+(?:\.[0-9]+)?")


def _asked(text: str) -> tuple[dict[str, float], set[str]]:
    """What a file writes, read simply: each plain-decimal Crawl-delay for the run of
    User-agent lines above it (a run ends at any other ``key: value`` line); the
    longest per agent token, and every token named."""
    asked: dict[str, float] = {}
    named: set[str] = set()
    run: list[str] = []
    open_run = True
    for raw in re.split(r"\r\n|\r|\n", text):
        m = _LINE.fullmatch(raw.split("#", 1)[0])
        if m is None:
            continue
        key, value = m.group(1).lower(), m.group(2)
        if key == "user-agent":
            if not open_run:
                run, open_run = [], True
            token = "*" if value.startswith("*") else product_token(value)
            run.append(token)
            named.add(token)
            continue
        open_run = False
        if key == "crawl-delay" and _PLAIN.fullmatch(value):
            for token in run:
                asked[token] = max(asked.get(token, 0.0), float(value))
    return asked, named


@pytest.mark.slow
@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"the shared robots.txt corpus is not at {CORPUS}")
def test_no_robot_gets_a_shorter_delay_than_the_corpus_files_ask() -> None:
    shorter = []
    longer = []
    checked = 0
    for path in sorted(CORPUS.iterdir()):
        raw = path.read_bytes()
        rules = RobotsTxt.parse(raw)
        asked, named = _asked(raw[: 500 * 1024].decode("utf-8", "replace"))
        for robot in ROBOTS:
            want = asked.get(robot if robot in named else "*")
            if want is None:
                continue
            checked += 1
            got = rules.crawl_delay(robot)
            if got is None or got < want:
                shorter.append((path.name, robot, want, got))
            elif got > want:
                longer.append((path.name, robot, want, got))
    assert checked > 1000  # the reading above finds the files' delays
    assert shorter == []
    # Nor a longer one: what the robot is asked is what the file writes for it.
    assert longer == []
