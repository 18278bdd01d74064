"""robotgate.integrations.crawlee: a crawler's links carry their page, a page's
directives, a dead host, and crawlee's own HTTP-client contract.  The provenance
contract (tests/contract/test_provenance_paths.py) runs the rule's cases through the
client as these links reach it, and robots.txt through a request's proxy.

On loopback, as the private-address contract does: the gate's ``is_private`` lets
127.0.0.1 play a public site and 127.0.0.2 a private network; ``intranet.test``
resolves to 127.0.0.2 (the system's look-ups answer from a table).
"""

from __future__ import annotations

import socket
from collections.abc import Awaitable, Callable

import pytest

from robotgate import Disallowed, Error, RobotGate
from robotgate.policy.hops import REFUSED, RULE
from robotgate.policy.provenance import Provenance
from tests.contract.test_private_addresses import Names, names, system_names
from tests.contract.test_request_paths import PRIVATE, PUBLIC, public_loopback_1
from tests.support.pages_site import Answer, PagesSite

pytest.importorskip("crawlee", reason="crawlee is not installed (pip install 'robotgate[crawlee]')")
pytest.importorskip("bs4", reason="BeautifulSoup is not installed (crawlee's beautifulsoup extra)")

import impit
from crawlee import ConcurrencySettings, Request, RequestState
from crawlee.crawlers import (
    BasicCrawlingContext,
    BeautifulSoupCrawler,
    BeautifulSoupCrawlingContext,
)
from crawlee.http_clients import HttpClient, ImpitHttpClient
from crawlee.storage_clients import MemoryStorageClient
from pydantic import ValidationError

from robotgate.integrations.crawlee import (
    PROVENANCE,
    RobotGateHttpClient,
    RobotsUnreachable,
    provenance_of,
)

pytestmark = pytest.mark.slow  # crawlee crawls on loopback
__all__ = ["names", "system_names"]  # the contract's name tables, as this module's fixtures

AGENT = "TestBot/1.0 (+https://example.com/bot)"
ALLOW = Answer("User-agent: *\nAllow: /\n", content_type="text/plain")


def _page(*links: str, head: str = "") -> str:
    anchors = "".join(f'<a href="{link}">{link}</a>' for link in links)
    return f"<html><head>{head}<title>t</title></head><body>{anchors}</body></html>"


class Run:
    """One crawl's record: the URLs handled, refused (asked, refusal), failed."""

    def __init__(self) -> None:
        self.handled: list[str] = []
        self.refused: list[tuple[str, Disallowed]] = []
        self.failed: list[tuple[str, Exception]] = []
        self.nofollow: dict[str, bool] = {}

    def client(self, gate: RobotGate) -> RobotGateHttpClient:
        return RobotGateHttpClient(gate, on_refused=lambda url, no: self.refused.append((url, no)))

    def crawler(self, client: RobotGateHttpClient,
                enqueue: Callable[[BeautifulSoupCrawlingContext], Awaitable[None]]
                ) -> BeautifulSoupCrawler:
        crawler = BeautifulSoupCrawler(
            http_client=client, storage_client=MemoryStorageClient(), max_request_retries=1,
            concurrency_settings=ConcurrencySettings(min_concurrency=2, desired_concurrency=2,
                                                     max_concurrency=2),
            configure_logging=False)

        @crawler.router.default_handler
        async def handler(context: BeautifulSoupCrawlingContext) -> None:
            self.handled.append(context.request.url)
            self.nofollow[context.request.url] = (await client.directives(context)).nofollow
            await enqueue(context)

        @crawler.failed_request_handler
        async def on_failure(context: BasicCrawlingContext, error: Exception) -> None:
            self.failed.append((context.request.url, error))

        return crawler


# -- links carry their page (issue 76, 3) ---------------------------------------------------


