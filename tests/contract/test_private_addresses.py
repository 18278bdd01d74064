"""A public site may not send the crawler into a private network: whatever made the
request (a redirect, a link, a ``Sitemap:`` line, a sitemap's entry, a tdmrep.json
redirect), the address is judged where the connection is made.

On loopback: the gate's ``is_private`` lets 127.0.0.1 play a public site and every
other address (127.0.0.2, ::1) a private network.  Names are answered by resolvers
of the tests' own (an aiohttp resolver, a patched ``getaddrinfo``); ``rebind.test``
answers public to its first look-up and private to every later one (DNS rebinding).
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import socket
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, suppress
from typing import Any
from urllib.parse import quote

import aiohttp
import pytest
from aiohttp import web

from robotgate import Disallowed, Network, RobotGate, SitemapEntry
from robotgate.crawl import CrawlResult
from robotgate.policy.hops import REFUSED, RULE
from tests.contract.test_request_paths import (
    AGENT,
    PRIVATE,
    PUBLIC,
    ROOT,
    Site,
    private,
    public,
    public_loopback_1,
)

pytestmark = pytest.mark.slow  # loopback servers, a Scrapy child process

# The contract's two sites, as this module's fixtures.
__all__ = ["private", "public"]


class Names:
    """Host names the tests' resolvers answer: name -> the addresses of each look-up
    in turn (the last repeats)."""

    def __init__(self, answers: dict[str, list[list[str]]]) -> None:
        self.answers = answers
        self.asked: dict[str, int] = {}

    def look_up(self, host: str) -> list[str]:
        turns = self.answers.get(host)
        if turns is None:
            raise OSError(f"{host} does not resolve")
        n = self.asked.get(host, 0)
        self.asked[host] = n + 1
        return turns[min(n, len(turns) - 1)]


class NamesResolver(aiohttp.abc.AbstractResolver):
    """An aiohttp resolver that answers from :class:`Names`."""

    def __init__(self, names: Names) -> None:
        self.names = names

    async def resolve(self, host: str, port: int = 0,
                      family: socket.AddressFamily = socket.AF_INET) -> list[Any]:
        found = self.names.look_up(host)
        return [{"hostname": host, "host": address, "port": port,
                 "family": socket.AF_INET6 if ":" in address else socket.AF_INET,
                 "proto": 0, "flags": 0} for address in found]

    async def close(self) -> None:
        pass


@pytest.fixture
def names(monkeypatch: pytest.MonkeyPatch) -> Iterator[Names]:
    """The gate's own session, and any session the tests open, resolve through these."""
    table = Names({})
    monkeypatch.setattr(aiohttp, "DefaultResolver", lambda *a, **k: NamesResolver(table))
    yield table


def gate(**options: Any) -> RobotGate:
    return RobotGate(AGENT, is_private=public_loopback_1, delay=0, **options)


def rebinding(names: Names) -> None:
    names.answers["rebind.test"] = [[PUBLIC], [PRIVATE]]


def _refused(exc: Disallowed, address: str = PRIVATE) -> None:
    assert exc.decision.outcome == REFUSED, exc.decision
    assert address in exc.decision.reason and RULE in exc.decision.reason, exc.decision


# -- sitemaps (issue case 1) ------------------------------------------------------------------


async def test_a_sitemap_robots_txt_names_in_a_private_network_is_not_fetched(
        public: Site, private: Site, names: Names) -> None:
    public.robots = f"User-agent: *\nAllow: /\nSitemap: {private.url('/sm.xml')}\n"
    async with gate() as g:
        walk = g.sitemaps(public.url("/"))
        entries = [entry async for entry in walk]
    assert entries == [] and private.paths() == [] and private.robots_hits == 0
    [problem] = walk.problems
    assert "refused a pointer from a public site" in problem.reason and PRIVATE in problem.reason


async def test_sitemap_entries_fed_to_the_crawl_do_not_reach_a_private_network(
        public: Site, private: Site, names: Names) -> None:
    entry = SitemapEntry(private.url("/admin/secret"), sitemap=public.url("/sm.xml"))
    found: list[CrawlResult] = []
    async with gate() as g:
        await g.crawl([entry], lambda url, resp: (), on_result=found.append)
    [result] = found
    assert result.decision is not None and result.decision.outcome == REFUSED, result
    assert private.paths() == [] and private.robots_hits == 0


