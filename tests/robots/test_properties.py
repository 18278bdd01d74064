"""Property tests (hypothesis).

* any bytes or text parse without error;
* ``allowed()`` and ``decide()`` never raise, on any URL and any agent, and agree;
* results do not change when comments or blank lines are added, nor when
  the line ends change;
* the compiled matcher (:class:`robotgate.robots.patterns.RuleSet`: sorted literal
  prefixes with a parent chain, wildcard pieces) agrees with a naive
  reference -- a dynamic programme over path positions, one pattern at a
  time, like Google's ``Matches`` -- on longest match and allow-wins-ties.
"""

from __future__ import annotations

import string
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

import pytest
import yarl
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from robotgate import InvalidURL, RobotsTxt
from robotgate.robots import bounded_search, patterns
from robotgate.robots.patterns import RuleSet
from robotgate.urls import normalise_path, path_of, redact, split_origin

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MANY = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FEW = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# -- the reference -----------------------------------------------------------------


def ref_matches(pattern: str, path: str) -> bool:
    """Does the robots.txt ``pattern`` match ``path``?  Naive, quadratic, obviously right.

    ``reach[j]`` says whether the pattern read so far can consume exactly
    ``path[:j]``.  ``*`` extends every reachable position to all later ones;
    a final ``$`` demands that the whole path was consumed; any other
    character (a ``$`` elsewhere included) must equal the next path character.
    A pattern matches a prefix of the path unless it ends with ``$``.
    """
    anchored = pattern.endswith("$")
    if anchored:
        pattern = pattern[:-1]
    n = len(path)
    reach = [True] + [False] * n
    for c in pattern:
        if c == "*":
            seen = False
            for j in range(n + 1):
                seen = seen or reach[j]
                reach[j] = seen
        else:
            reach = [False] + [reach[j] and path[j] == c for j in range(n)]
    return reach[n] if anchored else any(reach)


def ref_winner(rules: list[tuple[bool, str, int]], path: str) -> tuple[int, bool] | None:
    """(priority, allow) of the deciding rule: the longest matching pattern, allow on a tie."""
    best: tuple[int, bool] | None = None
    for allow, pattern, _line in rules:
        if pattern and ref_matches(pattern, path):
            key = (len(pattern), allow)
            if best is None or key > best:
                best = key
    return best


def test_reference_itself() -> None:
    assert ref_matches("/a", "/abc")
    assert ref_matches("/a*c", "/abc")
    assert ref_matches("/a*c$", "/abc")
    assert not ref_matches("/a*b$", "/abc")
    assert ref_matches("*", "/")
    assert ref_matches("/a$b", "/a$b")
    assert not ref_matches("$", "/")
    assert not ref_matches("/abc", "/ab")
    assert ref_winner([(False, "/a", 1), (True, "/a", 2)], "/a") == (2, True)
    assert ref_winner([(False, "/ab", 1), (True, "/a*", 2)], "/ab") == (3, True)


# -- the compiled matcher against the reference ---------------------------------------

ALPHABET = "ab/*$%"
# Mostly patterns that can match (they start with "/" or "*"), over few letters
# so that rules collide: equal lengths, shared prefixes, allow against disallow.
PATTERNS = st.one_of(
    st.builds(
        str.__add__,
        st.sampled_from(["/", "/", "/a", "/a", "*", "/*", ""]),
        st.text(alphabet=ALPHABET, max_size=6),
    ),
    # "/x*y$": the last piece must fit after the first, not overlap it.
    st.builds(
        "/{}*{}$".format, st.text(alphabet="ab", max_size=3), st.text(alphabet="ab/", max_size=3)
    ),
)
PATHS = st.builds(
    str.__add__,
    st.just("/"),
    st.one_of(st.text(alphabet="ab/", max_size=10), st.text(alphabet="ab/*$%?", max_size=10)),
)
RULES = st.lists(st.tuples(st.booleans(), PATTERNS), max_size=10).map(
    lambda rs: [(allow, p, i + 1) for i, (allow, p) in enumerate(rs)]
)
# Literal-only rules over a tiny alphabet: deep chains of prefixes, many ties.
LITERAL_RULES = st.lists(
    st.tuples(
        st.booleans(), st.text(alphabet="ab/", min_size=1, max_size=6).map(lambda s: "/" + s)
    ),
    max_size=30,
).map(lambda rs: [(allow, p, i + 1) for i, (allow, p) in enumerate(rs)])


