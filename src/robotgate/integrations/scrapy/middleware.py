"""robotgate's three promises inside Scrapy: a downloader middleware.

Enable it in place of Scrapy's ``RobotsTxtMiddleware``::

    ROBOTSTXT_OBEY = True
    DOWNLOADER_MIDDLEWARES = {
        "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
        "robotgate.integrations.scrapy.RobotGateMiddleware": 100,
    }

Each request is admitted by the gate before Scrapy downloads it: robots.txt is
fetched once per origin through Scrapy's own engine (proxies, TLS settings,
headers and stats apply) and every request waiting on it gets the answer; a
disallowed request is dropped with :class:`RobotsDisallowed` (an
``IgnoreRequest`` carrying the :class:`~robotgate.Decision`); an allowed one
waits for its server's turn inside :meth:`RobotGateMiddleware.process_request`
and holds the server's slot until its response is downloaded.  So no two
requests to a server are closer than the gate's interval, whatever Scrapy's
own download delay and its jitter do (they can only add to it).

Needs Scrapy's asyncio reactor (the default since Scrapy 2.13).
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import weakref
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, cast

try:  # the client comes with an extra: say which, not a bare ModuleNotFoundError
    import scrapy  # noqa: F401
except ImportError as _exc:
    raise ImportError(f"{__name__} needs Scrapy: pip install 'robotgate[scrapy]'") from _exc

from scrapy import Request, signals
from scrapy.core.downloader.handlers.http11 import TunnelError
from scrapy.exceptions import (
    CannotResolveHostError,
    DontCloseSpider,
    DownloadConnectionRefusedError,
    IgnoreRequest,
    NotConfigured,
    StopDownload,
)
from scrapy.http import Response
from scrapy.http.request import NO_CALLBACK
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.misc import load_object
from twisted.internet.error import ConnectError, DNSLookupError

from ...decision import Decision
from ...errors import Disallowed, GateClosed, ProxyFailed
from ...gate.gate import RobotGate
from ...policy.content_coding import decode_capped
from ...policy.fetch import LocalFailure, local_failure
from ...policy.fetch_flow import RobotsRequest, RobotsResponse
from ...policy.hops import IsPrivate, is_private, judge_peer, parse_hop
from ...policy.provenance import Provenance, pointer_of
from ...politeness.exchange import robots_reach
from ...politeness.fleet_slots import LateSlot
from ...politeness.permits import Permit
from ...politeness.questions import provenance_of
from ...politeness.redirects import refused_answer
from ...politeness.request_turn import RequestTurn
from ...politeness.robots_fetcher import open_file_limit
from ...private_parts import SCRAPY_HANDLER_POOL, missing
from ...redaction import logger
from ...robots.usage import combine_usage, usage_from_headers
from ...urls import InvalidURL, redact, split_origin
from .._hops import first_address, robots_headers
from .._hops import resolve as system_resolve
from .last_look import Look, SocketLook, look_at_permit, look_at_turn
from .parser import RobotgateRobotParser
from .resolver import GuardedNames, ScreeningResolver, install, uninstall
from .settings import make_store, read_settings

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from typing_extensions import Self

__all__ = ["CARRIED_HOPS", "POINTED_BY", "RobotGateMiddleware", "RobotsDisallowed",
           "ScrapyProxyFailed", "ScrapyProxyTunnelRefused", "ScrapyProxyUnreachable",
           "ScrapyRobotsTransport", "provenance_of_request"]

log = logger("robotgate.scrapy")

#: ``request.meta`` key that keeps a request away from the middleware (its own
#: robots.txt requests set it).
SKIP = "robotgate_skip"
#: ``request.meta`` key of who pointed at the request, as ``gate.fetch`` takes
#: ``pointed_by``: the page's URL (``""``: a page known to be public) or a
#: :class:`~robotgate.policy.provenance.Provenance`; absent: the spider's own input.
#: A redirect's hop is a pointer of the URL redirected, whatever this says.
POINTED_BY = "robotgate_pointed_by"
#: ``request.meta`` key of how many of its ``redirect_urls`` a request carries over from
#: the page it was made from (``meta=response.meta``): those are not its own hops.
CARRIED_HOPS = "robotgate_carried_hops"
#: ``response.meta`` key of the page's usage preferences: label -> allowed
#: (robots.txt's ``Content-Usage`` rules and the response header, combined).
USAGE = "robotgate_usage"
#: ``response.meta`` key of the page's directives (``X-Robots-Tag``, robots and
#: TDMRep meta tags): a :class:`~robotgate.robots.directives.PageDirectives`.
DIRECTIVES = "robotgate_directives"
#: ``response.meta`` key of whether TDM rights are reserved for the page
#: (``ROBOTGATE_TDMREP``): a :class:`~robotgate.policy.tdm.TdmVerdict`.
TDM = "robotgate_tdm"
_HELD = "_robotgate_held"  # the server slot a request holds
_PERMIT = "_robotgate_permit"  # what entitles a robots.txt request to leave
_CAP = "_robotgate_max_bytes"  # robots.txt bytes to read at most
_GOT = "_robotgate_bytes"
# robots.txt's Content-Encoding, moved aside; a header, so that a copy in Scrapy's
# HTTP cache (which never passes the downloader again) keeps it.
_CODING = b"X-Robotgate-Content-Encoding"
_PARK = "_robotgate_park"  # a copy on its way to the parking
_GUARD = "_robotgate_guard"  # a public page's pointer: its answer must come from a public address
# The page a guarded pointer came from: its tdmrep.json and robots.txt requests are guarded.
_POINTED_BY = "_robotgate_pointed_by"
_PEER_REFUSED = "_robotgate_peer_refused"  # the Decision refusing an answer's private peer
_WAS_PARKED = "_robotgate_was_parked"


class RobotsDisallowed(Disallowed, IgnoreRequest):
    """robots.txt forbids the request: ``decision`` says which rule, or the fetch outcome.

    An ``IgnoreRequest`` as Scrapy expects of a dropped request, and a
    :class:`~robotgate.Disallowed` (so a :class:`robotgate.Error`) as every path's refusal is.
    """

    def __init__(self, url: str, decision: Decision) -> None:
        super().__init__(url, decision)
        # Disallowed's message, which holds no secret (self.url is the URL whole).
        self.args = (f"Forbidden by robots.txt: {self.args[0]}",)


class ScrapyProxyFailed(ProxyFailed):
    """:class:`~robotgate.ProxyFailed` as the middleware raises it to the request's
    errback: the proxy the page goes through (its ``meta["proxy"]``, or the environment's
    through Scrapy's ``HttpProxyMiddleware``) failed while its robots.txt was asked, so
    no verdict of the site's was made; raised as the base for a 407 answer, else as
    the kind below that Scrapy alone raises for the same failure."""


class ScrapyProxyUnreachable(ScrapyProxyFailed, DownloadConnectionRefusedError):
    """The proxy refused the connection or could not be looked up: also the
    ``DownloadConnectionRefusedError`` Scrapy alone gives a page's errback then (retried
    by ``RetryMiddleware`` alike)."""


class ScrapyProxyTunnelRefused(ScrapyProxyFailed, TunnelError):
    """The proxy refused the CONNECT tunnel (an https robots.txt): also Scrapy's own
    ``TunnelError``."""


#: What Scrapy raises when the proxy cannot be reached; through a proxy every
#: connection is the proxy's, so it is no site's failure.
_PROXY_UNREACHABLE = (DownloadConnectionRefusedError, CannotResolveHostError, ConnectError)


def proxy_failure(exc: BaseException, proxy: str, url: str) -> ScrapyProxyFailed | None:
    """The proxy's failure a download error is (None: none of the proxy's)."""
    if isinstance(exc, TunnelError):
        return ScrapyProxyTunnelRefused(proxy, url, f"it refused the tunnel: {exc}")
    if isinstance(exc, _PROXY_UNREACHABLE):
        return ScrapyProxyUnreachable(proxy, url, f"it could not be reached: {exc}")
    return None


def _gone() -> None:
    """What a held slot pickles as (disk queues): nothing to release in another process."""
    return None


class _Held:
    """A request's turn while Scrapy downloads it: given back once (answered, failed
    or dropped); what the store must hear of an answer is awaited by ``later``.  A
    public page's pointer also holds its host's guard (see :mod:`.resolver`) until then."""

    __slots__ = ("__weakref__", "guarded", "later", "names", "turn")

    def __init__(self, turn: RequestTurn, later: Callable[[Awaitable[None]], None],
                 names: GuardedNames, guarded: str | None = None) -> None:
        self.turn = turn
        self.later = later
        self.names = names
        self.guarded = guarded
        if guarded is not None:
            names.guard(guarded)

    def finish(self, status: int, retry_after: str | None) -> None:
        """The response arrived: pace from now (Retry-After, back-off), then release."""
        learnt = self.turn.answered(status, retry_after)
        if learnt is not None:
            self.later(learnt)
        self.release()

    def release(self) -> None:
        self.turn.release()
        guarded, self.guarded = self.guarded, None
        if guarded is not None:
            self.names.unguard(guarded)

    def __reduce__(self) -> tuple[Any, tuple[()]]:
        return (_gone, ())


async def scrapy_resolve(host: str) -> Sequence[str]:
    """Every address Scrapy may connect to for ``host``: the system's for both address
    families (Twisted's endpoints connect over IPv4 or IPv6, whichever answers), and
    the reactor's own answer (Scrapy installs its ``DNS_RESOLVER`` there, IPv4 only)."""
    found = list(await system_resolve(host))
    reactor = sys.modules.get("twisted.internet.reactor")
    resolve = getattr(reactor, "resolve", None)
    if resolve is not None:
        try:
            address = str(await maybe_deferred_to_future(resolve(host)))
        except Exception:  # no answer from it: the system's stand
            address = ""
        if address and address not in found:
            found.append(address)
    return found


def _redirected_from(meta: Mapping[str, Any]) -> str | None:
    """The URL whose redirect the request follows (None: it follows none): the last of
    Scrapy's ``redirect_urls`` past those carried over from a page."""
    came = meta.get("redirect_urls")
    if not came:
        return None
    carried = meta.get(CARRIED_HOPS)
    own = len(came) > carried if isinstance(carried, int) else True
    return str(came[-1]) if own else None


def provenance_of_request(meta: Mapping[str, Any]) -> Provenance:
    """Who pointed at a request, read from its ``meta`` alone: a redirect's hop is a
    pointer of the URL redirected; else ``robotgate_pointed_by`` says (absent: the
    spider's own input)."""
    source = _redirected_from(meta)
    return pointer_of(source) if source is not None else provenance_of(meta.get(POINTED_BY))


def _without_credentials(request: Request) -> str | None:
    """The URL of a request that follows a redirect, without the credentials its
    Location carried (None: it carried none, or follows no redirect)."""
    if _redirected_from(request.meta) is None:
        return None
    hop = parse_hop(request.url)
    return hop.url if hop is not None and hop.had_credentials else None


def _retry_after(response: Response) -> str | None:
    value = response.headers.get(b"Retry-After")
    return value.decode("latin-1") if value is not None else None


def _no_silent_resend(crawler: Crawler) -> None:
    """Twisted's connection pool sends a request again at once, below the downloader
    middlewares, when a kept-alive connection dropped before any answer: a request out
    of its turn.  Turned off for Scrapy's HTTP/1.1 handlers, such a request fails
    (``ResponseNeverReceived``); Scrapy's RetryMiddleware, when on, sends it again as a
    new request, in a turn of its own.  Where Scrapy's handlers or Twisted's pool are
    not where they were (:data:`~robotgate.private_parts.SCRAPY_HANDLER_POOL`), nothing
    is sent: :class:`~robotgate.private_parts.PrivatePartMissing`.  A handler of another
    client (HTTP/2, a browser's) has no such pool and is left alone."""
    for _, pool in _http11_pools(crawler):
        pool.retryAutomatically = False


def _http11_pools(crawler: Crawler) -> list[tuple[Any, Any]]:
    """Scrapy's HTTP/1.1 handlers of ``http`` and ``https``, each once, with its Twisted
    pool (:class:`~robotgate.private_parts.PrivatePartMissing` where they are not where
    they were); a handler of another client is left out."""
    from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler

    engine = crawler.engine
    handlers = getattr(engine.downloader, "handlers", None) if engine is not None else None
    get = getattr(handlers, "_get_handler", None)
    if get is None:
        raise missing(SCRAPY_HANDLER_POOL)
    found: list[tuple[Any, Any]] = []
    for scheme in ("http", "https"):
        handler = get(scheme)
        if not isinstance(handler, HTTP11DownloadHandler) or any(
                handler is seen for seen, _ in found):
            continue
        pool = getattr(handler, "_pool", None)
        if pool is None or not hasattr(pool, "retryAutomatically"):
            raise missing(SCRAPY_HANDLER_POOL)
        found.append((handler, pool))
    return found


def _look_of(request: Request) -> Look | None:
    """``request``'s last look (see .last_look): a page's turn's slot or permit, a
    robots.txt request's permit; None: nothing to look at."""
    meta = request.meta
    held = meta.get(_HELD)
    if isinstance(held, _Held):
        return partial(look_at_turn, held.turn) if held.turn.slot is not None else None
    permit = meta.get(_PERMIT)
    return partial(look_at_permit, permit) if isinstance(permit, Permit) else None


def _require_asyncio() -> None:
    """Raise a clear error unless Scrapy runs on asyncio (the gate is asyncio code)."""
    import importlib

    try:
        check = importlib.import_module("scrapy.utils.asyncio").is_asyncio_available
    except (ImportError, AttributeError):  # Scrapy < 2.14
        check = importlib.import_module("scrapy.utils.reactor").is_asyncio_reactor_installed
    try:
        ok = bool(check())
    except RuntimeError:
        ok = False
    if not ok:
        raise RuntimeError(
            "RobotGateMiddleware needs Scrapy's asyncio reactor: set TWISTED_REACTOR = "
            "'twisted.internet.asyncioreactor.AsyncioSelectorReactor' (Scrapy's default) "
            "and do not install another reactor first")


#: How deep an error's causes are looked through for Twisted's (Scrapy wraps one deep).
_CAUSE_DEPTH = 8


def shortage_of(exc: BaseException, what: str) -> LocalFailure | None:
    """The :class:`~robotgate.LocalFailure` a download error is (``what``: the request):
    this machine out of file descriptors, memory or ports.  Twisted's connection errors
    carry no cause chain: a :class:`~twisted.internet.error.ConnectError` (and each of
    its kinds, e.g. ``ConnectBindError`` for a socket that could not be made) keeps the
    system's errno in its public ``osError``, which is read here; Scrapy's own errors
    wrap Twisted's as their cause.  A failed name lookup keeps no errno at all
    (``DNSLookupError``): this process then makes a socket, and what stops it is the
    shortage.  None: no shortage of this machine's."""
    seen: BaseException | None = exc
    for _ in range(_CAUSE_DEPTH):
        if seen is None:
            break
        code = seen.osError if isinstance(seen, ConnectError) else None
        if isinstance(seen, DNSLookupError):
            code = _socket_refused()
        system = (code if isinstance(code, OSError)
                  else OSError(code, os.strerror(code)) if isinstance(code, int) else seen)
        shortage = local_failure(system, what, open_file_limit())
        if shortage is not None:
            return shortage
        seen = seen.__cause__ or seen.__context__
    return None


def _socket_refused() -> OSError | None:
    """Why this process cannot make a socket now (None: it can)."""
    try:
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM).close()
    except OSError as refused:
        return refused
    return None