async def test_links_of_a_public_page_into_a_private_network_are_not_fetched(
        names: Names, system_names: Names) -> None:
    run = Run()
    async with PagesSite({"/robots.txt": ALLOW}, PUBLIC) as public, \
            PagesSite({"/robots.txt": ALLOW, "/secret": Answer("secret")}, PRIVATE) as private:
        for table in (names, system_names):
            table.answers["intranet.test"] = [[PRIVATE]]
        literal, named = private.url("/secret"), f"http://intranet.test:{private.port}/secret"
        public.answers["/"] = Answer(_page(literal, named, "/next"))
        public.answers["/next"] = Answer(_page())
        async with RobotGate(AGENT, is_private=public_loopback_1, delay=0) as gate:
            client = run.client(gate)
            crawler = run.crawler(client, lambda c: client.enqueue_links(c, strategy="all"))
            await crawler.run([public.url("/")])
    assert sorted(run.handled) == [public.url("/"), public.url("/next")]
    assert private.hits == {}  # neither page nor robots.txt
    assert sorted(url for url, _ in run.refused) == sorted([literal, named])
    for _, no in run.refused:
        assert no.decision.outcome == REFUSED and RULE in no.decision.reason, no.decision
        assert PRIVATE in no.decision.reason, no.decision
    assert run.failed == []


def _site_links(public: PagesSite, private: PagesSite) -> tuple[str, str]:
    """A public site of five pages whose links lead to each other, to a disallowed
    page and into the private network (a literal address, a name resolving there):
    the private site's URLs."""
    literal, named = private.url("/secret"), f"http://intranet.test:{private.port}/secret"
    public.answers.update({
        "/robots.txt": Answer("User-agent: *\nDisallow: /private\n", content_type="text/plain"),
        "/": Answer(_page("/a", "/b", "/private/x", literal, named)),
        "/a": Answer(_page("/b", "/c", "/")),
        "/b": Answer(_page("/d", named)),
        "/c": Answer(_page(literal)),
        "/d": Answer(_page("/a"))})
    return literal, named


async def _enqueue_links(context: BeautifulSoupCrawlingContext) -> None:
    await context.enqueue_links(strategy="all")


async def _add_requests(context: BeautifulSoupCrawlingContext) -> None:
    await context.add_requests([str(a["href"]) for a in context.soup.find_all("a")])


@pytest.mark.parametrize("enqueue", [_enqueue_links, _add_requests])
async def test_crawlees_own_enqueue_crawls_a_public_site_but_not_into_a_private_network(
        names: Names, system_names: Names,
        enqueue: Callable[[BeautifulSoupCrawlingContext], Awaitable[None]]) -> None:
    # context.enqueue_links and context.add_requests cannot say which page a link is
    # of: it is judged as a public page's.
    run = Run()
    async with PagesSite({}, PUBLIC) as public, \
            PagesSite({"/robots.txt": ALLOW, "/secret": Answer("secret")}, PRIVATE) as private:
        for table in (names, system_names):
            table.answers["intranet.test"] = [[PRIVATE]]
        literal, named = _site_links(public, private)
        async with RobotGate(AGENT, is_private=public_loopback_1, delay=0) as gate:
            await run.crawler(run.client(gate), enqueue).run([public.url("/")])
    assert sorted(run.handled) == [public.url(path) for path in ("/", "/a", "/b", "/c", "/d")]
    assert all(public.hits[path] == 1 for path in ("/", "/a", "/b", "/c", "/d"))
    assert public.hits["/private/x"] == 0 and private.hits == {}  # nor its robots.txt
    refused = {url: no.decision for url, no in run.refused}
    assert sorted(refused) == sorted([public.url("/private/x"), literal, named])
    assert "Disallow: /private" in refused[public.url("/private/x")].reason
    for url in (literal, named):
        assert refused[url].outcome == REFUSED and RULE in refused[url].reason, refused[url]
    assert run.failed == []