@pytest.mark.parametrize("rebound", [False, True])
async def test_a_link_to_a_name_in_a_private_network_is_not_crawled(
        rebound: bool, public: Site, private: Site, names: Names) -> None:
    # Rebound: the link's check finds a public address, robots.txt's connection the private one.
    names.answers["intranet.test"] = [[PUBLIC], [PRIVATE]] if rebound else [[PRIVATE]]
    link = f"http://intranet.test:{private.port}/secret"
    found: list[CrawlResult] = []

    async def handler(url: str, resp: aiohttp.ClientResponse) -> list[str]:
        return [link] if url.endswith("/page") else []

    async with gate() as g:
        await g.crawl([public.url("/page")], handler, on_result=found.append, scope="any")
        robots = g.check(link)
    refused = [r for r in found if r.url == link]
    assert refused and refused[0].decision is not None, found
    assert refused[0].decision.outcome == REFUSED
    assert private.paths() == [] and private.robots_hits == 0
    if rebound:  # its robots.txt request was refused where it connected: unavailable
        assert robots is not None and robots.outcome == "unavailable", robots
        assert "its connection reached a non-public address" in robots.reason, robots


async def test_allowed_and_decide_judge_a_pointer_as_its_fetch_does(
        public: Site, private: Site, names: Names) -> None:
    names.answers["intranet.test"] = [[PRIVATE]]
    url = f"http://intranet.test:{private.port}/secret"
    async with gate() as g:
        allowed = await g.allowed(url, pointed_by=public.url("/page"))
        decision = await g.decide(url, pointed_by="")  # a page known to be public
        assert private.robots_hits == 0  # no robots.txt asked for a refused pointer
        # A private page's pointer, and the user's own input, may go there.
        assert await g.allowed(url, pointed_by=private.url("/page"))
        assert await g.allowed(url) and (await g.decide(url)).allowed
        # Its robots.txt cached now, the public page's pointer is still refused.
        assert not await g.allowed(url, pointed_by=public.url("/page"))
    assert not allowed
    assert decision.outcome == REFUSED and PRIVATE in decision.reason, decision
    assert "refused a pointer from a public site" in decision.reason, decision
    assert private.robots_hits == 1 and private.paths() == []
    async with gate(network=Network(allow_private_redirects=True)) as g:
        assert await g.allowed(url, pointed_by=public.url("/page"))  # the rule turned off


async def test_the_users_own_input_is_never_refused_for_its_address(
        private: Site, names: Names) -> None:
    names.answers["intranet.test"] = [[PRIVATE]]
    async with gate() as g:
        resp = await g.fetch(f"http://intranet.test:{private.port}/mine")
        walk = g.sitemaps(private.url("/"))
        [entry async for entry in walk]
    assert resp.status == 200 and "/mine" in private.paths()
    assert "/sitemap.xml" in private.paths()  # the origin asked for: the caller's input


# -- DNS rebinding (issue case 3) ---------------------------------------------------------------


async def test_a_pointer_to_a_name_rebound_to_a_private_address_is_refused_where_it_connects(
        public: Site, private: Site, names: Names) -> None:
    # The origin's robots.txt request is refused where it connects too: robots.txt is
    # not asked there, and counts as unavailable (as a refused robots.txt redirect).
    rebinding(names)
    url = f"http://rebind.test:{private.port}/secret"
    async with gate() as g:
        with pytest.raises(Disallowed) as refused:
            await g.fetch(url, pointed_by=public.url("/page"))
        unavailable = g.check(url)
    _refused(refused.value)
    assert "its connection reached" in refused.value.decision.reason
    assert private.paths() == [] and private.robots_hits == 0
    assert unavailable is not None and unavailable.outcome == "unavailable", unavailable
    assert "refused a pointer from a public site" in unavailable.reason, unavailable
    assert "its connection reached a non-public address" in unavailable.reason, unavailable