def check_ruleset(rules: list[tuple[bool, str, int]], paths: list[str]) -> None:
    compiled = RuleSet(rules)
    for path in paths:
        expected = ref_winner(rules, path)
        i = compiled.match(path)
        if expected is None:
            assert i == -1, (rules, path)
            continue
        assert i >= 0, (rules, path)
        rule = compiled.rule(i)
        assert (len(rule.pattern), rule.allow) == expected, (rules, path, rule)
        assert ref_matches(rule.pattern, path), (rules, path, rule)
        assert (rule.allow, rule.pattern, rule.line) in rules


@pytest.mark.slow
@MANY
@given(RULES, st.lists(PATHS, min_size=1, max_size=8))
@example([(False, "/a*b", 1), (True, "/a*", 2)], ["/ab", "/axb", "/a"])
@example([(False, "/ab$", 1), (True, "/ab", 2), (False, "/a", 3)], ["/ab", "/abc"])
@example([(True, "/a", 1), (False, "/a*", 2), (True, "/a**", 3)], ["/a", "/ab"])
@example([(False, "*$", 1), (True, "/", 2)], ["/", "/a$"])
@example([(False, "/ab", 1), (True, "/a*", 2)], ["/ab", "/abc"])
@example([(False, "/a*", 1), (True, "/*b", 2)], ["/ab", "/a", "/b"])
@example([(False, "/a*a$", 1), (False, "/ab*ab$", 2)], ["/a", "/aa", "/ab", "/abab", "/aba"])
def test_ruleset_agrees_with_the_reference(
    rules: list[tuple[bool, str, int]], paths: list[str]
) -> None:
    check_ruleset(rules, paths)


# Enough wildcard rules that the matcher indexes them (see patterns._INDEX_MIN).
MANY_RULES = st.lists(st.tuples(st.booleans(), PATTERNS), min_size=20, max_size=70).map(
    lambda rs: [(allow, p, i + 1) for i, (allow, p) in enumerate(rs)]
)


@pytest.mark.slow
@SETTINGS
@given(MANY_RULES, st.lists(PATHS, min_size=1, max_size=12))
def test_many_rules_agree_with_the_reference(
    rules: list[tuple[bool, str, int]], paths: list[str]
) -> None:
    check_ruleset(rules, paths)


@contextmanager
def bounded(budget: int) -> Iterator[None]:
    """Rule sets built inside take the bounded search for every query, with ``budget``."""
    saved = patterns._FAST_WORK, patterns.MATCH_BUDGET, bounded_search.MATCH_BUDGET
    patterns._FAST_WORK, patterns.MATCH_BUDGET, bounded_search.MATCH_BUDGET = -1, budget, budget
    try:
        yield
    finally:
        patterns._FAST_WORK, patterns.MATCH_BUDGET, bounded_search.MATCH_BUDGET = saved


def check_bounded(rules: list[tuple[bool, str, int]], paths: list[str], budget: int) -> None:
    with bounded(budget):
        compiled = RuleSet(rules)
        for path in paths:
            i, exact = compiled.match_exact(path)
            assert compiled.match(path) == i
            expected = ref_winner(rules, path)
            verdict = compiled.allows[i]
            if exact:
                if expected is None:
                    assert i == -1, (rules, path)
                else:
                    rule = compiled.rule(i)
                    assert (len(rule.pattern), rule.allow) == expected, (rules, path, rule)
            else:
                # Conservative: never allowed where the exact answer disallows.
                assert not verdict or expected is None or expected[1], (rules, path, i)
                assert compiled.bound_hits > 0


