"""Other libraries' private parts robotgate leans on, in one list.

Each :class:`PrivatePart` names the library, the attribute, the versions it was checked
with, the robotgate module that uses it, what breaks if the library changes it, and
what robotgate does then.  ``tests/test_private_parts.py`` holds a canary for each: it
fails, naming the part, when the installed library lacks it (or no longer behaves as
relied on).  Where a promise depends on a part (a request sent out of its turn, a hop
taken for the caller's input, a server paced by the wrong key), the path that reads
it fails closed: it raises :class:`PrivatePartMissing`, naming the library and its
version, rather than send, or it takes a public way instead.

Standard library only: the libraries are named, not imported.
"""

from __future__ import annotations

import platform
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version

from .error_root import Error

__all__ = ["PARTS", "PrivatePart", "PrivatePartMissing", "installed", "missing"]


@dataclass(frozen=True, slots=True)
class PrivatePart:
    """A private attribute of another library robotgate uses.

    ``library``: its distribution name; ``name``: the attribute, as ``Class.attribute``
    (or a private module's name); ``checked``: the versions it was checked with;
    ``used_by``: robotgate's module; ``breaks``: what goes wrong if it changes;
    ``if_missing``: what robotgate does then (``fails closed``: it raises
    :class:`PrivatePartMissing`; ``public way``: it takes a public API instead;
    ``loud``: an import fails; ``silent``: nothing tells but the canary, for a part no
    promise rests on)."""

    library: str
    name: str
    checked: str
    used_by: str
    breaks: str
    if_missing: str


def installed(library: str) -> str:
    """The installed version of ``library`` ("not installed" if it is not)."""
    if library == "python":
        return platform.python_version()
    try:
        return version(library)
    except PackageNotFoundError:
        return "not installed"


class PrivatePartMissing(Error):
    """A library robotgate leans on lacks a private part it relied on: the request was
    not sent.  ``part``: the :class:`PrivatePart`; the message names the library, its
    installed version and the versions checked."""

    def __init__(self, part: PrivatePart) -> None:
        super().__init__(
            f"{part.library} {installed(part.library)} has no {part.name}, which robotgate "
            f"relies on ({part.breaks}); checked with {part.library} {part.checked}. "
            f"Nothing was sent: install a version robotgate was checked with")
        self.part = part


def missing(part: PrivatePart) -> PrivatePartMissing:
    """The error a path that fails closed raises when ``part`` is missing."""
    return PrivatePartMissing(part)


# -- aiohttp: gate.fetch, gate.middleware, the robots.txt transport ----------------------

RETRY_CONNECTION = PrivatePart(
    "aiohttp", "ClientSession._retry_connection", "3.14.5", "robotgate.gate.aiohttp_fetch",
    "the gate's own session would send a request again at once, out of its turn, after a "
    "kept-alive connection dropped under it",
    "public way: gate.fetch stops the resend with a middleware, as on a session of yours")
REQUEST_TRACES = PrivatePart(
    "aiohttp", "ClientRequest._traces", "3.14.5", "robotgate.gate.aiohttp_middleware",
    "gate.middleware tells a redirect's hop by the aiohttp call it belongs to (the list "
    "of traces every request of one call shares); without it a hop reads as your input, "
    "its target not judged by the private-network rule",
    "fails closed: gate.middleware raises PrivatePartMissing")
LAST_LOOK_TRACE = PrivatePart(
    "aiohttp", "ClientRequest._traces (the writer tells each as the headers go), "
    "aiohttp.tracing.Trace", "3.14.5", "robotgate.gate.aiohttp_fetch",
    "in a fleet, a request of a session the gate did not make (gate.fetch or "
    "gate.middleware on yours, a browser's route) has its slot looked at last as its "
    "headers are written, by a trace put in the request's list; without it a request "
    "held up past its slot (a busy loop, a slow connect) would reach the server closer "
    "than the delay to another worker's",
    "fails closed: such a request in a fleet raises PrivatePartMissing, nothing sent")
CONNECTOR_RESOLVER = PrivatePart(
    "aiohttp", "TCPConnector._resolver", "3.14.5", "robotgate.gate.aiohttp_peers",
    "redirect hops and pointers are looked up with the resolver the session connects "
    "with, and pace_by='ip' paces by its first address; without it every hop is refused "
    "and pace_by='ip' would pace by host name",
    "fails closed: the look-up raises PrivatePartMissing")
