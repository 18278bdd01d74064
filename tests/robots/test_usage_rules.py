"""``Content-Usage`` rules of one group, compiled (:class:`UsageRules`): which rules
give a path its preferences.  Paths match as Allow/Disallow paths do (RFC 9309
2.2.2, draft-ietf-aipref-attach)."""

from __future__ import annotations

import pytest

from robotgate import RobotsTxt
from robotgate.robots.usage import TIE_LIMIT, UsageRules, parse_content_signal


def usage_of(rules: UsageRules, path: str) -> tuple[dict[str, bool], list[int]]:
    usage, found = rules.match(path)
    return dict(usage), [r.line for r in found]


def test_the_longest_match_wins() -> None:
    rules = UsageRules(
        [("/ train-ai=n", 1), ("/ai-ok/ train-ai=y", 2), ("/ai-ok/not/ train-ai=n, search=y", 3)]
    )
    assert usage_of(rules, "/x") == ({"train-ai": False}, [1])
    assert usage_of(rules, "/ai-ok/x") == ({"train-ai": True}, [2])
    assert usage_of(rules, "/ai-ok/not/x") == ({"train-ai": False, "search": True}, [3])
    assert usage_of(rules, "/ai-ok") == ({"train-ai": False}, [1])


def test_a_rule_without_a_path_applies_below_every_rule_with_one() -> None:
    rules = UsageRules([("train-ai=n", 1), ("/ai-ok/ train-ai=y", 2), ("/ search=y", 3)])
    assert usage_of(rules, "/ai-ok/x") == ({"train-ai": True}, [2])
    assert usage_of(rules, "/x") == ({"search": True}, [3])
    rules = UsageRules([("train-ai=n", 1), ("search=y", 2)])
    assert usage_of(rules, "/anything") == ({"train-ai": False, "search": True}, [1, 2])


def test_no_rule_matches() -> None:
    rules = UsageRules([("/a/ train-ai=n", 1)])
    assert usage_of(rules, "/b") == ({}, [])
    assert not UsageRules([])
    assert rules


def test_identical_paths_combine_most_restrictively() -> None:
    rules = UsageRules([("/a train-ai=y, search=y", 1), ("/a train-ai=n", 2), ("/a search=y", 3)])
    assert usage_of(rules, "/a/b") == (
        {"train-ai": False, "search": True},
        [1, 2, 3],
    )


def test_identical_after_percent_encoding_normalisation() -> None:
    rules = UsageRules([("/caf%C3%A9 train-ai=y", 1), ("/café train-ai=n", 2)])
    usage, found = rules.match("/caf%C3%A9/menu")
    assert dict(usage) == {"train-ai": False}
    assert [r.pattern for r in found] == ["/caf%C3%A9", "/caf%C3%A9"]
    rules = UsageRules([("/%7Euser train-ai=n", 1)])
    assert usage_of(rules, "/~user/x") == ({"train-ai": False}, [1])


def test_wildcards_and_end_anchors() -> None:
    rules = UsageRules(
        [("/ train-ai=y", 1), ("/*.pdf$ train-ai=n", 2), ("/docs/*/draft train-ai=n", 3)]
    )
    assert usage_of(rules, "/paper.pdf") == ({"train-ai": False}, [2])
    assert usage_of(rules, "/paper.pdf?x=1") == ({"train-ai": True}, [1])
    assert usage_of(rules, "/docs/v2/draft-1") == ({"train-ai": False}, [3])
    assert usage_of(rules, "/docs/draft") == ({"train-ai": True}, [1])


def test_different_patterns_of_the_same_length_that_both_match_combine() -> None:
    rules = UsageRules([("/a* train-ai=y", 1), ("/a$ search=n, train-ai=n", 2)])
    assert usage_of(rules, "/a") == ({"train-ai": False, "search": False}, [1, 2])
    assert usage_of(rules, "/ab") == ({"train-ai": True}, [1])


def test_a_starred_winner_ties_with_a_plain_path_and_with_other_starred_ones() -> None:
    rules = UsageRules(
        [("/ab* train-ai=y", 1), ("/abc search=n", 2), ("/*bc train-ai=n", 3), ("/ab$ search=y", 4)]
    )
    assert usage_of(rules, "/abcd") == ({"train-ai": False, "search": False}, [1, 2, 3])
    assert usage_of(rules, "/ab") == ({"train-ai": True, "search": True}, [1, 4])
    assert usage_of(rules, "/x/../abx") == ({"train-ai": True}, [1])
    assert usage_of(rules, "/xbc") == ({"train-ai": False}, [3])