@pytest.mark.slow
@MANY
@given(RULES, st.lists(PATHS, min_size=1, max_size=8))
@example([(False, "/a*b", 1), (True, "/a**b", 2), (False, "/a***b", 3)], ["/ab", "/axb"])
@example([(True, "/*a*a", 1), (False, "/*a", 2)], ["/aa", "/a", "/ba/a"])
def test_the_bounded_search_is_exact_within_its_budget(
    rules: list[tuple[bool, str, int]], paths: list[str]
) -> None:
    check_bounded(rules, paths, 10**9)


@pytest.mark.slow
@SETTINGS
@given(MANY_RULES, st.lists(PATHS, min_size=1, max_size=12))
def test_the_bounded_search_with_an_index_is_exact(
    rules: list[tuple[bool, str, int]], paths: list[str]
) -> None:
    check_bounded(rules, paths, 10**9)


@pytest.mark.slow
@MANY
@given(
    st.one_of(RULES, MANY_RULES),
    st.lists(PATHS, min_size=1, max_size=8),
    st.integers(min_value=0, max_value=3000),
)
@example([(True, "/*b", 1), (False, "/*a", 2)], ["/ab"], 0)
@example([(True, "/a*b", 1), (False, "/", 2)], ["/ab"], 0)
def test_a_spent_budget_errs_towards_disallowed(
    rules: list[tuple[bool, str, int]], paths: list[str], budget: int
) -> None:
    check_bounded(rules, paths, budget)


def test_the_bounded_search_hits_its_budget_in_these_tests() -> None:
    # The property above is only worth something if budgets run out.
    with bounded(0):
        rs = RuleSet([(True, "/*a", 1), (False, "/*b", 2)])
        assert rs.match_exact("/ab") == (1, False)
        assert rs.bound_hits == 1
    with bounded(10**9):
        rs = RuleSet([(True, "/*ab", 1), (False, "/*b", 2)])
        assert rs.match_exact("/ab") == (0, True)


def test_many_wildcard_rules_are_indexed() -> None:
    # The test above is only worth something if it reaches the index.
    rules = [(i % 2 == 0, f"/{'ab'[i % 2]}*{i}$", i + 1) for i in range(40)]
    assert RuleSet(rules)._index is not None
    check_ruleset(rules, ["/a12", "/b13", "/ab12", "/a/b/39", "/a", "/b1x"])


def test_a_path_that_is_not_ascii_still_ends() -> None:
    # Callers percent-encode paths first; a raw one must still not loop.
    rs = RuleSet([(False, "/a", 1), (True, "/", 2), (False, "/b*c", 3)])
    assert rs.match("/ツ") in range(-1, len(rs))
    assert rs.match("\U0010ffff") in range(-1, len(rs))


@pytest.mark.slow
@MANY
@given(
    LITERAL_RULES, st.lists(st.text(alphabet="ab/", max_size=8).map(lambda s: "/" + s), max_size=8)
)
@example(
    [(False, "/a", 1), (True, "/ab", 2), (False, "/abb", 3), (True, "/b", 4), (False, "/aba", 5)],
    ["/abab", "/abba", "/ab", "/aa", "/b/a", "/abb/"],
)
def test_literal_prefixes_agree_with_the_reference(
    rules: list[tuple[bool, str, int]], paths: list[str]
) -> None:
    # Also the patterns themselves, one character shorter and one longer.
    around = [r[1] + suffix for r in rules for suffix in ("", "/", "a")] + [
        r[1][:-1] for r in rules
    ]
    check_ruleset(rules, paths + around)


def robots_verdict(rules: list[tuple[bool, str, int]], url: str) -> bool:
    """The reference verdict for a "User-agent: *" group holding ``rules``.

    Patterns and path share one normalisation; a "$" inside a pattern, and a
    "*" or "$" in the path, are literal characters (RFC 9309 2.2.3), compared
    percent-encoded.
    """
    path = normalise_path(path_of(url)).replace("*", "%2A").replace("$", "%24")
    normal = []
    for allow, pattern, line in rules:
        pattern = normalise_path(pattern)
        if "$" in pattern[:-1]:
            pattern = pattern[:-1].replace("$", "%24") + pattern[-1]
        normal.append((allow, pattern, line))
    winner = ref_winner(normal, path)
    return winner is None or winner[1]


