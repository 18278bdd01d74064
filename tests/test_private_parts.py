"""Other libraries' private parts (src/robotgate/private_parts.py): a canary for each,
which fails naming the part when the installed library lacks it or no longer uses it
as relied on; and the paths that fail closed when one is missing."""

from __future__ import annotations

import asyncio
import importlib
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from types import SimpleNamespace
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from yarl import URL

from robotgate import Disallowed, RobotGate
from robotgate.gate import aiohttp_bodies, aiohttp_client
from robotgate.private_parts import (
    CONNECTOR_POOL,
    CONNECTOR_RESOLVER,
    CRAWL4AI_FIELDS,
    CRAWL4AI_START,
    CRAWLEE_BROWSER_POOL,
    CRAWLEE_CLIENT_KWARGS,
    CRAWLEE_HTTP_CLIENT,
    CRAWLEE_VALIDATE_URL,
    HTTPX_NETWORK_BACKEND,
    HTTPX_PROXY_URL,
    LAST_LOOK_TRACE,
    PARTS,
    PLAYWRIGHT_MAPPING,
    PLAYWRIGHT_OPTIONS,
    REDIS_CLUSTER_INITIALIZE,
    REQUEST_TRACES,
    RESPONSE_BODY,
    RETRY_CONNECTION,
    SCRAPY_CONNECTION_ASKED,
    SCRAPY_HANDLER_POOL,
    PrivatePart,
    PrivatePartMissing,
    installed,
)

AGENT = "PartsBot/1.0"


def _source(owner: object) -> str:
    return inspect.getsource(owner)  # type: ignore[arg-type]


def _module(name: str) -> Any:
    return pytest.importorskip(name, reason=f"{name} is not installed")


# -- the canaries ----------------------------------------------------------------------------


async def retry_connection() -> None:
    # aiohttp still has the switch, and its request still reads it.
    assert "_retry_connection" in aiohttp.ClientSession.ATTRS
    async with aiohttp.ClientSession() as session:
        assert session._retry_connection is True
        assert aiohttp_client.resends_off(aiohttp_client.without_resends(session))
    assert "self._retry_connection" in _source(aiohttp.ClientSession._request)



@asynccontextmanager
async def _serving(answer: Callable[[web.Request], Awaitable[web.StreamResponse]],
                   ) -> AsyncIterator[str]:
    """``answer`` served on loopback for every GET: its base URL."""
    app = web.Application()
    app.router.add_get("/{tail:.*}", answer)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


async def request_traces() -> None:
    # Every request of one call (its redirect hop here) carries the call's one list.
    seen: list[object] = []

    async def record(req: aiohttp.ClientRequest, handler: Any) -> aiohttp.ClientResponse:
        seen.append(req._traces)
        return await handler(req)

    async def answer(request: web.Request) -> web.StreamResponse:
        if request.path == "/from":
            return web.Response(status=302, headers={"Location": "/to"})
        return web.Response(text="done")

    async with _serving(answer) as base, aiohttp.ClientSession(middlewares=(record,)) as session:
        for _ in range(2):  # two calls: a list each
            async with session.get(f"{base}/from") as resp:
                assert resp.status == 200
    assert len(seen) == 4 and all(isinstance(traces, list) for traces in seen)
    assert seen[0] is seen[1] and seen[2] is seen[3] and seen[0] is not seen[2]


async def last_look_trace() -> None:
    # A trace put in a request's list in a middleware is told as the headers are about
    # to be written, and what it raises then stops them: nothing reaches the server.
    from aiohttp.tracing import Trace

    arrived: list[str] = []
    told: list[str] = []

    class Stop(Exception):
        pass

    async def headers_going(session: Any, ctx: Any, params: Any) -> None:
        told.append(ctx.trace_request_ctx)
        raise Stop

    config = aiohttp.TraceConfig()
    config.on_request_headers_sent.append(headers_going)
    config.freeze()

    async def look(req: aiohttp.ClientRequest, handler: Any) -> aiohttp.ClientResponse:
        traces = req._traces
        trace = Trace(req.session, config, config.trace_config_ctx(trace_request_ctx="mine"))
        traces.append(trace)
        try:
            return await handler(req)
        finally:
            traces.remove(trace)

    async def answer(request: web.Request) -> web.StreamResponse:
        arrived.append(request.path)
        return web.Response(text="sent")

    async with _serving(answer) as base, aiohttp.ClientSession(middlewares=(look,)) as session:
        try:
            async with session.get(f"{base}/page"):
                pass
        except Stop:
            pass
        else:
            raise AssertionError("the trace in the request's list was not told")
    assert told == ["mine"] and arrived == []


