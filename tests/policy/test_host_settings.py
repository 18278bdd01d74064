"""Per-host settings: which one applies to a server, and what a setting may hold."""

from __future__ import annotations

import pytest

from robotgate import HostSettings
from robotgate.policy.host_settings import HostTable


def test_an_exact_host_a_pattern_and_a_key_each_find_their_setting() -> None:
    own, fragile, pattern, keyed = (HostSettings(delay=0.1), HostSettings(delay=10.0),
                                    HostSettings(delay=0.2), HostSettings(max_per_host=4))
    table = HostTable({"Own.Example": own, "fragile.example.com": fragile,
                       "*.example.org": pattern, "ip:192.0.2.7": keyed})
    assert table.match("https://own.example", "host:own.example") is own
    assert table.match("http://own.example:8080", None) is own  # any scheme or port
    assert table.match("https://fragile.example.com", "host:fragile.example.com") is fragile
    assert table.match("https://example.com", "host:example.com") is None  # not a subdomain
    assert table.match("https://a.b.example.org", None) is pattern
    assert table.match("https://example.org", None) is pattern  # the domain itself too
    assert table.match("https://notexample.org", None) is None
    assert table.match("https://cdn.example.net", "ip:192.0.2.7") is keyed  # by its key
    assert table.match("https://[2001:db8::1]:443", None) is None


def test_the_longest_pattern_and_an_exact_name_win() -> None:
    wide, narrow, exact = HostSettings(delay=1.0), HostSettings(delay=2.0), HostSettings(delay=3.0)
    table = HostTable({"*.example.org": wide, "*.shop.example.org": narrow,
                       "www.shop.example.org": exact})
    assert table.match("https://a.shop.example.org", None) is narrow
    assert table.match("https://www.shop.example.org", None) is exact
    assert table.match("https://blog.example.org", None) is wide
    # A server paced by its registrable domain is matched by that domain.
    assert table.match("https://x.y.example.org", "domain:example.org") is wide


@pytest.mark.parametrize("bad", [
    {"delay": -1.0}, {"delay": float("nan")}, {"delay": float("inf")}, {"delay": "5"},
    {"delay": True}, {"max_per_host": 0}, {"max_per_host": 1.5}, {"max_per_host": True},
])
def test_a_setting_out_of_range_is_refused(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="HostSettings"):
        HostSettings(**bad)  # type: ignore[arg-type]


def test_a_table_names_hosts_and_holds_settings_only() -> None:
    with pytest.raises(ValueError, match="host"):
        HostTable({" ": HostSettings(delay=1.0)})
    with pytest.raises(TypeError, match="HostSettings"):
        HostTable({"example.com": {"delay": 1.0}})  # type: ignore[dict-item]
    assert not HostTable({})
    assert HostSettings(delay=0.5, max_per_host=2).describe() == "delay 0.5s, max 2"
