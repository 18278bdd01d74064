"""The robot's name in a User-Agent (issue 52 item 5): its product token, or the robot
a browser-style User-Agent names in a comment; and the gate's one choice of it."""

from __future__ import annotations

import logging

import pytest

from robotgate import RobotGate, RobotsTxt
from robotgate.agents import product_token, robot_name

GOOGLEBOT = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
GOOGLEBOT_SMARTPHONE = (
    "Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 "
    "(KHTML, like Gecko) Chrome/119.0.6045.199 Mobile Safari/537.36 "
    "(compatible; Googlebot/2.1; +http://www.google.com/bot.html)")
BINGBOT = "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)"
BINGBOT_CHROME = (
    "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; bingbot/2.0; "
    "+http://www.bing.com/bingbot.htm) Chrome/116.0.1938.76 Safari/537.36")
APPLEBOT = (
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_5) AppleWebKit/605.1.15 (KHTML, like "
    "Gecko) Version/13.1.1 Safari/605.1.15 (Applebot/0.1; +http://www.apple.com/go/applebot)")
CHROME = ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
          "Chrome/120.0.0.0 Safari/537.36")
FIREFOX = "Mozilla/5.0 (X11; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0"
IE = "Mozilla/5.0 (compatible; MSIE 9.0; Windows NT 6.1; Trident/5.0)"
PHONE = "Mozilla/5.0 (Linux; Android 13; SM-S908B/DS) AppleWebKit/537.36 Chrome/120 Safari/537"


@pytest.mark.parametrize(
    ("user_agent", "token"),
    [
        (GOOGLEBOT, "googlebot"),
        (GOOGLEBOT_SMARTPHONE, "googlebot"),
        (BINGBOT, "bingbot"),
        (BINGBOT_CHROME, "bingbot"),
        (APPLEBOT, "applebot"),
        ("Mozilla/5.0 (compatible; MyBot/1.0; +https://example.com/bot)", "mybot"),
        ("Mozilla/5.0 (compatible; MyBot)", "mybot"),
        ("MyBot/1.0", "mybot"),
        ("MyBot/2.1 (+https://example.com/bot)", "mybot"),
        ("Googlebot-Image/1.0", "googlebot-image"),
    ],
)
def test_the_robots_name_is_found(user_agent: str, token: str) -> None:
    name = robot_name(user_agent)
    assert name is not None and product_token(name) == token


@pytest.mark.parametrize("user_agent", [CHROME, FIREFOX, IE, PHONE, "Mozilla/5.0",
                                        "Mozilla/5.0 (compatible)", "Opera/9.80 (X11)"])
def test_a_browser_user_agent_names_no_robot(user_agent: str) -> None:
    assert robot_name(user_agent) is None


def test_a_robot_user_agent_is_kept_as_it_is() -> None:
    # Both dialects read a robot's User-Agent as they always have.
    assert robot_name("MyBot/2.1 (+https://example.com/bot)") == (
        "MyBot/2.1 (+https://example.com/bot)")


@pytest.mark.parametrize("user_agent", [
    "Mozilla/5.0 " + "(" * 100_000,
    "Mozilla/5.0 (" + "compatible; " * 20_000 + ")",
    "Mozilla/5.0 (" + "a/" * 50_000 + ")",
])
def test_hostile_user_agents_get_an_answer(user_agent: str) -> None:
    assert robot_name(user_agent) is None


ROBOTS = "User-agent: MyBot\nDisallow: /private\n\nUser-agent: *\nAllow: /\n"


@pytest.mark.parametrize("dialect", ["rfc9309", "classic"])
def test_the_gate_matches_the_robot_a_browser_style_user_agent_names(dialect: str) -> None:
    gate = RobotGate("Mozilla/5.0 (compatible; MyBot/1.0; +https://example.com/bot)",
                     dialect=dialect)
    assert gate.robots_agent == "MyBot/1.0"
    rules = RobotsTxt.parse(ROBOTS, dialect=dialect)
    assert not rules.allowed("/private", gate.robots_agent)
    assert rules.allowed("/private", gate.user_agent)  # as the whole User-Agent matched


def test_robots_agent_overrides_the_user_agent() -> None:
    gate = RobotGate(CHROME, robots_agent="MyBot")
    assert gate.robots_agent == "MyBot" and gate.headers["User-Agent"] == CHROME
    assert RobotGate("OtherBot/1", robots_agent="MyBot").robots_agent == "MyBot"


@pytest.mark.parametrize("bad", ["", "*", "  ", "2bot"])
def test_a_robots_agent_with_no_token_is_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="robots_agent"):
        RobotGate("MyBot/1.0", robots_agent=bad)


def test_a_browser_user_agent_with_no_robot_name_warns_once_at_construction(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="robotgate")
    gate = RobotGate(CHROME)
    warned = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 1 and "names a browser, not a robot" in warned[0].getMessage()
    assert "robots_agent" in warned[0].getMessage()
    assert gate.robots_agent == CHROME  # kept: '*' is what it matches
    caplog.clear()
    RobotGate(GOOGLEBOT)
    RobotGate(CHROME, robots_agent="MyBot")
    RobotGate("MyBot/1.0")
    assert not [r for r in caplog.records if r.levelno == logging.WARNING]


def test_the_name_caches_stay_bounded() -> None:
    from robotgate import agents

    for n in range(agents._CACHE_SIZE + 10):
        assert product_token(f"Bot{n}/1.0") == "bot"  # digits end the token
        robot_name(f"Mozilla/5.0 (compatible; Bot{n}/1.0)")
    assert len(agents._CACHE) <= agents._CACHE_SIZE
    assert len(agents._NAMES) <= agents._CACHE_SIZE
    hostile = "Mozilla/5.0 (compatible; " + "x" * 20_000 + "/1)"
    assert robot_name(hostile) is not None
    assert hostile not in agents._NAMES and hostile not in agents._CACHE
