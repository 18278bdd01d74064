"""``Content-Usage`` and ``Content-Signal`` lines in robots.txt (RFC 9309 dialect):
``decide(url, agent).usage`` and ``.signals``, and the lines that gave them
(draft-ietf-aipref-attach, its example first)."""

from __future__ import annotations

import pytest

from robotgate import RobotsTxt
from robotgate.decision import UsageRule
from robotgate.robots.rfc9309 import MAX_LINE_LENGTH

# The attach draft's example (its current revision writes the first rule without a path).
DRAFT = """\
User-Agent: *
Allow: /
Disallow: /never/
Content-Usage: train-ai=n
Content-Usage: /ai-ok/ train-ai=y

User-Agent: ExampleBot
Allow: /
Content-Usage: train-ai=y
"""
# As the issue quotes it, with "/" as the first rule's path.
DRAFT_WITH_SLASH = DRAFT.replace("Content-Usage: train-ai=n", "Content-Usage: / train-ai=n")


@pytest.mark.parametrize("body", [DRAFT, DRAFT_WITH_SLASH])
@pytest.mark.parametrize(
    ("path", "crawl", "usage"),
    [
        ("/test", True, {"train-ai": False}),
        ("/never/test", False, {}),
        ("/ai-ok/test", True, {"train-ai": True}),
    ],
)
def test_the_drafts_example(body: str, path: str, crawl: bool, usage: dict[str, bool]) -> None:
    rules = RobotsTxt.parse(body)
    d = rules.decide(f"https://example.com{path}", "OtherBot/1.0")
    assert (d.allowed, dict(d.usage)) == (crawl, usage)
    assert rules.allowed(f"https://example.com{path}", "OtherBot/1.0") is crawl
    # ExampleBot has its own group: everything crawlable, training allowed.
    d = rules.decide(f"https://example.com{path}", "ExampleBot/2.0")
    assert (d.allowed, dict(d.usage)) == (True, {"train-ai": True})
    assert d.usage_rules == (UsageRule("", "train-ai=y", 9),)


def test_the_explanation_names_the_usage_rule_and_its_line() -> None:
    rules = RobotsTxt.parse(DRAFT)
    d = rules.decide("/ai-ok/test", "OtherBot")
    assert d.usage_rules == (UsageRule("/ai-ok/", "train-ai=y", 5),)
    assert str(d) == (
        "allowed by 'Allow: /' (line 2) in the group for '*' (no group names this agent); "
        "usage train-ai=y by 'Content-Usage: /ai-ok/ train-ai=y' (line 5)"
    )
    assert (
        d.reason
        == "allowed by 'Allow: /' (line 2) in the group for '*' (no group names this agent)"
    )
    assert d.usage_reason == "usage train-ai=y by 'Content-Usage: /ai-ok/ train-ai=y' (line 5)"
    d = rules.decide("/test", "OtherBot")
    assert d.usage_reason == "usage train-ai=n by 'Content-Usage: train-ai=n' (line 4)"


def test_a_disallowed_url_has_no_usage_and_reads_as_before() -> None:
    d = RobotsTxt.parse(DRAFT).decide("/never/test", "OtherBot")
    assert d.allowed is False
    assert d.usage == {} and d.usage_rules == () and d.signals == {}
    assert str(d) == d.reason
    assert "Content-Usage" not in str(d)


def test_without_usage_lines_decisions_are_unchanged() -> None:
    d = RobotsTxt.parse("User-agent: *\nDisallow: /x\n").decide("/y", "Bot")
    assert d.usage == {} and d.usage_rules == ()
    assert str(d) == "allowed: no rule matches in the group for '*' (no group names this agent)"


def test_usage_where_no_allow_or_disallow_rule_matches() -> None:
    d = RobotsTxt.parse("User-agent: *\nContent-Usage: train-ai=n\n").decide("/a", "Bot")
    assert d.allowed is True and d.rule is None
    assert dict(d.usage) == {"train-ai": False}
    assert str(d).endswith("; usage train-ai=n by 'Content-Usage: train-ai=n' (line 2)")


def decide_usage(body: str, path: str, agent: str = "Bot") -> tuple[dict[str, bool], list[int]]:
    d = RobotsTxt.parse(body).decide(path, agent)
    return dict(d.usage), [r.line for r in d.usage_rules]


