"""``decide()`` says why: the rule and its 1-based line number in the original
text, or that no rule matched, or that the agent fell back to ``*``, and the
group used."""

from __future__ import annotations

import pytest

from robotgate import Decision, RobotsTxt, Rule

BODY = """\
# Example robots.txt
User-agent: FooBot
User-agent: BarBot
Disallow: /private
Allow: /private/ok

User-agent: *
Disallow: /
"""


def test_decision_names_the_rule_its_line_and_the_group() -> None:
    d = RobotsTxt.parse(BODY).decide("https://example.com/private/x", "FooBot/1.0")
    assert d == Decision(
        allowed=False,
        reason=d.reason,
        rule=Rule(allow=False, pattern="/private", line=4),
        group=("foobot", "barbot"),
    )
    assert d.line == 4
    assert d.outcome is None
    assert "Disallow: /private" in d.reason
    assert "line 4" in d.reason
    assert "foobot" in d.reason
    assert str(d) == d.reason


def test_decision_for_an_allow_rule() -> None:
    d = RobotsTxt.parse(BODY).decide("/private/ok/1", "BarBot")
    assert d.allowed is True
    assert d.rule == Rule(True, "/private/ok", 5)
    assert d.reason.startswith("allowed by 'Allow: /private/ok' (line 5)")
    assert str(d.rule) == "Allow: /private/ok (line 5)"


def test_decision_when_no_rule_matches() -> None:
    d = RobotsTxt.parse(BODY).decide("/public", "FooBot")
    assert d.allowed is True
    assert d.rule is None
    assert d.line is None
    assert d.group == ("foobot", "barbot")
    assert "no rule matches" in d.reason


def test_decision_when_falling_back_to_star() -> None:
    d = RobotsTxt.parse(BODY).decide("/anything", "OtherBot/3.0")
    assert d.allowed is False
    assert d.rule == Rule(False, "/", 8)
    assert d.group == ("*",)
    assert "'*'" in d.reason
    assert "no group names this agent" in d.reason


def test_decision_names_no_fallback_for_a_named_agent() -> None:
    d = RobotsTxt.parse(BODY).decide("/private", "FooBot")
    assert "no group names this agent" not in d.reason


def test_decision_when_no_group_applies() -> None:
    d = RobotsTxt.parse("User-agent: FooBot\nDisallow: /\n").decide("/x", "OtherBot")
    assert d.allowed is True
    assert d.rule is None
    assert d.group is None
    assert "no group" in d.reason


def test_decision_for_an_empty_file() -> None:
    d = RobotsTxt.parse("").decide("/x", "MyBot")
    assert (d.allowed, d.rule, d.group) == (True, None, None)


def test_decision_for_robots_txt() -> None:
    d = RobotsTxt.parse(BODY).decide("/robots.txt", "OtherBot")
    assert d.allowed is True
    assert d.rule is None
    assert "/robots.txt" in d.reason


# -- line numbers in the original text ------------------------------------------------


def test_line_numbers_count_comments_and_blank_lines() -> None:
    body = "\n# comment\n\nUser-agent: *\n\n# another\nDisallow: /a\n\n\nDisallow: /b\n"
    rules = RobotsTxt.parse(body)
    assert rules.decide("/a", "MyBot").line == 7
    assert rules.decide("/b", "MyBot").line == 10


@pytest.mark.parametrize("eol", ["\n", "\r\n", "\r"])
@pytest.mark.parametrize("bom", ["", "\ufeff"])
@pytest.mark.parametrize("as_bytes", [False, True])
def test_line_numbers_with_bom_and_line_ends(eol: str, bom: str, as_bytes: bool) -> None:
    text = bom + eol.join(["# c", "User-agent: *", "", "Disallow: /a", "Allow: /a/b", ""])
    rules = RobotsTxt.parse(text.encode() if as_bytes else text)
    assert rules.decide("/a/x", "MyBot").rule == Rule(False, "/a", 4)
    assert rules.decide("/a/b", "MyBot").rule == Rule(True, "/a/b", 5)


