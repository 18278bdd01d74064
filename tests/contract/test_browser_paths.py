"""The request-path contract through a browser: the cases of test_request_paths.py whose
promises apply to a browser, run against the system Chromium attached to the gate
(``robotgate.integrations.playwright.attach``), each URL a page's navigation.

Not run here: the late fleet slot, the slot given back once and ``close()`` cases,
which drive a client's own calls from inside the gate's hooks.  The events case of
test_events_paths.py runs here too: a browser's navigations tell the same story.

Each URL a subresource too (a page's ``fetch``): the cases whose promises a subresource
keeps (refusals, one robots.txt request, ``Retry-After``, back-off, ``max_per_host``,
redirects into private addresses); not the delay or ``latency_factor``, which pace pages.

The provenance contract (test_provenance_paths.py) runs its cases through the browser
too; here, a context's own proxy given to ``attach`` carries robots.txt.
"""

from __future__ import annotations

import shutil
import ssl
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from aiohttp import web

from robotgate import Disallowed, Network, RobotGate
from robotgate.policy.fetch_flow import RobotsRequest, RobotsResponse
from tests.contract import test_request_paths as contract
from tests.contract.test_events_paths import PAGES, _events
from tests.contract.test_private_addresses import (
    CHECKED,
    Names,
    checked_public,
    names,
    site_at,
    system_names,
)
from tests.contract.test_provenance_paths import forward_proxy
from tests.contract.test_request_paths import PRIVATE, PUBLIC, Result, Site, private, public
from tests.support.browser import chromium

pytest.importorskip("playwright.async_api", reason="Playwright is not installed "
                    "(pip install 'robotgate[playwright]')")

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Request

from robotgate.integrations.browser_network.floor import via
from robotgate.integrations.playwright import UnsafeBrowser, attach

# The contract's servers and name tables, as this module's fixtures.
__all__ = ["names", "private", "public", "system_names"]


class BrowserClient(contract.Client):
    """Each URL a navigation in a page of its own; a refusal as the route heard it."""

    def __init__(self, gate: RobotGate, context: Any) -> None:
        super().__init__(gate)
        self.context = context
        self.refusals: dict[str, Disallowed] = {}

    def heard(self, request: Request, refused: Disallowed) -> None:
        self.refusals[request.url] = refused

    async def get(self, url: str) -> Result:
        page = await self.context.new_page()
        # Chromium fails a navigation answered 4xx/5xx with an empty body (it shows its
        # own error page): the answer's status is in the response event.
        statuses: dict[str, int] = {}
        page.on("response", lambda response: statuses.setdefault(response.url, response.status))
        try:
            response = await page.goto(url)
        except PlaywrightError as exc:
            refused = self.refusals.get(url)
            if refused is not None:
                return contract._refusal(refused)
            if url in statuses:
                return Result(status=statuses[url])
            return Result(error=str(exc))
        finally:
            await page.close()
        assert response is not None
        return Result(status=response.status, usage=self.gate.usage(url, response.headers))


class SubresourceClient(BrowserClient):
    """Each URL a page's ``fetch`` from a blank page of its own: a subresource."""

    async def get(self, url: str) -> Result:
        page = await self.context.new_page()
        answers: dict[str, tuple[int, dict[str, str]]] = {}
        page.on("response",
                lambda response: answers.setdefault(response.url,
                                                    (response.status, response.headers)))
        try:
            failure = await page.evaluate(
                "u => fetch(u, {mode: 'no-cors'}).then(() => '', e => String(e))", url)
        finally:
            await page.close()
        refused = self.refusals.get(url)
        if refused is not None:
            return contract._refusal(refused)
        if url in answers:
            status, headers = answers[url]
            return Result(status=status, usage=self.gate.usage(url, headers))
        return Result(error=failure or "no answer")


@dataclass
class BrowserDriver(contract.Driver):
    """The browser path: a context of ``browser`` attached to a gate for each run; each
    URL a navigation (``name`` "browser") or a subresource ("subresource")."""

    browser: Any = None

    @asynccontextmanager
    async def open(self, **options: Any) -> AsyncIterator[contract.Client]:
        async with RobotGate(contract.AGENT, is_private=contract.public_loopback_1,
                             **options) as gate:
            context = await self.browser.new_context(service_workers="block")
            kind = SubresourceClient if self.name == "subresource" else BrowserClient
            client = kind(gate, context)
            await attach(gate, context, on_refused=client.heard)
            try:
                yield client
            finally:
                await context.close()