async def test_a_private_pages_links_go_into_its_network_only_when_they_carry_their_page(
        ) -> None:
    # Enqueued by crawlee's own enqueue_links, the private page's link cannot say its
    # page, and counts as a public page's: never into a private network on a guess.
    # Enqueued by the client's, it carries its page, and is followed.
    for enqueue, followed in ((None, False), ("client", True)):
        run = Run()
        async with PagesSite({"/robots.txt": ALLOW, "/next": Answer(_page())},
                             PRIVATE) as private:
            private.answers["/"] = Answer(_page("/next"))
            async with RobotGate(AGENT, is_private=public_loopback_1, delay=0) as gate:
                client = run.client(gate)
                crawler = run.crawler(client, (lambda c: c.enqueue_links()) if enqueue is None
                                      else client.enqueue_links)
                await crawler.run([private.url("/")])
        assert private.hits["/next"] == int(followed), enqueue
        assert sorted(run.handled) == [private.url("/"), *[private.url("/next")] * followed]
        if not followed:
            [(url, no)] = run.refused
            assert url == private.url("/next") and no.decision.outcome == REFUSED
            assert RULE in no.decision.reason
            assert "RobotGateHttpClient.enqueue_links(context)" in no.decision.reason
        else:
            assert run.refused == []
        assert run.failed == []


async def test_links_handed_over_as_requests_carry_their_page_too(
        names: Names, system_names: Names) -> None:
    run = Run()
    async with PagesSite({"/robots.txt": ALLOW, "/next": Answer(_page())}, PUBLIC) as public, \
            PagesSite({"/robots.txt": ALLOW}, PRIVATE) as private:
        public.answers["/"] = Answer(_page())
        inside = private.url("/secret")
        async with RobotGate(AGENT, is_private=public_loopback_1, delay=0) as gate:
            client = run.client(gate)

            async def enqueue(context: BeautifulSoupCrawlingContext) -> None:
                if context.request.url.endswith("/"):
                    await client.enqueue_links(context, strategy="all", requests=[
                        "/next", Request.from_url(inside), "mailto:x@a.test"])

            await run.crawler(client, enqueue).run([public.url("/")])
    assert sorted(run.handled) == [public.url("/"), public.url("/next")]
    assert [url for url, _ in run.refused] == [inside] and private.hits == {}


def test_provenance_is_read_from_user_data() -> None:
    assert provenance_of(Request.from_url("http://a.test/")).is_input
    linked = Request.from_url("http://a.test/x", user_data={
        PROVENANCE: {"page": "http://a.test/", "public": None}})
    linked.crawl_depth = 1
    assert provenance_of(linked) == Provenance("http://a.test/", None)
    # Added from a page that is not said, or said in a way that cannot be read: a
    # public page's pointer.
    unsaid = Request.from_url("http://a.test/y")
    unsaid.crawl_depth = 1
    garbled = Request.from_url("http://a.test/z", user_data={PROVENANCE: {"page": 3}})
    for request in (unsaid, garbled):
        assert provenance_of(request) == Provenance("", True), request


# -- a page's directives (issue 78, 4) -------------------------------------------------------


async def test_a_nofollow_page_enqueues_no_links() -> None:
    run = Run()
    async with PagesSite({"/robots.txt": ALLOW}) as site:
        site.answers.update({
            "/meta": Answer(_page("/a", head='<meta name="robots" content="nofollow">')),
            "/header": Answer(_page("/b"), headers={"X-Robots-Tag": "testbot: nofollow"}),
            "/other": Answer(_page("/c"), headers={"X-Robots-Tag": "otherbot: nofollow"}),
            **{path: Answer(_page()) for path in ("/a", "/b", "/c")}})
        async with RobotGate(AGENT, delay=0) as gate:
            client = run.client(gate)
            crawler = run.crawler(client, client.enqueue_links)
            await crawler.run([site.url(path) for path in ("/meta", "/header", "/other")])
    assert site.hits["/a"] == 0 and site.hits["/b"] == 0 and site.hits["/c"] == 1
    assert run.nofollow == {site.url("/meta"): True, site.url("/header"): True,
                            site.url("/other"): False, site.url("/c"): False}


# -- a dead host (issue 77, 6) ---------------------------------------------------------------


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind((PUBLIC, 0))
        port: int = probe.getsockname()[1]
    return port