@pytest.mark.slow
def test_thousands_of_paths_of_one_length_compile_and_match_without_pairing_them() -> None:
    # Before, every path was paired with every other of its length: 8,000
    # four-character paths took seconds and gigabytes.
    plain = [(f"/{i:03x} train-ai=n", 10 + i) for i in range(1, 4001)]
    starred = [(f"/*{i:03x} search=n", 5000 + i) for i in range(1, 4001)]
    few = UsageRules([("/0011 train-ai=n", 3), *plain, *starred[:TIE_LIMIT]])
    # "/0011" (plain) ties with "/*001" and "/*011"; "/001" is shorter.
    assert usage_of(few, "/0011") == ({"train-ai": False, "search": False}, [3, 5001, 5017])
    assert usage_of(few, "/0012") == ({"search": False}, [5001, 5018])
    rules = UsageRules([("/0011 train-ai=n", 3), *plain, *starred])
    # Past TIE_LIMIT starred paths of the winner's length, none is tried: every rule counts.
    (usage, found), exact = rules.match_exact("/0011")
    assert not exact and dict(usage) == {"train-ai": False, "search": False}
    assert len(found) == 8001 and not rules._singles


def test_past_the_tie_limit_the_rules_order_does_not_change_the_answer() -> None:
    # 70 starred paths of one length all match; one of them says "n".
    matching = [f"/*{i:02d}x search=y" for i in range(TIE_LIMIT + 6)]
    for at in (0, len(matching)):
        ordered = [*matching[:at], "/*zzx train-ai=n", *matching[at:]]
        rules = UsageRules([(value, n) for n, value in enumerate(ordered, 1)])
        body = "User-agent: *\n" + "".join(f"Content-Usage: {v}\n" for v in ordered)
        d = RobotsTxt.parse(body).decide("/00x/zzx/01x", "MyBot")
        assert dict(d.usage) == {"train-ai": False} and "work bound" in d.reason
        assert usage_of(rules, "/00x/zzx/01x")[0] == {"train-ai": False}


def test_a_statement_that_fails_to_parse_still_names_its_rule() -> None:
    rules = UsageRules([("/ train-ai=n", 1), ("/x Train-AI=y", 2), ("/y", 3)])
    assert usage_of(rules, "/x") == ({}, [2])
    assert usage_of(rules, "/y") == ({}, [3])


def test_content_signal_rules() -> None:
    rules = UsageRules(
        [("search=yes, ai-train=no", 4), ("/blog/ ai-train=yes", 5)],
        "Content-Signal",
        parse_content_signal,
    )
    usage, found = rules.match("/blog/post")
    assert dict(usage) == {"ai-train": True}
    assert str(found[0]) == "Content-Signal: /blog/ ai-train=yes (line 5)"
    assert usage_of(rules, "/") == ({"search": True, "ai-train": False}, [4])


def _past_the_bound() -> tuple[str, str]:
    # 90 long starred paths that do not match the path, one that does and says "n",
    # and a "/" that says "y": the path is too long for the search to decide them all.
    lines = ["User-agent: *", "Allow: /", "Content-Usage: / train-ai=y, search=y"]
    lines += ["Content-Usage: /*" + "a" * k + "b" + "a" * (100 - k) + " train-ai=n"
              for k in range(90)]
    lines.append("Content-Usage: /*baaaaaaaaaa train-ai=n")
    return "\n".join(lines) + "\n", "/" + "a" * 60_000 + "b" + "a" * 10


def test_usage_past_the_work_bound_is_cautious_and_says_so() -> None:
    body, path = _past_the_bound()
    d = RobotsTxt.parse(body).decide(path, "MyBot")
    # "n" from any rule wins; "search" is said by one rule of many: not known to be allowed.
    assert dict(d.usage) == {"train-ai": False}
    assert len(d.usage_rules) == 92 and "work bound" in d.reason
    short = RobotsTxt.parse(body).decide("/xbaaaaaaaaaa", "MyBot")  # exact: one rule decides
    assert [r.line for r in short.usage_rules] == [94] and "work bound" not in short.reason
