"""What one origin's robots.txt entry means (policy/site.py): rules, verdict, interval."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from robotgate import RobotsTxt
from robotgate.policy.fetch import FetchPolicy
from robotgate.policy.pacing import Pacing
from robotgate.policy.site import SKIPPED, Interpretation, ParsedBodies, interpret
from robotgate.records import SMALL_BODY, Outcome, RobotsEntry
from tests.support import entries

AGENT = "SiteBot/1.0"
ORIGIN = "http://site.example"
NOW = 1_700_000_000.0


def ok_entry(body: bytes, content_type: str | None = "text/plain") -> RobotsEntry:
    return entries.ok_entry(ORIGIN, body, now=NOW, content_type=content_type)


def how(**pacing: object) -> Interpretation:
    return Interpretation(AGENT, pacing=Pacing(**pacing))  # type: ignore[arg-type]


def test_rules_decide_per_url_and_a_large_body_is_dropped() -> None:
    small = ok_entry(b"User-agent: *\nDisallow: /private\n")
    assert interpret(small, how()).entry is small  # small: kept, no copy made
    site = interpret(ok_entry(b"User-agent: *\nDisallow: /private\n" + b"#" * SMALL_BODY), how())
    assert site.verdict is None and site.rules is not None
    assert site.entry.body is None  # the store keeps the body, not the cache
    assert site.fresh_until == NOW + 3600
    assert site.allowed("/public", AGENT) and not site.allowed("/private/a", AGENT)
    d = site.decide("/private/a", AGENT)
    assert not d.allowed and d.rule is not None and d.rule.line == 2


def test_decide_accepts_an_absolute_url_of_the_origin() -> None:
    site = interpret(ok_entry(b"User-agent: *\nDisallow: /private\n"), how())
    assert not site.allowed(ORIGIN + "/private", AGENT)


def test_interval_is_delay_or_crawl_delay() -> None:
    assert interpret(ok_entry(b"User-agent: *\nDisallow:\n"), how(delay=1.5)).interval == 1.5
    site = interpret(ok_entry(b"User-agent: *\nCrawl-delay: 4\n"), how(delay=1.5))
    assert site.interval == 4.0 and site.verdict is None
    site = interpret(ok_entry(b"User-agent: *\nRequest-rate: 1/8\n"), how(delay=1.5))
    assert site.interval == 8.0


def test_crawl_delay_is_per_agent() -> None:
    body = (b"User-agent: SiteBot\nCrawl-delay: 9\nDisallow: /a\n\n"
            b"User-agent: *\nCrawl-delay: 2\nDisallow: /b\n")
    assert interpret(ok_entry(body), how(delay=0.0)).interval == 9.0
    other = Interpretation("OtherBot", pacing=Pacing(delay=0.0))
    assert interpret(ok_entry(body), other).interval == 2.0


def test_crawl_delay_ignored_when_not_respected() -> None:
    site = interpret(ok_entry(b"User-agent: *\nCrawl-delay: 30\n"),
                     how(delay=1.0, respect_crawl_delay=False))
    assert site.interval == 1.0 and site.verdict is None


@pytest.mark.parametrize("line", ["Crawl-delay: 120", "Request-rate: 1/120"])
def test_long_delay_skips_the_origin_with_a_reason(line: str) -> None:
    body = f"User-agent: *\n{line}\nDisallow: /x\n".encode()
    site = interpret(ok_entry(body), how(delay=1.0, max_crawl_delay=60.0))
    assert site.verdict is not None
    d = site.decide("/anything", AGENT)
    assert not d.allowed and d.outcome == SKIPPED
    assert "120 s exceeds max_crawl_delay 60 s" in d.reason
    assert not site.allowed("/anything", AGENT)
    assert site.interval != 60.0  # never quietly shortened to the cap


def test_long_delay_is_honoured_in_full_when_asked() -> None:
    body = b"User-agent: *\nCrawl-delay: 120\nDisallow: /x\n"
    site = interpret(ok_entry(body), how(max_crawl_delay=60.0, on_long_delay="honour"))
    assert site.verdict is None and site.interval == 120.0
    assert site.allowed("/y", AGENT) and not site.allowed("/x", AGENT)


def test_crawl_delay_three_with_max_two_is_never_two() -> None:
    site = interpret(ok_entry(b"User-agent: *\nCrawl-delay: 3\n"), how(max_crawl_delay=2.0))
    assert site.interval != 2.0 and not site.allowed("/", AGENT)
    site = interpret(ok_entry(b"User-agent: *\nCrawl-delay: 3\n"),
                     how(max_crawl_delay=2.0, on_long_delay="honour"))
    assert site.interval == 3.0


@pytest.mark.parametrize(("outcome", "allowed"), [
    (Outcome.UNAVAILABLE, True), (Outcome.UNREACHABLE, False), (Outcome.FORBIDDEN, False)])
def test_fetch_outcome_gives_the_verdict(outcome: str, allowed: bool) -> None:
    entry = RobotsEntry(ORIGIN, outcome, NOW, NOW + 60, status=503,
                        detail="robots.txt answered 503")
    site = interpret(entry, how(delay=2.0))
    assert site.rules is None and site.interval == 2.0
    d = site.decide("/x", AGENT)
    assert d.allowed is allowed and d.outcome == outcome
    assert site.allowed("/x", AGENT) is allowed


def test_given_rules_stand_in_for_a_body_the_store_forgot() -> None:
    rules = RobotsTxt.parse("User-agent: *\nDisallow: /kept\nCrawl-delay: 3\n")
    entry = ok_entry(b"")
    entry.body = None
    site = interpret(entry, how(delay=1.0), rules=rules)
    assert site.rules is rules and site.interval == 3.0
    assert not site.allowed("/kept", AGENT)


def test_the_charset_of_the_content_type_is_used() -> None:
    body = "User-agent: *\nDisallow: /café\n".encode("latin-1")
    site = interpret(ok_entry(body, "text/plain; charset=iso-8859-1"), how())
    assert not site.allowed("/caf%C3%A9", AGENT)


def test_max_bytes_of_the_fetch_policy_caps_parsing() -> None:
    body = b"User-agent: *\nDisallow: /early\n" + b"#" * 2000 + b"\nDisallow: /late\n"
    site = interpret(ok_entry(body), Interpretation(AGENT, fetch=FetchPolicy(max_bytes=1000)))
    assert not site.allowed("/early", AGENT) and site.allowed("/late", AGENT)


@pytest.mark.parametrize(("body", "content_type"), [
    (b"User-agent: *\nDisallow: /\n", "application/octet-stream"),
    (b"User-agent: *\nDisallow: /\n", None),
    (b"User-agent: *\nAllow: /a\n", "text/plain"),  # no Disallow line at all
])
def test_lwp_conventions_read_an_unusable_body_as_empty(body: bytes,
                                                        content_type: str | None) -> None:
    site = interpret(ok_entry(body, content_type),
                     Interpretation(AGENT, dialect="classic", lwp_conventions=True))
    assert site.allowed("/x", AGENT)


def test_lwp_conventions_keep_a_text_body_with_disallow() -> None:
    strict = interpret(ok_entry(b"User-agent: *\nDisallow: /\n", "text/plain"),
                       Interpretation(AGENT, dialect="classic", lwp_conventions=True))
    assert not strict.allowed("/x", AGENT)


def test_a_sites_rules_are_a_value_nothing_writes() -> None:
    site = interpret(ok_entry(b""), how())
    assert not hasattr(site, "__dict__")  # no field but those it is made with
    for name in ("host", "key", "used"):
        assert not hasattr(site, name)  # the cache's own record keeps those


def test_bytes_that_do_not_decode_are_read_as_each_dialect_reads_them() -> None:
    # RFC 9309: escaped as Google's reference does ("/caf%E9"); classic: replaced.
    entry = ok_entry(b"User-agent: *\nDisallow: /caf\xe9\n")
    assert not interpret(entry, how()).allowed("/caf%E9", AGENT)
    classic = Interpretation(AGENT, dialect="classic")
    assert interpret(entry, classic).allowed("/caf%E9", AGENT)


# -- ParsedBodies: sites that serve the same bytes share one parse -------------------------


def entry_of(origin: str, body: bytes, content_type: str | None = "text/plain") -> RobotsEntry:
    return entries.ok_entry(origin, body, now=NOW, content_type=content_type)


def test_origins_serving_the_same_bytes_share_one_parse() -> None:
    bodies = ParsedBodies()
    body = b"User-agent: *\nDisallow: /private\n"
    a = interpret(entry_of("http://a.example", body), how(), bodies=bodies)
    b = interpret(entry_of("https://b.example:8443", body), how(), bodies=bodies)
    assert a.rules is not None and a.rules is b.rules and len(bodies) == 1
    # Each site still judges its own URLs, whichever origin asked last.
    for site, origin in ((a, "http://a.example"), (b, "https://b.example:8443"),
                         (a, "http://a.example")):
        assert not site.allowed(origin + "/private/x", AGENT)
        assert site.allowed(origin + "/public", AGENT)
        assert site.decide(origin + "/private/x", AGENT).rule is not None
    other = interpret(entry_of("http://c.example", body + b"Allow: /private/ok\n"), how(),
                      bodies=bodies)
    assert other.rules is not a.rules and len(bodies) == 2


@pytest.mark.parametrize(("asked", "skipped", "interval"), [(5, False, 5.0), (90, True, 1.0)])
def test_sites_sharing_a_parse_share_what_its_crawl_delay_means(
        asked: int, skipped: bool, interval: float) -> None:
    # The pacing a file asks for is worked out once for the sites that serve it:
    # each gets the same interval, or the same skip past max_crawl_delay.
    bodies = ParsedBodies()
    body = f"User-agent: *\nCrawl-delay: {asked}\nDisallow: /private\n".encode()
    sites = [interpret(entry_of(o, body), how(), bodies=bodies)
             for o in ("http://a.example", "http://b.example", "http://a.example")]
    alone = interpret(entry_of("http://c.example", body), how())
    for site in [*sites, alone]:
        assert site.interval == interval
        assert (site.verdict is not None and site.verdict.outcome == SKIPPED) is skipped
    assert sites[0].rules is sites[1].rules and len(bodies) == 1


def test_the_charset_is_part_of_what_is_shared() -> None:
    bodies = ParsedBodies()
    body = "User-agent: *\nDisallow: /caf\u00e9\n".encode("latin-1")
    latin = interpret(entry_of("http://a.example", body, "text/plain; charset=iso-8859-1"),
                      how(), bodies=bodies)
    utf8 = interpret(entry_of("http://b.example", body, "text/plain; charset=utf-8"), how(),
                     bodies=bodies)
    assert latin.rules is not utf8.rules
    assert not latin.allowed("/caf%C3%A9", AGENT)  # read as é, matched as UTF-8
    assert utf8.allowed("/caf%C3%A9", AGENT) and not utf8.allowed("/caf%E9", AGENT)


def test_parsed_bodies_stay_within_their_bounds() -> None:
    bodies = ParsedBodies(max_entries=2, max_body=64)

    def parse(origin: str, body: bytes) -> RobotsTxt:
        return bodies.parse(entry_of(origin, body), how())

    first, second = parse("http://a.example", b"Disallow: /0"), parse("http://a.example",
                                                                        b"Disallow: /1")
    assert parse("http://b.example", b"Disallow: /0") is first  # now the most recently read
    parse("http://a.example", b"Disallow: /2")  # the third: the least recently read goes
    assert len(bodies) == 2
    assert parse("http://c.example", b"Disallow: /0") is first
    assert parse("http://c.example", b"Disallow: /1") is not second
    big = b"User-agent: *\nDisallow: /x\n" + b"#" * 64  # past max_body: parsed each time
    assert parse("http://a.example", big) is not parse("http://b.example", big)
    assert len(bodies) == 2
    none = ParsedBodies(max_entries=0)  # a cache of no sites keeps no bodies either
    body = entry_of("http://a.example", b"Disallow: /0")
    assert none.parse(body, how()) is not none.parse(body, how()) and len(none) == 0


def test_a_dialect_whose_rules_depend_on_the_url_is_never_shared() -> None:
    bodies = ParsedBodies()
    classic = Interpretation(AGENT, dialect="classic")
    body = b"User-agent: *\nDisallow: /private\n"
    a = interpret(entry_of("http://a.example", body), classic, bodies=bodies)
    b = interpret(entry_of("http://b.example", body), classic, bodies=bodies)
    assert a.rules is not b.rules and len(bodies) == 0
    assert not a.allowed("http://a.example/private", AGENT)


_ORIGINS = ("http://a.example", "http://a.example:8080", "https://a.example.com",
            "http://b.example")
_LINES = st.sampled_from(["Disallow: /", "Disallow: /private", "Allow: /private/ok",
                          "Disallow: /*.pdf$", "Allow: /$", "Disallow: /a%2Fb", "Disallow: /p?q=1",
                          "Crawl-delay: 2"])
_PATHS = st.sampled_from(["", "/", "/private", "/private/ok/x", "/x.pdf", "/x.pdf?a", "/a/b",
                          "/a%2fb", "/p?q=1", "/./private", "/%70rivate", "//private"])


@pytest.mark.slow
@given(lines=st.lists(_LINES, max_size=6),
       asks=st.lists(st.tuples(st.sampled_from(_ORIGINS), _PATHS, st.booleans(), st.booleans()),
                     max_size=30))
def test_shared_rules_answer_every_origin_as_its_own_parse_would(
        lines: list[str], asks: list[tuple[str, str, bool, bool]]) -> None:
    body = ("User-agent: *\n" + "\n".join(lines) + "\n").encode()
    bodies = ParsedBodies()
    shared = {o: interpret(entry_of(o, body), how(), bodies=bodies) for o in _ORIGINS}
    alone = {o: interpret(entry_of(o, body), how()) for o in _ORIGINS}
    for origin, path, whole, why in asks:  # origins interleaved: the rules' origin memo turns over
        url = origin + path if whole or not path.startswith("/") else path
        if why:
            assert shared[origin].decide(url, AGENT) == alone[origin].decide(url, AGENT), url
        else:
            assert shared[origin].allowed(url, AGENT) == alone[origin].allowed(url, AGENT), url