@pytest.mark.parametrize("path", ["fetch", "middleware"])
async def test_a_redirect_to_a_name_rebound_to_a_private_address_is_refused(
        path: str, public: Site, private: Site, names: Names) -> None:
    rebinding(names)
    target = quote(f"http://rebind.test:{private.port}/secret", safe="")
    url = public.url("/redirect?to=" + target)
    async with gate() as g:
        with pytest.raises(Disallowed) as refused:
            if path == "fetch":
                await g.fetch(url)
            else:
                connector = aiohttp.TCPConnector(resolver=NamesResolver(names))
                async with aiohttp.ClientSession(connector=connector,
                                                 middlewares=(g.middleware,)) as session, \
                        session.get(url) as resp:
                    await resp.read()
    _refused(refused.value)
    assert "/secret" not in private.paths()


async def test_a_robots_txt_redirect_to_a_rebound_name_is_not_followed(
        private: Site, names: Names) -> None:
    rebinding(names)
    target = f"http://rebind.test:{private.port}/robots.txt"
    async with serving({"/robots.txt": (301, target)}) as origin, gate() as g:
        decision = await g.decide(origin + "/page")
    # Refused as a redirect to nowhere is (the site's existing rule for that answer).
    assert "its connection reached a non-public address" in decision.reason, decision
    assert private.robots_hits == 0


# -- the pointer's kind needs no code of its own -----------------------------------------------


@asynccontextmanager
async def serving(routes: dict[str, tuple[int, str]]) -> AsyncIterator[str]:
    """A public loopback origin answering ``path -> (status, Location or text)``
    (any other path: a page, robots.txt allowing all); yields its origin."""
    async def answer(request: web.Request) -> web.StreamResponse:
        status, value = routes.get(request.path, (200, ""))
        if status in (301, 302):
            return web.Response(status=status, headers={"Location": value})
        if request.path == "/robots.txt":
            return web.Response(text="User-agent: *\nAllow: /\n")
        return web.Response(status=status, text=value or "page")

    app = web.Application()
    app.router.add_get("/{tail:.*}", answer)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, PUBLIC, 0).start()
    try:
        yield f"http://{PUBLIC}:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


async def test_a_tdmrep_json_redirect_into_a_private_network_is_not_followed(
        private: Site, names: Names) -> None:
    # tdmrep.json has no code of its own for the rule: its redirects are the
    # robots.txt flow's hops, judged where every hop is.
    target = private.url("/.well-known/tdmrep.json")
    routes = {"/.well-known/tdmrep.json": (302, target)}
    async with serving(routes) as origin, gate(tdmrep=True) as g:
        await g.fetch(origin + "/page")
        await g.tdm(origin + "/page")
    assert "/.well-known/tdmrep.json" not in private.paths()


# -- Scrapy: a name with a public A and a private AAAA record (issue case 2) ---------------------


async def test_scrapy_refuses_a_redirect_to_a_name_with_a_private_aaaa_record(
        public: Site) -> None:
    # Nothing listens on the A record's address at that port; Scrapy's resolver for
    # both families (CachingHostnameResolver) connects over IPv6 to ::1.
    private_v6 = await Site("::1", robots="User-agent: *\nAllow: /\n").start()
    try:
        target = quote(f"http://dual.test:{private_v6.port}/secret", safe="")
        [result] = await scrapy_run(
            [public.url("/redirect?to=" + target)], {"dual.test": [PUBLIC, "::1"]},
            DNS_RESOLVER="scrapy.resolver.CachingHostnameResolver")
    finally:
        await private_v6.close()
    assert result.get("refused") == REFUSED, result
    assert "::1" in result["reason"], result
    assert private_v6.paths() == [] and private_v6.robots_hits == 0


@pytest.mark.parametrize(("resolver", "rebind"), [
    # Scrapy's default: the check asks getaddrinfo and the reactor's gethostbyname,
    # the connection gethostbyname again.
    ("scrapy.resolver.CachingThreadedResolver",
     {"getaddrinfo": [PUBLIC], "gethostbyname": [[PUBLIC], [PRIVATE]]}),
    # Both families: the check's two look-ups and the connection's are all getaddrinfo.
    ("scrapy.resolver.CachingHostnameResolver", [[PUBLIC], [PUBLIC], [PRIVATE]]),
])
async def test_scrapy_never_connects_a_pointer_to_a_name_rebound_to_a_private_address(
        resolver: str, rebind: Any, public: Site, private: Site) -> None:
    # The check's look-ups answer public; the look-up Scrapy's connection makes finds
    # the private address, and the reactor's resolver, screened, gives it none: the
    # private server sees no request (robots.txt or page), the refusal names the address.
    target = quote(f"http://rebind.test:{private.port}/redirect?to=/secret", safe="")
    [result] = await scrapy_run([public.url("/redirect?to=" + target)],
                                {"rebind.test": rebind}, DNSCACHE_ENABLED=False,
                                DNS_RESOLVER=resolver)
    assert (private.paths(), private.robots_hits) == ([], 0)
    assert result.get("refused") == REFUSED, result
    assert "found a non-public address (127.0.0.2)" in result["reason"], result
    assert RULE in result["reason"], result


