"""The robots.txt fetch policy (RFC 9309 2.3, 2.4): pure functions, no I/O."""

from __future__ import annotations

import email.utils
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


@pytest.mark.parametrize("seconds", [math.inf, math.nan, 0.0, -1.0])
def test_a_fetch_must_have_a_finite_timeout(seconds: float) -> None:
    # An endless robots.txt fetch would hold every page of the origin with it.
    with pytest.raises(ValueError, match="timeout must be a positive number"):
        FetchPolicy(timeout=seconds)


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
    past = email.utils.formatdate(NOW - 300, usegmt=True)
    expired = entry_for_response(ORIGIN, 200, {"Expires": past}, b"", NOW, raw)
    assert expired.fresh_until == NOW


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


# -- hostile headers (issue 12, items 1 and 4): every value gets an answer, none raises ------

HUGE_YEAR = "Mon, 01 Jan 99999999999999999999 00:00:00 GMT"


@pytest.mark.parametrize(
    "value",
    [
        "²",  # str.isdigit() says yes, float() says no
        "１２０",  # fullwidth digits: not delta-seconds
        "٣",
        HUGE_YEAR,  # OverflowError inside the date parser
        "Mon, 01 Jan 2020 00:00:00 +9999999999999999999999",
        "Mon, 01 Jan 10000 00:00:00 GMT",
        "Fri, 31 Dec 9999 23:59:59 GMT",  # parses, but absurdly far
        "-5",
        "-0",
        "9" * 40,
        "9" * 5000,  # int() refuses more than 4300 digits
        "nan",
        "inf",
        "1e3",
        "0x10",
        "1.5",
        "\x00",
        "\udcff",
    ],
)
def test_unparseable_retry_after_counts_as_none(value: str) -> None:
    assert parse_retry_after(value, NOW) is None


def test_retry_after_takes_only_ascii_digits_and_sane_values() -> None:
    assert parse_retry_after("0000120", NOW) == 120.0
    assert parse_retry_after("86400", NOW) == 86400.0
    assert parse_retry_after(str(2**31), NOW) == float(2**31)
    assert parse_retry_after(str(2**31 + 1), NOW) is None
    assert parse_retry_after(b"120", NOW) is None  # type: ignore[arg-type]


@pytest.mark.parametrize("value", ["²", HUGE_YEAR, "9" * 40, "nan"])
def test_unparseable_retry_after_backs_off_exponentially(value: str) -> None:
    # A 503 with nonsense in Retry-After: no exception, the usual back-off applies.
    e = entry_for_response(ORIGIN, 503, {"Retry-After": value}, None, NOW, P)
    assert e.outcome == Outcome.UNREACHABLE
    assert e.fresh_until == NOW + P.retry_delay(1)


@pytest.mark.parametrize(
    "expires",
    [
        HUGE_YEAR,
        "Mon, 01 Jan 2020 00:00:00 +9999999999999999999999",
        "Mon, 01 Jan 10000 00:00:00 GMT",
        "0",
        "-1",
        "yesterday",
        "Mon, 32 Jan 2020 00:00:00 GMT",
        "\udcff",
    ],
)
def test_unparseable_expires_counts_as_absent(expires: str) -> None:
    raw = FetchPolicy(min_freshness=0)
    e = entry_for_response(ORIGIN, 200, {"Expires": expires}, b"User-agent: *", NOW, raw)
    assert e.outcome == Outcome.OK
    assert e.fresh_until == NOW + raw.freshness


@pytest.mark.parametrize(
    "cache_control",
    ["max-age=" + "9" * 40, "max-age=" + "9" * 5000, "max-age=-1", "max-age=-0", "max-age=²",
     "max-age=١٢", "max-age=" + str(2**31 + 1)],
)
def test_unparseable_max_age_counts_as_absent(cache_control: str) -> None:
    # Absent: the Expires header (if any) decides, else our own freshness.
    expires = email.utils.formatdate(NOW + 300, usegmt=True)
    e = entry_for_response(
        ORIGIN, 200, {"Cache-Control": cache_control, "Expires": expires}, b"", NOW, P
    )
    assert e.fresh_until == pytest.approx(NOW + 300)
    alone = entry_for_response(ORIGIN, 200, {"Cache-Control": cache_control}, b"", NOW, P)
    assert alone.fresh_until == NOW + P.freshness


def test_headers_that_are_not_strings_are_ignored() -> None:
    headers = {"Cache-Control": b"max-age=5", "Expires": 7, "Retry-After": 3.0, "ETag": None,
               "Last-Modified": b"x", "Content-Type": ["text/plain"]}
    for status in (200, 304, 403, 404, 503):
        e = entry_for_response(ORIGIN, status, headers, b"", NOW, P)  # type: ignore[arg-type]
        assert e.fresh_until > NOW
    ok = entry_for_response(ORIGIN, 200, headers, b"", NOW, P)  # type: ignore[arg-type]
    assert (ok.etag, ok.last_modified, ok.content_type) == (None, None, None)
    renewed = entry_for_not_modified(ok, headers, NOW, P)  # type: ignore[arg-type]
    assert renewed.etag is None


def test_stored_header_values_are_storable_text() -> None:
    # aiohttp decodes header bytes with surrogateescape: such a str cannot be
    # encoded to UTF-8 (SQLite would refuse it), so it is made storable.
    headers = {"ETag": '"\udcff"', "Last-Modified": "\udce9t\u00e9", "Content-Type": "\ud800"}
    e = entry_for_response(ORIGIN, 200, headers, b"", NOW, P)
    for value in (e.etag, e.last_modified, e.content_type):
        assert value is not None
        value.encode("utf-8")
    # Validators longer than any server needs are not kept (nor sent back).
    long = entry_for_response(ORIGIN, 200, {"ETag": '"' + "x" * 100_000 + '"'}, b"", NOW, P)
    assert long.etag is None


def test_final_url_is_stored_without_password() -> None:
    e = entry_for_response(ORIGIN, 200, {}, b"", NOW, P,
                           final_url="http://user:secret@b.example/robots.txt")
    assert e.final_url is not None and "secret" not in e.final_url
    assert e.final_url.endswith("@b.example/robots.txt")
    f = entry_for_redirect_failure(ORIGIN, "loop", NOW, P, final_url="http://u:pw@c.example/x")
    assert f.final_url is not None and "pw" not in f.final_url


TEXT = st.text(alphabet=st.characters(blacklist_categories=()), max_size=60)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.one_of(TEXT, st.from_regex(r"[A-Za-z]{3}, \d{1,2} [A-Za-z]{3} -?\d{1,25} "
                                     r"\d{1,3}:\d{1,3}:\d{1,3} [A-Z+\-0-9]{1,25}", fullmatch=True)))
def test_header_parsing_never_raises(value: str) -> None:
    r = parse_retry_after(value, NOW)
    assert r is None or (math.isfinite(r) and 0 <= r <= 2**31)
    for name in ("Retry-After", "Expires", "Cache-Control", "ETag"):
        for status in (200, 403, 404, 429, 503):
            e = entry_for_response(ORIGIN, status, {name: value}, b"", NOW, P)
            assert math.isfinite(e.fresh_until) and e.fresh_until >= NOW
    e = entry_for_response(ORIGIN, 200, {"Cache-Control": f"max-age={value}"}, b"", NOW, P)
    assert NOW <= e.fresh_until <= NOW + P.freshness
