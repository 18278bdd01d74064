"""Verdicts (politeness/verdicts.py): robots.txt's answer for a URL, raised at once
when the origin is cached, and ``check``, the synchronous verdict; with fakes (no HTTP
client, a fake clock: tests/support/request_path.py)."""

from __future__ import annotations

import asyncio
import inspect

import pytest

from robotgate.decision import Decision
from robotgate.errors import Disallowed
from robotgate.policy.pacing import Pacing
from robotgate.policy.provenance import INPUT
from robotgate.policy.site import SiteRules
from robotgate.politeness.scheduler import Group
from robotgate.robots.rfc9309 import Rfc9309Rules, parse_rfc9309
from robotgate.robots.rules import RequestRate, RobotsTxt
from tests.support.clock import Clock
from tests.support.dialects import registered_dialect
from tests.support.request_path import (
    AGENT,
    ROBOTS,
    A,
    Transport,
    Wired,
    begun,
    build,
    pending,
    run,
    still_waiting,
    transport_of,
)

# -- robots.txt verdicts ------------------------------------------------------------------


async def test_disallowed_is_raised_at_once_when_cached() -> None:
    clock = Clock()
    parts = build(clock)
    await parts.verdicts.site(A)
    with pytest.raises(Disallowed) as info:
        begun(parts.requests.turn(A + "/private/x", INPUT))  # no await: raised by admit itself
    d = info.value.decision
    assert not d.allowed and d.rule is not None and d.rule.line == 2
    assert info.value.url == A + "/private/x"
    assert parts.verdicts.disallowed == 1
    group = parts.servers.scheduler.get("host:a.example")
    assert group is not None and group.active == 0 and group.busy == 0


async def test_disallowed_is_raised_by_the_awaitable_when_not_cached() -> None:
    clock = Clock()
    parts = build(clock)
    got = begun(parts.requests.turn(A + "/private/x", INPUT))
    assert inspect.isawaitable(got)
    with pytest.raises(Disallowed) as info:
        await asyncio.wait_for(got, 10)
    assert "Disallow: /private" in str(info.value)


async def test_disallowed_shows_no_password() -> None:
    clock = Clock()
    parts = build(clock)
    await parts.verdicts.site(A)
    with pytest.raises(Disallowed) as info:
        begun(parts.requests.turn("http://user:secret@a.example/private/x", INPUT))
    # What it says holds no password; its url is the caller's own, whole (docs/secrets.md).
    assert "secret" not in str(info.value) and "secret" not in repr(info.value)
    assert info.value.url == "http://user:secret@a.example/private/x"


@pytest.mark.slow
async def test_a_crawl_delay_beyond_the_limit_skips_the_origin_with_its_reason() -> None:
    clock = Clock()
    transport = Transport(clock, {A: b"User-agent: *\nCrawl-delay: 120\n"})
    parts = build(clock, transport=transport,
                      pacing=Pacing(delay=1.0, max_crawl_delay=60.0))
    got = begun(parts.requests.turn(A + "/x", INPUT))
    assert not isinstance(got, Group)
    with pytest.raises(Disallowed) as info:
        await asyncio.wait_for(got, 10)
    assert "Crawl-delay 120 s exceeds max_crawl_delay 60 s" in info.value.decision.reason


async def test_crawl_delay_paces_the_origin() -> None:
    clock = Clock()
    transport = Transport(clock, {A: b"User-agent: *\nCrawl-delay: 5\n"})
    parts = build(clock, transport=transport, delay=1.0)
    await parts.verdicts.site(A)
    clock.advance(5.0)
    await run(parts, A + "/1")
    clock.advance(4.9)
    got = begun(parts.requests.turn(A + "/2", INPUT))
    assert not isinstance(got, Group)
    async with pending(got) as task:
        assert await still_waiting(task)
        clock.advance(0.1)
        parts.servers.done(await asyncio.wait_for(task, 10))


async def test_recheck_after_n_visits_refetches_robots_txt() -> None:
    clock = Clock()
    transport = Transport(clock)
    parts = build(clock, transport=transport, delay=0.0, recheck_visits=3)
    for i in range(3):
        await run(parts, f"{A}/{i}")
    assert len(transport.requests) == 1
    await run(parts, A + "/3")
    assert len(transport.requests) == 2
    group = parts.servers.scheduler.get("host:a.example")
    assert group is not None and group.state.visits_since_check == 1


# -- check: the synchronous verdict ---------------------------------------------------------

TRICKY = ROBOTS + b"Allow: /private/ok\n"
URLS = ["/private", "/private/ok", "/public", "/a/../private/x", "/%2e%2e/private",
        "/a/%2E%2E/private", "//private", "/private?x=1", "", "?q=/private", "/PRIVATE",
        "/robots.txt", "/pri%76ate"]


async def test_check_is_none_until_robots_txt_is_cached() -> None:
    parts = build(Clock())
    assert parts.verdicts.check(A + "/private") is None
    assert transport_of(parts).requests == []  # check never fetches


@pytest.mark.parametrize("dialect", ["rfc9309", "classic"])  # classic: rules see paths only
@pytest.mark.parametrize("rest", URLS)
async def test_check_answers_as_decide_on_the_slow_and_the_fast_path(rest: str,
                                                                       dialect: str) -> None:
    parts = build(Clock(), transport=None, dialect=dialect)
    transport_of(parts).bodies[A] = TRICKY
    site = await parts.verdicts.site(A)
    expected = site.decide(parts.verdicts.cached(A + rest)[1], AGENT)  # type: ignore[index]
    first = parts.verdicts.check(A + rest)  # not yet learnt: the slow path learns it
    again = parts.verdicts.check(A + rest)  # the prefix map
    assert first == again == expected
    assert again is not None and again.allowed == site.allowed(A + rest, AGENT)


