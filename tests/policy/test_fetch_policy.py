"""The robots.txt fetch policy (RFC 9309 2.3, 2.4): pure functions, no I/O."""

from __future__ import annotations

import email.utils

import pytest

from robotgate.policy.fetch import (
    FetchPolicy,
    entry_for_error,
    entry_for_not_modified,
    entry_for_redirect_failure,
    entry_for_response,
    outcome_decision,
    parse_retry_after,
)
from robotgate.records import Outcome

NOW = 1_700_000_000.0
ORIGIN = "http://a.example"
P = FetchPolicy()


def test_2xx_keeps_body_and_validators() -> None:
    e = entry_for_response(ORIGIN, 200, {"ETag": '"x"', "Last-Modified": "yesterday",
                                    "Content-Type": "text/plain"}, b"User-agent: *", NOW, P)
    assert e.outcome == Outcome.OK and e.body == b"User-agent: *"
    assert (e.etag, e.last_modified, e.content_type) == ('"x"', "yesterday", "text/plain")
    assert e.fresh_until == NOW + 24 * 3600 and e.good_at == NOW
    assert outcome_decision(e) is None  # the rules decide


@pytest.mark.parametrize("status", [400, 401, 403, 404, 410, 451])
def test_4xx_is_unavailable_allow_all(status: int) -> None:
    e = entry_for_response(ORIGIN, status, {}, None, NOW, P)
    assert e.outcome == Outcome.UNAVAILABLE
    d = outcome_decision(e)
    assert d is not None and d.allowed and d.outcome == "unavailable"
    assert f"robots.txt answered {status}" in d.reason and "everything is allowed" in d.reason


@pytest.mark.parametrize("status", [401, 403])
def test_classic_convention_401_403_disallow_all(status: int) -> None:
    e = entry_for_response(ORIGIN, status, {}, None, NOW, FetchPolicy(forbidden_disallows_all=True))
    d = outcome_decision(e)
    assert e.outcome == Outcome.FORBIDDEN and d is not None and not d.allowed
    # 404 stays "allow all" under the classic convention
    e404 = entry_for_response(ORIGIN, 404, {}, None, NOW, FetchPolicy(forbidden_disallows_all=True))
    assert e404.outcome == Outcome.UNAVAILABLE


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504, 599])
def test_429_and_5xx_are_unreachable_disallow_all(status: int) -> None:
    e = entry_for_response(ORIGIN, status, {}, None, NOW, P)
    d = outcome_decision(e)
    assert e.outcome == Outcome.UNREACHABLE and e.failures == 1
    assert d is not None and not d.allowed
    assert d.reason.startswith(f"robots.txt answered {status}")
    assert "fully disallowed" in d.reason


def test_unreachable_backs_off_exponentially_capped() -> None:
    policy = FetchPolicy(retry_base=2.0, retry_cap=20.0)
    e = None
    waits = []
    for _ in range(6):
        e = entry_for_error(ORIGIN, "boom", NOW, policy, e)
        waits.append(e.fresh_until - NOW)
    assert waits == [2.0, 4.0, 8.0, 16.0, 20.0, 20.0]
    assert e is not None and e.failures == 6


def test_retry_after_sets_the_retry_time() -> None:
    e = entry_for_response(ORIGIN, 503, {"Retry-After": "7"}, None, NOW, P)
    assert e.fresh_until == NOW + 7


def test_good_copy_stands_in_while_unreachable_up_to_limit() -> None:
    policy = FetchPolicy(stale_limit=100.0)
    good = entry_for_response(ORIGIN, 200, {}, b"User-agent: *\nDisallow: /x", NOW, policy)
    later = entry_for_error(ORIGIN, "robots.txt answered 503", NOW + 50, policy, good)
    assert later.outcome == Outcome.OK and later.body == good.body and later.failures == 1
    assert "using the copy fetched at" in later.detail
    assert outcome_decision(later) is None
    too_late = entry_for_error(ORIGIN, "robots.txt answered 503", NOW + 500, policy, later)
    assert too_late.outcome == Outcome.UNREACHABLE and too_late.body is None
    assert too_late.failures == 2


def test_freshness_shortened_by_max_age_never_lengthened() -> None:
    cc = {"Cache-Control": "public, max-age=90"}
    assert entry_for_response(ORIGIN, 200, cc, b"", NOW, P).fresh_until == NOW + 90
    long = entry_for_response(ORIGIN, 200, {"Cache-Control": "max-age=999999999"}, b"", NOW, P)
    assert long.fresh_until == NOW + 24 * 3600
    no_cache = entry_for_response(ORIGIN, 200, {"Cache-Control": "no-cache"}, b"", NOW, P)
    assert no_cache.fresh_until == NOW + 60  # min_freshness: not before every page
    raw = FetchPolicy(min_freshness=0)
    no_floor = entry_for_response(ORIGIN, 200, {"Cache-Control": "no-cache"}, b"", NOW, raw)
    assert no_floor.fresh_until == NOW


def test_freshness_from_expires() -> None:
    expires = email.utils.formatdate(NOW + 300, usegmt=True)
    e = entry_for_response(ORIGIN, 200, {"Expires": expires}, b"", NOW, P)
    assert e.fresh_until == pytest.approx(NOW + 300)
    raw = FetchPolicy(min_freshness=0)
    bad = entry_for_response(ORIGIN, 200, {"Expires": "0"}, b"", NOW, raw)
    assert bad.fresh_until == NOW


def test_304_renews_without_body() -> None:
    good = entry_for_response(ORIGIN, 200, {"ETag": '"v1"'}, b"rules", NOW, P)
    renewed = entry_for_not_modified(good, {}, NOW + 100_000, P)
    assert renewed.body == b"rules" and renewed.etag == '"v1"'
    assert renewed.fresh_until == NOW + 100_000 + 24 * 3600 and renewed.good_at == NOW + 100_000


def test_redirect_failure_is_unavailable() -> None:
    e = entry_for_redirect_failure(ORIGIN, "robots.txt redirected more than 5 times", NOW, P)
    d = outcome_decision(e)
    assert d is not None and d.allowed and "more than 5" in d.reason


def test_parse_retry_after() -> None:
    assert parse_retry_after("0", NOW) == 0.0
    assert parse_retry_after(" 30 ", NOW) == 30.0
    assert parse_retry_after(email.utils.formatdate(NOW + 90, usegmt=True), NOW) == 90.0
    assert parse_retry_after(email.utils.formatdate(NOW - 90, usegmt=True), NOW) == 0.0
    for bad in (None, "", "-5", "later", "1.5"):
        assert parse_retry_after(bad, NOW) is None