@pytest.mark.slow
@SETTINGS
@given(RULES, st.lists(PATHS, min_size=1, max_size=8))
@example([(False, "/a$b", 1)], ["/a$b", "/a%24b", "/a"])
@example([(False, "/%aa", 1), (True, "/%AA*", 2)], ["/%aa", "/%Aab"])
def test_robots_txt_agrees_with_the_reference(
    rules: list[tuple[bool, str, int]], paths: list[str]
) -> None:
    body = "User-agent: *\n" + "".join(
        f"{'Allow' if allow else 'Disallow'}: {pattern}\n" for allow, pattern, _ in rules
    )
    parsed = RobotsTxt.parse(body)
    for path in paths:
        assert parsed.allowed(path, "MyBot") is robots_verdict(
            [(a, p, n + 1) for a, p, n in rules], path
        ), (body, path)


# -- never raises --------------------------------------------------------------------------

AGENTS = ["*", "a", "B", "FooBot", "foobot/1.0", "c d", "360", "", "Googlebot-Image"]
VALUES = st.text(alphabet="ab/*$%?#é ", max_size=6)
LINES = st.one_of(
    st.builds("User-agent: {}".format, st.sampled_from(AGENTS)),
    st.builds("Allow: {}".format, VALUES),
    st.builds("Disallow: {}".format, VALUES),
    st.builds("Crawl-delay: {}".format, st.sampled_from(["1", "2.5", "x", "", "-1"])),
    st.builds("Request-rate: {}".format, st.sampled_from(["1/5s", "10/1m", "bad", "0/1"])),
    st.builds("Sitemap: https://example.com/{}.xml".format, st.sampled_from("abc")),
    st.sampled_from(
        [
            "Host: example.com",
            "Noindex: /a",
            "junk line here",
            "useragent a",
            "disallow /b",
            "user agent: FooBot",
            "  Disalow :  /a*",
        ]
    ),
)
BODIES = st.lists(LINES, max_size=14)
QUERY_AGENTS = ["a", "b", "FooBot/2.0", "foobot", "googlebot-image", "zzz", "", "*"]
QUERY_PATHS = ["/", "/a", "/ab", "/a/b", "/b*", "/a$", "/%61", "/é", "/?a", "/robots.txt"]


# URLs over several origins and spellings: each RobotsTxt remembers the last
# origin prefix and each User-Agent's rules, which must never change a verdict.
CACHE_URLS = st.builds(
    str.__add__,
    st.sampled_from(
        ["", "http://a.com", "https://a.com", "HTTPS://A.com", "https://a.com:8443", "https://b.org"]
    ),
    st.builds(
        str.__add__,
        st.sampled_from(["/", "/a", "?a", "", "/robots.txt"]),
        st.text(alphabet="ab/*$%?#é", max_size=6),
    ),
)


@pytest.mark.slow
@SETTINGS
@given(
    RULES,
    st.lists(
        st.tuples(CACHE_URLS, st.sampled_from([*QUERY_AGENTS, "x1", "x2", "x3"])), max_size=30
    ),
)
# Each special character of a path seen after its origin's prefix is remembered.
@example([(False, "/a$", 1)], [("https://a.com/", "b"), ("https://a.com/a#x", "b")])
@example([(False, "/~", 1)], [("https://a.com/", "b"), ("https://a.com/%7e", "b")])
@example([(False, "/a%2A", 1)], [("https://a.com/", "b"), ("https://a.com/a*", "b")])
@example([(False, "/a%24", 1)], [("https://a.com/", "b"), ("https://a.com/a$", "b")])
@example([(False, "/%C3%A9", 1)], [("https://a.com/", "b"), ("https://a.com/é", "b")])
@example([(False, "/b", 1)], [("https://a.com/", "b"), ("https://a.com?/b", "b")])
# A rule's explanation is kept: a Disallow that covers /robots.txt must still
# let decide() look at each path.
@example([(False, "/", 1)], [("/x", "b"), ("/robots.txt", "b"), ("/robots.txt?a", "b")])
@example([(False, "/robots.txt?", 1)], [("/robots.txt?a", "b"), ("/robots.txt?b", "b")])
def test_query_caches_change_no_verdict(
    rules: list[tuple[bool, str, int]], queries: list[tuple[str, str]]
) -> None:
    body = "User-agent: a\nDisallow: /a\nUser-agent: *\n" + "".join(
        f"{'Allow' if allow else 'Disallow'}: {pattern}\n" for allow, pattern, _ in rules
    )
    reused = RobotsTxt.parse(body)
    for url, agent in queries:
        fresh = RobotsTxt.parse(body)
        assert reused.allowed(url, agent) is fresh.allowed(url, agent), (body, url, agent)
        assert reused.allowed(url, agent) is reused.decide(url, agent).allowed, (body, url, agent)
        assert reused.decide(url, agent) == fresh.decide(url, agent), (body, url, agent)