async def test_a_dead_hosts_robots_txt_is_a_failed_request_not_a_refusal() -> None:
    run = Run()
    url = f"http://{PUBLIC}:{_closed_port()}/"
    async with RobotGate(AGENT, delay=0) as gate:
        client = run.client(gate)
        request = Request.from_url(url)
        await run.crawler(client, client.enqueue_links).run([request])
    assert run.refused == [] and run.handled == []
    [(failed_url, error)] = run.failed
    assert failed_url == url and isinstance(error, RobotsUnreachable), error
    assert "robots.txt is unreachable" in error.decision.reason
    assert request.state != RequestState.SKIPPED


# -- crawlee's HTTP-client contract (issue 76) -------------------------------------------------


def _site() -> dict[str, Answer]:
    return {"/robots.txt": Answer("User-agent: *\nDisallow: /private\n",
                                  content_type="text/plain"),
            "/hop": Answer(status=302, headers={"Location": "/private/x"}),
            "/to-page": Answer(status=302, headers={"Location": "/page"}),
            "/page": Answer("page")}


CLIENTS: dict[str, Callable[[RobotGate], HttpClient]] = {
    "impit": lambda gate: ImpitHttpClient(follow_redirects=False),
    "robotgate": lambda gate: RobotGateHttpClient(gate, follow_redirects=False),
}


@pytest.mark.parametrize("name", CLIENTS)
async def test_follow_redirects_false_returns_the_redirect(name: str) -> None:
    async with PagesSite(_site()) as site, RobotGate(AGENT, delay=0) as gate, \
            CLIENTS[name](gate) as client:
        answer = await client.send_request(site.url("/hop"))
        async with client.stream(site.url("/to-page")) as streamed:
            streamed_status = streamed.status_code
    assert answer.status_code == 302 and answer.headers["location"] == "/private/x"
    assert streamed_status == 302
    assert site.hits["/private/x"] == 0 and site.hits["/page"] == 0


async def test_a_followed_redirect_is_judged_hop_by_hop() -> None:
    async with PagesSite(_site()) as site, RobotGate(AGENT, delay=0) as gate, \
            RobotGateHttpClient(gate) as client:
        assert (await client.send_request(site.url("/to-page"))).status_code == 200
        with pytest.raises(Disallowed) as refused:
            await client.send_request(site.url("/hop"))
    assert refused.value.url == site.url("/private/x")
    assert site.hits["/private/x"] == 0 and site.hits["/page"] == 1


@pytest.mark.parametrize("name", CLIENTS)
@pytest.mark.parametrize("url", ["ftp://user:secret@a.test/x", "file:///etc/passwd",
                                 "javascript:alert(1)"])
async def test_a_non_http_url_raises_what_crawlees_clients_raise(name: str, url: str) -> None:
    async with RobotGate(AGENT, delay=0) as gate, CLIENTS[name](gate) as client:
        with pytest.raises(ValidationError) as raised:
            await client.send_request(url)
        with pytest.raises(ValidationError):
            async with client.stream(url):
                pass
    if name == "robotgate":
        assert "secret" not in str(raised.value)


async def test_too_many_redirects_raise_what_crawlees_client_raises() -> None:
    async with PagesSite({"/robots.txt": ALLOW,
                          "/loop": Answer(status=302, headers={"Location": "/loop"})}) as site, \
            RobotGate(AGENT, delay=0) as gate, RobotGateHttpClient(gate) as client:
        with pytest.raises(impit.TooManyRedirects) as raised:
            await client.send_request(site.url("/loop"))
    assert isinstance(raised.value, Error)
    assert site.hits["/loop"] == 21  # the first request and 20 hops


async def test_max_redirects_is_the_limit_and_says_so_as_crawlees_client() -> None:
    # As ImpitHttpClient(max_redirects=2) alone: its limit, in its words.
    async with PagesSite({"/robots.txt": ALLOW,
                          "/loop": Answer(status=302, headers={"Location": "/loop"})}) as site, \
            RobotGate(AGENT, delay=0) as gate, RobotGateHttpClient(
                gate, max_redirects=2) as client:
        with pytest.raises(impit.TooManyRedirects, match=r"^Exceeded the limit of 2 redirects "):
            await client.send_request(site.url("/loop"))
    assert site.hits["/loop"] == 3  # the first request and 2 hops
