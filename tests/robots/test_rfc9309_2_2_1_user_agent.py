"""RFC 9309 section 2.2.1: the user-agent line, and how groups are formed and chosen.

A group is one or more user-agent lines followed by rules; a user-agent line
after a rule starts a new group; blank lines do not end groups; groups naming
the same agent are merged; the ``*`` group applies only when no group names
the agent; agents match case-insensitively on the product token.
"""

from __future__ import annotations

import tracemalloc

import pytest

from robotgate import RobotsTxt
from robotgate.agents import product_token


def allowed(body: str, path: str, agent: str) -> bool:
    return RobotsTxt.parse(body).allowed(path, agent)


# -- product tokens ---------------------------------------------------------


@pytest.mark.parametrize(
    ("user_agent", "token"),
    [
        ("MyBot", "mybot"),
        ("MyBot/2.1 (+https://example.com/bot)", "mybot"),
        ("Googlebot-Image/1.0", "googlebot-image"),
        ("my_bot/1", "my_bot"),
        ("  ExampleBot/0.1", "examplebot"),
        ("*", ""),
        ("", ""),
        ("2bot", ""),
    ],
)
def test_product_token(user_agent: str, token: str) -> None:
    assert product_token(user_agent) == token


@pytest.mark.parametrize("agent", ["foobot", "FOOBOT", "FooBot", "FooBot/1.2", "fOObot/9 (x)"])
def test_agent_match_is_case_insensitive(agent: str) -> None:
    assert allowed("User-agent: FooBot\nDisallow: /\n", "/x", agent) is False


@pytest.mark.parametrize("line", ["FooBot", "foobot", "FOOBOT/1.0", "FooBot/1.0 (+http://x)"])
def test_user_agent_line_is_reduced_to_its_product_token(line: str) -> None:
    assert allowed(f"User-agent: {line}\nDisallow: /\n", "/x", "FooBot/2.0") is False


def test_agent_match_is_exact_not_prefix() -> None:
    body = "User-agent: Googlebot\nDisallow: /a\n\nUser-agent: Googlebot-News\nDisallow: /b\n"
    rules = RobotsTxt.parse(body)
    assert rules.allowed("/a", "Googlebot") is False
    assert rules.allowed("/b", "Googlebot") is True
    assert rules.allowed("/a", "Googlebot-News") is True
    assert rules.allowed("/b", "Googlebot-News") is False
    # No group names "Googlebot-Image" and there is no "*" group.
    assert rules.allowed("/a", "Googlebot-Image") is True


def test_star_must_stand_alone() -> None:
    # "*bot" is not the catch-all, and names no valid product token either.
    assert allowed("User-agent: *bot\nDisallow: /\n", "/x", "MyBot") is True
    # Trailing whitespace (and comments) after "*" are fine.
    assert allowed("User-agent: *   \nDisallow: /\n", "/x", "MyBot") is False
    assert allowed("User-agent: * # all\nDisallow: /\n", "/x", "MyBot") is False


# -- forming groups ---------------------------------------------------------


def test_several_user_agent_lines_form_one_group() -> None:
    body = "User-agent: a\nUser-agent: b\nUser-agent: c\nDisallow: /x\n"
    for agent in "abc":
        assert allowed(body, "/x", agent) is False
    assert allowed(body, "/x", "d") is True


def test_user_agent_after_a_rule_starts_a_new_group() -> None:
    body = "User-agent: a\nDisallow: /x\nUser-agent: b\nDisallow: /y\n"
    rules = RobotsTxt.parse(body)
    assert rules.allowed("/x", "a") is False
    assert rules.allowed("/y", "a") is True
    assert rules.allowed("/x", "b") is True
    assert rules.allowed("/y", "b") is False


def test_an_empty_disallow_also_ends_the_user_agent_lines() -> None:
    body = "User-agent: a\nDisallow:\nUser-agent: b\nDisallow: /\n"
    assert allowed(body, "/x", "a") is True
    assert allowed(body, "/x", "b") is False


@pytest.mark.parametrize(
    "body",
    [
        "User-agent: a\n\nDisallow: /x\n",
        "User-agent: a\n\n\n\nDisallow: /x\n",
        "User-agent: a\n\nUser-agent: b\n\nDisallow: /x\n",
        "User-agent: a\nDisallow: /y\n\nDisallow: /x\n",
        "User-agent: a\r\n\r\nDisallow: /x\r\n",
    ],
)
def test_blank_lines_do_not_end_groups(body: str) -> None:
    assert allowed(body, "/x", "a") is False
    assert allowed(body, "/x", "other") is True


def test_groups_naming_the_same_agent_are_merged_rfc_example() -> None:
    # RFC 9309 2.2.1: these two groups are one group with three rules.
    body = """\
user-agent: ExampleBot
disallow: /foo
disallow: /bar

user-agent: ExampleBot
disallow: /baz
"""
    rules = RobotsTxt.parse(body)
    for path in ("/foo", "/bar", "/baz"):
        assert rules.allowed(path, "ExampleBot") is False
    assert rules.allowed("/qux", "ExampleBot") is True


