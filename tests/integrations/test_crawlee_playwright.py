"""robotgate.integrations.crawlee with crawlee's PlaywrightCrawler: the system Chromium's
pages go through the gate (``RobotGateHttpClient.attach``), and a refused page is final:
skipped with its reason, not retried, no tracebacks."""

from __future__ import annotations

import logging
import socket
from pathlib import Path

import pytest

from robotgate import BodyTooLarge, Disallowed, RobotGate
from robotgate.gate.aiohttp_bodies import MAX_BODY
from robotgate.policy.hops import REFUSED, RULE
from tests.contract.test_private_addresses import Names, names, system_names
from tests.contract.test_provenance_paths import ForwardProxy
from tests.contract.test_request_paths import PRIVATE, PUBLIC, public_loopback_1
from tests.support.browser import CHROMIUM_ARGS, chromium_path
from tests.support.pages_site import Answer, PagesSite

pytest.importorskip("crawlee", reason="crawlee is not installed (pip install 'robotgate[crawlee]')")
pytest.importorskip("browserforge", reason="crawlee's playwright extra is not installed "
                    "(pip install 'crawlee[playwright]')")

from crawlee import ConcurrencySettings, Request, RequestState
from crawlee.crawlers import BasicCrawlingContext, PlaywrightCrawler, PlaywrightCrawlingContext
from crawlee.proxy_configuration import ProxyConfiguration
from crawlee.storage_clients import MemoryStorageClient

from robotgate.integrations.crawlee import RobotGateHttpClient
from robotgate.integrations.playwright import LAUNCH_ARGS, preloading_off

pytestmark = pytest.mark.slow  # each test starts a Chromium
__all__ = ["names", "system_names"]  # the contract's name tables, as this module's fixtures

AGENT = "TestBot/1.0 (+https://example.com/bot)"
ROBOTS = Answer("User-agent: *\nDisallow: /private\n", content_type="text/plain")


def _page(*links: str, head: str = "") -> str:
    anchors = "".join(f'<a href="{link}">{link}</a>' for link in links)
    return f"<html><head>{head}<title>t</title></head><body>{anchors}</body></html>"


class Run:
    """One crawl's record: the URLs handled, refused (asked, refusal), failed."""

    def __init__(self, profile: Path) -> None:
        self.profile = profile  # the browser's profile folder
        self.handled: list[str] = []
        self.loaded: list[str | None] = []
        self.refused: list[tuple[str, Disallowed]] = []
        self.failed: list[tuple[str, Exception]] = []

    def crawler(self, gate: RobotGate, max_request_retries: int = 3,
                follow_redirects: bool = True,
                proxy_configuration: ProxyConfiguration | None = None,
                max_bytes: int | None = MAX_BODY) -> PlaywrightCrawler:
        client = RobotGateHttpClient(
            gate, follow_redirects=follow_redirects, max_bytes=max_bytes,
            on_refused=lambda url, no: self.refused.append((url, no)))
        crawler = PlaywrightCrawler(
            http_client=client, storage_client=MemoryStorageClient(), headless=True,
            # What robotgate's attach asks (docs/browser.md): a persistent context on a
            # profile with preloading off, no service or shared workers.
            user_data_dir=preloading_off(str(self.profile)), use_incognito_pages=False,
            browser_launch_options={"executable_path": chromium_path(),
                                    "args": [*CHROMIUM_ARGS, *LAUNCH_ARGS]},
            browser_new_context_options={"service_workers": "block"},
            # One page at a time: two pages starting at once may make crawlee launch a
            # second browser on the same profile, which Chromium refuses (ProcessSingleton).
            concurrency_settings=ConcurrencySettings(desired_concurrency=1, max_concurrency=1),
            max_request_retries=max_request_retries, proxy_configuration=proxy_configuration,
            configure_logging=False)
        client.attach(crawler)

        @crawler.router.default_handler
        async def handler(context: PlaywrightCrawlingContext) -> None:
            self.handled.append(context.request.url)
            self.loaded.append(context.request.loaded_url)
            await client.enqueue_links(context, strategy="all")

        @crawler.failed_request_handler
        async def on_failure(context: BasicCrawlingContext, error: Exception) -> None:
            self.failed.append((context.request.url, error))

        return crawler