@pytest.fixture
async def driver() -> AsyncIterator[BrowserDriver]:
    async with chromium() as browser:
        yield BrowserDriver("browser", browser)


CASES = [
    contract.test_a_disallowed_url_is_refused_and_an_allowed_page_reports_its_usage,
    contract.test_robots_txt_is_fetched_once_for_concurrent_requests,
    contract.test_the_delay_is_kept_between_requests,
    contract.test_retry_after_is_kept,
    contract.test_a_429_without_retry_after_backs_off,
    contract.test_latency_factor_widens_the_gap_after_a_slow_answer,
    contract.test_max_per_host_caps_the_requests_the_server_sees_at_once,
]


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[case.__name__[5:] for case in CASES])
async def test_the_browser_keeps_the_promise(case: Any, driver: BrowserDriver,
                                             public: Site) -> None:
    await case(driver, public)
    # Chromium asks for the icon of a page naming none past every route: attach gives each
    # page one of its own, so that no request leaves unjudged.
    assert "/favicon.ico" not in public.paths()


SUBRESOURCE_CASES = [
    contract.test_a_disallowed_url_is_refused_and_an_allowed_page_reports_its_usage,
    contract.test_robots_txt_is_fetched_once_for_concurrent_requests,
    contract.test_retry_after_is_kept,
    contract.test_a_429_without_retry_after_backs_off,
    contract.test_max_per_host_caps_the_requests_the_server_sees_at_once,
    contract.test_a_redirect_into_a_private_address_is_refused,
]


@pytest.mark.slow
@pytest.mark.parametrize("case", SUBRESOURCE_CASES,
                         ids=[case.__name__[5:] for case in SUBRESOURCE_CASES])
async def test_a_browsers_subresources_keep_the_promise(case: Any, driver: BrowserDriver,
                                                        public: Site, private: Site) -> None:
    driver.name = "subresource"
    args = (driver, public, private) if "private" in case.__name__ else (driver, public)
    await case(*args)
    assert "/favicon.ico" not in public.paths()


@pytest.mark.slow
async def test_the_browser_refuses_a_redirect_into_a_private_address(
        driver: BrowserDriver, public: Site, private: Site) -> None:
    await contract.test_a_redirect_into_a_private_address_is_refused(driver, public, private)


@pytest.mark.slow
async def test_the_browser_follows_private_to_private_without_credentials(
        driver: BrowserDriver, private: Site) -> None:
    await contract.test_private_to_private_is_followed_without_the_locations_credentials(
        driver, private)


@pytest.mark.slow
async def test_the_browser_tells_the_same_events_in_the_same_order(
        driver: BrowserDriver, public: Site) -> None:
    urls = [public.url(p) for p in PAGES]
    origin = public.url("")
    results, events = await _events(driver, urls, delay=0.2)
    assert [r.status for r in results] == [200, None, 429, 200], results
    assert results[1].refused == "rule"
    # The same story as every other path's; a browser may take longer between two
    # navigations than the delay asks, so a page need not wait (TurnWaited) for its turn.
    assert [[kind, where] for kind, where, _ in events if kind != "TurnWaited"] == [
        ["RobotsFetched", origin],
        ["ResponseAnswered", urls[0]],
        ["UrlSkipped", urls[1]],
        ["ResponseAnswered", urls[2]], ["BackoffStarted", origin],
        ["ResponseAnswered", urls[3]], ["BackoffEased", origin],
    ], events
    waited = [where for kind, where, _ in events if kind == "TurnWaited"]
    assert urls[0] in waited and urls[1] not in waited  # robots.txt's request was a turn


# -- a public page's pointer goes to the address its check found ------------------------------