async def test_scrapy_never_connects_a_robots_txt_redirect_to_a_rebound_name(
        private: Site) -> None:
    # The hop check's look-up (the reactor's gethostbyname) answers public, the
    # connection's private: the screened resolver gives it no address.
    target = f"http://rebind.test:{private.port}/robots.txt"
    rebind = {"getaddrinfo": [PUBLIC], "gethostbyname": [[PUBLIC], [PRIVATE]]}
    async with serving({"/robots.txt": (301, target)}) as origin:
        [result] = await scrapy_run([origin + "/page"], {"rebind.test": rebind},
                                    DNSCACHE_ENABLED=False)
    assert private.robots_hits == 0
    # Refused as a redirect to nowhere is (the site's existing rule for that answer).
    assert result.get("status") == 200, result


async def scrapy_run(urls: list[str], hosts: dict[str, Any],
                     **settings: Any) -> list[dict[str, Any]]:
    """The results of ``urls`` through Scrapy with the robotgate middleware, in a child
    process whose look-ups answer ``hosts`` (see scrapy_paths_runner.answer_names)."""
    config = json.dumps({
        "urls": urls, "sequential": True, "hosts": hosts,
        "settings": {"ROBOTGATE_IS_PRIVATE": "tests.contract.test_request_paths."
                                             "public_loopback_1", "DOWNLOAD_DELAY": 0,
                     **settings}})
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.contract.scrapy_paths_runner", config, cwd=ROOT,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()[-3000:]
    results: list[dict[str, Any]] = json.loads(out.decode().strip().splitlines()[-1])
    return results


def test_the_default_rule_calls_the_tests_private_addresses_private() -> None:
    assert not public_loopback_1(ipaddress.ip_address(PUBLIC))
    assert public_loopback_1(ipaddress.ip_address("::1"))
    assert public_loopback_1(ipaddress.ip_address(PRIVATE))


async def test_names_resolver_answers_in_turn() -> None:
    table = Names({"rebind.test": [[PUBLIC], [PRIVATE]]})
    resolver = NamesResolver(table)
    first = await resolver.resolve("rebind.test")
    second = await resolver.resolve("rebind.test")
    assert [first[0]["host"], second[0]["host"]] == [PUBLIC, PRIVATE]
    await asyncio.sleep(0)


# -- httpx: the connection goes to the address the check found ----------------------------------


@pytest.fixture
def system_names(monkeypatch: pytest.MonkeyPatch) -> Names:
    """The system's look-ups (``socket.getaddrinfo``) answer from a :class:`Names`."""
    table = Names({})
    system = socket.getaddrinfo

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else host
        if name not in table.answers:
            return system(host, port, *args, **kwargs)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, int(port or 0)))
                for address in table.look_up(name)]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return table


async def test_httpx_follows_a_rebound_name_only_to_the_address_it_checked(
        public: Site, private: Site, system_names: Names) -> None:
    httpx = pytest.importorskip("httpx")
    from robotgate.integrations.httpx import RobotGateTransport

    rebinding(system_names)
    # The private site's port on the public address: the checked address answers there.
    target = quote(f"http://rebind.test:{private.port}/secret", safe="")
    async with gate() as g, httpx.AsyncClient(transport=RobotGateTransport(g),
                                              follow_redirects=True) as client:
        # Nothing listens on the checked (public) address at that port: no answer.
        with suppress(httpx.TransportError, Disallowed):
            await client.get(public.url("/redirect?to=" + target))
    # The target origin's robots.txt request too goes to the checked address.
    assert "/secret" not in private.paths() and private.robots_hits == 0