def _loud(caplog: pytest.LogCaptureFixture) -> list[str]:
    """What the run logged at INFO or above that tells of an error: a traceback, a
    closed target, a retry."""
    return [record.getMessage() for record in caplog.records if record.levelno >= logging.INFO
            and (record.exc_info or "TargetClosedError" in record.getMessage()
                 or "Traceback" in record.getMessage() or "Retrying" in record.getMessage())]


async def test_a_refused_page_is_skipped_once_with_its_reason(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    run = Run(tmp_path)
    async with PagesSite({"/robots.txt": ROBOTS}) as site:
        site.answers.update({"/": Answer(_page("/page", "/private/x")), "/page": Answer(_page()),
                             "/private/x": Answer("secret")})
        asked = Request.from_url(site.url("/private/first"))
        async with RobotGate(AGENT, delay=0) as gate:
            await run.crawler(gate).run([site.url("/"), asked])
    assert sorted(run.handled) == [site.url("/"), site.url("/page")]
    assert [path for path in site.hits if path.startswith("/private")] == []
    assert sorted(url.rsplit("/", 1)[1] for url, _ in run.refused) == ["first", "x"]
    assert all("Disallow: /private" in no.decision.reason for _, no in run.refused)
    assert asked.state == RequestState.SKIPPED
    assert run.failed == [] and _loud(caplog) == []


async def test_a_proxy_configurations_proxy_carries_the_pages_and_their_robots_txt(
        tmp_path: Path, system_names: Names) -> None:
    # Only the proxy knows web.invalid: a request sent past it (robots.txt too) could
    # not reach the site, and attach would refuse a browser given the proxy itself.
    run = Run(tmp_path)
    async with PagesSite({"/robots.txt": ROBOTS}) as site:
        # The page's stylesheet, a public page's pointer, goes through the proxy by its
        # name, which the proxy connects (docs/bad-input.md: through a proxy, the check's
        # look-up judges).
        system_names.answers["web.invalid"] = [[PUBLIC]]
        site.answers.update({"/": Answer(_page(head="<link rel=stylesheet href=/s.css>")),
                             "/s.css": Answer("b{}", content_type="text/css"),
                             "/private/x": Answer("secret")})
        proxy = await ForwardProxy(site.port).start()
        try:
            url = f"http://web.invalid:{site.port}"
            async with RobotGate(AGENT, is_private=public_loopback_1, delay=0) as gate:
                await run.crawler(gate, max_request_retries=0, proxy_configuration=(
                    ProxyConfiguration(proxy_urls=[proxy.url]))).run([f"{url}/",
                                                                      f"{url}/private/x"])
        finally:
            await proxy.close()
    assert run.handled == [f"{url}/"] and run.failed == []
    assert [asked for asked, _ in run.refused] == [f"{url}/private/x"]
    assert proxy.forwarded == ["/robots.txt", "/", "/s.css"] and site.hits["/robots.txt"] == 1
    assert site.hits["/"] == 1 and site.hits["/private/x"] == 0
    assert proxy.unknown == [] and site.hits["/s.css"] == 1


async def test_a_refused_redirect_hop_is_skipped_too(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    run = Run(tmp_path)
    async with PagesSite({"/robots.txt": ROBOTS}) as site:
        site.answers.update({"/hop": Answer(status=302, headers={"Location": "/private/x"}),
                             "/private/x": Answer("secret")})
        asked = Request.from_url(site.url("/hop"))
        async with RobotGate(AGENT, delay=0) as gate:
            await run.crawler(gate).run([asked])
    assert site.hits["/hop"] == 1 and site.hits["/private/x"] == 0
    [(url, no)] = run.refused
    assert url == site.url("/hop") and no.url == site.url("/private/x")
    assert asked.state == RequestState.SKIPPED
    assert run.failed == [] and run.handled == [] and _loud(caplog) == []


async def test_an_answer_over_max_bytes_is_refused_and_the_crawl_goes_on(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # A page (crawlee's navigation), a request of its handler (context.send_request,
    # sent by the client) and a request of the page (attach's route) whose answer is
    # past max_bytes: each refused with the reason, read no further; the big page is
    # skipped, not retried, and the crawl goes on to the next page.
    caplog.set_level(logging.INFO)
    limit, big = 1 << 20, Answer(b"<html><body>" + b"x" * (4 << 20) + b"</body></html>")
    run = Run(tmp_path)
    sent: list[str] = []
    fetched: list[object] = []
    async with PagesSite({"/robots.txt": ROBOTS, "/big": big,
                          "/small": Answer(_page())}) as site, RobotGate(AGENT, delay=0) as gate:
        crawler = run.crawler(gate, max_bytes=limit)

        @crawler.router.handler("sized")
        async def handler(context: PlaywrightCrawlingContext) -> None:
            run.handled.append(context.request.url)
            try:
                await context.send_request(site.url("/big"))
            except Disallowed as refused:
                sent.append(refused.decision.outcome)
            fetched.append(await context.page.evaluate(
                "fetch('/big').then(r => r.text()).then(t => t.length, () => 'refused')"))

        await crawler.run([Request.from_url(site.url("/big"), label="sized"),
                           Request.from_url(site.url("/small"), label="sized")])
    assert run.handled == [site.url("/small")]
    assert sent == [BodyTooLarge.OUTCOME] and fetched == ["refused"]
    assert [(url, no.decision.outcome) for url, no in run.refused] == [
        (site.url("/big"), BodyTooLarge.OUTCOME)] * 2
    assert all(f"{limit:,} bytes" in no.decision.reason and "max_bytes" in no.decision.reason
               for _, no in run.refused)
    assert site.hits["/big"] == 3  # the page once (not retried), send_request, the fetch
    assert run.failed == [] and _loud(caplog) == []


async def test_a_followed_redirect_is_sent_once_and_loads_its_page(tmp_path: Path) -> None:
    run = Run(tmp_path)
    async with PagesSite({"/robots.txt": ROBOTS}) as site:
        site.answers.update({"/hop": Answer(status=302, headers={"Location": "/dir/page"}),
                             "/dir/page": Answer(_page())})
        async with RobotGate(AGENT, delay=0) as gate:
            await run.crawler(gate).run([site.url("/hop")])
    assert site.hits["/hop"] == 1 and site.hits["/dir/page"] == 1
    assert run.loaded == [site.url("/dir/page")]


async def test_a_pages_redirect_is_followed_as_chromium_follows_it_whatever_the_clients_setting(
        tmp_path: Path) -> None:
    # follow_redirects is the client's (its requests' answers); the browser's navigation
    # follows as Chromium alone does, each hop judged by attach's route.
    run = Run(tmp_path)
    async with PagesSite({"/robots.txt": ROBOTS}) as site:
        site.answers.update({"/hop": Answer(status=302, headers={"Location": "/page"}),
                             "/page": Answer(_page())})
        async with RobotGate(AGENT, delay=0) as gate:
            await run.crawler(gate, follow_redirects=False).run([site.url("/hop")])
    assert site.hits["/hop"] == 1 and site.hits["/page"] == 1
    assert run.loaded == [site.url("/page")]


async def test_a_dead_hosts_page_is_a_failed_request(tmp_path: Path) -> None:
    run = Run(tmp_path)
    with socket.socket() as probe:
        probe.bind((PUBLIC, 0))
        url = f"http://{PUBLIC}:{probe.getsockname()[1]}/"
    async with RobotGate(AGENT, delay=0) as gate:
        await run.crawler(gate, max_request_retries=0).run([url])
    assert run.refused == [] and run.handled == []
    assert [failed for failed, _ in run.failed] == [url]


async def test_a_navigation_crawlee_would_send_past_the_route_is_not_sent(tmp_path: Path) -> None:
    # With its own headers or method, crawlee sends the navigation with route.continue_.
    run = Run(tmp_path)
    async with PagesSite({"/robots.txt": ROBOTS, "/page": Answer(_page())}) as site:
        asked = Request.from_url(site.url("/page"), headers={"X-Mine": "1"})
        async with RobotGate(AGENT, delay=0) as gate:
            await run.crawler(gate).run([asked])
    assert site.hits["/page"] == 0 and run.handled == [] and run.failed == []
    [(url, no)] = run.refused
    assert url == site.url("/page") and "own method or headers" in no.decision.reason
    assert asked.state == RequestState.SKIPPED


async def test_links_of_a_public_page_into_a_private_network_are_not_visited(tmp_path: Path,
        names: Names, system_names: Names) -> None:
    run = Run(tmp_path)
    async with PagesSite({"/robots.txt": ROBOTS}, PUBLIC) as public, \
            PagesSite({"/robots.txt": ROBOTS, "/secret": Answer("secret")}, PRIVATE) as private:
        for table in (names, system_names):
            table.answers["intranet.test"] = [[PRIVATE]]
        literal, named = private.url("/secret"), f"http://intranet.test:{private.port}/secret"
        public.answers["/"] = Answer(_page(literal, named))
        async with RobotGate(AGENT, is_private=public_loopback_1, delay=0) as gate:
            await run.crawler(gate).run([public.url("/")])
    assert run.handled == [public.url("/")]
    assert private.hits == {}
    assert sorted(url for url, _ in run.refused) == sorted([literal, named])
    for _, no in run.refused:
        assert no.decision.outcome == REFUSED and RULE in no.decision.reason, no.decision
    assert run.failed == []


def test_attach_refuses_a_crawler_with_another_http_client() -> None:
    crawler = PlaywrightCrawler(storage_client=MemoryStorageClient(), configure_logging=False)
    with pytest.raises(ValueError, match="http_client="):
        RobotGateHttpClient(RobotGate(AGENT)).attach(crawler)


async def test_what_a_crawled_page_sends_past_its_route_reaches_nothing(tmp_path: Path) -> None:
    # attach gives crawlee's browser no network but the gate (launch_options), on a plain
    # profile: a download, a WebSocket to a private address and a keepalive fetch as
    # crawlee closes the page reach nothing.
    import asyncio

    connections: list[int] = []
    listener = await asyncio.start_server(lambda r, w: connections.append(1), PRIVATE, 0)
    port = listener.sockets[0].getsockname()[1]
    html = (f"<html><body><a id='go' href='/private/download.bin' download>x</a><script>"
            f"new WebSocket('ws://{PRIVATE}:{port}/');"
            "addEventListener('pagehide', () => fetch('/private/bye', {keepalive: true}))"
            "</script></body></html>")
    handled: list[str] = []
    failed: list[str] = []
    try:
        async with PagesSite({"/robots.txt": ROBOTS, "/": Answer(html)}) as site, \
                RobotGate(AGENT, delay=0) as gate:
            client = RobotGateHttpClient(gate)
            crawler = PlaywrightCrawler(
                http_client=client, storage_client=MemoryStorageClient(), headless=True,
                user_data_dir=str(tmp_path), use_incognito_pages=False,
                browser_launch_options={"executable_path": chromium_path(),
                                        "args": CHROMIUM_ARGS},
                browser_new_context_options={"service_workers": "block"},
                concurrency_settings=ConcurrencySettings(desired_concurrency=1,
                                                         max_concurrency=1),
                max_request_retries=0, configure_logging=False)
            client.attach(crawler)

            @crawler.router.default_handler
            async def handler(context: PlaywrightCrawlingContext) -> None:
                await context.page.click("#go")
                await asyncio.sleep(1.5)  # what escaped arrived within a second before
                handled.append(context.request.url)

            @crawler.failed_request_handler
            async def on_failure(context: BasicCrawlingContext, error: Exception) -> None:
                failed.append(repr(error))

            await crawler.run([site.url("/")])
            await asyncio.sleep(1.0)  # the keepalive fetch of the closed page
    finally:
        listener.close()
        await listener.wait_closed()
    assert (handled, failed) == ([site.url("/")], [])
    assert [path for path in site.hits if path.startswith("/private")] == []
    assert connections == []


def test_attach_refuses_a_browser_launched_with_a_proxy_of_its_own() -> None:
    crawler = PlaywrightCrawler(
        http_client=(client := RobotGateHttpClient(RobotGate(AGENT))),
        storage_client=MemoryStorageClient(), configure_logging=False,
        browser_launch_options={"proxy": {"server": "http://127.0.0.1:3128"}})
    with pytest.raises(ValueError, match="black hole"):
        client.attach(crawler)



# A page that tells what an earlier page of the tab left (sessionStorage, window.name),
# leaves some itself, and sends a request every 50 ms and a beacon as it goes to another
# site ({ticks}: its origin, where they wait for their turns apart from the pages'), each
# named by the page's query.
STATEFUL = ('<html><body><p id="seen"></p><script>document.getElementById("seen")'
            '.textContent = "left:" + sessionStorage.getItem("left") + "," + window.name + ";";'
            'sessionStorage.setItem("left", "stored"); window.name = "named";'
            'const at = "{ticks}/tick/" + location.search.slice(1); let n = 0;'
            'setInterval(() => fetch(at + "/" + n++, {{mode: "no-cors"}}), 50);'
            'addEventListener("pagehide", () => navigator.sendBeacon(at + "/bye"));'
            '</script></body></html>')


async def test_a_requests_page_leaves_nothing_behind(tmp_path: Path) -> None:
    # Each request's page is closed after its handler: none of its requests (its
    # timers' waiting for their turn, its beacon) leaves after, and the next request's
    # page reads none of its sessionStorage and window.name.
    import asyncio

    seen: list[str] = []
    ticks_of_the_first: list[int] = []
    run = Run(tmp_path)

    async with PagesSite({}, host="127.0.0.3") as ticks, \
            PagesSite({"/robots.txt": ROBOTS}) as site, RobotGate(AGENT, delay=0.3) as gate:
        page = Answer(STATEFUL.format(ticks=ticks.origin))
        site.answers.update({"/?a": page, "/?b": page})
        crawler = run.crawler(gate)

        def sent_by_the_first() -> int:
            return sum(hits for path, hits in ticks.hits.items() if path.startswith("/tick/a/"))

        @crawler.router.handler("stateful")
        async def handler(context: PlaywrightCrawlingContext) -> None:
            seen.append(await context.page.inner_text("#seen"))
            if context.request.url.endswith("?a"):
                await asyncio.sleep(1)  # the timer runs, its requests wait their turns
            else:  # the first request's page closed: what it sends from now on
                ticks_of_the_first.append(sent_by_the_first())
                await asyncio.sleep(2)
                ticks_of_the_first.append(sent_by_the_first())

        await crawler.run([Request.from_url(site.url("/?a"), label="stateful"),
                           Request.from_url(site.url("/?b"), label="stateful")])
    assert run.failed == []
    assert seen == ["left:null,;", "left:null,;"]
    assert ticks_of_the_first[0] > 0
    assert ticks_of_the_first[0] == ticks_of_the_first[1]
