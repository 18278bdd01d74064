"""The classic dialect: WWW::RobotRules 6.x semantics, checked against the original.

Every semantic test states its verdicts and, when Perl's WWW::RobotRules is
installed, also asks it (through ``robotrules_oracle.pl``) and requires the
same answers.  ``test_corpus_matches_www_robotrules`` compares both on every
file of the shared robots.txt corpus plus seeded synthetic files.

Encodings: robotgate decodes a robots.txt body itself (first 500 KiB, BOM
dropped, UTF-8 with invalid bytes replaced).  The oracle is given that decoded
text, as UTF-8 it decodes strictly, so WWW::RobotRules works on the same
characters, as Perl character strings, as it does behind LWP's
``decoded_content``.  How LWP would have decoded a non-UTF-8 file (by charset,
keeping a BOM) is a difference of decoding, not of the dialect, and is not
compared.

Dot segments: robotgate judges a URL's path as the client sends it, with
``.`` and ``..`` segments removed (a deliberate departure, docs/dialects.md);
WWW::RobotRules matches them as written.  The oracle is therefore asked about
each URL as it is sent (:func:`as_sent`).
"""

from __future__ import annotations

import os
import random
import re
import subprocess
import threading
import zlib
from collections.abc import Sequence
from pathlib import Path

import pytest
import yarl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from robotgate import Decision, RobotsTxt, Rule
from robotgate.robots.body import DEFAULT_MAX_BYTES, body_text
from robotgate.robots.classic import ClassicRobotsTxt, classic_body_usable, parse_classic
from robotgate.urls import remove_dot_segments

ORACLE = Path(__file__).with_name("robotrules_oracle.pl")
CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "robots"
SITE = "http://example.com"
ROBOTS = SITE + "/robots.txt"
FOO = "FooBot/1.2 [http://foobot.int]"
BAR = "BarCrawler/3.0"