@pytest.mark.slow
async def test_the_browser_sends_a_public_pages_http_pointer_to_the_address_it_checked(
        names: Names, system_names: Names) -> None:
    # The gate's look-ups find localhost public (127.0.0.3); the browser's client would
    # find 127.0.0.1, a private address here.  The hop goes to 127.0.0.3 at the port;
    # the cookies are the name's, sent and kept for it, none kept for the address.
    public = await Site(CHECKED, robots="User-agent: *\nAllow: /\n").start()
    inside = await Site("127.0.0.1", robots="User-agent: *\nAllow: /\n").start()
    checked = await site_at(CHECKED, inside.port, set_cookie="kept=2; Path=/; HttpOnly")
    checked.robots = "User-agent: *\nAllow: /\n"
    for table in (names, system_names):
        table.answers["localhost"] = [[CHECKED]]
    target = quote(f"http://localhost:{inside.port}/secret", safe="")
    try:
        async with chromium() as browser, RobotGate(
                contract.AGENT, is_private=checked_public,
                delay=0) as gate:
            context = await browser.new_context(service_workers="block")
            await context.add_cookies([{"name": "seen", "value": "1",
                                        "url": f"http://localhost:{inside.port}/"}])
            await attach(gate, context)
            page = await context.new_page()
            response = await page.goto(public.url("/redirect?to=" + target))
            assert response is not None and response.status == 200
            named = await context.cookies(f"http://localhost:{inside.port}/")
            at_address = await context.cookies(checked.url("/"))
            await context.close()
    finally:
        for site in (public, inside, checked):
            await site.close()
    assert inside.paths() == [] and inside.robots_hits == 0
    assert checked.paths() == ["/secret"]
    [(_, headers)] = checked.headers
    assert headers["Host"] == f"localhost:{inside.port}"
    assert headers.get("Cookie") == "seen=1"
    assert {(c.get("name"), c.get("value"), c.get("httpOnly")) for c in named} == {
        ("seen", "1", False), ("kept", "2", True)}, named
    assert at_address == [], at_address


# -- a subresource's redirect, and https pointers ---------------------------------------------


@pytest.mark.slow
async def test_a_subresource_redirects_robots_txt_request_is_guarded(
        driver: BrowserDriver, public: Site, private: Site, names: Names,
        system_names: Names) -> None:
    # The pointer check finds the name public; the gate's robots.txt request would
    # connect to a private address (rebinding): it is refused where it connects (and
    # counts as unavailable); the hop itself goes to the address the check found,
    # where nothing listens.
    system_names.answers["rebind.test"] = [[PUBLIC]]
    names.answers["rebind.test"] = [[PRIVATE]]
    url = f"http://rebind.test:{private.port}/secret"
    driver.name = "subresource"
    async with driver.open(delay=0) as client:
        [result] = await client.many([public.url("/redirect?to=" + quote(url, safe=""))])
        robots = client.gate.check(url)
    assert result.status is None, result
    assert private.robots_hits == 0 and private.paths() == []
    assert robots is not None and robots.outcome == "unavailable", robots
    assert "its connection reached a non-public address" in robots.reason, robots


class AllowAll:
    """A robots.txt transport that allows everything, asking no server."""

    async def send(self, request: RobotsRequest) -> RobotsResponse:
        return RobotsResponse(200, {}, b"User-agent: *\nAllow: /\n", url=request.url)


def certificates(where: Path) -> tuple[Path, ssl.SSLContext]:
    """A throwaway CA (its file, for the browser's client to trust) and a server TLS
    context with the CA's certificate for ``localhost``."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("no openssl on PATH: the https case needs certificates")

    def run(*args: str) -> None:
        subprocess.run([openssl, *args], check=True, capture_output=True, cwd=where)

    (where / "san").write_text("subjectAltName=DNS:localhost\n")
    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=Test CA",
        "-keyout", "ca.key", "-out", "ca.pem")
    run("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost", "-keyout", "leaf.key",
        "-out", "leaf.csr")
    run("x509", "-req", "-in", "leaf.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-days", "1", "-extfile", "san", "-out", "leaf.pem")
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(where / "leaf.pem", where / "leaf.key")
    return where / "ca.pem", server


@dataclass
class TlsSite:
    """An https server on ``host`` that notes each request's path and Host header."""

    host: str
    seen: list[tuple[str, str]]
    runner: web.AppRunner

    @classmethod
    async def start(cls, host: str, port: int, tls: ssl.SSLContext) -> TlsSite:
        seen: list[tuple[str, str]] = []

        async def handle(request: web.Request) -> web.Response:
            seen.append((request.path, request.headers.get("Host", "")))
            return web.Response(text="page")

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", handle)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, host, port, ssl_context=tls).start()
        return cls(host, seen, runner)


