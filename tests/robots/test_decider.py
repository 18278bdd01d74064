"""A :class:`Decider` keeps each rule's explanation, and knows when ``decide()``
may return it as it is: never when the path could still be /robots.txt, which
RFC 9309 2.2.2 always allows, or when usage rules must look at the path."""

from __future__ import annotations

import pytest

from robotgate import RobotsTxt
from robotgate.robots.decider import ROBOTS_ALLOWED, is_robots_path


@pytest.mark.parametrize(
    ("pattern", "path", "direct"),
    [
        ("/private", "/private/x", True),
        ("/robots.txtx", "/robots.txtx", True),
        ("/robots", "/robots/x", False),  # "/robots.txt" starts with it
        ("/", "/x", False),
        ("/robots.txt", "/robots.txt/x", False),
        ("/robots.txt?", "/robots.txt?", None),  # allowed: it only matches robots.txt
        ("/robots.txt*", "/robots.txt.bak", False),
        ("/*.txt", "/a.txt", False),  # a wildcard could match it
        ("/private$", "/private", False),  # anchored rules are not looked into
    ],
)
def test_a_disallow_is_returned_as_is_only_if_it_cannot_match_robots_txt(
        pattern: str, path: str, direct: bool | None) -> None:
    rules = RobotsTxt.parse(f"User-agent: *\nDisallow: {pattern}\n")
    if direct is None:
        assert rules.decide(path, "Bot") is ROBOTS_ALLOWED
        assert rules.decide(path + "x", "Bot") is ROBOTS_ALLOWED
        return
    first = rules.decide(path, "Bot")
    assert not first.allowed
    assert rules.decide(path, "Bot") is first  # explained once
    decider = rules._deciders["Bot"]  # type: ignore[attr-defined]
    i = decider.rules.match(path)
    assert (decider.direct[i] is first) is direct
    assert (decider.table.get(i) is first) is not direct  # kept where decide() reads it


def test_robots_txt_stays_allowed_after_the_rule_that_covers_it_is_explained() -> None:
    rules = RobotsTxt.parse("User-agent: *\nDisallow: /\n")
    assert not rules.decide("/x", "Bot").allowed
    for path in ("/robots.txt", "/robots.txt?x=1", "/robots.txt"):
        assert rules.decide(path, "Bot") is ROBOTS_ALLOWED
    assert not rules.decide("/robots.txt.bak", "Bot").allowed
    assert not rules.decide("/x", "Bot").allowed


def test_an_allowed_decision_with_usage_rules_is_read_per_path() -> None:
    rules = RobotsTxt.parse(
        "User-agent: *\nAllow: /\nContent-Usage: /ai/ train-ai=y\nContent-Usage: train-ai=n\n")
    assert rules.decide("/ai/x", "Bot").usage == {"train-ai": True}
    assert rules.decide("/other", "Bot").usage == {"train-ai": False}
    assert rules.decide("/ai/y", "Bot").usage == {"train-ai": True}


def test_an_allowed_decision_without_usage_rules_is_returned_as_is() -> None:
    rules = RobotsTxt.parse("User-agent: *\nAllow: /a\nDisallow: /\n")
    first = rules.decide("/a/1", "Bot")
    assert first.allowed
    assert rules.decide("/a/2", "Bot") is first


@pytest.mark.parametrize(
    ("path", "robots"),
    [("/robots.txt", True), ("/robots.txt?", True), ("/robots.txt?a", True),
     ("/robots.txtx", False), ("/robots.tx", False), ("/x/robots.txt", False)],
)
def test_is_robots_path(path: str, robots: bool) -> None:
    assert is_robots_path(path) is robots