class ScrapyRobotsTransport:
    """Sends the robots.txt flow's requests through Scrapy's engine.

    No redirect is followed by Scrapy (the flow follows them, checking each
    hop), none is retried (the flow's status policy decides), and at most
    ``max_bytes`` of the body is downloaded.
    """

    def __init__(self, crawler: Crawler, headers: dict[str, str],
                 refuse_private: bool = True, private: IsPrivate = is_private,
                 names: GuardedNames | None = None) -> None:
        self.crawler = crawler
        self.headers = headers
        self.refuse_private = refuse_private
        self.is_private = private
        #: The names the reactor's screening resolver guards (the middleware's).
        self.names = names if names is not None else GuardedNames(private)

    async def send(self, request: RobotsRequest) -> RobotsResponse:
        """Download one robots.txt request; network errors propagate (the flow's to judge)."""
        reach = await robots_reach(request, self.refuse_private, scrapy_resolve,
                                   self.is_private)
        if isinstance(reach, RobotsResponse):
            return reach  # a hop refused: not sent
        # A hop from a public site, or the first request of an origin a public page
        # pointed to: its connection may reach public addresses only.
        what = reach.what if reach.guard else None
        headers = robots_headers(request, self.headers)
        meta: dict[str, Any] = {
            SKIP: True, "dont_obey_robotstxt": True, "dont_redirect": True,
            "dont_retry": True, "handle_httpstatus_all": True, _CAP: request.max_bytes}
        if isinstance(request.via, str):
            meta["proxy"] = request.via  # the proxy the asking page goes through
        if isinstance(request.permit, Permit):
            meta[_PERMIT] = request.permit  # looked at last as it is written
        req = Request(request.url, headers=headers, dont_filter=True, callback=NO_CALLBACK,
                      meta=meta)
        stats = self.crawler.stats
        if stats is not None:
            stats.inc_value("robotgate/robots/request_count")
        hop = parse_hop(request.url)
        host = hop.host if hop is not None else ""
        # A name: the reactor's screening resolver holds it while the request is out.
        guarded = what is not None and hop is not None and hop.address is None
        if guarded:
            self.names.guard(host)
        try:
            resp = await self._download(req)
        except Exception as exc:
            screened = self.names.refusal(host, what) if what is not None and guarded else None
            if screened is not None:
                return refused_answer(request, screened)
            shortage = shortage_of(exc, redact(request.url))
            if shortage is not None:  # this machine's, not the site's: asked again
                raise shortage from exc
            proxy = req.meta.get("proxy")
            failed = (proxy_failure(exc, proxy, request.url) if isinstance(proxy, str)
                      else None)
            if failed is not None:
                raise failed from exc
            raise
        finally:
            if guarded:
                self.names.unguard(host)
        peer = getattr(resp, "ip_address", None)
        if what is not None and peer is not None:
            # A connection the screen did not see (a pooled one, another download
            # handler): an answer from a private address is not the origin's robots.txt.
            reached = judge_peer(host, str(peer), self.is_private, what)
            if reached is not None:
                return refused_answer(request, reached)
        status = resp.status
        if stats is not None:
            stats.inc_value(f"robotgate/robots/response_status_count/{status}")
        proxy = req.meta.get("proxy")
        if status == 407 and isinstance(proxy, str):
            raise ScrapyProxyFailed(proxy, request.url,
                                    "it answered 407: it refused its credentials")
        body = None
        if 200 <= status < 300:
            codings = [value.decode("latin-1") for value in resp.headers.getlist(_CODING)]
            body = decode_capped(resp.body, codings, request.max_bytes)
        # Scrapy's CaseInsensitiveDict: the flow's header look-ups ignore case, as it needs.
        headers_out = cast("Mapping[str, str]", resp.headers.to_unicode_dict())
        return RobotsResponse(status, headers_out, body, request.url)

    async def _download(self, req: Request) -> Response:
        engine = self.crawler.engine
        if engine is None:
            raise RuntimeError("the Scrapy engine is not running")
        download_async = getattr(engine, "download_async", None)
        if download_async is not None:  # Scrapy 2.14+
            resp: Response = await download_async(req)
            return resp
        return await maybe_deferred_to_future(engine.download(req))

    @staticmethod
    def response_downloaded(response: Response, request: Request, **_: Any) -> None:
        """Signal handler: move a robots.txt response's content codings aside before
        Scrapy's HttpCompressionMiddleware inflates it without bound; ``send`` undoes
        them within ``max_bytes``."""
        if _CAP not in request.meta:
            return
        codings = response.headers.getlist(b"Content-Encoding")
        if codings:
            del response.headers[b"Content-Encoding"]
            response.headers.setlist(_CODING, codings)

    @staticmethod
    def bytes_received(data: bytes, request: Request, **_: Any) -> None:
        """Signal handler: stop a robots.txt download once ``max_bytes`` have arrived."""
        meta = request.meta
        cap = meta.get(_CAP)
        if cap is None:
            return
        got = meta.get(_GOT, 0) + len(data)
        meta[_GOT] = got
        if got >= cap:
            raise StopDownload(fail=False)


