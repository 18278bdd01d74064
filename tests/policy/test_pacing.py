"""Pacing arithmetic (policy/pacing.py): intervals asked by robots.txt, AIMD back-off."""

from __future__ import annotations

import re
from typing import Any

import pytest

from robotgate import RobotsTxt
from robotgate.policy.pacing import Backoff, Pacing

AGENT = "PaceBot/1.0"


def rules(text: str) -> RobotsTxt:
    return RobotsTxt.parse(text)


# -- what robots.txt asks -----------------------------------------------------------------


def test_asked_is_none_without_rules_or_ask() -> None:
    policy = Pacing()
    assert policy.asked(None, AGENT) is None
    assert policy.asked(rules("User-agent: *\nDisallow: /x\n"), AGENT) is None


def test_asked_takes_the_larger_of_crawl_delay_and_request_rate() -> None:
    policy = Pacing()
    assert policy.asked(rules("User-agent: *\nCrawl-delay: 5\n"), AGENT) == 5.0
    assert policy.asked(rules("User-agent: *\nRequest-rate: 1/10\n"), AGENT) == 10.0
    both = rules("User-agent: *\nCrawl-delay: 5\nRequest-rate: 1/10\n")
    assert policy.asked(both, AGENT) == 10.0
    both = rules("User-agent: *\nCrawl-delay: 20\nRequest-rate: 1/10\n")
    assert policy.asked(both, AGENT) == 20.0


def test_asked_is_ignored_when_crawl_delay_is_not_respected() -> None:
    policy = Pacing(respect_crawl_delay=False)
    assert policy.asked(rules("User-agent: *\nCrawl-delay: 5\n"), AGENT) is None


def test_interval_is_delay_raised_to_the_ask() -> None:
    policy = Pacing(delay=2.0)
    assert policy.interval_for(None) == 2.0
    assert policy.interval_for(0.5) == 2.0  # an ask never lowers the operator's delay
    assert policy.interval_for(7.0) == 7.0


def test_long_delay_is_never_silently_cut() -> None:
    skip = Pacing(max_crawl_delay=60.0)
    assert skip.too_long(None) is None
    assert skip.too_long(60.0) is None  # at the limit: honoured
    assert skip.too_long(120.0) == "Crawl-delay 120 s exceeds max_crawl_delay 60 s"
    honour = Pacing(max_crawl_delay=60.0, on_long_delay="honour")
    assert honour.too_long(120.0) is None
    assert honour.interval_for(120.0) == 120.0  # in full, not 60


# -- adaptive back-off (AIMD) ----------------------------------------------------------------