PIECES = [
    *(p.encode() for p in ("User-agent:", " *", "Disallow:", "Allow:", "/a", "*", "$", "#")),
    *(p.encode() for p in ("\n", "\r", "\r\n", ":", " ", "Crawl-delay:", "Request-rate:")),
    *(p.encode() for p in ("9" * 50, "/", "Sitemap:", "http://x/", "ツ", "%e3", "%")),
    b"\xef\xbb\xbf",
    b"\xff",
    b"\xe3\x83",
]


@pytest.mark.slow
@SETTINGS
@given(st.binary(max_size=3000))
def test_any_bytes_parse(body: bytes) -> None:
    rules = RobotsTxt.parse(body)
    assert isinstance(rules.allowed("/", "MyBot"), bool)
    rules.crawl_delay("MyBot")
    rules.request_rate("MyBot")
    assert all(isinstance(s, str) for s in rules.sitemaps)


@pytest.mark.slow
@SETTINGS
@given(st.lists(st.sampled_from(PIECES), max_size=40).map(b"".join))
def test_robots_like_bytes_parse(body: bytes) -> None:
    rules = RobotsTxt.parse(body)
    for agent in ("a", "MyBot"):
        rules.allowed("/a", agent)
        rules.decide("/a", agent)
        rules.crawl_delay(agent)
        rules.request_rate(agent)


@pytest.mark.slow
@SETTINGS
@given(st.text(max_size=2000))
def test_any_text_parses(body: str) -> None:
    rules = RobotsTxt.parse(body)
    assert isinstance(rules.allowed("/", "MyBot"), bool)


@pytest.mark.slow
@SETTINGS
@given(BODIES.map("\n".join), st.text(max_size=60), st.text(max_size=30))
@example("User-agent: *\nDisallow: /", "http://[::1", "")
@example("User-agent: *\nDisallow: /", "\ud800", "\udfff")
@example("User-agent: *\nDisallow: /", "//", "*")
def test_allowed_and_decide_never_raise_and_agree(body: str, url: str, agent: str) -> None:
    rules = RobotsTxt.parse(body)
    verdict = rules.allowed(url, agent)
    decision = rules.decide(url, agent)
    assert isinstance(verdict, bool)
    assert decision.allowed is verdict
    if decision.rule is not None:
        assert decision.rule.allow is verdict
        assert decision.line is not None and decision.line >= 1


@pytest.mark.slow
@SETTINGS
@given(BODIES.map("\n".join), st.sampled_from(QUERY_PATHS), st.sampled_from(QUERY_AGENTS))
def test_decide_agrees_with_allowed_on_robots_like_files(body: str, path: str, agent: str) -> None:
    rules = RobotsTxt.parse(body)
    decision = rules.decide(path, agent)
    assert decision.allowed is rules.allowed(path, agent)
    if decision.rule is not None:
        # The line number points at a line of the original text that names the rule.
        line = body.split("\n")[decision.rule.line - 1].lower()
        assert ("allow" in line) or ("alow" in line)


# -- invariance ------------------------------------------------------------------------------