def test_several_labels() -> None:
    body = "User-agent: *\nContent-Usage: / train-ai=n, search=y, ai-use=n\n"
    # ai-use (an earlier draft's) is no label of the vocabulary now: ignored.
    assert decide_usage(body, "/a") == ({"train-ai": False, "search": True}, [2])


def test_a_repeated_key_keeps_its_last_value() -> None:
    body = "User-agent: *\nContent-Usage: / train-ai=n, train-ai=y\n"
    assert decide_usage(body, "/a") == ({"train-ai": True}, [2])


def test_an_uppercase_key_makes_the_rule_say_nothing() -> None:
    body = "User-agent: *\nContent-Usage: / train-ai=n, Search=y\n"
    assert decide_usage(body, "/a") == ({}, [2])
    d = RobotsTxt.parse(body).decide("/a", "Bot")
    assert str(d).endswith("; usage unknown by 'Content-Usage: / train-ai=n, Search=y' (line 2)")


def test_a_string_value_is_unknown() -> None:
    body = 'User-agent: *\nContent-Usage: / train-ai="n", search=n\n'
    assert decide_usage(body, "/a") == ({"search": False}, [2])


def test_parameters_are_ignored() -> None:
    body = "User-agent: *\nContent-Usage: / train-ai=n;since=2025;by=legal\n"
    assert decide_usage(body, "/a") == ({"train-ai": False}, [2])


def test_an_unknown_label_is_ignored() -> None:
    body = "User-agent: *\nContent-Usage: / train-genai=n, foo=y, search=y\n"
    assert decide_usage(body, "/a") == ({"search": True}, [2])


def test_identical_paths_combine_most_restrictively() -> None:
    # Unlike Allow/Disallow, where the more permissive rule wins a tie.
    body = (
        "User-agent: *\n"
        "Content-Usage: /docs/ train-ai=y, search=y\n"
        "Allow: /\n"
        "Content-Usage: /docs/ train-ai=n\n"
        "Content-Usage: /docs/ search=n\n"
    )
    assert decide_usage(body, "/docs/a") == (
        {"train-ai": False, "search": False},
        [2, 4, 5],
    )


def test_the_longest_match_wins() -> None:
    body = (
        "User-agent: *\n"
        "Content-Usage: /a/b/c/ train-ai=n\n"
        "Content-Usage: / train-ai=n\n"
        "Content-Usage: /a/ train-ai=y\n"
    )
    assert decide_usage(body, "/a/b/x") == ({"train-ai": True}, [4])
    assert decide_usage(body, "/a/b/c/x") == ({"train-ai": False}, [2])
    assert decide_usage(body, "/b") == ({"train-ai": False}, [3])


def test_wildcards_and_end_anchors() -> None:
    body = (
        "User-agent: *\n"
        "Content-Usage: / train-ai=y\n"
        "Content-Usage: /*.pdf$ train-ai=n\n"
        "Content-Usage: /shop/*/reviews search=n\n"
    )
    assert decide_usage(body, "/files/report.pdf") == ({"train-ai": False}, [3])
    assert decide_usage(body, "/files/report.pdf?download=1") == ({"train-ai": True}, [2])
    assert decide_usage(body, "/shop/item-7/reviews/2") == ({"search": False}, [4])
    assert decide_usage(body, "/shop/reviews") == ({"train-ai": True}, [2])


def test_percent_encoding_is_normalised_like_allow_and_disallow() -> None:
    body = "User-agent: *\nContent-Usage: /caf%c3%a9/ train-ai=n\nContent-Usage: /%7Ejo/ search=n\n"
    assert decide_usage(body, "https://example.com/café/menu") == ({"train-ai": False}, [2])
    assert decide_usage(body, "/caf%C3%A9/menu") == ({"train-ai": False}, [2])
    assert decide_usage(body, "/~jo/x") == ({"search": False}, [3])