def test_widen_doubles_up_to_max_backoff() -> None:
    policy = Pacing(delay=0.1, backoff_base=0.5, max_backoff=3.0)
    b = Backoff()
    assert [b.widen(policy, 0.1) for _ in range(5)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    assert b.failures == 5
    assert b.gap(policy, 0.1) == 3.0


def test_first_429_widens_the_gap_whatever_the_delay() -> None:
    # With delay >= backoff_base (the defaults), the first 429 must still widen the gap.
    policy = Pacing(delay=1.0)
    b = Backoff()
    assert b.gap(policy, 1.0) == 1.0
    assert b.widen(policy, 1.0) == 2.0
    assert b.gap(policy, 1.0) == 2.0
    assert b.widen(policy, 1.0) == 4.0


def test_narrow_takes_one_step_of_the_peak_per_success() -> None:
    policy = Pacing(delay=0.1, backoff_base=0.5, backoff_recovery=4)
    b = Backoff()
    b.widen(policy, 0.1)
    b.widen(policy, 0.1)  # peak 1.0: each success takes 0.25 off
    seen = []
    for _ in range(5):
        b.narrow(policy)
        seen.append(b.extra)
    assert seen == [0.75, 0.5, 0.25, 0.0, 0.0]
    assert b.failures == 0
    assert b.gap(policy, 0.1) == 0.1  # back to the configured interval


def test_narrow_is_slow_so_a_single_success_does_not_reset() -> None:
    # The bug of issue 14: each success reset the back-off, so the gate alternated.
    policy = Pacing(delay=0.1)
    b = Backoff()
    for _ in range(3):
        b.widen(policy, 0.1)
    peak = b.extra
    b.narrow(policy)
    assert b.extra == pytest.approx(peak * (1 - 1 / policy.backoff_recovery))


def test_widen_after_partial_recovery_doubles_from_where_it_is() -> None:
    policy = Pacing(delay=0.1, backoff_base=0.5, backoff_recovery=2, max_backoff=100)
    b = Backoff()
    b.widen(policy, 0.1)
    b.widen(policy, 0.1)
    b.widen(policy, 0.1)  # 2.0
    b.narrow(policy)  # 1.0
    assert b.widen(policy, 0.1) == 2.0
    assert b.peak == 2.0


def test_gap_is_the_larger_of_interval_and_backoff_plus_margin() -> None:
    policy = Pacing(delay=1.0, margin=0.25)
    b = Backoff()
    assert b.gap(policy, 1.0) == 1.25
    b.extra = 4.0
    assert b.gap(policy, 1.0) == 4.25
    assert b.gap(policy, 9.0) == 9.25
    assert Backoff().gap(Pacing(delay=0.0, margin=0.25), 0.0) == 0.0  # no margin on 0


def test_latency_factor_keeps_gap_above_k_times_response_time() -> None:
    policy = Pacing(delay=0.5, latency_factor=3.0)
    b = Backoff()
    b.observe(2.0)
    assert b.latency == 2.0
    assert b.gap(policy, 0.5) == 6.0
    b.observe(1.0)  # smoothed: 0.7 * 2 + 0.3 * 1
    assert b.latency == pytest.approx(1.7)
    assert b.gap(policy, 0.5) == pytest.approx(5.1)
    assert b.gap(Pacing(delay=0.5), 0.5) == 0.5  # off by default


def test_latency_factor_is_capped_by_max_backoff() -> None:
    policy = Pacing(delay=0.5, latency_factor=10.0, max_backoff=4.0)
    b = Backoff()
    b.observe(2.0)
    assert b.gap(policy, 0.5) == 4.0


def test_latency_factor_never_shortens_an_honoured_crawl_delay() -> None:
    policy = Pacing(delay=1.0, latency_factor=5.0, max_backoff=10.0,
                          on_long_delay="honour")
    b = Backoff()
    b.observe(5.0)  # 25 s wanted by latency, capped to 10
    assert b.gap(policy, 20.0) >= 20.0


# -- the settings object -------------------------------------------------------------------


def test_pacing_is_a_frozen_keyword_only_object_of_floats() -> None:
    pacing = Pacing(delay=2, max_crawl_delay=30, max_backoff=600, backoff_base=1,
                    backoff_recovery=10, latency_factor=5, margin=0)
    assert (pacing.delay, pacing.max_crawl_delay, pacing.latency_factor) == (2.0, 30.0, 5.0)
    assert all(type(value) is float for value in (pacing.delay, pacing.max_backoff,
                                                  pacing.backoff_base, pacing.margin))
    assert pacing.backoff_recovery == 10
    with pytest.raises(AttributeError):
        pacing.delay = 5.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        Pacing(1.0)  # type: ignore[misc]
    assert Pacing() == Pacing(delay=1.0, max_crawl_delay=60.0, respect_crawl_delay=True,
                              on_long_delay="skip", max_backoff=3600.0, backoff_base=0.5,
                              backoff_recovery=20, latency_factor=None, margin=0.0)


@pytest.mark.parametrize(("name", "bad"), [
    ("delay", -1), ("delay", float("nan")), ("delay", float("inf")), ("delay", "1"),
    ("delay", True),
    ("max_crawl_delay", -0.5), ("max_crawl_delay", float("inf")), ("max_crawl_delay", None),
    ("max_backoff", -1), ("max_backoff", float("inf")),
    ("backoff_base", 0), ("backoff_base", -0.5),
    ("backoff_recovery", 0), ("backoff_recovery", 2.5), ("backoff_recovery", False),
    ("latency_factor", -1.0), ("latency_factor", float("nan")),
    ("margin", -0.01), ("margin", float("nan")),
    ("respect_crawl_delay", "no"),
    ("on_long_delay", "always"),
])
def test_a_bad_pacing_field_is_a_value_error_naming_it(name: str, bad: object) -> None:
    fields: dict[str, Any] = {name: bad}
    said = rf"^Pacing {name} must be .*, not {re.escape(repr(bad))}$"
    with pytest.raises(ValueError, match=said):
        Pacing(**fields)


def test_zero_is_a_valid_delay_margin_and_latency_factor() -> None:
    pacing = Pacing(delay=0, margin=0, latency_factor=0, max_crawl_delay=0, max_backoff=0)
    assert pacing.interval_for(None) == 0.0
    assert Backoff().gap(pacing, 0.0) == 0.0  # latency_factor 0 is off, as None is