async def connector_resolver() -> None:
    connector = aiohttp.TCPConnector()
    try:
        assert isinstance(connector._resolver, aiohttp.abc.AbstractResolver)
    finally:
        await connector.close()


def response_body() -> None:
    assert hasattr(aiohttp.ClientResponse, "_body")
    assert "return self._body" in _source(aiohttp.ClientResponse.read)


def connector_pool() -> None:
    for method in ("_get", "_release", "_create_connection", "_cleanup"):
        assert callable(getattr(aiohttp.TCPConnector, method, None)), method
    init = _source(aiohttp.BaseConnector.__init__)
    assert "self._conns" in init and "self._acquired" in init
    # aiohttp's own pool still calls the methods the bounded connector overrides.
    assert "self._get(" in _source(aiohttp.BaseConnector.connect)
    assert "self._create_connection(" in _source(aiohttp.BaseConnector.connect)
    assert "self._connector._release(" in _source(aiohttp.connector.Connection)


def httpx_proxy_url() -> None:
    httpx = _module("httpx")
    transport = httpx.AsyncHTTPTransport(proxy="http://127.0.0.1:9")
    url = transport._pool._proxy_url
    assert (url.host, url.port) == (b"127.0.0.1", 9)
    assert not hasattr(httpx.AsyncHTTPTransport()._pool, "_proxy_url")


def scrapy_handler_pool() -> None:
    handlers = _module("scrapy.core.downloader.handlers")
    http11 = _module("scrapy.core.downloader.handlers.http11")
    client = _module("twisted.web.client")
    assert callable(getattr(handlers.DownloadHandlers, "_get_handler", None))
    assert "self._pool" in _source(http11.HTTP11DownloadHandler.__init__)
    assert hasattr(client.HTTPConnectionPool, "retryAutomatically")


def scrapy_connection_asked() -> None:
    # The handler hands the request to its agent at once, which asks its pool for the
    # connection in the same call, and writes the request with the connection's request().
    http11 = _module("scrapy.core.downloader.handlers.http11")
    client = _module("twisted.web.client")
    assert "await maybe_deferred_to_future(agent.download_request(request))" in _source(
        http11.HTTP11DownloadHandler.download_request)
    assert "agent.request(" in _source(http11._ScrapyAgent.download_request)
    asking = _source(client.Agent._requestWithEndpoint)
    assert "self._pool.getConnection(key, endpoint)" in asking
    assert "proto.request(" in asking


def _browser_manager() -> Any:
    return _module("crawl4ai.browser_manager").BrowserManager


def crawl4ai_start() -> None:
    manager = _browser_manager()
    assert callable(getattr(manager, "_start_impl", None))
    assert "self._start_impl()" in _source(manager)  # crawl4ai's start still calls it


def crawl4ai_fields() -> None:
    manager = _browser_manager()
    assert callable(getattr(manager, "_compute_browser_endpoint_key", None))
    assert isinstance(manager._global_pages_in_use, dict)
    source = _source(manager)
    for field in ("self._using_cached_cdp", "self._launched_persistent",
                  "self._browser_endpoint_key"):
        assert field in source, field


def _playwright_impl(name: str) -> Any:
    """Playwright's implementation module ``name`` (``_impl.browser``; ``_impl._browser``
    before 1.5x)."""
    _module("playwright")
    for module in (f"playwright._impl.{name}", f"playwright._impl._{name}"):
        try:
            return importlib.import_module(module)
        except ModuleNotFoundError:
            continue
    raise AssertionError(f"no playwright._impl module {name}")