async def test_a_pointer_never_rides_a_pooled_connection_to_a_private_address(
        public: Site, private: Site, names: Names) -> None:
    # The user's own request opens a keep-alive connection to the private address; a
    # pointer to the same name, whose check finds it public, must not be sent on it.
    names.answers["rebind.test"] = [[PRIVATE], [PUBLIC], [PRIVATE]]
    mine = f"http://rebind.test:{private.port}/mine"
    async with gate() as g:
        assert (await g.fetch(mine)).status == 200
        with pytest.raises(Disallowed) as refused:
            await g.fetch(f"http://rebind.test:{private.port}/secret",
                          pointed_by=public.url("/page"))
    _refused(refused.value)
    assert private.paths() == ["/mine"]


async def test_a_private_page_may_link_to_another_private_name(
        private: Site, names: Names) -> None:
    names.answers["wiki.test"] = [[PRIVATE]]
    names.answers["jira.test"] = [[PRIVATE]]
    link = f"http://jira.test:{private.port}/issue"
    found: list[CrawlResult] = []

    async def handler(url: str, resp: aiohttp.ClientResponse) -> list[str]:
        return [link] if url.endswith("/home") else []

    async with gate() as g:
        await g.crawl([f"http://wiki.test:{private.port}/home"], handler,
                      on_result=found.append, scope="any")
    assert {r.url: r.status for r in found} == {
        f"http://wiki.test:{private.port}/home": 200, link: 200}, found


async def test_httpx_follows_a_robots_txt_redirect_only_to_the_address_it_checked(
        private: Site, system_names: Names) -> None:
    httpx = pytest.importorskip("httpx")
    from robotgate.integrations.httpx import RobotGateTransport

    rebinding(system_names)
    target = f"http://rebind.test:{private.port}/robots.txt"
    async with serving({"/robots.txt": (301, target)}) as origin, gate() as g, \
            httpx.AsyncClient(transport=RobotGateTransport(g)) as client:
        with suppress(Disallowed):
            await client.get(origin + "/page")
    assert private.robots_hits == 0


# -- clients that look names up themselves (the browser's, crawlee's) ---------------------------

#: The one public address of the tests where ``localhost`` (127.0.0.1 to a client
#: that looks it up itself, private here) plays a name rebound into a private network:
#: the gate's look-ups find it at this address.
CHECKED = "127.0.0.3"


def checked_public(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Those tests' ``is_private``: every address but :data:`CHECKED` is private."""
    return str(address) != CHECKED


async def site_at(host: str, port: int, set_cookie: str | None = None) -> Site:
    """A contract site on ``host`` at ``port`` (the port another site has elsewhere);
    ``set_cookie``: a ``Set-Cookie`` its pages answer with."""
    site = Site(host)
    app = web.Application()
    if set_cookie is not None:
        async def cookie(request: web.Request, response: web.StreamResponse) -> None:
            if request.path != "/robots.txt":
                response.headers["Set-Cookie"] = set_cookie

        app.on_response_prepare.append(cookie)
    app.router.add_route("*", "/{tail:.*}", site._handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    site._runner, site.port = runner, port
    return site


@pytest.mark.parametrize(("peer", "guard", "refused"), [
    ("127.0.0.2", True, True), ("127.0.0.1", True, False), ("127.0.0.2", False, False)])
async def test_scrapy_takes_no_robots_txt_a_pointed_origin_answered_from_a_private_address(
        peer: str, guard: bool, refused: bool) -> None:
    # Scrapy connects out of the gate's sight: the answer's peer is judged once it came.
    pytest.importorskip("scrapy")
    from types import SimpleNamespace

    from scrapy.http import Response

    from robotgate.integrations.scrapy.middleware import ScrapyRobotsTransport
    from robotgate.policy.fetch_flow import RobotsRequest

    async def download_async(req: Any) -> Response:
        return Response(req.url, status=200, body=b"User-agent: *\nDisallow: /\n",
                        ip_address=ipaddress.ip_address(peer))

    crawler = SimpleNamespace(engine=SimpleNamespace(download_async=download_async), stats=None)
    transport = ScrapyRobotsTransport(crawler, {}, True, public_loopback_1)  # type: ignore[arg-type]
    answer = await transport.send(RobotsRequest("http://rebind.test/robots.txt", guard=guard))
    if refused:
        assert answer.refused is not None and PRIVATE in answer.refused, answer
        assert "refused a pointer from a public site" in answer.refused
    else:
        assert answer.refused is None and answer.status == 200, answer