class RobotGateMiddleware:
    """A Scrapy downloader middleware: robots.txt obeyed, servers paced, as the gate does.

    Configured by the ``ROBOTGATE_*`` settings (see docs/integrations.md);
    ``gate`` is the :class:`~robotgate.RobotGate` it drives (for ``describe()``
    or ``stats``).  A request with ``meta["dont_obey_robotstxt"]`` is left alone.
    """

    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        if not settings.getbool("ROBOTSTXT_OBEY"):
            raise NotConfigured("ROBOTSTXT_OBEY is False")
        _require_asyncio()
        self.crawler = crawler
        # The gate's delay replaces Scrapy's: a DOWNLOAD_DELAY the user set is its default.
        user_delay = None
        if (settings.getpriority("DOWNLOAD_DELAY") or 0) > 0:
            user_delay = settings.getfloat("DOWNLOAD_DELAY")
        conf = read_settings(settings, getattr(crawler.spider, "user_agent", None),
                             download_delay=user_delay)
        store = make_store(conf.store, conf.store_prefix)
        rule = settings.get("ROBOTGATE_IS_PRIVATE")  # a callable, or its import path
        hear = settings.get("ROBOTGATE_ON_EVENT")  # a callable, or its import path
        try:
            private = load_object(rule) if isinstance(rule, str) else rule
            on_event = load_object(hear) if isinstance(hear, str) else hear
            self.gate = RobotGate(conf.user_agent, store=store, is_private=private,
                                  on_event=on_event, **conf.options)
        except ValueError as exc:
            raise ValueError(f"robotgate settings: {exc}") from None
        gate = self.gate
        self.headers = gate.headers
        #: The names public pages' pointers are on their way to: the reactor's resolver
        #: gives their connections public addresses only (installed as the crawl opens).
        self.names = GuardedNames(gate.is_private)
        self._screening: ScreeningResolver | None = None
        self.robots = ScrapyRobotsTransport(crawler, self.headers, gate.refuse_private,
                                            gate.is_private, self.names)
        gate.set_robots_transport(self.robots)
        if gate.pace_by == "ip":
            gate.set_address_resolver(first_address)  # not the gate's aiohttp resolver
        self._opened: asyncio.Future[None] | None = None
        self._tasks: set[asyncio.Future[None]] = set()
        self._announced: dict[str, float] = {}  # origin -> robots.txt fetch announced
        #: ROBOTGATE_PARK: keep the requests of a busy server out of Scrapy's downloader.
        self.park = settings.getbool("ROBOTGATE_PARK", True)
        self._wait_cap = gate.max_per_host
        self._waiting: dict[str, int] = {}  # pace key -> requests waiting here
        self._parked: dict[str, deque[Request]] = {}
        self._parked_count = 0
        if settings.getbool("AUTOTHROTTLE_ENABLED"):
            log.warning("AutoThrottle's delays are replaced by robotgate's pacing "
                        "(ROBOTGATE_DELAY, Crawl-delay, back-off on 429/503)")
        sig = crawler.signals
        sig.connect(self._spider_closed, signal=signals.spider_closed)
        sig.connect(self._request_scheduled, signal=signals.request_scheduled)
        sig.connect(self._spider_idle, signal=signals.spider_idle)
        sig.connect(self._response_downloaded, signal=signals.response_downloaded)
        sig.connect(self._request_left, signal=signals.request_left_downloader)
        sig.connect(self._reached_downloader, signal=signals.request_reached_downloader)
        sig.connect(ScrapyRobotsTransport.bytes_received, signal=signals.bytes_received)
        sig.connect(ScrapyRobotsTransport.response_downloaded,
                    signal=signals.response_downloaded)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        """Scrapy's factory."""
        return cls(crawler)

    # -- requests ------------------------------------------------------------------

    async def process_request(self, request: Request, spider: Any = None) -> Request | None:
        """Admit ``request``: robots.txt verdict, then its server's turn (awaited here).

        Returns a copy of the request to put it back in line (see :meth:`_park`).
        """
        meta = request.meta
        if meta.get(SKIP) or meta.get("dont_obey_robotstxt"):
            return None
        inherited = meta.pop(_HELD, None)
        if isinstance(inherited, _Held):
            inherited.release()  # copied from a request that never reached the downloader
        meta.pop(_GUARD, None)  # a redirect's copy of its hop's: this request is judged anew
        meta.pop(_POINTED_BY, None)
        self._refuse_peer(request)  # a redirect built from an answer of a private peer
        url = request.url
        if not url.startswith(("http://", "https://")):
            return None
        if self._opened is None or not self._opened.done():
            await self._open()
        try:
            clean = _without_credentials(request)
            if clean is not None:  # sent again without the Location's credentials
                return request.replace(url=clean, dont_filter=True)
            turn = self.gate.request_turn(url, provenance_of_request(meta), scrapy_resolve)
            proxy = meta.get("proxy")
            if isinstance(proxy, str):
                turn.via = proxy  # robots.txt goes through the page's proxy too
            ready = turn.begin()
            if ready is not None:
                key = self.gate.pace_key(url)
                if self.park and self._waiting.get(key, 0) >= self._wait_cap:
                    turn.abandon(ready)  # never started: nothing to undo
                    return self._park(request)
                await self._wait(request, key, ready)
            try:
                leaving = turn.leaving()
                if leaving is not None:
                    await leaving  # a late fleet slot is given up and the next awaited
            except BaseException:
                turn.release()
                raise
        except Disallowed as no:
            self._count(no.decision)
            # The URL as the refusal gives it: without its password (the request's repr has it).
            log.debug("Forbidden by robots.txt: <%s %s>: %s", request.method, no.url, no.decision)
            await self._announce(request)
            raise RobotsDisallowed(no.url, no.decision) from None
        except InvalidURL as exc:
            raise IgnoreRequest(f"robotgate: {exc}") from None
        except GateClosed:
            raise IgnoreRequest("robotgate: the crawl is closing") from None
        meta.pop(_WAS_PARKED, None)
        guarded = None
        if turn.guard:
            meta[_GUARD] = turn.what
            # The redirect it follows: _judge_peer pops _GUARD before the answer comes.
            meta[_POINTED_BY] = turn.provenance.from_url or ""
            hop = parse_hop(url)
            if hop is not None and hop.address is None:
                guarded = hop.host  # a name: its connection's look-up is screened
        held = _Held(turn, self._later, self.names, guarded)
        meta[_HELD] = held
        # Last resort: a request dropped between here and the downloader gives its slot back.
        weakref.finalize(request, held.release).atexit = False
        await self._announce(request)
        headers = request.headers
        for name, value in turn.headers.items():
            headers[name] = value
        return None

    async def _announce(self, request: Request) -> None:
        """Scrapy's ``robots_parsed`` signal, once per robots.txt the gate has read, with
        what Scrapy's RobotsTxtMiddleware sends: a parser of it and the request that asked."""
        origin = split_origin(request.url)[0]
        cached = self.gate.cached_rules(origin)
        if cached is None:
            return  # no file read (unavailable, unreachable): nothing parsed to announce
        rules, fetched = cached
        if self._announced.get(origin) == fetched:
            return
        if len(self._announced) >= self.gate.max_origins:
            self._announced.clear()
        self._announced[origin] = fetched
        parser = RobotgateRobotParser.of(rules, self.crawler.spider)
        sig = self.crawler.signals
        send = getattr(sig, "send_catch_log_async", None)
        if send is not None:  # Scrapy 2.14+
            await send(signal=signals.robots_parsed, robotparser=parser, request=request)
        else:
            await maybe_deferred_to_future(sig.send_catch_log_deferred(
                signal=signals.robots_parsed, robotparser=parser, request=request))

    async def _wait(self, request: Request, key: str, turn: Awaitable[None]) -> None:
        # While it waits, the request counts as active in its Scrapy download
        # slot, so that Scrapy's DownloaderAwarePriorityQueue (the default)
        # feeds the other servers rather than this one's queue.
        waiting = self._waiting
        waiting[key] = waiting.get(key, 0) + 1
        slot = None
        engine = self.crawler.engine
        if engine is not None:
            downloader = engine.downloader
            slot = downloader.slots.get(downloader.get_slot_key(request))
        if slot is not None:
            slot.active.add(request)
        try:
            await turn
        finally:
            if slot is not None:
                slot.active.discard(request)
            left = waiting[key] - 1
            if left:
                waiting[key] = left
            else:
                del waiting[key]
            self._unpark(key)

    # -- parking: requests of a busy server wait outside Scrapy's downloader --------

    def _park(self, request: Request) -> Request:
        """Take ``request`` out of the downloader until its server's line moves.

        Scrapy counts every request inside the downloader (its middlewares
        included) against ``CONCURRENT_REQUESTS``: requests waiting for one
        paused server would starve all the others.  So beyond ``max_per_host``
        waiting requests per server, a request is returned to the engine as a
        marked copy, which the ``request_scheduled`` handler keeps aside (out
        of Scrapy's scheduler and downloader) until one of the server's
        waiting requests gets its turn.
        """
        copy = request.replace(dont_filter=True)  # it was seen: the dupefilter must let it in
        copy.meta[_PARK] = self.gate.pace_key(request.url)
        return copy

    def _request_scheduled(self, request: Request, **_: Any) -> None:
        key = request.meta.pop(_PARK, None)
        if key is None:
            return
        line = self._parked.get(key)
        if line is None:
            line = self._parked[key] = deque()
        if request.meta.get(_WAS_PARKED):
            line.appendleft(request)  # parked again: keeps its place
        else:
            request.meta[_WAS_PARKED] = True
            line.append(request)
        self._parked_count += 1
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value("robotgate/parked")
        raise IgnoreRequest("robotgate: parked until its server's turn")  # not scheduled now

    def _unpark(self, key: str) -> None:
        line = self._parked.get(key)
        if not line:
            return
        request = line.popleft()
        if not line:
            del self._parked[key]
        self._parked_count -= 1
        engine = self.crawler.engine
        if engine is not None and engine.spider is not None:
            engine.crawl(request)

    def _spider_idle(self, **_: Any) -> None:
        # Only reached if a parked request lost its waiter: let them all go.
        if not self._parked_count:
            return
        for key in list(self._parked):
            while key in self._parked:
                self._unpark(key)
        raise DontCloseSpider

    async def process_response(self, request: Request, response: Response,
                               spider: Any = None) -> Response:
        """Put the page's usage preferences in ``meta["robotgate_usage"]`` and its
        directives in ``meta["robotgate_directives"]`` (:meth:`RobotGate.directives`);
        with ``ROBOTGATE_TDMREP``, whether TDM rights are reserved in ``meta["robotgate_tdm"]``.

        robots.txt's ``Content-Usage`` rules for the URL and the response's
        ``Content-Usage`` header, combined (:meth:`RobotGate.usage`).  A response
        that did not come from the downloader (a cache) ends the turn here too.
        """
        meta = request.meta
        held = meta.pop(_HELD, None)
        if isinstance(held, _Held):
            held.finish(response.status, _retry_after(response))
        meta.pop(_GUARD, None)
        pointed_by = meta.pop(_POINTED_BY, None)
        if not isinstance(pointed_by, str):
            pointed_by = None
        self._refuse_peer(request)
        url = request.url
        if (meta.get(SKIP) or meta.get("dont_obey_robotstxt")
                or not url.startswith(("http://", "https://"))):
            return response
        gate = self.gate
        page = meta[DIRECTIVES] = gate.directives(response, getattr(response, "body", None))
        if gate.tdmrep:
            try:
                # A pointer's tdmrep.json request is guarded where it connects, even
                # when its origin's robots.txt came from the store.
                meta[TDM] = await gate.tdm(url, page, pointed_by=pointed_by)
            except Exception as exc:  # closing: the page is not lost for it
                log.debug("no TDMRep verdict for %s: %s", redact(url), exc)
        try:
            # Fresh rules answer at once; rules gone stale meanwhile are asked again.
            decision = gate.check(url) or await gate.decide(url, pointed_by=pointed_by)
        except Exception as exc:  # closing, a store down: the page is not lost for its usage
            log.debug("no usage preferences for %s: %s", redact(url), exc)
            return response
        meta[USAGE] = combine_usage(decision.usage, usage_from_headers(response.headers))
        return response

    def _judge_peer(self, request: Request, response: Response) -> None:
        """A public page's pointer whose answer came from a private address (a name
        that answered the check public, the connection private) is marked refused,
        as soon as it is downloaded: Scrapy connects out of the gate's sight, so its
        peer is judged here.  The mark travels with a redirect Scrapy builds from it."""
        what = request.meta.pop(_GUARD, None)
        peer = getattr(response, "ip_address", None)
        if not isinstance(what, str) or peer is None:
            return  # no pointer, or no connection of its own (a cache): the check stands
        host = parse_hop(request.url)
        refused = judge_peer(host.host if host is not None else "", str(peer),
                             self.gate.is_private, what)
        if refused is not None:
            request.meta[_PEER_REFUSED] = refused

    def _refuse_peer(self, request: Request) -> None:
        """Drop an answer (or the redirect built from it) marked by :meth:`_judge_peer`."""
        refused = request.meta.pop(_PEER_REFUSED, None)
        if isinstance(refused, Decision):
            self._count(refused)
            raise RobotsDisallowed(redact(request.url), refused)

    def process_exception(self, request: Request, exception: BaseException,
                          spider: Any = None) -> Request | None:
        """A failed request gives its slot back (the next one is paced from its start);
        a pointer whose connection's look-up found a private address is refused; a
        request its fleet slot's last look held back (not sent) is sent again."""
        meta = request.meta
        held = meta.pop(_HELD, None)
        if isinstance(held, _Held):
            held.release()
        if isinstance(exception, LateSlot):
            if _PERMIT in meta:
                return None  # a robots.txt request's: its fetch sends it again
            # Nothing went out (see .last_look): again, in a turn and a slot of its own.
            return request.replace(dont_filter=True)
        meta.pop(_POINTED_BY, None)
        what = meta.pop(_GUARD, None)
        if isinstance(what, str):
            hop = parse_hop(request.url)
            refused = self.names.refusal(hop.host, what) if hop is not None else None
            if refused is not None:
                self._count(refused)
                raise RobotsDisallowed(redact(request.url), refused) from None
        return None

    def _count(self, decision: Decision) -> None:
        stats = self.crawler.stats
        if stats is None:
            return
        stats.inc_value("robotgate/disallowed")
        kind = decision.outcome or ("rule" if decision.rule is not None else "other")
        stats.inc_value(f"robotgate/disallowed/{kind}")

    # -- signals -------------------------------------------------------------------

    def _response_downloaded(self, response: Response, request: Request, **_: Any) -> None:
        # Sent as soon as the download ends, before any middleware (Retry,
        # Redirect) may replace the response with a new request.
        held = request.meta.pop(_HELD, None)
        if isinstance(held, _Held):
            held.finish(response.status, _retry_after(response))
        self._judge_peer(request, response)

    def _reached_downloader(self, request: Request, **_: Any) -> None:
        # The gate paces; Scrapy's slot delay (and its jitter) would only shift
        # requests away from the times the gate gave them.  Sent after the slot
        # exists and before Scrapy computes its delay.
        engine = self.crawler.engine
        if engine is None:
            return
        slot = engine.downloader.slots.get(request.meta.get("download_slot", ""))
        if slot is not None and slot.delay:
            slot.delay = 0.0

    def _request_left(self, request: Request, **_: Any) -> None:
        held = request.meta.pop(_HELD, None)
        if isinstance(held, _Held):
            held.release()

    def _later(self, pending: Awaitable[None]) -> None:
        task = asyncio.ensure_future(pending)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _open(self) -> None:
        if self._opened is None:
            _no_silent_resend(self.crawler)
            for handler, pool in _http11_pools(self.crawler):
                SocketLook(handler, pool, _look_of)  # a slot's or a permit's last look
            if self.gate.refuse_private:
                # Now: Scrapy installs its DNS_RESOLVER on the reactor as the crawl starts.
                self._screening = install(self.names)
            self._opened = asyncio.ensure_future(self.gate.open())
        await asyncio.shield(self._opened)

    async def _spider_closed(self, **_: Any) -> None:
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        stats = self.crawler.stats
        if stats is not None:
            for name, value in self.gate.stats.items():
                if name != "disallowed":
                    stats.set_value(f"robotgate/{name}", value)
        try:
            await self.gate.close()
        finally:
            if self._screening is not None:
                uninstall(self._screening)
                self._screening = None