def test_merged_case_insensitively_and_with_precedence_across_groups() -> None:
    body = """\
User-agent: FooBot
Disallow: /a

User-agent: *
Disallow: /

user-agent: foobot
Allow: /a/public
"""
    rules = RobotsTxt.parse(body)
    assert rules.allowed("/a/x", "FooBot") is False
    # Longest match across the merged groups.
    assert rules.allowed("/a/public/1", "FooBot") is True
    # The "*" group is not merged in for an agent that has its own group.
    assert rules.allowed("/b", "FooBot") is True


def test_merging_does_not_leak_into_other_agents() -> None:
    body = "User-agent: a\nUser-agent: b\nDisallow: /x\nUser-agent: a\nDisallow: /y\n"
    rules = RobotsTxt.parse(body)
    assert rules.allowed("/y", "b") is True
    assert rules.allowed("/x", "b") is False
    assert rules.allowed("/x", "a") is False
    assert rules.allowed("/y", "a") is False


@pytest.mark.parametrize("order", [("a", "b"), ("b", "a")])
def test_merged_groups_answer_the_same_whatever_is_asked_first(order: tuple[str, str]) -> None:
    # A group that is part of a merged one must keep its rules after being
    # compiled for another agent.
    body = "User-agent: a\nUser-agent: b\nDisallow: /x\nUser-agent: a\nDisallow: /y\n"
    rules = RobotsTxt.parse(body)
    answers = {agent: (rules.allowed("/x", agent), rules.allowed("/y", agent)) for agent in order}
    assert answers == {"a": (False, False), "b": (False, True)}


def test_merged_groups_copy_none_of_their_parts_rules() -> None:
    # One big group names 30 agents; each agent has a small group of its own too,
    # so each has its own merged group holding the big one.  A copy of the big
    # group's 2,000 rules in each would cost 30 x 2,000 x 13 bytes or more.
    n = 30
    names = [f"bot{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(n)]  # letters only
    big = "".join(f"User-agent: {a}\n" for a in names) + "".join(
        f"Disallow: /big{j}/\n" for j in range(2000))
    own = "".join(f"User-agent: {a}\nDisallow: /own{i}/\n" for i, a in enumerate(names))
    tracemalloc.start()
    try:
        rules = RobotsTxt.parse(big + own)
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert held < 60_000
    for i in (0, 1, n - 1):
        agent = names[i]
        assert not rules.allowed("/big1999/x", agent)
        assert not rules.allowed(f"/own{i}/x", agent)
        assert rules.allowed(f"/own{(i + 1) % n}/x", agent)


def test_star_groups_are_merged_too() -> None:
    body = (
        "User-agent: *\nDisallow: /a\n\nUser-agent: b\nDisallow: /\n\nUser-agent: *\nDisallow: /c\n"
    )
    rules = RobotsTxt.parse(body)
    assert rules.allowed("/a", "MyBot") is False
    assert rules.allowed("/c", "MyBot") is False
    assert rules.allowed("/d", "MyBot") is True


# -- choosing the group -------------------------------------------------------


def test_star_group_applies_only_when_no_group_names_the_agent() -> None:
    body = "User-agent: *\nDisallow: /\n\nUser-agent: FooBot\nDisallow: /private\n"
    rules = RobotsTxt.parse(body)
    assert rules.allowed("/public", "FooBot") is True
    assert rules.allowed("/private", "FooBot") is False
    assert rules.allowed("/public", "BarBot") is False


def test_a_named_group_without_rules_allows_everything() -> None:
    # RFC 9309 5.1, "quxbot": an empty group at the end of the file.
    body = "User-agent: *\nDisallow: /\n\nUser-agent: quxbot\n"
    assert allowed(body, "/anything", "quxbot") is True
    assert allowed(body, "/anything", "other") is False


def test_no_matching_group_and_no_star_group_allows_everything() -> None:
    assert allowed("User-agent: FooBot\nDisallow: /\n", "/x", "BarBot") is True


def test_star_in_the_same_group_as_a_named_agent() -> None:
    body = "User-agent: FooBot\nUser-agent: *\nDisallow: /x\n\nUser-agent: BarBot\nDisallow: /y\n"
    rules = RobotsTxt.parse(body)
    assert rules.allowed("/x", "FooBot") is False
    assert rules.allowed("/x", "Unknown") is False
    assert rules.allowed("/x", "BarBot") is True
    assert rules.allowed("/y", "BarBot") is False


def test_an_invalid_agent_line_still_belongs_to_its_group() -> None:
    # "008" has no product token: it names no crawler, but it does not start
    # a group of its own either, so the rules belong to the "*" group.
    body = "User-Agent: *\nCrawl-delay: 120\n\nUser-agent: 008\nDisallow: /\n"
    rules = RobotsTxt.parse(body)
    assert rules.allowed("/x", "Googlebot") is False
    assert rules.crawl_delay("Googlebot") == 120.0


def test_crawler_asking_as_star_gets_the_star_group() -> None:
    rules = RobotsTxt.parse("User-agent: *\nDisallow: /x\n")
    assert rules.allowed("/x", "*") is False
    assert rules.allowed("/x", "") is False