def test_a_rule_value_without_a_leading_slash_has_no_path() -> None:
    # The whole value is the statement; it covers every path, below any rule with one.
    body = "User-agent: *\nContent-Usage: train-ai=n\nContent-Usage: / train-ai=y\n"
    assert decide_usage(body, "/a") == ({"train-ai": True}, [3])
    body = "User-agent: *\nContent-Usage: train-ai=n\nContent-Usage: /x/ search=y\n"
    assert decide_usage(body, "/a") == ({"train-ai": False}, [2])
    assert decide_usage(body, "/x/1") == ({"search": True}, [3])
    # "*.pdf train-ai=n" is then a statement, and not a Dictionary: unknown.
    body = "User-agent: *\nContent-Usage: *.pdf train-ai=n\n"
    assert decide_usage(body, "/a.pdf") == ({}, [2])


def test_a_path_without_a_statement_says_nothing() -> None:
    assert decide_usage("User-agent: *\nContent-Usage: /x\n", "/x") == ({}, [2])


def test_the_key_like_other_keys() -> None:
    body = (
        "User-agent: *\n"
        "content-usage: /a train-ai=n\n"
        "  CONTENT-USAGE\t :  /b\ttrain-ai=n   \n"
        "Content-Usage train-ai=y\n"  # "key value" for exactly two words, as Google reads keys
        "Content-Usage: /c train-ai=n # why: a comment\n"
        "Content-Usages: /d train-ai=n\n"  # not the key
    )
    assert decide_usage(body, "/a") == ({"train-ai": False}, [2])
    assert decide_usage(body, "/b") == ({"train-ai": False}, [3])
    assert decide_usage(body, "/c") == ({"train-ai": False}, [5])
    assert decide_usage(body, "/d") == ({"train-ai": True}, [4])


def test_a_content_usage_rule_ends_the_user_agent_lines_as_allow_does() -> None:
    # The draft makes it a rule of the group (RFC 9309's ABNF, "rule =/ content-usage"),
    # so the next User-agent line starts a new group: BadBot's Disallow is its own.
    body = "User-agent: *\nContent-Usage: train-ai=n\n\nUser-agent: BadBot\nDisallow: /\n"
    rules = RobotsTxt.parse(body)
    assert rules.allowed("/x", "MyBot") is True
    assert rules.allowed("/x", "BadBot") is False
    assert decide_usage(body, "/y", "MyBot") == ({"train-ai": False}, [2])
    assert decide_usage(body, "/y", "BadBot") == ({}, [])


def test_a_content_signal_line_does_not_end_them() -> None:
    # Not a rule of any specification: like Crawl-delay, it never ends a group.
    body = "User-agent: a\nContent-Signal: ai-train=no\nUser-agent: b\nDisallow: /x\n"
    rules = RobotsTxt.parse(body)
    for agent in ("a", "b"):
        assert rules.allowed("/x", agent) is False
        assert dict(rules.decide("/y", agent).signals) == {"ai-train": False}


def test_lines_before_any_group_apply_to_no_one() -> None:
    body = "Content-Usage: train-ai=n\nContent-Signal: ai-train=no\nUser-agent: *\nAllow: /\n"
    d = RobotsTxt.parse(body).decide("/a", "Bot")
    assert d.usage == {} and d.signals == {} and str(d) == d.reason


def test_groups_naming_the_same_agent_merge_their_usage_lines() -> None:
    body = (
        "User-agent: bot\nContent-Usage: /a train-ai=n\n\n"
        "User-agent: other\nDisallow: /\n\n"
        "User-agent: bot\nContent-Usage: /a search=y\nContent-Usage: /b train-ai=y\n"
    )
    assert decide_usage(body, "/a", "Bot/1") == ({"train-ai": False, "search": True}, [2, 8])
    assert decide_usage(body, "/b", "Bot/1") == ({"train-ai": True}, [9])


def test_the_agents_own_group_only() -> None:
    body = "User-agent: *\nContent-Usage: train-ai=n\n\nUser-agent: bot\nDisallow: /private\n"
    assert decide_usage(body, "/a", "bot") == ({}, [])
    assert decide_usage(body, "/a", "other") == ({"train-ai": False}, [2])


def test_robots_txt_itself_carries_no_usage() -> None:
    d = RobotsTxt.parse("User-agent: *\nContent-Usage: train-ai=n\n").decide("/robots.txt", "B")
    assert d.allowed is True and d.usage == {}