def answers(body: str | bytes) -> tuple[object, ...]:
    rules = RobotsTxt.parse(body)
    out: list[object] = [rules.sitemaps]
    for agent in QUERY_AGENTS:
        out.append((rules.crawl_delay(agent), rules.request_rate(agent)))
        for path in QUERY_PATHS:
            d = rules.decide(path, agent)
            rule = None if d.rule is None else (d.rule.allow, d.rule.pattern)
            out.append((rules.allowed(path, agent), d.allowed, rule, d.group))
    return tuple(out)


def line_numbers(body: str | bytes) -> list[int | None]:
    rules = RobotsTxt.parse(body)
    return [rules.decide(p, a).line for a in QUERY_AGENTS for p in QUERY_PATHS]


COMMENTS = st.sampled_from(["#", "# comment", "#User-agent: x", "   # indented", "#Disallow: /"])


@pytest.mark.slow
@FEW
@given(BODIES, st.data())
def test_comments_and_blank_lines_change_nothing(lines: list[str], data: st.DataObject) -> None:
    before = "\n".join(lines)
    out: list[str] = []
    for line in lines:
        for _ in range(data.draw(st.integers(0, 2))):
            out.append(data.draw(st.one_of(COMMENTS, st.sampled_from(["", " ", "\t"]))))
        if data.draw(st.booleans()):
            line += " " + data.draw(COMMENTS)
        out.append(line)
    after = "\n".join(out)
    assert answers(after) == answers(before)


@pytest.mark.slow
@FEW
@given(BODIES, st.sampled_from(["\r\n", "\r"]), st.booleans())
def test_line_ends_and_bom_change_nothing(lines: list[str], eol: str, bom: bool) -> None:
    before = "\n".join(lines)
    after = ("\ufeff" if bom else "") + eol.join(lines)
    assert answers(after) == answers(before)
    assert line_numbers(after) == line_numbers(before)
    assert answers(after.encode()) == answers(before)
    assert line_numbers(after.encode()) == line_numbers(before)


@pytest.mark.slow
@FEW
@given(BODIES.map("\n".join))
def test_text_and_its_utf8_bytes_parse_alike(body: str) -> None:
    assert answers(body) == answers(body.encode())


# -- urls ---------------------------------------------------------------------------------------


@pytest.mark.slow
@SETTINGS
@given(st.text(max_size=80))
def test_normalise_path_is_idempotent_and_ascii(s: str) -> None:
    once = normalise_path(s)
    assert once.isascii()
    assert normalise_path(once) == once


@pytest.mark.slow
@SETTINGS
@given(st.text(max_size=80))
@example("http://a.com#/x")
@example("?x#y")
def test_path_of_starts_with_slash_and_has_no_fragment(url: str) -> None:
    path = path_of(url)
    assert path.startswith("/")
    assert "#" not in path


URLISH = st.builds(
    "{}{}{}".format,
    st.sampled_from(["http://", "https://", "HTTP://", "ftp://", "", "//", "http:"]),
    st.text(alphabet=string.ascii_letters + string.digits + ".-:[]@%é ü\\", max_size=20),
    st.sampled_from(["", "/", "/x?y#z", "?q", "#f"]),
)


@pytest.mark.slow
@SETTINGS
@given(st.one_of(URLISH, st.text(max_size=40)))
@example("http://[::1")
@example("http://a.com:99999/")
@example("http://" + "a" * 64 + "é.com/")
def test_split_origin_returns_or_raises_invalid_url(url: str) -> None:
    try:
        origin, rest = split_origin(url)
    except InvalidURL as exc:
        # Shown without its password (see test_redaction_hides_what_clients_send).
        assert repr(redact(url)) in str(exc)
        assert exc.url == redact(url)
        return
    assert origin.startswith(("http://", "https://"))
    assert origin == origin.lower()
    assert origin.isascii()
    assert "@" not in origin
    assert not (origin.startswith("http://") and origin.endswith(":80"))
    assert not (origin.startswith("https://") and origin.endswith(":443"))
    # The rest as written, unless dot segments were resolved.
    assert url.endswith(rest) or "/." in url or "/%2" in url
    # Stable: the same origin again, from the cache.
    assert split_origin(url) == (origin, rest)


