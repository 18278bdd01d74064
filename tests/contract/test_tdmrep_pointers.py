"""The first tdmrep.json request of an origin a public page's pointer led to is held to
the private-network rule where it connects, as that origin's robots.txt request is.

``rebind.test`` answers public (127.0.0.1, where a twin of the private site listens
on the same port) while the page is fetched, then private (127.0.0.2): the name is
rebound before its tdmrep.json is asked.  Each session opens a connection and looks
the name up for every request (no pool, no DNS cache), as a rebinding attack needs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from urllib.parse import quote

import aiohttp
import pytest
from aiohttp import web

from robotgate.crawl import CrawlResult
from robotgate.policy.hops import RULE
from robotgate.store.memory import MemoryStore
from robotgate.store.sqlite import SQLiteStore
from tests.contract.test_private_addresses import (
    Names,
    NamesResolver,
    gate,
    names,
    scrapy_run,
    site_at,
    system_names,
)
from tests.contract.test_request_paths import PRIVATE, PUBLIC, Site, private, public

pytestmark = pytest.mark.slow  # loopback servers, a Scrapy child process

# The contract's fixtures, as this module's.
__all__ = ["names", "private", "public", "system_names"]

TDMREP = "/.well-known/tdmrep.json"


@asynccontextmanager
async def fresh_connections(names: Names) -> AsyncIterator[aiohttp.ClientSession]:
    """A session that looks names up in ``names`` for every connection, one a request."""
    connector = aiohttp.TCPConnector(resolver=NamesResolver(names), use_dns_cache=False,
                                     force_close=True)
    async with aiohttp.ClientSession(connector=connector) as session:
        yield session


@asynccontextmanager
async def twin_of(site: Site) -> AsyncIterator[Site]:
    """A public site on ``site``'s port: where ``rebind.test`` leads while it is public."""
    twin = await site_at(PUBLIC, site.port)
    try:
        yield twin
    finally:
        await twin.close()


@pytest.mark.parametrize("pointed", [True, False])
async def test_gate_fetch_then_tdm(pointed: bool, private: Site, names: Names) -> None:
    names.answers["rebind.test"] = [[PUBLIC]]
    url = f"http://rebind.test:{private.port}/page"
    async with twin_of(private) as twin, fresh_connections(names) as session, \
            gate(tdmrep=True, session=session) as g:
        resp = await g.fetch(url, pointed_by=twin.url("/links") if pointed else None)
        assert resp.status == 200
        await resp.read()
        names.answers["rebind.test"] = [[PRIVATE]]  # rebound
        verdict = await g.tdm(url)
    assert twin.paths() == ["/page"] and twin.robots_hits == 1
    if pointed:
        assert private.paths() == [], private.paths()
        assert verdict.reserved is None and RULE in verdict.source, verdict
        assert PRIVATE in verdict.source, verdict
    else:  # the user's own input: never refused for its address
        assert private.paths() == [TDMREP]


def linking_to(link: str, names: Names) -> Callable[[str, aiohttp.ClientResponse],
                                                     Awaitable[list[str]]]:
    """A crawl handler: every page links to ``link``, whose name is rebound to the
    private address once its page came."""

    async def handler(url: str, resp: aiohttp.ClientResponse) -> list[str]:
        if url == link:
            names.answers["rebind.test"] = [[PRIVATE]]
            return []
        return [link]

    return handler


async def test_the_crawls_tdmrep_json_request_of_a_linked_origin(
        private: Site, names: Names) -> None:
    names.answers["rebind.test"] = [[PUBLIC]]
    link = f"http://rebind.test:{private.port}/page"
    found: list[CrawlResult] = []

    handler = linking_to(link, names)

    async with twin_of(private) as twin, fresh_connections(names) as session, \
            gate(tdmrep=True, session=session) as g:
        await g.crawl([twin.url("/home")], handler, on_result=found.append, scope="any")
    assert {r.url: r.status for r in found} == {twin.url("/home"): 200, link: 200}, found
    assert TDMREP not in private.paths(), private.paths()
    [linked] = [r for r in found if r.url == link]
    assert linked.tdm is not None and RULE in linked.tdm.source, linked.tdm


@pytest.mark.parametrize("pointed", [True, False])
async def test_the_crawls_tdmrep_json_request_of_an_origin_whose_robots_txt_is_stored(
        pointed: bool, private: Site, names: Names) -> None:
    # Another worker sharing the store (or this one before a restart) fetched the
    # linked origin's robots.txt: this gate fetches none, only the pages and tdmrep.json.
    names.answers["rebind.test"] = [[PUBLIC]]
    link = f"http://rebind.test:{private.port}/page"
    store = MemoryStore()
    found: list[CrawlResult] = []

    handler = linking_to(link, names)

    async with twin_of(private) as twin, fresh_connections(names) as session:
        async with gate(store=store, session=session) as other_worker:
            assert await other_worker.allowed(link)
        stored_hits = twin.robots_hits
        async with gate(tdmrep=True, store=store, session=session) as g:
            start = twin.url("/home") if pointed else link  # a link, or the user's own input
            await g.crawl([start], handler, on_result=found.append, scope="any")
    # robots.txt asked again only of the public page's origin (the twin serves both).
    assert twin.robots_hits == stored_hits + pointed, twin.robots_hits
    assert [r.status for r in found if r.url == link] == [200], found
    [linked] = [r for r in found if r.url == link]
    assert linked.tdm is not None
    if pointed:
        assert TDMREP not in private.paths(), private.paths()
        assert RULE in linked.tdm.source and PRIVATE in linked.tdm.source, linked.tdm
    else:  # the user's own input: never refused for its address
        assert private.paths() == [TDMREP], private.paths()