RESPONSE_BODY = PrivatePart(
    "aiohttp", "ClientResponse._body", "3.14.5",
    "robotgate.gate.aiohttp_bodies, robotgate.gate.directives",
    "gate.fetch hands the body it read within max_bytes to the response (read() returns "
    "it), and reads a page's meta robots tags from it",
    "public way for a body within max_bytes (read()); fails closed for one read in "
    "chunks, and gate.directives(response) of an aiohttp response without a body "
    "passed raises PrivatePartMissing")
CONNECTOR_POOL = PrivatePart(
    "aiohttp", "TCPConnector._get, _release, _create_connection, _wrap_create_connection, "
    "_cleanup, _conns, _acquired, _factory", "3.14.5", "robotgate.gate.connections",
    "the gate's session keeps its sockets within the open-file limit by overriding the "
    "connector's pool methods; renamed, the bound would silently not hold",
    "fails closed: the gate's own session is not made (PrivatePartMissing): its first "
    "request, a robots.txt's, fails, and gate.fetch refuses the page as its robots.txt "
    "unreachable, the reason naming the part")

# -- httpx ---------------------------------------------------------------------------------

HTTPX_PROXY_URL = PrivatePart(
    "httpx", "AsyncHTTPTransport._pool, httpcore's AsyncHTTPProxy/AsyncSOCKSProxy._proxy_url",
    "0.28.1 (httpcore 1.0.9)", "robotgate.integrations.httpx",
    "the httpx transport tells a proxy's failure (unreachable, refusing its credentials) "
    "from the site's by the proxy the inner transport sends through",
    "silent: with no proxy found, a proxy's failure while robots.txt is asked reads as "
    "the site's (robots.txt unreachable), as before")

HTTPX_NETWORK_BACKEND = PrivatePart(
    "httpx", "AsyncHTTPTransport._pool, httpcore's AsyncConnectionPool._network_backend",
    "0.28.1 (httpcore 1.0.9)", "robotgate.integrations.httpx",
    "the httpx transport's own inner transport counts its sockets, closing ones included, "
    "to hold the gate's socket budget",
    "silent: the pool's limit alone, which a socket still closing can pass for a moment")

# -- Scrapy and Twisted ------------------------------------------------------------------

SCRAPY_HANDLER_POOL = PrivatePart(
    "scrapy", "DownloadHandlers._get_handler, HTTP11DownloadHandler._pool",
    "2.19.0 (Twisted 26.10.0)", "robotgate.integrations.scrapy.middleware",
    "Twisted's connection pool sends a request again at once, out of its turn, when a "
    "kept-alive connection dropped; the middleware turns that off through the handler's "
    "pool",
    "fails closed: PrivatePartMissing for each request (a handler of another client is "
    "left alone)")

SCRAPY_CONNECTION_ASKED = PrivatePart(
    "scrapy", "HTTP11DownloadHandler.download_request asking its pool (Twisted's "
    "HTTPConnectionPool.getConnection) before it first waits, the connection's request() "
    "writing it", "2.19.0 (Twisted 26.10.0)", "robotgate.integrations.scrapy.last_look",
    "in a fleet, the slot's last look as a request is written on its connection is told "
    "which request the connection is for by the handler's call that asks for it",
    "silent: the look as the handler is handed the request stays; the one at the "
    "connection is not made (a request held up on its way to a connection is not looked "
    "at again)")

# -- crawl4ai ------------------------------------------------------------------------------

CRAWL4AI_START = PrivatePart(
    "crawl4ai", "BrowserManager._start_impl", "0.9.5", "robotgate.integrations.crawl4ai",
    "robotgate launches crawl4ai's browser itself (a persistent context, attached to the "
    "gate) by overriding it; renamed, crawl4ai's own start would launch a browser the "
    "gate never sees",
    "fails closed: RobotGateCrawler is not made without it, and a start that did not "
    "go through it closes what it started and raises PrivatePartMissing")
CRAWL4AI_FIELDS = PrivatePart(
    "crawl4ai", "BrowserManager._using_cached_cdp, _launched_persistent, "
    "_browser_endpoint_key, _compute_browser_endpoint_key, _global_pages_in_use", "0.9.5",
    "robotgate.integrations.crawl4ai",
    "the state crawl4ai's own start sets, set by robotgate's start so that crawl4ai "
    "finds its browser as it would have made it",
    "fails closed: RobotGateCrawler is not made without them (PrivatePartMissing)")