HOSTS = st.lists(
    st.text(alphabet=string.ascii_lowercase + string.digits, min_size=1, max_size=8),
    min_size=1,
    max_size=3,
).map(".".join)


@pytest.mark.slow
@SETTINGS
@given(st.sampled_from(["http", "https"]), HOSTS)
def test_default_ports_are_elided(scheme: str, host: str) -> None:
    port = 80 if scheme == "http" else 443
    assert split_origin(f"{scheme}://{host.upper()}:{port}/x")[0] == f"{scheme}://{host}"
    assert split_origin(f"{scheme}://{host}:8081/x")[0] == f"{scheme}://{host}:8081"


# -- what the client sends (issue 12 items 5 and 8) ----------------------------------------

DOT_PATHS = st.lists(
    st.sampled_from(["a", "b", ".", "..", "%2e", "%2E", ".%2e", "%2E%2e", "...", ".a", ""]),
    max_size=8,
).map(lambda segs: "/" + "/".join(segs))


@pytest.mark.slow
@MANY
@given(DOT_PATHS, st.sampled_from(["", "?q=/../x", "?", "?a/./b"]), st.sampled_from(["", "#/../"]))
def test_path_of_is_the_path_yarl_sends(path: str, query: str, fragment: str) -> None:
    url = "http://h.example" + path + query + fragment
    sent = yarl.URL(url)
    wire = sent.raw_path + (f"?{sent.raw_query_string}" if "?" in query else "")
    assert normalise_path(path_of(url)) == normalise_path(wire)
    if not path.startswith("//"):  # that would name a host
        assert normalise_path(path_of(path + query + fragment)) == normalise_path(wire)
    _, rest = split_origin(url)
    assert normalise_path(rest.partition("#")[0]) == normalise_path(wire)


CLASSIC_DOTS = "User-agent: *\nDisallow: /a/b\nDisallow: /b/a\nDisallow: /...\nDisallow: /.a\n"


@pytest.mark.slow
@MANY
@given(
    DOT_PATHS,
    st.sampled_from(["", "?q=/../x", "?"]),
    st.sampled_from([None, "http://h.example/robots.txt"]),
)
def test_classic_judges_the_path_yarl_sends(path: str, query: str, robots: str | None) -> None:
    rules = RobotsTxt.parse(CLASSIC_DOTS, dialect="classic", url=robots)
    url = "http://h.example" + path + query
    sent = yarl.URL(url)
    wire = "http://h.example" + sent.raw_path + (f"?{sent.raw_query_string}" if query else "")
    verdict = rules.allowed(wire, "FooBot")
    assert rules.allowed(url, "FooBot") is verdict
    assert rules.decide(url, "FooBot").allowed is verdict
    if not path.startswith("//"):  # that would name a host
        assert rules.allowed(path + query, "FooBot") is verdict


USERINFO = st.text(
    alphabet=string.ascii_letters + string.digits + ":@%!$&'()*+,;=-._~", max_size=12
)


@pytest.mark.slow
@MANY
@given(
    st.sampled_from(["http://", "https://", "HTTP://", "//", " http://"]),
    USERINFO,
    st.sampled_from(["a.example", "a.example:8080", "[::1]", ""]),
    st.sampled_from(["", "/", "/p@q", "?x@y", "#@"]),
)
def test_redaction_hides_what_clients_send(
    scheme: str, userinfo: str, host: str, tail: str
) -> None:
    url = f"{scheme}{userinfo}@{host}{tail}"
    shown = redact(url)
    assert redact(shown) == shown
    try:
        parts = urlsplit(url.strip())
        password, username = parts.password, parts.username
    except ValueError:
        return
    shown_parts = urlsplit(shown.strip())
    assert shown_parts.hostname == parts.hostname
    if password:
        assert shown_parts.password == "***" and shown_parts.username == username
    elif username:
        assert (shown_parts.username == "***" and password is None) or password == ""


@pytest.mark.slow
@MANY
@given(st.text(max_size=60))
def test_redact_never_raises(text: str) -> None:
    assert isinstance(redact(text), str)
    assert redact(redact(text)) == redact(text)
