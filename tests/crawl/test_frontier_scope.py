"""Scope, depth and private addresses for the links pages give: counted, not crawled."""

from __future__ import annotations

import ipaddress
from typing import Any

import pytest

from robotgate.crawl import crawl
from tests.support.crawl_gate import LinkGate, Page

LINKS = {
    "http://www.site.example/": [
        "http://www.site.example/a",      # same host
        "http://blog.site.example/b",     # same domain
        "https://www.site.example/c",     # same host, other scheme
        "http://www.site.example:8080/d",  # same host, other port
        "http://other.example/e",         # elsewhere
    ],
}


def site(url: str, resp: Page) -> list[str]:
    return LINKS.get(url, [])


@pytest.mark.parametrize(
    ("scope", "fetched", "out"),
    [
        ("host", ["/", "/a", "https://www.site.example/c", "http://www.site.example:8080/d"], 2),
        ("domain", ["/", "/a", "/b", "https://www.site.example/c",
                    "http://www.site.example:8080/d"], 1),
        ("any", ["/", "/a", "/b", "https://www.site.example/c", "http://www.site.example:8080/d",
                 "/e"], 0),
    ],
)
async def test_scope_keeps_links_to_the_page_s_host_or_domain(
        scope: str, fetched: list[str], out: int) -> None:
    gate = LinkGate()
    summary = await crawl(gate, ["http://www.site.example/"], site, scope=scope)
    expected = {
        url if "://" in url else
        {"/": "http://www.site.example/", "/a": "http://www.site.example/a",
         "/b": "http://blog.site.example/b", "/e": "http://other.example/e"}[url]
        for url in fetched
    }
    assert set(gate.fetched) == expected
    assert summary.out_of_scope == out and summary.unaccounted() == 0
    if out:
        assert any("scope" in line for line in summary.explain())


async def test_domain_scope_keeps_three_labels_under_a_country_s_second_level() -> None:
    links = {"http://a.shop.co.uk/": ["http://b.shop.co.uk/x", "http://other.co.uk/y"]}
    gate = LinkGate()
    summary = await crawl(gate, ["http://a.shop.co.uk/"], lambda u, r: links.get(u, []),
                          scope="domain")
    assert sorted(gate.fetched) == ["http://a.shop.co.uk/", "http://b.shop.co.uk/x"]
    assert summary.out_of_scope == 1


async def test_a_callable_scope_sees_the_link_and_its_page() -> None:
    seen: list[tuple[str, str]] = []

    def scope(link: str, page: str) -> bool:
        seen.append((link, page))
        return link.endswith(("/a", "/e"))

    gate = LinkGate()
    summary = await crawl(gate, ["http://www.site.example/"], site, scope=scope)
    assert sorted(gate.fetched) == ["http://other.example/e", "http://www.site.example/",
                                    "http://www.site.example/a"]
    assert summary.out_of_scope == 3
    assert ("http://www.site.example/a", "http://www.site.example/") in seen


async def test_max_depth_counts_links_too_deep() -> None:
    def chain(url: str, resp: Page) -> list[str]:
        n = int(url.split("?")[0].rsplit("/", 1)[1])
        return [f"http://h.example/{n + 1}", f"http://h.example/{n + 1}?again"]

    gate = LinkGate()
    summary = await crawl(gate, ["http://h.example/0"], chain, max_depth=2)
    # Depth 0 is the input; its links are depth 1, theirs depth 2, no further.
    assert {u.split("?")[0] for u in gate.fetched} == {
        "http://h.example/0", "http://h.example/1", "http://h.example/2"}
    assert summary.pages == 5 and summary.too_deep == 4 and summary.unaccounted() == 0


async def test_max_depth_zero_crawls_the_input_only() -> None:
    gate = LinkGate()
    summary = await crawl(gate, ["http://www.site.example/"], site, max_depth=0, scope="any")
    assert gate.fetched == ["http://www.site.example/"] and summary.too_deep == 5


PRIVATE_LINKS = [
    "http://127.0.0.1/admin",
    "http://169.254.169.254/latest/meta-data/",
    "http://[::1]/x",
    "http://0x7f.1/y",          # 127.0.0.1 spelled in hex
    "http://2130706433/z",      # and as one number
    "http://localhost/w",
    "http://10.1.2.3/v",
    "http://93.184.216.34/public",
    "http://named.example/u",   # a name: no DNS for the frontier
]


async def test_links_from_a_public_page_into_private_addresses_are_not_crawled() -> None:
    gate = LinkGate()
    pages = {"http://93.184.216.35/": PRIVATE_LINKS}
    summary = await crawl(gate, ["http://93.184.216.35/"], lambda u, r: pages.get(u, []),
                          scope="any")
    assert sorted(gate.fetched) == ["http://93.184.216.34/public", "http://93.184.216.35/",
                                    "http://named.example/u"]
    assert summary.private_links == 7 and summary.unaccounted() == 0
    assert any("private address" in line for line in summary.explain())


async def test_a_private_page_may_link_to_other_private_addresses() -> None:
    gate = LinkGate()
    pages = {"http://127.0.0.1/": ["http://127.0.0.2/", "http://10.0.0.1/"]}
    summary = await crawl(gate, ["http://127.0.0.1/"], lambda u, r: pages.get(u, []),
                          scope="any")
    assert len(gate.fetched) == 3 and summary.private_links == 0


async def test_the_gate_s_is_private_rule_decides() -> None:
    test_net = ipaddress.ip_network("203.0.113.0/24")

    def private(address: Any) -> bool:
        return address in test_net

    gate = LinkGate(is_private=private)
    pages = {"http://93.184.216.35/": ["http://203.0.113.9/", "http://127.0.0.1/"]}
    summary = await crawl(gate, ["http://93.184.216.35/"], lambda u, r: pages.get(u, []),
                          scope="any")
    assert sorted(gate.fetched) == ["http://127.0.0.1/", "http://93.184.216.35/"]
    assert summary.private_links == 1


def test_bad_scope_and_depth_are_refused() -> None:
    import asyncio

    with pytest.raises(ValueError, match="scope"):
        asyncio.run(crawl(LinkGate(), [], site, scope="planet"))
    with pytest.raises(ValueError, match="max_depth"):
        asyncio.run(crawl(LinkGate(), [], site, max_depth=-1))