def test_line_numbers_after_an_over_long_line() -> None:
    body = "User-agent: *\n# " + "x" * 40_000 + "\nDisallow: /a\n"
    assert RobotsTxt.parse(body).decide("/a", "MyBot").line == 3


def test_line_numbers_after_invalid_utf8() -> None:
    body = b"User-agent: *\n\xff\xfe\xfd\nDisallow: /a\xff\n\nDisallow: /b\n"
    assert RobotsTxt.parse(body).decide("/b", "MyBot").line == 5


def test_line_numbers_in_merged_groups() -> None:
    body = (
        "User-agent: a\nDisallow: /x\n\nUser-agent: b\nDisallow: /\n\nUser-agent: a\nAllow: /x/y\n"
    )
    rules = RobotsTxt.parse(body)
    assert rules.decide("/x/1", "a").rule == Rule(False, "/x", 2)
    assert rules.decide("/x/y", "a").rule == Rule(True, "/x/y", 8)


def test_line_of_the_winning_duplicate() -> None:
    body = "User-agent: *\nDisallow: /a\nDisallow: /a\nAllow: /a\n"
    assert RobotsTxt.parse(body).decide("/a", "MyBot").rule == Rule(True, "/a", 4)
    body = "User-agent: *\nDisallow: /a*\nDisallow: /a*\n"
    assert RobotsTxt.parse(body).decide("/a", "MyBot").line == 2


# -- the group used ---------------------------------------------------------------------


def test_group_of_merged_groups_lists_every_agent_once() -> None:
    body = (
        "User-agent: a\nUser-agent: b\nDisallow: /x\n\nUser-agent: A\nUser-agent: c\nDisallow: /y\n"
    )
    d = RobotsTxt.parse(body).decide("/y", "a")
    assert d.group == ("a", "b", "c")
    assert d.rule == Rule(False, "/y", 7)


def test_group_leaves_out_lines_that_name_no_valid_agent() -> None:
    body = "User-agent: 360Spider\nUser-agent: *\nDisallow: /\n"
    d = RobotsTxt.parse(body).decide("/x", "MyBot")
    assert d.group == ("*",)
    assert "''" not in d.reason


def test_group_when_star_shares_a_group() -> None:
    d = RobotsTxt.parse("User-agent: a\nUser-agent: *\nDisallow: /\n").decide("/x", "zed")
    assert d.group == ("a", "*")


# -- what the rule shows -------------------------------------------------------------------


def test_rule_pattern_is_shown_normalised() -> None:
    rules = RobotsTxt.parse("User-agent: *\nDisallow: /%62%61%7a/ツ\n")
    d = rules.decide("/baz/%E3%83%84", "MyBot")
    assert d.rule == Rule(False, "/baz/%E3%83%84", 2)


def test_rule_for_an_allowed_index_html_directory() -> None:
    rules = RobotsTxt.parse("User-agent: *\nDisallow: /dir/\nAllow: /dir/index.html\n")
    d = rules.decide("/dir/", "MyBot")
    assert d.allowed is True
    assert d.rule == Rule(True, "/dir/$", 3)


@pytest.mark.parametrize(
    "url", ["/", "/private", "/private/ok", "/x?y", "/robots.txt", "https://e.com/private#f", ""]
)
@pytest.mark.parametrize("agent", ["FooBot", "barbot/2", "Other", "", "*"])
def test_decide_agrees_with_allowed(url: str, agent: str) -> None:
    rules = RobotsTxt.parse(BODY)
    assert rules.decide(url, agent).allowed is rules.allowed(url, agent)


def test_decision_is_immutable() -> None:
    d = RobotsTxt.parse(BODY).decide("/", "FooBot")
    with pytest.raises(AttributeError):
        d.allowed = False  # type: ignore[misc]