# -- Playwright ------------------------------------------------------------------------------

PLAYWRIGHT_OPTIONS = PrivatePart(
    "playwright", "Browser._impl_obj._options, BrowserContext._impl_obj._options, "
    "_browser_type._playwright", "1.65.2", "robotgate.integrations.playwright",
    "attach reads the options a browser was launched and a context made with (Playwright "
    "lets them not be read) to refuse one with a network of its own or to take its proxy",
    "fails closed: attach raises PrivatePartMissing, nothing routed or sent")

PLAYWRIGHT_MAPPING = PrivatePart(
    "playwright", "playwright._impl._async_base.mapping.from_impl", "1.65.2",
    "robotgate.integrations.playwright",
    "attach makes its request client from the context's Playwright driver, whose "
    "request factory it wraps as Playwright's API does (no public way leads from a "
    "context to it: context.request goes through the browser's black hole)",
    "loud: the import fails")

# -- crawlee ---------------------------------------------------------------------------------

CRAWLEE_HTTP_CLIENT = PrivatePart(
    "crawlee", "BasicCrawler._http_client", "1.11.0", "robotgate.integrations.crawlee",
    "RobotGateHttpClient.attach checks that the crawler was built with it (crawlee's own "
    "client would send context.send_request past the gate)",
    "fails closed: RobotGateHttpClient.attach raises PrivatePartMissing")
CRAWLEE_VALIDATE_URL = PrivatePart(
    "crawlee", "crawlee._utils.urls.validate_http_url", "1.11.0",
    "robotgate.integrations.crawlee",
    "a URL is checked as crawlee's own clients check it",
    "loud: the import fails")
CRAWLEE_BROWSER_POOL = PrivatePart(
    "crawlee", "PlaywrightCrawler._browser_pool, BrowserPool.new_page(proxy_info=)",
    "1.11.0", "robotgate.integrations.crawlee",
    "RobotGateHttpClient.attach sets the floor in each plugin's launch options and makes "
    "pages without the request's proxy_info (the proxy goes to attach instead)",
    "fails closed: a page whose context has a proxy of its own is refused by attach")
CRAWLEE_CLIENT_KWARGS = PrivatePart(
    "crawlee", "HttpxHttpClient._async_client_kwargs, ImpitHttpClient._async_client_kwargs, "
    "CurlImpersonateHttpClient._async_session_kwargs, ._client_by_proxy_url", "1.11.0",
    "robotgate.integrations._crawlee_credentials",
    "RobotGateHttpClient sends a hop that left its first origin by a copy of the inner "
    "client made without its own credentials (auth=, cookies=, credential headers): read "
    "elsewhere, they would go to the other origin",
    "fails closed: a hop to another origin by such a client raises PrivatePartMissing")

# -- redis-py --------------------------------------------------------------------------------

REDIS_CLUSTER_INITIALIZE = PrivatePart(
    "redis", "RedisCluster._initialize", "8.1.0", "robotgate.store.redis.link",
    "after a failed pipeline the cluster client is made to read the cluster's layout "
    "again (redis-py does so only after a single command)",
    "fails closed: the Redis Cluster store is not made (PrivatePartMissing); "
    "redis-py's public ways do not serve (aclose() closes the connections other "
    "calls are using, initialize() reads the layout only once the flag is set)")

#: Every private part robotgate leans on.
PARTS: tuple[PrivatePart, ...] = (
    RETRY_CONNECTION, REQUEST_TRACES, LAST_LOOK_TRACE, CONNECTOR_RESOLVER, RESPONSE_BODY,
    CONNECTOR_POOL, HTTPX_PROXY_URL, HTTPX_NETWORK_BACKEND, SCRAPY_HANDLER_POOL,
    SCRAPY_CONNECTION_ASKED, CRAWL4AI_START, CRAWL4AI_FIELDS,
    PLAYWRIGHT_OPTIONS,
    PLAYWRIGHT_MAPPING,
    CRAWLEE_HTTP_CLIENT, CRAWLEE_VALIDATE_URL, CRAWLEE_BROWSER_POOL, CRAWLEE_CLIENT_KWARGS,
    REDIS_CLUSTER_INITIALIZE,
)