@pytest.mark.slow
@pytest.mark.parametrize("ignore_https_errors", [False, True])
async def test_the_browser_sends_a_public_pages_https_pointer_to_the_address_it_checked(
        ignore_https_errors: bool, tmp_path: Path, system_names: Names,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # As the http case: the gate's look-ups find localhost public (127.0.0.3), the
    # browser's client would find 127.0.0.1 (private here), and both serve localhost's
    # certificate.  The hop goes to 127.0.0.3, its certificate checked for localhost
    # (the client trusts the test's CA) unless the context ignores certificate errors.
    ca, tls = certificates(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(ca))  # the route's client reads it in attach
    public = await Site(CHECKED, robots="User-agent: *\nAllow: /\n").start()
    inside = await TlsSite.start("127.0.0.1", 0, tls)
    port = inside.runner.addresses[0][1]
    checked = await TlsSite.start(CHECKED, port, tls)
    system_names.answers["localhost"] = [[CHECKED]]
    pointer = quote(f"https://localhost:{port}/secret", safe="")
    try:
        async with chromium() as browser, RobotGate(
                contract.AGENT, is_private=checked_public, delay=0,
                network=Network(robots_transport=AllowAll())) as gate:
            context = await browser.new_context(ignore_https_errors=ignore_https_errors,
                                                 service_workers="block")
            await attach(gate, context)
            page = await context.new_page()
            response = await page.goto(public.url("/redirect?to=" + pointer))
            assert response is not None and response.status == 200
            await context.close()
    finally:
        await public.close()
        await inside.runner.cleanup()
        await checked.runner.cleanup()
    assert inside.seen == []
    assert checked.seen == [("/secret", f"localhost:{port}")]


# -- robots.txt through a context's own proxy --------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("given", [True, False])
async def test_the_pages_proxy_given_to_attach_carries_them_and_robots_txt(
        given: bool, public: Site) -> None:
    # The browser's own proxy is the black hole: the pages' proxy goes to attach.
    # Given, robots.txt and the page go through it and the site, reachable only through
    # the proxy, is crawled; not given, robots.txt asked direct is unreachable and no
    # page is fetched without it.
    url = f"http://web.invalid:{public.port}/page/1"
    async with forward_proxy(public) as proxy, chromium() as browser, RobotGate(
            contract.AGENT, delay=0) as gate:
        context = await browser.new_context(service_workers="block")
        with pytest.raises(UnsafeBrowser, match="socks5 proxy"):
            await attach(gate, context, proxy={"server": "socks5://127.0.0.1:1080"})
        await attach(gate, context, proxy={"server": proxy.url} if given else None)
        page = await context.new_page()
        try:
            response = await page.goto(url)
            status = response.status if response is not None else None
        except PlaywrightError:
            status = None
        decision = await gate.decide(url)
        await context.close()
    if given:
        # The route's client is the gate's (aiohttp): it forwards http, robots.txt too.
        assert status == 200 and proxy.forwarded == ["/robots.txt", "/page/1"], (status, proxy)
        assert proxy.tunnels == [], proxy
        assert public.robots_hits == 1 and public.paths() == ["/page/1"]
    else:
        assert status is None and decision.outcome == "unreachable", decision
        assert proxy.forwarded == [] and public.paths() == [] and public.robots_hits == 0


@pytest.mark.slow
async def test_a_context_of_its_own_proxy_is_refused(public: Site) -> None:
    # new_context(proxy=...) replaces the black hole for that context, and Playwright
    # does not let attach read it: attach's probe (a request no route fulfils, to a
    # listener of its own) goes through it, and the context is refused.
    async with forward_proxy(public) as proxy, chromium() as browser, RobotGate(
            contract.AGENT, delay=0) as gate:
        launched = await browser.new_context(service_workers="block")
        context = await launched.browser.new_context(service_workers="block",
                                                     proxy={"server": proxy.url})
        with pytest.raises(UnsafeBrowser, match=r"new_context\(proxy=...\)"):
            await attach(gate, context)
        await context.close()
    assert public.paths() == [] and public.robots_hits == 0


def test_a_proxys_route_is_the_request_clients() -> None:
    # Playwright's request client: a host:port server is http, a bypass domain matches
    # the name and every name under it.
    proxy: Any = {"server": "127.0.0.1:3128", "bypass": "intranet.test, .corp",
                  "username": "u", "password": "p"}
    assert via(proxy, "http://intranet.test/x") is None
    assert via(proxy, "http://wiki.intranet.test/x") is None
    assert via(proxy, "https://a.corp/") is None
    route = via(proxy, "http://example.com/")
    assert route is not None and route.proxy == "http://127.0.0.1:3128"
    assert route.proxy_headers == {"Proxy-Authorization": "Basic dTpw"}  # u:p
    assert via(proxy, "http://notintranet.test/") is not None
    assert via(None, "http://example.com/") is None
