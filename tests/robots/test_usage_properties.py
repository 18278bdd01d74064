"""Property tests (hypothesis) for AI usage preferences in robots.txt.

* usage never changes a crawl verdict: ``allowed()`` and ``decide()`` (verdict
  and rule) are the same with and without ``Content-Usage`` lines added where
  a rule may stand, and ``Content-Signal`` lines added anywhere;
* ``decide().usage`` is empty whenever the URL may not be crawled, and its
  rules are the file's own ``Content-Usage`` lines;
* :class:`UsageRules` agrees with a naive reference: every pattern tried as
  a regular expression, the longest that match combined;
* the statement parsers never raise.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from robotgate import RobotsTxt
from robotgate.robots.usage import (
    UsageRules,
    combine_usage,
    parse_content_signal,
    parse_usage,
    split_rule_value,
)

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

AGENTS = ["*", "foo", "bar"]
ASKERS = ["Foo/1.0", "bar", "Other"]
pattern = st.text(alphabet="/ab*$", min_size=1, max_size=6).map(lambda s: "/" + s.lstrip("/"))
path = st.text(alphabet="/ab.", max_size=8).map(lambda s: "/" + s)
# Without dot segments, which matching removes first (as for Allow/Disallow).
plain_path = st.text(alphabet="/ab", max_size=8).map(lambda s: "/" + s)
statement = st.sampled_from(
    [
        "train-ai=n",
        "train-ai=y",
        "search=y, train-ai=n",
        "ai-use=n;p=1",
        'train-ai="n"',
        "Train-AI=n",
        "train-ai=y, train-ai=n",
        "",
    ]
)
usage_value = st.tuples(st.one_of(st.just(""), pattern), statement).map(
    lambda ps: f"{ps[0]} {ps[1]}".strip()
)
signal_value = st.sampled_from(["search=yes, ai-train=no", "ai-input=no", "ai-train=yes", "x"])
crawl_line = st.one_of(
    st.sampled_from(AGENTS).map(lambda a: f"User-agent: {a}"),
    pattern.map(lambda p: f"Allow: {p}"),
    pattern.map(lambda p: f"Disallow: {p}"),
    st.just(""),
    st.just("Crawl-delay: 1"),
)


NUMBER = re.compile(r"\(line \d+\)").sub


def is_rule(line: str) -> bool:
    return line.startswith(("Allow:", "Disallow:"))


@pytest.mark.slow
@SETTINGS
@given(
    lines=st.lists(crawl_line, max_size=14),
    usage=st.lists(st.tuples(st.integers(0, 20), usage_value), max_size=5),
    signals=st.lists(st.tuples(st.integers(0, 20), signal_value), max_size=3),
    paths=st.lists(path, min_size=1, max_size=5),
)
def test_usage_never_changes_a_crawl_verdict(
    lines: list[str],
    usage: list[tuple[int, str]],
    signals: list[tuple[int, str]],
    paths: list[str],
) -> None:
    # Content-Usage is a rule, so it goes where a rule stands already (after an
    # Allow or Disallow line), at the end, or before any group; Content-Signal
    # lines go anywhere.
    spots = [0, len(lines)] + [i + 1 for i, line in enumerate(lines) if is_rule(line)]
    more = list(lines)
    inserts = [(spots[k % len(spots)], f"Content-Usage: {v}") for k, v in usage]
    inserts += [(k % (len(lines) + 1), f"Content-Signal: {v}") for k, v in signals]
    for at, line in sorted(inserts, key=lambda x: -x[0]):
        more.insert(at, line)
    plain = RobotsTxt.parse("\n".join(lines))
    with_usage = RobotsTxt.parse("\n".join(more))
    for p in paths:
        for agent in ASKERS:
            before = plain.decide(p, agent)
            after = with_usage.decide(p, agent)
            assert plain.allowed(p, agent) == with_usage.allowed(p, agent) == after.allowed
            assert (before.allowed, before.group) == (after.allowed, after.group)
            # The same rule decides (its line number moves with the lines added).
            assert (before.rule is None) == (after.rule is None)
            if before.rule is not None and after.rule is not None:
                assert before.rule.pattern == after.rule.pattern
                assert lines[before.rule.line - 1] == more[after.rule.line - 1]
            assert NUMBER("", after.reason) == NUMBER("", before.reason)


@pytest.mark.slow
@SETTINGS
@given(
    lines=st.lists(
        st.one_of(
            crawl_line,
            usage_value.map(lambda v: f"Content-Usage: {v}"),
            signal_value.map(lambda v: f"Content-Signal: {v}"),
        ),
        max_size=16,
    ),
    paths=st.lists(path, min_size=1, max_size=5),
)
def test_usage_only_for_what_may_be_crawled(lines: list[str], paths: list[str]) -> None:
    rules = RobotsTxt.parse("\n".join(lines))
    for p in paths:
        for agent in ASKERS:
            d = rules.decide(p, agent)
            assert d.allowed == rules.allowed(p, agent)
            if not d.allowed:
                assert d.usage == {} and d.usage_rules == ()
                assert d.signals == {} and d.signal_rules == ()
                assert str(d) == d.reason
            for r in d.usage_rules:
                assert lines[r.line - 1].startswith("Content-Usage:")
            for r in d.signal_rules:
                assert lines[r.line - 1].startswith("Content-Signal:")
            assert set(d.usage) <= {"train-ai", "search"}


def reference(values: list[tuple[str, int]], p: str) -> tuple[dict[str, bool], set[int]]:
    """Every rule tried on its own; the longest matching patterns win, together."""
    best = -1
    found: list[tuple[str, int]] = []
    for value, line in values:
        pat, said = split_rule_value(value)
        if not pat:
            continue
        anchored = pat.endswith("$")
        body = pat[:-1] if anchored else pat
        rx = ".*".join(map(re.escape, body.split("*"))) + (r"\Z" if anchored else "")
        if re.match(rx, p, re.DOTALL):
            if len(pat) > best:
                best, found = len(pat), []
            if len(pat) == best:
                found.append((said, line))
    if not found:
        found = [(split_rule_value(v)[1], n) for v, n in values if not split_rule_value(v)[0]]
    return combine_usage(*(parse_usage(s) for s, _ in found)), {n for _, n in found}


@pytest.mark.slow
@SETTINGS
@given(values=st.lists(usage_value, max_size=8), paths=st.lists(plain_path, min_size=1, max_size=6))
def test_usage_rules_agree_with_a_naive_reference(values: list[str], paths: list[str]) -> None:
    # No "$" inside a pattern: it would be a literal, which these paths never hold.
    numbered = [(v, n) for n, v in enumerate(values, 1) if "$" not in v.split(" ")[0][:-1]]
    rules = UsageRules(numbered)
    for p in paths:
        usage, found = rules.match(p)
        assert (dict(usage), {r.line for r in found}) == reference(numbered, p)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from([*'az-*=,;() "?:@%019\t.yn', "é", "\\"])))
def test_statements_never_raise(text: str) -> None:
    usage = parse_usage(text)
    assert set(usage) <= {"train-ai", "search"}
    assert all(isinstance(v, bool) for v in parse_content_signal(text).values())