class _Resolving(RobotsTxt):
    """A third dialect that resolves dot segments itself (RFC 9309's rules, wrapped)."""

    __slots__ = ("inner",)
    DIALECT = "test-resolving"
    RESOLVES_DOT_SEGMENTS = True

    def __init__(self, inner: Rfc9309Rules) -> None:
        self.inner = inner

    def allowed(self, url: str, user_agent: str) -> bool:
        return self.inner.allowed(url, user_agent)

    def decide(self, url: str, user_agent: str) -> Decision:
        return self.inner.decide(url, user_agent)

    def crawl_delay(self, user_agent: str) -> float | None:
        return self.inner.crawl_delay(user_agent)

    def request_rate(self, user_agent: str) -> RequestRate | None:
        return self.inner.request_rate(user_agent)

    @property
    def sitemaps(self) -> list[str]:
        return self.inner.sitemaps

    @property
    def agents(self) -> list[str]:
        return self.inner.agents


async def test_check_answers_for_another_dialect_that_resolves_dot_segments() -> None:
    # Only RFC 9309's rules are handed URLs as written; another dialect gets the path the
    # client sends, and its verdicts stay those of its own decide().
    with registered_dialect("test-resolving", lambda text, url: _Resolving(parse_rfc9309(text)),
                            _Resolving):
        parts = build(Clock(), transport=None, dialect="test-resolving")
        transport_of(parts).bodies[A] = TRICKY
        site = await parts.verdicts.site(A)
        assert isinstance(site.rules, _Resolving)
        for rest in URLS:
            expected = site.rules.decide(parts.verdicts.cached(A + rest)[1], AGENT)  # type: ignore[index]
            for _ in range(2):  # the slow path, then the prefix map
                assert parts.verdicts.check(A + rest) == expected, rest
        d = parts.verdicts.check(A + "/a/%2E%2E/private")
        assert d is not None and not d.allowed and d.line == 2


@pytest.mark.parametrize(("status", "allowed"), [(503, False), (404, True)])
async def test_check_answers_a_whole_site_verdict(status: int, allowed: bool) -> None:
    parts = build(Clock())
    transport_of(parts).statuses[A] = status
    site = await parts.verdicts.site(A)
    assert site.verdict is not None and site.rules is None
    for _ in range(2):  # learnt on the slow path, then the prefix map
        for rest in ("/private", "/a/../private", "/public", "/robots.txt"):
            d = parts.verdicts.check(A + rest)
            assert d is site.verdict and d.allowed is allowed, rest


async def test_check_reads_the_path_the_client_sends() -> None:
    parts = build(Clock())
    await parts.verdicts.site(A)
    parts.verdicts.check(A + "/")
    for rest in ("/a/../private/x", "/%2e%2e/private", "/public/%2E%2E/private"):
        d = parts.verdicts.check(A + rest)
        assert d is not None and not d.allowed and d.line == 2, rest
    d = parts.verdicts.check(A + "/private/../public")
    assert d is not None and d.allowed


async def test_check_never_answers_for_another_origin_sharing_a_prefix() -> None:
    # check() remembers the last origin it answered for: a look-alike must not pass as it.
    evil = A + ".evil"
    parts = build(Clock(), delay=0.0)
    transport_of(parts).bodies[evil] = b"User-agent: *\nDisallow: /public\n"
    await parts.verdicts.site(A)
    await parts.verdicts.site(evil)
    for _ in range(2):
        for url, allowed in ((A + "/public", True), (evil + "/public", False),
                             (A + "/private", False), (A, True), (evil + "/private", True),
                             (A + ":80/public", True)):  # the same origin, written out
            d = parts.verdicts.check(url)
            assert (d.allowed if d is not None else None) is allowed, url


async def test_check_is_none_once_stale_or_due_for_a_recheck() -> None:
    clock = Clock()
    parts = build(clock, delay=0.0, recheck_visits=2)
    site = await parts.verdicts.site(A)
    assert parts.verdicts.check(A + "/x") is not None
    await run(parts, A + "/1")
    await run(parts, A + "/2")
    assert parts.verdicts.check(A + "/x") is None  # two visits: robots.txt is asked again first
    held = parts.verdicts.cache.known(A)
    assert held is not None and held.site is site
    held.host.visits_since_check = 0  # as the scheduler's recheck would
    assert parts.verdicts.check(A + "/x") is not None
    _go_stale(parts, A)
    assert parts.verdicts.check(A + "/x") is None


def _go_stale(parts: Wired, origin: str) -> None:
    """Play the cache replacing ``origin``'s rules by a copy that is no longer fresh."""
    held = parts.verdicts.cache.known(origin)
    assert held is not None
    old = held.site
    held.site = SiteRules(old.entry.copy(fresh_until=0.0), old.rules, old.verdict, old.interval)


async def test_check_answers_from_the_newer_rules_after_a_refetch() -> None:
    clock = Clock()
    transport = Transport(clock)
    parts = build(clock, transport=transport, delay=0.0)
    first = await parts.verdicts.site(A)
    assert parts.verdicts.check(A + "/x") == first.decide("/x", AGENT)  # learnt and remembered
    transport.bodies[A] = b"User-agent: *\nDisallow: /x\n"
    _go_stale(parts, A)  # stale, here and in the store: the next ask fetches it again
    await parts.servers.store.save_robots(first.entry.copy(fresh_until=0.0))
    second = await asyncio.wait_for(parts.verdicts.site(A), 10)
    assert second is not first and len(transport.requests) == 2
    for _ in range(2):  # the stale copy is not what check() keeps answering from
        d = parts.verdicts.check(A + "/x")
        assert d is not None and not d.allowed and d.line == 2
