"""Which origins share one server's budget (politeness/grouping.py): pace_by keys."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from robotgate.politeness import grouping
from robotgate.politeness.grouping import PaceKeys, registrable_domain


def test_pace_by_must_be_known() -> None:
    with pytest.raises(ValueError, match="pace_by"):
        PaceKeys("server")  # type: ignore[arg-type]


def test_host_ignores_scheme_and_port() -> None:
    keys = PaceKeys("host")
    assert keys.cached("http://example.com") == "host:example.com"
    assert keys.cached("https://example.com") == "host:example.com"
    assert keys.cached("http://example.com:8080") == "host:example.com"
    assert keys.cached("http://www.example.com") == "host:www.example.com"
    assert keys.cached("http://127.0.0.1:8001") == keys.cached("https://127.0.0.1:8443")
    assert keys.cached("http://[::1]:8001") == "host:[::1]"
    assert keys.cached("http://[::1]") == "host:[::1]"


def test_origin_keeps_scheme_and_port() -> None:
    keys = PaceKeys("origin")
    assert keys.cached("http://example.com") == "http://example.com"
    assert keys.cached("https://example.com") == "https://example.com"
    assert keys.cached("http://example.com:8080") != keys.cached("http://example.com")


@pytest.mark.parametrize(("a", "b"), [
    ("http://a.example.com", "https://b.example.com:8443"),
    ("http://x.blogspot.com", "http://y.blogspot.com"),  # ICANN-only: one platform, one key
    ("http://www.example.co.uk", "http://shop.example.co.uk"),
    ("http://example.com", "http://deep.down.example.com"),
])
def test_domain_groups_the_names_of_one_registrable_domain(a: str, b: str) -> None:
    keys = PaceKeys("domain")
    assert keys.cached(a) == keys.cached(b)


@pytest.mark.parametrize(("a", "b"), [
    ("http://example.com", "http://example.org"),
    ("http://example.co.uk", "http://other.co.uk"),  # co.uk is a public suffix
    ("http://a.github.io", "http://a.gitlab.io"),
    ("http://127.0.0.1", "http://127.0.0.2"),
])
def test_domain_keeps_different_domains_apart(a: str, b: str) -> None:
    keys = PaceKeys("domain")
    assert keys.cached(a) != keys.cached(b)


@pytest.mark.parametrize(("host", "domain"), [
    ("a.b.example.co.uk", "example.co.uk"),
    ("example.co.uk", "example.co.uk"),
    ("x.blogspot.com", "blogspot.com"),
    ("www.example.com", "example.com"),
    ("127.0.0.1", "127.0.0.1"),
    ("[::1]", "[::1]"),
    ("localhost", "localhost"),
    ("", ""),
])
def test_registrable_domain(host: str, domain: str) -> None:
    assert registrable_domain(host) == domain


def test_domain_key_is_prefixed() -> None:
    assert PaceKeys("domain").cached("http://a.example.com") == "domain:example.com"


def test_ip_needs_a_lookup() -> None:
    assert PaceKeys("ip").cached("http://example.com") is None


class FakeResolver:
    def __init__(self, table: dict[str, str], gate: asyncio.Event | None = None) -> None:
        self.table = table
        self.calls: list[str] = []
        self.gate = gate

    async def __call__(self, host: str) -> str:
        self.calls.append(host)
        if self.gate is not None:
            await self.gate.wait()
        try:
            return self.table[host]
        except KeyError:
            raise OSError(f"no such host {host}") from None


async def test_ip_groups_names_on_one_address() -> None:
    resolve = FakeResolver({"localhost": "127.0.0.1", "a.example.com": "127.0.0.1",
                            "b.example.com": "127.0.0.2"})
    keys = PaceKeys("ip", resolve=resolve)
    assert await keys.key("http://localhost:8001") == "ip:127.0.0.1"
    assert await keys.key("https://a.example.com") == "ip:127.0.0.1"
    assert await keys.key("http://127.0.0.1:9000") == "ip:127.0.0.1"  # literal: not resolved
    assert await keys.key("http://b.example.com") == "ip:127.0.0.2"
    assert await keys.key("http://[::1]:8080") == "ip:::1"
    assert resolve.calls == ["localhost", "a.example.com", "b.example.com"]
    assert keys.cached("http://localhost:8001") == "ip:127.0.0.1"  # now cached


async def test_ip_unresolvable_host_keys_by_its_name() -> None:
    keys = PaceKeys("ip", resolve=FakeResolver({}))
    assert await keys.key("http://nowhere.example") == "ip:nowhere.example"


async def test_ip_without_resolver_keys_by_name() -> None:
    keys = PaceKeys("ip")
    assert await keys.key("http://example.com") == "ip:example.com"
    keys.set_resolver(FakeResolver({"example.org": "192.0.2.1"}))
    assert await keys.key("http://example.org") == "ip:192.0.2.1"


async def test_ip_lookup_is_single_flight() -> None:
    gate = asyncio.Event()
    resolve = FakeResolver({"example.com": "192.0.2.7"}, gate)
    keys = PaceKeys("ip", resolve=resolve)
    waiters = [asyncio.ensure_future(keys.key("http://example.com")) for _ in range(50)]
    await asyncio.sleep(0)
    gate.set()
    got = await asyncio.wait_for(asyncio.gather(*waiters), 10)
    assert set(got) == {"ip:192.0.2.7"} and resolve.calls == ["example.com"]


async def test_a_cancelled_asker_does_not_cancel_the_lookup() -> None:
    gate = asyncio.Event()
    resolve = FakeResolver({"example.com": "192.0.2.7"}, gate)
    keys = PaceKeys("ip", resolve=resolve)
    first = asyncio.ensure_future(keys.key("http://example.com"))
    second = asyncio.ensure_future(keys.key("http://example.com"))
    await asyncio.sleep(0)
    first.cancel()
    await asyncio.sleep(0)
    gate.set()
    assert await asyncio.wait_for(second, 10) == "ip:192.0.2.7"
    assert first.cancelled() and resolve.calls == ["example.com"]


async def test_ip_keys_expire_after_ttl(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    monkeypatch.setattr(grouping, "time", SimpleNamespace(monotonic=lambda: now[0]))
    resolve = FakeResolver({"example.com": "192.0.2.1"})
    keys = PaceKeys("ip", resolve=resolve, ttl=60.0)
    assert await keys.key("http://example.com") == "ip:192.0.2.1"
    now[0] += 59.0
    assert keys.cached("http://example.com") == "ip:192.0.2.1"
    resolve.table["example.com"] = "192.0.2.99"  # the DNS answer changed
    now[0] += 2.0
    assert keys.cached("http://example.com") is None
    assert await keys.key("http://example.com") == "ip:192.0.2.99"
    assert resolve.calls == ["example.com", "example.com"]


def test_the_key_table_stays_bounded() -> None:
    keys = PaceKeys("host", max_entries=100)
    for i in range(1000):
        assert keys.cached(f"http://h{i}.example") == f"host:h{i}.example"
    assert len(keys._cache) <= 100