async def test_decide_asks_a_pointers_tdmrep_json_guarded_when_its_robots_txt_is_stored(
        private: Site, names: Names) -> None:
    names.answers["rebind.test"] = [[PUBLIC]]
    url = f"http://rebind.test:{private.port}/page"
    store = MemoryStore()
    async with twin_of(private) as twin, fresh_connections(names) as session:
        async with gate(store=store, session=session) as other_worker:
            assert await other_worker.allowed(url)
        names.answers["rebind.test"] = [[PUBLIC], [PRIVATE]]  # the check's, then the rest
        names.asked.clear()
        async with gate(tdmrep=True, store=store, session=session) as g:
            decision = await g.decide(url, pointed_by=twin.url("/links"))
    assert decision.allowed and private.paths() == [], private.paths()
    assert decision.tdm is not None and RULE in decision.tdm.source, decision.tdm


# -- Scrapy: the middleware asks tdmrep.json through Scrapy's engine ----------------------------


@asynccontextmanager
async def closing_twin_of(site: Site) -> AsyncIterator[list[str]]:
    """A public server on ``site``'s port that closes each connection (so that Scrapy
    connects, and looks the name up, for every request); yields the paths it served."""
    served: list[str] = []

    async def answer(request: web.Request) -> web.Response:
        served.append(request.path)
        text = "User-agent: *\nAllow: /\n" if request.path == "/robots.txt" else "page"
        return web.Response(text=text, headers={"Connection": "close"})

    app = web.Application()
    app.router.add_get("/{tail:.*}", answer)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, PUBLIC, site.port).start()
    try:
        yield served
    finally:
        await runner.cleanup()


async def test_scrapy_asks_a_redirects_tdmrep_json_only_of_a_public_address(
        public: Site, private: Site) -> None:
    # The name answers public to the check, robots.txt's connection and the page's
    # (gethostbyname: the reactor's look-ups), private to tdmrep.json's connection.
    target = quote(f"http://rebind.test:{private.port}/page", safe="")
    rebind = {"getaddrinfo": [PUBLIC], "gethostbyname": [[PUBLIC]] * 3 + [[PRIVATE]]}
    async with closing_twin_of(private) as served:
        [result] = await scrapy_run([public.url("/redirect?to=" + target)],
                                    {"rebind.test": rebind}, DNSCACHE_ENABLED=False,
                                    ROBOTGATE_TDMREP=True)
    assert result.get("status") == 200, result
    assert served[:2] == ["/robots.txt", "/page"], served
    assert TDMREP not in private.paths(), private.paths()


async def test_scrapy_asks_a_redirects_tdmrep_json_guarded_when_its_robots_txt_is_stored(
        public: Site, private: Site, names: Names, tmp_path: Path) -> None:
    # Another worker sharing the SQLite store (or this crawl before a restart) fetched
    # the target origin's robots.txt: Scrapy's gate asks none, only the page and tdmrep.json.
    names.answers["rebind.test"] = [[PUBLIC]]
    url = f"http://rebind.test:{private.port}/page"
    stored = tmp_path / "robots.sqlite"
    # The name answers public to the check and the page's connection, private after.
    rebind = {"getaddrinfo": [PUBLIC], "gethostbyname": [[PUBLIC]] * 2 + [[PRIVATE]]}
    async with closing_twin_of(private) as served:
        async with gate(store=SQLiteStore(stored)) as other_worker:
            assert await other_worker.allowed(url)
        assert served == ["/robots.txt"], served
        [result] = await scrapy_run([public.url("/redirect?to=" + quote(url, safe=""))],
                                    {"rebind.test": rebind}, DNSCACHE_ENABLED=False,
                                    ROBOTGATE_TDMREP=True, ROBOTGATE_STORE=str(stored))
    assert result.get("status") == 200, result
    assert served[1:2] == ["/page"], served
    assert TDMREP not in private.paths(), private.paths()


# -- httpx: the first tdmrep.json request goes to the address the pointer check found ------------


async def test_httpx_asks_a_redirects_tdmrep_json_of_the_address_it_checked(
        public: Site, private: Site, system_names: Names) -> None:
    httpx = pytest.importorskip("httpx")
    from robotgate.integrations.httpx import RobotGateTransport

    system_names.answers["rebind.test"] = [[PUBLIC], [PRIVATE]]  # the check's, then later
    url = f"http://rebind.test:{private.port}/page"
    async with twin_of(private) as twin, gate(tdmrep=True) as g, \
            httpx.AsyncClient(transport=RobotGateTransport(g), follow_redirects=True) as client:
        resp = await client.get(public.url("/redirect?to=" + quote(url, safe="")))
        assert resp.status_code == 200
        await g.tdm(url)
    assert private.paths() == [] and private.robots_hits == 0, private.paths()
    assert twin.paths() == ["/page", TDMREP], twin.paths()