def test_allowed_is_not_affected() -> None:
    plain = RobotsTxt.parse("User-agent: *\nDisallow: /private\n")
    with_usage = RobotsTxt.parse(
        "User-agent: *\nContent-Usage: /private train-ai=y\nDisallow: /private\n"
        "Content-Signal: search=yes\n"
    )
    for path in ("/private/x", "/public", "/"):
        assert plain.allowed(path, "B") == with_usage.allowed(path, "B")
        assert plain.decide(path, "B").allowed == with_usage.decide(path, "B").allowed


def test_the_classic_dialect_reads_no_usage() -> None:
    rules = RobotsTxt.parse(DRAFT, dialect="classic")
    d = rules.decide("/test", "OtherBot")
    assert d.allowed is True and d.usage == {}


# -- Content-Signal ------------------------------------------------------------------

CLOUDFLARE = """\
# As a condition of accessing this website, you agree to abide by the content signals.
User-Agent: *
Content-Signal: search=yes, ai-train=no
Allow: /
Disallow: /admin/

User-agent: Googlebot
Content-Signal: ai-input=no
Allow: /
"""


def test_content_signal_lines_apply_to_their_group() -> None:
    rules = RobotsTxt.parse(CLOUDFLARE)
    d = rules.decide("https://example.com/article", "MyBot/1.0")
    assert dict(d.signals) == {"search": True, "ai-train": False}
    assert d.usage == {}
    assert d.signal_rules == (UsageRule("", "search=yes, ai-train=no", 3, "Content-Signal"),)
    assert str(d).endswith(
        "; signals search=yes, ai-train=no by 'Content-Signal: search=yes, ai-train=no' (line 3)"
    )
    assert dict(rules.decide("/article", "Googlebot").signals) == {"ai-input": False}
    assert rules.decide("/admin/x", "MyBot").signals == {}


def test_content_signal_beside_content_usage() -> None:
    body = (
        "User-agent: *\n"
        "Content-Signal: search=yes, ai-train=no\n"
        "Content-Usage: train-ai=n, search=y\n"
        "Content-Signal: /blog/ ai-train=yes\n"
    )
    d = RobotsTxt.parse(body).decide("/blog/post", "Bot")
    assert dict(d.usage) == {"train-ai": False, "search": True}
    assert dict(d.signals) == {"ai-train": True}
    assert [r.line for r in d.usage_rules] == [3]
    assert [r.line for r in d.signal_rules] == [4]
    assert str(d) == (
        "allowed: no rule matches in the group for '*' (no group names this agent); "
        "usage train-ai=n, search=y by 'Content-Usage: train-ai=n, search=y' (line 3); "
        "signals ai-train=yes by 'Content-Signal: /blog/ ai-train=yes' (line 4)"
    )


def test_several_content_signal_lines_for_the_same_paths_combine() -> None:
    body = "User-agent: *\nContent-Signal: search=yes, ai-train=yes\nContent-Signal: ai-train=no\n"
    d = RobotsTxt.parse(body).decide("/x", "Bot")
    assert dict(d.signals) == {"search": True, "ai-train": False}
    assert [r.line for r in d.signal_rules] == [2, 3]


def test_a_usage_line_cut_at_the_line_limit_states_nothing_it_did_not_say() -> None:
    # Cut at Google's 16,663 octets, "train-ai=yes" (unknown) would read "train-ai=y".
    pad = "a" * (MAX_LINE_LENGTH - len("Content-Usage: /x other=\"\", train-ai=y"))
    # ... and "ai-train=yesterday" (ignored) would read "ai-train=yes".
    signal_pad = "a" * (MAX_LINE_LENGTH - len("Content-Signal: search=yes, x=, ai-train=yes"))
    body = (f"User-agent: *\nContent-Usage: / search=y\n"
            f"Content-Usage: /x other=\"{pad}\", train-ai=yes\n"
            f"Content-Signal: search=yes, x={signal_pad}, ai-train=yesterday\n")
    rules = RobotsTxt.parse(body)
    d = rules.decide("/x", "MyBot")
    # The cut rule still matches (its path is whole) and says nothing; the signal
    # keeps the pair before the cut one.
    assert (dict(d.usage), [r.line for r in d.usage_rules]) == ({}, [3])
    assert dict(d.signals) == {"search": True}
    assert dict(rules.decide("/y", "MyBot").usage) == {"search": True}