def playwright_options() -> None:
    browser = _playwright_impl("browser")
    context = _playwright_impl("browser_context")
    browser_type = _playwright_impl("browser_type")
    assert "self._options" in _source(browser.Browser)
    assert "self._browser_type" in _source(browser.Browser)
    assert "self._options" in _source(context.BrowserContext)
    assert "self._playwright" in _source(browser_type.BrowserType)
    base = _module("playwright._impl._impl_to_api_mapping")
    assert "_impl_obj" in _source(base)


def playwright_mapping() -> None:
    # (attach's own use of it, a request client made, is run by every browser test.)
    assert callable(_module("playwright._impl._async_base").mapping.from_impl)


def crawlee_http_client() -> None:
    crawlers = _module("crawlee.crawlers")
    assert "self._http_client = " in _source(crawlers.BasicCrawler.__init__)


def crawlee_validate_url() -> None:
    urls = _module("crawlee._utils.urls")
    assert callable(urls.validate_http_url)


def crawlee_browser_pool() -> None:
    crawlers = _module("crawlee.crawlers")
    browsers = _module("crawlee.browsers")
    assert "self._browser_pool = " in _source(crawlers.PlaywrightCrawler.__init__)
    taken = inspect.signature(browsers.BrowserPool.new_page).parameters
    assert {"page_id", "browser_plugin", "proxy_info"} <= set(taken)


def crawlee_client_kwargs() -> None:
    # httpx's and impit's clients keep their library's arguments, and make each library
    # client from them (curl_cffi, the third's library, is not installed here).
    clients = _module("crawlee.http_clients")
    for kind in (clients.HttpxHttpClient, clients.ImpitHttpClient):
        client = kind(headers={"X-Mine": "1"})
        assert client._async_client_kwargs == {"headers": {"X-Mine": "1"}}
        assert client._client_by_proxy_url == {}
        made = _source(kind._get_client)
        assert "self._async_client_kwargs" in made and "self._client_by_proxy_url" in made


def redis_cluster_initialize() -> None:
    cluster = _module("redis.asyncio.cluster")
    source = _source(cluster.RedisCluster)
    assert "self._initialize = True" in source and "if self._initialize" in source
    client = cluster.RedisCluster(host="127.0.0.1", port=9)  # connects on its first command
    assert client._initialize is True


def httpx_network_backend() -> None:
    httpx = _module("httpx")
    httpcore = _module("httpcore")
    backend = httpx.AsyncHTTPTransport()._pool._network_backend
    assert isinstance(backend, httpcore.AsyncNetworkBackend)
    # And robotgate's wrapper is in place on the transport's own inner transport.
    from robotgate.integrations.httpx import _BoundedBackend, _own_transport
    assert isinstance(_own_transport(4)._pool._network_backend, _BoundedBackend)


CANARIES: dict[PrivatePart, Callable[[], Any]] = {
    RETRY_CONNECTION: retry_connection, REQUEST_TRACES: request_traces,
    LAST_LOOK_TRACE: last_look_trace,
    CONNECTOR_RESOLVER: connector_resolver, RESPONSE_BODY: response_body,
    CONNECTOR_POOL: connector_pool, HTTPX_PROXY_URL: httpx_proxy_url,
    HTTPX_NETWORK_BACKEND: httpx_network_backend,
    SCRAPY_HANDLER_POOL: scrapy_handler_pool, SCRAPY_CONNECTION_ASKED: scrapy_connection_asked,
    CRAWL4AI_START: crawl4ai_start, CRAWL4AI_FIELDS: crawl4ai_fields,
    PLAYWRIGHT_OPTIONS: playwright_options, PLAYWRIGHT_MAPPING: playwright_mapping,
    CRAWLEE_HTTP_CLIENT: crawlee_http_client,
    CRAWLEE_VALIDATE_URL: crawlee_validate_url, CRAWLEE_BROWSER_POOL: crawlee_browser_pool,
    CRAWLEE_CLIENT_KWARGS: crawlee_client_kwargs,
    REDIS_CLUSTER_INITIALIZE: redis_cluster_initialize,
}


