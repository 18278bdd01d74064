"""A group asked about only a few times is answered from its packed rules (issue 89).

A file's first ``allowed()`` questions read the packed rules, so that an origin
asked a few times holds no compiled matcher; the answers must be exactly those
of the compiled :class:`~robotgate.robots.patterns.RuleSet`, which takes over
once the file is asked often, or when a long path meets wildcard rules (its
work bound may then answer conservatively, and only it can say how).
"""

from __future__ import annotations

import gc
import tracemalloc

import pytest
from hypothesis import given
from hypothesis import strategies as st

from robotgate import RobotsTxt
from robotgate.robots import rfc9309
from robotgate.robots.patterns import RuleSet, allows_uncompiled
from tests.robots.corpus_answers import AGENTS, CORPUS, _paths
from tests.robots.test_properties import (
    BODIES,
    FEW,
    MANY_RULES,
    PATHS,
    QUERY_AGENTS,
    QUERY_PATHS,
    RULES,
    SETTINGS,
)


def compiled_answer(rules: list[tuple[bool, str, int]], path: str) -> bool:
    compiled = RuleSet(rules)
    return compiled.allows[compiled.match(path)]


@pytest.mark.slow
@SETTINGS
@given(RULES, st.lists(PATHS, min_size=1, max_size=8))
def test_a_scan_of_the_rules_answers_as_the_compiled_rules(
    rules: list[tuple[bool, str, int]], paths: list[str]
) -> None:
    for path in paths:
        assert allows_uncompiled(rules, path) is compiled_answer(rules, path), (rules, path)


@pytest.mark.slow
@FEW
@given(MANY_RULES, st.lists(PATHS, min_size=1, max_size=8))
def test_a_scan_of_many_rules_answers_as_the_compiled_rules(
    rules: list[tuple[bool, str, int]], paths: list[str]
) -> None:
    for path in paths:
        assert allows_uncompiled(rules, path) is compiled_answer(rules, path), (rules, path)


def compiled_file(body: str, agent: str) -> RobotsTxt:
    """``body`` parsed, the group of ``agent`` compiled (decide() compiles it)."""
    rules = RobotsTxt.parse(body)
    rules.decide("/", agent)
    return rules


@pytest.mark.slow
@SETTINGS
@given(BODIES.map("\n".join), st.lists(st.sampled_from(QUERY_PATHS), max_size=12),
       st.sampled_from(QUERY_AGENTS))
def test_a_file_answers_alike_before_and_after_compiling(
    body: str, paths: list[str], agent: str
) -> None:
    packed, compiled = RobotsTxt.parse(body), compiled_file(body, agent)
    for path in paths:
        assert packed.allowed(path, agent) is compiled.allowed(path, agent), (body, path)
    # Compiled from the packed rules as the questions sorted them out: the same rules.
    for path in paths:
        assert packed.decide(path, agent) == compiled.decide(path, agent), (body, path)


def test_index_pages_percent_signs_and_wildcards_read_from_the_packed_rules() -> None:
    body = ("User-agent: *\nDisallow: /shop\nAllow: /shop/index.html\nDisallow: /*.pdf$\n"
            "Disallow: /%7Ejo\nAllow: /caf\u00e9\nDisallow: /a$b\n"
            "User-agent: *\nDisallow: /more\nAllow: /more/x*\n")
    paths = ["/shop/", "/shop/a", "/shop/index.html", "/x.pdf", "/x.pdf?a", "/~jo/",
             "/caf%C3%A9", "/a$b", "/a%24b", "/ab", "/more/", "/more/xy", "/"]
    packed, compiled = RobotsTxt.parse(body), compiled_file(body, "bot")
    answers = [packed.allowed(p, "bot") for p in paths]
    assert answers == [compiled.allowed(p, "bot") for p in paths]
    assert answers == [True, False, True, False, True, False, True, False, False, True,
                       False, True, True]
    assert [packed.decide(p, "bot") for p in paths] == [compiled.decide(p, "bot") for p in paths]