def _perl_missing() -> str | None:
    try:
        subprocess.run(
            ["perl", "-MWWW::RobotRules", "-e1"], check=True, capture_output=True, timeout=60
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"Perl's WWW::RobotRules is not available ({exc}); CI installs it"
    return None


PERL_MISSING = _perl_missing()
needs_perl = pytest.mark.skipif(PERL_MISSING is not None, reason=PERL_MISSING or "")

# -- the oracle -------------------------------------------------------------------

Job = tuple[str, Sequence[str], Sequence[str], str]  # robots URL, agents, URLs, text


def _field(s: str) -> bytes:
    b = s.encode("utf-8")
    return b"%d\n%s" % (len(b), b)


_URL_HEAD_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^/?#]*")


def as_sent(url: str) -> str:
    """``url`` with the dot segments of its path removed, as the client sends it.

    That path is what the classic dialect judges; WWW::RobotRules would match
    ``/a/../x`` as written, so it is asked about ``/x``.
    """
    m = _URL_HEAD_RE.match(url)
    head = m.group() if m is not None else ""
    return head + remove_dot_segments(url[len(head) :])


def _encode_job(job: Job, sent: bool = True) -> bytes:
    url, agents, urls, text = job
    if sent:
        urls = [as_sent(u) for u in urls]
    parts = [b"%d %d\n" % (len(agents), len(urls)), _field(url)]
    parts += [_field(a) for a in agents] + [_field(u) for u in urls] + [_field(text)]
    return b"".join(parts)


def _oracle_env() -> dict[str, str]:
    # URI_HAS_RESERVED_SQUARE_BRACKETS would switch URI.pm to its 5.10 escaping.
    return {k: v for k, v in os.environ.items() if not k.startswith("URI_")}


def perl_verdicts(jobs: Sequence[Job], workers: int = 1, sent: bool = True) -> list[list[str]]:
    """WWW::RobotRules' verdicts: per job, per agent, a string of "1"/"0" per URL.

    Each URL is asked about as it is sent (:func:`as_sent`), or as written if
    not ``sent``.  ``workers`` Perl processes share the jobs (one process per
    core, never one per file).
    """
    shares = [list(range(w, len(jobs), workers)) for w in range(workers)]
    outputs: list[bytes] = [b""] * workers
    errors: list[str] = []

    def run(w: int) -> None:
        data = b"".join(_encode_job(jobs[i], sent) for i in shares[w])
        proc = subprocess.run(
            ["perl", str(ORACLE)], input=data, capture_output=True, env=_oracle_env()
        )
        if proc.returncode != 0:
            errors.append(proc.stderr.decode("utf-8", "replace"))
        outputs[w] = proc.stdout

    threads = [threading.Thread(target=run, args=(w,)) for w in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    result: list[list[str]] = [[] for _ in jobs]
    for w, share in enumerate(shares):
        lines = outputs[w].decode("ascii").split("\n")
        pos = 0
        for i in share:
            n = len(jobs[i][1])
            result[i] = lines[pos : pos + n]
            pos += n
    return result


def ours(rules: RobotsTxt, agents: Sequence[str], urls: Sequence[str]) -> list[str]:
    return ["".join("1" if rules.allowed(u, a) else "0" for u in urls) for a in agents]


def check(text: str, expected: dict[tuple[str, str], bool], url: str = ROBOTS) -> None:
    """Assert robotgate's verdicts, and WWW::RobotRules' too when Perl is there.

    ``expected`` maps (agent, path) to allowed; paths are also asked as
    absolute URLs on the robots.txt's origin.
    """
    rules = parse_classic(text, url)
    origin = url[: url.index("/", url.index("//") + 2)]
    for (agent, path), verdict in expected.items():
        assert rules.allowed(path, agent) is verdict, (agent, path)
        assert rules.allowed(origin + path, agent) is verdict, (agent, origin + path)
        assert rules.decide(path, agent).allowed is verdict, (agent, path)
    if PERL_MISSING is None:
        agents = sorted({a for a, _ in expected})
        paths = sorted({p for _, p in expected})
        perl = perl_verdicts([(url, agents, [origin + p for p in paths], text)])[0]
        for agent, line in zip(agents, perl, strict=True):
            for path, v in zip(paths, line, strict=True):
                if (agent, path) in expected:
                    assert (v == "1") is expected[agent, path], ("perl", agent, path)


# -- the points, one test each ----------------------------------------------


def test_records_are_separated_by_blank_lines() -> None:
    text = "User-agent: *\nDisallow: /a\n\nUser-agent: foo\nDisallow: /b\n"
    check(text, {(FOO, "/a"): True, (FOO, "/b"): False, (BAR, "/a"): False, (BAR, "/b"): True})


def test_disallow_after_a_blank_line_without_user_agent_belongs_to_no_one() -> None:
    text = "User-agent: *\nDisallow: /a\n\nDisallow: /b\n"
    check(text, {(BAR, "/a"): False, (BAR, "/b"): True})


@pytest.mark.slow
def test_a_comment_only_line_is_not_a_blank_line() -> None:
    check("User-agent: foo\n# just a comment\nDisallow: /a\n", {(FOO, "/a"): False})
    check("User-agent: foo\n   \nDisallow: /a\n", {(FOO, "/a"): True})
    check("User-agent: foo\nDisallow: /a # trailing comment\n", {(FOO, "/a"): False})


def test_user_agent_after_disallow_starts_a_new_record() -> None:
    text = "User-agent: *\nDisallow: /\nUser-agent: foo\nDisallow: /private\n"
    check(text, {(FOO, "/"): True, (FOO, "/private/x"): False, (BAR, "/"): False})


def test_disallow_before_any_user_agent_counts_as_star() -> None:
    text = "Disallow: /a\n\nUser-agent: foo\nDisallow: /b\n"
    check(text, {(BAR, "/a"): False, (BAR, "/b"): True, (FOO, "/a"): True, (FOO, "/b"): False})


def test_agent_name_is_first_word_without_version() -> None:
    # "FooBot/1.2 [http://foobot.int]" is FooBot; "Mozilla/5.0 (compatible;
    # bingbot/2.0)" is Mozilla, not bingbot.
    bing = "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)"
    text = "User-agent: bingbot\nDisallow: /b\n\nUser-agent: foobot\nDisallow: /f\n"
    check(text, {(FOO, "/f"): False, (bing, "/b"): True, ("bingbot/2.0", "/b"): False})
    # A versioned User-agent value is not inside the short name: never matches.
    check("User-agent: FooBot/1.2\nDisallow: /\n", {(FOO, "/"): True})


@pytest.mark.slow
def test_record_applies_when_its_value_is_a_substring_of_the_name() -> None:
    check("User-agent: bot\nDisallow: /\n", {(FOO, "/x"): False, ("Slurp", "/x"): True})
    check("User-agent: FOO\nDisallow: /\n", {(FOO, "/x"): False, ("foo", "/x"): False})
    check("User-agent: foobotx\nDisallow: /\n", {(FOO, "/x"): True})
    # An empty value is a substring of every name.
    check("User-agent:\nDisallow: /\n", {(FOO, "/x"): False, (BAR, "/x"): False})


def test_only_disallow_is_understood() -> None:
    text = (
        "User-agent: *\nAllow: /a\nDisallow: /\nCrawl-delay: 5\nRequest-rate: 1/10\n"
        "Sitemap: http://example.com/sitemap.xml\n"
    )
    check(text, {(FOO, "/a"): False})
    rules = parse_classic(text, ROBOTS)
    assert rules.crawl_delay(FOO) is None
    assert rules.request_rate(FOO) is None
    assert rules.sitemaps == []


def test_disallow_is_a_plain_prefix_of_path_and_query() -> None:
    text = "User-agent: *\nDisallow: /a?b\nDisallow: /*.gif\nDisallow: /end$\n"
    check(
        text,
        {
            (FOO, "/a?bc"): False,
            (FOO, "/a"): True,
            (FOO, "/x.gif"): True,
            (FOO, "/*.gif"): False,
            (FOO, "/end"): True,
            (FOO, "/end$x"): False,
        },
    )


@pytest.mark.slow
def test_first_match_wins_and_an_empty_disallow_allows_everything() -> None:
    text = "User-agent: *\nDisallow: /a\nDisallow:\nDisallow: /b\n"
    check(text, {(FOO, "/a"): False, (FOO, "/b"): True})
    check("User-agent: *\nDisallow:\nDisallow: /\n", {(FOO, "/x"): True})


def test_absolute_disallow_for_another_host_port_or_scheme_is_ignored() -> None:
    text = (
        "User-agent: *\n"
        "Disallow: http://example.com/same\n"
        "Disallow: http://EXAMPLE.COM:80/port80\n"
        "Disallow: //example.com/netpath\n"
        "Disallow: http://other.com/host\n"
        "Disallow: https://example.com/scheme\n"
        "Disallow: http://example.com:8080/port\n"
        "Disallow: //other.com/othernet\n"
    )
    expected = {
        (FOO, "/same"): False,
        (FOO, "/port80"): False,
        (FOO, "/netpath"): False,
        (FOO, "/host"): True,
        (FOO, "/scheme"): True,
        (FOO, "/port"): True,
        (FOO, "/othernet"): True,
    }
    check(text, expected)
    # Without the robots.txt URL, an absolute URL is judged as its own
    # origin's robots.txt would judge it, and a bare path is on no known host.
    rules = ClassicRobotsTxt.parse(text)
    for (agent, path), verdict in expected.items():
        assert rules.allowed("http://example.com" + path, agent) is verdict, path
        assert rules.decide("http://example.com" + path, agent).allowed is verdict, path
        assert rules.allowed(path, agent), path
    assert not rules.allowed("http://other.com/host", FOO)
    assert not rules.allowed("https://example.com/scheme", FOO)
    assert rules.allowed("https://example.com/same", FOO)
    assert not rules.allowed("http://example.com:8080/port", FOO)
    assert parse_classic(text, "ftp://example.com/robots.txt").allowed("/same", FOO)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(authority=st.text(max_size=20), path=st.text(max_size=20), wrap=st.booleans())
def test_without_url_any_origin_gets_an_answer(authority: str, path: str, wrap: bool) -> None:
    rules = ClassicRobotsTxt.parse("User-agent: *\nDisallow: //x/a\nDisallow: http://x/b\nc\n")
    url = f"http://{authority}/{path}"
    if wrap:
        url = f" <URL:{url}> "
    assert rules.allowed(url, FOO) in (True, False)
    assert isinstance(rules.decide(url, FOO), Decision)


def test_without_url_origins_are_bounded() -> None:
    rules = ClassicRobotsTxt.parse("User-agent: *\nDisallow: http://h7.example/a\n")
    for n in range(300):
        assert rules.allowed(f"http://h{n}.example/a", FOO) is (n != 7)
    assert not rules.allowed("http://h7.example/a", FOO)
    assert not rules.allowed("HTTP://H7.example:80/a", FOO)
    assert rules.allowed("http://h7.example:81/a", FOO)
    assert len(rules._views or {}) <= 16


CORPUS_CASES = [
    # file, its network-path or absolute Disallow value, URLs it must not block
    ("openwrt.org", "//*", ["/", "/docs/start", "/*"]),
    ("www.scotiabank.com", "http://dr.scotiabank.com", ["/", "/ca/en.html"]),
    ("www.chainreactioncycles.com", "//;jsession*", ["/", "/gb/en/bikes", "/;jsession=1"]),
]


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"no robots.txt corpus at {CORPUS}")
@pytest.mark.parametrize(("name", "value", "paths"), CORPUS_CASES)
def test_rules_for_another_host_block_nothing(name: str, value: str, paths: list[str]) -> None:
    # Issue 12 item 19: these lines became "Disallow: /" without the URL.
    body = (CORPUS / name).read_bytes()
    assert ("Disallow: " + value).encode() in body
    robots = f"http://{name}/robots.txt"
    urls = [f"http://{name}{p}" for p in paths]
    agents = [FOO, "Googlebot/2.1", "msnbot"]
    with_url = RobotsTxt.parse(body, dialect="classic", url=robots)
    without = ClassicRobotsTxt.parse(body)
    expected = ["1" * len(urls)] * len(agents)
    assert ours(with_url, agents, urls) == expected
    assert ours(without, agents, urls) == expected
    assert ours(without, agents, paths) == expected
    if PERL_MISSING is None:
        text = body_text(body, DEFAULT_MAX_BYTES)
        assert perl_verdicts([(robots, agents, urls, text)]) == [expected]


@pytest.mark.slow
def test_own_record_replaces_the_star_records() -> None:
    text = "User-agent: *\nDisallow: /a\n\nUser-agent: foo\nDisallow: /b\n"
    check(text, {(FOO, "/a"): True, (FOO, "/b"): False})
    # Even a record without Disallow lines.
    check("User-agent: foo\n\nUser-agent: *\nDisallow: /\n", {(FOO, "/x"): True})
    # Without one, every '*' record applies.
    text = "User-agent: *\nDisallow: /a\n\nUser-agent: *\nDisallow: /b\n"
    check(text, {(FOO, "/a"): False, (FOO, "/b"): False})


@pytest.mark.parametrize("eol", ["\n", "\r\n", "\r"])
def test_lines_end_at_cr_lf_or_crlf(eol: str) -> None:
    text = eol.join(["User-agent: *", "Disallow: /a", "", "User-agent: foo", "Disallow: /b", ""])
    check(text, {(FOO, "/a"): True, (FOO, "/b"): False, (BAR, "/a"): False})


def test_cr_cr_lf_is_a_blank_line() -> None:
    check("User-agent: foo\r\r\nDisallow: /a\n", {(FOO, "/a"): True})


# -- quirks of WWW::RobotRules ------------------------------------------------------------


def test_first_record_naming_the_agent_wins() -> None:
    text = "User-agent: foo\nDisallow: /a\n\nUser-agent: foobot\nDisallow: /b\n"
    check(text, {(FOO, "/a"): False, (FOO, "/b"): True})


def test_star_and_own_name_in_one_record() -> None:
    text = "User-agent: *\nUser-agent: foo\nDisallow: /a\n\nUser-agent: bar\nDisallow: /b\n"
    check(text, {(FOO, "/a"): False, (BAR, "/a"): True, (BAR, "/b"): False, ("X", "/a"): False})


def test_only_an_exact_star_is_the_star_record() -> None:
    check("User-agent: * \nDisallow: /a\n", {(FOO, "/a"): False})
    check("User-agent: *bot\nDisallow: /a\n", {(FOO, "/a"): True})


def test_disallow_values_are_uri_references_resolved_against_robots_txt() -> None:
    text = (
        "User-agent: *\n"
        "Disallow: tmp\n"  # relative: /tmp
        "Disallow: ?x\n"  # /robots.txt?x
        'Disallow: "/quoted"\n'  # URI.pm unwraps "..." and <URL:...>
        "Disallow: <URL:/wrapped>\n"
        "Disallow: ../up\n"  # leading ".." are kept: /../up, which no client sends
    )
    check(
        text,
        {
            (FOO, "/tmp/x"): False,
            (FOO, "/robots.txt?x"): False,
            (FOO, "/robots.txt"): True,
            (FOO, "/quoted"): False,
            (FOO, "/wrapped"): False,
            (FOO, "/../up"): True,  # sent as /up
            (FOO, "/up"): True,
            (FOO, "/x"): True,
        },
    )
    # A value that looks like "scheme:" to URI.pm's path parser loses it.
    check("User-agent: *\nDisallow: 1a:b\n", {(FOO, "/b"): False, (FOO, "/1a:b"): True})


def test_same_host_url_without_path_disallows_everything() -> None:
    check("User-agent: *\nDisallow: http://example.com\n", {(FOO, "/"): False})


def test_escaping_but_no_normalisation() -> None:
    text = "User-agent: *\nDisallow: /a b\nDisallow: /ä\nDisallow: /%7Euser\n"
    check(
        text,
        {
            (FOO, "/a b"): False,
            (FOO, "/a%20b"): False,
            (FOO, "/ä"): False,
            (FOO, "/%C3%A4"): False,
            (FOO, "/%c3%a4"): True,
            (FOO, "/%7Euser"): False,
            (FOO, "/~user"): True,
            (FOO, "/%7euser"): True,
        },
    )


DOT_URLS = [
    "/a/../private",
    "/./private",
    "/a/%2e%2E/private",
    "/%2E/private",
    "/a/b/../../private/x",
    "/../private",
    "a/../private",
    "../private",
    "/a/.%2e/private?q",
    "/private/x/..",
]


@pytest.mark.parametrize("where", ["http://example.com", "HTTP://example.com:80", ""])
@pytest.mark.parametrize("path", DOT_URLS)
def test_dot_segments_are_judged_as_the_client_sends_them(where: str, path: str) -> None:
    """``/a/../private`` is sent, so judged, as ``/private`` (issue 12 item 5)."""
    url = where + path if where == "" or path[:1] == "/" else f"{where}/{path}"
    text = "User-agent: *\nDisallow: /private\n"
    for rules in (parse_classic(text, ROBOTS), ClassicRobotsTxt.parse(text)):
        assert not rules.allowed(url, FOO), url
        decision = rules.decide(url, FOO)
        assert not decision.allowed and decision.rule == Rule(False, "/private", 2)
    if url.startswith("http"):  # aiohttp's URL type agrees on what is sent
        assert yarl.URL(url).raw_path.startswith("/private")


def test_dot_segments_elsewhere_are_kept() -> None:
    check(
        "User-agent: *\nDisallow: /private\nDisallow: /x/..%2f\n",
        {
            (FOO, "/private/a/.."): False,  # sent as /private/
            (FOO, "/private/.."): True,  # sent as /
            (FOO, "/..."): True,
            (FOO, "/x?a=/../private"): True,  # the query is sent as written
            (FOO, "/x/..%2fprivate"): False,  # not a dot segment
            (FOO, "/x/..."): True,
        },
    )
    rules = parse_classic("User-agent: *\nDisallow: /\n", ROBOTS)
    assert rules.allowed("http://example.com", FOO)  # an empty path stays empty
    assert not rules.allowed("http://example.com/..", FOO)  # sent as /


@needs_perl
def test_deliberate_departure_dot_segments() -> None:
    """WWW::RobotRules matches dot segments as written; robotgate as they are sent."""
    text = "User-agent: *\nDisallow: /private\n"
    urls = [SITE + "/a/../private", SITE + "/%2e/private", SITE + "/private"]
    assert [parse_classic(text, ROBOTS).allowed(u, FOO) for u in urls] == [False] * 3
    assert perl_verdicts([(ROBOTS, [FOO], urls, text)], sent=False) == [["110"]]
    assert perl_verdicts([(ROBOTS, [FOO], urls, text)]) == [["000"]]


def test_url_with_empty_path_and_non_http_urls_are_allowed() -> None:
    rules = parse_classic("User-agent: *\nDisallow: /\n", ROBOTS)
    assert rules.allowed("http://example.com", FOO)
    assert not rules.allowed("http://example.com/", FOO)
    assert rules.allowed("ftp://example.com/x", FOO)
    assert rules.allowed("mailto:someone@example.com", FOO)
    assert not rules.allowed("/robots.txt", FOO)  # no exception for robots.txt
    assert not rules.allowed("HTTPS://example.com/x#frag", FOO)
    if PERL_MISSING is None:
        urls = ["http://example.com", "http://example.com/", "ftp://example.com/x"]
        assert perl_verdicts([(ROBOTS, [FOO], urls, "User-agent: *\nDisallow: /\n")]) == [["101"]]


@pytest.mark.slow
def test_perl_whitespace_and_case_rules() -> None:
    # NBSP and U+3000 are \s to Perl; U+001C is not (it is to Python).
    check("\u00a0User-agent:\u3000*\nDisallow: /a\n", {(FOO, "/a"): False})
    check("User-agent: *\n\x1cDisallow: /a\n", {(FOO, "/a"): True})
    check("User-agent: foo\n\x1c\nDisallow: /a\n", {(FOO, "/a"): False})
    # Perl's /i folds U+017F (long s) to "s" but not dotless or dotted i.
    check(
        "User-agent: *\nDiſallow: /a\nDısallow: /b\nDİsallow: /c\n",
        {
            (FOO, "/a"): False,
            (FOO, "/b"): True,
            (FOO, "/c"): True,
        },
    )


def test_agent_names_perl_treats_as_false() -> None:
    # "" and "0" leave the name unset: only an empty User-agent value matches.
    text = "User-agent: 0\nDisallow: /zero\n\nUser-agent: \nDisallow: /empty\n"
    check(text, {("0", "/zero"): True, ("0", "/empty"): False, ("0/1", "/zero"): False})


def test_lower_casing_is_perls() -> None:
    # Perl's lc has no final-sigma rule: "ΣΣ" is "σσ" to it, "σς" to Python.
    check("User-agent: σσ\nDisallow: /\n", {("ΣΣ/1.0", "/x"): False})


# -- the API -------------------------------------------------------------------------------


def test_dispatch_from_robotstxt_parse() -> None:
    body = b"\xef\xbb\xbfUser-agent: *\r\nDisallow: /a\r\n"
    rules = RobotsTxt.parse(body, dialect="classic", url=ROBOTS)
    assert isinstance(rules, ClassicRobotsTxt)
    assert not rules.allowed("/a", FOO)
    assert RobotsTxt.parse(body).allowed("/b", FOO)


def test_decide_explains() -> None:
    text = "User-agent: *\nDisallow: /s\n\nUser-agent: foo\nUser-agent: Other\nDisallow: /x\n"
    rules = parse_classic(text, ROBOTS)
    d = rules.decide("/x/y", FOO)
    assert d == Decision(
        False,
        "disallowed by 'Disallow: /x' (line 6) in the record for 'foo', 'other'",
        Rule(False, "/x", 6),
        ("foo", "other"),
    )
    d = rules.decide("/s", BAR)
    assert str(d) == (
        "disallowed by 'Disallow: /s' (line 2) in the record for '*' (no record names this agent)"
    )
    assert d.line == 2 and d.group == ("*",)
    assert (
        rules.decide("/y", FOO).reason
        == "allowed: no rule matches in the record for 'foo', 'other'"
    )
    empty = parse_classic("User-agent: *\nDisallow:\nDisallow: /\n", ROBOTS).decide("/", FOO)
    assert empty.allowed and empty.rule == Rule(False, "", 2)
    none = parse_classic("User-agent: foo\nDisallow: /\n", ROBOTS).decide("/", BAR)
    assert none.allowed and none.group is None and none.rule is None
    assert parse_classic(text, ROBOTS).decide("ftp://example.com/s", BAR).allowed
    # The matched value is the resolved one.
    d = parse_classic("User-agent: *\nDisallow: a b\n", ROBOTS).decide("/a%20b", FOO)
    assert d.rule == Rule(False, "/a%20b", 2)


def test_agents_and_repr() -> None:
    rules = parse_classic(
        "Disallow: /p\nUser-agent: Foo\nUser-agent: bar\n\nUser-agent: FOO\n", None
    )
    assert rules.agents == ["foo", "bar", "*"]
    assert repr(rules) == "<ClassicRobotsTxt records for ['foo', 'bar', '*']>"
    assert parse_classic("", None).agents == []


@pytest.mark.parametrize(
    ("content_type", "text", "usable"),
    [
        ("text/plain", "User-agent: *\nDisallow: /\n", True),
        ("text/plain; charset=utf-8", "  disallow : /\n", True),
        ("Text/Plain", "Disallow:", True),
        (" text / plain ", "Disallow: /x", True),  # LWP removes all spaces
        ("text/html", "<html><body>\nDisallow: /x</body></html>", True),  # no HTML sniffing
        ("text/html", "<html><body>Disallow: /x</body></html>", False),
        ("text/plain", "User-agent: *\nAllow: /\n", False),  # no Disallow line
        ("text/plain", "User-agent: *\rDisallow: /\r", False),  # /m's ^ is after LF only
        ("text/plain", "", False),
        ("application/octet-stream", "User-agent: *\nDisallow: /\n", False),
        ("", "Disallow: /", False),
        (None, "Disallow: /", False),
    ],
)
def test_classic_body_usable(content_type: str | None, text: str, usable: bool) -> None:
    assert classic_body_usable(content_type, text) is usable


# -- where the dialects differ (docs/dialects.md shows these examples) --------------------

DIFFERENCES: list[tuple[str, str, str, str, bool, bool]] = [
    # name, robots.txt, agent, url, rfc9309 verdict, classic verdict
    ("allow", "User-agent: *\nAllow: /pub\nDisallow: /\n", FOO, "/pub/a", True, False),
    ("wildcards", "User-agent: *\nDisallow: /*.pdf$\n", FOO, "/a.pdf", False, True),
    ("empty-disallow", "User-agent: *\nDisallow:\nDisallow: /a\n", FOO, "/a", False, True),
    ("agent-substring", "User-agent: bot\nDisallow: /\n", FOO, "/x", True, False),
    ("agent-version", "User-agent: foobot/1.2\nDisallow: /\n", FOO, "/x", False, True),
    (
        "first-record",
        "User-agent: foo\nDisallow: /a\n\nUser-agent: foobot\nDisallow: /b\n",
        FOO,
        "/b",
        False,
        True,
    ),
    ("blank-line", "User-agent: foo\n\nDisallow: /a\n", "Foo/1.0", "/a", False, True),
    ("before-user-agent", "Disallow: /a\nUser-agent: foo\nDisallow: /b\n", BAR, "/a", True, False),
    ("relative", "User-agent: *\nDisallow: private\n", FOO, "/private", True, False),
    ("percent", "User-agent: *\nDisallow: /%7Ejoe\n", FOO, "/~joe", False, True),
    ("robots.txt", "User-agent: *\nDisallow: /\n", FOO, "/robots.txt", True, False),
    ("absolute", "User-agent: *\nDisallow: http://example.com/a\n", FOO, "/a", True, False),
    ("typo", "User-agent: *\nDissallow: /a\n", FOO, "/a", False, True),
    ("no-colon", "User-agent: *\nDisallow /a\n", FOO, "/a", False, True),
    ("no-path", "User-agent: *\nDisallow: /\n", FOO, "http://example.com", False, True),
]


@pytest.mark.parametrize(("name", "text", "agent", "url", "rfc", "classic"), DIFFERENCES)
def test_dialect_differences(
    name: str, text: str, agent: str, url: str, rfc: bool, classic: bool
) -> None:
    assert RobotsTxt.parse(text).allowed(url, agent) is rfc
    assert RobotsTxt.parse(text, dialect="classic", url=ROBOTS).allowed(url, agent) is classic
    if PERL_MISSING is None:
        absolute = url if "://" in url else SITE + url
        assert perl_verdicts([(ROBOTS, [agent], [absolute], text)]) == [["1" if classic else "0"]]


# -- never raises --------------------------------------------------------------------------

_robots_lines = st.lists(
    st.one_of(
        st.text(max_size=30),
        st.sampled_from(["User-agent: *", "User-agent: foo", "Disallow: /", "Disallow:", "", "#"]),
        st.builds(lambda v: "Disallow: " + v, st.text(max_size=30)),
        st.builds(lambda v: "User-agent: " + v, st.text(max_size=10)),
    ),
    max_size=20,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lines=_robots_lines,
    eol=st.sampled_from(["\n", "\r", "\r\n"]),
    url=st.one_of(st.none(), st.text(max_size=30), st.just(ROBOTS)),
    path=st.text(max_size=40),
    agent=st.text(max_size=20),
)
def test_never_raises(lines: list[str], eol: str, url: str | None, path: str, agent: str) -> None:
    rules = parse_classic(eol.join(lines), url)
    assert isinstance(rules.allowed(path, agent), bool)
    assert isinstance(rules.allowed(SITE + path, FOO), bool)
    assert isinstance(rules.decide(path, agent), Decision)
    assert isinstance(rules.agents, list)
    classic_body_usable(url, path)


def test_never_raises_on_lone_surrogates() -> None:
    text = "User-agent: \ud800\nDisallow: /\udfff\nDisallow: //\ud800\u00e4/x\nDisallow: \ud800:x\n"
    for url in (None, "http://\ud800\u00e4.example/robots.txt", ROBOTS):
        rules = parse_classic(text, url)
        assert rules.allowed("/\udfff", "\ud800") in (True, False)
        assert rules.decide("http://example.com/\ud800", FOO).allowed in (True, False)
    assert not parse_classic(text, ROBOTS).allowed("/\udfff/x", "\ud800")


# -- the differential test ---------------------------------------------------------------

#: Asked about every file.  FooBot is (almost) never named, so it sees '*'.
AGENTS = [FOO, "Googlebot/2.1 (+http://www.google.com/bot.html)", "msnbot"]
#: One more per small file, chosen by the seed, to cover more names cheaply.
MORE_AGENTS = [
    "libwww-perl/6.72",
    "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)",
    "BaiduSpider",
    "Slurp",
    "YandexBot/3.0",
    "AhrefsBot/7.0",
    "ia_archiver",
    "Twitterbot/1.0",
    "",
    "0",
    "*",
]
COMMON_PATHS = [
    "/",
    "/index.html",
    "/robots.txt",
    "/search?q=robots",
    "/%7Euser/a%2Fb",
    "/~user/",
    "/ü/ß?ä=1",
    "/path with space",
    "/admin/",
    "/private#frag",
]
SUFFIXES = ["", "x", "/", "?q=1", "%20", "ä", "/deeper/page.html", "#top", "?a=%2F&b=ü"]
_DISALLOW_VALUE = re.compile(
    r"^[ \t]*disallow[ \t]*:[ \t]*([^#\r\n]*)", re.IGNORECASE | re.MULTILINE
)


def _paths_for(text: str, rnd: random.Random) -> list[str]:
    values = sorted({v.strip() for v in _DISALLOW_VALUE.findall(text)})
    paths = list(COMMON_PATHS)
    for v in rnd.sample(values, min(len(values), 8)):
        v = v if v.startswith("/") else "/" + v
        paths.append(v + rnd.choice(SUFFIXES))
        paths.append(v[: max(1, len(v) // 2)])
    return paths


def _corpus_jobs() -> tuple[list[tuple[str, bytes, list[str]]], list[Job]]:
    cases = []
    jobs: list[Job] = []
    for file in sorted(CORPUS.iterdir()):
        name = file.name
        body = file.read_bytes()
        text = body_text(body, DEFAULT_MAX_BYTES)  # exactly what robotgate parses
        rnd = random.Random(zlib.crc32(name.encode()))
        if name.endswith("_443"):
            host, scheme, port = name[:-4], "https", ":443"
        else:
            host, scheme, port = name, "http", ""
        robots = f"{scheme}://{host}{port}/robots.txt"
        paths = _paths_for(text, rnd)
        agents = list(AGENTS)
        if len(body) < 16384:
            agents.append(rnd.choice(MORE_AGENTS))
        cases.append((robots, body, paths))
        # Perl needs absolute URLs on the robots.txt's host; robotgate is asked both ways.
        origin = f"{scheme}://{host}"
        urls = [origin + p for p in paths]
        urls += [f"{scheme}://{host}{rnd.choice(['', port or ':80'])}/", origin, origin + "?q"]
        jobs.append((robots, agents, urls, text))
    return cases, jobs


# Synthetic files that concentrate the odd cases the corpus has few of.
_SYN_KEYS_UA = [
    "User-agent",
    "user-AGENT",
    "User-Agent :",
    " User-agent",
    "\u00a0User-agent",
    "Uſer-agent",
    "User agent",
    "Useragent",
    "User-agent\u3000",
]
_SYN_KEYS_DIS = [
    "Disallow",
    "disallow",
    "DISALLOW :",
    "\tDisallow",
    "Dısallow",
    "Diſallow",
    "Disallow\u2003",
    "Disalow",
    "Allow",
    "\x1cDisallow",
]
_SYN_AGENTS = [
    "*",
    "foo",
    "FooBot",
    "bot",
    "",
    "googlebot",
    "Googlebot/2.1",
    "msn",
    "*bot",
    "foo bar",
    "ΣBOT",
    "baidu",
    " * ",
    "0",
    "Mozilla",
]
_SYN_VALUES = [
    "/",
    "",
    "/a",
    "/a b",
    "/ä",
    "/%7Ea",
    "/~a",
    "a",
    "?q",
    "#x",
    "*",
    "../x",
    "./x",
    "//HOST/x",
    "//other.example/x",
    "http://HOST/x",
    "https://HOST/x",
    "http://HOST:80/x",
    "http://HOST:080/x",
    "https://HOST:443/x",
    "http://other/x",
    "mailto:x@HOST",
    "<URL:/w>",
    '"/q"',
    "1a:b",
    "/x#frag",
    "/x?y",
    "/[br]",
    "http://user@HOST/u",
    "http://HOST",
    "//HOST",
    "/a\u00a0",
    "/cgi-bin/",
    "ftp://HOST/f",
    "HTTP://HOST/up",
    "javascript:x",
    "/\x7f",
    "/é?ü=1",
    "x/../../y",
    "a:/b",
    "/a/./b/../c",
    "//HOST:/e",
    "http://HOST./dot",
    "http://[::1]/v6",
]
# Absolute and network-path values (issue 12 item 19): WWW::RobotRules resolves
# them against the robots.txt URL and ignores those for another scheme, host
# or port.  SCHEME, OTHERSCHEME, HOST, PORT (as in the robots.txt URL, maybe
# empty) and DEFPORT (the scheme's default, written out) are filled in per file.
_SYN_NETWORK_VALUES = [
    "//*",
    "//*/x",
    "//;x",
    "//;jsession*",
    "//;jsessionid",
    "http://*",
    "http://dr.HOST",
    "//dr.HOST/x",
    "//other.example",
    "http://other.example",
    "https://other.example/x",
    "//HOST/x*",
    "//HOSTPORT/np",
    "//HOST:81/n81",
    "//HOSTDEFPORT/nd",
    "SCHEME://HOST/s",
    "SCHEME://HOSTPORT/sp",
    "SCHEME://HOSTDEFPORT/sd",
    "SCHEME://HOST:81/p81",
    "OTHERSCHEME://HOST/os",
    "OTHERSCHEME://HOSTPORT/osp",
    "https://HOST:80/h80",
    "http://HOST:443/h443",
    "SCHEME://user:pw@HOSTPORT/up",
    "SCHEME://HOST@other.example/at",
    "SCHEME://other.example@HOSTPORT/at2",
    "SCHEME:/x",
    "SCHEME:x",
    "SCHEME:///x",
    "SCHEME://",
    "//",
    "///x",
    "//HOST?q",
    "//HOSTPORT#f",
    "//PCTHOST/pct",
    "//HOST./dot",
    "SCHEME://HOST:/empty-port",
    "x",
    "x/y",
    ";x",
    "./;x",
    ".",
    "..",
    "*",
]
_SYN_OTHER = [
    "",
    "   ",
    "\t",
    "\u00a0",
    "\x0b",
    "\x1c",
    "\u2028",
    "# comment",
    "  # c",
    "Crawl-delay: 5",
    "Sitemap: http://HOST/s.xml",
    "garbage",
    "Foo: bar",
]
_SYN_PATHS = [
    "/",
    "/a",
    "/a b",
    "/a%20b",
    "/ä",
    "/%C3%A4",
    "/%7Ea",
    "/~a",
    "/x",
    "/x?y",
    "/ab",
    "/robots.txt",
    "/robots.txt?q",
    "/robots.txt?",
    "/q",
    "/w",
    "/b",
    "/u",
    "/up",
    "/f",
    "/e",
    "/c",
    "/dot",
    "/v6",
    "/cgi-bin/x",
    "/[br]",
    "/%5Bbr%5D",
    "/../x",
    "/../y",
    "/é?ü=1",
    "/\x7f",
    "/%7F",
    "/ß",
    "/*",
    "/a/c",
    "/a/./b/../c",
    "/mailto",
    # for _SYN_NETWORK_VALUES
    "/;x",
    "/;jsessionid=1",
    "/;jsession",
    "//;x",
    "/x*",
    "/x/y",
    "/np",
    "/n81",
    "/nd",
    "/s",
    "/sp",
    "/sd",
    "/p81",
    "/os",
    "/osp",
    "/h80",
    "/h443",
    "/up",
    "/at",
    "/at2",
    "/pct",
    "/empty-port",
    "/other.example",
    "/dr",
]
#: Where robotgate's unknown-origin reading of a file (no robots.txt URL)
#: is compared with WWW::RobotRules': a host no generated value names.
UNKNOWN_ROBOTS = "http://robotgate.invalid/robots.txt"


def _synthetic_jobs(n: int) -> list[Job]:
    rnd = random.Random(9309)
    jobs: list[Job] = []
    hosts = [
        ("http", "example.com", ""),
        ("https", "example.com", ":443"),
        ("http", "example.com", ":8080"),
        ("http", "Example.COM", ""),
    ]
    for _ in range(n):
        scheme, host, port = rnd.choice(hosts)
        fill = {
            "OTHERSCHEME": "https" if scheme == "http" else "http",
            "SCHEME": scheme,
            "DEFPORT": ":443" if scheme == "https" else ":80",
            "PORT": port,
        }
        lines = []
        for _ in range(rnd.randint(1, 14)):
            kind = rnd.random()
            comment = rnd.choice(["", "", "", " # c", "#c"])
            if kind < 0.3:
                lines.append(f"{rnd.choice(_SYN_KEYS_UA)}: {rnd.choice(_SYN_AGENTS)}{comment}")
            elif kind < 0.75:
                if kind < 0.55:
                    value = rnd.choice(_SYN_VALUES).replace("HOST", host)
                else:
                    value = rnd.choice(_SYN_NETWORK_VALUES)
                    value = value.replace("PCTHOST", f"%{ord(host[0]):02X}{host[1:]}")
                    value = value.replace("HOST", host)
                    for key, part in fill.items():
                        value = value.replace(key, part)
                lines.append(f"{rnd.choice(_SYN_KEYS_DIS)}: {value}{comment}")
            else:
                lines.append(rnd.choice(_SYN_OTHER).replace("HOST", host))
        eol = rnd.choice(["\n", "\r\n", "\r"])
        origin = f"{scheme}://{host}{port}"
        urls = [origin + p for p in _SYN_PATHS] + [origin, origin + "?q"]
        if port in ("", fill["DEFPORT"]):  # the same origin, its port spelt otherwise
            other = f"{scheme}://{host}{fill['DEFPORT'] if not port else ''}"
            urls += [other + "/s", other + "/np", other + "/x"]
        agents = [FOO, "Googlebot/2.1", rnd.choice(MORE_AGENTS), "ΣBOT/1", "  spaced"]
        jobs.append((f"{origin}/robots.txt", agents, urls, eol.join(lines)))
    return jobs


@pytest.mark.soak  # CI runs it every time; the README's run leaves it out
@pytest.mark.slow
@needs_perl
@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"no robots.txt corpus at {CORPUS}")
def test_corpus_matches_www_robotrules() -> None:
    """robotgate's classic verdicts are WWW::RobotRules', on the corpus and synthetic files.

    Each file is read three ways.  With its robots.txt URL, asked about
    absolute URLs and about bare paths.  Without it (``ClassicRobotsTxt.parse
    (text)``), asked about absolute URLs: each is judged as its own origin's
    robots.txt would judge it.  And, for the synthetic files, without it and
    asked about bare paths: values naming a scheme or host then match nothing,
    as for WWW::RobotRules reading the file for a host it never names.
    """
    cases, jobs = _corpus_jobs()
    synthetic = _synthetic_jobs(400)
    unknown_origin = UNKNOWN_ROBOTS.removesuffix("/robots.txt")
    unknown: list[Job] = [
        (UNKNOWN_ROBOTS, agents, [unknown_origin + p for p in _SYN_PATHS], text)
        for _, agents, _, text in synthetic
    ]
    everything = jobs + synthetic + unknown
    result: list[list[list[str]]] = []

    def oracle() -> None:
        result.append(perl_verdicts(everything, workers=2))

    # Perl works (on both cores) while robotgate computes its own verdicts.
    thread = threading.Thread(target=oracle)
    thread.start()
    # (job, reading, what was asked, verdicts per agent): Perl's verdicts for
    # the job's URLs, in order, are the expected ones.
    mine: list[tuple[int, str, Sequence[str], list[str]]] = []
    for n, ((robots, body, paths), (_, agents, urls, _text)) in enumerate(
        zip(cases, jobs, strict=True)
    ):
        rules = RobotsTxt.parse(body, dialect="classic", url=robots)
        mine.append((n, "url", urls, ours(rules, agents, urls)))
        mine.append((n, "url, path", paths, ours(rules, agents, paths)))
        blind = ClassicRobotsTxt.parse(body)
        mine.append((n, "no url", urls, ours(blind, agents, urls)))
    for n, (robots, agents, urls, text) in enumerate(synthetic, len(jobs)):
        mine.append((n, "url", urls, ours(parse_classic(text, robots), agents, urls)))
        blind = ClassicRobotsTxt.parse(text)
        mine.append((n, "no url", urls, ours(blind, agents, urls)))
        paths = ours(blind, agents, _SYN_PATHS)
        mine.append((n + len(synthetic), "no url, path", _SYN_PATHS, paths))
    thread.join()
    perl = result[0]

    mismatches = []
    counts: dict[str, list[int]] = {}
    for n, reading, asked, lines in mine:
        robots, agents, urls, _text = everything[n]
        kind = "corpus" if n < len(jobs) else "synthetic"
        count = counts.setdefault(f"{kind}, {reading}", [0, 0])
        for agent, line, theirs in zip(agents, lines, perl[n], strict=True):
            assert "E" not in theirs, (robots, agent)
            count[0] += 1
            count[1] += len(line)
            for i, v in enumerate(line):
                if v != theirs[i]:
                    mismatches.append((reading, robots, agent, asked[i], theirs[i], v))
    print(f"\n{len(jobs)} corpus files, {len(synthetic)} synthetic files")
    for what, (pairs, verdicts) in counts.items():
        print(f"{what}: {pairs} (file, agent) pairs, {verdicts} verdicts")
    for m in mismatches[:10]:
        print("mismatch ({}): file {!r} agent {!r} asked {!r} perl {} ours {}".format(*m))
    assert not mismatches, f"{len(mismatches)} verdicts differ from WWW::RobotRules"


@pytest.mark.slow
@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"no robots.txt corpus at {CORPUS}")
def test_deliberate_departures_bom_and_size_cap() -> None:
    """The two ways the classic dialect departs from an LWP robot on purpose.

    (docs/dialects.md.)  The differential test above hands Perl robotgate's
    decoded text, so these two never show there; here Perl reads the file as
    LWP would, whole and with its BOM.
    """
    # A UTF-8 BOM is dropped.  To LWP, "\ufeffUser-agent: truveo" is no
    # User-agent line, so the "Disallow: /" under it counts as '*' and shuts
    # every robot out of www.mlb.com.
    mlb = (CORPUS / "www.mlb.com").read_bytes()
    mlb_robots = "http://www.mlb.com/robots.txt"
    assert mlb[:3] == b"\xef\xbb\xbf"
    assert RobotsTxt.parse(mlb, dialect="classic", url=mlb_robots).allowed(
        "http://www.mlb.com/", FOO
    )
    # Only the first 500 KiB are read: docs.oracle.com's last Disallow lines
    # lie past the cap.
    oracle = (CORPUS / "docs.oracle.com").read_bytes()
    oracle_robots = "http://docs.oracle.com/robots.txt"
    assert len(oracle) > DEFAULT_MAX_BYTES
    last = _DISALLOW_VALUE.findall(oracle.decode("utf-8"))[-1].strip()
    late = "http://docs.oracle.com" + last + "x"
    assert oracle.find(("Disallow: " + last).encode()) > DEFAULT_MAX_BYTES
    assert RobotsTxt.parse(oracle, dialect="classic", url=oracle_robots).allowed(late, FOO)
    if PERL_MISSING is None:
        jobs: list[Job] = [
            (mlb_robots, [FOO], ["http://www.mlb.com/"], mlb.decode("utf-8")),
            (mlb_robots, [FOO], ["http://www.mlb.com/"], body_text(mlb, DEFAULT_MAX_BYTES)),
            (oracle_robots, [FOO], [late], oracle.decode("utf-8")),
            (oracle_robots, [FOO], [late], body_text(oracle, DEFAULT_MAX_BYTES)),
        ]
        # Disallowed as LWP reads the files, allowed as robotgate reads them.
        assert perl_verdicts(jobs) == [["0"], ["1"], ["0"], ["1"]]