@pytest.mark.parametrize("part", PARTS, ids=[part.name.split(",")[0] for part in PARTS])
async def test_the_installed_library_still_has_the_part(part: PrivatePart) -> None:
    canary = CANARIES[part]  # a part listed without a canary fails here
    try:
        found = canary()
        if inspect.isawaitable(found):
            await found
    except (AssertionError, AttributeError, OSError, TypeError) as changed:
        pytest.fail(f"{part.library} {installed(part.library)} changed {part.name} "
                    f"(checked with {part.checked}): {part.breaks}. {changed!r}")


def test_each_part_names_a_module_of_robotgate_that_exists() -> None:
    for part in PARTS:
        for module in part.used_by.split(", "):
            assert importlib.util.find_spec(module) is not None, part


# -- the paths that fail closed --------------------------------------------------------------


async def test_a_missing_call_identity_refuses_the_middlewares_request() -> None:
    sent: list[object] = []

    async def handler(req: Any) -> Any:
        sent.append(req)
        raise AssertionError("sent")

    async with RobotGate(AGENT, delay=0) as gate:
        request = SimpleNamespace(url=URL("http://127.0.0.1:9/page"))  # no _traces
        with pytest.raises(PrivatePartMissing, match=r"aiohttp \d+\.\d+.* has no "
                           r"ClientRequest\._traces") as missing:
            await gate.middleware(request, handler)  # type: ignore[arg-type]
    assert sent == [] and missing.value.part is REQUEST_TRACES
    assert installed("aiohttp") in str(missing.value)


async def test_a_request_list_missing_refuses_a_fleet_request_of_your_session() -> None:
    from robotgate.gate.aiohttp_fetch import LastLook
    from robotgate.politeness.fleet_slots import Slot

    sent: list[object] = []

    async def handler(req: Any) -> Any:
        sent.append(req)
        raise AssertionError("sent")

    request = SimpleNamespace(url=URL("http://127.0.0.1:9/page"))  # no _traces
    with pytest.raises(PrivatePartMissing, match=r"aiohttp \d+\.\d+.* has no "
                       r"ClientRequest\._traces") as missing:
        await LastLook(Slot())(request, handler)  # type: ignore[arg-type]
    assert sent == [] and missing.value.part is LAST_LOOK_TRACE


async def test_a_connector_without_its_resolver_refuses_a_pointer() -> None:
    sent: list[str] = []

    async def record(req: aiohttp.ClientRequest, handler: Any) -> aiohttp.ClientResponse:
        sent.append(str(req.url))
        return await handler(req)

    connector = aiohttp.TCPConnector()
    resolver = connector._resolver
    del connector._resolver
    try:
        async with RobotGate(AGENT, delay=0) as gate:
            session = aiohttp.ClientSession(
                connector=connector, connector_owner=False,
                middlewares=(gate.middleware_for("http://127.0.0.1/"), record))
            try:
                with pytest.raises(PrivatePartMissing, match=r"TCPConnector\._resolver"):
                    await session.get("http://127.0.0.1:9/page")
            finally:
                await session.close()
    finally:
        connector._resolver = resolver
        await connector.close()
    assert sent == []


async def test_a_body_read_in_chunks_that_cannot_be_handed_over_is_refused(
        monkeypatch: pytest.MonkeyPatch) -> None:
    big = b"x" * (1 << 20)

    async def answer(request: web.Request) -> web.StreamResponse:
        if request.path == "/robots.txt":
            return web.Response(text="User-agent: *\nAllow: /\n")
        return web.Response(body=big if request.path == "/big" else b"small")

    monkeypatch.setattr(aiohttp_bodies, "_BODY_KEPT", False)
    async with _serving(answer) as base, RobotGate(AGENT, delay=0) as gate:
        small = await gate.fetch(f"{base}/small")
        assert await small.read() == b"small"  # read by aiohttp's public read()
        with pytest.raises(PrivatePartMissing, match=r"ClientResponse\._body"):
            await gate.fetch(f"{base}/big", max_bytes=2 << 20)