def test_each_kind_of_rule_decides_from_the_packed_rules_as_compiled() -> None:
    # A prefix's stars count towards its rank (an Allow of "/a/b*" beats a Disallow
    # of "/a/bc" for "/a/bcd"), one star or two; a rule of
    # stars and pieces anywhere in the path ("*/x/*"); the rules of two groups for
    # one agent, each with its wildcards; a "$" that is not final is a literal.
    body = ("User-agent: *\nDisallow: /a/bc\nAllow: /a/b*\nDisallow: /c/de\nAllow: /c/d**\n"
            "Disallow: */terms/*\nAllow: /x*/terms/ok\nDisallow: /p$q*\n\n"
            "User-agent: other\nDisallow: /\n\n"
            "User-agent: *\nDisallow: /e*f$\nAllow: /e/*/f$\nDisallow: /\nAllow: /$\n")
    paths = ["/a/bcd", "/a/bc", "/c/def", "/c/dx", "/terms/", "/y/terms/x", "/x/terms/ok",
             "/p$qr", "/p%24qr", "/pq", "/ef", "/e/g/f", "/e/g/fh", "/", "/z"]
    packed, compiled = RobotsTxt.parse(body), compiled_file(body, "bot")
    answers = [packed.allowed(p, "bot") for p in paths]
    assert packed._agent_rules is None  # type: ignore[attr-defined]  # not compiled
    assert answers == [compiled.allowed(p, "bot") for p in paths]
    assert answers == [True, True, True, True, False, False, True, False, False, False,
                       False, True, False, True, False]
    assert [packed.decide(p, "bot") for p in paths] == [compiled.decide(p, "bot") for p in paths]


def test_a_long_path_against_many_wildcard_rules_is_left_to_the_compiled_rules() -> None:
    wild = [(False, "/*a*b*c*d*e*f*g*h$", n) for n in range(1, 200)]
    long_path = "/" + "abcdefg" * 200
    assert allows_uncompiled(wild, long_path) is None
    assert allows_uncompiled(wild, "/abcdefgh") is False
    body = "User-agent: *\n" + "Disallow: /*a*b*c*d*e*f*g*h$\n" * 3 + "Allow: /\n"
    assert RobotsTxt.parse(body).allowed(long_path, "bot") is compiled_file(
        body, "bot").allowed(long_path, "bot")


def test_a_file_asked_often_is_compiled() -> None:
    rules = RobotsTxt.parse("User-agent: *\nDisallow: /private\n")
    before = [rules.allowed(f"/private/{n}", "bot") for n in range(rfc9309._UNCOMPILED_QUESTIONS)]
    assert rules._agent_rules is None  # type: ignore[attr-defined]
    assert rules.allowed("/public", "bot") and before == [False] * len(before)
    # The hot path from now on is the compiled matcher's.
    assert isinstance(rules._agent_rules, RuleSet)  # type: ignore[attr-defined]


corpus_only = pytest.mark.skipif(not CORPUS.is_dir(),
                                 reason=f"the shared robots.txt corpus is not at {CORPUS}")


@pytest.mark.soak  # CI runs it every time; the README's run leaves it out
@pytest.mark.slow
@corpus_only
def test_every_corpus_file_answers_alike_before_and_after_compiling() -> None:
    differ = []
    for p in sorted(CORPUS.iterdir()):
        raw = p.read_bytes()
        paths = _paths(raw)
        assert len(paths) <= rfc9309._UNCOMPILED_QUESTIONS
        for agent in AGENTS:
            packed, compiled = RobotsTxt.parse(raw), RobotsTxt.parse(raw)
            compiled.decide("/", agent)
            urls = [f"https://{p.name}{path}" if k % 2 else path for k, path in enumerate(paths)]
            for url in urls:
                if packed.allowed(url, agent) is not compiled.allowed(url, agent):
                    differ.append((p.name, agent, url))
            # Then compiled from the packed rules as those questions left them.
            for url in urls:
                if packed.decide(url, agent) != compiled.decide(url, agent):
                    differ.append((p.name, agent, f"decide {url}"))
    assert differ == []


#: The most bytes a parsed corpus file may hold once asked 10 questions, on average:
#: what it holds as parsed (test_corpus_memory.BYTES_A_FILE).
ASKED_BYTES_A_FILE = 3_500


@pytest.mark.soak  # CI runs it every time; the README's run leaves it out
@pytest.mark.slow
@corpus_only
def test_a_corpus_file_asked_ten_questions_holds_at_most_3500_bytes() -> None:
    bodies = [p.read_bytes() for p in sorted(CORPUS.iterdir()) if p.is_file()]
    questions = [_paths(body)[:10] for body in bodies]
    RobotsTxt.parse(b"User-agent: *\nDisallow: /x\n").allowed("/x", "bot")  # caches, once
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        held = [RobotsTxt.parse(body) for body in bodies]
        for n, (rules, paths) in enumerate(zip(held, questions, strict=True)):
            for path in paths:
                rules.allowed(f"https://site{n}.example{path}", "MyBot/1.0")
        gc.collect()
        used = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert used / len(held) <= ASKED_BYTES_A_FILE, f"{used / len(held):,.0f} bytes a file"