@pytest.mark.slow
async def test_without_the_switch_the_gates_own_session_resends_in_a_turn_of_its_own(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # An aiohttp whose session has no _retry_connection: the gate's session keeps
    # resending by itself, and gate.fetch stops it with the middleware a session of
    # yours gets; the resend waits the interval.
    import itertools

    from robotgate.gate import gate as gate_module
    from tests.contract.test_provenance_paths import DroppingServer

    monkeypatch.setattr(gate_module, "without_resends", lambda session: session)
    server = await DroppingServer().start()
    try:
        async with RobotGate(AGENT, delay=0.5) as gate:
            first = await asyncio.wait_for(gate.fetch(server.url("/page/1")), 10)
            second = await asyncio.wait_for(gate.fetch(server.url("/drop")), 10)
    finally:
        await server.close()
    assert first.status == second.status == 200 and server.dropped == 1
    pages = [t for path, t in server.arrivals if path != "/robots.txt"]
    assert len(pages) == 3  # /page/1, /drop dropped, /drop sent again
    assert min(b - a for a, b in itertools.pairwise(pages)) >= 0.49, server.arrivals


def test_twisteds_pool_not_where_it_was_refuses_the_scrapy_crawls_requests() -> None:
    http11 = pytest.importorskip("scrapy.core.downloader.handlers.http11", reason=(
        "Scrapy is not installed (pip install 'robotgate[scrapy]')"))
    from robotgate.integrations.scrapy.middleware import _no_silent_resend

    without_pool = object.__new__(http11.HTTP11DownloadHandler)  # no _pool: renamed
    handlers = SimpleNamespace(_get_handler=lambda scheme: without_pool)
    crawler: Any = SimpleNamespace(engine=SimpleNamespace(
        downloader=SimpleNamespace(handlers=handlers)))
    with pytest.raises(PrivatePartMissing, match=r"^scrapy .* has no DownloadHandlers"):
        _no_silent_resend(crawler)
    handlers._get_handler = lambda scheme: object()  # another client's handler: left alone
    _no_silent_resend(crawler)
    del handlers._get_handler  # Scrapy's handlers not where they were
    with pytest.raises(PrivatePartMissing):
        _no_silent_resend(crawler)


# -- a part gone: its canary fails, and the path that reads it refuses -----------------------


def _rename(monkeypatch: pytest.MonkeyPatch, cls: type, name: str) -> None:
    """``cls.name`` gone, as if the library renamed it: from each class that defines it."""
    for owner in cls.__mro__:
        if name in vars(owner):
            monkeypatch.delattr(owner, name)
    assert not hasattr(cls, name)


def _unset_after_init(monkeypatch: pytest.MonkeyPatch, cls: type, name: str) -> None:
    """Instances of ``cls`` made without the attribute ``name`` their ``__init__`` sets."""
    init = cls.__init__

    def without(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        delattr(self, name)

    monkeypatch.setattr(cls, "__init__", without)


def _gone_connector_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    _rename(monkeypatch, aiohttp.TCPConnector, "_get")


def _gone_crawl4ai_start(monkeypatch: pytest.MonkeyPatch) -> None:
    _rename(monkeypatch, _browser_manager(), "_start_impl")


def _gone_crawl4ai_fields(monkeypatch: pytest.MonkeyPatch) -> None:
    _rename(monkeypatch, _browser_manager(), "_compute_browser_endpoint_key")


def _gone_crawlee_http_client(monkeypatch: pytest.MonkeyPatch) -> None:
    _unset_after_init(monkeypatch, _module("crawlee.crawlers").BasicCrawler, "_http_client")


def _gone_crawlee_client_kwargs(monkeypatch: pytest.MonkeyPatch) -> None:
    _unset_after_init(monkeypatch, _module("crawlee.http_clients").HttpxHttpClient,
                      "_async_client_kwargs")


def _gone_redis_initialize(monkeypatch: pytest.MonkeyPatch) -> None:
    _unset_after_init(monkeypatch, _module("redis.asyncio.cluster").RedisCluster, "_initialize")


def _gone_playwright_mapping(monkeypatch: pytest.MonkeyPatch) -> None:
    _rename(monkeypatch, type(_module("playwright._impl._async_base").mapping), "from_impl")


GONE: dict[PrivatePart, Callable[[pytest.MonkeyPatch], None]] = {
    CONNECTOR_POOL: _gone_connector_pool, CRAWL4AI_START: _gone_crawl4ai_start,
    CRAWL4AI_FIELDS: _gone_crawl4ai_fields, CRAWLEE_HTTP_CLIENT: _gone_crawlee_http_client,
    CRAWLEE_CLIENT_KWARGS: _gone_crawlee_client_kwargs,
    REDIS_CLUSTER_INITIALIZE: _gone_redis_initialize, PLAYWRIGHT_MAPPING: _gone_playwright_mapping,
}


def crawlee_http_client_made() -> None:
    # The client a crawler was built with, where attach looks for it.
    crawlers = _module("crawlee.crawlers")
    storage = _module("crawlee.storage_clients")
    client = object()
    crawler = crawlers.BasicCrawler(http_client=client, configure_logging=False,
                                    storage_client=storage.MemoryStorageClient())
    assert crawler._http_client is client


@pytest.mark.parametrize("part", list(GONE), ids=[part.name.split(",")[0] for part in GONE])
async def test_a_canary_fails_when_its_part_is_gone(part: PrivatePart,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    canaries = [CANARIES[part]]
    if part is CRAWLEE_HTTP_CLIENT:
        canaries.append(crawlee_http_client_made)  # the source's text cannot be renamed here
    for canary in canaries:
        canary()  # here now
    GONE[part](monkeypatch)
    with pytest.raises((AssertionError, AttributeError)):
        for canary in canaries:
            canary()


async def test_aiohttps_pool_renamed_refuses_the_gates_requests(
        monkeypatch: pytest.MonkeyPatch) -> None:
    arrivals: list[str] = []

    async def answer(request: web.Request) -> web.StreamResponse:
        arrivals.append(request.path)
        return web.Response(text="User-agent: *\nAllow: /\n")

    _gone_connector_pool(monkeypatch)
    async with _serving(answer) as base, RobotGate(AGENT, delay=0) as gate:
        # robots.txt first: it cannot be asked, so the page is refused as unreachable.
        with pytest.raises(Disallowed, match=r"robots.txt could not be fetched "
                           r"\(PrivatePartMissing: aiohttp .* has no TCPConnector\._get"):
            await gate.fetch(f"{base}/page")
    assert arrivals == []


def _crawl4ai() -> Any:
    _module("crawl4ai")
    return importlib.import_module("robotgate.integrations.crawl4ai")


@pytest.mark.parametrize("part", [CRAWL4AI_START, CRAWL4AI_FIELDS],
                         ids=["start", "fields"])
def test_crawl4ais_manager_without_its_parts_makes_no_crawler(
        part: PrivatePart, monkeypatch: pytest.MonkeyPatch) -> None:
    integration = _crawl4ai()
    GONE[part](monkeypatch)
    with pytest.raises(PrivatePartMissing, match=r"^crawl4ai \S+ has no BrowserManager") as no:
        integration.RobotGateCrawler(RobotGate(AGENT), executable_path="/nonexistent")
    assert no.value.part is part


async def test_a_crawl4ai_start_that_skips_robotgates_launch_is_refused(
        monkeypatch: pytest.MonkeyPatch) -> None:
    integration = _crawl4ai()
    manager = _browser_manager()
    started: list[object] = []

    async def start_of_its_own(self: Any) -> None:  # a start no longer through _start_impl
        started.append(self)

    monkeypatch.setattr(manager, "start", start_of_its_own)
    async with RobotGate(AGENT, delay=0) as gate:
        crawler = integration.RobotGateCrawler(gate, executable_path="/nonexistent")
        with pytest.raises(PrivatePartMissing, match=r"BrowserManager\._start_impl"):
            await crawler.start()
        await crawler.close()
    assert len(started) == 1


def test_a_crawlee_crawler_keeping_its_client_elsewhere_is_refused(
        monkeypatch: pytest.MonkeyPatch) -> None:
    _module("crawlee")
    from crawlee.crawlers import PlaywrightCrawler
    from crawlee.storage_clients import MemoryStorageClient

    from robotgate.integrations.crawlee import RobotGateHttpClient

    client = RobotGateHttpClient(RobotGate(AGENT))
    _gone_crawlee_http_client(monkeypatch)
    crawler = PlaywrightCrawler(http_client=client, storage_client=MemoryStorageClient(),
                                configure_logging=False)
    hooks = len(crawler._pre_navigation_hooks)
    with pytest.raises(PrivatePartMissing, match=r"^crawlee \S+ has no BasicCrawler\._http"):
        client.attach(crawler)
    assert len(crawler._pre_navigation_hooks) == hooks  # its pages not left half attached


def test_a_crawlee_client_keeping_its_arguments_elsewhere_sends_no_hop_to_another_origin(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Its own credentials cannot be told from the rest: no copy without them is made.
    clients = _module("crawlee.http_clients")
    from robotgate.integrations._crawlee_credentials import bare_twin

    _gone_crawlee_client_kwargs(monkeypatch)
    with pytest.raises(PrivatePartMissing, match=r"^crawlee \S+ has no HttpxHttpClient\."):
        bare_twin(clients.HttpxHttpClient(auth=("user", "pass")))


async def test_a_redis_cluster_client_without_its_layout_flag_makes_no_store(
        monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = _module("redis.asyncio.cluster")
    from robotgate.store.redis import RedisStore

    _gone_redis_initialize(monkeypatch)
    given = cluster.RedisCluster(host="127.0.0.1", port=9)
    with pytest.raises(PrivatePartMissing, match=r"^redis \S+ has no RedisCluster\._init"):
        RedisStore(cluster=True, client=given)
    store = RedisStore("redis://127.0.0.1:9/0", cluster=True, unavailable_timeout=0.1)
    with pytest.raises(PrivatePartMissing, match=r"RedisCluster\._initialize"):
        await store.open()  # its client made as it is first used, before any command
    await store.close()


@pytest.mark.slow  # starts a Chromium
@pytest.mark.parametrize("owner", ["browser", "context"])
async def test_playwrights_options_not_where_they_were_refuse_attach(
        owner: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _module("playwright")
    from robotgate.integrations.playwright import attach
    from tests.support.browser import chromium

    async with chromium() as browser, RobotGate(AGENT, delay=0) as gate:
        context = await browser.new_context(service_workers="block")
        made = context.browser if owner == "browser" else context
        monkeypatch.delattr(made._impl_obj, "_options")
        with pytest.raises(PrivatePartMissing, match=r"^playwright \S+ has no Browser\._impl"):
            await attach(gate, context)
        monkeypatch.undo()
        await (await attach(gate, context)).detach()  # with them, the same context attaches


async def test_a_page_whose_body_aiohttp_keeps_elsewhere_has_its_directives_refused(
        monkeypatch: pytest.MonkeyPatch) -> None:
    page = b'<html><head><meta name="robots" content="nofollow"></head></html>'

    async def answer(request: web.Request) -> web.StreamResponse:
        if request.path == "/robots.txt":
            return web.Response(text="User-agent: *\nAllow: /\n")
        return web.Response(body=page, content_type="text/html")

    async with _serving(answer) as base, RobotGate(AGENT, delay=0) as gate:
        resp = await gate.fetch(f"{base}/page")
        assert gate.directives(resp).nofollow  # read from the body aiohttp keeps
        monkeypatch.delattr(aiohttp.ClientResponse, "_body")
        with pytest.raises(PrivatePartMissing, match=r"ClientResponse\._body"):
            gate.directives(resp)  # not read as a page without meta tags
        assert gate.directives(resp, page).nofollow  # a body passed needs no part
